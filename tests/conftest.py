from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# Tests that use these fixtures make loop devices or mounts: they need root and are marked
# `root` (pytest -m "not root" leaves them out). Lab tests are marked `vm` in their modules.
ROOT_FIXTURES = frozenset({"loop_device", "mount_point", "scratch", "mounted"})


def pytest_collection_modifyitems(items):
    for item in items:
        if ROOT_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.root)


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


@pytest.fixture
def loop_device(tmp_path: Path):
    """Make loop devices on the test's own files: loop_device("name", size) -> Loop."""
    require_root_tool("losetup")
    devices = LoopDevices(tmp_path / "loops")
    try:
        yield devices
    finally:
        problems = devices.detach_all(tmp_path)
        assert not problems, problems
