"""The repository over its life (an aging run, workloads/aging.py): a compact table by measured
day for the terminal and the page, and on the page the curves over simulated age
(report/aging_charts.py) and the newest full's extent map on the first and the last day.

One row a measured day: the day's job (its seconds at the run's scale, and scaled linearly to a
full of 1 TiB: a plan's full is terabytes, and the time, unlike the speed, does not carry over
unscaled), the space at the day's peak over the plan's closed form at the run's scale, the newest
full's extents, the restores of the newest full and the oldest point (measured, and in brackets
the same file on the model's spinning disk), and the free space's fragmentation.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from backupbench import units
from backupbench.analysis.aging import RANDOM, SEQUENTIAL, AgedDay, AgingSeries, aging_series, MODEL
from backupbench.report import html_page as page
from backupbench.report.palette import Colours
from backupbench.results.model import OperationRecord, RunRecord
from backupbench.workloads.aging_run import NEWEST, OLDEST

HEADINGS = ("day", "job", "job s", "job h/TiB", "space / plan", "extents", "newest seq", "newest random",
            "oldest seq", "oldest random", "free")


def _restore(op: OperationRecord | None, operation: str) -> str:
    """'962.5 (238.4)': measured MiB/s and the model's, or '-'."""
    if op is None or not op.figures.get("effective_bw"):
        return "-"
    model = op.figures.get(MODEL[operation])
    shown = f"{op.figures['effective_bw'] / units.MiB:,.1f}"
    return shown + (f" ({model / units.MiB:,.1f})" if model else "")


def _free(day: AgedDay) -> str:
    """Free extents and the share of the free space in extents under 1 MiB; ZFS's own score."""
    zfs = day.job_figure("free_fragmentation_pct")
    if zfs is not None:
        return f"{zfs:.0f}% (ZFS)"
    extents, small = day.job_figure("free_extents"), day.job_figure("free_under_1mib_pct")
    if extents is None:
        return "-"
    return f"{extents:,.0f}" + (f" ({small:.1f}%)" if small is not None else "")


def _number(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def row(series: AgingSeries, day: AgedDay) -> list[str]:
    ratio = day.job_figure("space_vs_plan")
    return [str(day.day), day.job.pattern if day.job is not None else "-", _number(day.job_figure("job_s"), ",.2f"),
            _number(series.job_hours_per_tib(day), ",.2f"), "-" if ratio is None else f"{ratio:.3f}x",
            _number(day.job_figure("extents"), ",.0f"),
            *(_restore(day.restore(op, role), op) for role in (NEWEST, OLDEST) for op in (SEQUENTIAL, RANDOM)),
            _free(day)]


def _disk(series: AgingSeries) -> str:
    return next((str(op.detail["model_disk"]) for day in series.days for op in day.restores.values()
                 if op.detail.get("model_disk")), "")


def title(series: AgingSeries) -> str:
    where = f" ({series.group})" if series.group else ""
    return f"The repository over its life{where}: by simulated day"


def caption(series: AgingSeries) -> str:
    full = series.full_bytes
    scale = f"a full of {units.format_size(int(full))}" if full else "the run's scale"
    disk = _disk(series)
    sampled = any(op.sample_count > 1 for day in series.days for op in [*day.restores.values(), day.job] if op)
    return (f"job s: the day's job at this run's scale ({scale}); job h/TiB: the same scaled linearly to a full of "
            "1 TiB. space / plan: the day's peak over the repository plan's closed form at this scale (the plan "
            "holds while it is at most 1). extents: the newest full's. Restores in MiB/s of the newest full and "
            f"the oldest point kept" + (f", in brackets the same file on the model's spinning disk ({disk})"
                                        if disk else "")
            + ". free: free extents (the share of the free space in extents under 1 MiB)"
            + ("; figures are medians of the samples" if sampled else "") + ".")


def aging_tables(run: RunRecord) -> list[Table]:
    """One table per aging workload of the run, for the terminal ([] for other runs)."""
    tables = []
    for series in aging_series(run):
        table = Table(title=title(series), title_justify="left", caption=caption(series), caption_justify="left")
        for index, heading in enumerate(HEADINGS):
            table.add_column(heading, justify="left" if index == 1 else "right")
        for day in series.days:
            table.add_row(*row(series, day))
        tables.append(table)
    return tables


def _maps(series: AgingSeries, folder: Path, index: int) -> str:
    """The newest full's extent map on the first and the last day measured, side by side in time."""
    from backupbench.report import charts
    from backupbench.report.files import map_figure, read_runs

    parts = []
    for day in series.days[:1] + series.days[1:][-1:]:
        op = day.restore(SEQUENTIAL) or day.restore(RANDOM)
        name = str(op.detail.get("map", "")) if op is not None else ""
        path = folder / name
        if not name or not path.is_file():
            continue
        file = str(op.detail.get("file", "")) if op is not None else ""
        figure = map_figure(f"day {day.day}, {file}", read_runs(path.read_text()))
        extents, jumps = op.figures.get("file_extents", 0), op.figures.get("file_jumps", 0)
        parts.append(page.figure(charts.inline_svg(figure, f"aging-{index}-map-{day.day}",
                                                   f"Extent map of the newest full on day {day.day}"),
                                 f"The newest full ({file}) on day {day.day}: {extents:,.0f} extents, {jumps:,.0f} "
                                 f"jumps; raw: {name}."))
    return "".join(parts)


def aging_html(run: RunRecord, folder: Path, colours: Colours | None = None) -> str:
    """The page's section: per aging workload its table, its curves and its extent maps ('' for
    other runs)."""
    from backupbench.report import charts
    from backupbench.report.aging_charts import aging_figure

    parts = []
    colours = colours or Colours()
    for index, series in enumerate(aging_series(run)):
        parts.append(page.table(HEADINGS, [[page.e(cell) for cell in row(series, day)] for day in series.days],
                                caption=title(series), numeric_from=2))
        parts.append(f'<p class="table-note">{page.e(caption(series))}</p>\n')
        figure = aging_figure(series, colours)
        if figure is not None:
            parts.append(page.figure(charts.inline_svg(figure, f"aging-{index}", title(series)),
                                     "Over simulated age, each measured day: the restores (measured; the same "
                                     "files on the model's spinning disk), the day's job in hours per TiB of full "
                                     "(scaled linearly from this run's), the space over the plan's closed form, the "
                                     "newest full's extents and the free space's fragmentation."))
        if folder.is_dir():
            parts.append(_maps(series, folder, index))
    return "".join(parts)
