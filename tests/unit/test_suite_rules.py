"""The test suite's own rules, read from its source: helpers shared between test modules live in
support modules (tests/*_support.py, s3_fixtures.py, conftest fixtures), never in another test
module; and every check that skips a test for want of root sits where the `root` marker comes
from (a fixture of conftest.ROOT_FIXTURES, or a test or module marked root), so that
`pytest -m "not root"` deselects exactly the tests that would skip without root."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

TESTS = Path(__file__).parents[1]
# The helpers that make the root check themselves, where they are defined.
ROOT_CHECKS = {"require_root_tool", "lab_missing", "hosts_for"}
CHECK_HOMES = {"host_support.py", "lab_support.py", "netns_support.py", "conftest.py"}


@cache
def _sources() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(), str(path)) for path in sorted(TESTS.rglob("*.py"))}


def _imported_modules(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_no_test_module_imports_another_test_module_or_conftest():
    found = []
    for path, tree in _sources().items():
        for module in _imported_modules(tree):
            last = module.rsplit(".", 1)[-1]
            if last.startswith("test_") or last == "conftest":
                found.append(f"{path.relative_to(TESTS)} imports {module}")
    assert found == [], "move what they share into a support module (tests/*_support.py): " + "; ".join(found)


def test_the_rule_above_sees_every_spelling_of_such_an_import():
    tree = ast.parse("import test_a\nfrom test_b import x\nfrom tests.integration.test_c import y\n"
                     "from conftest import z\ndef f():\n    import test_d as d\n")
    assert [m.rsplit(".", 1)[-1] for m in _imported_modules(tree)] == ["test_a", "test_b", "test_c", "conftest", "test_d"]


def _is_root_check(node: ast.AST) -> bool:
    """A call of a root-checking helper, or `if ... os.geteuid() ...:` whose body skips."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in ROOT_CHECKS
    if isinstance(node, ast.If):
        asks_uid = any(isinstance(n, ast.Attribute) and n.attr == "geteuid" for n in ast.walk(node.test))
        skips = any(isinstance(n, ast.Attribute) and n.attr == "skip" for stmt in node.body for n in ast.walk(stmt))
        return asks_uid and skips
    return False


def _marks_root(decorators: list[ast.expr]) -> bool:
    return any("mark.root" in ast.unparse(d) for d in decorators)


def _module_marked_root(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return "mark.root" in ast.unparse(node.value)
    return False


def _root_fixtures() -> frozenset[str]:
    tree = ast.parse((TESTS / "conftest.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ROOT_FIXTURES" for t in node.targets):
            return frozenset(ast.literal_eval(node.value.args[0]))
    raise AssertionError("conftest.py defines no ROOT_FIXTURES")


def _misplaced_root_checks(path: Path, tree: ast.Module, root_fixtures: frozenset[str]) -> list[str]:
    if path.name in CHECK_HOMES or _module_marked_root(tree):
        return []
    found = []

    def walk(node: ast.AST, allowed: bool, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fixture = any("fixture" in ast.unparse(d) for d in child.decorator_list)
                marked = _marks_root(child.decorator_list) or (fixture and child.name in root_fixtures)
                walk(child, allowed or marked, child.name)
                continue
            if _is_root_check(child) and not allowed:
                found.append(f"{path.relative_to(TESTS)}:{child.lineno} in {where}")
            walk(child, allowed, where)

    walk(tree, False, "the module")
    return found


def test_every_root_check_sits_where_the_root_marker_comes_from():
    root_fixtures = _root_fixtures()
    found = [where for path, tree in _sources().items() for where in _misplaced_root_checks(path, tree, root_fixtures)]
    assert found == [], ("a root check outside a fixture of conftest.ROOT_FIXTURES or a test marked root "
                         "(its test would skip under -m 'not root' instead of being deselected): " + "; ".join(found))


def test_the_root_rule_finds_a_check_in_an_unmarked_test_or_helper_and_passes_marked_ones():
    source = '''
import os, pytest

def helper():
    require_root_tool("losetup")

def test_plain():
    if os.geteuid() != 0:
        pytest.skip("root")

@pytest.mark.root
def test_marked():
    require_root_tool("mount")

@pytest.fixture
def netns():
    require_root_tool("ip")

@pytest.fixture
def other():
    require_root_tool("ip")

def test_that_only_asks():
    if os.geteuid() == 0:
        os.chown("x", 1, 1)
'''
    found = _misplaced_root_checks(TESTS / "example.py", ast.parse(source), frozenset({"netns"}))
    assert [where.split(" in ")[1] for where in found] == ["helper", "test_plain", "other"]
    marked = "import pytest\npytestmark = [pytest.mark.real, pytest.mark.root]\n" + source
    assert _misplaced_root_checks(TESTS / "example.py", ast.parse(marked), frozenset()) == []


VM_BOOTS = ("LabVM(", "zfs_lab_vm(", "lab_missing(")


def test_every_module_that_boots_the_lab_vm_is_marked_vm():
    unmarked = []
    for path, tree in _sources().items():
        if path.name in CHECK_HOMES or path.name == Path(__file__).name:
            continue
        text = path.read_text()
        marks = next((ast.unparse(node.value) for node in tree.body if isinstance(node, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)), "")
        if any(boot in text for boot in VM_BOOTS) and "mark.vm" not in marks:
            unmarked.append(str(path.relative_to(TESTS)))
    assert unmarked == [], "a module that boots the lab VM needs pytestmark = [pytest.mark.vm, ...]: " + ", ".join(unmarked)


def test_backupbench_is_started_only_through_the_shared_helper():
    """host_support's run_cli, start_cli and cli_argv are the one way a test runs the command
    (its environment, results folder and interpreter said once); a module spelling the command
    line itself drifts from them."""
    spelled = '"-m", "backupbench"'
    found = [str(path.relative_to(TESTS)) for path in _sources()
             if path.name not in ("host_support.py", Path(__file__).name) and spelled in path.read_text()]
    assert found == [], "use host_support.run_cli / start_cli / cli_argv: " + ", ".join(found)
