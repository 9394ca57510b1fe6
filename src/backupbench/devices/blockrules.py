"""Pure rules: block-device facts -> the reasons the device may not be written, with fixes.

No rule touches the system. Each rule has a stable name (shown by `devices --json`) and
says what is on the device in words a storage admin would use, and what they could do about
it themselves: backupbench never wipes, unmounts, swaps off, stops or removes anything it
did not create. A device is usable only when no rule objects.
"""

from __future__ import annotations

from typing import Callable

from backupbench.devices.blockfacts import BlockFacts
from backupbench.devices.eligibility import Reason
from backupbench.devices.probe_parse import Signature

# Kinds of device backupbench may build a layout on. Everything else (an LV, an md array,
# a dm-crypt mapping, an optical drive, a type we do not know) is refused: name the disks.
USABLE_TYPES = frozenset({"disk", "part", "loop", "mpath"})

FILESYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "ext4dev", "xfs", "btrfs", "vfat", "exfat", "ntfs", "f2fs", "jfs",
    "reiserfs", "nilfs2", "hfs", "hfsplus", "apfs", "udf", "iso9660", "squashfs", "erofs",
    "bcachefs", "ocfs2", "gfs2", "minix", "ufs", "zonefs",
})
# Said letter by letter or starting with a vowel sound: "an xfs filesystem".
_SAID_WITH_AN = frozenset({"ext2", "ext3", "ext4", "ext4dev", "xfs", "exfat", "ntfs", "f2fs", "apfs",
                           "hfs", "hfsplus", "iso9660", "erofs", "ocfs2"})
_NAMED = {
    "linux_raid_member": "an md superblock (linux_raid_member)",
    "LVM2_member": "an LVM physical volume label (LVM2_member)",
    "swap": "a swap signature",
    "crypto_LUKS": "a LUKS encryption header (crypto_LUKS)",
    "zfs_member": "a ZFS pool label (zfs_member)",
    "bcache": "a bcache superblock",
    "ceph_bluestore": "a Ceph BlueStore label",
    "VMFS_volume_member": "a VMware VMFS signature",
}
NEVER = "backupbench never wipes, unmounts or removes what it did not create"


def describe_signature(sig: Signature) -> str:
    """'an md superblock (linux_raid_member)', 'an ext4 filesystem', 'a gpt partition table'."""
    if sig.type in _NAMED:
        return _NAMED[sig.type]
    if sig.is_partition_table:
        return f"a {sig.type} partition table"
    if sig.type.endswith("_raid_member"):
        return f"a RAID member signature ({sig.type})"
    if sig.type in FILESYSTEMS:
        return f"{'an' if sig.type in _SAID_WITH_AN else 'a'} {sig.type} filesystem"
    return f"a {sig.type} signature"


def _family(sig: Signature) -> str:
    # A GPT shows as 'gpt' (twice: primary and backup) plus its protective MBR: one table.
    return "partition table" if sig.is_partition_table else sig.type


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _wipe_fix(facts: BlockFacts) -> str:
    return f"wipe it yourself with `wipefs -a {facts.resolved}` if it is really unused; backupbench never wipes"


# --- the rules, in the order they are reported -------------------------------------------

def _missing(f: BlockFacts) -> list[Reason]:
    if f.exists or f.file_kind != "missing":   # "unknown": could not look; see probe_failed
        return []
    if f.is_symlink:
        return [Reason(f"{f.path} is a symlink to {f.resolved}, which does not exist",
                       "name an existing device (see `backupbench devices`)")]
    return [Reason(f"{f.path} does not exist", "name an existing device (see `backupbench devices`)")]


def _not_block(f: BlockFacts) -> list[Reason]:
    if not f.exists or f.is_block:
        return []
    return [Reason(f"{f.display_name} is not a block device: it is a {f.file_kind}",
                   "name a disk or partition under /dev (see `backupbench devices`); "
                   "to measure a directory use `backupbench run PATH`")]


def _probe_failed(f: BlockFacts) -> list[Reason]:
    return [Reason(f"{f.display_name} could not be checked: {error}",
                   "fix what stopped the check (run as root; install util-linux) and try again; "
                   "backupbench refuses a device it cannot check")
            for error in f.probe_errors]


def _system_disk(f: BlockFacts) -> list[Reason]:
    if not f.holds_root_or_boot:
        return []
    points = _and(list(f.holds_root_or_boot))
    where = f"is on the disk that holds {points}" if f.parent else f"holds {points}"
    return [Reason(f"{f.display_name} {where} (the running system)",
                   "backupbench never writes to the system disk; name a spare disk")]


def _mounted(f: BlockFacts) -> list[Reason]:
    reasons = []
    if f.mountpoints:
        what = f" ({f.fs_type})" if f.fs_type else ""
        reasons.append(Reason(
            f"{f.display_name} is mounted on {_and(list(f.mountpoints))}{what}",
            f"unmount it yourself (umount {f.mountpoints[0]}) if its data is not needed; {NEVER}"))
    if f.child_mountpoints:
        mounted = [f"{child} on {point}" for child, point in f.child_mountpoints]
        reasons.append(Reason(
            f"{f.display_name} has mounted partitions or volumes: {_and(mounted)}",
            f"unmount them yourself if their data is not needed; {NEVER}"))
    return reasons


def _swap(f: BlockFacts) -> list[Reason]:
    if f.is_swap:
        return [Reason(f"{f.display_name} is in use as swap",
                       f"swapoff {f.resolved} and wipe it yourself if it is really unused; {NEVER}")]
    reasons = []
    if f.child_swaps:
        reasons.append(Reason(f"{f.display_name} has {_and(list(f.child_swaps))} in use as swap",
                              f"swapoff them yourself if they are really unused; {NEVER}"))
    if any(s.type == "swap" for s in f.signatures):
        reasons.append(Reason(f"{f.display_name} carries a swap signature", _wipe_fix(f)))
    return reasons


def _holders(f: BlockFacts) -> list[Reason]:
    if not f.holders:
        return []
    return [Reason(f"{f.display_name} is held by {_and(list(f.holders))}: "
                   "device-mapper, md or another driver is built on it",
                   f"remove what is built on it yourself (lvremove/vgremove, mdadm --stop, "
                   f"cryptsetup close) if it is really unused; {NEVER}")]


def _md_member(f: BlockFacts) -> list[Reason]:
    if not f.md_member:
        return []
    raid = [s for s in f.signatures if s.type.endswith("_raid_member")]
    carries = f" carries {_and([describe_signature(s) for s in raid])}" if raid else ""
    member = f" is a member of md array {f.md_array}" if f.md_array else ""
    both = " and" if carries and member else ""
    if f.md_array:
        array = f.md_array.split()[0]
        fix = (f"if the array is really unused, stop it (mdadm --stop /dev/{array}) and clear the "
               f"member yourself (mdadm --zero-superblock {f.resolved}); {NEVER}")
    else:
        fix = (f"if it is really unused, clear it yourself with `mdadm --zero-superblock "
               f"{f.resolved}` or `wipefs -a {f.resolved}`; {NEVER}")
    return [Reason(f"{f.display_name}{carries}{both}{member}", fix)]


def _lvm_pv(f: BlockFacts) -> list[Reason]:
    if not f.lvm_pv:
        return []
    in_vg = f" in volume group {f.lvm_vg}" if f.lvm_vg else ""
    return [Reason(f"{f.display_name} is an LVM physical volume{in_vg}",
                   f"if it is really unused, take it out of LVM yourself "
                   f"({'vgreduce or vgremove, then ' if f.lvm_vg else ''}pvremove {f.resolved}); {NEVER}")]


def _partition_table(f: BlockFacts) -> list[Reason]:
    tables = sorted({s.type for s in f.signatures if s.is_partition_table and s.type != "PMBR"}
                    or {s.type for s in f.signatures if s.is_partition_table})
    if not tables and not f.partitions:
        return []
    table = f" ({'/'.join(tables)})" if tables else ""
    parts = f" with partitions {_and(list(f.partitions))}" if f.partitions else ""
    return [Reason(f"{f.display_name} has a partition table{table}{parts}",
                   f"name a partition instead, or {_wipe_fix(f)}")]


def _content(f: BlockFacts) -> list[Reason]:
    """Filesystems and other signatures not covered by a rule of their own."""
    own_rule = {"swap", "LVM2_member"}
    other: list[str] = []
    for sig in f.signatures:
        if sig.is_partition_table or sig.type in own_rule or sig.type.endswith("_raid_member"):
            continue
        if f.mountpoints and sig.type == f.fs_type:
            continue   # said already: it is mounted
        text = describe_signature(sig)
        if sig.label:
            text += f" labelled {sig.label!r}"
        if text not in other:
            other.append(text)
    if not other:
        return []
    return [Reason(f"{f.display_name} carries {_and(other)}", _wipe_fix(f))]


def _conflicting(f: BlockFacts) -> list[Reason]:
    families: dict[str, Signature] = {}
    for sig in f.signatures:
        families.setdefault(_family(sig), sig)
    if len(families) < 2:
        return []
    described = [describe_signature(s) if _family(s) != "partition table" else "a partition table"
                 for s in families.values()]
    return [Reason(f"{f.display_name} carries conflicting signatures: {_and(described)}; "
                   "tools disagree about what it holds", _wipe_fix(f))]


def _read_only(f: BlockFacts) -> list[Reason]:
    if not f.read_only:
        return []
    return [Reason(f"{f.display_name} is read-only",
                   "make it writable (blockdev --setrw, or the array or hypervisor setting) "
                   "or name another device")]


def _empty(f: BlockFacts) -> list[Reason]:
    if f.size_bytes != 0:
        return []
    if f.kernel_name and f.kernel_name.startswith("loop") and not f.backing_file:
        return [Reason(f"{f.display_name} is a loop device not attached to any file",
                       "attach a file first (losetup --find --show FILE) and name that device")]
    return [Reason(f"{f.display_name} has a size of 0 bytes (no medium, or not set up)",
                   "name a device with space on it")]


def _device_type(f: BlockFacts) -> list[Reason]:
    if f.type is None or f.type in USABLE_TYPES:
        return []
    return [Reason(f"{f.display_name} is of type {f.type} (lsblk), not a disk or partition",
                   "name the disks underneath instead: backupbench builds its own LVM, md, btrfs "
                   "and ZFS layouts on whole disks or partitions")]


RULES: tuple[tuple[str, Callable[[BlockFacts], list[Reason]]], ...] = (
    ("missing", _missing),
    ("not_block_device", _not_block),
    ("system_disk", _system_disk),
    ("mounted", _mounted),
    ("swap", _swap),
    ("holders", _holders),
    ("md_member", _md_member),
    ("lvm_pv", _lvm_pv),
    ("partition_table", _partition_table),
    ("filesystem_or_signature", _content),
    ("conflicting_signatures", _conflicting),
    ("read_only", _read_only),
    ("empty", _empty),
    ("device_type", _device_type),
    ("probe_failed", _probe_failed),
)


def named_refusals(facts: BlockFacts) -> list[tuple[str, Reason]]:
    """Every objection, as (rule name, reason); empty when the device may be used."""
    return [(name, reason) for name, rule in RULES for reason in rule(facts)]


def refusals(facts: BlockFacts) -> list[Reason]:
    """The reasons `facts`' device may not be written; empty when it may."""
    return [reason for _, reason in named_refusals(facts)]

