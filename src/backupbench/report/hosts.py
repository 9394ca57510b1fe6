"""A multi-host run's hosts (analysis/hosts.py) drawn: the terminal's Hosts table and its
`note:` lines, the same table in HTML, and a bar chart of each operation per host against the
hosts' median.

Per-host timelines (HTML only): when each host ran `backupbench agent` and the run was given
its token, the controller fetched every host's 1 s samples (runner/host_monitor.py); each measured
phase then gets one chart, one line per host: the read+write MiB/s of the disks under its agent's
root (agent/feed.py names them; the host's whole disks when the root is on no block device) over the phase
(analysis/hosts.py cuts them out of the hosts' CSVs). Without agents there are only whole-phase
figures, and no timeline is made up from them.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from backupbench import units
from backupbench.recipe import naming
from backupbench.report import html_page as page, palette
from backupbench.report.html_page import e
from backupbench.report.palette import Colours
from backupbench.analysis.hosts import (SLOW_FRACTION, OperationHosts, PhaseTimeline, host_breakdown, lost_hosts,
                                        phase_timeline, run_hosts, slow_hosts, timeline_sources)
from backupbench.results.model import RunRecord

# figure -> (column heading, divisor)
HEADINGS = {"effective_bw": ("effective MiB/s", units.MiB), "objects_per_s": ("objects/s", 1.0),
            "files_per_s": ("files/s", 1.0)}
SLOW, LOST, SUM = "slow", "lost", "sum"
Row = tuple[list[str], str]   # cells, and what kind of row (SLOW, LOST, SUM or "")


def _value(op: OperationHosts, value: float | None, named: bool = False) -> str:
    if value is None:
        return "-"
    heading, divisor = HEADINGS.get(op.figure, (op.figure, 1.0))
    unit = f" {heading}" if named and op.figure != "effective_bw" else ""
    return f"{value / divisor:,.1f}{unit}"


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:,.2f} ms"


def operation_rows(op: OperationHosts, named: bool = False) -> list[Row]:
    """The Hosts table's rows of one operation: each host, lost and absent hosts, the median
    and the total. The terminal and the HTML report draw the same rows. named: say the unit
    of a figure other than MiB/s (see `mixed`)."""
    rows: list[Row] = []
    for row in op.hosts:
        percent = round(-row.under_median * 100)
        against = (f"{percent:+d}%" if percent else "0%") + (" SLOW" if row.slow else "")
        rows.append(([row.host, _value(op, row.value, named), _ms(row.p99_ns), against], SLOW if row.slow else ""))
    for host, why in op.lost.items():
        rows.append(([host, "lost", "-", why], LOST))
    for host in op.absent:
        rows.append(([host, "-", "-", "not in this operation"], LOST))
    count = len(op.hosts)
    rows.append(([f"median of {count} host{'s' * (count != 1)}", _value(op, op.median, named), "-", ""], SUM))
    rows.append((["total", _value(op, op.total, named), _ms(op.total_p99_ns), ""], SUM))
    return [([op.operation if i == 0 else "", *cells], kind) for i, (cells, kind) in enumerate(rows)]


def mixed(breakdown: list[OperationHosts]) -> bool:
    """Whether operations are judged by different figures (MiB/s, and objects/s for an S3
    phase moving no bytes): then each cell that is not MiB/s names its unit."""
    return len({op.figure for op in breakdown}) > 1


def headings(breakdown: list[OperationHosts]) -> list[str]:
    figure = breakdown[0].figure if breakdown and not mixed(breakdown) else "effective_bw"
    return ["operation", "host", HEADINGS.get(figure, (figure, 1.0))[0], "p99 latency", "against median"]


def caption(run: RunRecord, breakdown: list[OperationHosts]) -> str:
    parts = [f"slow: more than {SLOW_FRACTION:.0%} (and past their spread) under the other hosts' median"]
    repeats = max((op.samples for op in breakdown), default=1)
    if repeats > 1:
        parts.append(f"each host: the median of its {repeats} samples, judged over all of them")
    # What the runner says the total's p99 is (runner/hosts.py: merged histograms, or the worst
    # host's when fio gave none), verbatim.
    said = next((str(op.detail["p99_total"]) for op in run.operations if op.detail.get("p99_total")), "")
    if said:
        parts.append(said)
    lost = lost_hosts(breakdown)
    if lost:
        parts.append("lost: " + "; ".join(f"{h} during {op} ({why})" for h, (op, why) in lost.items()))
    return "; ".join(parts)


def slow_notes(breakdown: list[OperationHosts]) -> list[str]:
    """One line per host called slow: 'host 10.0.0.6 is 22% under the median in active-full' (and
    ', 18% in restore-random' for each further operation it was slow in); [] when none is."""
    notes = []
    for host, where in slow_hosts(breakdown).items():
        (first_op, first), rest = where[0], where[1:]
        more = "".join(f", {under:.0%} in {op}" for op, under in rest)
        notes.append(f"host {host} is {first:.0%} under the median in {first_op}{more}")
    return notes


def judgement_notes(breakdown: list[OperationHosts]) -> list[str]:
    """Why no host could be named in an operation (two hosts: noise.judge_hosts). Kept apart from
    slow_notes: they name no slow host, so they may not be drawn as an alarm."""
    return [op.note for op in breakdown if op.note]


STYLES = {SLOW: "bold red", LOST: "yellow", SUM: "bold"}


def hosts_table(run: RunRecord, breakdown: list[OperationHosts]) -> Table:
    table = Table(title=f"Hosts of run {run.run_id}", title_justify="left", caption=caption(run, breakdown),
                  caption_justify="left")
    for index, heading in enumerate(headings(breakdown)):
        # Numbers right-aligned; the last column holds a reason when a host was lost.
        table.add_column(heading, justify="right" if 2 <= index <= 3 else "left")
    for op in breakdown:
        rows = operation_rows(op, mixed(breakdown))
        for index, (cells, kind) in enumerate(rows):
            table.add_row(*[Text(c, style=STYLES.get(kind, "")) if i else c for i, c in enumerate(cells)],
                          end_section=index == len(rows) - 1)
    return table


def hosts_renderables(run: RunRecord) -> list[RenderableType]:
    """The Hosts table, a `note:` per slow host (yellow), then the operations where no host could be
    named (plain: nothing is wrong there); nothing for a single-host run."""
    breakdown = host_breakdown(run)
    if not breakdown:
        return []
    return [hosts_table(run, breakdown), *[Text(f"note: {n}", style="yellow") for n in slow_notes(breakdown)],
            *[Text(f"note: {n}") for n in judgement_notes(breakdown)]]


# ---------------------------------------------------------------------------------------------
# HTML (the chart imports matplotlib only when drawn: the terminal report never needs it)


def hosts_html(run: RunRecord) -> str:
    """The Hosts table (slow rows bold red, lost ones marked), the slow hosts as a red callout (only
    when a host is called slow), and why no host could be named as plain notes."""
    breakdown = host_breakdown(run)
    if not breakdown:
        return ""
    # Inline style for the slow rows: the page's CSS (html_page.py) has no red text class.
    classes = {SLOW: ' class="strong" style="color:#c62828"', LOST: ' class="status"', SUM: ' class="strong"'}
    rows = [[e(cells[0]), e(cells[1]), *[f"<span{classes.get(kind, '')}>{e(c)}</span>" for c in cells[2:]]]
            for op in breakdown for cells, kind in operation_rows(op, mixed(breakdown))]
    table = page.table(headings(breakdown), rows, caption=f"Hosts of run {run.run_id}", numeric_from=2,
                       css="hosts")
    notes = slow_notes(breakdown)
    title = f"Slow hosts (more than {SLOW_FRACTION:.0%} under the median)"
    slow = page.callout(notes, title, bad=True) if notes else ""
    plain = "".join(f'<p class="table-note">note: {e(note)}</p>\n' for note in judgement_notes(breakdown))
    return table + f'<p class="table-note">{e(caption(run, breakdown))}</p>\n' + slow + plain


def hosts_chart_html(run: RunRecord, colours: Colours | None = None) -> str:
    from backupbench.report import charts

    breakdown = host_breakdown(run)
    figure = hosts_figure(breakdown, colours) if breakdown else None
    if figure is None:
        return ""
    over_time = ("each host over time: Per-host timelines below" if any(timeline_sources(op) for op in run.operations)
                 else "no per-host samples were fetched (give the run --agent-token-file, with an agent on each "
                      "host), so no per-host timeline is drawn")
    # A caption (or legend) about slow hosts on a chart without one would alarm over nothing.
    slow = (f"hatched red-edged bars: hosts more than {SLOW_FRACTION:.0%} under the other hosts' median"
            if any(op.slow for op in breakdown) else "no host is called slow")
    caption_text = (f"Each operation per host, dashed: the median of the hosts that reported; {slow}. "
                    f"Whole-phase figures; {over_time}.")
    return page.figure(charts.inline_svg(figure, "hosts", "Each operation per host against the median"),
                       caption_text)


def hosts_figure(breakdown: list[OperationHosts], colours: Colours | None = None):
    """Horizontal bars: one row per operation, one bar per host that reported (a host keeps
    its colour of the page throughout), a dashed median across each row, slow hosts hatched with
    a red edge. None when no host reported anything."""
    from backupbench.report import charts
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ops = [op for op in breakdown if op.hosts]
    if not ops:
        return None
    # One axis, one unit: operations judged by another figure (an S3 delete's objects/s
    # among MiB/s) are left to the table.
    ops = [op for op in ops if op.figure == ops[0].figure]
    hosts = list(dict.fromkeys(row.host for op in ops for row in op.hosts))
    colours = colours or Colours(hosts)
    divisor = HEADINGS.get(ops[0].figure, ("", 1.0))[1]
    slots = max(len(op.hosts) for op in ops)
    thickness = 0.8 / slots
    with charts.style():
        fig = Figure(figsize=(charts.WIDTH_IN, min(11.0, 1.6 + 0.3 * sum(len(op.hosts) for op in ops))),
                     layout="constrained")
        ax = fig.add_subplot()
        for y, op in enumerate(ops):
            for slot, row in enumerate(op.hosts):
                colour = colours.of(row.host)
                bar = ax.barh(y + (slot - (len(op.hosts) - 1) / 2) * thickness, row.value / divisor,
                              height=thickness * 0.92, color=colour, hatch="//" if row.slow else None,
                              edgecolor=palette.BAD if row.slow else colour, linewidth=1.4 if row.slow else 0)
                text = f"{row.value / divisor:,.1f}" + (f" (-{row.under_median:.0%})" if row.slow else "")
                # On white: the median line may run through a label.
                ax.bar_label(bar, labels=[text], padding=3, fontsize=7.5, zorder=4,
                             bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6})
            if op.median is not None:
                ax.vlines(op.median / divisor, y - 0.45, y + 0.45, colors=palette.REFERENCE, linestyles="dashed",
                          linewidth=1.2, zorder=3)
        # Drawn apart from the bars: the legend shows each host's colour, not its first bar's
        # (which may be hatched as slow).
        handles = [Line2D([], [], color=palette.REFERENCE, linestyle="dashed", label="median of hosts"),
                   *[Patch(color=colours.of(h), label=h) for h in hosts]]
        if any(op.slow for op in ops):
            handles.append(Patch(facecolor="white", edgecolor=palette.BAD, hatch="//", label="slow host"))
        # A host lost in the operation has no bar: the row says so rather than leave a gap unexplained.
        ax.set_yticks(range(len(ops)), labels=[op.operation + "".join(f"\n({h} lost)" for h in op.lost) for op in ops])
        ax.set_ylim(len(ops) - 0.5, -0.5)   # first operation on top
        unit = HEADINGS.get(ops[0].figure, (ops[0].figure, 1.0))[0]
        ax.set_xlabel(f"{unit} per host (higher is better)")
        ax.set_title("Each operation per host", loc="left")
        ax.grid(axis="y", visible=False)
        ax.margins(x=0.18)
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5))
        return fig


# ---------------------------------------------------------------------------------------------
# Per-host timelines


def _read(root: Path, name: str) -> str | None:
    """A host's CSV in the run folder; None if absent, unreadable or (a crafted name) outside it."""
    path = (root / name).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def host_timelines(run: RunRecord, folder: Path) -> list[PhaseTimeline]:
    """Every phase's per-host timeline, in run order, from the CSVs in the run folder (each read once)."""
    root = Path(folder).resolve()
    read: dict[str, str | None] = {}
    found = []
    for op in run.operations:
        # A grouped operation (`<n>-<kind>/<phase>` of a recipe) keeps its raw files, these
        # CSVs too, in its group's folder, as every workload of a recipe does.
        group = naming.group_of(op.name)
        texts: dict[str, str | None] = {}
        for name in timeline_sources(op).values():
            where = f"{group}/{name}" if group else name
            if where not in read:
                read[where] = _read(root, where)
            texts[name] = read[where]
        timeline = phase_timeline(op, texts)
        if timeline is not None:
            found.append(timeline)
    return found


def drawn_lines(timeline: PhaseTimeline) -> list:
    """The hosts' lines long enough to draw (charts.MIN_TIMELINE_SAMPLES samples or more)."""
    from backupbench.report import charts

    return [line for line in timeline.lines if len(line.ends) >= charts.MIN_TIMELINE_SAMPLES]


def host_timeline_figure(timeline: PhaseTimeline, colours: Colours | None = None):
    """One line per host with enough samples (a host keeps its colour of the page); None when
    no host has one."""
    from backupbench.report import charts
    from matplotlib.figure import Figure

    lines = drawn_lines(timeline)
    if not lines:
        return None
    colours = colours or Colours()
    with charts.style():
        fig = Figure(figsize=(charts.WIDTH_IN, 3.2), layout="constrained")
        ax = fig.add_subplot()
        for line in lines:
            xs, ys = charts._steps(line.ends, line.mib_s)
            ax.plot(xs, ys, color=colours.of(line.host), linewidth=1.6,
                    label=f"{line.host} (mean {line.mean:,.1f}, peak {line.peak:,.1f} MiB/s)")
        ax.set_xlim(0, max(timeline.duration_s, 1.0))
        ax.set_ylim(bottom=0)
        ax.set_ylabel("read+write MiB/s\n(" + ("the target's disks" if all(line.of_target for line in lines)
                                                 else "each host's disks") + ")")
        ax.set_xlabel("time into the phase (s)")
        ax.set_title(f"{timeline.operation}: each host's disks over time", loc="left")
        fig.legend(loc="outside lower center", ncols=min(len(lines), 3))
        return fig


def _line_text(line) -> str:
    from backupbench.report import charts

    over = (f"the disks under its agent's root ({line.stack})" if line.of_target
            else f"its whole disks{f' ({line.stack})' if line.stack else ''}")
    text = (f"{line.host}: mean {line.mean:,.1f}, peak {line.peak:,.1f} MiB/s over {over}: "
            f"{', '.join(line.disks) or 'no disk'} ({len(line.ends)} samples; raw: {line.csv})")
    if len(line.ends) < charts.MIN_TIMELINE_SAMPLES:
        text += f", not drawn: fewer than {charts.MIN_TIMELINE_SAMPLES} samples show no shape over time"
    return text


def _timeline_caption(timeline: PhaseTimeline) -> str:
    hosts = "; ".join(_line_text(line) for line in timeline.lines)
    missing = "".join(f"; no line for {host}: {why}" for host, why in timeline.missing.items())
    missing += "".join(f"; {line.host}'s agent stopped answering ({timeline.lost[line.host]}): its line ends there"
                       for line in timeline.lines if line.host in timeline.lost)
    return (f"{timeline.operation}: read+write MiB/s of each host's disks under its agent's root (its whole disks "
            f"when the root is on none), 1 s samples from its backupbench agent over the phase's time by this "
            f"machine's clock (the hosts' clocks are taken to agree). {hosts}{missing}")


def host_timelines_html(run: RunRecord, folder: Path, colours: Colours | None = None) -> str:
    """A chart per measured phase with per-host samples; "" for a run without any."""
    from backupbench.report import charts

    colours = colours or Colours(run_hosts(run))
    parts = []
    for index, timeline in enumerate(host_timelines(run, folder)):
        figure = host_timeline_figure(timeline, colours)
        if figure is None:
            parts.append(f"<p>{e(_timeline_caption(timeline))}</p>\n")
            continue
        label = f"Per-host timeline of {timeline.operation}: {', '.join(line.host for line in drawn_lines(timeline))}"
        parts.append(page.figure(charts.inline_svg(figure, f"host-timeline-{index}", label),
                                 _timeline_caption(timeline)))
    return "".join(parts)
