"""What the tests that run backupbench or make devices share: the CLI as a user runs it, the
root check with the reason to skip, and loop devices on the test's own files. conftest.py makes
fixtures of them; test modules import them from here (never from conftest or another test)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest


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


def require_root_tool(*tools: str) -> None:
    """Skip, saying why, unless root (loop devices, mounts on the test's own files) and tools.
    Only the fixtures of conftest.ROOT_FIXTURES call it (tests/unit/test_suite_rules.py checks):
    their tests carry the `root` marker, so `-m "not root"` leaves exactly them out."""
    if os.geteuid() != 0:
        pytest.skip("needs root for the loop devices and mounts the test makes on its own files")
    require_tools(*tools)


def require_tools(*tools: str) -> None:
    """Skip, saying which, unless every tool is on PATH (make test installs them all)."""
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (make test installs it)")


@dataclass
class Loop:
    device: str  # /dev/loopN
    backing: Path

    @property
    def name(self) -> str:
        return os.path.basename(self.device)


@dataclass
class LoopDevices:
    """Loop devices on files the test made, and only those. Each one is checked to be backed
    by the test's own file before the test gets it; all are detached after the test, also
    when it fails (mounts on them under the test's folder are undone first)."""

    folder: Path
    made: list[Loop] = field(default_factory=list)

    def __call__(self, name: str = "disk", size: int = 128 * 2**20, *, read_only: bool = False,
                 prepare_file: Callable[[Path], None] | None = None) -> Loop:
        self.folder.mkdir(parents=True, exist_ok=True)
        backing = self.folder / f"{name}.img"
        with open(backing, "wb") as handle:
            handle.truncate(size)
        if prepare_file:
            prepare_file(backing)
        argv = ["losetup", "--find", "--show", *(["--read-only"] if read_only else []), str(backing)]
        for _ in range(5):  # another process may take the free device between find and attach
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode == 0:
                break
        else:
            pytest.fail(f"losetup failed: {done.stderr}")
        loop = Loop(done.stdout.strip(), backing)
        self.made.append(loop)
        # Never touch a device the test did not make: it must be backed by the test's own file.
        recorded = Path(f"/sys/class/block/{loop.name}/loop/backing_file").read_text().strip()
        assert recorded == str(backing), f"{loop.device} is backed by {recorded}, not by this test's file"
        return loop

    def detach_all(self, mounts_under: Path) -> list[str]:
        problems = []
        targets = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True, text=True).stdout.split()
        for target in reversed(targets):
            if target.startswith(str(mounts_under)):
                subprocess.run(["umount", "-l", target], capture_output=True)
        for loop in reversed(self.made):
            done = subprocess.run(["losetup", "--detach", loop.device], capture_output=True, text=True)
            if done.returncode:
                problems.append(f"losetup -d {loop.device}: {done.stderr.strip()}")
        return problems


def write_recipe(tmp_path: Path, devices: list[str], layouts: str, workload: str | None = None) -> Path:
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        'name = "host-test"\n'
        f"devices = {json.dumps(devices)}\n" + layouts
        + (workload or '\n[[workload]]\nkind = "kb2014"\noperations = ["active-full", "restore-random"]\n'
                       'size = "32MiB"\nruntime = "1s"\nramp = 0\n')
    )
    return recipe
