"""What `df -B1` says of a new XFS or ext4 on a block device of a given size: the size (f_blocks)
and what is available (f_bavail), as mkfs lays the filesystem out with its defaults and the
kernel counts it when mounted.

XFS (xfsprogs 6.1 mkfs.xfs: crc=1, finobt=1, reflink=1, rmapbt=0, 4 KiB blocks, 512-byte
inodes; Linux 6.1-6.18):
- geometry (libxfs/topology.c calc_default_ag_geometry; mkfs/xfs_mkfs.c align_ag_geometry):
  4 AGs up to 4 TiB on one disk, 1 TiB AGs above; on a striped device (md, LVM -i) 8-32 AGs
  scaled with the size, each a whole number of stripe units and not of stripe widths; a last AG
  under 16 MiB is dropped;
- the internal log (calculate_log_size): 1/2048 of the filesystem, at least 64 MiB, at most
  2 GiB - 10 MiB (XFS_MAX_LOG_BYTES), in the middle AG, its size a whole log stripe unit (the
  data stripe unit, or 32 KiB when that is over 256 KiB);
- per AG, the headers and the btree roots (libxfs_prealloc_blocks: 6 blocks), and the root
  directory's inode chunk (8 blocks) in AG 0 (finish_superblock_setup, sb_fdblocks);
- the kernel: f_blocks is the data blocks less the internal log (xfs_fs_statfs); f_bavail
  loses 8 blocks per AG (xfs_alloc_set_aside), the reserve pool (xfs_default_resblks: 5% or
  8,192 blocks, the fewer), and per AG the most blocks its refcount and free-inode btrees could
  ever need (xfs_ag_resv_init: xfs_refcountbt_calc_reserves, xfs_finobt_calc_reserves, sized by
  xfs_btree_calc_size at half-full blocks), less their roots already counted.
ext4 (e2fsprogs 1.47 mke2fs with Debian's mke2fs.conf: 4 KiB blocks from 512 MiB, 256-byte
inodes, one inode per 16 KiB (32 KiB from 4 TiB, 64 KiB from 16 TiB, at most 2^32 - 1),
resize_inode, sparse_super, flex_bg, 64bit, 5% reserved for root):
- groups of 32,768 blocks, a last group too small for its metadata dropped
  (lib/ext2fs/initialize.c ext2fs_initialize); inode tables filling whole blocks; the group
  descriptors and the reserved descriptor blocks for growth to 1024x (calc_reserved_gdt_blocks;
  none past 2^32 blocks, where mke2fs drops resize_inode),
  copied in groups 0, 1 and the powers of 3, 5, 7 (ext2fs_bg_has_super); meta_bg instead when
  they would fill 3/4 of a group; the journal (lib/ext2fs/mkjournal.c
  ext2fs_default_journal_size: 4 MiB to 1 GiB with the size);
- the kernel (fs/ext4/super.c): f_blocks is the blocks less the overhead
  (ext4_calculate_overhead: superblock and descriptor copies with the reserved descriptor
  blocks, bitmaps, inode tables, the journal); f_bavail is the free blocks less the reserved
  blocks (5%) and ext4_calculate_resv_clusters (2% or 4,096 blocks, the fewer); the root and
  lost+found directories and the resize inode are used blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from backupbench.units import GiB, MiB, TiB

BLOCK = 4096
XFS_AG_MIN, XFS_AG_MAX = (16 * MiB) // BLOCK, (TiB - 1) // BLOCK
XFS_LOG_MIN = (64 * MiB) // BLOCK
XFS_LOG_MAX = min(1024 * 1024, (2 * GiB - 10 * MiB) // BLOCK)
XFS_LOG_SUNIT_MAX = 256 * 1024
XFS_PREALLOC = 6        # block 0 (the four header sectors), bnobt, cntbt, inobt, finobt, refcountbt roots
XFS_ROOT_CHUNK = 8      # 64 inodes of 512 bytes
XFS_SET_ASIDE = 8       # per AG: XFS_ALLOCBT_AGFL_RESERVE + 4
XFS_RESBLKS = 8192
BTREE_BLOCK = BLOCK - 56  # a short-format btree block's room after its CRC header
EXT4_GROUP = 32768
EXT4_DESC = 64          # 64bit group descriptors
EXT4_INODE = 256


@dataclass(frozen=True)
class FsSpace:
    filesystem: str
    size: int          # df's size (f_blocks)
    available: int     # df's available (f_bavail)
    free: int          # f_bfree: available and what is reserved (ext4: for root, and the kernel's own)
    detail: str        # how, in a few words, for the notes


def _size(n_bytes: int) -> str:
    """For the notes: GB or TB, as the disks are sold, or MiB below a gigabyte."""
    if n_bytes >= 10**11:
        return f"{n_bytes / 10**12:,.2f} TB"
    return f"{n_bytes / 10**9:,.2f} GB" if n_bytes >= 10**9 else f"{n_bytes / MiB:,.0f} MiB"


def _btree_blocks(records: int, leaf: int, node: int) -> int:
    """xfs_btree_calc_size at the minimum records per block (half of the maximum)."""
    level = -(-records // (leaf // 2))
    blocks = level
    while level > 1:
        level = -(-level // (node // 2))
        blocks += level
    return blocks


def _xfs_ag_reserve(agblocks: int) -> int:
    """Blocks one AG's metadata reservation takes from f_bavail (its roots are already used)."""
    refcount = _btree_blocks(agblocks, BTREE_BLOCK // 12, BTREE_BLOCK // 8)
    finobt = _btree_blocks(agblocks * (BLOCK // 512) // 64, BTREE_BLOCK // 16, BTREE_BLOCK // 8)
    return refcount + finobt - 2


def _blocks(n_bytes: int) -> int:
    return n_bytes // BLOCK


def _default_agsize(dblocks: int, multidisk: bool) -> int:
    """calc_default_ag_geometry: 4 AGs on one device from 128 MiB to 4 TiB, the largest AGs past
    that (past 32 TiB on a striped one too), else 2^shift AGs by the size, more when striped."""
    if dblocks >= _blocks(32 * TiB) or (not multidisk and dblocks >= _blocks(4 * TiB)):
        return XFS_AG_MAX
    if not multidisk and dblocks >= _blocks(128 * MiB):
        shift = 2
    else:
        shift = 5 - sum((dblocks <= _blocks(512 * GiB), dblocks <= _blocks(8 * GiB), dblocks < _blocks(128 * MiB),
                         dblocks < _blocks(64 * MiB), dblocks < _blocks(32 * MiB)))
    agsize = dblocks >> shift
    # Rounded up, or the last bit of the device would be left out.
    return agsize + 1 if dblocks % (1 << shift) and agsize < XFS_AG_MAX else agsize


def xfs_geometry(dblocks: int, sunit: int, swidth: int) -> tuple[int, int, int]:
    """(agsize, agcount, dblocks) as mkfs.xfs picks them; sunit and swidth in blocks."""
    agsize = _default_agsize(dblocks, bool(sunit))
    if sunit and agsize % sunit:
        aligned = -(-agsize // sunit) * sunit
        agsize = aligned if aligned <= XFS_AG_MAX else agsize // sunit * sunit
    agcount = -(-dblocks // agsize)
    # AGs a whole stripe width apart would all start on the same disk: one stripe unit off.
    if sunit and agsize % swidth == 0 and swidth != sunit and agcount > 1:
        agsize = agsize - sunit if agsize - sunit >= XFS_AG_MIN else agsize + sunit
        agcount = -(-dblocks // agsize)
    if dblocks % agsize and dblocks % agsize < XFS_AG_MIN:
        agcount -= 1
        dblocks = agcount * agsize
    return agsize, agcount, dblocks


def xfs_log_blocks(dblocks: int, agsize: int, agcount: int, sunit: int) -> int:
    """The internal log (calculate_log_size, align_internal_log): its size and, on a striped
    device, a whole number of log stripe units within the middle AG."""
    logblocks = min(max(dblocks // 2048, XFS_LOG_MIN), agsize - XFS_PREALLOC - 1, XFS_LOG_MAX)
    lsunit = sunit if sunit * BLOCK <= XFS_LOG_SUNIT_MAX else _blocks(32 * 1024)
    if not lsunit or logblocks % lsunit == 0:
        return logblocks
    rounded = -(-logblocks // lsunit) * lsunit
    if rounded > XFS_LOG_MAX or rounded > agsize - XFS_PREALLOC - 1:
        rounded = logblocks // lsunit * lsunit
    start = -(-(agcount // 2 * agsize + XFS_PREALLOC) // lsunit) * lsunit
    if start + rounded > (agcount // 2 + 1) * agsize:
        rounded -= lsunit
    return rounded


def xfs_space(device: int, sunit: int = 0, swidth: int = 0) -> FsSpace:
    """A new XFS on `device` bytes; sunit/swidth: the device's stripe unit and width in bytes
    (md's chunk and chunk x data disks, LVM's -I and -I x -i), 0 when it has none."""
    su, sw = sunit // BLOCK, swidth // BLOCK
    agsize, agcount, dblocks = xfs_geometry(device // BLOCK, su, sw)
    logblocks = xfs_log_blocks(dblocks, agsize, agcount, su)
    fdblocks = dblocks - logblocks - agcount * XFS_PREALLOC - XFS_ROOT_CHUNK
    reserved = 0
    for agno in range(agcount):
        agblocks = min(agsize, dblocks - agno * agsize)
        reserved += _xfs_ag_reserve(agblocks - (logblocks if agno == agcount // 2 else 0))
    available = fdblocks - reserved - agcount * XFS_SET_ASIDE - min(dblocks // 20, XFS_RESBLKS)
    detail = (f"XFS: {agcount} AGs, a {_size(logblocks * BLOCK)} log, {_size(reserved * BLOCK)} reserved for the "
              "refcount and free-inode btrees")
    return FsSpace("xfs", (dblocks - logblocks) * BLOCK, available * BLOCK, available * BLOCK, detail)


def _powers_below(root: int, limit: int) -> int:
    """How many of root, root^2, ... are below `limit`."""
    count, power = 0, root
    while power < limit:
        count, power = count + 1, power * root
    return count


def _ext4_has_super(group: int) -> bool:
    if group <= 1:
        return True
    return any(_powers_below(root, group + 1) > _powers_below(root, group) for root in (3, 5, 7))


def _ext4_supers(groups: int) -> int:
    """Groups holding a superblock copy: 0, 1 and the powers of 3, 5 and 7 (sparse_super)."""
    return min(groups, 2) + sum(_powers_below(root, groups) for root in (3, 5, 7))


def _ext4_journal(blocks: int) -> int:
    for limit, size in ((32768, 1024), (256 * 1024, 4096), (512 * 1024, 8192), (4096 * 1024, 16384),
                        (8192 * 1024, 32768), (16384 * 1024, 65536), (32768 * 1024, 131072)):
        if blocks < limit:
            return size
    return 262144


def _ext4_inode_ratio(size: int) -> int:
    """mke2fs.conf's size types: small under 512 MiB, default, big from 4 TiB, huge from 16 TiB."""
    return 4096 if size < 512 * MiB else 16384 if size < 4 * TiB else 32768 if size < 16 * TiB else 65536


@dataclass(frozen=True)
class Ext4Layout:
    block: int
    blocks: int
    groups: int
    itb: int          # inode table blocks per group
    desc: int         # group descriptor blocks
    reserved_gdt: int
    meta_bg: bool

    @property
    def first(self) -> int:
        """s_first_data_block: 1 with 1 KiB blocks, block 0 being the boot sector."""
        return 1 if self.block == 1024 else 0


def _ext4_reserved_gdt(blocks: int, first: int, per_group: int, per_block: int, desc: int, block: int) -> int:
    """calc_reserved_gdt_blocks: room to grow 1024x or to 2^32 blocks, at most a block of
    pointers; none past 2^32 blocks, where mke2fs drops resize_inode (misc/mke2fs.c)."""
    if blocks > 2**32 - 1:
        return 0
    limit = min(2**32 - 1, blocks * 1024)
    groups_then = -(-(limit - first) // per_group)
    return min(-(-groups_then // per_block) - desc, block // 4)


def ext4_layout(device: int) -> Ext4Layout:
    block = BLOCK if device >= 512 * MiB else 1024
    blocks = device // block
    first, per_group, per_block = (1 if block == 1024 else 0), 8 * block, block // EXT4_DESC
    inodes = min(blocks * block // _ext4_inode_ratio(blocks * block), 2**32 - 1)
    while True:
        groups = -(-(blocks - first) // per_group)
        desc = -(-groups // per_block)
        ipg = min(-(-inodes // groups), 8 * block)
        ipg = -(-ipg * EXT4_INODE // block) * block // EXT4_INODE // 8 * 8
        while ipg * groups > 2**32 - 1:
            ipg -= 8
        itb = -(-ipg * EXT4_INODE // block)
        reserved_gdt = _ext4_reserved_gdt(blocks, first, per_group, per_block, desc, block)
        meta_bg = reserved_gdt + desc > per_group * 3 // 4
        if meta_bg:
            reserved_gdt = 0
        last = (blocks - first) % per_group
        overhead = 2 + itb + ((1 + desc + reserved_gdt) if _ext4_has_super(groups - 1) else 0)
        if not last or last >= overhead + 50:
            return Ext4Layout(block, blocks, groups, itb, desc, reserved_gdt, meta_bg)
        blocks -= last


def _ext4_descriptor_blocks(layout: Ext4Layout, supers: int) -> int:
    """Descriptor blocks on disk (ext4_bg_num_gdb): a copy in each superblock group, or with
    meta_bg one block in the first, second and last group of each meta group."""
    if not layout.meta_bg:
        return supers * layout.desc
    per_meta = layout.block // EXT4_DESC
    whole, rest = divmod(layout.groups, per_meta)
    return whole * 3 + min(rest, 2)


def ext4_space(device: int) -> FsSpace:
    """A new ext4 on `device` bytes, as `df -B1` shows it mounted (see the module doc)."""
    layout = ext4_layout(device)
    block = layout.block
    supers = _ext4_supers(layout.groups)
    journal = _ext4_journal(layout.blocks)
    overhead = (layout.first + supers * (1 + layout.reserved_gdt) + _ext4_descriptor_blocks(layout, supers)
                + layout.groups * (layout.itb + 2) + journal)
    # Used at mkfs: the resize inode's block, the root directory, lost+found (16 KiB, at most 12 blocks), and the
    # journal's extent tree leaf once it needs more than 4 extents.
    used = (1 if layout.reserved_gdt else 0) + 1 + min(max(2, 16384 // block), 12) + (1 if journal > 4 * 32768 else 0)
    free = layout.blocks - overhead - used
    available = free - layout.blocks * 5 // 100 - min(layout.blocks // 50, 4096)
    detail = (f"ext4: {_size(layout.itb * layout.groups * block)} of inode tables, a {_size(journal * block)} "
              "journal, 5% reserved for root")
    return FsSpace("ext4", (layout.blocks - overhead) * block, available * block, free * block, detail)
