"""A --json document checked against the JSON Schema shipped for its kind (the schemas resolve
each other offline, through a registry of the shipped files)."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from backupbench.results import document


def validated(text: str, kind: str) -> dict:
    """stdout as one JSON document of `kind`, valid against its shipped schema."""
    data = json.loads(text)
    assert data["kind"] == f"backupbench.{kind}" and data["schema_version"] == document.SCHEMA_VERSION
    resources = [(document.schema(name)["$id"], Resource.from_contents(document.schema(name)))
                 for name in document.schema_names()]
    checker = Draft202012Validator(document.schema(kind), registry=Registry().with_resources(resources))
    errors = sorted(checker.iter_errors(data), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    return data
