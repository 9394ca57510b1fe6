"""A --json document checked against the JSON Schema shipped for its kind (each shipped schema
is self-contained, so it resolves offline with no other file)."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from backupbench.results import document


def validated(text: str, kind: str) -> dict:
    """stdout as one JSON document of `kind`, valid against its shipped schema."""
    data = json.loads(text)
    assert data["kind"] == f"backupbench.{kind}" and data["schema_version"] == document.SCHEMA_VERSION
    checker = Draft202012Validator(document.schema(kind))  # self-contained: no other schema needed
    errors = sorted(checker.iter_errors(data), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    return data
