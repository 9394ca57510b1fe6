"""The fault timeline (issue 13): the workloads' MiB/s per phase as flat segments over the
time each ran, the rebuild's percent on a second axis from its 1 s samples, and a line where
the array changed state (healthy, degraded, rebuilding, rebuilt)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from backupbench import units
from backupbench.monitor.rebuild import read_csv
from backupbench.recipe import naming
from backupbench.report import palette
from backupbench.report.charts import new_figure, style
from backupbench.report.palette import Colours
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord


def _epoch(iso: str | None) -> float | None:
    try:
        return datetime.fromisoformat(iso).timestamp() if iso else None
    except ValueError:
        return None


def workload_segments(run: RunRecord, rebuild: OperationRecord) -> list[tuple[str, float, float, float]]:
    """(operation, start s, end s, MiB/s) of the layout's measured phases, on the watch's clock."""
    origin = rebuild.detail.get("watch_started")
    if not origin:
        return []  # a run stored without the watch's clock cannot place its phases
    layout = rebuild.layout
    segments = []
    for op in run.operations:
        if naming.layout_of(op.layout) != layout or op.status != COMPLETE:
            continue
        if op.state in (naming.REBUILD, naming.MEMBER) or not op.figures.get("effective_bw"):
            continue
        start, end = _epoch(op.started_at), _epoch(op.finished_at)
        if start is not None and end is not None and end > start:
            segments.append((op.name.removeprefix(f"{layout}/"), start - origin, end - origin,
                             op.figures["effective_bw"] / units.MiB))
    return segments


def rebuild_points(csv_path: Path) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for row in read_csv(csv_path):
        if row.get("percent"):
            xs.append(float(row["elapsed_s"]))
            ys.append(float(row["percent"]))
        elif row.get("phase") == "rebuilt" and ys:
            xs.append(float(row["elapsed_s"]))
            ys.append(100.0)
    return xs, ys


def fault_timeline(title: str, segments: Sequence[tuple[str, float, float, float]],
                   rebuild: tuple[list[float], list[float]], phases: Sequence[Sequence],
                   colours: Colours | None = None) -> Figure | None:
    """Each phase's MiB/s as a flat segment in its colour of the page, the rebuild's percent in
    the reference colour, dashed lines where the array changed state."""
    colours = colours or Colours()
    if not segments and not rebuild[0]:
        return None
    with style():
        fig = new_figure(3.4)
        ax = fig.subplots()
        operations = list(dict.fromkeys(naming.phase_of(name) for name, *_ in segments))
        for name, start, end, mib in segments:
            color = colours.of(naming.phase_of(name))
            ax.plot([start, end], [mib, mib], color=color, linewidth=3, solid_capstyle="butt")
        for operation in operations:
            ax.plot([], [], color=colours.of(operation), linewidth=3, label=operation)
        ax.set_ylabel("workload MiB/s")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("time since the healthy phase began (s)")
        for state, at in phases:
            ax.axvline(float(at), color="#777777", linewidth=0.8, linestyle="--")
            ax.annotate(str(state), (float(at), 1.0), xycoords=("data", "axes fraction"), rotation=90,
                        va="top", ha="right", fontsize=7, color="#555555")
        if rebuild[0]:
            twin = ax.twinx()
            twin.plot(rebuild[0], rebuild[1], color=palette.REFERENCE, linewidth=1.2, label="rebuild %")
            twin.set_ylim(0, 105)
            twin.set_ylabel("rebuild %")
            twin.legend(loc="lower right", fontsize=8)
        if operations:
            ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), title="operation", title_fontsize=8)
        ax.set_title(title, loc="left")
        return fig
