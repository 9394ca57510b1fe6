"""The map in docs/architecture.md, checked: stages import only earlier stages, packages form
no cycle, modules and functions stay small, and no probe for a workload's attributes."""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).parents[2] / "src" / "backupbench"

# The data flow, earliest first (docs/architecture.md). A package may import its own stage
# and earlier ones, never a later one.
STAGES = [
    {"__init__", "errors", "units", "paths", "hostfiles", "process", "stopping", "journal", "artefacts", "schema",
     "stats", "redaction", "disk_model", "retention", "retention_space", "layout_model"},
    {"devices", "monitor", "engines", "results", "lab", "faults"},
    {"layouts", "workloads"},
    {"recipe"},
    {"plan"},
    {"runner", "agent"},
    {"analysis", "sizing"},
    {"report"},
    {"cli", "__main__"},
]
STAGE_OF = {package: index for index, stage in enumerate(STAGES) for package in stage}
MAX_MODULE_LINES = 420
MAX_FUNCTION_LINES = 60


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("backupbench"):
            names = [node.module] if node.module != "backupbench" else [
                f"backupbench.{a.name if (SRC / a.name).is_dir() or (SRC / f'{a.name}.py').is_file() else '__init__'}"
                for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("backupbench.")]
        found |= {name.split(".")[1] for name in names if name.count(".") >= 1}
    return found


MODULES = sorted(SRC.rglob("*.py"))


@cache
def _trees() -> dict[Path, ast.Module]:
    """Every module of src/, parsed once, by the worker that runs these tests (not at import:
    every pytest-xdist worker imports this module to collect it)."""
    return {path: ast.parse(path.read_text()) for path in MODULES}


def test_every_package_has_a_stage():
    assert {_package(path) for path in MODULES} <= set(STAGE_OF)


def test_no_package_imports_a_later_stage():
    wrong, checked = [], 0
    for path, tree in _trees().items():
        mine = _package(path)
        for other in _imports(tree) - {mine}:
            checked += 1
            if STAGE_OF[other] > STAGE_OF[mine]:
                wrong.append(f"{path.relative_to(SRC)} imports {other}")
    assert not wrong, wrong
    # The imports were really read: the pipeline's own are among them.
    assert checked > 100 and {"workloads", "results", "journal"} <= _imports(_trees()[SRC / "runner" / "pipeline.py"])


def test_engines_and_monitor_never_import_what_uses_them():
    for path, tree in _trees().items():
        if _package(path) in ("engines", "monitor"):
            assert not _imports(tree) & {"workloads", "recipe", "runner", "report", "cli"}, path


def test_packages_form_no_cycle():
    edges: dict[str, set[str]] = defaultdict(set)
    for path, tree in _trees().items():
        edges[_package(path)] |= _imports(tree) - {_package(path)}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in edges.get(start, set()) - seen:
            if nxt == goal or reaches(nxt, goal, seen | {nxt}):
                return True
        return False

    cycles = sorted(p for p in edges if reaches(p, p, set()))
    assert not cycles, cycles


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_modules_and_functions_stay_small(path):
    lines = path.read_text().count("\n")
    assert lines <= MAX_MODULE_LINES, f"{lines} lines"
    for node in ast.walk(_trees()[path]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{node.name} is {length} lines"


def test_the_pipeline_and_cli_ask_workloads_instead_of_probing_them():
    for path, tree in _trees().items():
        if _package(path) not in ("runner", "cli"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
                pytest.fail(f"{path.relative_to(SRC)}:{node.lineno} probes with {node.func.id}")


def test_every_pydantic_model_builds_its_validator_on_first_use():
    """defer_build on each model that derives from BaseModel itself (subclasses inherit it): an
    eager one is built by every command that imports it, ~30x the host's cost in the lab guest."""
    eager = []
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "BaseModel"
                                                           for b in node.bases)):
                continue
            configs = [statement.value for statement in node.body if isinstance(statement, ast.Assign)
                       and any(isinstance(t, ast.Name) and t.id == "model_config" for t in statement.targets)]
            deferred = any(isinstance(config, ast.Call) and any(k.arg == "defer_build" and isinstance(k.value, ast.Constant)
                                                                and k.value.value is True for k in config.keywords)
                           for config in configs)
            if not deferred:
                eager.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert eager == []
