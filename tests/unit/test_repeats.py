"""Phases measured several times (--repeat): each sample kept by the PhaseRecorder and the
store, the medians shown, and the spread (min/max, CV, 95% interval, unstable) carried by the
tables, the --json document (checked against its schema model) and the CSV."""

from __future__ import annotations

import csv
import io
import math
import sqlite3
import statistics
from contextlib import closing

import pytest
from pydantic import ValidationError

from backupbench.cli.documents import checked
from backupbench.report.tables import FLAGS_HEADING, SPREAD_HEADING, run_tables, spread_cell
from backupbench.results import document
from backupbench.results.csvout import write_figures
from backupbench.results.model import COMPLETE, FAILED, OperationRecord, RunRecord, medians
from backupbench.results.store import Store
from backupbench.runner.phases import PhaseRecorder
from backupbench.workloads.registry import WORKLOADS

MiB = 1024 * 1024


class Silent:
    """A Reporter that keeps the stage names it was told of."""

    def __init__(self):
        self.finished: list[str] = []

    def run_started(self, run): pass
    def stage_started(self, name, description): pass
    def stage_progress(self, name, fraction, detail): pass
    def stage_finished(self, name, record): self.finished.append(name)
    def caution(self, text): pass


def measured_three_times(tmp_path, bandwidths=(100 * MiB, 120 * MiB, 110 * MiB)) -> tuple[Store, RunRecord]:
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="r1", kind="kb2014", target="/srv", settings={})
    store.create_run(run)
    for sample, bandwidth in enumerate(bandwidths, start=1):
        recorder = PhaseRecorder(run, store, tmp_path, Silent(), None, sample=sample)
        for phase, scale in (("active-full", 1.0), ("restore-random", 0.5)):
            recorder.started(phase, phase, "write qd1")
            recorder.finished(phase, {"effective_bw": bandwidth * scale, "write_bw": bandwidth * scale})
    run.status = COMPLETE
    store.finish_run(run)
    return store, run


def test_each_sample_is_kept_in_the_phases_place_and_the_figure_is_their_median(tmp_path):
    store, run = measured_three_times(tmp_path)
    assert [op.name for op in run.operations] == ["active-full", "restore-random"]  # one record each
    full = run.operations[0]
    assert [s["effective_bw"] for s in full.samples] == [100 * MiB, 120 * MiB, 110 * MiB]
    assert full.figures["effective_bw"] == 110 * MiB and full.status == COMPLETE
    loaded = store.load_run("r1").operations
    assert [op.name for op in loaded] == ["active-full", "restore-random"]
    assert loaded[0].samples == full.samples and loaded[0].figures == full.figures
    assert loaded[1].figures["effective_bw"] == 55 * MiB and loaded[1].sample_count == 3
    with closing(sqlite3.connect(tmp_path / "results.db")) as db:
        assert db.execute("SELECT count(*) FROM samples WHERE name = 'effective_bw'").fetchone() == (6,)


def test_a_phase_measured_once_stores_no_samples_and_spreads_as_one_sample(tmp_path):
    store, _ = measured_three_times(tmp_path, bandwidths=(100 * MiB,))
    op = store.load_run("r1").operations[0]
    assert op.samples == [] and op.sample_count == 1
    assert op.spread("effective_bw").one_sample and op.spread("read_bw") is None
    with closing(sqlite3.connect(tmp_path / "results.db")) as db:
        assert db.execute("SELECT count(*) FROM samples").fetchone() == (0,)
    assert spread_cell(op) == "one sample"
    table = run_tables(store.load_run("r1"))[0]
    assert SPREAD_HEADING not in table.headings  # no column of "one sample" for a run measured once


def test_a_sample_cut_short_is_no_sample(tmp_path):
    store, run = measured_three_times(tmp_path, bandwidths=(100 * MiB, 140 * MiB))
    recorder = PhaseRecorder(run, store, tmp_path, Silent(), None, sample=3)
    recorder.started("active-full", "active-full", "write qd1")
    recorder.abort(FAILED)
    op = store.load_run("r1").operations[0]
    assert op.status == FAILED and [s["effective_bw"] for s in op.samples] == [100 * MiB, 140 * MiB]
    assert op.figures["effective_bw"] == 120 * MiB


def test_medians_over_the_samples_that_have_the_figure():
    assert medians([{"a": 1.0, "b": 5.0}, {"a": 3.0}, {"a": 2.0, "b": 7.0}]) == {"a": 2.0, "b": 6.0}


def test_the_table_shows_interval_cv_and_marks_an_unstable_figure(tmp_path):
    _, steady = measured_three_times(tmp_path / "a", bandwidths=(100 * MiB, 102 * MiB, 101 * MiB))
    table = run_tables(steady)[0]
    assert table.headings[-1] == SPREAD_HEADING and "medians of the samples" in table.caption
    # mean 101, s 1, t(2) 4.303: 101 +- 2.48 MiB/s; CV 1/101
    assert table.rows[0].cells[-1] == "3: 98.5–103.5, CV 1.0%"
    _, noisy = measured_three_times(tmp_path / "b", bandwidths=(100 * MiB, 150 * MiB, 60 * MiB))
    table = run_tables(noisy)[0]
    spread_at = table.headings.index(SPREAD_HEADING)
    cell = table.rows[0].cells[spread_at]
    # Its t interval would reach below 0 MiB/s: the log-scale one, marked (stats.py).
    assert cell == "3: 30.9–302.1 log, CV 43.6%" and cell.style == "yellow"
    assert table.headings[-1] == FLAGS_HEADING and table.rows[0].cells[-1] == "unstable"


def test_the_document_and_the_csv_carry_samples_interval_and_flag(tmp_path):
    _, run = measured_three_times(tmp_path, bandwidths=(100 * MiB, 150 * MiB, 60 * MiB))
    data = checked(document.run_document(run))  # the schema model accepts the new keys
    figure = next(f for f in data["phases"][0]["figures"] if f["name"] == "effective_bw")
    assert figure["value"] == 100 * MiB and figure["samples"] == [100 * MiB, 150 * MiB, 60 * MiB]
    assert (figure["min"], figure["max"], figure["unstable"]) == (60 * MiB, 150 * MiB, True)
    # ln 100, ln 150, ln 60: their t interval on the log scale (the one on the raw scale reaches below 0).
    logs = [math.log(v) for v in (100, 150, 60)]
    half = 4.302652730 * statistics.stdev(logs) / 3 ** 0.5
    assert figure["interval"] == {"low": pytest.approx(math.exp(statistics.fmean(logs) - half) * MiB),
                                  "high": pytest.approx(math.exp(statistics.fmean(logs) + half) * MiB),
                                  "method": "log-t"}
    assert figure["cv"] == pytest.approx(45.092497528 / (310 / 3))
    stream = io.StringIO()
    write_figures([run], stream)
    rows = [row for row in csv.DictReader(io.StringIO(stream.getvalue())) if row["figure"] == "effective_bw"]
    assert rows[0]["n"] == "3" and rows[0]["unstable"] == "yes" and float(rows[0]["ci95_low"]) > 0
    assert rows[0]["ci95_method"] == "log-t"
    assert [float(v) for v in rows[0]["samples"].split(";")] == [100 * MiB, 150 * MiB, 60 * MiB]


def test_a_phase_measured_once_has_no_spread_keys_in_the_document_and_n_1_in_the_csv(tmp_path):
    _, run = measured_three_times(tmp_path, bandwidths=(100 * MiB,))
    figure = checked(document.run_document(run))["phases"][0]["figures"][0]
    assert set(figure) == {"name", "value", "unit"}
    stream = io.StringIO()
    write_figures([run], stream)
    row = next(csv.DictReader(io.StringIO(stream.getvalue())))
    assert row["n"] == "1" and row["cv"] == "" and row["samples"] == ""


@pytest.mark.parametrize("kind", sorted(WORKLOADS))
def test_every_recipe_workload_entry_takes_repeat(kind):
    entry = WORKLOADS[kind].recipe_entry
    assert entry.model_fields["repeat"].default == 1
    with pytest.raises(ValidationError) as refused:
        entry.model_validate({"kind": kind, "repeat": 0})
    assert ("repeat",) in [error["loc"] for error in refused.value.errors()]


def test_gates_hold_the_median_print_the_interval_and_hold_a_bound_when_asked(tmp_path):
    from backupbench.analysis import gates
    from backupbench.errors import InputError

    _, run = measured_three_times(tmp_path, bandwidths=(100 * MiB, 102 * MiB, 101 * MiB))
    judged = {r.expectation.text: r for r in gates.evaluate(gates.parse_all(
        ["active-full>=100MiB/s", "active-full>=100MiB/s@low", "active-full>=103MiB/s@high",
         "active-full>=104MiB/s@high"]), run)}
    median = judged["active-full>=100MiB/s"]
    assert median.met and median.measured == 101 * MiB
    assert median.measured_text == ("101.0 MiB/s (median of 3, 95% interval 98.5 MiB/s-103.5 MiB/s, CV 1.0%)")
    low = judged["active-full>=100MiB/s@low"]
    assert not low.met and low.measured_text.startswith("low end 98.5 MiB/s of 101.0 MiB/s (median of 3")
    assert judged["active-full>=103MiB/s@high"].met and not judged["active-full>=104MiB/s@high"].met
    with pytest.raises(InputError, match="unknown bound @lowest"):
        gates.parse("active-full>=100MiB/s@lowest")


def test_a_bound_on_one_sample_is_missed_and_asks_for_repeats(tmp_path):
    from backupbench.analysis import gates

    _, run = measured_three_times(tmp_path, bandwidths=(100 * MiB,))
    [plain, bound] = gates.evaluate(gates.parse_all(["active-full>=50MiB/s", "active-full>=50MiB/s@low"]), run)
    assert plain.met and plain.measured_text == "100.0 MiB/s"  # one sample: as it always read
    assert not bound.met and bound.measured_text.endswith("measure with --repeat 3")


def _cached_and_unstable(tmp_path) -> RunRecord:
    """active-full unstable (CV 43.6%), restore-random steady but cached by the cache guard."""
    store, run = measured_three_times(tmp_path, bandwidths=(100 * MiB, 150 * MiB, 60 * MiB))
    full, restore = run.operations
    restore.samples = [{"effective_bw": value} for value in (50 * MiB, 51 * MiB, 49 * MiB)]
    restore.figures = {"effective_bw": 50 * MiB}
    restore.cache.add("the disks (vdz) saw 5% of the 100 MiB moved: served by the page cache (buffered I/O)")
    return run


def test_cached_and_unstable_are_flags_of_a_phase_in_the_table_model(tmp_path):
    run = _cached_and_unstable(tmp_path)
    table = run_tables(run)[0]
    assert table.headings[-1] == FLAGS_HEADING
    full, restore = table.rows
    assert (full.unstable, full.cached, full.flags) == (True, None, "unstable")
    assert (restore.unstable, restore.flags) == (False, "cached") and restore.cached.startswith("the disks (vdz)")
    assert full.cells[-1] == "unstable" and full.cells[-1].style == "yellow"
    assert restore.cells[-1] == "cached" and restore.cells[-1].style == "bold red"
    # A table with no flagged phase has no flags column.
    _, steady = measured_three_times(tmp_path / "steady", bandwidths=(100 * MiB, 101 * MiB, 99 * MiB))
    assert FLAGS_HEADING not in run_tables(steady)[0].headings


def test_the_terminal_and_html_show_the_flags_column(tmp_path):
    from rich.console import Console

    from backupbench.report.html import operations_html
    from backupbench.report.terminal import operations_tables

    run = _cached_and_unstable(tmp_path)
    console = Console(width=250, record=True)
    for table in operations_tables(run):
        console.print(table)
    text = console.export_text()
    assert "flags" in text
    assert any(line.startswith("│ active-full") and line.rstrip().endswith("unstable │") for line in text.splitlines())
    assert any(line.startswith("│ restore-random") and line.rstrip().endswith("cached │") for line in text.splitlines())
    page = operations_html(run)
    assert ">flags</th>" in page
    assert '<span class="strong flag-bad">cached</span>' in page and '<span class="flag-warn">unstable</span>' in page


def test_the_document_and_the_csv_carry_cached_and_unstable_per_phase(tmp_path):
    run = _cached_and_unstable(tmp_path)
    data = checked(document.run_document(run))
    full, restore = data["phases"]
    assert (full["cached"], full["unstable"]) == (False, True) and "cached_reason" not in full
    assert (restore["cached"], restore["unstable"]) == (True, False)
    assert restore["cached_reason"].endswith("served by the page cache (buffered I/O)")
    stream = io.StringIO()
    write_figures([run], stream)
    rows = {(row["phase"], row["figure"]): row for row in csv.DictReader(io.StringIO(stream.getvalue()))}
    assert (rows[("active-full", "effective_bw")]["cached"], rows[("active-full", "effective_bw")]["phase_unstable"]) \
        == ("no", "yes")
    assert (rows[("restore-random", "effective_bw")]["cached"],
            rows[("restore-random", "effective_bw")]["phase_unstable"]) == ("yes", "no")
    # One sample: never unstable, the flag still present.
    _, once = measured_three_times(tmp_path / "once", bandwidths=(100 * MiB,))
    assert checked(document.run_document(once))["phases"][0]["unstable"] is False


def test_a_multi_host_phase_keeps_each_samples_hosts_and_shows_each_hosts_median(tmp_path):
    """--hosts / --agents with --repeat: the second sample's per-host figures join the first's
    (HostAccount.samples, the samples table's host rows) instead of replacing them; each host's
    median is as `figures` is the total's; a host lost in any sample stays named."""
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="r1", kind="kb2014", target="10.0.0.5,10.0.0.6:/srv", settings={})
    store.create_run(run)
    measured = [({"10.0.0.5": 100 * MiB, "10.0.0.6": 80 * MiB}, {}),
                ({"10.0.0.5": 120 * MiB, "10.0.0.6": 60 * MiB}, {"10.0.0.7": "connection refused"})]
    for sample, (per_host, lost) in enumerate(measured, start=1):
        recorder = PhaseRecorder(run, store, tmp_path, Silent(), None, sample=sample)
        recorder.started("active-full", "active-full", "write qd1")
        recorder.finished("active-full", {"effective_bw": sum(per_host.values())},
                          {"hosts": {host: {"effective_bw": bw, "write_bw": bw} for host, bw in per_host.items()},
                           "lost_hosts": lost, "p99_total": "merged"})
    (op,) = store.load_run("r1").operations
    assert [s["effective_bw"] for s in op.samples] == [180 * MiB, 180 * MiB]
    assert [{h: f["effective_bw"] for h, f in s.items()} for s in op.hosts.samples] == [
        {"10.0.0.5": 100 * MiB, "10.0.0.6": 80 * MiB}, {"10.0.0.5": 120 * MiB, "10.0.0.6": 60 * MiB}]
    assert op.hosts.per_host == {"10.0.0.5": {"effective_bw": 110 * MiB, "write_bw": 110 * MiB},
                                  "10.0.0.6": {"effective_bw": 70 * MiB, "write_bw": 70 * MiB}}
    assert op.hosts.lost == {"10.0.0.7": "connection refused"}
    assert op.detail == {"p99_total": "merged"}   # the workload's own, beside the record's


def test_a_phase_measured_once_has_no_host_samples(tmp_path):
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="r1", kind="kb2014", target="t", settings={})
    store.create_run(run)
    recorder = PhaseRecorder(run, store, tmp_path, Silent(), None)
    recorder.started("active-full", "active-full", "write qd1")
    recorder.finished("active-full", {"effective_bw": 1.0}, {"hosts": {"a": {"effective_bw": 1.0}}, "lost_hosts": {}})
    (op,) = store.load_run("r1").operations
    assert len(op.hosts.samples) == 1 and op.hosts.per_host == {"a": {"effective_bw": 1.0}}
    assert "host_samples" not in op.document_detail() and op.document_detail()["hosts"] == {"a": {"effective_bw": 1.0}}


def test_a_repeated_phases_host_timeline_names_its_csv_in_its_samples_folder(tmp_path):
    """runner/host_monitor.py names each host's CSV bare; with --repeat it is in `sample-<n>/`,
    and the report (report/hosts.host_timelines) reads it from the run's (or group's) folder."""
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="r1", kind="s3", target="t", settings={})
    store.create_run(run)
    for sample in (1, 2):
        folder = tmp_path / f"sample-{sample}"
        folder.mkdir()
        recorder = PhaseRecorder(run, store, folder, Silent(), None, run_root=tmp_path, sample=sample)
        recorder.started("put", "put", "s3 put")
        timeline = {"from_wall": 1.0, "to_wall": 2.0, "hosts": {"a": {"csv": "host-a.monitor.csv", "disks": []}}}
        recorder.finished("put", {"objects_per_s": 1.0}, {"hosts": {"a": {"objects_per_s": 1.0}},
                                                           "host_timeline": timeline})
    (op,) = store.load_run("r1").operations
    assert op.hosts.timeline["hosts"]["a"]["csv"] == "sample-2/host-a.monitor.csv"


def test_a_phase_moving_no_bytes_spreads_its_request_rate_not_its_zero_bandwidth():
    """An S3 DELETE measured twice: effective_bw is 0 in each sample; the spread column, the
    `unstable` flag and the document are about its objects/s."""
    delete = OperationRecord(name="delete", pattern="s3 delete", status=COMPLETE,
                             samples=[{"effective_bw": 0.0, "objects_per_s": 300.0},
                                      {"effective_bw": 0.0, "objects_per_s": 200.0}],
                             figures={"effective_bw": 0.0, "objects_per_s": 250.0})
    assert delete.headline_figure == "objects_per_s" and delete.unstable
    assert spread_cell(delete).startswith("2: ") and "0.0–0.0" not in spread_cell(delete)
    assert OperationRecord(name="x", pattern="p", figures={"effective_bw": 0.0}).headline_figure == "effective_bw"


@pytest.mark.parametrize("width", [250, 100])
def test_the_terminal_keeps_names_and_intervals_whole_and_wraps_headings_when_narrow(tmp_path, width):
    """rich shortens cells that do not fit with an ellipsis: an interval cut to '30.9–30…' would
    read as another figure. Names and intervals stay whole; the headings wrap on a narrow terminal."""
    from rich.console import Console

    from backupbench.report.terminal import operations_tables

    _, noisy = measured_three_times(tmp_path, bandwidths=(100 * MiB, 150 * MiB, 60 * MiB))
    console = Console(width=width, record=True)
    for table in operations_tables(noisy):
        console.print(table)
    lines = console.export_text().splitlines()
    assert max(map(len, lines)) <= width
    assert any("3: 30.9–302.1 log" in line for line in lines) and any("CV 43.6%" in line for line in lines)
    assert any(line.startswith(f"│ {noisy.operations[0].name} ") for line in lines)
    headings = [line for line in lines if line.startswith("┃")]
    assert (len(headings) > 1) == (width == 100)   # wrapped only where the table would not fit
