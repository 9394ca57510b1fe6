"""Removing what a run created, from its journal: at the end of every run (whatever ended
it), and in `backupbench cleanup` for runs whose process died (SIGKILL, power loss).

One procedure for both, so what a crash leaves is removed exactly as a finished run removes
it: newest first, each artefact and layout action only after its check that it is ours.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from backupbench import process
from backupbench.artefacts import ArtefactName
from backupbench.devices.facts import PROBE_FILE
from backupbench.engines.smallfiles import FOLDER as SMALL_FILES_FOLDER
from backupbench.errors import BackupbenchError
from backupbench.journal import Journal, JournalBusy, JournalGone, JournalRefused, open_journals, read
from backupbench.lab.vm import WORK_FOLDER as LAB_WORK_FOLDER
from backupbench.layouts.actions import GUARD_PROGRAMS, UNDO_PROGRAMS, Action
from backupbench.layouts.executor import Runner, undo_actions
from backupbench.layouts.naming import MOUNT_FOLDER
from backupbench.results.location import STORE_NAME, remove_opening_folder, run_folder
from backupbench.results.store import Store
from backupbench.runner.fill import FILL_FILE
from backupbench.workloads.aging import FOLDER as AGING_FOLDER
from backupbench.workloads.blockclone import FOLDER as CLONE_FOLDER
from backupbench.workloads.fio_workload import TEST_FILE
from backupbench.workloads.registry import artefact_removers
from backupbench import artefacts

log = logging.getLogger("backupbench.cleanup")

# The folder `run` makes when given no PATH (runner/pipeline._scratch_directory).
SCRATCH_FOLDER = ArtefactName("bb-scratch-{}", "scratch folder")
# Every name backupbench gives a file or folder it creates outside a run folder, from the
# module that makes it: the sweep removes nothing by another name (a unit test finds every
# ArtefactName declared under src/ here).
OWN_NAMES: tuple[ArtefactName, ...] = (TEST_FILE, PROBE_FILE, SMALL_FILES_FOLDER, SCRATCH_FOLDER, MOUNT_FOLDER,
                                       LAB_WORK_FOLDER, FILL_FILE, CLONE_FOLDER, AGING_FOLDER)


@dataclass
class SweepReport:
    removed: list[str] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)  # not ours (any more)
    failed: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.failed


def sweep(journal: Journal, *, run: Runner = process.run, table: dict[str, artefacts.Remover] | None = None,
          on_line: Callable[[str], None] | None = None) -> SweepReport:
    """Remove everything still pending in `journal`, newest first; record each outcome in it."""
    table = table if table is not None else artefacts.removers(artefact_removers(), names=OWN_NAMES)
    report = SweepReport()
    for item in read(journal.path).pending:
        if item.action is not None:
            action, problem = _undoable(item.action)
            if action is None:
                report.failed.append(f"{item.layout}: {problem}")
                continue
            teardown = undo_actions([action], journal, run, layout=item.layout, failed_before=bool(report.failed))
            where = f"{item.layout}: " if item.layout else ""
            report.removed += [f"{where}undone: {line}" for line in teardown.undone]
            report.left_alone += [f"{where}left alone (not ours any more): {line}" for line in teardown.skipped]
            report.failed += [f"{where}{line}" for line in teardown.failed]
            continue
        artefact = item.artefact or {}
        outcome = artefacts.remove(artefact, journal.label, table)
        line = f"{artefacts.describe(artefact)}: {outcome.text}"
        if outcome.result == artefacts.FAILED:
            journal.remove_failed(item.artefact_id, outcome.text)
            report.failed.append(line)
        else:
            journal.removed(item.artefact_id, outcome.result)
            (report.left_alone if outcome.result == artefacts.NOT_OURS else report.removed).append(line)
    for line in (*report.removed, *report.left_alone, *report.failed):
        log.debug("sweep %s: %s", journal.label, line)
        if on_line:
            on_line(line)
    return report


def _md_speed_limit(argv) -> bool:
    """The one sysctl a fault changes and restores (runner/faulted.py)."""
    return len(argv) == 3 and argv[1] == "-w" and re.fullmatch(r"dev\.raid\.speed_limit_(min|max)=[0-9]{1,10}",
                                                                    argv[2]) is not None


def _undoable(data: dict) -> tuple[Action | None, str]:
    """The action a journal entry describes, if backupbench may run its undo: only the
    programs layouts undo with and check with (layouts/actions.py), whatever the file says."""
    try:
        action = Action.from_dict(data)
    except (KeyError, TypeError, ValueError):
        return None, "an entry of the journal is not one backupbench writes: left for a person to look at"
    programs = {argv[0] for argv in action.undo if argv}
    odd = [argv for argv in action.undo if argv and argv[0] == "sysctl" and not _md_speed_limit(argv)]
    if odd:
        return None, (f"{action.description}: refused: the journal asks to set {' '.join(odd[0][1:])}; "
                      "backupbench only restores md's speed limits")
    guard = action.guard.argv[0] if action.guard and action.guard.argv else None
    if not programs <= UNDO_PROGRAMS or (guard is not None and guard not in GUARD_PROGRAMS):
        return None, (f"{action.description}: refused: the journal asks to run "
                      f"{', '.join(sorted(programs - UNDO_PROGRAMS) or [str(guard)])}, which no layout undoes with")
    return action, ""


def finish(journal: Journal, report: SweepReport) -> None:
    """Close the journal when everything in it is gone; otherwise leave it for `cleanup`."""
    if report.clean:
        journal.close()
    else:
        journal.release()


@dataclass
class JournalCleanup:
    label: str
    run_id: str | None
    busy: str | None = None     # a running backupbench holds it
    refused: str | None = None  # not a journal backupbench may act on, or it broke while read
    report: SweepReport = field(default_factory=SweepReport)
    marked_interrupted: bool = False


def _mark_interrupted(store_path: str | None, run_id: str) -> bool:
    # Only a results store, the one file a run's journal names as its own.
    if not store_path or Path(store_path).name != STORE_NAME or not Path(store_path).is_file():
        return False
    return Store(Path(store_path)).mark_interrupted(
        run_id, "its process ended before the run finished; `backupbench cleanup` removed what it had created")


def _drop_unstored_folder(store_path: str | None, run_id: str) -> bool:
    """The run folder of a run killed after making it and before the store held it: removed when
    it holds only what a run writes there first (results/location.OPENING_FILES)."""
    if not store_path or Path(store_path).name != STORE_NAME or not Path(store_path).is_file():
        return False
    folder = run_folder(Path(store_path).parent, run_id)
    if not folder.is_dir() or Store(Path(store_path)).has_run(run_id):
        return False
    return remove_opening_folder(folder)


def clean_journals(directory: Path, *, run: Runner = process.run,
                   table: dict[str, artefacts.Remover] | None = None,
                   journals: Iterable[Path] | None = None) -> list[JournalCleanup]:
    """Every open journal nobody holds: sweep it, and store its run as interrupted. One
    journal that cannot be read or swept does not stop the others; one whose run closed it
    after it was listed (`journals`: the listing, by default the folder's) is not reported."""
    done = []
    for path in journals if journals is not None else open_journals(directory):
        try:
            journal = Journal.at(path)
        except JournalGone:
            continue  # its run ended normally between the listing and now: nothing of it is left
        except JournalBusy as busy:
            done.append(JournalCleanup(path.name, None, busy=str(busy)))
            continue
        except JournalRefused as refused:
            done.append(JournalCleanup(path.name, None, refused=str(refused)))
            continue
        item = JournalCleanup(journal.label, journal.label)
        try:
            item.report = sweep(journal, run=run, table=table)
            store = read(path).store
            item.marked_interrupted = _mark_interrupted(store, journal.label)
            if not item.marked_interrupted:
                _drop_unstored_folder(store, journal.label)
        except (BackupbenchError, OSError, ValueError) as exc:
            item.refused = f"cleanup stopped on it: {exc}"
            journal.release()
        else:
            finish(journal, item.report)
        done.append(item)
    return done
