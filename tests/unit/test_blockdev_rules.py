"""The pure rules, over hand-made facts: every refusal category, its words and its fix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backupbench import units
from backupbench.devices.blockfacts import BlockFacts
from backupbench.devices.blockrules import describe_signature, named_refusals, refusals
from backupbench.devices.probe_parse import Signature

BLANK = BlockFacts(
    path="/dev/sdz", resolved="/dev/sdz", is_symlink=False, exists=True, is_block=True,
    file_kind="block device", kernel_name="sdz", major_minor="65:160", type="disk",
    size_bytes=100 * units.GiB, read_only=False, rotational=True,
)
EXT4 = Signature("ext4", 0x438, "0ae2e7d3-91f8-450f-9be5-4e660b2e9e3c", "backups")
SWAP = Signature("swap", 0xFF6)
MD = Signature("linux_raid_member", 0x1000, None, "host:0")
PV = Signature("LVM2_member", 0x218)
GPT = (Signature("gpt", 0x200), Signature("gpt", 0x3FFFE00), Signature("PMBR", 0x1FE))


def rules(facts: BlockFacts) -> list[str]:
    return [name for name, _ in named_refusals(facts)]


def problem(facts: BlockFacts, rule: str) -> str:
    return next(r.problem for name, r in named_refusals(facts) if name == rule)


def test_a_blank_disk_partition_loop_or_multipath_device_is_usable():
    assert refusals(BLANK) == []
    for kind in ("part", "loop", "mpath"):
        assert refusals(replace(BLANK, type=kind)) == [], kind
    by_id = replace(BLANK, path="/dev/disk/by-id/ata-SCRATCH", is_symlink=True)
    assert refusals(by_id) == []   # a symlink to a usable device is usable


MATRIX = {
    "mounted filesystem": (replace(BLANK, signatures=(EXT4,), fs_type="ext4", mountpoints=("/srv",)),
                           "mounted", "/dev/sdz is mounted on /srv (ext4)"),
    "mounted partition": (replace(BLANK, partitions=("sdz1",), children=("sdz1",),
                                  child_mountpoints=(("sdz1", "/srv"),), signatures=GPT),
                          "mounted", "/dev/sdz has mounted partitions or volumes: sdz1 on /srv"),
    "unmounted filesystem": (replace(BLANK, signatures=(EXT4,), fs_type="ext4"),
                             "filesystem_or_signature", "/dev/sdz carries an ext4 filesystem labelled 'backups'"),
    "other signature": (replace(BLANK, signatures=(Signature("crypto_LUKS", 0),)),
                        "filesystem_or_signature", "/dev/sdz carries a LUKS encryption header (crypto_LUKS)"),
    "unknown signature": (replace(BLANK, signatures=(Signature("vendor_magic", 0),)),
                          "filesystem_or_signature", "/dev/sdz carries a vendor_magic signature"),
    "gpt": (replace(BLANK, signatures=GPT), "partition_table", "/dev/sdz has a partition table (gpt)"),
    "dos with partitions": (replace(BLANK, signatures=(Signature("dos", 0x1FE),), partitions=("sdz1", "sdz2")),
                            "partition_table", "/dev/sdz has a partition table (dos) with partitions sdz1 and sdz2"),
    "partitions without a signature": (replace(BLANK, partitions=("sdz1",)), "partition_table",
                                       "/dev/sdz has a partition table with partitions sdz1"),
    "LVM PV label": (replace(BLANK, signatures=(PV,), lvm_pv=True), "lvm_pv",
                     "/dev/sdz is an LVM physical volume"),
    "LVM PV in a VG": (replace(BLANK, lvm_pv=True, lvm_vg="vg0"), "lvm_pv",
                       "/dev/sdz is an LVM physical volume in volume group vg0"),
    "md superblock": (replace(BLANK, signatures=(MD,), md_member=True), "md_member",
                      "/dev/sdz carries an md superblock (linux_raid_member)"),
    "md array member": (replace(BLANK, signatures=(MD,), md_member=True, md_array="md0 (active raid6)"),
                        "md_member", "/dev/sdz carries an md superblock (linux_raid_member) "
                                     "and is a member of md array md0 (active raid6)"),
    "swap signature": (replace(BLANK, signatures=(SWAP,)), "swap", "/dev/sdz carries a swap signature"),
    "active swap": (replace(BLANK, signatures=(SWAP,), is_swap=True), "swap", "/dev/sdz is in use as swap"),
    "swap on a partition": (replace(BLANK, partitions=("sdz2",), child_swaps=("sdz2",)), "swap",
                            "/dev/sdz has sdz2 in use as swap"),
    "root disk": (replace(BLANK, holds_root_or_boot=("/",)), "system_disk",
                  "/dev/sdz holds / (the running system)"),
    "boot partition": (replace(BLANK, type="part", parent="sda", holds_root_or_boot=("/boot",)), "system_disk",
                       "/dev/sdz is on the disk that holds /boot (the running system)"),
    "holders": (replace(BLANK, holders=("dm-3", "md127")), "holders",
                "/dev/sdz is held by dm-3 and md127: device-mapper, md or another driver is built on it"),
    "read-only": (replace(BLANK, read_only=True), "read_only", "/dev/sdz is read-only"),
    "size 0": (replace(BLANK, size_bytes=0), "empty", "/dev/sdz has a size of 0 bytes"),
    "detached loop": (replace(BLANK, path="/dev/loop9", resolved="/dev/loop9", kernel_name="loop9",
                              type=None, size_bytes=0), "empty", "/dev/loop9 is a loop device not attached"),
    "an LV": (replace(BLANK, type="lvm"), "device_type", "/dev/sdz is of type lvm (lsblk), not a disk or partition"),
    "an md array": (replace(BLANK, type="raid6"), "device_type", "/dev/sdz is of type raid6"),
    "a failed probe": (replace(BLANK, probe_errors=("wipefs failed on /dev/sdz (exit 1): boom",)),
                       "probe_failed", "/dev/sdz could not be checked: wipefs failed on /dev/sdz (exit 1): boom"),
    "missing": (BlockFacts("/dev/sdq", "/dev/sdq", False, False, False, "missing"), "missing",
                "/dev/sdq does not exist"),
    "dangling symlink": (BlockFacts("/dev/disk/by-id/gone", "/dev/sdq", True, False, False, "missing"),
                         "missing", "/dev/disk/by-id/gone is a symlink to /dev/sdq, which does not exist"),
    "regular file": (BlockFacts("/srv/disk.img", "/srv/disk.img", False, True, False, "regular file"),
                     "not_block_device", "/srv/disk.img is not a block device: it is a regular file"),
    "directory": (BlockFacts("/srv", "/srv", False, True, False, "directory"),
                  "not_block_device", "/srv is not a block device: it is a directory"),
    "symlink to a file": (BlockFacts("/tmp/link", "/srv/disk.img", True, True, False, "regular file"),
                          "not_block_device", "/tmp/link -> /srv/disk.img is not a block device"),
    "unexaminable path": (BlockFacts("/root/x/sdz", "/root/x/sdz", False, False, False, "unknown",
                                     probe_errors=("cannot examine /root/x/sdz: Permission denied",)),
                          "probe_failed", "/root/x/sdz could not be checked: cannot examine"),
}


@pytest.mark.parametrize("case", MATRIX)
def test_each_refusal_names_the_device_and_what_is_on_it(case):
    facts, rule, words = MATRIX[case]
    found = named_refusals(facts)
    assert rule in rules(facts), found
    assert problem(facts, rule).startswith(words)
    for _, reason in found:
        assert reason.problem.startswith(facts.path) and reason.fix


def test_missing_and_not_a_block_device_say_nothing_else():
    for case in ("missing", "dangling symlink", "regular file", "directory", "symlink to a file"):
        assert len(refusals(MATRIX[case][0])) == 1, case


def test_a_symlink_to_a_refused_device_is_refused_naming_the_target():
    target = replace(BLANK, signatures=(EXT4,), fs_type="ext4", mountpoints=("/srv",), holders=("dm-0",))
    link = replace(target, path="/tmp/scratch", is_symlink=True)
    assert rules(link) == rules(target)
    for reason in refusals(link):
        assert reason.problem.startswith("/tmp/scratch -> /dev/sdz ")


def test_md_and_swap_on_one_disk_is_refused_for_both_and_as_conflicting():
    vdh = replace(BLANK, path="/dev/vdh", resolved="/dev/vdh", signatures=(MD, SWAP), md_member=True,
                  md_array="md0 (active raid6)", holders=("md0",))
    assert rules(vdh) == ["swap", "holders", "md_member", "conflicting_signatures"]
    conflict = problem(vdh, "conflicting_signatures")
    assert conflict.startswith(
        "/dev/vdh carries conflicting signatures: an md superblock (linux_raid_member) and a swap signature")
    fix = next(r.fix for n, r in named_refusals(vdh) if n == "conflicting_signatures")
    assert fix == "wipe it yourself with `wipefs -a /dev/vdh` if it is really unused; backupbench never wipes"


def test_a_gpt_and_its_protective_mbr_are_one_table_not_a_conflict():
    assert rules(replace(BLANK, signatures=GPT)) == ["partition_table"]
    assert "conflicting_signatures" in rules(replace(BLANK, signatures=GPT + (EXT4,), fs_type="ext4"))


def test_a_mounted_filesystem_is_reported_once_as_mounted():
    facts = replace(BLANK, signatures=(EXT4,), fs_type="ext4", mountpoints=("/srv", "/var/backups"))
    assert rules(facts) == ["mounted"]
    assert problem(facts, "mounted") == "/dev/sdz is mounted on /srv and /var/backups (ext4)"


def test_fixes_never_promise_that_backupbench_will_do_it():
    everything = replace(BLANK, signatures=(MD, SWAP, PV, EXT4) + GPT, md_member=True, lvm_pv=True,
                         holders=("dm-0",), is_swap=True, mountpoints=("/srv",), read_only=True)
    reasons = refusals(everything)
    assert len(reasons) >= 7
    for reason in reasons:
        assert "backupbench will" not in reason.fix


def test_signature_words():
    assert describe_signature(EXT4) == "an ext4 filesystem"
    assert describe_signature(Signature("xfs")) == "an xfs filesystem"
    assert describe_signature(Signature("btrfs")) == "a btrfs filesystem"
    assert describe_signature(Signature("dos")) == "a dos partition table"
    assert describe_signature(Signature("isw_raid_member")) == "a RAID member signature (isw_raid_member)"
    assert describe_signature(Signature("zfs_member")) == "a ZFS pool label (zfs_member)"
