"""The annotation store: records, the store interface, SQLite and PostgreSQL."""
