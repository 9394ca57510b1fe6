"""The layouts `backupbench size` knows and how a user names them: a layout's name or zpool
dRAID spec, its disks and the options of its kind (LayoutSpec), with zpool's dRAID defaults
filled in. sizing/capacity.py answers for them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from backupbench import layout_model
from backupbench.errors import InputError

MD_LEVELS = {"raid0": 0, "raid1": 1, "raid5": 5, "raid6": 6, "raid10": 10}
LVM_KINDS = ("lvm-linear", "lvm-striped")
RAIDZ_PARITY = {"raidz1": 1, "raidz2": 2, "raidz3": 3}
DRAID_PARITY = {"draid1": 1, "draid2": 2, "draid3": 3}
BTRFS_DATA = ("single", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6")
BTRFS_LAYOUTS = tuple(f"btrfs-{profile}" for profile in BTRFS_DATA)
MINIO_EC = "minio-ec"
LAYOUTS = (*MD_LEVELS, *LVM_KINDS, *RAIDZ_PARITY, *DRAID_PARITY, *BTRFS_LAYOUTS, MINIO_EC)
FILESYSTEMS = ("xfs", "ext4", "none")
DEFAULT_FILESYSTEM = "xfs"  # a recipe layout's default, and the backup repository's (reflink)
LVM_STRIPE = 64 * 1024      # layouts/lvm.py's default -I

# zpool's dRAID notation: draid[<parity>][:<data>d][:<children>c][:<spares>s] (zpoolconcepts(7)).
_DRAID_RE = re.compile(r"^draid([123])?((?::\d+[dcs])*)$")
_DRAID_PART = re.compile(r":(\d+)([dcs])")
ZFS_DEFAULT_DRAID_DATA = 8  # zpoolconcepts(7): "Defaults to 8, unless N-P-S is less than 8."


@dataclass(frozen=True)
class LayoutSpec:
    """A layout as the user describes it. `layout` is one of LAYOUTS or a zpool dRAID spec
    such as 'draid2:3d:45c:2s'; `disk_sizes` holds one size per disk."""

    layout: str
    disk_sizes: tuple[int, ...]
    stripes: int | None = None  # lvm-striped: -i
    vdevs: int | None = None  # raidz: how many raidz vdevs the disks are split into
    draid_data: int | None = None  # dRAID: data disks per redundancy group (d)
    draid_spares: int | None = None  # dRAID: distributed spares (s)
    set_size: int | None = None  # minio-ec: drives per erasure set
    parity: int | None = None  # minio-ec: parity drives per set (EC:N)
    filesystem: str | None = None  # md, LVM, minio-ec's drives: xfs [default], ext4; md, LVM: none
    btrfs_metadata: str | None = None  # btrfs: metadata profile [default: mkfs.btrfs's]
    ashift: int | None = None  # raidz, dRAID [default: 12]
    recordsize: int | None = None  # raidz, dRAID: the datasets' recordsize [default: 128 KiB]

    @property
    def disks(self) -> int:
        return len(self.disk_sizes)


@dataclass(frozen=True)
class Draid:
    """A dRAID vdev: parity p, data disks per group d, children c, distributed spares s."""

    parity: int
    data: int
    children: int
    spares: int

    @property
    def notation(self) -> str:
        return f"draid{self.parity}:{self.data}d:{self.children}c:{self.spares}s"


def is_layout_name(text: str) -> bool:
    return text in LAYOUTS or bool(_DRAID_RE.match(text) and ":" in text)


def layout_family(text: str) -> str:
    """'md', 'lvm', 'raidz', 'draid', 'btrfs' or 'minio' for a layout name or dRAID spec."""
    if text in MD_LEVELS:
        return "md"
    if text in LVM_KINDS:
        return "lvm"
    if text in RAIDZ_PARITY:
        return "raidz"
    if text in BTRFS_LAYOUTS:
        return "btrfs"
    if text == MINIO_EC:
        return "minio"
    if text.startswith("draid") and _DRAID_RE.match(text):
        return "draid"
    raise InputError(f"unknown layout {text!r}", "use one of " + ", ".join(LAYOUTS)
                     + ", or a zpool dRAID spec such as draid2:3d:45c:2s")


def parse_draid(text: str) -> tuple[int, dict[str, int]]:
    """'draid2:3d:45c:2s' -> (2, {'d': 3, 'c': 45, 's': 2}). Plain 'draid' is parity 1, as zpool has it."""
    match = _DRAID_RE.match(text)
    if not match:
        raise InputError(f"{text!r} is not a dRAID spec",
                         "write it as zpool does: draid<parity>[:<data>d][:<children>c][:<spares>s], "
                         "e.g. draid2:3d:45c:2s")
    parts: dict[str, int] = {}
    for number, letter in _DRAID_PART.findall(match.group(2)):
        if letter in parts:
            raise InputError(f"{text!r} gives '{letter}' twice")
        parts[letter] = int(number)
    return int(match.group(1) or 1), parts


def resolve_draid(spec: LayoutSpec) -> Draid:
    """The dRAID vdev a dRAID layout spec describes, with zpool's defaults filled in and checked."""
    parity, parts = parse_draid(spec.layout)
    for letter, given, flag in (("d", spec.draid_data, "--draid-data"), ("s", spec.draid_spares, "--draid-spares")):
        if given is not None and letter in parts and parts[letter] != given:
            raise InputError(f"{flag} {given} contradicts {spec.layout!r}", "give it in one place only")
    children = parts.get("c", spec.disks)
    if children != spec.disks:
        raise InputError(f"{spec.layout!r} has {children} children but {spec.disks} disks were given",
                         "dRAID's children are the disks: make --disks match")
    spares = parts.get("s", spec.draid_spares if spec.draid_spares is not None else 0)
    data = parts.get("d", spec.draid_data if spec.draid_data is not None
                     else min(ZFS_DEFAULT_DRAID_DATA, children - spares - parity))
    return checked_draid(Draid(parity, data, children, spares))


def checked_draid(draid: Draid) -> Draid:
    if draid.data < 1:
        raise InputError(f"dRAID{draid.parity} with {draid.spares} spare(s) needs more than {draid.children} disks",
                         "add disks or use fewer spares")
    if draid.children < layout_model.draid_min_children(draid.parity, draid.data, draid.spares):
        raise InputError(
            f"a dRAID redundancy group of {draid.data} data + {draid.parity} parity does not fit in "
            f"{draid.children} children minus {draid.spares} spare(s)",
            "lower --draid-data or --draid-spares, or add disks")
    return draid


# The layout-specific options and the layouts they belong to; a stray one is an error, not ignored.
_OPTION_FLAGS = {"stripes": "--stripes", "vdevs": "--vdevs", "draid_data": "--draid-data",
                 "draid_spares": "--draid-spares", "set_size": "--set-size", "parity": "--parity",
                 "filesystem": "--filesystem", "btrfs_metadata": "--btrfs-metadata", "ashift": "--ashift",
                 "recordsize": "--recordsize"}


def option_applies(option: str, layout: str) -> bool:
    """Whether a layout-specific option (a LayoutSpec field name) belongs to `layout`."""
    family = layout_family(layout)
    zfs_family = family in ("raidz", "draid")
    return {"stripes": layout == "lvm-striped", "vdevs": family == "raidz", "draid_data": family == "draid",
            "draid_spares": family == "draid", "set_size": family == "minio", "parity": family == "minio",
            "filesystem": family in ("md", "lvm", "minio"), "btrfs_metadata": family == "btrfs",
            "ashift": zfs_family, "recordsize": zfs_family}[option]


def check_applicable(spec: LayoutSpec) -> None:
    for name, flag in _OPTION_FLAGS.items():
        if getattr(spec, name) is not None and not option_applies(name, spec.layout):
            raise InputError(f"{flag} does not apply to layout {spec.layout}",
                             "drop it, or choose the layout it belongs to")
