"""A run that measured to its end but could not remove something it made: stored as it ended
(complete), the leftover named in its notes and in the error the command ends with, which
carries the run so its figures are still shown; the journal stays open for `cleanup`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from backupbench import artefacts
from backupbench.errors import LeftBehind
from backupbench.journal import CLOSED_SUFFIX, OPEN_SUFFIX
from backupbench.results.store import Store
from pipeline_support import OnePhaseWorkload, run_remote


@dataclass
class MakesAFolder(OnePhaseWorkload):
    """A workload whose one phase leaves a journalled folder with a stranger's file in it (so the
    folder's remover refuses to take it)."""

    parent: Path
    stranger: bool = True
    kind = "leftover-test"

    def target_label(self, target):
        return str(self.parent)

    def execute(self, target, folder, run_id, hooks):
        made = self.parent / f"bb-scratch-{run_id}"
        hooks.will_create(artefacts.folder(made, run_id, "scratch folder"))
        made.mkdir()
        if self.stranger:
            (made / "someone-elses.txt").write_text("not the run's")
        hooks.started("work", "work", "pattern")
        hooks.finished("work", {"effective_bw": 1.0}, {})


def test_a_leftover_leaves_the_run_complete_and_says_what_is_left(tmp_path):
    with pytest.raises(LeftBehind) as caught:
        run_remote(tmp_path, MakesAFolder(tmp_path))
    run = caught.value.run
    assert run.status == "complete" and run.error is None
    assert [op.name for op in run.operations] == ["work"] and run.operations[0].figures["effective_bw"] == 1.0
    assert any(note.startswith("left behind: scratch folder") and "not empty" in note for note in run.notes)
    line = caught.value.one_line()
    assert f"run {run.run_id} is stored complete; left behind: scratch folder" in line and "backupbench cleanup" in line
    stored = Store(tmp_path / "results" / "results.db").load_run(run.run_id)
    assert stored.status == "complete" and stored.notes == run.notes
    # The journal stays open: `backupbench cleanup` is to try again.
    assert list((tmp_path / "results" / "journal").glob(f"*{OPEN_SUFFIX}"))


def test_a_run_that_removes_everything_ends_as_before(tmp_path):
    run = run_remote(tmp_path, MakesAFolder(tmp_path, stranger=False))
    assert run.status == "complete" and not any(note.startswith("left behind") for note in run.notes)
    assert list((tmp_path / "results" / "journal").glob(f"*{CLOSED_SUFFIX}"))
