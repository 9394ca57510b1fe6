"""The run journal: everything a run creates is written down before it is created.

One journal per run, `<journal dir>/<run id>.open.jsonl`, one JSON object a line, fsynced
line by line. It holds two kinds of entries:
- artefacts: test files, folders, S3 objects and buckets, processes, mount folders
  (`create` before the thing exists, `removed` once it is gone);
- layout actions: provisioning steps with their undo (`done` before the command runs,
  `undone` / `skipped` / `undo-failed` after its undo).
While the run's process lives it holds an exclusive lock on its journal. `backupbench
cleanup` takes only journals nobody holds, so a crash (SIGKILL, power loss) leaves a
journal that says exactly what to remove, and a running run is never touched. Once
everything in it is gone the journal is renamed to `.closed.jsonl`.

Entries are plain data here; what removes each kind lives with whoever creates it.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

OPEN_SUFFIX = ".open.jsonl"
CLOSED_SUFFIX = ".closed.jsonl"
# Where journals go instead of <results>/journal (the lab VM keeps the guest's own journals
# inside the guest: they name the guest's disks, which mean something else on the host).
JOURNAL_DIR_ENV = "BACKUPBENCH_JOURNAL_DIR"


class JournalBusy(Exception):
    """Another process (a running run) holds the journal."""


def journal_dir(results: Path) -> Path:
    return Path(os.environ.get(JOURNAL_DIR_ENV) or results / "journal")


@dataclass(frozen=True)
class Pending:
    """One thing still to remove: an artefact (`artefact` set) or a layout action (`action` set)."""

    artefact: dict[str, Any] | None = None
    artefact_id: int | None = None
    action: dict[str, Any] | None = None
    layout: str = ""


@dataclass
class Contents:
    """A journal read back: the run it belongs to and what is still pending, newest first."""

    run_id: str | None
    store: str | None
    pending: list[Pending] = field(default_factory=list)


class Journal:
    def __init__(self, directory: Path, name: str, header: dict[str, Any] | None = None):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{name}{OPEN_SUFFIX}"
        self._lock_handle = None
        self._next_id = 0
        self._lock()
        if header is not None and self.path.stat().st_size == 0:
            self._write({"event": "run", **header})

    @classmethod
    def at(cls, path: Path) -> "Journal":
        """An existing open journal (for `cleanup`); JournalBusy if a running run holds it."""
        journal = cls.__new__(cls)
        journal.path = path
        journal._lock_handle = None
        journal._lock()
        journal._next_id = 1 + max((e.get("id", -1) for e in _entries(path)), default=-1)
        return journal

    def _lock(self) -> None:
        handle = open(self.path, "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise JournalBusy(f"{self.path.name} is in use by a running backupbench") from None
        self._lock_handle = handle

    @property
    def label(self) -> str:
        return self.path.name.removesuffix(OPEN_SUFFIX)

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    # ---- artefacts ---------------------------------------------------------------------
    def will_create(self, artefact: dict[str, Any]) -> int:
        """Write down an artefact about to be created; returns its id for `removed`."""
        artefact_id = self._next_id
        self._next_id += 1
        self._write({"event": "create", "id": artefact_id, "artefact": artefact})
        return artefact_id

    def removed(self, artefact_id: int, how: str = "removed") -> None:
        self._write({"event": "removed", "id": artefact_id, "how": how})

    def remove_failed(self, artefact_id: int, reason: str) -> None:
        self._write({"event": "remove-failed", "id": artefact_id, "reason": reason})

    # ---- layout actions ----------------------------------------------------------------
    def record(self, event: str, action: Any, layout: str = "", **extra: object) -> None:
        """A layout action: 'done' before it runs, then 'undone', 'skipped' or 'undo-failed'."""
        data = action.as_dict() if hasattr(action, "as_dict") else action
        self._write({"event": event, "action": data, **({"layout": layout} if layout else {}), **extra})

    # ---- the end -----------------------------------------------------------------------
    def close(self) -> None:
        """Everything is gone: mark the journal closed and let go of it."""
        if self.path.exists():
            self.path.rename(self.path.with_name(self.path.name.replace(OPEN_SUFFIX, CLOSED_SUFFIX)))
        self.release()

    def release(self) -> None:
        """Let go of the journal but leave it open, for `backupbench cleanup`."""
        if self._lock_handle is not None:
            self._lock_handle.close()
            self._lock_handle = None


def _entries(path: Path) -> list[dict[str, Any]]:
    entries = []
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash: what it began is recorded before it
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def read(path: Path) -> Contents:
    """What a journal still holds: the run it belongs to, and what is pending, newest first."""
    run_id = store = None
    order: list[Pending] = []
    done_ids: set[int] = set()
    for entry in _entries(path):
        event = entry.get("event")
        if event == "run":
            run_id, store = entry.get("run_id"), entry.get("store")
        elif event == "create":
            order.append(Pending(artefact=entry.get("artefact") or {}, artefact_id=entry.get("id")))
        elif event == "removed":
            done_ids.add(entry.get("id"))
        elif event == "done" and entry["action"].get("undo"):
            order.append(Pending(action=entry["action"], layout=entry.get("layout", "")))
        elif event in ("undone", "skipped"):
            finished = Pending(action=entry["action"], layout=entry.get("layout", ""))
            if finished in order:
                order.remove(finished)
    pending = [p for p in order if p.action is not None or p.artefact_id not in done_ids]
    return Contents(run_id, store, list(reversed(pending)))


def open_journals(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(directory.glob(f"*{OPEN_SUFFIX}"))
