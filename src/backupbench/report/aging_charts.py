"""The curves of an aging run over simulated age (analysis/aging.py's days): six panels sharing
the day across.

- restores, measured, and the same files on the model's spinning disk: the newest full and the
  oldest point each in their colour of the page (things the page names: report/palette.py),
  sequential drawn solid, random dashed, a sampled day's 95% interval as its error bar;
- the day's job in hours per TiB of full (its seconds scaled linearly: JOB_TIME);
- the space at the day's peak over the plan's closed form (FILL while it holds, BAD past 1, the
  line at 1 in REFERENCE);
- the newest full's extents (in the newest full's colour);
- the free space in extents under 1 MiB (FREE_SPACE), or ZFS's fragmentation score.
A panel without figures (no model, no free-space tool) says so instead of drawing nothing.
"""

from __future__ import annotations

from typing import Callable

from matplotlib.figure import Figure

from backupbench import units
from backupbench.analysis.aging import MODEL, RANDOM, SEQUENTIAL, AgedDay, AgingSeries
from backupbench.report import charts, palette
from backupbench.report.palette import Colours
from backupbench.workloads.aging_run import NEWEST, OLDEST

ROLE_NAMES = {NEWEST: "newest full", OLDEST: "oldest point"}
STYLES = {SEQUENTIAL: ("-", "sequential"), RANDOM: ("--", "random")}


def _points(series: AgingSeries, value: Callable[[AgedDay], float | None]) -> tuple[list[int], list[float]]:
    found = [(day.day, figure) for day in series.days if (figure := value(day)) is not None]
    return [day for day, _ in found], [figure for _, figure in found]


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, color=palette.IOWAIT)


def _restores(ax, series: AgingSeries, colours: Colours, model: bool) -> None:
    drawn = False
    for role in (NEWEST, OLDEST):
        for operation in (SEQUENTIAL, RANDOM):
            ops = [(day.day, op) for day in series.days if (op := day.restore(operation, role)) is not None]
            name = MODEL[operation] if model else "effective_bw"
            ops = [(day, op) for day, op in ops if op.figures.get(name)]
            if not ops:
                continue
            days = [day for day, _ in ops]
            values = [op.figures[name] / units.MiB for _, op in ops]
            style, how = STYLES[operation]
            errors = None
            if not model:
                spreads = [op.spread(name) for _, op in ops]
                low = [v - s.low / units.MiB if s and s.low is not None else 0.0 for v, s in zip(values, spreads)]
                high = [s.high / units.MiB - v if s and s.high is not None else 0.0 for v, s in zip(values, spreads)]
                errors = [low, high] if any(low) or any(high) else None
            ax.errorbar(days, values, yerr=errors, color=colours.of(ROLE_NAMES[role]), linestyle=style, marker="o",
                        markersize=3.5, linewidth=1.4, capsize=2.5, label=f"{ROLE_NAMES[role]}, {how}")
            drawn = True
    if not drawn:
        _empty(ax, "no model figures (the filesystem gave no extent map)" if model else "no restores")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("MiB/s")
    ax.set_title("Restores, the model's spinning disk" if model else "Restores, measured", loc="left")


def _job(ax, series: AgingSeries) -> None:
    days, hours = _points(series, series.job_hours_per_tib)
    if days:
        ax.plot(days, hours, color=palette.JOB_TIME, marker="o", markersize=3.5, linewidth=1.4)
    else:
        _empty(ax, "no job figures")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("hours per TiB of full")
    ax.set_title("The day's job (scaled linearly)", loc="left")


def _space(ax, series: AgingSeries) -> None:
    days, ratios = _points(series, lambda day: day.job_figure("space_vs_plan"))
    ax.axhline(1.0, color=palette.REFERENCE, linestyle=":", linewidth=1.0)
    if days:
        ax.plot(days, ratios, color=palette.FILL, marker="o", markersize=3.5, linewidth=1.4)
        over = [(day, ratio) for day, ratio in zip(days, ratios) if ratio > 1]
        if over:
            ax.plot(*zip(*over), color=palette.BAD, marker="o", markersize=5, linestyle="none", label="over the plan")
            ax.legend(loc="lower right")
    else:
        _empty(ax, "no space figures")
    ax.set_ylim(0, max([1.1, *[ratio * 1.05 for ratio in ratios]]))
    ax.set_ylabel("measured / planned")
    ax.set_title("Space at the day's peak / the plan", loc="left")


def _extents(ax, series: AgingSeries, colours: Colours) -> None:
    days, extents = _points(series, lambda day: day.job_figure("extents"))
    if days:
        ax.plot(days, extents, color=colours.of(ROLE_NAMES[NEWEST]), marker="o", markersize=3.5, linewidth=1.4)
    else:
        _empty(ax, "no extent map (the filesystem has no FIEMAP)")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("extents")
    ax.set_title("The newest full's extents", loc="left")


def _free(ax, series: AgingSeries) -> None:
    zfs = _points(series, lambda day: day.job_figure("free_fragmentation_pct"))
    days, values = zfs if zfs[0] else _points(series, lambda day: day.job_figure("free_under_1mib_pct"))
    if days:
        ax.plot(days, values, color=palette.FREE_SPACE, marker="o", markersize=3.5, linewidth=1.4)
    else:
        _empty(ax, "no free-space figures on this filesystem")
    ax.set_ylim(0, max([1.0, *[value * 1.1 for value in values]]))
    ax.set_ylabel("ZFS fragmentation %" if zfs[0] else "% of free space")
    ax.set_title("Free space: ZFS's score" if zfs[0] else "Free space in extents under 1 MiB", loc="left")


def aging_figure(series: AgingSeries, colours: Colours | None = None) -> Figure | None:
    """The six panels (module doc); None for a run of one measured day: no curve to draw."""
    if len(series.days) < 2:
        return None
    colours = colours or Colours()
    with charts.style("aging"):
        figure = charts.new_figure(7.2)
        axes = figure.subplots(3, 2, sharex=True)
        _restores(axes[0][0], series, colours, model=False)
        _restores(axes[0][1], series, colours, model=True)
        _job(axes[1][0], series)
        _space(axes[1][1], series)
        _extents(axes[2][0], series, colours)
        _free(axes[2][1], series)
        for ax in axes[2]:
            ax.set_xlabel("simulated day")
        for ax in [axis for pair in axes for axis in pair]:
            ax.set_xlim(left=0)
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            figure.legend(handles, labels, loc="outside lower center", ncols=min(4, len(handles)))
    return figure
