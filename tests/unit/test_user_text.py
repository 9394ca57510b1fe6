"""User-facing text names no internal work item ("issue 14"): a user has no issue tracker to
look it up in. Scanned: every command's --help, every string the code can print (string
literals other than docstrings), the examples, README and the user pages of docs/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click

from backupbench.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
WORK_ITEM = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def _helps(command: click.Command, path: list[str]) -> dict[str, str]:
    context = click.Context(command, info_name=" ".join(path))
    found = {" ".join(path): command.get_help(context)}
    if isinstance(command, click.Group):
        for name in command.list_commands(context):
            found.update(_helps(command.get_command(context, name), [*path, name]))
    return found


def _printable_strings(source: str) -> list[str]:
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_scan_finds_a_work_item_where_there_is_one():
    assert WORK_ITEM.search("the restore cost of the fragmented full (issue 14)")
    assert WORK_ITEM.search("# Issue 13 / field note D's question")
    assert _printable_strings('"""A module (issue 3)."""\nx = "see issue 4"\n') == ["see issue 4"]


def test_no_help_text_names_an_internal_work_item():
    helps = _helps(app, ["backupbench"])
    assert len(helps) > 20 and "backupbench run" in helps
    assert {command: WORK_ITEM.findall(text) for command, text in helps.items() if WORK_ITEM.search(text)} == {}


def test_no_string_the_code_prints_names_an_internal_work_item():
    found = {f"{path.relative_to(ROOT)}: {text!r}"
             for path in sorted((ROOT / "src" / "backupbench").rglob("*.py"))
             for text in _printable_strings(path.read_text()) if WORK_ITEM.search(text)}
    assert found == set()


def test_no_example_or_user_document_names_an_internal_work_item():
    # Every user page; the architecture map records why the code changed, issue by issue.
    pages = [page for page in sorted((ROOT / "docs").glob("*.md")) if page.name != "architecture.md"]
    files = [*sorted((ROOT / "examples").iterdir()), ROOT / "README.md", *pages]
    assert len(files) > 3
    found = {f"{path.name}:{number}: {line.strip()}"
             for path in files for number, line in enumerate(path.read_text().splitlines(), 1)
             if WORK_ITEM.search(line)}
    assert found == set()
