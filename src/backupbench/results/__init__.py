"""Results: the schema, the SQLite store, and run folders holding raw artefacts."""
