"""A process's state read from /proc without racing its end: between listing a process (or
checking its folder exists) and reading its files, it may exit and be reaped, and the read
then raises. Tests that watch children end use this rather than reading /proc themselves."""

from __future__ import annotations

from pathlib import Path

GONE = ""


def process_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat ('R', 'S', 'Z', ...), or GONE once it is reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # FileNotFoundError once reaped; ProcessLookupError while it is torn down
        return GONE
    return stat.rsplit(")", 1)[1].split()[0]


def running(pid: int) -> bool:
    """Whether the process still exists and is not a zombie."""
    return process_state(pid) not in (GONE, "Z")
