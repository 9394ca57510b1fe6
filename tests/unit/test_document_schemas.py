"""The JSON Schemas shipped in results/schema/ are what the document models generate (none
written by hand), each validates alone (no $ref leaves its file), and a document that breaks its
model is never printed. The validation command docs/results.md gives is run as written in
tests/integration/test_json_schema_cli.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from backupbench.cli import documents
from backupbench.results import document

ROOT = Path(__file__).parents[2]
SHIPPED = ROOT / "src" / "backupbench" / "results" / "schema"


def test_the_shipped_schemas_are_what_the_models_generate():
    shipped = {path.name: path.read_text() for path in SHIPPED.glob("*" + documents.SUFFIX)}
    generated = {name: documents.text(data) for name, data in documents.schemas().items()}
    assert shipped.keys() == generated.keys(), "run `make schemas`"
    stale = [name for name in generated if shipped[name] != generated[name]]
    assert not stale, f"{', '.join(stale)} differ from the models: run `make schemas`"
    # The package reads the same files.
    assert sorted(document.schema_names()) == sorted(name.removesuffix(documents.SUFFIX) for name in generated)


def test_regenerating_into_a_folder_writes_every_file_once_and_removes_stale_ones(tmp_path):
    (tmp_path / "gone.schema.json").write_text("{}")
    first = documents.write(tmp_path)
    assert sorted(first) == sorted([*documents.schemas(), "gone.schema.json"])
    assert documents.write(tmp_path) == []  # nothing left to change
    assert {p.name for p in tmp_path.iterdir()} == set(documents.schemas())


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


@pytest.mark.parametrize("name", sorted(documents.DOCUMENTS))
def test_each_schema_is_self_contained(name):
    schema = documents.schema(name)
    Draft202012Validator.check_schema(schema)
    assert "$id" not in schema
    refs = _refs(schema)
    assert all(ref.startswith("#/$defs/") for ref in refs), refs
    assert {ref.removeprefix("#/$defs/") for ref in refs} <= set(schema.get("$defs", {}))
    assert schema["properties"]["kind"]["const"] == document.KIND_PREFIX + name


def test_a_document_that_breaks_its_model_is_not_printed(capsys):
    from backupbench.cli.common import write_document

    good = document.error_document("no run 'x'", None, 2)
    assert documents.checked(good) is good
    for broken in ({**good, "exit_code": 9}, {**good, "surprise": 1}, {k: v for k, v in good.items() if k != "fix"}):
        with pytest.raises(ValidationError):
            write_document(broken)
    assert capsys.readouterr().out == ""
