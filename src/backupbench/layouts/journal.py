"""The provisioning journal: every action is written down (with its undo) before it runs,
so `backupbench cleanup` can finish a teardown after a crash.

While `apply` runs it holds an exclusive lock on its journal: `cleanup` skips a locked
journal, so it never tears down the layouts of a run that is still going.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Iterator

from backupbench.layouts.actions import Action

OPEN_SUFFIX = ".open.jsonl"
CLOSED_SUFFIX = ".closed.jsonl"
# Where journals go instead of <results>/journal (the lab VM keeps the guest's own journals
# inside the guest: they name the guest's disks, which mean something else on the host).
JOURNAL_DIR_ENV = "BACKUPBENCH_JOURNAL_DIR"


class JournalBusy(Exception):
    """Another process (a running apply) holds the journal."""


def journal_dir(results: Path) -> Path:
    return Path(os.environ.get(JOURNAL_DIR_ENV) or results / "journal")


class Journal:
    def __init__(self, directory: Path, run_id: str, layout: str):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{run_id}-{layout}{OPEN_SUFFIX}"
        self._lock_handle = None
        self._lock()

    @classmethod
    def at(cls, path: Path) -> "Journal":
        """An existing open journal (for `cleanup`); JournalBusy if a running apply holds it."""
        journal = cls.__new__(cls)
        journal.path = path
        journal._lock_handle = None
        journal._lock()
        return journal

    def _lock(self) -> None:
        handle = open(self.path, "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise JournalBusy(f"{self.path.name} is in use by a running apply") from None
        self._lock_handle = handle

    @property
    def label(self) -> str:
        return self.path.name.removesuffix(OPEN_SUFFIX)

    def record(self, event: str, action: Action, **extra: object) -> None:
        line = json.dumps({"event": event, "action": action.as_dict(), **extra})
        with open(self.path, "a") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        """The teardown finished: mark the journal closed and let go of it."""
        if self.path.exists():
            self.path.rename(self.path.with_name(self.path.name.replace(OPEN_SUFFIX, CLOSED_SUFFIX)))
        self.release()

    def release(self) -> None:
        if self._lock_handle is not None:
            self._lock_handle.close()
            self._lock_handle = None


def pending(path: Path) -> list[Action]:
    """Actions done and not yet undone, most recent first: the order to undo them in."""
    done: list[Action] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash: the action it began is recorded before it
        action = Action.from_dict(entry["action"])
        if entry["event"] == "done":
            done.append(action)
        elif entry["event"] in ("undone", "skipped") and action in done:
            done.remove(action)
    return list(reversed(done))


def open_journals(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(directory.glob(f"*{OPEN_SUFFIX}"))
