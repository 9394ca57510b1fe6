"""The cases a hostile trial found (issue 23), for real: one device named twice, targets that
cannot be written for different reasons (full, no inodes, the kernel's own filesystems, a
read-only filesystem under a read-write mount, another user's folder), and recipes with a
byte-order mark, a TOML date or a misspelt required key. Each is refused in one line that
says what it is, with its own fix, and nothing is written."""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from host_support import require_root_tool

pytestmark = pytest.mark.real
QUICK = ("--size", "8MiB", "--runtime", "0.5", "--ramp", "0", "--operations", "active-full", "--quiet")
NOBODY = 65534


def one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_one_device_named_twice_is_refused_by_plan_and_apply_before_mkfs(cli, tmp_path, loop_device):
    """plan exited 0 and apply ran mkfs.btrfs on /dev/loopN and a link to it."""
    disk, spare = loop_device("disk", 256 * 2**20), loop_device("spare", 256 * 2**20)
    link = tmp_path / "by-id-of-disk"
    link.symlink_to(disk.device)
    node = tmp_path / "second-node"  # the same st_rdev, no link to follow
    os.mknod(node, stat.S_IFBLK | 0o600, os.stat(disk.device).st_rdev)
    number = f"{os.major(os.stat(disk.device).st_rdev)}:{os.minor(os.stat(disk.device).st_rdev)}"
    before = sha256(disk.backing)
    for second in (link, node):
        recipe = tmp_path / "twice.toml"
        recipe.write_text(f'name = "twice"\ndevices = ["{disk.device}", "{second}", "{spare.device}"]\n'
                          f'[[layout]]\nname = "b"\nkind = "btrfs"\ndevices = ["{disk.device}", "{second}"]\n'
                          'data = "raid1"\nmetadata = "raid1"\n[[workload]]\nkind = "kb2014"\nsize = "16MiB"\n')
        plan = cli("plan", str(recipe), "--mount-root", str(tmp_path / "mnt"), "--json")
        assert plan.returncode == 3, plan.stderr
        assert json.loads(plan.stdout)["refusals"] == [
            f"devices: {disk.device} and {second} are one device ({disk.device}, {number}); name each device one "
            "way in the recipe (keep one of the names), or a layout could format it twice"]
        applied = cli("apply", str(recipe), "--yes", "--mount-root", str(tmp_path / "mnt"))
        assert applied.returncode == 3 and f"{disk.device} and {second} are one device" in one_line(applied)
        assert sha256(disk.backing) == before
    recipe.write_text(f'name = "once"\ndevices = ["{disk.device}", "{spare.device}"]\n[[layout]]\nname = "b"\n'
                      f'kind = "btrfs"\ndevices = ["{disk.device}", "{spare.device}"]\n[[workload]]\nkind = "kb2014"\n')
    assert cli("plan", str(recipe), "--mount-root", str(tmp_path / "mnt")).returncode == 0


def _fill(folder: Path, make) -> int:
    """Call make(n) until the filesystem says ENOSPC; how many calls succeeded."""
    count = 0
    while True:
        try:
            make(count)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
            return count
        count += 1


def test_a_full_filesystem_names_its_free_space(cli, mount_point):
    full = mount_point("tmpfs", "size=1m", "full")
    filler = full / "filler"
    with open(filler, "wb") as handle:
        _fill(full, lambda _n: (handle.write(b"\0" * 65536), handle.flush(), os.fsync(handle.fileno())))
    result = cli("run", str(full), *QUICK)
    line = one_line(result)
    assert result.returncode == 3 and f"{full} is on a full filesystem: 0 B free of 1 MiB" in line
    assert "free some space there" in line and "user who can write" not in line
    assert [p.name for p in full.iterdir()] == ["filler"]


def test_a_filesystem_without_free_inodes_says_so(cli, mount_point):
    starved = mount_point("tmpfs", "size=16m,nr_inodes=4", "starved")
    made = _fill(starved, lambda n: (starved / f"f{n}").touch())
    result = cli("run", str(starved), *QUICK)
    line = one_line(result)
    assert result.returncode == 3 and "no free inodes (0 of 4 left)" in line and "user who can write" not in line
    assert len(list(starved.iterdir())) == made


@pytest.mark.parametrize("path,fs_type", [("/proc", "proc"), ("/sys/kernel", "sysfs")])
def test_the_kernels_own_filesystems_are_not_storage(cli, path, fs_type):
    result = cli("run", path, *QUICK)
    line = one_line(result)
    assert result.returncode == 3 and f"{path} is on {fs_type}" in line and "not storage" in line
    assert "user who can write" not in line


def test_a_read_only_filesystem_under_a_read_write_mount_is_read_only(cli, tmp_path, mount_point):
    """ext4's errors=remount-ro does this: the mount says rw, the filesystem ro (EROFS)."""
    original = mount_point("tmpfs", "size=16m", "original")
    view = tmp_path / "view"
    view.mkdir()
    subprocess.run(["mount", "--bind", str(original), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro", str(original)], check=True)
        result = cli("run", str(view), *QUICK)
        line = one_line(result)
        assert result.returncode == 3 and f"{view} is on a read-only mount" in line
        assert "user who can write" not in line
    finally:
        subprocess.run(["umount", str(view)], check=True)


@pytest.fixture
def shared_folder():
    """A folder another user can reach (pytest's own tmp folder is root's alone), removed after."""
    require_root_tool("setpriv")
    folder = Path(tempfile.mkdtemp(prefix="backupbench-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_another_users_folder_is_a_permission_problem(shared_folder):
    target = shared_folder / "roots-own"
    target.mkdir(mode=0o755)
    results = shared_folder / "results"
    results.mkdir(mode=0o777)
    results.chmod(0o777)
    env = {**os.environ, "HOME": str(shared_folder), "BACKUPBENCH_RESULTS": str(results)}
    done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
                           sys.executable, "-m", "backupbench", "run", str(target), *QUICK],
                          cwd=shared_folder, env=env, capture_output=True, text=True, timeout=120)
    line = one_line(done)
    assert done.returncode == 3 and f"{target} is not writable by user {NOBODY} (permission denied)" in line
    assert "run as a user who can write there" in line
    assert list(target.iterdir()) == []


DIRECTORY_RECIPE = 'name = "{name}"\n[[layout]]\nname = "here"\nkind = "directory"\npath = "{path}"\n' \
                   '[[workload]]\nkind = "kb2014"\nsize = {size}\n'


def test_a_recipe_saved_with_a_byte_order_mark_plans(cli, tmp_path):
    recipe = tmp_path / "notepad.toml"
    recipe.write_bytes(codecs.BOM_UTF8 + DIRECTORY_RECIPE.format(name="bom", path=tmp_path, size='"8MiB"').encode())
    result = cli("plan", str(recipe), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["recipe"] == "bom"


def test_a_toml_date_is_shown_as_written(cli, tmp_path):
    recipe = tmp_path / "dated.toml"
    recipe.write_text(DIRECTORY_RECIPE.format(name="dated", path=tmp_path, size="2026-01-01"))
    result = cli("plan", str(recipe))
    line = one_line(result)
    assert result.returncode == 2 and "workload[0].size: 2026-01-01 is a TOML date or time" in line
    assert "datetime" not in line


@pytest.mark.parametrize("typo,key", [("namee", "name"), ("kindd", "kind")])
def test_a_misspelt_required_key_is_named_with_the_one_it_stands_for(cli, tmp_path, typo, key):
    recipe = tmp_path / "typo.toml"
    text = DIRECTORY_RECIPE.format(name="typo", path=tmp_path, size='"8MiB"')
    recipe.write_text(text.replace(f'\n{key} = "here"', f'\n{typo} = "here"').replace(
        f'\n{key} = "directory"', f'\n{typo} = "directory"'))
    result = cli("plan", str(recipe))
    line = one_line(result)
    assert result.returncode == 2
    assert f"layout[0].{typo}: is not a known key; did you mean {key!r}? ({key!r} is required and missing)" in line
