"""A teardown that finds its device held by a mount in another mount namespace says which
process holds it (devices/holders.py), on a real loop device this test made (root only).

`unshare -m` gives its process a private copy of every mount of that moment: our umount does
not reach it, and wipefs then fails with "Device or resource busy" as it would after a
container or `ip netns exec` was started while a layout was mounted."""

from __future__ import annotations

import subprocess
import time

import pytest

from backupbench.layouts.actions import Action
from backupbench.layouts.executor import undo_actions
from host_support import require_tools

pytestmark = pytest.mark.real


def test_a_wipefs_kept_busy_by_another_namespace_names_its_process(loop_device, tmp_path):
    require_tools("mkfs.ext4", "wipefs", "unshare")
    device = loop_device("disk", 64 * 2**20).device
    subprocess.run(["mkfs.ext4", "-q", device], check=True, capture_output=True)
    target = tmp_path / "mnt"
    target.mkdir()
    subprocess.run(["mount", device, str(target)], check=True, capture_output=True)
    holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep", "120"])
    try:
        time.sleep(0.5)  # unshare has made its namespace and exec'd sleep
        subprocess.run(["umount", str(target)], check=True, capture_output=True)
        wipe = Action(f"wipe {device}", do=(), undo=(("wipefs", "-a", device),), destructive=True)
        report = undo_actions([wipe], journal=None)
        [failure] = report.failed
        assert f"{device} is still mounted at {target} in the mount namespace of process {holder.pid} (sleep)" in failure
        assert "backupbench cleanup" in failure
    finally:
        holder.kill()
        holder.wait()
    # With the holder gone the same undo goes through.
    assert undo_actions([wipe], journal=None).undone == [f"wipe {device}"]
