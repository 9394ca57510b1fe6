"""`backupbench report` on a real run, opened in headless Chromium with the network cut off:
the page renders fully (tables, inline SVG charts, a non-blank screenshot, a PDF) and makes
no request at all (Chromium's own net log, checked against a page that does make some)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from browser_support import CHROMIUM, HEIGHT, WIDTH, chromium, measured, page_requests, report
from report_support import policy_run, stored

pytestmark = pytest.mark.real


PAGE_WIDTH = 1400   # issue 41: a report reads on a 1400 px screen without scrolling sideways
FITS = """({width: innerWidth, page: document.documentElement.scrollWidth,
           tables: [...document.querySelectorAll('table')].map(table => ({
             widths: [table.scrollWidth, table.clientWidth, table.parentElement.scrollWidth,
                      table.parentElement.clientWidth],
             title: (table.previousElementSibling || table.querySelector('th')).textContent}))})"""


@dataclass
class Pages:
    """`backupbench report` on stored runs, and the page it wrote as headless Chromium shows it."""

    cli: Callable
    folder: Path

    def reported(self, *runs, html: str | None = None) -> Path:
        """The runs stored, then reported (into `html` under the test's folder, or the report's
        own file name there): the page written."""
        stored(self.cli.results, *runs)
        into = ["--html", str(self.folder / html)] if html else []
        done = report(self.cli, *(run.run_id for run in runs), *into, cwd=self.folder)
        assert done.returncode == 0, done.stderr
        return self.folder / html if html else Path(done.stdout.strip())

    def dom(self, url: str) -> str:
        return chromium(self.folder, url, "--dump-dom").stdout

    def overflow(self, page: Path, width: int = PAGE_WIDTH) -> list[str]:
        """What of `page` laid out `width` px wide scrolls sideways: the page itself, any table
        wider than its box or than the box around it (the box would scroll); [] when all fit."""
        found = measured(self.folder, page, FITS, width)
        assert found["width"] == width, found["width"]   # the window really was that wide
        wide = [f"page: {found['page']} px"] if found["page"] > width else []
        return wide + [f"{table['title'][:60]!r}: {table['widths']}" for table in found["tables"]
                       if table["widths"][0] > table["widths"][1] or table["widths"][2] > table["widths"][3]]

    def screenshot(self, url: str, name: str, height: int = HEIGHT):
        """The page drawn WIDTH x height into name.png: its pixels, RGB in 0..1."""
        import matplotlib.image

        shot = self.folder / f"{name}.png"
        chromium(self.folder, url, f"--screenshot={shot}", f"--window-size={WIDTH},{height}")
        return matplotlib.image.imread(shot)[:, :, :3]


@pytest.fixture
def pages(cli, tmp_path) -> Pages:
    """Skips, saying how to get them, without Chromium or matplotlib (make test installs both)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs it: apt-get install chromium)")
    pytest.importorskip("matplotlib", reason="the report's charts need matplotlib (make test installs it)")
    return Pages(cli, tmp_path)


@pytest.fixture
def written_report(pages, cli, tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (make test installs it)")
    repo = tmp_path / "repo"
    repo.mkdir()
    run = cli("run", str(repo), "--size", "16MiB", "--runtime", "1s", "--operations", "active-full,restore-random",
              "--json")
    assert run.returncode == 0, run.stderr
    run_id = json.loads(run.stdout)["run"]["id"]
    done = report(cli, "--backup-size", "10TiB", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path == tmp_path / f"report-{run_id}.html" and path.is_file()
    return path


def test_report_renders_fully_in_chromium_offline(written_report, pages, tmp_path):
    url = written_report.as_uri()
    dom = pages.dom(url)
    assert "<table" in dom and "active-full" in dom and "restore-random" in dom
    assert "Backup windows for 10 TiB" in dom
    # The headline first: the slower of the two phases, the figure a backup waits on.
    headline = re.search(r'<p class="run-headline"><strong>The slowest phase is (active-full|restore-random) at ', dom)
    assert headline and headline.start() < dom.index("<table")
    # speed + latency, inline; a phase of 1 s (and 2 s ramp) has under 5 monitor samples as a rule:
    # no timeline then, and the page says why in its place (a slow host may sample a phase longer)
    drawn = dom.count('aria-label="Monitor timeline of')
    # and each phase's latency: its histogram and its seconds (report/latency_charts.py)
    assert dom.count('aria-label="Latency of') == 2
    assert dom.count("<svg ") == 2 + 2 + drawn, dom.count("<svg ")
    short = re.findall(r": no timeline: only \d monitor samples? \(fewer than 5 show no shape over time", dom)
    assert len(short) == 2 - drawn
    assert re.search(r"<path[^>]+d=\"M ", dom)
    assert "<script" not in dom and "<link" not in dom
    assert pages.overflow(written_report) == []

    pixels = pages.screenshot(url, "report")
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    white = (pixels > 0.97).all(axis=2)
    dark = (pixels < 0.3).all(axis=2)                       # text and table rules
    r, g, b = pixels[:, :, 0], pixels[:, :, 1], pixels[:, :, 2]
    bars = (r < 0.15) & (g > 0.35) & (g < 0.55) & (b > 0.6)  # reads' blue (#0072B2): restore-random's p99
    assert white.mean() < 0.97, "the screenshot is (almost) blank"
    assert dark.sum() > 5_000, "no text drawn"
    assert bars.sum() > 5_000, "no chart drawn"

    pdf = tmp_path / "report.pdf"
    chromium(tmp_path, url, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 20_000


def test_report_makes_no_network_request(written_report, tmp_path):
    # Without its Content-Security-Policy too: the page itself must reference nothing remote.
    bare = tmp_path / "no-csp.html"
    page = written_report.read_text()
    bare.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page))
    assert "Content-Security-Policy" not in bare.read_text()
    net_log = tmp_path / "net.json"
    chromium(tmp_path, bare.as_uri(), "--dump-dom", f"--log-net-log={net_log}", "--net-log-capture-mode=Everything")
    assert page_requests(net_log) == []

    # The check sees requests when a page does make them.
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><p>x</p><img src="http://img.example.invalid/a.png">'
                     '<link rel="stylesheet" href="https://cdn.example.invalid/b.css">')
    leaky_log = tmp_path / "leaky.json"
    chromium(tmp_path, leaky.as_uri(), "--dump-dom", f"--log-net-log={leaky_log}",
             "--net-log-capture-mode=Everything", name="leaky-profile")
    assert sorted(page_requests(leaky_log)) == ["http://img.example.invalid/a.png", "https://cdn.example.invalid/b.css"]


# ---------------------------------------------------------------------------------------------
# A multi-host run (`run --hosts`, issue 15), stored by hand the way runner/hosts.py stores one:
# each operation's figures the hosts' total, each host's own in its HostAccount (results/phase.py).

MiB = 2**20
SLOW_RED = (0xC6 / 255, 0x28 / 255, 0x28 / 255)       # report/hosts.py: slow rows and bar edges
# The third host's bars (report/palette.py THINGS[2]): hosts take the page's colours of things
# first, and no other chart of this run draws a third thing.
HOST_PURPLE = (0xCC / 255, 0x79 / 255, 0xA7 / 255)


def _host(mib: float, p99_ms: float, way: str) -> dict[str, float]:
    return {"effective_bw": mib * MiB, f"{way}_bw": mib * MiB, f"{way}_iops": mib * 2, f"{way}_p99_lat": p99_ms * 1e6}


def _host_op(name: str, pattern: str, way: str, hosts: dict[str, dict[str, float]], lost: dict[str, str]):
    from backupbench.results.model import COMPLETE, OperationRecord
    from backupbench.results.phase import HostAccount

    figures = {k: sum(h[k] for h in hosts.values()) for k in ("effective_bw", f"{way}_bw", f"{way}_iops")}
    figures[f"{way}_p99_lat"] = max(h[f"{way}_p99_lat"] for h in hosts.values())
    figures["hosts_reporting"] = float(len(hosts))
    return OperationRecord(name, pattern, COMPLETE, "2026-11-24T00:00:00+00:00", "2026-11-24T00:00:30+00:00",
                           figures, {"p99_total": "p99 of the total: worst host's"}, {"hosts_reporting": "hosts"},
                           hosts=HostAccount([hosts], lost))


@pytest.fixture
def multi_host_report(pages):
    from backupbench.results.model import COMPLETE, RunRecord

    run = RunRecord("20261124T000000-0badc0de", "kb2014", "10.0.0.5,10.0.0.6,10.0.0.7:/backup",
                    {"hosts": ["10.0.0.5", "10.0.0.6", "10.0.0.7"], "host_path": "/backup"}, status=COMPLETE,
                    started_at="2026-11-24T00:00:00+00:00", finished_at="2026-11-24T00:01:00+00:00",
                    notes=["host 10.0.0.7 lost during restore-random: connection refused; the run went on without it"])
    run.operations = [
        _host_op("active-full", "write qd1", "write", {"10.0.0.5": _host(500, 4.0, "write"),
                 "10.0.0.6": _host(390, 9.5, "write"), "10.0.0.7": _host(510, 3.8, "write")}, {}),
        _host_op("restore-random", "randread qd4", "read", {"10.0.0.5": _host(200, 2.0, "read"),
                 "10.0.0.6": _host(180, 2.5, "read")}, {"10.0.0.7": "connection refused"}),
    ]
    path = pages.reported(run)
    assert path == pages.folder / f"report-{run.run_id}.html" and path.is_file()
    return run.run_id, path


def _near(pixels, colour, tolerance: float = 0.06):
    import numpy

    return (numpy.abs(pixels - numpy.array(colour)) < tolerance).all(axis=2)


def test_multi_host_report_shows_hosts_slow_host_and_chart_in_chromium(multi_host_report, pages, tmp_path):
    run_id, path = multi_host_report
    dom = pages.dom(path.as_uri())
    assert f"Hosts of run {run_id}" in dom
    assert "host 10.0.0.6 is 22% under the median in active-full" in dom
    assert "-22% SLOW" in dom and "median of 3 hosts" in dom and "connection refused" in dom
    assert 'aria-label="Each operation per host against the median"' in dom
    # speed, latency, hosts; no monitor timelines (the monitor sampled none of the hosts' disks)
    assert dom.count("<svg ") == 3, dom.count("<svg ")
    assert "<script" not in dom and "<link" not in dom
    assert pages.overflow(path) == []

    pixels = pages.screenshot(path.as_uri(), "hosts", HEIGHT * 2)
    assert _near(pixels, SLOW_RED).sum() > 300, "the slow host is not marked in red"
    assert _near(pixels, HOST_PURPLE).sum() > 3_000, "no per-host bars drawn"

    net_log = tmp_path / "hosts-net.json"
    chromium(tmp_path, path.as_uri(), "--dump-dom", f"--log-net-log={net_log}", "--net-log-capture-mode=Everything",
             name="hosts-profile")
    assert page_requests(net_log) == []


def test_show_prints_the_hosts_table_and_slow_note(multi_host_report, cli):
    run_id, _ = multi_host_report
    shown = cli("show", run_id, env={"COLUMNS": "140"})
    assert shown.returncode == 0, shown.stderr
    assert f"Hosts of run {run_id}" in shown.stdout
    assert "note: host 10.0.0.6 is 22% under the median in active-full" in shown.stdout
    assert shown.stdout.index("Hosts of run") < shown.stdout.index("note: host 10.0.0.6")


# ---------------------------------------------------------------------------------------------
# Several runs compared (`report RUN RUN`, issue 16): labelled, settings that differ flagged, a
# verdict sentence, only each row's best cell marked.

BEST_GREEN = (0xDF / 255, 0xF0 / 255, 0xD8 / 255)   # report/compare_html.py BEST_STYLE
DIFFER_RED = (0xFD / 255, 0xE8 / 255, 0xE8 / 255)   # html_page.py .callout.bad background


def _layout_run(run_id: str, label: str, restore_mib: float, util: float, jobs: int):
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    run = RunRecord(run_id, "kb2014", "/srv/backups", {"jobs": jobs, "iodepth": None}, host={"hostname": "repo01"},
                    status=COMPLETE, started_at="2026-11-24T00:00:00+00:00", finished_at="2026-11-24T00:01:00+00:00",
                    label=label)
    run.operations = [
        OperationRecord("active-full", "write qd1", COMPLETE, "2026-11-24T00:00:00+00:00", "2026-11-24T00:00:30+00:00",
                        {"effective_bw": 300 * MiB, "write_bw": 300 * MiB, "write_p99_lat": 2e6, "members_util": 50.0}),
        OperationRecord("restore-random", "randread qd1", COMPLETE, "2026-11-24T00:00:30+00:00",
                        "2026-11-24T00:01:00+00:00", {"effective_bw": restore_mib * MiB, "read_bw": restore_mib * MiB,
                                                      "read_p99_lat": 3e6, "members_util": util}),
    ]
    for op in run.operations:  # three samples each, 1% apart: a verdict can name a winner
        op.samples = [{**op.figures, "effective_bw": op.figures["effective_bw"] * factor} for factor in (0.99, 1.0, 1.01)]
    return run


def test_compare_report_shows_the_verdict_in_chromium(pages):
    runs = [_layout_run("20261124T000000-1111aaaa", "lvm-linear", 205, 97.0, 1),
            _layout_run("20261124T010000-2222bbbb", "lvm-striped", 412, 38.0, 4)]
    path = pages.reported(*runs, html="compare.html")
    url = path.as_uri()

    dom = pages.dom(url)
    verdict = "lvm-striped wins restore-random: 412.0 MiB/s vs 205.0 MiB/s for lvm-linear (2.01x faster"
    assert verdict in dom
    assert dom.index("Settings differ") < dom.index(verdict) < dom.index("Effective MiB/s")
    assert '<th scope="col" class="num">lvm-linear</th><th scope="col" class="num">lvm-striped</th>' in dom
    assert "<script" not in dom and "<link" not in dom
    assert pages.overflow(path) == []

    pixels = pages.screenshot(url, "compare")
    assert _near(pixels, DIFFER_RED, 0.02).sum() > 5_000, "the settings that differ are not flagged"
    assert _near(pixels, BEST_GREEN, 0.02).sum() > 300, "no best cell marked"


# ---------------------------------------------------------------------------------------------
# A recipe run with a [policy] (issue 27): the plan at the run's own speeds, a fill chart per candidate.

PLAN_FILL = (0x2F / 255, 0x4B / 255, 0x7C / 255)   # report/palette.py FILL: a fill that fits
PLAN_OVER = (0xC6 / 255, 0x28 / 255, 0x28 / 255)   # report/palette.py BAD: a fill past 100%


def test_a_run_with_a_policy_shows_its_repository_plan_in_chromium(pages, tmp_path):

    from backupbench.recipe import model
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    recipe = model.load(Path(__file__).parents[2] / "examples" / "repository-plan.toml")
    run = RunRecord("20261126T000000-0badc0df", "recipe", "lab", {"recipe": recipe.model_dump(mode="json")},
                    status=COMPLETE, started_at="2026-11-26T00:00:00+00:00", finished_at="2026-11-26T00:10:00+00:00")
    run.operations = [OperationRecord(name=f"draid2/{operation}", pattern="", status=COMPLETE,
                                      figures={"effective_bw": mib * MiB}, layout="draid2")
                      for operation, mib in (("active-full", 1400), ("synthetic-full", 380))]
    path = pages.reported(run)
    dom = pages.dom(path.as_uri())
    assert "Repository plan ([policy] at this run's speeds)" in dom
    assert "Restore points at their peak: 30 dailies + 8 weeklies + 12 monthlies + 3 yearlies" in dom
    assert "No candidate meets the policy" in dom and "What would change it" in dom
    assert "draid2: active-full, synthetic-full measured once (one sample)" in dom
    assert "raid6: active-full, synthetic-full, rebuild from the per-disk model" in dom
    for built in ("raid6", "raidz2", "draid2:3d:24c:1s", "minio-ec EC:4, 2 sets of 12"):
        assert f'aria-label="Fill over time of {built}"' in dom
    assert "<script" not in dom and "<link" not in dom
    # No candidate passes: the headline says the nearest miss and what would change it.
    headline = re.search(r'<p class="run-headline"><strong>No candidate meets the policy: the nearest, '
                         r".+? of 24 x 16 TB, misses \w+ by .*?; what would change it: ", dom)
    assert headline and headline.start() < dom.index("<table")
    assert pages.overflow(path) == []

    pixels = pages.screenshot(path.as_uri() + "#repository-plan", "plan", HEIGHT * 3)
    # Each candidate's line is drawn in one of the two colours no other chart of this page uses.
    assert _near(pixels, PLAN_FILL).sum() + _near(pixels, PLAN_OVER).sum() > 500, "no fill line drawn"
    net_log = tmp_path / "plan-net.json"
    chromium(tmp_path, path.as_uri(), "--dump-dom", f"--log-net-log={net_log}", "--net-log-capture-mode=Everything",
             name="plan-profile")
    assert page_requests(net_log) == []


def test_a_run_with_a_policy_opens_with_its_verdict_and_fits_1400_px_in_chromium(pages):
    # Issue 41: the decision first, and every table of the page on a 1400 px screen.
    path = pages.reported(policy_run(), html="plan.html")
    dom = pages.dom(path.as_uri())
    headline = re.search(r'<p class="run-headline"><strong>Plan at this run\'s speeds: (.+?) of 24 x 16 TB meets the '
                         r"policy; binding: (capacity|window|restore|rebuild), [\d.,]+ (TB|GB|h|min) \(\d+%\) to spare\.",
                         dom)
    assert headline, dom[:dom.index("</header>")]
    first_table = dom.index("<table")
    assert headline.start() < first_table
    # The plan's section before the run's own figures; in it the candidates first, every column there.
    assert dom.index('id="repository-plan"') < first_table < dom.index('id="results"')
    assert "RTO 12.0 h" in dom and "2nd failure meanwhile" in dom and f"passes ({headline.group(2)} binds)" in dom
    assert pages.overflow(path) == []


# ---------------------------------------------------------------------------------------------
# Issue 26's report edges: a mixed S3 phase per request kind, the headline, one colour per meaning.

ACCENT = (0x0B / 255, 0x5C / 255, 0xAD / 255)        # html_page.py --accent: the headline's edge


def _mixed_s3_run():
    from backupbench.engines.s3_records import OpRecord, mixed_figures, multipart_objects
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    records = ([OpRecord("put", k, 0, 0, 0, 400_000_000, 80 * MiB, 200, "") for k in range(3)]
               + [OpRecord("get", 10 + k, 1, 0, 1_000_000, 2_000_000 + k * 100_000, MiB, 200, "") for k in range(9)])
    figures = {**mixed_figures(records), "multipart_objects": float(multipart_objects(records, 64 * MiB))}
    run = RunRecord("20261126T000000-5353aaaa", "s3", "http://127.0.0.1:9000/bucket",
                    {"multipart_threshold": 64 * MiB, "part_size": 16 * MiB}, status=COMPLETE,
                    started_at="2026-11-26T00:00:00+00:00", finished_at="2026-11-26T00:01:00+00:00")
    run.operations = [OperationRecord("mixed", "PUT 25% GET 75%", COMPLETE, "2026-11-26T00:00:00+00:00",
                                      "2026-11-26T00:00:30+00:00", figures)]
    return run


def test_mixed_s3_phase_shows_each_request_kind_under_a_headline_in_chromium(pages):
    path = pages.reported(_mixed_s3_run(), html="s3.html")
    url = path.as_uri()
    dom = pages.dom(url)
    assert pages.overflow(path) == []
    assert dom.index('<p class="run-headline"><strong>mixed ran at ') < dom.index("<table")
    put = re.search(r"<td>  ↳ PUT</td><td>25% of its requests</td>(.*?)</tr>", dom)
    get = re.search(r"<td>  ↳ GET</td><td>75% of its requests</td>(.*?)</tr>", dom)
    assert put and "400.00 ms" in put.group(1) and "3 requests" in put.group(1)
    assert get and "2.80 ms" in get.group(1) and "400.00 ms" not in get.group(1)
    assert "3 objects went up as multipart (over 64 MiB, 16 MiB parts)" in dom

    pixels = pages.screenshot(url, "s3")
    assert _near(pixels, ACCENT, 0.04).sum() > 60, "the headline is not drawn"


def _layouts_run():
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    run = RunRecord("20261126T010000-1a1a0000", "recipe", "two-layouts", {"recipe": {"name": "two-layouts"}},
                    status=COMPLETE, started_at="2026-11-26T01:00:00+00:00", finished_at="2026-11-26T01:05:00+00:00")
    for layout, speed in (("linear", 50.0), ("striped", 200.0)):
        for phase, way in (("active-full", "write"), ("restore-random", "read")):
            run.operations.append(OperationRecord(
                f"{layout}/{phase}", f"{way} qd1", COMPLETE, "2026-11-26T01:00:00+00:00", "2026-11-26T01:00:30+00:00",
                {"effective_bw": speed * MiB, f"{way}_bw": speed * MiB, f"{way}_p99_lat": 2e6}, layout=layout))
    return run


def test_layouts_and_kinds_of_figure_keep_their_colours_in_chromium(pages):
    from backupbench.report import palette

    path = pages.reported(_layouts_run(), html="layouts.html")
    url = path.as_uri()
    dom = pages.dom(url)
    assert pages.overflow(path) == []
    # One sample each: the headline says no layout can be named, and how to find out.
    assert '<p class="run-headline"><strong>No layout can be named the fastest: the comparison of active-full has one sample' in dom
    assert "--repeat 3" in dom[:dom.index("</header>")]

    pixels = pages.screenshot(url + "#charts", "layouts")

    def rgb(colour: str) -> tuple[float, ...]:
        return tuple(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))

    # The speed chart in the layouts' colours, the latency chart in reads' and writes'.
    for what, colour in (("linear", palette.THINGS[0]), ("striped", palette.THINGS[1]),
                         ("read", palette.READ), ("write", palette.WRITE)):
        assert _near(pixels, rgb(colour)).sum() > 1_000, f"no {what} bars in {colour}"


# ---------------------------------------------------------------------------------------------
# Restores of existing files (issue 39): the files table and each file's extent map, drawn.

READ_BLUE = (0x00 / 255, 0x72 / 255, 0xB2 / 255)   # report/palette.py READ: a file's own extents


def test_a_restore_run_shows_each_files_extent_map_in_chromium(pages, cli, tmp_path):
    import os

    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (make test installs it)")
    repo = tmp_path / "repo"
    repo.mkdir()
    files = []
    for name in ("job.vbk", "job-1.vib"):
        path = repo / name
        path.write_bytes(os.urandom(4 * 2**20))
        files.append(str(path))
    done = cli("run", "--workload", "restore", *files, "--runtime", "1s", "--ramp", "0", "--quiet", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run"]["id"]
    page = tmp_path / "restore.html"
    reported = report(cli, run_id, "--html", str(page), cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    dom = pages.dom(page.as_uri())
    assert "Files restored (read only)" in dom and "<script" not in dom
    for name in ("job.vbk", "job-1.vib"):
        assert f'aria-label="Extent map of {repo / name}"' in dom and f"Extent map of {repo / name}:" in dom
    section = dom[dom.index("Files restored (read only)"):]
    assert "model" in section and "a disk of 250 MB/s, 8 ms access" in section
    assert pages.overflow(page) == []
    pixels = pages.screenshot(page.as_uri() + "#results", "restore", height=3000)
    assert _near(pixels, READ_BLUE, 0.03).sum() > 200, "no extent drawn in the read colour"
