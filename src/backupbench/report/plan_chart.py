"""The fill-over-time chart of a repository plan's candidate: how full the layout is at day
one and at each year of the horizon (restore points plus workspace over usable capacity),
against the 100% it cannot pass."""

from __future__ import annotations

from matplotlib.figure import Figure

from backupbench.report.charts import new_figure, style
from backupbench.report.palette import BAD, FILL
from backupbench.sizing.plan_model import CandidatePlan
from backupbench.sizing.verdict import size_text


def fill_figure(candidate: CandidatePlan, years: list[int]) -> Figure:
    """One candidate's fill per year; the line turns red where it passes 100%."""
    with style(f"fill-{candidate.layout}"):
        figure = new_figure(2.4)
        ax = figure.add_subplot()
        fill = candidate.fill_percent
        colour = FILL if max(fill) <= 100 else BAD
        ax.plot(years, fill, marker="o", color=colour, label="restore points + workspace")
        ax.axhline(100, color="#444444", linewidth=0.8, linestyle="--", label="usable capacity")
        for year, value in zip(years, fill):
            ax.annotate(f"{value:.0f}%", (year, value), textcoords="offset points", xytext=(0, 6), ha="center",
                        fontsize=8)
        ax.set_xticks(years, ["day one" if y == 0 else f"year {y}" for y in years])
        ax.set_ylim(0, max(110.0, max(fill) * 1.15))
        ax.set_ylabel("fill (%)")
        ax.set_title(f"{candidate.built}: {size_text(candidate.usable_bytes)} usable on {candidate.disks} x "
                     f"{size_text(candidate.disk_bytes)}", loc="left")
        ax.legend(loc="lower right")
    return figure
