"""Pure functions over stored results: nothing here measures or prints."""
