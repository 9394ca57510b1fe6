"""A newc ("070701") cpio writer, enough for a Linux initramfs.

Pure and deterministic: entries are given in order, every timestamp is 0, so the same input
always makes the same archive (the image cache key relies on that). The kernel does not
create parent directories while it unpacks, so `with_parents` adds them.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from typing import Iterable

TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    """One archive member. `path` has no leading slash ("bin/sh")."""

    path: str
    mode: int  # full st_mode: type bits and permissions
    data: bytes = b""

    @staticmethod
    def directory(path: str, perm: int = 0o755) -> "Entry":
        return Entry(_clean(path), stat.S_IFDIR | perm)

    @staticmethod
    def file(path: str, data: bytes, perm: int = 0o644) -> "Entry":
        return Entry(_clean(path), stat.S_IFREG | perm, data)

    @staticmethod
    def symlink(path: str, target: str) -> "Entry":
        return Entry(_clean(path), stat.S_IFLNK | 0o777, target.encode())


def _clean(path: str) -> str:
    cleaned = path.strip("/")
    if not cleaned or ".." in cleaned.split("/"):
        raise ValueError(f"bad archive path: {path!r}")
    return cleaned


def _pad4(length: int) -> bytes:
    return b"\0" * (-length % 4)


def _header(ino: int, mode: int, nlink: int, size: int, namesize: int) -> bytes:
    fields = (ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, namesize, 0)
    return b"070701" + b"".join(f"{value:08x}".encode() for value in fields)


def with_parents(entries: Iterable[Entry]) -> list[Entry]:
    """The entries, each preceded by any parent directory not yet in the list."""
    seen: set[str] = set()
    out: list[Entry] = []
    for entry in entries:
        parts = entry.path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in seen:
                seen.add(parent)
                out.append(Entry.directory(parent))
        if entry.path in seen and stat.S_ISDIR(entry.mode):
            continue
        seen.add(entry.path)
        out.append(entry)
    return out


def archive(entries: Iterable[Entry]) -> bytes:
    """The newc archive of `entries`, in the given order, with the trailer."""
    chunks: list[bytes] = []
    ino = 0
    for ino, entry in enumerate(entries, start=1):
        name = entry.path.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(entry.mode) else 1
        header = _header(ino, entry.mode, nlink, len(entry.data), len(name))
        chunks += [header, name, _pad4(len(header) + len(name)), entry.data, _pad4(len(entry.data))]
    name = TRAILER.encode() + b"\0"
    header = _header(ino + 1, 0, 1, 0, len(name))
    chunks += [header, name, _pad4(len(header) + len(name))]
    return b"".join(chunks)
