"""ZFS dataset properties a recipe may set, and the values ZFS takes for them (zfsprops(7),
OpenZFS 2.3), so that a property ZFS would reject is refused with the recipe, before any
device is touched. User properties (a name with a colon, `module:name`) take any value.

Only properties that can be set when a pool is created (`zpool create -O`) are listed; the
read-only ones (used, available, ...) and those about sharing or mounting (backupbench mounts
the pool itself) are not.
"""

from __future__ import annotations

import difflib
import re

ON_OFF = ("on", "off")
_LEVELS = tuple(f"gzip-{n}" for n in range(1, 10)) + tuple(f"zstd-{n}" for n in range(1, 20))
_FAST = ("zstd-fast",) + tuple(f"zstd-fast-{n}" for n in (*range(1, 11), 20, 30, 40, 50, 60, 70, 80, 90,
                                                            100, 500, 1000))
CHECKSUMS = ("on", "off", "fletcher2", "fletcher4", "sha256", "noparity", "sha512", "skein", "edonr", "blake3")

CHOICES: dict[str, tuple[str, ...]] = {
    "atime": ON_OFF,
    "relatime": ON_OFF,
    "xattr": ("on", "off", "sa", "dir"),
    "compression": ("on", "off", "lzjb", "gzip", "zle", "lz4", "zstd", *_LEVELS, *_FAST),
    "checksum": CHECKSUMS,
    "dedup": ("on", "off", "verify", *(f"{c},verify" for c in CHECKSUMS[3:]), *CHECKSUMS[3:]),
    "sync": ("standard", "always", "disabled"),
    "logbias": ("latency", "throughput"),
    "primarycache": ("all", "none", "metadata"),
    "secondarycache": ("all", "none", "metadata"),
    "redundant_metadata": ("all", "most", "some", "none"),
    "dnodesize": ("legacy", "auto", "1k", "2k", "4k", "8k", "16k"),
    "acltype": ("off", "noacl", "nfsv4", "posix", "posixacl"),
    "aclinherit": ("discard", "noallow", "restricted", "passthrough", "passthrough-x"),
    "aclmode": ("discard", "groupmask", "passthrough", "restricted"),
    "copies": ("1", "2", "3"),
    "direct": ("standard", "always", "disabled"),
    "casesensitivity": ("sensitive", "insensitive", "mixed"),
    "normalization": ("none", "formC", "formD", "formKC", "formKD"),
    "utf8only": ON_OFF,
    "exec": ON_OFF,
    "setuid": ON_OFF,
    "devices": ON_OFF,
    "readonly": ("off",),  # a read-only pool measures nothing
    "snapdir": ("hidden", "visible", "disabled"),
    "volmode": ("default", "full", "geom", "dev", "none"),
    "prefetch": ("all", "none", "metadata"),
}

# block sizes: (smallest, largest); a power of two (or 0) in between
SIZES: dict[str, tuple[int, int]] = {
    "recordsize": (512, 16 << 20),
    "special_small_blocks": (0, 16 << 20),
}

_SIZE = re.compile(r"(\d+)([KMGTPE]?)(i?B?)?", re.IGNORECASE)
_SUFFIX = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}


def parse_zfs_size(text: str) -> int | None:
    """A size as zfs reads it (1M, 128K, 131072; 1MiB is not zfs's spelling but means the
    same); None if it is not one."""
    match = _SIZE.fullmatch(text)
    if not match:
        return None
    return int(match.group(1)) << _SUFFIX[match.group(2).upper()]


def known_names() -> list[str]:
    return sorted({*CHOICES, *SIZES})


def problem(name: str, value: str) -> str | None:
    """Why ZFS would reject `name=value` at pool creation, or None if it takes it."""
    if ":" in name:
        return None  # a user property
    if name in CHOICES:
        if value in CHOICES[name]:
            return None
        shown = ", ".join(CHOICES[name][:12]) + (", ..." if len(CHOICES[name]) > 12 else "")
        return f"{name} = {value!r}: ZFS takes {shown}"
    if name in SIZES:
        low, high = SIZES[name]
        size = parse_zfs_size(value)
        if size is None:
            return f"{name} = {value!r}: not a size (e.g. 1M, 128K)"
        if not low <= size <= high or size & (size - 1):
            return f"{name} = {value!r}: ZFS takes a power of two from {low} bytes to {high >> 20} MiB"
        return None
    close = difflib.get_close_matches(name, known_names(), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else " (a user property needs a colon: module:name)"
    return f"{name!r} is not a ZFS dataset property backupbench can set{hint}"
