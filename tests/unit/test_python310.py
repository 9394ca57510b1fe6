"""backupbench runs on Python 3.10 (Ubuntu 22.04; Rocky/RHEL 9's python3.11 is newer still):
vermin reads every module of src/ for constructs newer than that, and the recipe reader's
3.10 path (tomli instead of tomllib) is imported and used here with tomllib hidden."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomli

from backupbench.errors import RecipeError

ROOT = Path(__file__).parents[2]
SRC = ROOT / "src" / "backupbench"
OLDEST = "3.10"
# Annotations are evaluated: pydantic reads them at run time, so they must work on 3.10 too.
# One process: vermin's pool of one per core costs more than it saves on src/'s ~150 files, and
# the test runs beside the other pytest workers anyway.
VERMIN = ["--target=" + OLDEST + "-", "--violations", "--no-tips", "--eval-annotations", "--processes=1"]


def vermin(*paths: Path) -> subprocess.CompletedProcess[str]:
    # The vermin package has no __main__; its console script does just this.
    argv = [sys.executable, "-c", "import sys; from vermin import main; sys.exit(main())", *VERMIN, *map(str, paths)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def test_vermin_finds_nothing_newer_than_python_310_in_src():
    done = vermin(SRC)
    # With --violations vermin prints only the lines that need a newer Python, each under its file.
    assert done.returncode == 0, f"src/ needs a Python newer than {OLDEST}:\n{done.stdout}{done.stderr}"
    analysed = re.search(r"Analyzing (\d+) files", done.stdout)
    assert analysed and int(analysed.group(1)) > 100, done.stdout  # it read the package, not an empty folder


def test_vermin_as_run_here_does_catch_311_only_code(tmp_path):
    (tmp_path / "newer.py").write_text("import enum\nfrom datetime import UTC\n\n\n"
                                       "class Kind(enum.StrEnum):\n    FULL = 'full'\n")
    done = vermin(tmp_path)
    assert done.returncode != 0
    assert "'datetime.UTC' member requires" in done.stdout and "'enum.StrEnum' member requires" in done.stdout


def test_pyproject_promises_what_vermin_checks():
    project = tomli.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=" + OLDEST
    tomli_needs = [dep for dep in project["dependencies"] if re.match(r"tomli\b", dep)]
    assert tomli_needs and all(re.search(r"python_version\s*<\s*['\"]3\.11['\"]", dep) for dep in tomli_needs)


@pytest.fixture
def reader_without_tomllib(monkeypatch):
    """recipe/reader.py imported afresh as Python 3.10 would: `import tomllib` fails."""
    monkeypatch.setitem(sys.modules, "tomllib", None)  # None in sys.modules makes the import raise
    with pytest.raises(ModuleNotFoundError):
        import tomllib  # noqa: F401  (proves the hiding works before the reader relies on it)
    spec = importlib.util.spec_from_file_location("reader_on_python310", SRC / "recipe" / "reader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reader_falls_back_to_tomli_and_parses_a_recipe(reader_without_tomllib):
    assert reader_without_tomllib.tomllib is tomli
    text = '[[layout]]\nkind = "directory"\npath = "/srv/backups"\n\n[[workload]]\nkind = "kb2014"\nsize = "64MiB"\n'
    assert reader_without_tomllib.parse_toml(text, "recipe.toml") == {
        "layout": [{"kind": "directory", "path": "/srv/backups"}],
        "workload": [{"kind": "kb2014", "size": "64MiB"}]}


def test_reader_on_tomli_turns_bad_toml_into_a_recipe_error(reader_without_tomllib):
    with pytest.raises(RecipeError, match=r"recipe.toml: not valid TOML: .*line 2"):
        reader_without_tomllib.parse_toml('kind = "kb2014"\nsize = \n', "recipe.toml")


def test_reader_on_tomli_reads_a_file(reader_without_tomllib, tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('name = "weekly"\n', encoding="utf-8")
    assert reader_without_tomllib.load_toml(recipe) == {"name": "weekly"}
