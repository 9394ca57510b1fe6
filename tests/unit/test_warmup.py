"""Warm-up and preconditioning: the ramp (fio's ramp_time, one option: flag and recipe key),
fio's steady-state stop and its result, the monitor leaving a phase's partial first and last
seconds and its ramp out of the phase's figures, the test file written in full before any
read, lazy initialisation off wherever ext4 is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from backupbench.cli import options as cli_options
from backupbench.engines import fio_json
from backupbench.errors import RecipeError
from backupbench.lab.disks import FILESYSTEMS
from backupbench.layouts.filesystem import mkfs_argv
from backupbench.layouts.specs import FilesystemSpec
from backupbench.monitor import Sampler
from backupbench.recipe import model
from backupbench.workloads import firstwrite, kb2014
from backupbench.workloads.kb2014 import DEFAULT_RAMP_S, Kb2014Options, timing_label

from monitor_support import FakeProc, disk_line

FILE = Path("/srv/backupbench-r.dat")


def _phases(**values):
    return kb2014.workload(cli_options.build(Kb2014Options, values)).phases_for(FILE)


def test_every_timed_operation_ramps_by_default_and_zero_is_allowed():
    assert DEFAULT_RAMP_S == 2.0 and Kb2014Options().ramp == 2.0
    layout, *timed = _phases(operations="active-full,restore-random")
    assert all("ramp_time=2s" in phase.job.text() and "runtime=10s" in phase.job.text() for phase in timed)
    # Laying the file out is size-based: no ramp (it would only slow the writing down).
    assert "ramp_time" not in layout.job.text() and layout.job.longest_s is None
    assert timed[0].job.longest_s == 12.0
    unramped = _phases(operations="active-full", ramp="0")
    assert "ramp_time" not in unramped[0].job.text() and unramped[0].job.longest_s == 10.0
    assert "ramp_time=500ms" in _phases(operations="active-full", ramp="500ms")[0].job.text()


def test_ramp_is_a_recipe_key_too_and_first_write_has_none():
    recipe = model.parse({"name": "r", "layout": [{"name": "d", "kind": "directory", "path": "/srv"}],
                          "workload": [{"kind": "kb2014", "ramp": "5s"}]})
    assert recipe.workload[0].ramp == 5.0
    with pytest.raises(RecipeError, match="ramp"):
        model.parse({"name": "r", "layout": [{"name": "d", "kind": "directory", "path": "/srv"}],
                     "workload": [{"kind": "first-write", "ramp": "5s"}]})
    # first-write measures the first write itself: its phases are size-based, nothing to ramp.
    phases = firstwrite.workload(firstwrite.SuiteOptions()).phases_for(FILE)
    assert all("ramp_time" not in p.job.text() and p.job.longest_s is None for p in phases)


def test_steady_state_is_fios_own():
    job = _phases(operations="restore-random", steady_state="IOPS_slope:0.3%", runtime="120s",
                  steady_state_window="20s")[1].job
    text = job.text()
    assert "steadystate=iops_slope:0.3%" in text and "steadystate_duration=20s" in text
    assert "ramp_time=2s" in text and "runtime=120s" in text and "steadystate_ramp_time" not in text
    assert "steadystate" not in _phases(operations="restore-random")[1].job.text()
    with pytest.raises(RecipeError, match="--steady-state"):
        cli_options.build(Kb2014Options, {"steady_state": "slope:1%"})
    with pytest.raises(RecipeError, match="longer than the window"):
        cli_options.build(Kb2014Options, {"steady_state": "bw:5%", "runtime": "10s"})
    # One sample a second: a 1 s window has no slope (fio wrote -nan and said it was attained).
    with pytest.raises(RecipeError, match="steady-state-window"):
        cli_options.build(Kb2014Options, {"steady_state": "iops_slope:0.3%", "steady_state_window": "1s"})


def test_the_caption_says_how_each_operation_was_timed():
    assert timing_label({"runtime": 10.0, "ramp": 2.0}) == "10 s per operation after a 2 s ramp"
    assert timing_label({"runtime": 10.0, "ramp": 0.0}) == "10 s per operation, no ramp"
    assert timing_label({"runtime": 10.0}) == "10 s per operation"     # a run stored before ramps
    assert timing_label({"runtime": 120.0, "ramp": 2.0, "steady_state": "iops_slope:0.3%",
                         "steady_state_window": 20.0}) == (
        "each operation until fio's steady state iops_slope:0.3% over 20 s, at most 120 s after a 2 s ramp")


def test_fios_steady_state_result_is_read_and_stored_as_a_figure():
    # Trimmed from fio 3.33's JSON of `steadystate=iops_slope:5%`, `steadystate_duration=3s`.
    job = {"jobname": "restore-random", "error": 0, "job_runtime": 11031,
           "read": {"bw_bytes": 1_000_000, "iops": 15, "io_bytes": 11_000_000, "runtime": 11032},
           "write": {}, "steadystate": {"ss": "iops_slope:5.000000%", "duration": 3, "attained": 1,
                                        "criterion": "0.877008%", "max_deviation": 0.0, "slope": 186.0}}
    summary = fio_json.parse({"fio version": "fio-3.33", "jobs": [job]})
    assert summary.steady_state == fio_json.SteadyState("iops_slope:5.000000%", True, "0.877008%", 3.0)
    figures = kb2014._scorer(kb2014.OPERATIONS["restore-random"])(summary)
    assert figures["steady_state_attained"] == 1.0
    missed = fio_json.parse({"jobs": [{**job, "steadystate": {**job["steadystate"], "attained": 0}}]})
    assert kb2014._scorer(kb2014.OPERATIONS["restore-random"])(missed)["steady_state_attained"] == 0.0
    assert "steady_state_attained" not in kb2014._scorer(kb2014.OPERATIONS["restore-random"])(
        fio_json.parse({"jobs": [{k: v for k, v in job.items() if k != "steadystate"}]}))


def test_every_read_or_overwrite_finds_the_file_written_in_full():
    # Reads and the merges' read-modify-write need real data under them: the first phase writes
    # every byte of the file (rw=write over the whole file, no runtime: size-based) and is not
    # measured; only a write-only selection lets fio create the file, as the KB article does.
    for selection in ("restore-random", "synthetic-full", "reverse-incremental,restore-sequential",
                      "active-full,restore-random"):
        first = _phases(operations=selection, size="64MiB", jobs="3")[0]
        assert first.score is None and first.job.rw == "write" and first.job.runtime_s is None
        assert first.job.region_size == cli_options.build(Kb2014Options, {"size": "64MiB", "jobs": "3"}).with_block_default(
            kb2014.KB2014_BLOCK_SIZE).file_size
        assert first.title.endswith("in full")
    assert [p.job.name for p in _phases(operations="active-full")] == ["active-full"]


def test_ext4_is_made_without_lazy_initialisation_everywhere():
    argv = mkfs_argv(FilesystemSpec(type="ext4"), ("/dev/vdb",), "bb-x")
    assert "lazy_itable_init=0,lazy_journal_init=0" in argv
    assert "lazy_itable_init=0,lazy_journal_init=0" in FILESYSTEMS["ext4"]    # the lab's disks made on the host


def _sampler_over(fake: FakeProc, warmup_s: float | None) -> Sampler:
    fake.write(diskstats=disk_line("vda", 0, 0, 0, 0, 0))
    return Sampler(1.0, ["vda"], host=fake.host, clock=fake.clock, measure_after_s=warmup_s).start(background=False)


def _run_phase(fake: FakeProc, sampler: Sampler, per_second: list[int], tail_s: float = 0.5):
    """One sample a second writing per_second[i] MiB, then stop() 0.5 s into a last one of 1 MiB."""
    ios = sectors = 0
    for mib in per_second:
        ios, sectors = ios + mib, sectors + mib * 2048
        fake.advance(1.0, diskstats=disk_line("vda", ios, sectors, ios, 1000, ios))
        sampler.sample_once()
    fake.advance(tail_s, diskstats=disk_line("vda", ios + 1, sectors + 2048, ios, 1000, ios))
    return sampler.stop()


def test_a_phase_leaves_out_its_partial_first_and_last_seconds(tmp_path):
    # 1 MiB in the first second (fio starting), 100 MiB in each of the next 4, a tail of 0.5 s.
    fake = FakeProc(tmp_path)
    summary = _run_phase(fake, _sampler_over(fake, 0.0), [1, 100, 100, 100, 100])
    assert summary.samples == 4 and summary.left_out == 2
    assert summary["vda.wMB_s"].avg == pytest.approx(100.0) and summary.duration_s == pytest.approx(4.0)


def test_a_phase_leaves_out_its_ramp(tmp_path):
    # A 2 s ramp: the samples beginning before 1 + 2 s are left out with the tail.
    fake = FakeProc(tmp_path)
    summary = _run_phase(fake, _sampler_over(fake, 2.0), [1, 40, 60, 100, 100, 100])
    assert summary.samples == 3 and summary.left_out == 4
    assert summary["vda.wMB_s"].avg == pytest.approx(100.0) and summary["vda.wMB_s"].max == pytest.approx(100.0)


def test_without_a_phase_every_sample_counts_and_a_too_short_phase_keeps_them_all(tmp_path):
    fake = FakeProc(tmp_path)
    everything = _run_phase(fake, _sampler_over(fake, None), [1, 100, 100])
    assert everything.samples == 4 and everything.left_out == 0     # `backupbench monitor`: all of it
    short = FakeProc(tmp_path / "short")
    summary = _run_phase(short, _sampler_over(short, 2.0), [50])
    assert summary.samples == 2 and summary.left_out == 0
    assert any("too short" in note for note in summary.notes)


def test_a_phase_of_a_few_seconds_counts_its_tail_where_its_flush_lands(tmp_path):
    # A small-file phase written to the page cache (nothing on the disk in its whole seconds), its
    # closing syncfs in the last half second: the tail is its disk work, and it counts.
    fake = FakeProc(tmp_path)
    summary = _run_phase(fake, _sampler_over(fake, 0.0), [0, 0, 0])
    assert summary.samples == 4 and summary.left_out == 0
    assert summary["vda.wMB_s"].max == pytest.approx(2.0)   # the tail's 1 MiB in 0.5 s
    assert any("too short" in note for note in summary.notes)
    # Three whole seconds are enough: the partial ones are left out again.
    longer = FakeProc(tmp_path / "longer")
    summary = _run_phase(longer, _sampler_over(longer, 0.0), [0, 0, 0, 0])
    assert summary.samples == 3 and summary.left_out == 2 and summary["vda.wMB_s"].max == 0


def test_a_comparison_lists_a_different_ramp_first():
    from backupbench.analysis.settings_diff import settings_differences
    from backupbench.results.model import RunRecord

    def run(run_id: str, **values) -> RunRecord:
        options = cli_options.build(Kb2014Options, values)
        return RunRecord(run_id, "kb2014", "/srv", kb2014.workload(options).settings())

    found = {d.setting: d.values for d in settings_differences([run("a", ramp="0"), run("b")])}
    assert found == {"ramp before each operation": ("0 s", "2 s")}
    steady = settings_differences([run("a", steady_state="bw:5%", runtime="60s"), run("b", runtime="60s")])
    assert [(d.setting, d.values) for d in steady] == [("steady state", ("bw:5%", "off"))]
