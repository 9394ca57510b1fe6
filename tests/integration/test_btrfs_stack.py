"""A btrfs mirror is monitored through every member (issue 37): btrfs raid1 over two loop devices
the test made, mounted from the first; the mount table names that one only, yet the device
stack, the stored run's `device_stacks`, the monitor's CSV and the cache guard cover both. Root
only; the mount, the kernel's registration of the devices and the loops are undone, also on failure."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from host_support import require_tools

from backupbench.monitor import cache_guard, device_stack

pytestmark = [pytest.mark.real, pytest.mark.root]


@pytest.fixture
def mirror(loops, tmp_path: Path):
    """btrfs raid1 (data and metadata) on two loop devices, mounted from the first: (mount, names)."""
    require_tools("mkfs.btrfs", "btrfs", "mount", "umount")
    devices = [device for device, _ in loops(2)]
    subprocess.run(["mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", *devices],
                   check=True, capture_output=True, timeout=120)
    mnt = tmp_path / "mirror"
    mnt.mkdir()
    try:
        subprocess.run(["mount", devices[0], str(mnt)], check=True, capture_output=True, timeout=60)
        yield mnt, [Path(device).name for device in devices]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)
        # mkfs registered the devices with the kernel: a later filesystem on these loops starts clean.
        subprocess.run(["btrfs", "device", "scan", "--forget", *devices], capture_output=True, timeout=60)


def test_the_stack_of_a_btrfs_raid1_holds_both_loop_devices(mirror):
    mnt, names = mirror
    stack = device_stack(mnt / "backups" / "job.vbk")
    assert stack.fs_type == "btrfs" and stack.source == f"/dev/{names[0]}"   # the mount names one
    assert stack.members == tuple(names) and stack.all_names == names
    assert set(stack.backing_files) == set(names)
    storage = cache_guard.storage_facts(stack, None)
    assert [loop.device for loop in storage.loops] == names


def test_a_run_on_a_btrfs_raid1_stores_and_samples_both_members(cli, mirror):
    mnt, names = mirror
    result = cli("run", str(mnt), "--size", "16MiB", "--runtime", "1s", "--ramp", "0",
                 "--operations", "active-full", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    stored = data["run"]["host"]["device_stacks"]["target"]
    assert stored["members"] == names and stored["devices"] == names
    header = (cli.results / "runs" / data["run"]["id"] / "active-full.monitor.csv").read_text().splitlines()[0]
    assert all(f"{name}:w/s" in header for name in names)
