"""The offline bundle (`make dist`, scripts/make-dist.sh) as an air-gapped server gets it:
built for the Python running the tests (and a real Python 3.10 when this machine has one),
installed by its install.sh into a fresh venv with pip told --no-index and no index reachable,
then `backupbench run` from that venv, and its loader binary checked to be the static one;
and the bundle's single-file pex for each of those Pythons, run as it is with no network."""

from __future__ import annotations

import glob
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from netns_support import no_network_prefix

pytestmark = pytest.mark.real

ROOT = Path(__file__).parents[2]
RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"
# Nothing listens on the discard port: a pip that asked an index would fail at once.
DEAD_INDEX = "http://127.0.0.1:9/simple"


def _version_of(python: str) -> str | None:
    try:
        done = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def python310() -> str | None:
    """A real CPython 3.10: $BACKUPBENCH_TEST_PYTHON310, python3.10 on PATH, or pyenv's."""
    pyenv = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates = [os.environ.get("BACKUPBENCH_TEST_PYTHON310"), shutil.which("python3.10"),
                  *sorted(glob.glob(f"{pyenv}/versions/3.10.*/bin/python3.10"), reverse=True)]
    return next((c for c in candidates if c and _version_of(c) == "3.10"), None)


INTERPRETERS = {RUNNING: sys.executable}
if RUNNING != "3.10" and python310():
    INTERPRETERS["3.10"] = python310()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """make-dist.sh for the interpreters above only, unpacked: the folder holding install.sh."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(go, os.X_OK):
        pytest.skip("Go is not installed (make deps needs it too: https://go.dev/dl)")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "make-dist.sh"), "--pythons", " ".join(INTERPRETERS),
                           "--out", str(out)], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "GO": go, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout + done.stderr
    [archive] = out.glob("backupbench-*-offline.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    return folder


def outside_checkout() -> dict[str, str]:
    """This process's environment without PYTHONPATH: `make test` points it at the checkout's
    src/, and an installed bundle must run its own backupbench, not the checkout's."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def install(bundle: Path, prefix: Path, python: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in outside_checkout().items() if not key.startswith("PIP_")}
    env.update(PIP_INDEX_URL=DEAD_INDEX, PIP_RETRIES="0", PIP_TIMEOUT="5", PIP_NO_CACHE_DIR="1")
    return subprocess.run([*no_network_prefix(), "bash", str(bundle / "install.sh"), "--prefix", str(prefix),
                           "--python", python], capture_output=True, text=True, timeout=600, env=env)


def in_venv(prefix: Path, code: str) -> str:
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=60,
                          env=outside_checkout())
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module", params=sorted(INTERPRETERS))
def installed(request, bundle, tmp_path_factory) -> Path:
    """A fresh venv made and filled by the bundle's install.sh alone; its prefix. Made once per
    interpreter for the module (about 20 s each): the tests only read it and run from it."""
    prefix = tmp_path_factory.mktemp(f"venv-{request.param}") / "venv"
    done = install(bundle, prefix, INTERPRETERS[request.param])
    assert done.returncode == 0, done.stdout + done.stderr
    [pip_line] = [line for line in done.stdout.splitlines() if line.startswith("+ ") and " pip install " in line]
    assert " --no-index " in pip_line and f" --find-links {bundle / 'wheels'} " in pip_line
    assert in_venv(prefix, "import sys; print('%d.%d' % sys.version_info[:2])") == request.param
    return prefix


def run_the_backup_suite(backupbench: list[str], tmp_path: Path, env: dict[str, str] | None = None,
                         prefix: list[str] | None = None) -> None:
    """`backupbench run` on a small kb2014 file, and the one complete run it stored checked."""
    target, results = tmp_path / "repo", tmp_path / "results"
    target.mkdir()
    done = subprocess.run([*(prefix or []), *backupbench, "run", str(target), "--workload", "kb2014",
                           "--size", "32MiB", "--runtime", "1s", "--operations", "active-full,restore-sequential"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**(env or outside_checkout()), "BACKUPBENCH_RESULTS": str(results)})
    assert done.returncode == 0, done.stdout + done.stderr
    # What was stored, read from the store itself rather than from the printed summary.
    with sqlite3.connect(results / "results.db") as db:
        [(run_id, status)] = db.execute("SELECT run_id, status FROM runs").fetchall()
        assert status == "complete"
        operations = db.execute("SELECT name, status FROM operations WHERE run_id=? ORDER BY rowid", (run_id,))
        assert operations.fetchall() == [("active-full", "complete"), ("restore-sequential", "complete")]
        assert db.execute("SELECT count(*) FROM figures WHERE run_id=? AND name='effective_bw' AND value>0",
                          (run_id,)).fetchone() == (2,)
    assert (results / "runs" / run_id / "active-full.json").is_file()
    assert not [p for p in target.iterdir() if p.name.startswith("backupbench-")]


def test_bundle_installs_without_an_index_and_runs_the_backup_suite(installed, tmp_path):
    # backupbench comes from the new venv, not from the checkout the tests run in.
    module = Path(in_venv(installed, "import backupbench; print(backupbench.__file__)"))
    assert module.is_relative_to(installed)
    run_the_backup_suite([str(installed / "bin" / "backupbench")], tmp_path)


@pytest.mark.parametrize("version", sorted(INTERPRETERS))
def test_bundled_pex_runs_the_backup_suite_with_nothing_installed(bundle, version, tmp_path):
    pex = bundle / f"backupbench-cp{version.replace('.', '')}.pex"
    with pex.open("rb") as head:
        assert head.readline() == f"#!/usr/bin/env python{version}\n".encode()
    # A PEX_ROOT of its own, empty: the pex unpacks every wheel it needs from itself.
    pex_root = tmp_path / "pex-root"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PEX", "PIP_")) and key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PEX_ROOT=str(pex_root), PIP_INDEX_URL=DEAD_INDEX)
    python = INTERPRETERS[version]
    run_the_backup_suite([python, str(pex)], tmp_path, env, prefix=no_network_prefix())
    # It ran its own backupbench and dependencies, from PEX_ROOT, not the checkout's or a venv's.
    said = subprocess.run([python, str(pex), "-c", "import sys, backupbench, numpy; "
                           "print('%d.%d' % sys.version_info[:2]); print(backupbench.__file__); print(numpy.__file__)"],
                          capture_output=True, text=True, timeout=120, env={**env, "PEX_INTERPRETER": "1"})
    assert said.returncode == 0, said.stderr
    running, *modules = said.stdout.split()
    assert running == version
    assert all(Path(module).resolve().is_relative_to(pex_root.resolve()) for module in modules), modules
    # It finds its own S3 loader in bin/ beside it, with nothing on PATH that holds one.
    found = subprocess.run([python, str(pex), "-c", "from backupbench import process; "
                            "print(process.project_tool('backupbench-s3load'))"], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path, env={**env, "PEX_INTERPRETER": "1", "PATH": "/usr/bin:/bin"})
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(bundle / "bin" / "backupbench-s3load")


def test_installed_package_has_every_data_file_of_src(installed):
    site = Path(in_venv(installed, "import backupbench, os; print(os.path.dirname(backupbench.__file__))"))
    source = ROOT / "src" / "backupbench"
    data = {p.relative_to(source) for p in source.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    missing = sorted(str(p) for p in data if not (site / p).is_file())
    assert not missing, f"not in the wheel (pyproject.toml [tool.setuptools.package-data]): {missing}"


def test_bundled_loader_is_static_and_is_the_one_backupbench_finds(installed, bundle):
    env = {key: value for key, value in outside_checkout().items() if key != "BACKUPBENCH_S3LOAD"}
    found = subprocess.run([str(installed / "bin" / "python"), "-c",
                            "from backupbench.engines.s3 import BINARY, find_tool; "
                            "print(find_tool(BINARY, 'BACKUPBENCH_S3LOAD'))"],
                           capture_output=True, text=True, timeout=60, env=env)
    assert found.returncode == 0, found.stderr
    loader = Path(found.stdout.strip())
    assert loader.is_relative_to(installed)
    assert loader.read_bytes() == (bundle / "bin" / "backupbench-s3load").read_bytes()
    said = subprocess.run([str(loader), "--version"], capture_output=True, text=True, timeout=30)
    assert said.returncode == 0 and said.stdout.startswith("backupbench-s3load "), said.stdout + said.stderr
    ldd = subprocess.run(["ldd", str(loader)], capture_output=True, text=True, timeout=30)
    assert "not a dynamic executable" in ldd.stdout + ldd.stderr


def test_a_damaged_bundle_is_refused_before_anything_is_installed(bundle, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(bundle, damaged, copy_function=os.link)  # hard links: no 50 MB copy
    (damaged / "PYTHONS").unlink()  # a new file, so the original bundle keeps its own
    (damaged / "PYTHONS").write_text("2.7\n")
    done = install(damaged, tmp_path / "venv", sys.executable)
    assert done.returncode != 0
    assert "PYTHONS: FAILED" in done.stdout + done.stderr
    assert not (tmp_path / "venv").exists()
