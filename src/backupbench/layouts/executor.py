"""Runs a layout's actions, journalled, and undoes them in reverse: only after the guard
has shown that the object is ours, and carrying on past a failed undo so that one stuck
step does not leave the rest behind."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from backupbench import process
from backupbench.errors import BackupbenchError
from backupbench.journal import Journal
from backupbench.layouts.actions import Action

log = logging.getLogger("backupbench.layouts")
# mkfs.ext4 without lazy init on a large disk, or a RAID create, can take long: a bound
# still, so that a hung tool does not hold the run for ever.
COMMAND_TIMEOUT_S = 4 * 3600.0

Runner = Callable[..., process.Result]


@dataclass
class TeardownReport:
    undone: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # guard said: not ours (any more)
    failed: list[str] = field(default_factory=list)

    def add(self, other: "TeardownReport") -> None:
        self.undone += other.undone
        self.skipped += other.skipped
        self.failed += other.failed


def undo_actions(actions: list[Action], journal: Journal | None, run: Runner = process.run,
                 on_action: Callable[[str], None] | None = None, layout: str = "",
                 failed_before: bool = False) -> TeardownReport:
    """Undo `actions` in the order given (callers pass most recent first).

    Once one undo has failed (an umount or mdadm --stop), the destructive undos after it
    (wipefs, zero-superblock, labelclear, pvremove) are not attempted: they stay in the
    journal for `cleanup`, after the user has seen what held the device. `failed_before`:
    an undo before these ones failed already."""
    report = TeardownReport()
    for action in actions:
        if not action.undo:
            continue
        if (report.failed or failed_before) and action.destructive:
            report.failed.append(f"{action.description}: not attempted after an earlier step failed")
            continue
        if on_action:
            on_action(f"undo: {action.description}")
        if action.guard is not None:
            try:
                result = run(list(action.guard.argv), timeout=120, check=False)
                allowed = action.guard.allows(result.returncode, result.stdout)
            except BackupbenchError as exc:  # missing, hung or broken: cannot tell, so try again later
                report.failed.append(f"{action.description}: could not check it is ours: {exc.message}")
                continue
            if not allowed:
                report.skipped.append(action.description)
                if journal:
                    journal.record("skipped", action, layout, reason="guard: not ours")
                continue
        errors = []
        for argv in action.undo:
            try:
                run(list(argv), timeout=COMMAND_TIMEOUT_S)
            except BackupbenchError as exc:
                # Stop here: the next command (a --zero-superblock after a failed --stop) would
                # act on something still in use; the whole undo is retried by `cleanup`.
                errors.append(exc.message)
                break
        if errors:
            report.failed.append(f"{action.description}: {'; '.join(errors)}")
        else:
            report.undone.append(action.description)
        if journal:
            journal.record("undone" if not errors else "undo-failed", action, layout)
    return report


class Provisioner:
    """One layout's actions, journalled in the run's journal under the layout's name."""

    def __init__(self, journal: Journal, layout: str, run: Runner = process.run,
                 on_action: Callable[[Action], None] | None = None):
        self.journal = journal
        self.layout = layout
        self.run = run
        self.on_action = on_action
        self.done: list[Action] = []

    def apply(self, actions: tuple[Action, ...], before_destructive: Callable[[], None]) -> None:
        rechecked = False
        for action in actions:
            if action.destructive and not rechecked:
                before_destructive()
                rechecked = True
            if self.on_action:
                self.on_action(action)
            # Journal before running: a crash mid-command still leaves the undo on record.
            self.journal.record("done", action, self.layout)
            self.done.append(action)
            for argv in action.do:
                self.run(list(argv), timeout=COMMAND_TIMEOUT_S)

    def teardown(self) -> TeardownReport:
        """Undo this layout's actions; what fails stays pending in the run's journal."""
        announce = (lambda text: self.on_action(Action(text, ()))) if self.on_action else None
        report = undo_actions(list(reversed(self.done)), self.journal, self.run, announce, self.layout)
        self.done = []
        return report
