"""What the tests that run backupbench or make devices share: the CLI as a user runs it (to its
end, or started to be stopped), the root check with the reason to skip, loop devices on the
test's own files, a file's digest, and a fio server waited for. conftest.py makes fixtures of
them; test modules import them from here (never from conftest or another test)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def cli_argv(*args: str) -> list[str]:
    """backupbench's command line: this interpreter running the package, as a user's `backupbench`
    does (a lab guest runs the host's interpreter at the same path, so the same line there)."""
    return [sys.executable, "-m", "backupbench", *args]


def cli_env(results: Path | None, env: dict[str, str] | None = None, unset: Sequence[str] = ()) -> dict[str, str]:
    """This process's environment less the names in `unset` (COLUMNS, the machine's AWS_*), the
    results folder (none: the command's --results or its default), and `env` over it."""
    inherited = {name: value for name, value in os.environ.items() if name not in unset}
    return {**inherited, **({"BACKUPBENCH_RESULTS": str(results)} if results is not None else {}), **(env or {})}


def run_cli(args: Sequence[str], *, cwd: Path | None = None, results: Path | None = None,
            env: dict[str, str] | None = None, unset: Sequence[str] = (), timeout: float = 300,
            prefix: Sequence[str] = ()) -> CliResult:
    """backupbench as a user runs it: a separate process, its own stdout/stderr and exit code.
    prefix: what it runs under (setpriv, to run it as another user)."""
    done = subprocess.run([*prefix, *cli_argv(*args)], cwd=cwd, env=cli_env(results, env, unset),
                          capture_output=True, text=True, timeout=timeout)
    return CliResult(done.returncode, done.stdout, done.stderr)


def start_cli(args: Sequence[str], *, cwd: Path | None = None, results: Path | None = None,
              env: dict[str, str] | None = None, unset: Sequence[str] = (), stdout: Any = subprocess.PIPE,
              stderr: Any = subprocess.PIPE, **popen: Any) -> subprocess.Popen:
    """backupbench started and left running, for a test that acts while it runs (a signal, a
    host taken away, another command beside it) and then waits for it itself."""
    return subprocess.Popen(cli_argv(*args), cwd=cwd, env=cli_env(results, env, unset), stdout=stdout,
                            stderr=stderr, text=True, **popen)


def sha256(path: Path) -> str:
    """A file's digest, to show it is byte for byte what it was."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wait_for_fio_server(host: Any, what: str) -> None:
    """Until `fio --server` on `host` (engines/fio_client.Host) answers: up to ~10 s after its start."""
    from backupbench.engines import fio_client
    from backupbench.errors import EngineError

    for _ in range(50):
        try:
            fio_client.probe(host, timeout_s=5)
            return
        except EngineError:
            time.sleep(0.2)
    raise AssertionError(f"{what} did not answer")


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
