from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from host_support import CliResult, LoopDevices, require_root_tool, run_cli

# The support modules whose fixtures every test may ask for by name (MinIO servers, network
# namespaces, the S3 agents' lab): registered here, so no test module imports a fixture.
pytest_plugins = ["s3_fixtures", "netns_support", "s3_agents_support"]

FIXTURES = Path(__file__).parent / "fixtures"
# The commands honour COLUMNS (cli/common.piped_width), and a test session may inherit one (the
# pytest-xdist workers here had COLUMNS=80; a plain pytest had none). The tests read what a
# command prints into a file or a pipe, so they run it as it runs there, without COLUMNS.
os.environ.pop("COLUMNS", None)
# The suite runs on four workers: every run beside the others' would be marked disturbed by
# other processes (monitor/others.py), and its headline and tables would say so. The tests of
# that watch (test_disturbed.py) unset this for their runs.
os.environ["BACKUPBENCH_IGNORE_OTHERS"] = "1"
# Fixtures that need root (loop devices, mounts, network namespaces, another user's view of a
# folder): every test that uses one, directly or through another fixture, is marked `root`
# here, so `pytest -m "not root"` deselects exactly the tests that would skip without root.
# A test that needs root otherwise says so with @pytest.mark.root. tests/unit/test_suite_rules.py
# checks that every root check in tests/ sits in one of these fixtures or a test marked root.
ROOT_FIXTURES = frozenset({"loop_device", "mount_point", "netns", "s3_agents_lab", "shared_folder"})


def pytest_collection_modifyitems(items):
    for item in items:
        if ROOT_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.root)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # One place says why a root test skips as another user, whichever way it was marked.
    if item.get_closest_marker("root") is not None and os.geteuid() != 0:
        pytest.skip("needs root for the loop devices, mounts or namespaces the test makes for itself")


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def cli(tmp_path: Path):
    results = tmp_path / "results"

    def invoke(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
               unset: tuple[str, ...] = ()) -> CliResult:
        return run_cli(list(args), cwd=cwd or tmp_path, results=results, env=env, unset=unset)

    invoke.results = results  # type: ignore[attr-defined]
    return invoke


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


@pytest.fixture
def loops(loop_device):
    """loops(n): n loop devices of 320 MiB (XFS and btrfs raid1 both fit) on the test's own
    files, as (device, backing file) pairs."""
    def make(count: int, size: int = 320 * 2**20) -> list[tuple[str, Path]]:
        made = [loop_device(f"disk{len(loop_device.made)}", size) for _ in range(count)]
        return [(loop.device, loop.backing) for loop in made]
    return make
