"""The HTML report and its charts, on runs built here (and monitor CSVs written in tmp_path)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple

import pytest

pytest.importorskip("matplotlib", reason="the HTML report's charts need matplotlib (make test installs it)")

import matplotlib  # noqa: E402

from backupbench.cli.report_cmd import default_file_name  # noqa: E402
from backupbench.errors import InputError, NotFoundError  # noqa: E402
from backupbench.monitor import csvlog  # noqa: E402
from backupbench.report import charts, html, html_page, tables  # noqa: E402
from backupbench.results.runfiles import monitor_csv_path  # noqa: E402
from backupbench.results.location import run_folder  # noqa: E402
from backupbench.results.model import COMPLETE, FAILED, OperationRecord, RunRecord  # noqa: E402
from backupbench.results.phase import MonitorAccount

MiB = 2**20
TiB = 2**40
from report_support import CSV_HEADER, HOSTILE, fio_op, invoke, kb_run, monitor_csv, recipe_run, stored  # noqa: E402,F401

class ResourceScan(HTMLParser):
    """Every tag and every attribute that could make a browser fetch something."""

    URL_ATTRS = {"src", "href", "xlink:href", "action", "data", "poster", "srcset", "background", "formaction"}

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in self.URL_ATTRS and value is not None:
                self.urls.append(value)
            if name == "id":
                self.ids.append(value)

    handle_startendtag = handle_starttag


def scan(page: str) -> ResourceScan:
    parser = ResourceScan()
    parser.feed(page)
    return parser


class Rendered(NamedTuple):
    results: Path
    run: RunRecord
    page: str
    # matplotlib's settings just before and just after the rendering.
    rc_params: tuple[dict, dict] = ({}, {})


# A page takes about a second to render (a chart per phase): the tests that read the same run's
# page share one rendering per module, and must leave its run as they found it.
@pytest.fixture(scope="module")
def kb_page(tmp_path_factory) -> Rendered:
    """A kb2014 run, labelled, with secrets among its settings, and its page for 10 TiB of backups."""
    results = tmp_path_factory.mktemp("kb")
    run = kb_run(results)
    run.label = "new controller"
    run.settings.update(secret_key="hunter2", access_key="AKIAEXAMPLE")
    return Rendered(results, run, html.render(run, results_dir=results, backup_size=10 * TiB))


@pytest.fixture(scope="module")
def recipe_page(tmp_path_factory) -> Rendered:
    """Field note A's recipe run (two layouts) and its page."""
    results = tmp_path_factory.mktemp("recipe")
    run = recipe_run(results)
    before = dict(matplotlib.rcParams)
    page = html.render(run, results_dir=results)
    return Rendered(results, run, page, (before, dict(matplotlib.rcParams)))


# ---------------------------------------------------------------------------------------------


def test_page_has_the_operations_and_formatted_figures(kb_page):
    results, run, page = kb_page.results, kb_page.run, kb_page.page
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for text in ("active-full", "synthetic-full", "randrw w50% qd4", "1,728.7", "1,449.4", "3,457", "0.70 ms",
                 "55.5%", "1.2 ms", "Backup windows for 10 TiB", "Restore range: 2,504.9–2,603.7 MiB/s",
                 "xfs on sdb", "repo01", "fio-3.33", "8 GiB", "1 GiB (1,073,741,824 bytes)",
                 "The test file (1 GiB) is small"):
        assert text in page, text
    # The terminal's headline column stays bold.
    assert '<span class="strong">1,728.7</span>' in page
    # The exact commands from commands.txt.
    assert f"--output={run_folder(results, run.run_id)}/active-full.json" in page


def test_a_labelled_run_is_titled_with_its_label(kb_page):
    run, page = kb_page.run, kb_page.page
    assert "<dt>label</dt><dd>new controller</dd>" in page
    assert f"Run {run.run_id} (new controller) — /srv/backups" in page


def test_hostile_text_is_escaped(tmp_path):
    run = kb_run(tmp_path, target=f"/srv/{HOSTILE}", phases=["active-full"])
    run.notes.append('<img src="http://evil.example/x.png" onerror="alert(1)">')
    run.operations[0].name = f"active-full{HOSTILE}--><script>x()</script><!--"
    run.operations[0].pattern = '"><b>bold</b>'
    run.settings["label"] = "</style><script>bad()</script>"
    run.host["hostname"] = "<iframe src=//evil>"
    (run_folder(tmp_path, run.run_id) / "commands.txt").write_text(f"fio {HOSTILE}\n")
    page = html.render(run, results_dir=tmp_path)
    lowered = page.lower()
    assert "<script" not in lowered and "<img" not in lowered and "<iframe" not in lowered and "<b>" not in lowered
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&lt;img src=&quot;http://evil.example/x.png&quot;" in page
    assert scan(page).urls == [u for u in scan(page).urls if u.startswith("#")]


def test_no_remote_or_external_resources(tmp_path):
    # An S3 target is text, not a resource. One phase: every kind of chart, one timeline.
    run = kb_run(tmp_path, target="http://10.0.0.5:9000/backups", phases=["active-full"])
    page = html.render(run, results_dir=tmp_path)
    found = scan(page)
    assert "script" not in found.tags and "link" not in found.tags and "iframe" not in found.tags
    assert "img" not in found.tags or all(u.startswith("data:") for u in found.urls if not u.startswith("#"))
    for url in found.urls:
        assert url.startswith(("#", "data:")), url
    assert not re.search(r"url\(\s*['\"]?(?!#)", page), "CSS url() outside the page"
    assert "@import" not in page and "@font-face" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert "default-src 'none'" in page   # and the browser is told not to fetch anything anyway


def test_charts_are_inline_svg_with_unique_ids(kb_page):
    run, page = kb_page.run, kb_page.page
    # speed + latency + one timeline per phase
    assert page.count("<svg ") == 2 + len(run.operations)
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page and "<metadata>" not in page
    ids = scan(page).ids
    assert len(ids) == len(set(ids)) > 50
    referenced = set(re.findall(r'href="#([^"]+)"', page)) | set(re.findall(r"url\(#([^)]+)\)", page))
    assert referenced <= set(ids)
    assert "Effective speed per operation" not in page  # titles are drawn as paths (no fonts needed)...
    assert "<!--" not in page
    assert 'aria-label="Effective speed"' in page        # ...and named for readers and tests


def test_same_run_renders_the_same_bytes(kb_page):
    results, run, first = kb_page.results, kb_page.run, kb_page.page
    assert html.render(run, results_dir=results, backup_size=10 * TiB) == first
    figure = charts.speed_figure(run)
    assert charts.svg_bytes(figure) == charts.svg_bytes(charts.speed_figure(run))
    assert charts.png_bytes(figure) == charts.png_bytes(charts.speed_figure(run))
    assert charts.png_bytes(figure).startswith(b"\x89PNG")
    assert b"Date" not in charts.svg_bytes(figure) and b"https://" not in charts.svg_bytes(figure)


def test_rendering_leaves_matplotlib_settings_alone(recipe_page):
    before, after = recipe_page.rc_params
    assert before and after == before


def test_recipe_run_groups_speed_by_layout_and_plots_each_member(recipe_page):
    results, run, page = recipe_page.results, recipe_page.run, recipe_page.page
    rows, series = charts.speed_series(run)
    assert rows == ["active-full"]
    assert [(name, [round(v, 1) for v in values]) for name, values in series] == [("linear", [50.3]),
                                                                                   ("striped", [201.0])]
    folder = run_folder(results, run.run_id)
    linear = run.operations[0]
    series_csv = csvlog.read_csv(monitor_csv_path(folder, linear).read_text())
    assert series_csv.devices == ("dm-0", "vda", "vdb", "vdc", "vdd")
    assert charts.phase_devices(run, linear, series_csv) == ["vda", "vdb", "vdc", "vdd"]  # members, not dm-0
    assert series_csv.column("vda:wMB/s")[0] == 50.0 and series_csv.column("vdb:wMB/s")[0] == 0.0
    assert "Layouts compared" in page and '201.0 (4.00x faster)<sup class="note-mark">1</sup>' in page
    assert "<li>One sample (each side): noise unknown, measure with --repeat 3</li>" in page
    assert 'aria-label="Effective speed by layout"' in page
    assert 'aria-label="Monitor timeline of linear/active-full"' in page
    assert "read+write MiB/s per member disk, stacked: vda, vdb, vdc, vdd" in page
    # Each layout's commands.txt, under its layout's name.
    assert "<h3>linear</h3>" in page and "fio striped/active-full.fio" in page


def test_a_pools_arc_hit_and_fill_are_columns_only_where_a_phase_has_them(recipe_page, tmp_path):
    assert "ARC hit" not in recipe_page.page
    run = recipe_run(tmp_path)
    run.operations[1].figures.update({"zfs.arc_hit": 97.25, "zfs.pool_used": 12.0, "zfs.pool_allocated": 5.0 * MiB})
    page = html.render(run, results_dir=tmp_path)
    assert "ARC hit" in page and "pool used" in page and "97.2%" in page and "12.0%" in page
    from backupbench.report.tables import monitor_columns
    assert [heading for heading, _ in monitor_columns(run.operations)] == [
        "disk %util", "disk w_await", "ARC hit", "pool used"]
    assert [cell(run.operations[0].figures) for _, cell in monitor_columns(run.operations)][2:] == ["-", "-"]


def test_monitor_csv_parsing_and_paths(tmp_path):
    text = monitor_csv(["sdb"], {"sdb": 10.0}, samples=4)
    parsed = csvlog.read_csv(text)
    assert parsed.elapsed == (1.0, 2.0, 3.0, 4.0)
    assert parsed.column("%iowait") == (11.0, 12.0, 13.0, 14.0)
    assert parsed.column("sdb:%util")[2] != parsed.column("sdb:%util")[2]  # empty cell -> NaN
    assert csvlog.read_csv("").elapsed == ()
    assert charts.timeline_figure("empty", csvlog.read_csv(CSV_HEADER + "\n"), []) is None
    folder = tmp_path / "runs" / "r"
    folder.mkdir(parents=True)
    (tmp_path / "secret.csv").write_text(text)
    escaping = OperationRecord(name="x", pattern="", monitor=MonitorAccount(csv=["../../secret.csv"]))
    assert monitor_csv_path(folder, escaping) is None
    # A layout measured with several workloads records the path relative to the layout folder.
    (folder / "striped" / "1-kb2014").mkdir(parents=True)
    (folder / "striped" / "1-kb2014" / "active-full.monitor.csv").write_text(text)
    nested = OperationRecord(name="striped/1-kb2014/active-full", pattern="",
                             layout="striped/1-kb2014", monitor=MonitorAccount(csv=["1-kb2014/active-full.monitor.csv"]))
    assert monitor_csv_path(folder, nested) == (folder / "striped/1-kb2014/active-full.monitor.csv").resolve()


def test_missing_run_folder_and_csv_are_said_not_fatal(tmp_path):
    run = kb_run(tmp_path, phases=["active-full", "synthetic-full"])
    (run_folder(tmp_path, run.run_id) / "active-full.monitor.csv").unlink()
    page = html.render(run, results_dir=tmp_path)
    assert "active-full: monitor CSV active-full.monitor.csv not found" in page
    elsewhere = tmp_path / "other"
    page = html.render(run, results_dir=elsewhere)
    assert "is not here" in page and "1,728.7" in page and "Monitor timelines" not in page


def test_baseline_slowdown_and_failed_run(tmp_path):
    phases = ["active-full", "restore-random"]
    baseline = kb_run(tmp_path, phases=phases)
    run = kb_run(tmp_path, run_id="20261122T020000-cccc", scale=0.5, phases=phases)
    run.status, run.error = FAILED, "fio failed (exit 1): <disk gone>"
    run.operations[-1].status = FAILED
    page = html.render(run, results_dir=tmp_path, baseline=baseline)
    assert f"Against baseline {baseline.run_id}" in page and "2.00x" in page
    assert "This run did not complete" in page and "&lt;disk gone&gt;" in page
    assert '<span class="status">failed</span>' in page


def test_small_file_and_s3_phases_get_their_tables(tmp_path):
    """Each phase in the table of what its workload declared it measures (a recipe's [hosts] run
    of a small-file and an S3 workload: each stored under '<n>-<kind>/')."""
    workloads = [{"kind": "smallfiles"}, {"kind": "s3"}]
    run = RunRecord(run_id="r1", kind="recipe", target="/srv", settings={"recipe": {"workload": workloads}},
                    status=COMPLETE)
    run.operations = [
        OperationRecord(name="1-smallfiles/create", pattern="create none", status=COMPLETE,
                        figures={"files_per_s": 1234.0, "effective_bw": 5 * MiB, "file_p99_lat": 2.5e6, "mismatches": 0}),
        OperationRecord(name="2-s3/put", pattern="PUT 1 MiB x100", status=COMPLETE,
                        figures={"objects_per_s": 321.0, "effective_bw": 321 * MiB, "lat_p99_ns": 9e7, "errors": 0}),
    ]
    page = html.render(run, results_dir=tmp_path)
    assert "files/s" in page and "1,234" in page and "objects/s" in page and "90.00 ms" in page
    assert [spec.columns for spec in tables.table_specs(run)] == [tables.FILE_COLUMNS, tables.S3_COLUMNS]
    rows, series = charts.latency_series(run)
    assert rows == ["1-smallfiles/create", "2-s3/put"] and [name for name, _ in series] == ["per-file p99",
                                                                                              "request p99"]


def test_secrets_in_settings_are_not_shown(kb_page):
    run, page = kb_page.run, kb_page.page
    assert run.settings["secret_key"] == "hunter2" and run.settings["access_key"] == "AKIAEXAMPLE"
    assert "hunter2" not in page and "AKIAEXAMPLE" not in page and "(not shown)" in page


def test_comparison_of_runs(tmp_path):
    one, two = kb_run(tmp_path), kb_run(tmp_path, run_id="20261122T020000-cccc", scale=2.0)
    two.operations = two.operations[:2]
    page = html.render_comparison([one, two], backup_size=10 * TiB)
    assert one.run_id in page and two.run_id in page
    assert '3,457.4 (2.00x faster)<sup class="note-mark">1</sup>' in page and 'aria-label="Effective speed across runs"' in page
    assert "Backup windows for 10 TiB (hours)" in page
    found = scan(page)
    assert all(u.startswith("#") for u in found.urls) and "script" not in found.tags
    assert html.render_comparison([one, two]) == html.render_comparison([one, two])
    rows, series = charts.comparison_series([one, two])
    assert rows[:2] == ["active-full", "synthetic-full"] and series[1][1][2] is None


def test_write_replaces_the_file(tmp_path):
    target = tmp_path / "r.html"
    target.write_text("old")
    assert html_page.write(target, "<!DOCTYPE html>new") == target
    assert target.read_text() == "<!DOCTYPE html>new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


# ---------------------------------------------------------------------------------------------
# The command


def test_report_command_writes_the_latest_run_to_the_current_folder(tmp_path, monkeypatch):
    results = stored(tmp_path / "results", kb_run(tmp_path / "results", phases=["active-full"]))
    monkeypatch.chdir(tmp_path)
    done = invoke("--results", str(results), "--backup-size", "10TiB")
    assert done.exception is None, done.output
    written = tmp_path / "report-20261122T000000-aaaa.html"
    assert done.output.strip() == str(written)
    page = written.read_text()
    assert "Backup windows for 10 TiB" in page and "<svg " in page


def test_report_command_compares_several_runs(tmp_path):
    results = tmp_path / "results"
    second = kb_run(results, run_id="20261122T020000-cccc", phases=["active-full"])
    second.started_at = "2026-11-22T02:00:00+00:00"
    stored(results, kb_run(results, phases=["active-full"]), second)
    out = tmp_path / "cmp.html"
    done = invoke("20261122T00", "20261122T02", "--html", str(out), "--results", str(results))
    assert done.exception is None, done.output
    assert "2 runs compared" in out.read_text()
    assert default_file_name([RunRecord("a", "k", "t", {}), RunRecord("b", "k", "t", {})]) == "report-compare-a_b.html"


@pytest.mark.parametrize("args, error, match", [
    (["nope"], NotFoundError, "no run 'nope'"),
    (["--backup-size", "lots"], InputError, "--backup-size"),
    (["latest", "20261122T00"], InputError, "same run"),
    (["latest", "20261122T00", "--baseline", "latest"], InputError, "--baseline applies to one RUN"),
    (["--html", "/nonexistent-folder/r.html"], InputError, "does not exist"),
])
def test_report_command_bad_input_is_one_typed_error(tmp_path, args, error, match):
    results = stored(tmp_path / "results", kb_run(tmp_path / "results"))
    done = invoke(*args, "--results", str(results))
    assert isinstance(done.exception, error) and re.search(re.escape(match), done.exception.message)
