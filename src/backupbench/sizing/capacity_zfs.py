"""ZFS's own space accounting, as OpenZFS 2.3 (Debian's zfsutils-linux 2.3.2) does it, from the
disk to what `zfs list -p -o used,available` says of an empty pool's root dataset.

Each step and where OpenZFS does it:
1. Whole disks are partitioned by zpool (lib/libzfs/os/linux/libzfs_pool_os.c, zpool_label_disk):
   a GPT whose last usable LBA leaves the backup table's 33 sectors (lib/libefi/rdwr_efi.c,
   efi_alloc_and_init), partition 1 from sector 2048 (NEW_START_BLOCK) up to 16,384 sectors
   (EFI_MIN_RESV_SIZE, partition 9) before that, its size rounded down to 2048 sectors
   (PARTITION_END_ALIGNMENT).
2. A leaf vdev's size is rounded down to a whole 256 KiB label and loses four labels and the boot
   region: 4 MiB at the start, 512 KiB at the end (module/zfs/vdev.c, vdev_open;
   VDEV_LABEL_START_SIZE, VDEV_LABEL_END_SIZE).
3. A raidz vdev is its smallest child x its children (vdev_raidz.c, vdev_raidz_open). A dRAID
   vdev keeps 32 MiB per child for expansion, rounds each child down to 16 MiB rows and the whole
   to redundancy groups of the non-spare children (vdev_draid.c, vdev_draid_open).
4. Metaslabs: about 200 per top-level vdev, 512 MiB to 16 GiB each (vdev.c,
   vdev_metaslab_set_size); only whole metaslabs hold data (vdev_metaslab_init: asize >>
   ms_shift), and a dRAID metaslab is cut to whole groups (vdev_draid_metaslab_init).
5. One metaslab per top-level vdev with more than 64 goes to the embedded log class
   (vdev_metaslab_init, zfs_embedded_slog_min_ms): not in the pool's normal space.
6. Space is reported as if every block were a 128 KiB block (vdev_set_deflate_ratio:
   2^17 / (psize_to_asize(128 KiB) >> 9), an integer): on raidz the parity and the padding to
   parity + 1 sectors of such a block (vdev_raidz_asize), on dRAID its rows of d data + p parity
   sectors (vdev_draid_asize).
7. Slop space: 1/32 of that (spa_slop_shift 5), at most 128 GiB, less the embedded log (at most
   half the slop), at least 128 MiB (spa_misc.c, spa_get_slop_space); available + used of the
   pool's root dataset is the rest (dsl_pool.c, dsl_pool_adjustedsize).
The data a pool holds is that space over what each block is charged: a block of the dataset's
recordsize takes its own raidz/dRAID allocation, deflated by the same ratio (bp_get_dsize), so
1 MiB records on a wide raidz hold a little more than `zfs list` says, small records on dRAID
far less. Not counted: indirect blocks and other metadata (about 0.1% with 128 KiB records).
"""

from __future__ import annotations

from dataclasses import dataclass

from backupbench.units import GiB, KiB, MiB

SECTOR = 512
LABEL = 256 * KiB
LABEL_START = 2 * LABEL + 3584 * KiB  # two labels and the boot region
LABEL_END = 2 * LABEL
MIN_BLOCK_SHIFT = 9
MAX_BLOCK_SHIFT = 24
DEFLATE_BLOCK = 1 << 17
DEFAULT_ASHIFT = 12  # what zpool picks for 4 KiB-sector disks (512e and 4Kn drives)
DEFAULT_RECORDSIZE = 128 * KiB
# vdev.c: the metaslab sizing tunables' defaults.
MS_COUNT_TARGET, MS_COUNT_MIN, MS_COUNT_LIMIT = 200, 16, 1 << 17
MS_SHIFT_MIN, MS_SHIFT_MAX = 29, 34
EMBEDDED_LOG_MIN_MS = 64
SLOP_SHIFT, SLOP_MIN, SLOP_MAX = 5, 128 * MiB, 128 * GiB
DRAID_ROW = 1 << MAX_BLOCK_SHIFT  # VDEV_DRAID_ROWHEIGHT
DRAID_RESERVE = 2 * DRAID_ROW  # VDEV_DRAID_REFLOW_RESERVE
# GPT as zpool writes it (in LBAs of the disk's logical sector).
GPT_START, GPT_RESERVED, GPT_ALIGN, GPT_MIN_ARRAY, GPT_ENTRY, GPT_PARTS = 2048, 16 * 1024, 2048, 16 * KiB, 128, 9


@dataclass(frozen=True)
class Vdev:
    """One top-level data vdev: raidz (data = 0: its width is `children`) or dRAID."""

    children: int
    parity: int
    draid_data: int = 0
    spares: int = 0

    @property
    def draid(self) -> bool:
        return self.draid_data > 0


@dataclass(frozen=True)
class PoolSpace:
    partition: int        # bytes of partition 1 on each disk
    child: int            # each child's allocatable size (vdev asize)
    vdev: int             # each top-level vdev's asize
    ms_shift: int
    metaslabs: int        # per top-level vdev
    deflate_ratio: int    # dspace per 512 bytes of allocated space
    normal: int           # the pool's normal class space (spa_rdspace)
    embedded_log: int     # deflated space of the embedded log metaslabs
    slop: int
    reported: int         # available + used of the root dataset on an empty pool
    holds: int            # data of `recordsize` blocks it takes before it is full
    recordsize: int


def highbit(value: int) -> int:
    """highbit64: the 1-based position of the highest set bit (0 for 0)."""
    return value.bit_length()


def partition_bytes(disk: int, sector: int = SECTOR) -> int:
    """Partition 1 of a whole disk zpool labels (see the module doc, step 1)."""
    lbas = disk // sector
    entry_blocks = 1 + (GPT_PARTS * GPT_ENTRY + sector - 1) // sector
    table = max(entry_blocks, GPT_MIN_ARRAY // sector + 1)
    last_usable = lbas - 1 - table
    size = last_usable + 1 - GPT_RESERVED - GPT_START
    return (size - size % GPT_ALIGN) * sector


def leaf_asize(partition: int) -> int:
    return partition - partition % LABEL - LABEL_START - LABEL_END


def vdev_asize(vdev: Vdev, child: int) -> int:
    if not vdev.draid:
        return child * vdev.children
    rows = (child - DRAID_RESERVE) // DRAID_ROW * DRAID_ROW
    group = (vdev.draid_data + vdev.parity) * DRAID_ROW
    return rows * (vdev.children - vdev.spares) // group * group


def metaslab_shift(asize: int) -> int:
    count = asize >> MS_SHIFT_MIN
    if count < MS_COUNT_MIN:
        shift = highbit(asize // MS_COUNT_MIN)
    elif count > MS_COUNT_TARGET:
        shift = highbit(asize // MS_COUNT_TARGET)
    else:
        shift = MS_SHIFT_MIN
    if shift < MAX_BLOCK_SHIFT:
        return MAX_BLOCK_SHIFT
    if shift > MS_SHIFT_MAX:
        shift = MS_SHIFT_MAX
        if (asize >> shift) > MS_COUNT_LIMIT:
            shift = highbit(asize // MS_COUNT_LIMIT)
    return shift


def metaslab_sizes(vdev: Vdev, asize: int, shift: int, ashift: int) -> list[int]:
    """Each metaslab's size; a dRAID one starts at a whole group and keeps whole groups."""
    count = asize >> shift
    if not vdev.draid:
        return [1 << shift] * count
    group = (vdev.draid_data + vdev.parity) << ashift
    sizes = []
    for index in range(count):
        start = index << shift
        aligned = -(-start // group) * group
        sizes.append(((1 << shift) - (aligned - start)) // group * group)
    return sizes


def block_asize(vdev: Vdev, psize: int, ashift: int) -> int:
    """Allocated bytes of one block of `psize` (vdev_raidz_asize, vdev_draid_asize)."""
    if vdev.draid:
        rows = (psize - 1) // (vdev.draid_data << ashift) + 1
        return rows * (vdev.draid_data + vdev.parity) << ashift
    sectors = ((psize - 1) >> ashift) + 1
    data_columns = vdev.children - vdev.parity
    sectors += vdev.parity * ((sectors + data_columns - 1) // data_columns)
    return -(-sectors // (vdev.parity + 1)) * (vdev.parity + 1) << ashift


def deflate_ratio(vdev: Vdev, ashift: int) -> int:
    return DEFLATE_BLOCK // (block_asize(vdev, DEFLATE_BLOCK, ashift) >> MIN_BLOCK_SHIFT)


def slop_space(normal: int, embedded_log: int) -> int:
    slop = min(normal >> SLOP_SHIFT, SLOP_MAX)
    slop -= min(embedded_log, slop >> 1)
    return max(slop, min(normal >> 1, SLOP_MIN))


def pool_space(vdev: Vdev, vdevs: int, disk: int, *, ashift: int = DEFAULT_ASHIFT,
               recordsize: int = DEFAULT_RECORDSIZE, sector: int = SECTOR) -> PoolSpace:
    """An empty pool of `vdevs` identical top-level vdevs over whole disks of `disk` bytes."""
    partition = partition_bytes(disk, sector)
    child = leaf_asize(partition)
    asize = vdev_asize(vdev, child)
    shift = metaslab_shift(asize)
    sizes = metaslab_sizes(vdev, asize, shift, ashift)
    ratio = deflate_ratio(vdev, ashift)
    log = sizes[0] if len(sizes) > EMBEDDED_LOG_MIN_MS else 0
    normal = vdevs * ((sum(sizes) - log) >> MIN_BLOCK_SHIFT) * ratio
    embedded_log = vdevs * (log >> MIN_BLOCK_SHIFT) * ratio
    slop = slop_space(normal, embedded_log)
    reported = normal - slop
    charged = (block_asize(vdev, recordsize, ashift) >> MIN_BLOCK_SHIFT) * ratio
    return PoolSpace(partition, child, asize, shift, len(sizes), ratio, normal, embedded_log, slop, reported,
                     reported * recordsize // charged, recordsize)
