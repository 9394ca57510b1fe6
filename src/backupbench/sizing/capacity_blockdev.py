"""The block device an md array or an LVM volume offers, in bytes, before any filesystem: what
`blockdev --getsize64` says of /dev/mdN or /dev/VG/LV.

md (mdadm 4.2, 1.2 metadata, the default 512 KiB chunk; super1.c validate_geometry1 and
Create.c): each member's data starts after its superblock, a bitmap area (4 KiB, 64 KiB from
8 GiB, 128 KiB from 200 GiB: choose_bm_space) and headroom for reshapes (128 MiB, halved
while above 0.1% of the member, not below two chunks), rounded up to 1 MiB; what follows is
rounded down to whole chunks (64 KiB for RAID 1). RAID 0 concatenates the members as they are;
RAID 1 is one member; RAID 4/5/6 are members - parity; RAID 10 (near=2) half the members,
rounded down to whole chunks (drivers/md/raid10.c, raid10_size).

LVM (lvm2 2.03, lvm.conf defaults): a PV's first extent starts at 1 MiB (default_data_alignment)
and it holds whole 4 MiB extents (the VG's default extent size); a linear LV takes every
extent of the VG, a striped LV (-i N, -l 100%FREE) a whole number of extents from each of N
PVs, as many as the smallest holds.
"""

from __future__ import annotations

from typing import Sequence

from backupbench.units import KiB, MiB

SECTOR = 512
MD_CHUNK = 512 * KiB
MD_RAID1_ROUND = 64 * KiB
MD_HEADROOM = 128 * MiB
LVM_PE_START = MiB
LVM_EXTENT = 4 * MiB


def _md_bitmap_space(sectors: int) -> int:
    """choose_bm_space, in sectors."""
    if sectors < 64 * 2:
        return 0
    if sectors - 64 * 2 >= 200 * 1024 * 1024 * 2:
        return 128 * 2
    if sectors - 4 * 2 > 8 * 1024 * 1024 * 2:
        return 64 * 2
    return 4 * 2


def md_data_offset(member: int, chunk: int = MD_CHUNK) -> int:
    """Bytes before a member's data (1.2 metadata, the default data offset)."""
    sectors = member // SECTOR
    headroom = MD_HEADROOM // SECTOR
    chunk_sectors = chunk // SECTOR
    while (headroom << 10) > sectors and (chunk == 0 or headroom // 2 >= chunk_sectors * 2):
        headroom >>= 1
    offset = 12 * 2 + _md_bitmap_space(sectors) + headroom
    return -(-offset // 2048) * 2048 * SECTOR


def md_member_data(member: int, level: int, chunk: int = MD_CHUNK) -> int:
    """A member's data area as mdadm sizes it: after the data offset, whole chunks."""
    data = member - md_data_offset(member, 0 if level == 1 else chunk)
    unit = MD_RAID1_ROUND if level == 1 else chunk
    return data // unit * unit


def md_array_bytes(level: int, members: Sequence[int], chunk: int = MD_CHUNK) -> int:
    """/dev/mdN's size for a new array over `members` (bytes each)."""
    data = [md_member_data(size, level, chunk) for size in members]
    count, smallest = len(members), min(data)
    if level == 0:
        return sum(data)
    if level == 1:
        return smallest
    if level == 10:
        return smallest * count // 2 // chunk * chunk
    return (count - (2 if level == 6 else 1)) * smallest


def lvm_extents(pv: int) -> int:
    """Whole extents one PV of `pv` bytes holds."""
    return (pv - LVM_PE_START) // LVM_EXTENT


def lvm_lv_bytes(pvs: Sequence[int], stripes: int | None = None) -> int:
    """The LV `-l 100%FREE` makes over the PVs: linear, or striped over `stripes` of them."""
    extents = sorted((lvm_extents(size) for size in pvs), reverse=True)
    if stripes is None:
        return sum(extents) * LVM_EXTENT
    return stripes * extents[stripes - 1] * LVM_EXTENT
