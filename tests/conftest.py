from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(args: list[str], *, cwd: Path, results: Path, env: dict[str, str] | None = None,
            timeout: float = 300) -> CliResult:
    """backupbench as a user runs it: a separate process, its own stdout/stderr and exit code."""
    full_env = {**os.environ, "BACKUPBENCH_RESULTS": str(results), **(env or {})}
    done = subprocess.run([sys.executable, "-m", "backupbench", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def cli(tmp_path: Path):
    results = tmp_path / "results"

    def invoke(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> CliResult:
        return run_cli(list(args), cwd=cwd or tmp_path, results=results, env=env)

    invoke.results = results  # type: ignore[attr-defined]
    return invoke


def require_root_tool(*tools: str) -> None:
    """Skip, saying why, unless root (loop devices, mounts on the test's own files) and tools."""
    if os.geteuid() != 0:
        pytest.skip("needs root for the loop devices and mounts the test makes on its own files")
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (make test installs it)")


@pytest.fixture
def mount_point(tmp_path: Path):
    """Mount filesystems on folders under tmp_path; every one is unmounted, even on failure."""
    mounted: list[Path] = []

    def mount(fstype: str, options: str = "", name: str = "mnt") -> Path:
        require_root_tool("mount", "umount")
        target = tmp_path / name
        target.mkdir()
        argv = ["mount", "-t", fstype] + (["-o", options] if options else []) + [fstype, str(target)]
        subprocess.run(argv, check=True, capture_output=True)
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], capture_output=True)
