"""A trajectory: its model (with its one key), actions, formats (reader and writer per format), alignment and
timeline."""
