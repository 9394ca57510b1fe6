"""Each phase's latency as pictures (the report's "Latency" section): per kind of request, a
histogram of total latency with p50 and p99 marked, and its course second by second.

A histogram, not a CDF: fio's bins already are one (64 buckets to each power of two), so drawing
them needs no interpolation; and what a backup engineer looks for in a restore's latency is
its modes (the page cache's microseconds against the disk's milliseconds, a RAID's parity
reads, an S3 gateway's retries), which show as separate peaks that a CDF smooths into one
slope. Where the tail lies, a CDF's strength, is what the p50 and p99 lines give. The x axis
is logarithmic, as the buckets are; a bar's height is its share of the requests.

Colours (report/palette.py): a kind's bars and lines are its meaning's (reads blue, writes
vermillion, S3 requests indigo); the phase's p50 and p99 are reference lines (black: dashed
p50, solid p99). Over time, a fio phase has its per-second mean (fio's log keeps no more), an
S3 phase each second's p50 (solid) and p99 (dotted); a phase measured several times has a line
per sample.
"""

from __future__ import annotations

from pathlib import Path
import matplotlib.ticker
from matplotlib.figure import Figure

from backupbench.analysis.latency import Found, run_latency
from backupbench.report import charts, palette
from backupbench.report import html_page as page
from backupbench.report.html_page import e
from backupbench.results.latency import Course, KindLatency, PhaseLatency
from backupbench.results.model import RunRecord

KIND_COLOURS = {"read": palette.READ, "write": palette.WRITE}
SAMPLE_STYLES = ("-", "--", ":", "-.")
ROW_HEIGHT_IN = 2.3


def ms_text(ns: float) -> str:
    """A latency for a marker's label: three significant digits in ms (0.412 ms, 8.98 ms, 1,204 ms)."""
    ms = ns / 1e6
    digits = 0 if ms >= 100 else 1 if ms >= 10 else 2 if ms >= 1 else 3
    return f"{ms:,.{digits}f} ms"


def _colour(kind: str) -> str:
    return KIND_COLOURS.get(kind, palette.REQUEST)


def _edges(kind: KindLatency) -> tuple[list[float], list[float]]:
    """Each bucket's lower and upper bound in ms: a bucket starts where the one before ends."""
    growth = 2 ** (1 / kind.per_doubling)
    uppers = [upper for upper, _ in kind.histogram]
    lowers = [uppers[0] / growth, *uppers[:-1]]
    return [v / 1e6 for v in lowers], [v / 1e6 for v in uppers]


def _mark(ax, kind: KindLatency, vertical: bool) -> None:
    """The phase's p50 (dashed) and p99 (solid) as reference lines, labelled with their values."""
    for name, style in (("p50", "--"), ("p99", "-")):
        value = kind.percentiles[name] / 1e6
        if vertical:
            ax.axvline(value, color=palette.REFERENCE, linestyle=style, linewidth=1.0)
            ax.annotate(f"{name} {ms_text(kind.percentiles[name])}", (value, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(3, -10 if name == "p50" else -21), textcoords="offset points", fontsize=7.5)
        else:
            ax.axhline(value, color=palette.REFERENCE, linestyle=style, linewidth=0.9,
                       label=f"phase {name} {ms_text(kind.percentiles[name])}")


def _histogram(ax, kind: KindLatency) -> None:
    lowers, uppers = _edges(kind)
    total = kind.count or 1
    shares = [100.0 * count / total for _, count in kind.histogram]
    ax.bar(lowers, shares, width=[u - lo for lo, u in zip(lowers, uppers)], align="edge", color=_colour(kind.kind),
           edgecolor="white", linewidth=0.3)
    ax.set_xscale("log")
    # 1-2-5 ticks as plain numbers: a range under a decade would otherwise get 3x10^0-style labels.
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: f"{v:,.10g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlim(lowers[0], uppers[-1])
    ax.set_ylim(0, max(shares) * 1.3)
    _mark(ax, kind, vertical=True)
    ax.set_xlabel("total latency (ms, log scale)")
    ax.set_ylabel("share of requests (%)")
    ax.set_title(f"{kind.kind}: {kind.count:,} requests", loc="left", fontsize=9)


def _steps(course: Course, value) -> tuple[list[float], list[float]]:
    """Each second drawn flat over the second it covers (t_s is its end); gaps left open."""
    xs: list[float] = []
    ys: list[float] = []
    for second in course.seconds:
        found = value(second)
        if found is None:
            xs.append(second.t_s - 0.5)
            ys.append(float("nan"))
            continue
        xs += [second.t_s - 1, second.t_s]
        ys += [found / 1e6, found / 1e6]
    return xs, ys


def _over_time(ax, kind: KindLatency, source: str) -> None:
    colour = _colour(kind.kind)
    several = len(kind.over_time) > 1
    lines = ((("mean", lambda s: s.mean_ns, "-"),) if source == "fio"
             else (("p50", lambda s: s.p50_ns, "-"), ("p99", lambda s: s.p99_ns, ":")))
    for index, course in enumerate(kind.over_time):
        for name, value, style in lines:
            label = f"{name} each second" + (f", sample {course.sample}" if several else "")
            ax.plot(*_steps(course, value), color=colour, linewidth=1.3 if name != "p99" else 1.0,
                    linestyle=SAMPLE_STYLES[index % len(SAMPLE_STYLES)] if several else style, label=label)
    _mark(ax, kind, vertical=False)
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds into the phase (after its ramp)")
    ax.set_ylabel("latency (ms)")
    # Above the axes: inside, it would hide the seconds it lies on.
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=7, ncols=2, borderaxespad=0.2)


def phase_figure(name: str, latency: PhaseLatency) -> Figure | None:
    """Per kind of request a row: its histogram (left) and its course over time (right)."""
    kinds = [kind for kind in latency.kinds if kind.count and kind.histogram]
    if not kinds:
        return None
    with charts.style():
        fig = charts.new_figure(0.4 + ROW_HEIGHT_IN * len(kinds))
        fig.suptitle(f"{name}: total latency", x=0.01, ha="left", fontweight="bold", fontsize=10.5)
        axes = fig.subplots(len(kinds), 2, squeeze=False)
        for (left, right), kind in zip(axes, kinds):
            _histogram(left, kind)
            if kind.over_time:
                _over_time(right, kind, latency.source)
            else:
                right.set_axis_off()
                right.text(0.5, 0.5, "no per-second record\n(fio's 1 s log was not asked for)", ha="center",
                           va="center", transform=right.transAxes, fontsize=8)
        return fig


def caption(name: str, pattern: str, latency: PhaseLatency) -> str:
    marks = "; ".join(f"{k.kind} p50 {ms_text(k.percentiles['p50'])}, p99 {ms_text(k.percentiles['p99'])}, "
                      f"p99.9 {ms_text(k.percentiles['p99_9'])}" for k in latency.kinds if k.count)
    return (f"{name} ({pattern}): {latency.what}. Left: the share of requests per latency bucket, p50 dashed and p99 "
            f"solid ({marks}). Right: {latency.over_time_of}.")


def latency_html(run: RunRecord, folder: Path, found: dict[str, Found] | None = None) -> str:
    """The report's section: a figure per phase with latencies, or the line saying why not."""
    found = run_latency(run, folder) if found is None else found
    parts = []
    patterns = {op.name: op.pattern for op in run.operations}
    for index, (name, result) in enumerate(found.items()):
        figure = phase_figure(name, result.latency) if result.latency is not None else None
        if figure is None or result.latency is None:
            parts.append(f'<p class="no-latency">{e(name)}: {e(result.problem or "no request to draw")}.</p>\n')
            continue
        svg = charts.inline_svg(figure, f"latency-{index}", f"Latency of {name}")
        parts.append(page.figure(svg, caption(name, patterns.get(name, ""), result.latency)))
    return "".join(parts)
