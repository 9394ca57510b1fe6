"""The cases a hostile trial found (issue 23), for real: one device named twice, targets that
cannot be written for different reasons (full, no inodes, the kernel's own filesystems, a
read-only filesystem under a read-write mount, another user's folder), and recipes with a
byte-order mark, a TOML date or a misspelt required key. Each is refused in one line that
says what it is, with its own fix, and nothing is written."""

from __future__ import annotations

import codecs
import errno
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from host_support import require_root_tool, require_tools, run_cli, sha256

pytestmark = pytest.mark.real
QUICK = ("--size", "8MiB", "--runtime", "0.5", "--ramp", "0", "--operations", "active-full", "--quiet")
NOBODY = 65534


def one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


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


def _fill_as(uid: int, file: Path) -> None:
    """Zeros written as `uid` until the filesystem says ENOSPC: 1 MiB at a time, then 4 KiB, so
    no more than a block is left that this user may have."""
    for block, extra in (("1M", ()), ("4k", ("oflag=append", "conv=notrunc"))):
        done = subprocess.run(["dd", "if=/dev/zero", f"of={file}", f"bs={block}", *extra], user=uid, group=uid,
                              extra_groups=[], capture_output=True, text=True, timeout=300)
        assert "No space left on device" in done.stderr, done.stderr


@pytest.mark.parametrize("fs_type,size", [("ext4", 32 * 2**20), ("xfs", 320 * 2**20)])
def test_a_full_ext4_and_a_full_xfs_are_said_alike(cli, loop_device, fs_type, size):
    """Filled by a user, as a backup service fills its repository: XFS then refuses root's
    probe too, ext4 lets root write into the blocks it keeps for root. Both once read
    differently (ext4: "not enough free space: 0 B free"); both are full (issue 37)."""
    require_tools(f"mkfs.{fs_type}", "mount", "umount", "dd")
    loop = loop_device(fs_type, size)
    subprocess.run([f"mkfs.{fs_type}", "-q", "-f" if fs_type == "xfs" else "-F", loop.device],
                   check=True, capture_output=True, timeout=120)
    # Not under tmp_path: the user filling it must reach it, and pytest's folders are root's alone.
    full = Path(tempfile.mkdtemp(prefix=f"backupbench-full-{fs_type}-"))
    full.chmod(0o755)
    try:
        subprocess.run(["mount", loop.device, str(full)], check=True, capture_output=True, timeout=60)
        os.chown(full, NOBODY, NOBODY)
        _fill_as(NOBODY, full / "filler")
        before = sorted(p.name for p in full.iterdir())
        result = cli("run", str(full), *QUICK)
        line = one_line(result)
        assert result.returncode == 3 and f"{full} is on a full filesystem: " in line and " free of " in line, line
        assert "free some space there, or name another directory" in line and "--size" not in line
        assert sorted(p.name for p in full.iterdir()) == before
    finally:
        subprocess.run(["umount", str(full)], capture_output=True, timeout=60)
        full.rmdir()


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
    done = run_cli(["run", str(target), *QUICK], cwd=shared_folder, results=results,
                   env={"HOME": str(shared_folder)}, timeout=120,
                   prefix=["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"])
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


# ---- sizing inputs with physical bounds (issue 37) ----------------------------------------------
# Each `size` command with a sound set of flags, then one flag given what no disk, layout or policy
# can be: 0, negative, a boolean, a fraction or text for a count, a disk too small to build any
# layout on, a value past what the numbers hold. The flag given last is the one click keeps.
SIZING_BASES = {
    "repository": ("--protected", "50TB", "--change-rate", "5%", "--dailies", "30", "--layout", "raid6,draid2",
                   "--disks", "24", "--disk-size", "16TB", "--disk-speed", "250MB/s"),
    "capacity": ("--layout", "raid6", "--disks", "6", "--disk-size", "6TB"),
    "rebuild": ("--layout", "raid6", "--disks", "6", "--disk-size", "6TB", "--rebuild-rate", "100MB/s"),
    "snapshot": ("--origin", "100GB", "--change", "10GB"),
    "window": ("--backup-size", "10TiB", "--speed", "200MiB/s"),
}
HUGE = "9" * 200
DISK_SIZES = [("--disk-size", value) for value in ("1B", "1KB", "64MiB", "299MiB", "0", "-1TB", "99999999999PiB",
                                                    "16TB,1KB", "true")]
COUNTS = [(flag, value) for flag in ("--disks",) for value in ("0", "-1", "true", "1.5", "24.0", "1e3", "six", HUGE)]
ABSURD_SIZING = {
    "repository": [
        *DISK_SIZES, *COUNTS,
        ("--disk-speed", "0MB/s"), ("--disk-speed", "0"), ("--disk-speed", "-1MB/s"), ("--disk-speed", "true"),
        ("--disk-speed", "99999999999PiB/s"), ("--rebuild-rate", "0"), ("--rebuild-rate", "0GiB/s"),
        ("--monthlies", "true"), ("--monthlies", "1.0"), ("--monthlies", "-1"), ("--weeklies", "false"),
        ("--dailies", "0"), ("--dailies", HUGE), ("--yearlies", "1e2"), ("--horizon", "0"), ("--horizon", "3.5"),
        ("--protected", "0"), ("--protected", "99999999999PiB"), ("--change-rate", "0"), ("--change-rate", "inf"),
        ("--reduction", "0"), ("--reduction", "nan"), ("--window", "0"), ("--window", "1e400"),
        ("--disk-access-time", "0"), ("--afr", "0"), ("--draid-data", "0"), ("--draid-data", "1.0"),
        ("--draid-spares", "-1"), ("--draid-spares", "true"),
    ],
    "capacity": [*DISK_SIZES, *COUNTS, ("--draid-data", "true"), ("--parity", "1.5"), ("--set-size", "0")],
    "rebuild": [*DISK_SIZES, *COUNTS, ("--rebuild-rate", "0"), ("--rebuild-rate", "0MB/s"),
                ("--rebuild-rate", "-5MB/s"), ("--rebuild-rate", "99999999999PiB/s"), ("--used", "0"),
                ("--used", "nan"), ("--draid-spares", "0.5")],
    "snapshot": [("--origin", "0"), ("--origin", "99999999999PiB"), ("--change", "0"), ("--change", "-1GB"),
                 ("--snapshots", "0"), ("--snapshots", "true"), ("--snapshots", "1.5"), ("--snapshots", HUGE),
                 ("--factor-low", "inf"), ("--factor-high", "1e308"), ("--margin-low", "nan"),
                 ("--margin-high", "1e308"), ("--factor-low", "0")],
    "window": [("--speed", "0"), ("--speed", "0MB/s"), ("--speed", "-1MB/s"), ("--speed", "99999999999PiB/s"),
               ("--speed", "true"), ("--backup-size", "0"), ("--backup-size", "99999999999PiB"),
               ("--window", "0"), ("--change-rate", "0"), ("--change-rate", "101")],
}
SIZING_CASES = [pytest.param(command, flag, value, id=f"{command} {flag} {value[:20]}")
                for command, cases in ABSURD_SIZING.items() for flag, value in cases]


def refused_naming(result, flag: str) -> str:
    """Exit 2, one line on stderr naming `flag`, nothing on stdout, never an internal error."""
    line = one_line(result)
    assert result.returncode == 2 and result.stdout == "", (result.returncode, result.stdout, line)
    assert "internal error" not in line and flag in line, line
    return line


@pytest.mark.parametrize("command, flag, value", SIZING_CASES)
def test_absurd_sizing_flags_are_refused_in_one_line_naming_the_flag(cli, command, flag, value):
    refused_naming(cli("size", command, *SIZING_BASES[command], flag, value), flag)


@pytest.mark.parametrize("command", sorted(SIZING_BASES))
def test_the_sound_sizing_flags_and_the_bounds_themselves_are_answered(cli, command):
    done = cli("size", command, *SIZING_BASES[command])
    assert done.returncode in (0, 5) and "internal error" not in done.stderr, done.stderr
    if "--disk-size" in SIZING_BASES[command]:  # the smallest disk every layout kind is built on
        done = cli("size", command, *SIZING_BASES[command], "--disk-size", "300MiB")
        assert done.returncode in (0, 5) and "--disk-size" not in done.stderr, done.stderr


def test_a_disk_too_small_says_the_bound_and_the_fix(cli):
    line = refused_naming(cli("size", "repository", *SIZING_BASES["repository"], "--disk-size", "1B"), "--disk-size")
    assert "--disk-size: a disk of 1 B is too small to build every layout kind on: at least 300 MiB" in line
    assert "give the disks' size as sold, e.g. 16TB" in line
    line = refused_naming(cli("size", "repository", *SIZING_BASES["repository"], "--disk-speed", "0MB/s"),
                          "--disk-speed")
    assert "--disk-speed: must be more than 0 bytes/s" in line


POLICY_RECIPE = '''name = "policy"
[[layout]]
name = "here"
kind = "directory"
path = "{path}"
[[workload]]
kind = "kb2014"
size = "8MiB"
[policy]
{policy}
'''
SOUND_POLICY = {"protected": '"50TB"', "change_rate": '"5%"', "dailies": "30", "weeklies": "4", "monthlies": "12",
                "disks": "24", "disk_size": '"16TB"', "disk_speed": '"250MB/s"', "block_clone": "true"}
# [policy] keys as TOML holds them: strings, booleans, floats and numbers out of every bound.
ABSURD_POLICY = [
    ("disk_speed", '"0MB/s"'), ("disk_speed", "0"), ("disk_speed", '"99999999999PiB/s"'), ("disk_speed", "true"),
    ("rebuild_rate", '"0B/s"'), ("disk_size", '"1KB"'), ("disk_size", '"1B"'), ("disk_size", '"64MiB"'),
    ("disk_size", "0"), ("disk_size", "-1"), ("disk_size", '"99999999999PiB"'), ("disk_size", "true"),
    ("monthlies", "true"), ("monthlies", "12.0"), ("monthlies", '"12"'), ("monthlies", "-1"), ("weeklies", "false"),
    ("dailies", "1e3"), ("dailies", "nan"), ("dailies", str(2**70)), ("yearlies", '"3"'), ("horizon", "inf"),
    ("disks", "true"), ("disks", "24.5"), ("disks", '"24"'), ("disks", "1"),
    ("block_clone", '"0"'), ("block_clone", '"true"'), ("block_clone", "1"), ("block_clone", "0"),
    ("protected", '"0B"'), ("change_rate", '"0%"'), ("window", '"0s"'), ("afr", "0"),
]


def _policy_recipe(tmp_path: Path, **changed: str) -> Path:
    table = {**SOUND_POLICY, **changed}
    recipe = tmp_path / "policy.toml"
    recipe.write_text(POLICY_RECIPE.format(path=tmp_path, policy="\n".join(f"{k} = {v}" for k, v in table.items())))
    return recipe


def test_a_sound_policy_plans(cli, tmp_path):
    done = cli("plan", str(_policy_recipe(tmp_path)))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("key, value", ABSURD_POLICY, ids=[f"{k}={v}" for k, v in ABSURD_POLICY])
def test_absurd_policy_keys_are_refused_by_plan_naming_the_key(cli, tmp_path, key, value):
    refused_naming(cli("plan", str(_policy_recipe(tmp_path, **{key: value}))), f"policy.{key}:")


# Layout keys: a switch written as text or a number, a count as a boolean or in quotes; and a
# dRAID that does not fit its devices, named by the key to change (it named only layout[0]).
SNAPSHOT = 'kind = "lvm-snapshot"\ndevices = ["/dev/vdb"]\norigin_size = "1GiB"\nsnapshot_size = "1GiB"\n'
ZFS = 'kind = "zfs"\nvdev = "draid2"\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vde", "/dev/vdf"]\n'
ABSURD_LAYOUT = [
    ('kind = "lvm-linear"\ndevices = ["/dev/vdb"]\nfilesystem = { reflink = "0" }', "layout[0].filesystem.reflink:"),
    ('kind = "lvm-linear"\ndevices = ["/dev/vdb"]\nfilesystem = { crc = 1 }', "layout[0].filesystem.crc:"),
    (SNAPSHOT + 'thin = "yes"', "layout[0].thin:"),
    (SNAPSHOT + "snapshots = true", "layout[0].snapshots:"),
    ('kind = "mdraid"\nlevel = true\ndevices = ["/dev/vdb", "/dev/vdc"]', "layout[0].level:"),
    ('kind = "mdraid"\nlevel = 6.0\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vde"]', "layout[0].level:"),
    (ZFS + "draid_data = true", "layout[0].draid_data:"),
    (ZFS + 'draid_spares = "1"', "layout[0].draid_spares:"),
    (ZFS + "draid_data = 4", "layout[0].draid_data: draid2:4d:5c does not fit 5 devices"),
    (ZFS + "draid_spares = 3", "layout[0].draid_spares: draid2:5c:3s does not fit 5 devices"),
    (ZFS.replace("draid2", "raidz2") + "draid_data = 2", "layout[0].draid_data: draid_data and draid_spares apply"),
    (ZFS.replace("draid2", "raidz3").replace(', "/dev/vdd", "/dev/vde", "/dev/vdf"', ""),
     "layout[0].devices: a raidz3 vdev needs at least 4 devices"),
]


@pytest.mark.parametrize("layout, named", ABSURD_LAYOUT, ids=[named.split(":")[0] + " " + layout.splitlines()[-1]
                                                              for layout, named in ABSURD_LAYOUT])
def test_absurd_layout_keys_are_refused_naming_the_key(cli, tmp_path, layout, named):
    recipe = tmp_path / "layout.toml"
    recipe.write_text(f'name = "keys"\n[[layout]]\nname = "l"\n{layout}\n[[workload]]\nkind = "kb2014"\n')
    refused_naming(cli("plan", str(recipe)), named)
