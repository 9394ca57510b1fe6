"""The pipeline's PhaseRecorder against the cache guard: the bytes the disks saw during a
phase's ramp are left out, as the workload's own figures leave them out."""

from __future__ import annotations

import threading

from backupbench.cli.progress import QuietReporter
from backupbench.monitor import Thresholds
from backupbench.monitor.cache_guard import StorageFacts
from backupbench.results.model import RunRecord
from backupbench.results.store import Store
from backupbench.runner.phases import STORAGE_FIGURE, MonitorPlan, PhaseRecorder

MIB = 2**20


class CountedDisks(MonitorPlan):
    """A plan whose disks' counter the test moves; `read` is set each time it is read."""

    def __init__(self):
        super().__init__(None, 1.0, Thresholds(), storage=StorageFacts(("vdz",)))
        self.counter = 0
        self.reads = 0
        self.read = threading.Event()

    def disk_bytes(self) -> int | None:
        self.reads += 1
        self.read.set()
        return self.counter


def _recorder(tmp_path, plan):
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="r1", kind="kb2014", target=str(tmp_path), settings={})
    store.create_run(run)
    return PhaseRecorder(run, store, tmp_path, QuietReporter(), plan)


def _phase(tmp_path, plan, warmup_s, ramp_bytes, measured_bytes):
    """One phase moving 100 MiB as its figures say (1 MiB/s for 100 s)."""
    recorder = _recorder(tmp_path, plan)
    recorder.started("restore-sequential", "restore", "read", warmup_s=warmup_s)
    plan.counter += ramp_bytes
    if warmup_s:
        assert plan.read.wait(30), "the ramp's end never read the disks' counter"
    plan.counter += measured_bytes
    recorder.finished("restore-sequential", {"read_bw": 1.0 * MIB, "runtime": 100.0})
    return recorder.run.operations[-1]


def test_the_ramps_bytes_do_not_count_as_reaching_storage(tmp_path):
    # 1 GiB during the ramp, 10 MiB after: cached, though the whole phase saw 10x what was counted.
    phase = _phase(tmp_path, CountedDisks(), 0.05, 1024 * MIB, 10 * MIB)
    assert phase.figures[STORAGE_FIGURE] == 10.0
    assert "saw 10% of the 100 MiB moved" in phase.cached


def test_without_a_ramp_the_count_starts_with_the_phase(tmp_path):
    plan = CountedDisks()
    phase = _phase(tmp_path, plan, 0.0, 100 * MIB, 0)
    assert phase.figures[STORAGE_FIGURE] == 100.0
    assert phase.cached is None


def test_a_phase_over_before_its_ramp_is_not_judged(tmp_path):
    plan = CountedDisks()
    recorder = _recorder(tmp_path, plan)
    recorder.started("restore-sequential", "restore", "read", warmup_s=3600)
    recorder.finished("restore-sequential", {"read_bw": 1.0 * MIB, "runtime": 100.0})
    phase = recorder.run.operations[-1]
    assert STORAGE_FIGURE not in phase.figures
    assert plan.reads == 1   # the end only: the start was never read


def _samples(tmp_path, plan, seen_per_sample):
    """One phase measured len(seen_per_sample) times (as RunSession.measure's repeats do), each
    sample moving 100 MiB of which the disks see the given bytes; the run afterwards."""
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="r1", kind="kb2014", target=str(tmp_path), settings={})
    store.create_run(run)
    for sample, seen in enumerate(seen_per_sample, start=1):
        recorder = PhaseRecorder(run, store, tmp_path, QuietReporter(), plan, sample=sample)
        recorder.started("restore-sequential", "restore", "read")
        plan.counter += seen
        recorder.finished("restore-sequential", {"read_bw": 1.0 * MIB, "runtime": 100.0})
    return run


def test_a_cached_phase_measured_three_times_is_noted_once(tmp_path):
    run = _samples(tmp_path, CountedDisks(), [10 * MIB, 20 * MIB, 5 * MIB])
    notes = [note for note in run.all_notes if "cached" in note]
    assert len(notes) == 1 and len(run.operations) == 1
    assert notes[0].startswith("restore-sequential: cached in 3 of 3 samples: the disks (vdz) saw 5% of")
    phase = run.operations[0]
    assert (phase.cache.cached, phase.cache.checked) == (3, 3)
    assert len(phase.samples) == 3


def test_a_phase_cached_in_one_sample_of_three_says_which_share(tmp_path):
    run = _samples(tmp_path, CountedDisks(), [10 * MIB, 100 * MIB, 100 * MIB])
    assert [note for note in run.all_notes if "cached" in note] == [
        "restore-sequential: cached in 1 of 3 samples: the disks (vdz) saw 10% of the 100 MiB moved: "
        "served by a layer above the disks (dm-cache or bcache, blocks never written of a thin or sparse "
        "volume, or data the filesystem compressed)"]


def test_one_sample_keeps_the_plain_note_and_an_uncached_phase_none(tmp_path):
    run = _samples(tmp_path, CountedDisks(), [10 * MIB])
    assert [note for note in run.all_notes if "cached" in note][0].startswith("restore-sequential: cached: the disks")
    clean = _samples(tmp_path / "clean" if (tmp_path / "clean").mkdir() is None else tmp_path,
                     CountedDisks(), [100 * MIB, 100 * MIB])
    assert not [note for note in clean.all_notes if "cached" in note]
    assert clean.operations[0].cache.cached == 0 and clean.operations[0].cached is None
