"""A sweep's chart, one per phase: effective speed (left) and p99 latency (right) against the
swept parameter the x axis runs along (the first parallelism axis swept: SweepData.x_axis),
one line per value of the other parameters (`jobs=2`), each line in its own colour of the page
(palette.Colours), the 95% interval of each point's samples as its error bar, the best point
ringed in the reference colour. The x axis places the values evenly in their order (1, 4, 16
an equal step each), as the sweep stepped through them, rather than on a linear scale that
would crowd the small ones.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from backupbench import units
from backupbench.analysis.sweep import Cell, PhaseSweep, SweepData, axis_order
from backupbench.report import palette
from backupbench.report.charts import new_figure, style
from backupbench.report.palette import Colours

HEIGHT_IN = 3.4
# How far apart (in steps of the x axis) the lines' points at one value are drawn.
DODGE = 0.06


def _speed(sweep: PhaseSweep, value: float) -> float:
    return value / units.MiB if sweep.figure == "effective_bw" else value


def _lines(data: SweepData, sweep: PhaseSweep) -> dict[str, list[tuple[int, Cell]]]:
    """Each line's name (the other parameters' values; '' for a sweep of one parameter) and its
    points as (position on the x axis, cell), in the axis' order."""
    axis = data.x_axis
    order = axis_order(data.grid[axis])
    lines: dict[str, list[tuple[int, Cell]]] = {}
    for cell in sweep.cells:
        values = cell.point.as_dict()
        name = " ".join(f"{other}={values[other]}" for other in data.grid if other != axis)
        lines.setdefault(name, []).append((order.index(values[axis]), cell))
    return {name: sorted(points, key=lambda pair: pair[0]) for name, points in lines.items()}


def sweep_figure(data: SweepData, sweep: PhaseSweep, colours: Colours | None = None) -> Figure | None:
    """None when no point measured the phase."""
    if sweep.best is None:
        return None
    colours = colours or Colours()
    axis = data.x_axis
    order = axis_order(data.grid[axis])
    lines = _lines(data, sweep)
    with style():
        fig = new_figure(HEIGHT_IN)
        speed_ax, latency_ax = fig.subplots(1, 2)
        for number, (name, points) in enumerate(lines.items()):
            colour = colours.of(name) if name else palette.SPEED
            # Lines side by side at each value, a little apart, so that their error bars do not hide each other.
            _speed_line(speed_ax, sweep, points, name, colour, DODGE * (number - (len(lines) - 1) / 2))
            latency = [(x, cell.p99[1] / 1e6) for x, cell in points if cell.p99 is not None]
            if latency:
                latency_ax.plot([x for x, _ in latency], [ms for _, ms in latency], marker="o", color=colour,
                                label=name or None)
        best = sweep.best
        best_values = best.point.as_dict()
        best_line = list(lines).index(" ".join(f"{o}={best_values[o]}" for o in data.grid if o != axis))
        best_x = order.index(best_values[axis]) + DODGE * (best_line - (len(lines) - 1) / 2)
        assert best.speed is not None
        speed_ax.plot([best_x], [_speed(sweep, best.speed.median)], marker="o", markersize=13, fillstyle="none",
                      color=palette.REFERENCE, linestyle="none", label="best")
        # Two samples' t interval is wide (t = 12.7): past 2.5x the fastest median it would flatten
        # every line to the floor, so the axis stops there and a cut bar runs off its top.
        tops = [_speed(sweep, c.speed.high) for c in sweep.cells if c.speed is not None and c.speed.high is not None]
        ceiling = 2.5 * _speed(sweep, best.speed.median)
        if tops and max(tops) > ceiling:
            speed_ax.set_ylim(top=ceiling)
        for ax, label in ((speed_ax, f"{sweep.unit or sweep.figure} (higher is better)"),
                          (latency_ax, "p99 latency, ms (lower is better)")):
            ax.set_xticks(range(len(order)), labels=order)
            ax.set_xlabel(axis)
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)  # after the top: set_ylim(bottom=) keeps a top set before
            ax.margins(x=0.08)
        speed_ax.set_title(f"{sweep.phase}: speed", loc="left")
        latency_ax.set_title(f"{sweep.phase}: p99", loc="left")
        if len(lines) > 1 or any(lines):
            speed_ax.legend(loc="best")
        return fig


def _speed_line(ax, sweep: PhaseSweep, points: list[tuple[int, Cell]], name: str, colour: str,
                offset: float) -> None:
    measured = [(x, cell.speed) for x, cell in points if cell.speed is not None]
    if not measured:
        return
    xs = [x + offset for x, _ in measured]
    medians = [_speed(sweep, figure.median) for _, figure in measured]
    # The error bar is the 95% interval of the point's samples (none for one sample).
    below = [max(0.0, m - _speed(sweep, f.low)) if f.low is not None else 0.0 for m, (_, f) in zip(medians, measured)]
    above = [max(0.0, _speed(sweep, f.high) - m) if f.high is not None else 0.0 for m, (_, f) in zip(medians, measured)]
    ax.errorbar(xs, medians, yerr=[below, above], marker="o", color=colour, capsize=3, label=name or None)
