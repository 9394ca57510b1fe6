"""Recipe schema: every option defined once (type, default, unit, help)."""
