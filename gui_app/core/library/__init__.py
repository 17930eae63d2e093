"""A library: the catalog (one stored score), trajectory identity, the library folder."""
