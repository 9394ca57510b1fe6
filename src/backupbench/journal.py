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

A journal is trusted only as far as it must be: the folder is the user's own (0700), a
journal is read only if it is a regular file of the user's that nobody else may write, its
first line names the run it belongs to (the same as its file name), and everything in it is
checked again before anything is removed (runner/cleanup.py). A new journal is made under a
temporary name, locked, given its first line and only then renamed into place, so cleanup
can never take a journal a run is still opening.

Entries are plain data here; what removes each kind lives with whoever creates it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from backupbench.errors import RefusedError
from backupbench.paths import check_length

OPEN_SUFFIX = ".open.jsonl"
CLOSED_SUFFIX = ".closed.jsonl"
# Where journals go instead of <results>/journal (the lab VM keeps the guest's own journals
# inside the guest: they name the guest's disks, which mean something else on the host).
JOURNAL_DIR_ENV = "BACKUPBENCH_JOURNAL_DIR"
# A run id (results/model.new_run_id) or a lab's ("lab-" + run id).
RUN_ID = re.compile(r"^(?:lab-)?\d{8}T\d{6}-[0-9a-f]{4,16}$")


class JournalBusy(Exception):
    """Another process (a running run) holds the journal."""


class JournalGone(Exception):
    """The journal was closed (renamed .closed) or removed after it was listed: its run ended
    and took away what it had made; nothing is left to do."""


class JournalRefused(RefusedError):
    """Not a journal backupbench may act on (not the user's, writable by others, malformed)."""


def journal_dir(results: Path) -> Path:
    """InputError for a folder too long to be opened (check_length), named as given."""
    explicit = os.environ.get(JOURNAL_DIR_ENV)
    directory = Path(explicit or results / "journal")
    source = JOURNAL_DIR_ENV if explicit else "the results folder"
    check_length(directory, f"the journal folder ({source})", f"give {source} a shorter path")
    return directory


def _private_folder(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.stat(directory)
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise JournalRefused(f"the journal folder {directory} is not the user's own or others may write to it",
                             f"chmod go-w {directory} (or pass --results DIR naming a folder of your own)")


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
        if not RUN_ID.match(name):
            raise JournalRefused(f"{name!r} is not a run id")
        _private_folder(directory)
        self.path = directory / f"{name}{OPEN_SUFFIX}"
        if self.path.exists():
            raise JournalRefused(f"a journal for run {name} exists already")
        creating = directory / f".{name}.creating"
        fd = os.open(creating, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        self._handle = os.fdopen(fd, "a")
        fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else can have it yet
        self._next_id = 0
        self._write({"event": "run", "run_id": name, **(header or {})})
        os.rename(creating, self.path)  # the lock is on the file, and goes with it

    @classmethod
    def at(cls, path: Path) -> "Journal":
        """An existing open journal (for `cleanup`): JournalBusy if a running run holds it,
        JournalRefused if it is not one backupbench may act on."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise JournalGone(f"{path.name} was closed after it was listed") from None
        except OSError as exc:
            raise JournalRefused(f"{path.name} cannot be opened: {exc.strerror}") from None
        handle = os.fdopen(fd, "a")
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
                raise JournalRefused(f"{path.name} is not a file of the user's that only the user may write")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JournalBusy(f"{path.name} is in use by a running backupbench") from None
            if not path.exists():
                # Its run closed it (renamed it .closed, then let go of the lock) while it was opened.
                raise JournalGone(f"{path.name} was closed while it was opened")
            if os.stat(path).st_ino != info.st_ino:
                raise JournalBusy(f"{path.name} changed while it was opened")
            label = path.name.removesuffix(OPEN_SUFFIX)
            if read(path).run_id != label or not RUN_ID.match(label):
                raise JournalRefused(f"{path.name} does not name its own run in its first line")
        except BaseException:
            handle.close()
            raise
        journal = cls.__new__(cls)
        journal.path, journal._handle = path, handle
        journal._next_id = 1 + max((e["id"] for e in _entries(path) if isinstance(e.get("id"), int)), default=-1)
        return journal

    @property
    def label(self) -> str:
        """The run the journal belongs to (its file name, checked against its first line)."""
        return self.path.name.removesuffix(OPEN_SUFFIX)

    def _write(self, entry: dict[str, Any]) -> None:
        # Through the locked descriptor, never by path: whatever is renamed, this is our file.
        self._handle.write(json.dumps(entry) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

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
        if not self._handle.closed:
            self._handle.close()


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
    """What a journal still holds: the run it belongs to, and what is pending, newest first.
    Entries that do not have the shape backupbench writes are passed over."""
    entries = _entries(path)
    first = entries[0] if entries and entries[0].get("event") == "run" else {}
    order: list[Pending] = []
    done_ids: set[int] = set()
    for entry in entries[1:] if first else entries:
        event, action = entry.get("event"), entry.get("action")
        if event == "create" and isinstance(entry.get("id"), int) and isinstance(entry.get("artefact"), dict):
            order.append(Pending(artefact=entry["artefact"], artefact_id=entry["id"]))
        elif event == "removed" and isinstance(entry.get("id"), int):
            done_ids.add(entry["id"])
        elif event == "done" and isinstance(action, dict) and action.get("undo"):
            order.append(Pending(action=action, layout=str(entry.get("layout", ""))))
        elif event in ("undone", "skipped") and isinstance(action, dict):
            finished = Pending(action=action, layout=str(entry.get("layout", "")))
            if finished in order:
                order.remove(finished)
    pending = [p for p in order if p.action is not None or p.artefact_id not in done_ids]
    return Contents(first.get("run_id"), first.get("store"), list(reversed(pending)))


def open_journals(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(directory.glob(f"*{OPEN_SUFFIX}"))
