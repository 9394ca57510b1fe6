"""The compare report (`backupbench report RUN RUN...`) and the single-run page's baseline
section: labels everywhere, settings that differ flagged first, only each row's best cell
marked, p99 columns, per-phase timelines and a verdict sentence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the HTML report's charts need matplotlib (make test installs it)")

from backupbench.report import compare_html, html  # noqa: E402
from backupbench.results.location import run_folder  # noqa: E402
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord  # noqa: E402
from backupbench.results.phase import MonitorAccount

MiB = 2**20
CSV_HEADER = "timestamp,elapsed_s,%iowait,sdb:rMB/s,sdb:wMB/s,sdb:%util,sdc:rMB/s,sdc:wMB/s,sdc:%util"


def layout_run(run_id: str, label: str, restore: float, util: float, p99_ms: float, jobs: int = 1,
               repeated: bool = False) -> RunRecord:
    """repeated: each phase measured 3 times, 1% apart (its figures the medians)."""
    run = RunRecord(run_id, "kb2014", "/srv/backups", {"jobs": jobs, "iodepth": None, "block_size": 512 * 1024},
                    host={"hostname": "repo01", "device_stacks": {"target": {"members": ["sdb", "sdc"]}}},
                    status=COMPLETE, started_at="2026-11-24T00:00:00+00:00", label=label)
    run.operations = [
        OperationRecord("active-full", "write qd1", COMPLETE, figures={
            "effective_bw": 300 * MiB, "write_bw": 300 * MiB, "write_p99_lat": 2e6, "members_util": 50.0},
            monitor=MonitorAccount(csv=["active-full.monitor.csv"])),
        OperationRecord("restore-random", "randread qd1", COMPLETE, figures={
            "effective_bw": restore * MiB, "read_bw": restore * MiB, "read_p99_lat": p99_ms * 1e6,
            "members_util": util}, monitor=MonitorAccount(csv=["restore-random.monitor.csv"])),
    ]
    for op in run.operations if repeated else []:
        op.samples = [{name: value * f for name, value in op.figures.items()} for f in (0.99, 1.0, 1.01)]
    return run


def write_samples(results: Path, run: RunRecord) -> None:
    folder = run_folder(results, run.run_id)
    folder.mkdir(parents=True)
    for op in run.operations:
        rows = [CSV_HEADER] + [f"2026-11-24T00:00:0{i},{i}.0,5.0,100.0,0.0,{op.figures['members_util']},100.0,0.0,"
                               f"{op.figures['members_util']}" for i in range(1, 7)]
        (folder / op.monitor_csv).write_text("\n".join(rows) + "\n")


def cells_of_row(page: str, name: str, table_title: str) -> list[str]:
    table = page[page.index(table_title):]
    row = re.search(rf"<tr><td>{re.escape(name)}[^<]*</td>(.*?)</tr>", table).group(1)
    return re.findall(r"<td[^>]*>(.*?)</td>", row)


@pytest.fixture(scope="module")
def compared_results(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("compared")


@pytest.fixture(scope="module")
def compared(compared_results):
    """Rendered once for the module's tests, which only read the page (matplotlib is slow);
    each phase measured 3 times."""
    linear = layout_run("20261124T000000-aaaa", "lvm-linear", 205, 97.0, 9.8, repeated=True)
    striped = layout_run("20261124T010000-bbbb", "lvm-striped", 412, 38.0, 3.1, jobs=4, repeated=True)
    for run in (linear, striped):
        write_samples(compared_results, run)
    return linear, striped, compare_html.render_comparison([linear, striped], results_dir=compared_results)


@pytest.fixture(scope="module")
def compared_once():
    """The same two runs, each phase measured once; no run folders (no timelines to draw)."""
    linear = layout_run("20261124T000000-aaaa", "lvm-linear", 205, 97.0, 9.8)
    striped = layout_run("20261124T010000-bbbb", "lvm-striped", 412, 38.0, 3.1, jobs=4)
    return compare_html.render_comparison([linear, striped])


def test_runs_are_labelled_and_the_verdict_names_winner_margin_and_evidence(compared):
    _, _, page = compared
    assert "<h1>backupbench: 2 runs compared</h1>" in page and "lvm-linear, lvm-striped" in page
    assert '<th scope="col" class="num">lvm-striped</th>' in page
    assert ("lvm-striped wins restore-random: 412.0 MiB/s vs 205.0 MiB/s for lvm-linear (2.01x faster); "
            "its member disks were 38% busy against 97%.") in page
    assert "no clear winner in active-full" in page


def test_on_one_sample_no_run_leads_and_no_cell_is_marked_best(compared_once):
    # Issue 37: measured once, a run "led" and its cells were marked green, though one sample names no winner.
    page = compared_once
    assert ("no winner in restore-random on one sample: lvm-striped 412.0 MiB/s vs 205.0 MiB/s for lvm-linear "
            "(2.01x faster on one sample (each side): noise unknown, measure with --repeat 3).") in page
    assert "leads" not in page and " wins " not in page and "Overall:" not in page
    assert 'class="strong best"' not in page and "#dff0d8" not in page
    # The one-sample caveat is a numbered note below the table (issue 41).
    assert cells_of_row(page, "restore-random", "Effective MiB/s")[1] == (
        '412.0 (2.01x faster)<sup class="note-mark">1</sup>')
    assert "<li>One sample (each side): noise unknown, measure with --repeat 3</li>" in page
    said = "none marked where a run measured the operation once: one sample names no best, measure with --repeat 3"
    assert page.count(said) == 2   # under the speed table and the latency table


def test_settings_that_differ_come_first_and_are_flagged(compared):
    _, _, page = compared
    assert page.index('class="callout bad settings-differ"') < page.index('id="verdict"') < page.index('id="speed"')
    assert re.search(r"&#9888; jobs \(fio numjobs\)</span></td><td>1</td><td>4</td>", page)
    assert "the runs differ in jobs (fio numjobs): part of each margin may come from those settings" in page


def test_only_the_best_cell_of_a_row_is_marked(compared):
    _, _, page = compared
    speed = cells_of_row(page, "restore-random", "Effective MiB/s")
    assert speed == ["205.0", '<span class="strong best" style="background:#dff0d8;padding:0 3px" '
                              'title="best in this row">412.0 (2.01x faster)</span>']
    assert "none marked where a run measured the operation once" not in page
    # Equal speeds (within 2%): both are the best, neither wins.
    assert all('class="strong best"' in cell for cell in cells_of_row(page, "active-full", "Effective MiB/s"))
    latency = cells_of_row(page, "restore-random (read p99)", "p99 latency (ms)")
    assert latency[0] == "9.80" and "best" in latency[1] and "3.10" in latency[1]
    assert page.count('class="strong best"') == 6  # one per restore-random row, two per tied active-full row


def test_each_phase_gets_a_timeline_with_a_line_per_run(compared, compared_results):
    _, _, page = compared
    assert 'aria-label="Timeline of restore-random in every run"' in page
    assert 'aria-label="Timeline of active-full in every run"' in page
    assert "no samples for" not in page
    assert page == compare_html.render_comparison(compared[:2], results_dir=compared_results)  # deterministic


def test_html_render_comparison_is_the_compare_report(compared):
    linear, striped, page = compared
    assert 'id="verdict"' in html.render_comparison([linear, striped])


def test_same_settings_are_said_in_one_line(tmp_path):
    one = layout_run("a1", "", 100, 50.0, 1.0)
    two = layout_run("b2", "", 100, 50.0, 1.0)
    page = compare_html.render_comparison([one, two])
    assert "Same settings: a1 and b2 ran the same workload the same way." in page
    assert "settings-differ" not in page


def test_single_run_page_baseline_section_flags_settings_and_says_faster(tmp_path):
    baseline = layout_run("20261124T000000-aaaa", "", 205, 97.0, 9.8)
    run = layout_run("20261124T010000-bbbb", "striped", 412, 38.0, 3.1, jobs=4)
    page = html.render(run, results_dir=tmp_path, baseline=baseline)
    section = page[page.index('id="baseline"'):]
    assert "<h2>Against baseline 20261124T000000-aaaa</h2>" in section
    assert section.index("settings-differ") < section.index("this run against the baseline")
    # The one-sample caveat below the table (issue 41: a sentence in a cell widens the page).
    assert "<td>restore-random</td><td class=\"num\">205.0 MiB/s</td><td class=\"num\">412.0 MiB/s</td>" \
           "<td class=\"num\">2.01x faster<sup class=\"note-mark\">1</sup></td>" in section
    assert '<ol class="table-notes"><li>One sample (each side): noise unknown, measure with --repeat 3</li></ol>' \
           in section
    assert "slowdown" not in page.lower()
