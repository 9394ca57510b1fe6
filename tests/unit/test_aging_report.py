"""An aging run read back by simulated day (analysis/aging.py), its headline, its table and
curves (report/aging.py, report/aging_charts.py), and the repository plan taking its restores
at the age planned for (sizing/aged_speeds.py), on runs made by hand (tests/aging_support.py)."""

from __future__ import annotations

import io

import pytest
from aging_support import MiB, aging_run, job
from rich.console import Console

from backupbench.analysis.aging import aged, aging_series
from backupbench.analysis.headline import run_headline
from backupbench.errors import InputError
from backupbench.report import charts, palette
from backupbench.report.aging import aging_html, aging_tables
from backupbench.report.aging_charts import aging_figure
from backupbench.report.files import files_table
from backupbench.report.palette import Colours
from backupbench.report.terminal import run_report
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.sizing.aged_speeds import age_days
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.measured_speeds import assign, measured_layouts
from backupbench.sizing.policy import BackupPolicy, DiskModel
from backupbench.sizing.repository_plan import plan_repository
from backupbench.workloads.aging_run import parse_phase

TB = 10**12


def text(renderable) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


# ---- reading the days back --------------------------------------------------------------------

def test_the_phase_names_read_back():
    assert parse_phase("day-035:restore-random:oldest") == (35, "restore-random", "oldest")
    assert parse_phase("day-120:job") == (120, "job", "")
    for other in ("active-full", "day-035", "day-x:job", "day-035:job:newest", "day-035:restore-random",
                  "day-035:restore-random:middle"):
        assert parse_phase(other) is None, other


def test_an_aging_run_by_day_and_by_layout():
    (series,) = aging_series(aging_run())
    assert [day.day for day in series.days] == [0, 14, 28, 42] and series.group == ""
    assert series.days[0].restore("restore-sequential").figures["effective_bw"] == 1000 * MiB
    assert series.days[0].restore("restore-random", "oldest") is None   # day 0's oldest point is the newest full
    assert series.days[3].job_figure("space_vs_plan") == 0.95
    # A job of 0.05 s on a 128 MiB full, scaled linearly to 1 TiB: 0.05 x 8,192 s.
    assert series.job_hours_per_tib(series.days[1]) == pytest.approx(0.05 * 8192 / 3600)
    # A recipe's two layouts, each its own series; another workload's phases are none of them.
    run = aging_run(group="xfs", layout="xfs")
    run.operations += aging_run(group="btrfs", layout="btrfs").operations
    run.operations.append(OperationRecord(name="xfs/active-full", pattern="write", status=COMPLETE,
                                          figures={"effective_bw": 1.0}, layout="xfs"))
    assert [(s.group, s.layout, len(s.days)) for s in aging_series(run)] == [("xfs", "xfs", 4), ("btrfs", "btrfs", 4)]
    assert aging_series(RunRecord(run_id="x", kind="kb2014", target="/srv", settings={})) == []


def test_the_headline_says_how_the_newest_full_aged_with_its_noise():
    one = run_headline(aging_run())
    # 700 MiB/s on day 42 against 1,000 on day 0: 70%; the model's 82 against 250: 33%.
    assert one.text == ("After 42 simulated days the newest full restores sequentially at 70% of day one's speed "
                        "(700.0 MiB/s against 1,000.0 MiB/s; one sample each: noise unknown, measure with --repeat 3)"
                        "; on the model's spinning disk at 33%")
    sampled = run_headline(aging_run(sequential={0: [990.0, 1000.0, 1010.0], 42: [690.0, 700.0, 710.0]}))
    found = aged(aging_series(aging_run(sequential={0: [990.0, 1000.0, 1010.0], 42: [690.0, 700.0, 710.0]}))[0])
    low, high = found.interval
    assert low < 0.7 < high and f"95% interval {low:.0%}-{high:.0%}, 3 samples each" in sampled.text
    # Two layouts: each says its own.
    run = aging_run(group="xfs", layout="xfs")
    run.operations += aging_run(group="btrfs", layout="btrfs", sequential={42: 500.0}).operations
    assert "on xfs: the newest full restores sequentially at 70%" in run_headline(run).text
    assert "on btrfs: the newest full restores sequentially at 50%" in run_headline(run).text
    # One measured day has nothing to compare.
    assert aged(aging_series(aging_run(days=(0,)))[0]) is None


# ---- the report -------------------------------------------------------------------------------

def test_the_terminal_shows_a_table_by_day_and_no_files_table():
    run = aging_run()
    assert files_table(run) is None   # one file is restored on several days: the table by day shows them
    (table,) = aging_tables(run)
    shown = text(table)
    assert "The repository over its life: by simulated day" in shown
    # Day 42: the job, its time scaled to 1 TiB, space 0.950x, the newest full's 211 extents, the restores
    # measured (and the model's in brackets), the free space's 47 extents, 4.2% under 1 MiB.
    line = next(row for row in shown.splitlines() if row.lstrip("│ ").startswith("42 "))
    for cell in ("synthetic-full", "0.05", "0.11", "0.950x", "211", "700.0 (82.0)", "400.0 (29.0)", "900.0 (200.0)",
                 "300.0 (40.0)", "47 (4.2%)"):
        assert cell in line, cell
    assert "in brackets the same file on the model's spinning disk (250 MB/s, 8 ms access)" in shown.replace("\n", " ")
    assert "The repository over its life" in text(run_report(run))


def test_the_page_draws_the_curves_in_the_palettes_colours(tmp_path):
    run = aging_run()
    page = aging_html(run, tmp_path)
    assert "The repository over its life: by simulated day" in page and page.count("<svg") == 1
    # No map files in this folder: no extent maps, no error.
    assert "Extent map" not in page
    colours = Colours()
    (series,) = aging_series(run)
    svg = charts.inline_svg(aging_figure(series, colours), "t")
    for colour in (palette.JOB_TIME, palette.FILL, palette.FREE_SPACE, colours.of("newest full"),
                   colours.of("oldest point")):
        assert colour.lower() in svg.lower(), colour
    assert palette.BAD.lower() not in svg.lower()   # the space never passed the plan
    over = aging_run()
    over.operations[0] = job(0, 1.2)
    assert palette.BAD.lower() in charts.inline_svg(aging_figure(aging_series(over)[0], Colours()), "t").lower()
    assert aging_figure(aging_series(aging_run(days=(0,)))[0]) is None
    assert len(charts.png_bytes(aging_figure(series))) > 10_000


def test_a_day_without_a_restore_or_free_space_figure_still_draws():
    run = aging_run()
    run.operations = [op for op in run.operations if "oldest" not in op.name]
    for op in run.operations:
        op.figures.pop("free_extents", None)
        op.figures.pop("free_under_1mib_pct", None)
    (series,) = aging_series(run)
    assert "-" in text(aging_tables(run)[0]) and aging_figure(series) is not None


# ---- the plan ---------------------------------------------------------------------------------

DISK = DiskModel(disk_speed=250 * 10**6)


def _plan(run: RunRecord, at_age: str | None = None, **values):
    policy = BackupPolicy(protected="50TB", change_rate="5%", dailies=7, weeklies=4, block_clone=True,
                          restore_size="2TB", rto="8h", **values)
    days = age_days(float(at_age.removesuffix("d")) * 86_400) if at_age else None
    chosen = assign(["raid6"], [("raid6", run.run_id, measured_layouts(run, days))])
    return plan_repository(policy, DISK, [LayoutSpec("raid6", (16 * TB,) * 24)], chosen)


def test_the_plan_takes_the_restores_at_the_age_it_plans_for():
    run = aging_run()
    (last,) = _plan(run).candidates
    # The run's last day by default: the newest full read in order at 700 MiB/s; the slower random restore
    # that day, the oldest point's 300 MiB/s (the newest full's: 400).
    aged_speeds = last.aged
    assert (aged_speeds.day, aged_speeds.last_day, aged_speeds.asked_days) == (42, 42, None)
    assert last.speeds["restore-sequential"].value == 700 * MiB and last.speeds["restore-random"].value == 300 * MiB
    assert last.speeds["restore-random"].why == ("aging run 20261201T000000-a9e1, day 42: the oldest point's random "
                                                 "restore, the slower of the day's")
    assert last.restore.worst_seconds == pytest.approx(TB / (300 * MiB))
    assert aged_speeds.day_one == {"restore-sequential": 1000 * MiB, "restore-random": 400 * MiB}
    assert (aged_speeds.space_vs_plan, aged_speeds.most_space_vs_plan) == (0.95, 0.95)
    # 20 days: the first day measured at or after it (a repository only fragments further), 28.
    (at_20,) = _plan(run, "20d").candidates
    assert at_20.aged.day == 28 and at_20.speeds["restore-sequential"].value == 800 * MiB
    assert at_20.aged.which == "aging run 20261201T000000-a9e1, day 28 of 42 (--at-age 20d)"
    # The job speeds are not an aging run's: the model's, as without it.
    assert at_20.speeds["active-full"].source == "model"


def test_an_age_past_the_runs_last_day_is_refused():
    with pytest.raises(InputError) as refused:
        _plan(aging_run(), "60d")
    assert refused.value.message == ("--at-age 60d: aging run 20261201T000000-a9e1 measured days 0 to 42; what its "
                                     "repository does after that was not measured")
    assert refused.value.fix == "give --at-age 42d or less, or age a run for 60 days or more (--days 60)"
    assert age_days(1.5 * 86_400) == 2 and age_days(86_400) == 1


def test_a_days_samples_bound_the_margin_and_space_past_the_plan_is_said():
    run = aging_run(sequential={42: [680.0, 700.0, 720.0]})
    run.operations[0] = job(0, 1.08)
    (plan,) = _plan(run).candidates
    speed = plan.speeds["restore-sequential"]
    assert speed.samples == 3 and speed.value == 700 * MiB and speed.low < 700 * MiB < speed.high
    assert plan.aged.most_space_vs_plan == 1.08
    assert any("measured 1.080x the closed form's space at its scale: the capacity above may be short" in note
               for note in plan.notes)


def test_an_aging_run_and_a_kb2014_run_of_one_layout_join():
    kb = RunRecord(run_id="20261201T000000-kb20", kind="kb2014", target="/srv", settings={}, status=COMPLETE)
    kb.operations += [OperationRecord(name=name, pattern="", status=COMPLETE, figures={"effective_bw": bw * MiB})
                      for name, bw in (("active-full", 900.0), ("restore-sequential", 1500.0),
                                       ("restore-random", 800.0))]
    aging = aging_run()
    chosen = assign(["raid6"], [("raid6", "kb", measured_layouts(kb)), ("raid6", "aging", measured_layouts(aging))])
    policy = BackupPolicy(protected="50TB", change_rate="5%", dailies=7, block_clone=True, restore_size="2TB",
                          rto="8h")
    (plan,) = plan_repository(policy, DISK, [LayoutSpec("raid6", (16 * TB,) * 24)], chosen).candidates
    # The kb2014 run's active full, the aging run's restores at its last day (not day one's 1,500 and 800).
    assert plan.speeds["active-full"].value == 900 * MiB
    assert plan.speeds["restore-sequential"].value == 700 * MiB and plan.aged is not None


def test_the_plan_shows_the_aged_restores_beside_its_capacity():
    from backupbench.report.repository import repository_report

    shown = "\n".join(text(part) for part in repository_report(_plan(aging_run(), "20d")))
    assert "As the repository ages" in shown and "aging run 20261201T000000-a9e1, day 28 of 42 (--at-age 20d)" in shown
    assert "1,000.0 MiB/s → 800.0 MiB/s" in shown and "400.0 MiB/s → 300.0 MiB/s" in shown and "0.950x" in shown
