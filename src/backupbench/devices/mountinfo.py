"""Which mount holds a path, from /proc/self/mountinfo (pure parsing + a lookup)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mount:
    mount_point: str
    fs_type: str
    source: str
    major_minor: str
    options: tuple[str, ...]

    @property
    def read_only(self) -> bool:
        return "ro" in self.options


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    return field.encode().decode("unicode_escape") if "\\" in field else field


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        fs_type, source, *_ = right.split() + ["", ""]
        mounts.append(Mount(
            mount_point=_unescape(fields[4]), fs_type=fs_type, source=_unescape(source),
            major_minor=fields[2], options=tuple(fields[5].split(",")),
        ))
    return mounts


def mount_of(path: Path, mounts: list[Mount]) -> Mount | None:
    """The mount whose mount point is the longest prefix of `path` (the last one wins on ties,
    as the kernel shows the topmost mount last)."""
    target = str(path)
    best: Mount | None = None
    for mount in mounts:
        point = mount.mount_point.rstrip("/") or "/"
        inside = target == point or target.startswith(point + "/") or point == "/"
        if inside and (best is None or len(point) >= len(best.mount_point.rstrip("/") or "/")):
            best = mount
    return best
