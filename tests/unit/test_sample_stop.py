"""A workload's samples end early when the caller says its state is over: a rebuild that
ended makes the rest of a rebuilding state's samples measures of the rebuilt array
(runner/faulted.FaultRun.sample_stop_reason). What was measured is kept and the cut is said."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from backupbench.cli.progress import QuietReporter
from backupbench.monitor.options import MonitorOptions
from backupbench.runner.pipeline import RunSession, journalled, open_journal
from backupbench.runner.placement import NewRun, Placement, Sampling, Where
from pipeline_support import OnePhaseWorkload

MiB = 2**20


@dataclass
class Measures(OnePhaseWorkload):
    """One phase, "work", of a given speed per sample."""

    speeds: tuple[float, ...]
    ran: list[int] = field(default_factory=list)
    kind = "measures-test"

    def execute(self, target, folder, run_id, hooks):
        sample = len(self.ran)
        self.ran.append(sample)
        hooks.started("work", "work", "pattern")
        hooks.finished("work", {"effective_bw": self.speeds[sample] * MiB})


def _measure(tmp_path, stop_after: int | None, repeat: int = 5):
    workload = Measures(speeds=(30.0, 40.0, 50.0, 200.0, 210.0))
    asked = []

    def stop_reason():
        asked.append(len(workload.ran))
        return "the rebuild ended" if stop_after is not None and len(workload.ran) >= stop_after else None

    results = tmp_path / "results"
    with journalled(open_journal(results, "20261126T000000-aaaaaaaa")) as journal:
        session = RunSession(NewRun("20261126T000000-aaaaaaaa", "measures-test", "nowhere", {}, {}), results=results,
                             reporter=QuietReporter(), monitor=MonitorOptions(no_monitor=True), journal=journal)
        with session:
            session.measure(workload, Where(checked=True), Placement("raid6/rebuilding"),
                            Sampling(repeat, stop_reason=stop_reason))
    return session.run, asked


def test_samples_stop_where_the_state_ended_and_a_note_says_how_many(tmp_path):
    run, asked = _measure(tmp_path, stop_after=3)
    [op] = run.operations
    assert [s["effective_bw"] / MiB for s in op.samples] == [30.0, 40.0, 50.0]
    assert op.figures["effective_bw"] == 40 * MiB  # the median of the three measured in the state
    assert asked == [1, 2, 3]  # asked before samples 2, 3 and 4, never before the first
    assert "raid6/rebuilding: 3 of 5 samples; the rebuild ended" in run.notes


def test_without_a_reason_every_sample_is_taken(tmp_path):
    run, asked = _measure(tmp_path, stop_after=None)
    assert len(run.operations[0].samples) == 5 and asked == [1, 2, 3, 4]
    assert not any("samples;" in note for note in run.notes)


def test_only_a_rebuilding_state_whose_rebuild_ended_stops_its_samples():
    from backupbench.runner.faulted import FaultRun

    def reason(phase: str, finished: bool):
        return FaultRun.sample_stop_reason(SimpleNamespace(watch=SimpleNamespace(phase=phase),
                                                           _sampled_finished=lambda: finished))

    assert reason("rebuilding", True).startswith("the rebuild had ended by then (during or after the last one taken)")
    assert reason("rebuilding", False) is None
    assert reason("degraded", True) is None and reason("healthy", True) is None


def test_a_later_workload_of_a_state_that_has_ended_is_not_measured():
    from pathlib import Path

    from backupbench.recipe.model import Recipe
    from backupbench.runner.apply import _measure_workloads

    recipe = Recipe.model_validate({"name": "two", "layout": [{"name": "d", "kind": "directory", "path": "/srv"}],
                                    "workload": [{"kind": "kb2014", "operations": ["active-full"]},
                                                 {"kind": "kb2014", "operations": ["restore-random"]}]})
    layout = SimpleNamespace(name="raid6", s3_drives=(), mount_point=Path("/srv/raid6"), watched_snapshots=[],
                             actions=[])
    measured = []
    session = SimpleNamespace(run=SimpleNamespace(notes=[], operations=[]),
                              measure=lambda workload, where, place, sampling: measured.append(place.group))
    ended = iter(["the rebuild had ended by then"])  # asked once: before the second workload, not the first
    _measure_workloads(session, recipe, layout, None, "rebuilding", stop_reason=lambda: next(ended))
    assert measured == ["raid6/1-kb2014/rebuilding"]
    assert session.run.notes == ["raid6/2-kb2014/rebuilding: not measured; the rebuild had ended by then"]
