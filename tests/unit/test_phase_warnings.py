"""A phase's monitor warnings (a threshold crossed) become run notes once per phase, however
many samples `--repeat` measures: a later sample's crossings join the earlier ones."""

from __future__ import annotations

from backupbench.cli.progress import QuietReporter
from backupbench.monitor import Thresholds
from backupbench.monitor.summary import Crossing, MonitorSummary, SummaryBuilder, crossing_lines, merged_crossings
from backupbench.results.model import RunRecord
from backupbench.results.store import Store
from backupbench.runner.phases import MonitorPlan, PhaseRecorder


class Said:
    """A sampler whose period crossed the thresholds as the test says."""

    def __init__(self, crossings):
        self.crossings = crossings

    def start(self):
        return self

    def stop(self):
        return MonitorSummary(devices=["vdz"], crossings=self.crossings,
                              warnings=crossing_lines(self.crossings, Thresholds(load1=2), ["vdz"]))


class Crossed(MonitorPlan):
    def __init__(self, per_sample):
        super().__init__(None, 1.0, Thresholds(load1=2))
        self.per_sample = list(per_sample)

    def sampler(self, csv_path, warmup_s=0.0):
        return Said(self.per_sample.pop(0))


def _run(tmp_path, per_sample):
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="r1", kind="kb2014", target=str(tmp_path), settings={}, notes=["before"])
    store.create_run(run)
    plan = Crossed(per_sample)
    for sample in range(1, len(per_sample) + 1):
        recorder = PhaseRecorder(run, store, tmp_path, QuietReporter(), plan, sample=sample)
        recorder.started("active-full", "full", "write")
        recorder.finished("active-full", {"write_bw": 1.0, "runtime": 1.0})
    return run


def test_three_samples_crossing_the_load_limit_give_one_note_with_their_sum_and_worst(tmp_path):
    # 2 + 4 + 6 samples over the limit, worst 2.5, 3.0, 2.1: one note of 12 samples, worst 3.00.
    run = _run(tmp_path, [[Crossing("", "load1", 2, 2.5)], [Crossing("", "load1", 4, 3.0)],
                          [Crossing("", "load1", 6, 2.1)]])
    assert run.all_notes == ["before", "active-full: load1 3.00 above 2 (12 samples)"]
    assert run.operations[0].monitor.crossings == [{"device": "", "metric": "load1", "count": 12,
                                                             "worst": 3.0}]


def test_a_crossing_in_a_later_sample_only_is_added_in_the_device_order(tmp_path):
    run = _run(tmp_path, [[Crossing("", "load1", 1, 2.2)],
                          [Crossing("vdz", "w_await", 3, 120.0), Crossing("", "load1", 1, 2.4)]])
    assert run.all_notes == ["before", "active-full: vdz w_await 120 ms above 100 ms (3 samples)",
                         "active-full: load1 2.40 above 2 (2 samples)"]


def test_samples_that_cross_nothing_leave_no_note(tmp_path):
    run = _run(tmp_path, [[], []])
    assert run.all_notes == ["before"] and run.operations[0].monitor.crossings == []


def test_merged_crossings_add_counts_and_keep_the_worst():
    merged = merged_crossings([Crossing("a", "r_await", 2, 50.0)], [Crossing("a", "r_await", 3, 40.0),
                                                                     Crossing("b", "r_await", 1, 9.0)])
    assert merged == [Crossing("a", "r_await", 5, 50.0), Crossing("b", "r_await", 1, 9.0)]


def test_a_run_with_no_storage_here_warns_about_no_device(tmp_path):
    """Issue 42: an S3 run against an endpoint elsewhere warned about this machine's disks, which
    carried none of its I/O; its load is still watched."""
    import math
    from dataclasses import fields

    from backupbench.monitor.options import MonitorOptions
    from backupbench.monitor.rates import DiskRates, Sample
    from backupbench.runner.pipeline import monitor_plan

    remote = monitor_plan(MonitorOptions(), ())
    assert remote.thresholds.io_await_ms == math.inf and remote.thresholds.load1_limit() > 0
    here = monitor_plan(MonitorOptions(), (tmp_path,))
    assert here.thresholds.io_await_ms == MonitorOptions().warn_latency * 1000.0
    # A device's 900 ms wait crosses the threshold of a run on that storage, not of the remote one.
    disk = DiskRates(**{**{f.name: 0.0 for f in fields(DiskRates)}, "w_s": 50.0, "w_await": 900.0})
    sample = Sample(1.0, 1.0, 1.0, None, None, None, {"vda": disk})
    crossed = []
    for plan in (remote, here):
        summary = SummaryBuilder(["vda"], plan.thresholds)
        summary.add(sample)
        crossed.append([c.device for c in summary.crossings()])
    assert crossed == [[], ["vda"]]
