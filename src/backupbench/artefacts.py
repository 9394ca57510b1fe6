"""What a run creates outside its results folder, as journal entries, and how each is removed.

The kinds every run may create live here; a workload adds its own (S3: workloads/s3.py).

Every artefact names the run it belongs to, and removal checks that first, against the run
id of the journal it came from: a file, folder or tree is removed only if its own name is
one of the names backupbench gives, with that run id (an ArtefactName each creator declares
and makes its name with; the sweep, runner/cleanup.py, gathers them and hands them to
`removers`), never through a symlink; a folder only when empty; a process only if it is
still the very process that was started (same boot, pid and start time) and carries the run
id in its environment; S3 objects only under the run's own prefix, and a bucket only if the
run created it and it is empty again (S3 itself refuses to delete a bucket that holds anything).

Each remover answers with an Outcome: removed, gone (nothing there any more), not ours
(left alone), or failed (with the reason; the entry stays in the journal for
`backupbench cleanup`).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from backupbench import process
from backupbench.errors import BackupbenchError

Artefact = dict[str, Any]

REMOVED, GONE, NOT_OURS, FAILED = "removed", "gone", "not ours", "failed"
PROCESS_EXIT_WAIT_S = 5.0
# What everything backupbench creates carries (file names, LVM tags, S3 key prefixes), so that
# it deletes only what carries it.
TAG = "backupbench"


@dataclass(frozen=True)
class ArtefactName:
    """The name backupbench gives one kind of thing it creates outside a run folder, `{}`
    standing for the run id. Its creator declares it and makes the name with `of`; the removers
    take a file, tree or folder for ours only by one of these names."""

    form: str
    what: str  # as the journal and the sweep's lines say it

    def of(self, run_id: str) -> str:
        return self.form.format(run_id)

    @property
    def prefix(self) -> str:
        """What comes before the run id."""
        return self.form.partition("{}")[0]


@dataclass(frozen=True)
class Outcome:
    result: str
    text: str

    @property
    def done(self) -> bool:
        return self.result != FAILED


# ---- constructors ---------------------------------------------------------------------------

def file(path: Path, run_id: str, what: str) -> Artefact:
    return {"kind": "file", "path": str(path), "tag": run_id, "what": what}


def tree(path: Path, run_id: str, what: str) -> Artefact:
    return {"kind": "tree", "path": str(path), "tag": run_id, "what": what}


def folder(path: Path, run_id: str, what: str) -> Artefact:
    """A folder removed only once empty (a scratch folder, the run's folder of mount points)."""
    return {"kind": "folder", "path": str(path), "tag": run_id, "what": what}


def child_process(child: process.Background, run_id: str) -> Artefact:
    return {"kind": "process", "identity": child.identity or "", "name": child.name, "tag": run_id}


def describe(artefact: Artefact) -> str:
    kind = artefact.get("kind")
    if kind in ("file", "tree", "folder"):
        return f"{artefact.get('what', kind)} {artefact.get('path')}"
    if kind == "process":
        ident = str(artefact.get("identity", "")).split()
        return f"process {artefact.get('name')} (pid {ident[1] if len(ident) > 1 else '?'})"
    if kind == "s3-objects":
        return f"S3 objects under {artefact.get('prefix')} in bucket {artefact.get('bucket')} at {artefact.get('endpoint')}"
    if kind == "s3-bucket":
        return f"S3 bucket {artefact.get('bucket')} at {artefact.get('endpoint')}"
    what = artefact.get("what")  # e.g. "test file on 10.0.0.5" (fio_client.remote_file)
    return str(what) if what else f"{kind} artefact"


# ---- removers -------------------------------------------------------------------------------

def _present(artefact: Artefact, run_id: str, is_kind: Callable[[int], bool], kind: str,
             names: frozenset[ArtefactName]) -> tuple[Path | None, Outcome | None]:
    """The artefact's path if it is still there, ours, and of its kind; else the outcome to report."""
    path = Path(str(artefact.get("path", "")))
    ours = artefact.get("tag") == run_id and path.name in {name.of(run_id) for name in names}
    if not run_id or not ours or not path.is_absolute():
        return None, Outcome(NOT_OURS, f"it is not named as backupbench names what run {run_id} creates")
    try:
        info = os.lstat(path)  # lstat: a symlink is never followed, and never ours
    except FileNotFoundError:
        return None, Outcome(GONE, "already gone")
    if not is_kind(info.st_mode):
        return None, Outcome(NOT_OURS, f"it is not a {kind} any more")
    return path, None


def _remove_file(artefact: Artefact, run_id: str, names: frozenset[ArtefactName]) -> Outcome:
    path, outcome = _present(artefact, run_id, stat.S_ISREG, "regular file", names)
    if path is None:
        return outcome
    path.unlink(missing_ok=True)
    return Outcome(REMOVED, "removed")


def _remove_tree(artefact: Artefact, run_id: str, names: frozenset[ArtefactName]) -> Outcome:
    path, outcome = _present(artefact, run_id, stat.S_ISDIR, "folder", names)
    if path is None:
        return outcome
    # rmtree never follows a symlink inside the tree: it removes the link, not its target.
    shutil.rmtree(path)
    return Outcome(REMOVED, "removed")


def _remove_folder(artefact: Artefact, run_id: str, names: frozenset[ArtefactName]) -> Outcome:
    path, outcome = _present(artefact, run_id, stat.S_ISDIR, "folder", names)
    if path is None:
        return outcome
    try:
        path.rmdir()
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return Outcome(FAILED, "not empty: something else was put in it, so it is left")
        raise
    return Outcome(REMOVED, "removed")


def _stop_process(artefact: Artefact, run_id: str) -> Outcome:
    ident = str(artefact.get("identity", ""))
    if not ident or not process.is_alive(ident):
        return Outcome(GONE, "not running")
    pid = int(ident.split()[1])
    if process.run_tag(pid) != run_id:
        return Outcome(NOT_OURS, f"it does not carry run {run_id} in its environment")
    try:
        # Started in its own session, so its process group is its pid: any helper it forked goes too.
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return Outcome(GONE, "not running")
    except PermissionError:
        return Outcome(FAILED, "not allowed to stop it (run cleanup as the user who ran backupbench)")
    deadline = time.monotonic() + PROCESS_EXIT_WAIT_S
    while process.is_alive(ident):
        if time.monotonic() > deadline:
            return Outcome(FAILED, f"still running {PROCESS_EXIT_WAIT_S:g} s after SIGKILL")
        time.sleep(0.05)
    return Outcome(REMOVED, "stopped")


Remover = Callable[[Artefact, str], Outcome]  # (artefact, the run id of its journal)


def removers(extra: Mapping[str, Remover] | None = None, *, names: Iterable[ArtefactName] = ()) -> dict[str, Remover]:
    """Kind -> remover: the kinds every run may create, and `extra` ones a workload defines
    (S3 objects and buckets: workloads/s3.py). A file, tree or folder is ours only by one of
    `names` (none given: nothing is, and nothing is removed)."""
    own = frozenset(names)
    return {"file": partial(_remove_file, names=own), "tree": partial(_remove_tree, names=own),
            "folder": partial(_remove_folder, names=own), "process": _stop_process, **(extra or {})}


def remove(artefact: Artefact, run_id: str, table: dict[str, Remover]) -> Outcome:
    remover = table.get(str(artefact.get("kind")))
    if remover is None:
        return Outcome(FAILED, f"backupbench does not know how to remove a {artefact.get('kind')!r}; "
                               "it was written by another version")
    try:
        return remover(artefact, run_id)
    except BackupbenchError as exc:
        return Outcome(FAILED, exc.one_line())
    except OSError as exc:
        return Outcome(FAILED, exc.strerror or str(exc))
