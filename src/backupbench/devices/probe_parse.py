"""Pure parsers for what block-device tools and kernel files print.

Text in, plain data out; nothing here touches the system, so each parser is tested over
recorded output. A parser raises ValueError on text it cannot read: the caller records
that as a failed probe (which refuses the device), never guesses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# Signature types that are partition tables (libblkid's partition-table probers, as wipefs
# and `blkid -p` name them). A protective MBR (PMBR) sits in front of every GPT.
PARTITION_TABLE_TYPES = frozenset({
    "gpt", "PMBR", "dos", "bsd", "sun", "sgi", "mac", "atari", "aix", "unixware",
    "solaris", "minix", "ultrix",
})


@dataclass(frozen=True)
class Signature:
    """One on-disk signature: what it is and the byte offset of its magic (None: unknown)."""

    type: str
    offset: int | None = None
    uuid: str | None = None
    label: str | None = None

    @property
    def is_partition_table(self) -> bool:
        return self.type in PARTITION_TABLE_TYPES


@dataclass(frozen=True)
class LsblkDevice:
    kname: str
    name: str
    path: str | None
    major_minor: str | None
    type: str | None
    size_bytes: int | None
    read_only: bool | None
    rotational: bool | None
    fs_type: str | None
    label: str | None
    uuid: str | None
    pttype: str | None
    parent: str | None
    mountpoints: tuple[str, ...]
    children: tuple[str, ...]
    # What the disk is, for people (lsblk MODEL, SERIAL, TRAN); None where lsblk was not
    # asked for it or the device has none (partitions, LVs, virtio disks, loop devices).
    model: str | None = None
    serial: str | None = None
    transport: str | None = None     # sata, sas, nvme, usb, iscsi, fc, ...


@dataclass(frozen=True)
class PhysicalVolume:
    pv_name: str
    vg_name: str | None
    size_bytes: int | None


@dataclass(frozen=True)
class MdMember:
    kname: str
    role: int | None
    flags: tuple[str, ...]   # "F" faulty, "S" spare, "W" write-mostly, ...


@dataclass(frozen=True)
class MdArray:
    name: str
    state: str               # "active" or "inactive"
    level: str | None
    members: tuple[MdMember, ...]


@dataclass(frozen=True)
class Swap:
    path: str
    kind: str                # "partition" (any block device) or "file"


def _bool(value: object) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    # lsblk before 2.33 printed "0"/"1" strings in JSON.
    return str(value).strip() not in ("0", "", "false")


def _int(value: object) -> int | None:
    if value is None or value == "":
        return None
    return int(value)  # ValueError on garbage: the caller turns it into a probe error


def _text(value: object) -> str | None:
    return None if value in (None, "") else str(value)


def _label(value: object) -> str | None:
    """A model or serial: older lsblk pads them with the blanks the disk reports."""
    return _text(str(value).strip()) if value is not None else None


def parse_lsblk_json(text: str) -> list[LsblkDevice]:
    """`lsblk --json --bytes` (any columns, -O included) -> every device once, in tree order.

    A device shown under several parents (an LV striped over four disks) appears once,
    where it is first met; `parent` is that first parent, `children` lists direct children.
    """
    try:
        nodes = json.loads(text)["blockdevices"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"not lsblk JSON output: {exc}") from None
    found: dict[str, LsblkDevice] = {}

    def visit(node: dict, parent: str | None) -> None:
        kname = node.get("kname") or node.get("name")
        if not kname:
            raise ValueError("an lsblk entry has neither kname nor name")
        children = node.get("children") or []
        if kname not in found:
            points = node.get("mountpoints")
            if points is None:  # lsblk before 2.37 had only the single MOUNTPOINT column
                points = [node.get("mountpoint")]
            found[kname] = LsblkDevice(
                kname=kname, name=node.get("name") or kname, path=_text(node.get("path")),
                major_minor=_text(node.get("maj:min")), type=_text(node.get("type")),
                size_bytes=_int(node.get("size")), read_only=_bool(node.get("ro")),
                rotational=_bool(node.get("rota")), fs_type=_text(node.get("fstype")),
                label=_text(node.get("label")), uuid=_text(node.get("uuid")),
                pttype=_text(node.get("pttype")), parent=_text(node.get("pkname")) or parent,
                mountpoints=tuple(p for p in points if p),
                children=tuple(c.get("kname") or c.get("name") for c in children),
                model=_label(node.get("model")), serial=_label(node.get("serial")),
                transport=_text(node.get("tran")),
            )
        for child in children:
            visit(child, kname)

    if not isinstance(nodes, list):
        raise ValueError("lsblk JSON has no list of blockdevices")
    for node in nodes:
        visit(node, None)
    return list(found.values())


def _wipefs_rows(text: str) -> list[tuple[str | None, Signature]]:
    """`wipefs --no-act --json DEV...` -> (the device wipefs names, its signature) for each one."""
    if not text.strip():
        return []  # wipefs prints nothing at all for a blank device on some versions
    try:
        return [(None if e.get("device") is None else str(e["device"]),
                 Signature(type=str(e["type"]), offset=int(str(e["offset"]), 0),
                           uuid=_text(e.get("uuid")), label=_text(e.get("label"))))
                for e in json.loads(text)["signatures"]]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not wipefs JSON output: {exc}") from None


def parse_wipefs_json(text: str) -> list[Signature]:
    """`wipefs --no-act --json DEVICE` -> every signature it found (wipefs lists all of them,
    unlike blkid, which stops at a RAID superblock and so hides e.g. a swap header next to it)."""
    return [signature for _device, signature in _wipefs_rows(text)]


def parse_wipefs_json_by_device(text: str) -> dict[str, list[Signature]]:
    """`wipefs --no-act --json DEV1 DEV2 ...` -> each device's signatures, by the name wipefs
    gives it (the path's last part: `loop0` for /dev/loop0); a device without any is absent."""
    found: dict[str, list[Signature]] = {}
    for device, signature in _wipefs_rows(text):
        if device is None:
            raise ValueError("not wipefs JSON output: a signature names no device")
        found.setdefault(device, []).append(signature)
    return found


_EXPORT_LINE = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")


def _unescape_export(value: str) -> str:
    # blkid -o export escapes spaces and shell specials with a backslash.
    return re.sub(r"\\(.)", r"\1", value)


def parse_blkid_export(text: str) -> list[Signature]:
    """`blkid --probe -o export DEVICE` -> the filesystem/RAID/swap type and partition table.

    blkid reports one superblock at most (and none beyond a RAID superblock), so wipefs
    is preferred; this is the fallback where wipefs is missing.
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _EXPORT_LINE.match(line.strip())
        if not match:
            raise ValueError(f"not blkid export output: {line!r}")
        values[match.group(1)] = _unescape_export(match.group(2))
    signatures = []
    if "TYPE" in values:
        offset = values.get("SBMAGIC_OFFSET")
        signatures.append(Signature(values["TYPE"], int(offset) if offset else None,
                                    values.get("UUID"), values.get("LABEL")))
    if "PTTYPE" in values:
        offset = values.get("PTMAGIC_OFFSET")
        signatures.append(Signature(values["PTTYPE"], int(offset) if offset else None, values.get("PTUUID")))
    return signatures


def parse_pvs_json(text: str) -> list[PhysicalVolume]:
    """`pvs --reportformat json --units b --nosuffix` -> physical volumes and their VG."""
    try:
        reports = json.loads(text)["report"]
        rows = [row for report in reports for row in report.get("pv", [])]
        return [
            PhysicalVolume(pv_name=row["pv_name"], vg_name=_text(row.get("vg_name")),
                           size_bytes=_int(row.get("pv_size")))
            for row in rows
        ]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"not pvs JSON output: {exc}") from None


_MD_LINE = re.compile(r"^(md\S*)\s*:\s*(\S+)(.*)$")
_MD_MEMBER = re.compile(r"^([^\s\[]+)\[(\d+)\]((?:\([A-Za-z]+\))*)$")


def parse_mdstat(text: str) -> list[MdArray]:
    """/proc/mdstat -> arrays with their state, level and member devices."""
    arrays = []
    for line in text.splitlines():
        match = _MD_LINE.match(line)
        if not match:
            continue
        name, state, rest = match.groups()
        tokens = [t for t in rest.split() if not (t.startswith("(") and t.endswith(")"))]
        level = None
        if tokens and not _MD_MEMBER.match(tokens[0]):
            level = tokens.pop(0)
        members = []
        for token in tokens:
            member = _MD_MEMBER.match(token)
            if not member:
                raise ValueError(f"unreadable md member {token!r} in /proc/mdstat line {line!r}")
            flags = tuple(re.findall(r"\(([A-Za-z]+)\)", member.group(3)))
            members.append(MdMember(member.group(1), int(member.group(2)), flags))
        arrays.append(MdArray(name, state, level, tuple(members)))
    return arrays


def _unescape_octal(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_swaps(text: str) -> list[Swap]:
    """/proc/swaps -> active swap areas (the header line is skipped)."""
    swaps = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 2:
            continue
        swaps.append(Swap(_unescape_octal(fields[0]), fields[1]))
    return swaps
