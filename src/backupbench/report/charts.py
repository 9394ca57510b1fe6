"""Charts of a stored run: pure functions run -> matplotlib Figure -> SVG or PNG bytes.

Nothing here touches pyplot or leaves rcParams changed: every figure is a plain
`matplotlib.figure.Figure` built and saved inside one `rc_context` with this module's style,
on the Agg/SVG canvases. Output is deterministic (fixed hash salt, no date or creator
metadata, text drawn as paths so no font is needed where the report is opened), so the same
run always renders the same bytes.

Charts:
- `speed_figure`: effective MiB/s per operation; for recipe runs grouped by layout (which
  layout should I build?).
- `latency_figure`: p99 latency per operation (read and write separately for fio).
- `timeline_figure`: one phase's monitor CSV: read+write MiB/s per member disk over time,
  stacked, and CPU %iowait (field note A: linear keeps one disk busy, striped all four).
- `comparison_figure`: effective MiB/s of the same operation across several runs.
- `runs_timeline_figure`: one phase in several runs, a line per run: member disks' MiB/s and %util.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from typing import Iterator, Sequence

import matplotlib
import matplotlib.ticker
from matplotlib.figure import Figure

from backupbench import units
from backupbench.analysis.compare import layout_matrix, run_names
from backupbench.monitor.csvlog import MonitorSeries
from backupbench.report import palette
from backupbench.report.palette import Colours
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

# Colours: report/palette.py, the one owner (a kind of figure, a named thing: one colour each).
# Fewer samples than this over a phase draw noise, not a shape: no timeline is drawn.
MIN_TIMELINE_SAMPLES = 5
WIDTH_IN = 7.5

STYLE = {
    "font.family": "DejaVu Sans",         # shipped with matplotlib: same glyphs on every host
    "font.size": 9.0,
    "axes.titlesize": 10.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 9.0,
    "axes.edgecolor": "#444444",
    "axes.linewidth": 0.8,
    "axes.grid": True,
    "axes.axisbelow": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=list(palette.THINGS)),
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.fontsize": 8.0,
    "legend.frameon": False,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "svg.fonttype": "path",               # no font needed by the reader
    "svg.hashsalt": "backupbench",        # stable ids: same run, same bytes
    "svg.image_inline": True,
    "path.simplify": True,
}
# Metadata that would change between renders or point elsewhere (the creator is a URL).
SVG_METADATA = {"Date": None, "Creator": "backupbench", "Format": None, "Type": None}
PNG_METADATA = {"Software": None}


@contextlib.contextmanager
def style(salt: str = "backupbench") -> Iterator[None]:
    """This module's rcParams for the duration of the block only."""
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": f"backupbench-{salt}"}):
        yield


def new_figure(height_in: float, **kwargs) -> Figure:
    # A bare Figure: not registered with pyplot, garbage collected when dropped.
    return Figure(figsize=(WIDTH_IN, height_in), layout="constrained", **kwargs)


# ---------------------------------------------------------------------------------------------
# Output


def svg_bytes(figure: Figure, salt: str = "backupbench") -> bytes:
    """The figure as a standalone SVG document (deterministic for a given salt)."""
    buffer = io.BytesIO()
    with style(salt):
        figure.savefig(buffer, format="svg", metadata=SVG_METADATA)
    return buffer.getvalue()


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG (Agg), without the software/version text chunk."""
    buffer = io.BytesIO()
    with style():
        figure.savefig(buffer, format="png", metadata=PNG_METADATA)
    return buffer.getvalue()


_ID = re.compile(r'\bid="([^"]+)"')
_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_COMMENT = re.compile(r"\s*<!--.*?-->", re.DOTALL)


def inline_svg(figure: Figure, scope: str, label: str = "") -> str:
    """SVG markup to put inside an HTML page: no XML prolog, RDF metadata or comments, every id (and
    every reference to it) prefixed with `scope` so several charts in one page never share an
    id (glyph definitions are otherwise named the same in every chart)."""
    scope = re.sub(r"[^A-Za-z0-9_-]", "-", scope)
    text = svg_bytes(figure, salt=scope).decode("utf-8")
    text = _METADATA.sub("", _PROLOG.sub("", text, count=1), count=1)
    text = _COMMENT.sub("", text)  # matplotlib repeats each label as a comment: keep the page lean
    ids = set(_ID.findall(text))

    def scoped(name: str) -> str:
        return f"{scope}-{name}" if name in ids else name

    text = _ID.sub(lambda m: f'id="{scoped(m.group(1))}"', text)
    text = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{scoped(m.group(1))}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{scoped(m.group(1))})", text)
    attrs = f'<svg class="chart" role="img" aria-label="{_attr(label)}" ' if label else '<svg class="chart" role="img" '
    return text.replace("<svg ", attrs, 1).strip() + "\n"


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


# ---------------------------------------------------------------------------------------------
# Effective speed


def _mib(value: float) -> float:
    return value / units.MiB


def _complete(run: RunRecord) -> list[OperationRecord]:
    return [op for op in run.operations if op.status == COMPLETE]


def _bar_height(bars: int) -> float:
    return min(11.0, 1.4 + 0.32 * bars)


def _label_bars(ax, container, fmt: str) -> None:
    ax.bar_label(container, labels=[fmt.format(v) if v else "" for v in container.datavalues],
                 padding=3, fontsize=7.5)


def _hbar_groups(title: str, xlabel: str, groups: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]],
                 fmt: str, colours: Sequence[str]) -> Figure:
    """Horizontal bars: one row per group (top to bottom), one bar per series that has a value
    in that row, centred in the row; a series keeps its colour (`colours`, one per series) in every row."""
    count = len(series)
    present = [[i for i, (_, values) in enumerate(series) if _usable(values[row])] for row in range(len(groups))]
    slots = max([len(p) for p in present] or [1]) or 1
    thickness = 0.8 / slots
    with style():
        fig = new_figure(_bar_height(sum(max(len(p), 1) for p in present) + (1 if any(name for name, _ in series) else 0)))
        ax = fig.add_subplot()
        for index, (name, values) in enumerate(series):
            positions, numbers = [], []
            for row, members in enumerate(present):
                if index in members:
                    slot = members.index(index)
                    positions.append(row + (slot - (len(members) - 1) / 2) * thickness)
                    numbers.append(float(values[row]))  # type: ignore[arg-type]
            bars = ax.barh(positions, numbers, height=thickness * 0.92, label=name or None,
                           color=colours[index])
            _label_bars(ax, bars, fmt)
        ax.set_yticks(range(len(groups)), labels=list(groups))
        ax.set_ylim(len(groups) - 0.5, -0.5)   # first row on top
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: f"{v:,.10g}"))
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        ax.grid(axis="y", visible=False)
        ax.margins(x=0.15)
        if any(name for name, _ in series):
            fig.legend(loc="outside lower center", ncols=min(count, 4))
        return fig


def _usable(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and value > 0


def speed_series(run: RunRecord) -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """(row labels, [(series name, MiB/s per row)]): by phase x layout for a recipe run with
    several layouts, else one series over the operations."""
    ops = [op for op in _complete(run) if op.figures.get("effective_bw")]
    matrix = layout_matrix(run)
    if matrix is not None:
        speed = {(op.name.removeprefix(f"{op.layout}/"), op.layout): op.figures["effective_bw"]
                 for op in ops if op.layout}
        phases = [p for p in matrix.phases if any((p, lay) in speed for lay in matrix.layouts)]
        return phases, [(layout, [_mib(speed[(p, layout)]) if (p, layout) in speed else None for p in phases])
                        for layout in matrix.layouts]
    return [op.name for op in ops], [("", [_mib(op.figures["effective_bw"]) for op in ops])]


def speed_figure(run: RunRecord, colours: Colours | None = None) -> Figure | None:
    """Bars in each layout's colour of the page (`colours`), or all in the speed colour."""
    rows, series = speed_series(run)
    if not rows:
        return None
    grouped = len(series) > 1
    colours = colours or Colours()
    title = "Effective speed by layout" if grouped else "Effective speed per operation"
    return _hbar_groups(title, "effective speed (MiB/s, higher is better)", rows, series, "{:,.1f}",
                        [colours.of(name) if grouped else palette.SPEED for name, _ in series])


# ---------------------------------------------------------------------------------------------
# Latency

# (figure, legend name) in the order they are drawn; ns in the store.
LATENCY_FIGURES = (
    ("read_p99_lat", "read p99"),
    ("write_p99_lat", "write p99"),
    ("file_p99_lat", "per-file p99"),
    ("lat_p99_ns", "request p99"),
)
LATENCY_COLOURS = {"read p99": palette.READ, "write p99": palette.WRITE, "per-file p99": palette.PER_FILE,
                   "request p99": palette.REQUEST}


def latency_series(run: RunRecord) -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """(operations, [(kind of p99, ms per operation)]), only kinds some operation has."""
    ops = [op for op in _complete(run) if any(op.figures.get(name) for name, _ in LATENCY_FIGURES)]
    series = []
    for name, label in LATENCY_FIGURES:
        values = [op.figures[name] / 1e6 if op.figures.get(name) else None for op in ops]
        if any(values):
            series.append((label, values))
    return [op.name for op in ops], series


def latency_figure(run: RunRecord) -> Figure | None:
    rows, series = latency_series(run)
    if not rows:
        return None
    return _hbar_groups("p99 latency per operation", "p99 latency (ms, lower is better)", rows, series, "{:,.2f}",
                        [LATENCY_COLOURS[name] for name, _ in series])


# ---------------------------------------------------------------------------------------------
# Comparison of runs


def comparison_series(runs: Sequence[RunRecord]) -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """(operations in first-seen order, [(run label or id, MiB/s per operation)])."""
    speeds = [{op.name: op.figures["effective_bw"] for op in _complete(run) if op.figures.get("effective_bw")}
              for run in runs]
    names: list[str] = []
    for table in speeds:
        names += [name for name in table if name not in names]
    return names, [(name, [_mib(table[n]) if n in table else None for n in names])
                   for name, table in zip(run_names(runs), speeds)]


def comparison_figure(runs: Sequence[RunRecord], colours: Colours | None = None) -> Figure | None:
    """A bar per run in the run's colour of the page (`colours`)."""
    rows, series = comparison_series(runs)
    if not rows:
        return None
    colours = colours or Colours()
    return _hbar_groups("Effective speed across runs", "effective speed (MiB/s, higher is better)",
                        rows, series, "{:,.1f}", [colours.of(name) for name, _ in series])


# ---------------------------------------------------------------------------------------------
# Monitor timelines


def phase_devices(run: RunRecord, op: OperationRecord, series: MonitorSeries) -> list[str]:
    """The member disks of the stack the phase ran on, as far as the CSV has them; else every
    device in the CSV."""
    stack = run.host.get("device_stacks", {}).get(op.layout or "target", {})
    for wanted in (stack.get("members"), (op.monitor.devices if op.monitor else None)):
        found = [d for d in (wanted or []) if d in series.devices]
        if found:
            return found
    return list(series.devices)


def _steps(elapsed: Sequence[float], values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Each sample is the average over the interval that ends at its elapsed time (the first
    starts at 0): drawn as a flat step over that interval, NaN as 0."""
    xs: list[float] = []
    ys: list[float] = []
    start = 0.0
    for end, value in zip(elapsed, values):
        value = 0.0 if math.isnan(value) else value
        xs += [start, end]
        ys += [value, value]
        start = end
    return xs, ys


def _member_rate(series: MonitorSeries, device: str) -> list[float]:
    nan = (math.nan,) * len(series.elapsed)
    read = series.column(f"{device}:rMB/s") or nan
    write = series.column(f"{device}:wMB/s") or nan
    return [(0.0 if math.isnan(r) else r) + (0.0 if math.isnan(w) else w) for r, w in zip(read, write)]


def timeline_figure(title: str, series: MonitorSeries, devices: Sequence[str],
                    colours: Colours | None = None) -> Figure | None:
    """Read+write MiB/s of each device stacked over the phase (one band per member disk, in its
    colour of the page: one busy band for linear, four equal ones for a 4-way stripe), and CPU
    %iowait below it. None for fewer than MIN_TIMELINE_SAMPLES samples: too few to show a shape."""
    if len(series.elapsed) < MIN_TIMELINE_SAMPLES:
        return None
    colours = colours or Colours()
    elapsed = list(series.elapsed)
    with style():
        fig = new_figure(3.9)
        disk_ax, cpu_ax = fig.subplots(2, 1, sharex=True, height_ratios=(2.4, 1.0))
        if devices:
            bands = [_steps(elapsed, _member_rate(series, device)) for device in devices]
            colors = [colours.of(device) for device in devices]
            disk_ax.stackplot(bands[0][0], *[ys for _, ys in bands], labels=list(devices), colors=colors,
                              edgecolor="white", linewidth=0.6)
            handles, labels = disk_ax.get_legend_handles_labels()
            # Legend top to bottom as the bands are stacked.
            disk_ax.legend(handles[::-1], labels[::-1], title="member disk", loc="upper left",
                           bbox_to_anchor=(1.0, 1.0), title_fontsize=8)
        disk_ax.set_ylabel("read+write MiB/s\n(stacked per disk)")
        disk_ax.set_ylim(bottom=0)
        disk_ax.set_title(title, loc="left")
        iowait = series.column("%iowait")
        if iowait is not None:
            xs, ys = _steps(elapsed, iowait)
            cpu_ax.plot(xs, ys, color=palette.IOWAIT, linewidth=1.2)
            cpu_ax.fill_between(xs, ys, color=palette.IOWAIT, alpha=0.15, linewidth=0)
        cpu_ax.set_ylabel("CPU %iowait")
        top = max([v for v in (iowait or ()) if not math.isnan(v)] or [0.0])
        cpu_ax.set_ylim(0, max(5.0, top * 1.15))
        cpu_ax.set_xlabel("time into the phase (s)")
        cpu_ax.set_xlim(0, elapsed[-1])
        return fig


def _mean_util(series: MonitorSeries, devices: Sequence[str]) -> list[float]:
    columns = [series.column(f"{device}:%util") for device in devices]
    found = [column for column in columns if column is not None]
    means = []
    for values in zip(*found):
        usable = [v for v in values if not math.isnan(v)]
        means.append(sum(usable) / len(usable) if usable else math.nan)
    return means


def runs_timeline_figure(title: str, runs: Sequence[tuple[str, MonitorSeries | None, Sequence[str]]],
                         colours: Colours | None = None) -> Figure | None:
    """One phase in several runs, one line per run (a run keeps its colour of the other charts,
    None for a run without samples, or with fewer than MIN_TIMELINE_SAMPLES): its member disks'
    read+write MiB/s summed, and their mean %util below (striped: all disks a little busy;
    linear: one disk saturated)."""
    runs = [(name, series if series is not None and len(series.elapsed) >= MIN_TIMELINE_SAMPLES else None, devices)
            for name, series, devices in runs]
    if not any(series is not None for _, series, _ in runs):
        return None
    colours = colours or Colours()
    with style():
        fig = new_figure(3.9)
        rate_ax, util_ax = fig.subplots(2, 1, sharex=True, height_ratios=(1.6, 1.0))
        for name, series, devices in runs:
            if series is None:
                continue
            color = colours.of(name)
            rates = [_member_rate(series, device) for device in devices]
            total = [sum(values) for values in zip(*rates)] if rates else [0.0] * len(series.elapsed)
            rate_ax.plot(*_steps(series.elapsed, total), color=color, linewidth=1.4, label=name)
            util = _mean_util(series, devices)
            if util:
                util_ax.plot(*_steps(series.elapsed, util), color=color, linewidth=1.2)
        rate_ax.set_ylabel("member disks\nread+write MiB/s")
        rate_ax.set_ylim(bottom=0)
        rate_ax.set_title(title, loc="left")
        util_ax.set_ylabel("member disks\nmean %util")
        util_ax.set_ylim(0, 105)
        util_ax.set_xlabel("time into the phase (s)")
        util_ax.set_xlim(left=0)
        fig.legend(loc="outside lower center", ncols=min(len(runs), 4))
        return fig
