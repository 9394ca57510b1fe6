"""Every `--json` document the commands print, by kind, and its model: the one owner of a
document's shape. A document is checked against its model before it is printed, and the JSON
Schemas shipped in results/schema/ are generated from the same models (`make schemas`, or
`python -m backupbench.cli.documents DIR`); tests/unit/test_document_schemas.py fails when
the shipped files are not what the models generate.

The schemas are self-contained: every part a document shares with another (a run, a layout's
capacity) is bundled into each schema's own `$defs`, so a schema file validates alone, offline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from backupbench.results.command_documents import DOCUMENTS as COMMAND_DOCUMENTS
from backupbench.results.document import KIND_PREFIX
from backupbench.results.document_models import ErrorDocument, HistoryDocument, RunDocument
from backupbench.results.sweep_document import SweepDocument
from backupbench.sizing.plan_model import RepositoryDocument

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SUFFIX = ".schema.json"

DOCUMENTS: dict[str, type[BaseModel]] = {
    "run": RunDocument, "history": HistoryDocument, "error": ErrorDocument, **COMMAND_DOCUMENTS,
    "size.repository": RepositoryDocument, "sweep": SweepDocument,
}


def checked(data: dict[str, Any]) -> dict[str, Any]:
    """`data`, unchanged, once it is known to have its kind's shape (pydantic's
    ValidationError otherwise: a document that breaks its schema is a bug, never printed)."""
    DOCUMENTS[data["kind"].removeprefix(KIND_PREFIX)].model_validate(data)
    return data


def _one_line(node: Any) -> Any:
    """Descriptions as one line each (a model's docstring keeps its line breaks)."""
    if isinstance(node, dict):
        return {key: " ".join(value.split()) if key == "description" and isinstance(value, str) else _one_line(value)
                for key, value in node.items()}
    if isinstance(node, list):
        return [_one_line(item) for item in node]
    return node


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the document `name` ("run", "size.capacity", ...), from its model."""
    model = DOCUMENTS[name]
    body = _one_line(model.model_json_schema(mode="serialization"))
    body.pop("title", None)
    head = {"$schema": DRAFT, "title": f"backupbench {name.replace('.', ' ')} document",
            "description": body.pop("description", "")}
    shared = body.pop("$defs", None)
    return {**head, **body, **({"$defs": shared} if shared else {})}


def schemas() -> dict[str, dict[str, Any]]:
    """Every document's schema by file name (run.schema.json, ...)."""
    return {name + SUFFIX: schema(name) for name in DOCUMENTS}


def text(data: dict[str, Any]) -> str:
    """A schema as the shipped file holds it."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write(folder: Path) -> list[str]:
    """Write every schema into `folder` and remove the schema files no document has any more;
    the names of the files changed."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = schemas()
    changed = []
    for name, data in wanted.items():
        path = folder / name
        if not path.exists() or path.read_text() != text(data):
            path.write_text(text(data))
            changed.append(name)
    for stale in folder.glob("*" + SUFFIX):
        if stale.name not in wanted:
            stale.unlink()
            changed.append(stale.name)
    return changed


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else Path(__file__).parents[1] / "results" / "schema"
    changed = write(folder)
    print(f"{len(changed)} schema file(s) written in {folder}" + (f": {', '.join(changed)}" if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
