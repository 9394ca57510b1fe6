"""Per-host figures of a multi-host run (`run --hosts`, distributed S3 agents), and which hosts
were slow.

Such a run stores each operation's figures as the hosts' total, and each host's own figures in
the record's HostAccount (results/phase.py): each sample's {host label: figures}, and the hosts
lost during the operation with the reason (runner/hosts.py, runner/agents.py). Pure: RunRecord
in, data out. A host's row shows its median over the samples (`HostAccount.per_host`), and the
slow-host rule (noise.judge_hosts) is given every sample of each host.

When each host's agent was asked for its samples (runner/host_monitor.py), a phase's
HostAccount.timeline holds its span by the controller's clock and each host's monitor CSV;
`phase_timeline` cuts one line per host out of those CSVs: its whole disks' read+write MiB/s.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Sequence

from backupbench.analysis import noise
from backupbench.monitor import csvlog
from backupbench.results.model import OperationRecord, RunRecord

# A host is slow when its headline figure is more than this far under the hosts' median
# (issue 15): far enough past run-to-run noise on shared storage to be worth a look.
SLOW_FRACTION = 0.15
# The figure a host is judged by, first one the hosts have: fio and S3 phases carry
# effective_bw; a phase without bytes (an S3 delete or list) only its request rate.
HEADLINE_FIGURES = ("effective_bw", "objects_per_s", "files_per_s")
# p99 latency figures, in ns: fio's read and write (the worse is shown), S3's per request,
# the small-file engine's per file.
P99_FIGURES = ("read_p99_lat", "write_p99_lat", "lat_p99_ns", "file_p99_lat")


def p99_of(figures: dict[str, Any]) -> float | None:
    """The worst p99 latency (ns) among the figures, or None."""
    values = [float(figures[k]) for k in P99_FIGURES if isinstance(figures.get(k), (int, float))]
    return max(values) if values else None


@dataclass(frozen=True)
class HostRow:
    host: str
    value: float                 # the headline figure (B/s, objects/s or files/s)
    p99_ns: float | None
    under_median: float          # fraction under the median: 0.22 = 22% under; negative = over
    slow: bool


@dataclass(frozen=True)
class OperationHosts:
    """One operation of a multi-host run: its hosts, their median, the total."""

    operation: str
    figure: str                  # which headline figure (HEADLINE_FIGURES)
    hosts: list[HostRow]         # hosts that reported, in stored order
    median: float | None         # of the hosts that reported
    total: float | None          # the operation's own figure: the hosts' total
    total_p99_ns: float | None   # fio: from the hosts' histograms merged (detail["p99_total"] says)
    lost: dict[str, str] = field(default_factory=dict)  # lost during this operation: reason
    absent: list[str] = field(default_factory=list)     # known to the run, not in this operation
    note: str = ""               # why no host can be named slow (two hosts: noise.judge_hosts)
    samples: int = 1             # samples per host (--repeat): each row is then the host's median

    @property
    def slow(self) -> list[HostRow]:
        return [row for row in self.hosts if row.slow]


def _headline(hosts: dict[str, Any]) -> str | None:
    """The first headline figure the hosts have and not 0 on all of them (an S3 DELETE moves no
    bytes: its hosts compare by objects/s); the first they have at all if every one is 0."""
    present = [name for name in HEADLINE_FIGURES
               if any(isinstance(f, dict) and isinstance(f.get(name), (int, float)) for f in hosts.values())]
    moving = [name for name in present if any(isinstance(f, dict) and f.get(name) for f in hosts.values())]
    return (moving or present or [None])[0]


def is_multi_host(op: OperationRecord) -> bool:
    return op.hosts is not None and bool(op.hosts.samples) and bool(op.hosts.per_host or op.hosts.lost)


def run_hosts(run: RunRecord) -> list[str]:
    """Every host the run's operations name (reported or lost), first seen first."""
    seen: list[str] = []
    for op in run.operations:
        if is_multi_host(op):
            assert op.hosts is not None
            seen += [name for name in [*op.hosts.per_host, *op.hosts.lost] if name not in seen]
    return seen


def host_samples(op: OperationRecord, figure: str, values: dict[str, float]) -> dict[str, list[float]]:
    """Each reporting host's samples of `figure` (its one value when measured once)."""
    samples = op.hosts.samples if op.hosts is not None else []
    if len(samples) < 2:
        return {host: [value] for host, value in values.items()}
    found: dict[str, list[float]] = {}
    for sample in samples:
        for host, figures in sample.items():
            if host in values and isinstance(figures.get(figure), (int, float)):
                found.setdefault(host, []).append(float(figures[figure]))
    return {host: found.get(host) or [value] for host, value in values.items()}


def operation_hosts(op: OperationRecord, known: list[str]) -> OperationHosts:
    """One operation's hosts against their median. `known`: every host of the run, so that a
    host lost in an earlier operation shows as absent rather than silently missing."""
    per_host: dict[str, Any] = op.hosts.per_host if op.hosts is not None else {}
    lost = dict(op.hosts.lost) if op.hosts is not None else {}
    figure = _headline(per_host) or HEADLINE_FIGURES[0]
    values = {str(h): float(f[figure]) for h, f in per_host.items()
              if isinstance(f, dict) and isinstance(f.get(figure), (int, float))}
    # The conventional median (mean of the middle two for an even count), not stats.nearest_rank:
    # with two hosts the nearest rank is the slower host itself, which could then never be slow.
    median = statistics.median(values.values()) if values else None
    # Slow: each host against the *others* (noise.judge_hosts), over every sample of each host;
    # two hosts cannot name one.
    each = host_samples(op, figure, values)
    judged = noise.judge_hosts(each, fraction=SLOW_FRACTION)
    slow = set(judged.slow)
    rows = []
    for host, value in values.items():
        under = (median - value) / median if median else 0.0
        rows.append(HostRow(host, value, p99_of(per_host[host]), under, host in slow))
    absent = [h for h in known if h not in values and h not in lost]
    total = op.figures.get(figure)
    return OperationHosts(op.name, figure, rows, median, total, p99_of(op.figures), lost, absent,
                          f"{op.name}: {judged.note}" if judged.note else "",
                          max((len(found) for found in each.values()), default=1))


def host_breakdown(run: RunRecord) -> list[OperationHosts]:
    """Every operation of the run that has per-host figures, in run order; [] for a
    single-host run."""
    known = run_hosts(run)
    return [operation_hosts(op, known) for op in run.operations if is_multi_host(op)]


def slow_hosts(breakdown: list[OperationHosts]) -> dict[str, list[tuple[str, float]]]:
    """{host: [(operation, fraction under the median), ...]} for every host slow somewhere,
    hosts and operations in run order."""
    found: dict[str, list[tuple[str, float]]] = {}
    for op in breakdown:
        for row in op.slow:
            found.setdefault(row.host, []).append((op.operation, row.under_median))
    return found


def lost_hosts(breakdown: list[OperationHosts]) -> dict[str, tuple[str, str]]:
    """{host: (operation it was lost during, reason)}, the first time each was lost."""
    found: dict[str, tuple[str, str]] = {}
    for op in breakdown:
        for host, why in op.lost.items():
            found.setdefault(host, (op.operation, why))
    return found


# ---- per-host timelines -----------------------------------------------------------------------



@dataclass(frozen=True)
class HostLine:
    """One host over one phase: each sample's end (seconds into the phase) and its whole disks'
    read+write MiB/s."""

    host: str
    ends: tuple[float, ...]
    mib_s: tuple[float, ...]
    disks: tuple[str, ...]
    csv: str
    of_target: bool = False      # the disks under the agent's root (agent/feed.py), not the host's whole disks
    stack: str = ""              # that device stack in one line, or why the whole disks stand in

    @property
    def mean(self) -> float:
        return sum(self.mib_s) / len(self.mib_s)

    @property
    def peak(self) -> float:
        return max(self.mib_s)


@dataclass(frozen=True)
class PhaseTimeline:
    operation: str
    duration_s: float
    lines: list[HostLine]
    missing: dict[str, str]      # host -> why it has no line
    lost: dict[str, str] = field(default_factory=dict)   # host whose agent stopped answering -> why


def timeline_sources(op: OperationRecord) -> dict[str, str]:
    """{host: its monitor CSV's file name} of a phase with per-host samples; {} otherwise."""
    timeline = op.hosts.timeline if op.hosts is not None else None
    if not isinstance(timeline, dict):
        return {}
    return {str(host): str(where.get("csv")) for host, where in (timeline.get("hosts") or {}).items()
            if isinstance(where, dict) and where.get("csv")}


def _epoch(cell: str) -> float:
    try:
        return datetime.fromisoformat(cell).timestamp()
    except ValueError:
        return math.nan


def _walls(text: str) -> list[float]:
    """Each row's timestamp (the end of its interval) as epoch seconds, NaN where unreadable;
    row for row as csvlog.read_csv reads them (the header, then every non-empty row)."""
    reader = csv.reader(io.StringIO(text))
    next(reader, None)
    return [_epoch(row[0]) for row in reader if row]


def host_line(host: str, text: str, disks: Sequence[str], start: float, end: float, *, interval_s: float = 1.0,
              csv_name: str = "", of_target: bool = False, stack: str = "") -> HostLine | None:
    """The host's samples whose interval's middle falls in [start, end] (the rule of
    runner/host_monitor.in_span), summed over `disks` (those in the CSV; all of its devices if
    none is); None when no sample falls in."""
    series = csvlog.read_csv(text)
    walls = _walls(text)
    chosen = [d for d in disks if d in series.devices] or list(series.devices)
    nan = (math.nan,) * len(series.elapsed)
    columns = [series.column(f"{d}:{way}") or nan for d in chosen for way in ("rMB/s", "wMB/s")]
    ends, values = [], []
    for index, (wall, elapsed) in enumerate(zip(walls, series.elapsed)):
        previous = series.elapsed[index - 1] if index else math.nan
        # A row covers one sampling interval: for the first row, or after a gap (samples the agent
        # no longer had), the usual one.
        length = elapsed - previous if 0 < elapsed - previous <= 2 * interval_s else interval_s
        if math.isnan(wall) or not start <= wall - length / 2 <= end:
            continue
        ends.append(wall - start)
        values.append(sum(c[index] for c in columns if not math.isnan(c[index])))
    if not ends:
        return None
    return HostLine(host, tuple(ends), tuple(values), tuple(chosen), csv_name, of_target, stack)


def phase_timeline(op: OperationRecord, texts: Mapping[str, str | None]) -> PhaseTimeline | None:
    """One line per host of a phase with a per-host timeline; `texts`: each host's CSV text by
    file name (None: not readable). None for a phase without per-host samples."""
    timeline = op.hosts.timeline if op.hosts is not None else None
    sources = timeline_sources(op)
    if not isinstance(timeline, dict) or not sources:
        return None
    start, end = float(timeline["from_wall"]), float(timeline["to_wall"])
    interval = float(timeline.get("interval_s") or 1.0)
    lines: list[HostLine] = []
    lost = {str(host): str(why) for host, why in (timeline.get("lost") or {}).items()}
    missing = {host: f"its agent stopped answering: {why}" for host, why in lost.items() if host not in sources}
    for host, name in sources.items():
        text = texts.get(name)
        where = timeline["hosts"][host]
        line = host_line(host, text, where.get("disks") or [], start, end, interval_s=interval, csv_name=name,
                         of_target=bool(where.get("of_target")), stack=str(where.get("stack") or "")
                         ) if text is not None else None
        if line is not None:
            lines.append(line)
        else:
            missing[host] = f"{name} not readable" if text is None else f"no sample in this phase in {name}"
    return PhaseTimeline(op.name, end - start, lines, missing, lost)
