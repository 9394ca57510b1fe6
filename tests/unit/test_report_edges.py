"""The report's sharp edges (issue 26): a mixed S3 phase per request kind and the multipart count,
the headline verdict, no timeline from a handful of samples, one colour per meaning on a page."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("matplotlib", reason="the HTML report's charts need matplotlib (make test installs it)")

from rich.console import Console  # noqa: E402

from backupbench.analysis.headline import run_headline  # noqa: E402
from backupbench.engines.s3_records import OpRecord, mixed_figures, multipart_objects  # noqa: E402
from backupbench.monitor import csvlog  # noqa: E402
from backupbench.report import charts, html, palette, terminal  # noqa: E402
from backupbench.report.palette import Colours  # noqa: E402
from backupbench.report.tables import run_tables  # noqa: E402
from backupbench.results.location import run_folder  # noqa: E402
from backupbench.results.model import COMPLETE, FAILED, OperationRecord, RunRecord  # noqa: E402
from backupbench.runner.agents_merge import merge_phase  # noqa: E402
from backupbench.agent.protocol import pack_sorted  # noqa: E402

from report_support import fio_op, kb_run, monitor_csv, recipe_run  # noqa: E402

MiB = 2**20


def _records() -> list[OpRecord]:
    """A mixed phase: fast small GETs, slow large PUTs (2 of 3 over a 64 MiB threshold)."""
    puts = [OpRecord("put", k, 0, 0, 0, 400_000_000 + k, size, 200, "")
            for k, size in enumerate((80 * MiB, 100 * MiB, 1 * MiB))]
    gets = [OpRecord("get", 10 + k, 1, 0, 1_000_000, 2_000_000 + k * 100_000, 1 * MiB, 200, "") for k in range(9)]
    return puts + gets + [OpRecord("list", 0, 2, 0, 0, 30_000_000, 0, 200, "")]


def s3_run(status: str = COMPLETE) -> RunRecord:
    figures = mixed_figures(_records())
    figures["multipart_objects"] = float(multipart_objects(_records(), 64 * MiB))
    op = OperationRecord(name="mixed", pattern="PUT 20% GET 70% LIST 10%", status=status, figures=figures)
    return RunRecord(run_id="20261126T000000-s3s3", kind="s3", target="http://127.0.0.1:9000/bucket",
                     settings={"multipart_threshold": 64 * MiB, "part_size": 16 * MiB}, status=COMPLETE,
                     operations=[op])


def test_a_mixed_phase_gets_a_row_per_request_kind_with_its_own_percentiles():
    (table,) = run_tables(s3_run())
    headings = ("operation", "pattern", *table.headings)
    rows = [dict(zip(headings, (row.operation, row.pattern, *row.cells))) for row in table.rows]
    assert [row["operation"] for row in rows] == ["mixed", "  ↳ PUT", "  ↳ GET", "  ↳ LIST"]
    put, get = rows[1], rows[2]
    # The phase's one p50 is a GET's; the PUTs' own p50 is 400 ms: only the per-kind row says so.
    assert rows[0]["p50"] == "2.60 ms" and put["p50"] == "400.00 ms" and get["p50"] == "2.40 ms"
    assert put["p99"] == "400.00 ms" and get["p99"] == "2.80 ms"
    assert put["check / mix"] == "3 requests" and get["check / mix"] == "9 requests"
    assert put["pattern"] == "23% of its requests" and rows[3]["pattern"] == "8% of its requests"
    assert "multipart 2" in rows[0]["check / mix"]
    assert "2 objects went up as multipart (over 64 MiB, 16 MiB parts)" in table.caption
    assert "↳: a mixed phase's requests of one kind" in table.caption


def test_the_terminal_and_the_page_show_the_same_per_kind_rows(tmp_path):
    console = Console(width=220, record=True)
    for table in terminal.operations_tables(s3_run()):
        console.print(table)
    text = console.export_text()
    assert re.search(r"↳ PUT\s+│\s+23% of its requests.*400\.00 ms", text)
    page = html.render(s3_run(), results_dir=tmp_path)
    assert "<td>  ↳ GET</td><td>69% of its requests</td>" in page
    assert "2 objects went up as multipart" in page


def test_a_failed_mixed_phase_gets_no_per_kind_rows():
    (table,) = run_tables(s3_run(status=FAILED))
    assert [row.operation for row in table.rows] == ["mixed"]


def test_multipart_counts_only_stored_puts_over_the_threshold_and_agents_add_them_up():
    records = _records() + [OpRecord("put", 9, 0, 0, 0, 5, 90 * MiB, 503, "SlowDown")]
    assert multipart_objects(records, 64 * MiB) == 2
    assert multipart_objects(records, 0) == 0     # 0: the loader never splits
    phase = {"figures": {"ops": 3.0, "errors": 0.0, "bytes": 1.0, "runtime": 1.0, "multipart_objects": 2.0},
             "started_wall": 100.0, "lat_ns": pack_sorted([1, 2, 3])}
    merged, _ = merge_phase("put", {"a": phase, "b": {**phase, "figures": {**phase["figures"], "multipart_objects": 1.0}}})
    assert merged["multipart_objects"] == 3.0


# ---- the headline -------------------------------------------------------------------------------

def _layouts(tmp_path, striped: list[float], linear: list[float]) -> RunRecord:
    """Each layout's phase measured len(values) times, stored as the runner stores samples
    (OperationRecord.samples; issue 37: the headline read a detail["samples"] nothing writes)."""
    run = recipe_run(tmp_path)
    for op, values in zip(run.operations, (linear, striped)):
        op.samples = [{**op.figures, "effective_bw": v * MiB} for v in values]
        op.figures["effective_bw"] = sorted(values)[len(values) // 2] * MiB
    return run


def test_the_headline_names_a_layout_only_beyond_noise(tmp_path):
    far = run_headline(_layouts(tmp_path / "a", striped=[200.0, 201.0, 203.0], linear=[50.0, 51.0, 50.5]))
    assert far is not None and not far.bad
    assert far.text.startswith("striped is the fastest layout beyond noise in 1 of 1 phases compared")
    near = run_headline(_layouts(tmp_path / "b", striped=[100.0, 130.0, 90.0], linear=[105.0, 95.0, 120.0]))
    assert near is not None and near.text.startswith("No difference beyond noise between the layouts")
    single = run_headline(recipe_run(tmp_path / "c"))
    assert single is not None and single.text == (
        "No layout can be named the fastest: the comparison of active-full has one sample (striped against linear: "
        "4.00x faster on one sample (each side): noise unknown, measure with --repeat 3)")
    assert "leads" not in single.text   # issue 37: one sample names no leader either


def test_the_headline_says_a_failed_run_or_a_missed_expectation_first(tmp_path):
    run = kb_run(tmp_path)
    binding = run_headline(run)
    assert binding is not None and binding.text.startswith("The slowest phase is ")
    missed = run_headline(run, ["restore-random>=3000MiB/s (measured 1,050.0 MiB/s)"])
    assert missed is not None and missed.bad and missed.text.startswith("Expectation missed: restore-random")
    run.status, run.error = FAILED, "fio exited 1"
    failed = run_headline(run, ["anything"])
    assert failed is not None and failed.bad and failed.text == "The run is failed: fio exited 1; its figures promise nothing"


def test_the_page_opens_with_the_headline(tmp_path):
    page = html.render(recipe_run(tmp_path), results_dir=tmp_path)
    header = page[page.index("<header>"):page.index("</header>")]
    assert '<p class="run-headline"><strong>No layout can be named the fastest' in header
    # Measured once: neither the headline nor the layouts' verdict names a leader (issue 37).
    assert "leads" not in page and "Verdict: no winner in active-full on one sample: striped" in page
    bad = html.render(kb_run(tmp_path / "k", phases=["active-full"]), results_dir=tmp_path / "k",
                      missed=["x>=1MiB/s (measured 0 B/s)"])
    assert '<p class="run-headline bad"><strong>Expectation missed: x&gt;=1MiB/s' in bad


# ---- short phases -------------------------------------------------------------------------------

def test_a_phase_with_fewer_than_five_samples_gets_no_timeline_and_says_why(tmp_path):
    run = kb_run(tmp_path)
    folder = run_folder(tmp_path, run.run_id)
    folder.mkdir(parents=True, exist_ok=True)
    for index, op in enumerate(run.operations):
        (folder / op.monitor_csv).write_text(monitor_csv(["sdb"], {"sdb": 100.0}, samples=4 if index else 5))
    four = csvlog.read_csv(monitor_csv(["sdb"], {"sdb": 100.0}, samples=4))
    assert charts.timeline_figure("short", four, ["sdb"]) is None
    page = html.render(run, results_dir=tmp_path)
    assert f'aria-label="Monitor timeline of {run.operations[0].name}"' in page
    second = run.operations[1].name
    assert f'aria-label="Monitor timeline of {second}"' not in page
    assert (f"{second}: no timeline: only 4 monitor samples (fewer than 5 show no shape over time; "
            "the phase&#x27;s averages are in the table above).") in page


# ---- colours ------------------------------------------------------------------------------------

def _fills(svg: str) -> set[str]:
    return set(re.findall(r"fill: (#[0-9a-f]{6})", svg))


def _section(page: str, label: str) -> str:
    start = page.index(f'aria-label="{label}"')
    return page[start:page.index("</svg>", start)]


def test_one_colour_per_meaning_across_the_page(tmp_path):
    run = recipe_run(tmp_path)
    run.operations.append(fio_op("striped/restore", "read qd1", 300.0, 0, 300.0, 0.5, layout="striped"))
    page = html.render(run, results_dir=tmp_path)
    colours = Colours(["linear", "striped"])
    speed = _fills(_section(page, "Effective speed by layout"))
    # A layout keeps its colour; reads and writes have theirs, which no layout or disk takes.
    assert {colours.of("linear").lower(), colours.of("striped").lower()} <= speed
    latency = _fills(_section(page, "p99 latency per operation"))
    assert {palette.READ.lower(), palette.WRITE.lower()} <= latency
    assert not ({palette.READ.lower(), palette.WRITE.lower()} & {c.lower() for c in palette.THINGS})
    timeline = _fills(_section(page, "Monitor timeline of striped/active-full"))
    # The disks take the colours after the layouts': none of them is a layout's or a read's.
    assert timeline and not timeline & {colours.of("linear").lower(), colours.of("striped").lower(),
                                        palette.READ.lower(), palette.WRITE.lower()}


def test_a_single_run_speed_chart_is_drawn_in_the_speed_colour_not_a_things(tmp_path):
    speed = charts.svg_bytes(charts.speed_figure(kb_run(tmp_path))).decode()
    assert f"fill: {palette.SPEED.lower()}" in speed
    assert not any(f"fill: {c.lower()}" in speed for c in palette.THINGS)



def test_report_expect_puts_a_missed_expectation_in_the_headline_and_fails(tmp_path):
    from backupbench.errors import ExpectationMissed
    from report_support import invoke, stored

    results = stored(tmp_path / "results", kb_run(tmp_path / "results", phases=["active-full", "restore-sequential"]))
    out = tmp_path / "r.html"
    done = invoke("--results", str(results), "--html", str(out), "--expect", "restore-sequential>=9000MiB/s",
                  "--expect", "active-full>=1MiB/s")
    assert isinstance(done.exception, ExpectationMissed)
    assert ('<p class="run-headline bad"><strong>Expectation missed: restore-sequential&gt;=9000MiB/s (measured '
            in out.read_text())
    met = invoke("--results", str(results), "--html", str(out), "--expect", "active-full>=1MiB/s")
    assert met.exception is None and "Expectation missed" not in out.read_text()


def test_a_small_file_runs_headline_is_in_files_per_second():
    """Issue 42: a small-file run's headline said MiB/s, where its files/s is what the table leads
    with (one order of speed figures, results/model.SPEED_FIGURES, for every view)."""
    ops = [OperationRecord(name, "2,000 x 100 KiB", COMPLETE, figures={"files_per_s": rate, "effective_bw": rate * 1e5})
           for name, rate in (("create", 2486.0), ("update-1", 3548.0))]
    run = RunRecord("r", "smallfiles", "/t", {}, status=COMPLETE, operations=ops)
    assert run_headline(run).text.startswith("The slowest phase is create at 2,486 files/s")
