"""An interrupted run ends as one typed error, RunKept, naming the run stored as interrupted;
a RunKept from within (a run inside the session) goes on as it is, not wrapped a second time.
The pipeline tells the two apart by the type, not by the message's words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from backupbench.cli.progress import QuietReporter
from backupbench.errors import Interrupted, RunKept
from backupbench.results.store import Store
from backupbench.runner.pipeline import RunRequest, execute_remote


@dataclass
class Stops:
    """A workload on no directory of its own whose one phase ends with `error`."""

    error: BaseException
    kind: str = "stops-test"
    needs_directory: bool = False
    buffered: bool = False
    test_file_cautions: bool = False
    space_fix: str = ""

    def __post_init__(self):
        self.notes: list[str] = []

    def target_label(self, target):
        return "nowhere"

    def engine_versions(self):
        return {}

    def phases(self):
        return ("work",)

    def settings(self):
        return {}

    def space_needed(self):
        return 0

    def check(self, target):
        return None

    def execute(self, target, folder, run_id, hooks):
        hooks.started("work", "work", "pattern")
        raise self.error

    def cleanup(self, target, run_id, hooks):
        return None


def _run(tmp_path: Path, error: BaseException) -> RunKept:
    workload = Stops(error)
    with pytest.raises(RunKept) as caught:
        execute_remote(RunRequest(workload=workload, results=tmp_path / "results"), workload, QuietReporter())
    return caught.value


@pytest.mark.parametrize("error", [KeyboardInterrupt(), Interrupted("interrupted during phase work")])
def test_an_interrupted_run_is_kept_and_named(tmp_path, error):
    kept = _run(tmp_path, error)
    assert isinstance(kept, Interrupted) and kept.exit_code == 130
    assert kept.message == f"interrupted: stopped and cleaned up; the partial run is kept as {kept.run_id} (interrupted)"
    assert Store(tmp_path / "results" / "results.db").load_run(kept.run_id).status == "interrupted"


def test_a_run_kept_inside_the_session_goes_on_as_it_is(tmp_path):
    inner = RunKept("interrupted: the inner run is kept as 20261123T000000-00000000 (interrupted)",
                    "20261123T000000-00000000")
    kept = _run(tmp_path, inner)
    assert kept is inner and kept.run_id == "20261123T000000-00000000"
