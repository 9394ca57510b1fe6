"""The capacity model against the real storage in the lab VM, one boot for all of it (issue 41):
on six 1 GiB disks RAIDZ2 and dRAID2 with a distributed spare as `zfs list -p` reports them and
as much data as each takes before ENOSPC, md RAID 6 with XFS and with ext4 as `df -B1` shows
them, LVM linear and striped with XFS; and the field plan's own 24 x 16 TB (sparse files on a
tmpfs behind loop devices, which hold only what is written) as RAIDZ2, dRAID2 with a spare and
md RAID 6, as the storage reports them. Agreement within 1%.

The guest runs the host's own zpool, mdadm, lvm and mkfs, so the model is held against the
versions the host ships (zfsutils-linux 2.3.2, mdadm 4.2, lvm2 2.03, xfsprogs 6.1,
e2fsprogs 1.47) on the guest's kernel. XFS and ext4 on plain devices, btrfs and MinIO are on
the host: test_capacity_real.py.

Needs root, the lab's host packages and the lab kernel's ZFS module (scripts/install-zfs.sh).
"""

from __future__ import annotations

import pytest

import lab_support
from lab_support import lab_missing

from backupbench.sizing.capacity import LayoutSpec, usable_capacity
from backupbench.sizing.capacity_blockdev import lvm_lv_bytes, md_array_bytes
from backupbench.sizing.capacity_fs import ext4_space, xfs_space

pytestmark = [pytest.mark.real, pytest.mark.vm, pytest.mark.root]

GiB, MiB, TB = 2**30, 2**20, 10**12
DISKS = " ".join(f"/dev/vd{letter}" for letter in "abcdef")
# Figures the guest prints: RESULT <name> <integers...>
_DF = "stat -f -c '%b %a %S'"


@pytest.fixture(autouse=True)
def _needs_lab():
    missing = lab_missing("zpool", "mkfs.xfs", "mkfs.ext4", "lvcreate")
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    with lab_support.zfs_lab_vm(tmp_path_factory, "6x1GiB", "capacity") as machine:
        yield machine


def _results(vm, script: str, timeout: float = 900) -> dict[str, list[int]]:
    done = vm.run("set -eu\n" + script, timeout=timeout)
    assert done.returncode == 0, done.output[-4000:]
    found = {}
    for line in done.output.splitlines():
        if line.startswith("RESULT "):
            _, name, *values = line.split()
            found[name] = [int(value) for value in values]
    return found


def _df(values: list[int]) -> tuple[int, int]:
    """`stat -f`'s blocks, available blocks and block size as df -B1's size and available."""
    blocks, available, size = values
    return blocks * size, available * size


def _clear_zfs(devices: str, partition: str) -> str:
    return (f"for d in {devices}; do zpool labelclear -f \"${{d}}{partition}\" 2>/dev/null || true; "
            "wipefs -qa \"$d\"; done\n")


def _zfs(name: str, vdev: str, devices: str, partition: str, fill: bool) -> str:
    """Create, report, optionally fill with 1 MiB records (0xff bytes: ZFS stores no block of
    zeros, and compression is off), destroy, clear."""
    script = (f"zpool create -f -o ashift=12 -O compression=off -O recordsize=1M -m /tmp/bbcap bbcap "
              f"{vdev} {devices}\n"
              f"echo RESULT {name} $(zfs list -Hp -o used,available bbcap)\n")
    if fill:
        script += ("tr '\\000' '\\377' < /dev/zero | dd of=/tmp/bbcap/fill bs=1M iflag=fullblock status=none "
                   "2>/dev/null || true\nsync\n"
                   f"echo RESULT {name}-filled $(stat -c %s /tmp/bbcap/fill)\n")
    return script + "zpool destroy bbcap\n" + _clear_zfs(devices, partition)


def _near(measured: int, model: int, what: str) -> None:
    print(f"{what}: model {model:,} measured {measured:,} ({100 * (model - measured) / measured:+.3f}%)")
    assert model == pytest.approx(measured, rel=0.01), what


def test_raidz2_and_draid2_as_zfs_reports_them_and_as_they_fill(vm):
    found = _results(vm, _zfs("raidz2", "raidz2", DISKS, "1", True) + _zfs("draid2", "draid2:3d:6c:1s", DISKS, "1",
                                                                             True))
    for name, layout in (("raidz2", "raidz2"), ("draid2", "draid2:3d:6c:1s")):
        model = usable_capacity(LayoutSpec(layout, (GiB,) * 6, ashift=12, recordsize=MiB))
        _near(sum(found[name]), model.reported, f"{layout} zfs list used+available")
        # 1 MiB records are charged less than 128 KiB ones on these shapes: more data than reported.
        (written,) = found[f"{name}-filled"]
        _near(written, model.usable, f"{layout} 1 MiB records written until ENOSPC")
        assert written > sum(found[name])


def test_md_raid6_with_xfs_and_ext4_as_df_shows_them(vm):
    found = _results(vm, (
        f"mdadm --create /dev/md/bbcap --run --metadata 1.2 --level 6 --raid-devices 6 --assume-clean {DISKS}\n"
        "echo RESULT md6 $(blockdev --getsize64 /dev/md/bbcap)\nmkdir -p /tmp/bbfs\n"
        f"mkfs.xfs -q -f /dev/md/bbcap\nmount /dev/md/bbcap /tmp/bbfs\necho RESULT md6-xfs $({_DF} /tmp/bbfs)\n"
        "umount /tmp/bbfs\n"
        f"mkfs.ext4 -q -F /dev/md/bbcap\nmount /dev/md/bbcap /tmp/bbfs\necho RESULT md6-ext4 $({_DF} /tmp/bbfs)\n"
        f"umount /tmp/bbfs\nmdadm --stop /dev/md/bbcap\nmdadm --zero-superblock {DISKS}\nwipefs -qa {DISKS}\n"))
    (array,) = found["md6"]
    assert array == md_array_bytes(6, [GiB] * 6)
    xfs = xfs_space(array, 512 * 1024, 4 * 512 * 1024)
    assert (xfs.size, xfs.available) == _df(found["md6-xfs"])
    ext4 = ext4_space(array)
    assert (ext4.size, ext4.available) == _df(found["md6-ext4"])
    for filesystem, measured in (("xfs", found["md6-xfs"]), ("ext4", found["md6-ext4"])):
        model = usable_capacity(LayoutSpec("raid6", (GiB,) * 6, filesystem=filesystem))
        _near(_df(measured)[1], model.usable, f"raid6 + {filesystem} df available")


def test_lvm_linear_and_striped_with_xfs_as_df_shows_them(vm):
    xfs_df = f"mkfs.xfs -q -f /dev/bbcap/lv\nmount /dev/bbcap/lv /tmp/bbfs\necho RESULT {{0}}-xfs $({_DF} /tmp/bbfs)\n" \
             "umount /tmp/bbfs\n"
    found = _results(vm, (
        f"mkdir -p /tmp/bbfs\npvcreate -q -y {DISKS}\nvgcreate -q bbcap {DISKS}\n"
        "lvcreate -q -y -n lv -l 100%FREE bbcap\necho RESULT linear $(blockdev --getsize64 /dev/bbcap/lv)\n"
        + xfs_df.format("linear") + "lvremove -q -y bbcap/lv\n"
        "lvcreate -q -y -n lv -i 6 -I 64k -l 100%FREE bbcap\necho RESULT striped $(blockdev --getsize64 /dev/bbcap/lv)\n"
        + xfs_df.format("striped") + f"lvremove -q -y bbcap/lv\nvgremove -q -y bbcap\npvremove -q -y {DISKS}\n"
        f"wipefs -qa {DISKS}\n"))
    assert found["linear"] == [lvm_lv_bytes([GiB] * 6)]
    assert found["striped"] == [lvm_lv_bytes([GiB] * 6, stripes=6)]
    for kind, measured in (("lvm-linear", found["linear-xfs"]), ("lvm-striped", found["striped-xfs"])):
        model = usable_capacity(LayoutSpec(kind, (GiB,) * 6))
        _near(_df(measured)[1], model.usable, f"{kind} + xfs df available")


def test_the_field_plan_s_24_disks_of_16_tb_as_the_storage_reports_them(vm):
    """Sparse 16 TB files behind loop devices with partition scanning (zpool partitions them as
    whole disks); only labels, superblocks and metadata are ever written, into a tmpfs."""
    loops = "$L"
    found = _results(vm, (
        "mkdir -p /tmp/bbsparse\nmount -t tmpfs -o size=768m bbsparse /tmp/bbsparse\nL=\n"
        "for i in $(seq 0 23); do truncate -s 16000000000000 /tmp/bbsparse/d$i; "
        "L=\"$L $(losetup -P -f --show /tmp/bbsparse/d$i)\"; done\n"
        f"zpool create -f -o ashift=12 -m none bbcap raidz2 {loops}\n"
        "echo RESULT raidz2 $(zfs list -Hp -o used,available bbcap)\nzpool destroy bbcap\n"
        + _clear_zfs(loops, "p1")
        + f"zpool create -f -o ashift=12 -m none bbcap draid2:8d:24c:1s {loops}\n"
        "echo RESULT draid2 $(zfs list -Hp -o used,available bbcap)\nzpool destroy bbcap\n"
        + _clear_zfs(loops, "p1")
        + f"mdadm --create /dev/md/bbbig --run --metadata 1.2 --level 6 --raid-devices 24 --assume-clean {loops}\n"
        "echo RESULT md6 $(blockdev --getsize64 /dev/md/bbbig)\nmdadm --stop /dev/md/bbbig\n"
        f"mdadm --zero-superblock {loops}\nfor l in {loops}; do losetup -d $l; done\numount /tmp/bbsparse\n"),
        timeout=1800)
    disks = (16 * TB,) * 24
    assert found["md6"] == [md_array_bytes(6, list(disks))]
    for name, layout in (("raidz2", "raidz2"), ("draid2", "draid2:8d:24c:1s")):
        _near(sum(found[name]), usable_capacity(LayoutSpec(layout, disks)).reported,
              f"24 x 16 TB {layout} zfs list used+available")
