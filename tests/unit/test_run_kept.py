"""An interrupted run ends as one typed error, RunKept, naming the run stored as interrupted;
a RunKept from within (a run inside the session) goes on as it is, not wrapped a second time.
The pipeline tells the two apart by the type, not by the message's words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from backupbench.errors import Interrupted, RunKept
from backupbench.results.store import Store
from pipeline_support import OnePhaseWorkload, run_remote


@dataclass
class Stops(OnePhaseWorkload):
    """A workload whose one phase ends with `error`."""

    error: BaseException
    kind = "stops-test"

    def execute(self, target, folder, run_id, hooks):
        hooks.started("work", "work", "pattern")
        raise self.error


def _run(tmp_path: Path, error: BaseException) -> RunKept:
    with pytest.raises(RunKept) as caught:
        run_remote(tmp_path, Stops(error))
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
