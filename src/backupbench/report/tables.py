"""The table model of a run's report, as data: which tables a run gets (fio operations,
block-clone fulls, small-file phases, S3 phases), their columns, rows, cells and captions.
The terminal (report/terminal.py, rich) and the HTML page (report/html.py) draw the same
tables from here, each in its own way; a cell that is emphasised or coloured says so by its
style (bold, green, yellow, bold red), which each renderer maps to its own means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

from backupbench import units
from backupbench.analysis.compare import run_heading, target_text
from backupbench.analysis.windows import RestoreRange
from backupbench.engines.content import settings_label
from backupbench.engines.s3_records import of_kind
from backupbench.monitor.thresholds import FillThresholds
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, S3_REQUEST_KINDS, OperationRecord, RunRecord
from backupbench.workloads import capabilities, phase_kinds, s3_lock
from backupbench.workloads.kb2014 import timing_label


class Styled(str):
    """A cell's text with a style ('bold', 'green', 'yellow', 'bold red'): equal to its text."""

    style: str

    def __new__(cls, text: str, style: str) -> "Styled":
        cell = super().__new__(cls, text)
        cell.style = style
        return cell


def mib(value: float | None) -> str:
    """Bytes/s in MiB/s as every table shows them ('-' for none)."""
    return "-" if not value else f"{value / units.MiB:,.1f}"


def _latency(op_figures: dict[str, float]) -> str:
    values = [v for k, v in op_figures.items() if k in ("read_p99_lat", "write_p99_lat")]
    if not values:
        return "-"
    worst_ms = max(values) / 1e6
    return f"{worst_ms:,.2f} ms"


def _fio_caption(run: RunRecord) -> str:
    settings = run.settings
    if "size" not in settings:
        return ", ".join(p for p in (settings_label(settings), target_text(run)) if p)
    parts = [
        f"{units.format_size(settings.get('file_size') or settings.get('size') or 0)} test file",
        (timing_label(settings) if capabilities.of_kind(run, run.kind).kb2014_operations
         else "each phase covers the whole file once"),
        f"{units.format_size(settings.get('block_size') or 0)} blocks",
        "buffered I/O" if settings.get("buffered") else "direct I/O",
        str(settings.get("engine", "")),
    ]
    if settings.get("jobs", 1) > 1:
        parts.append(f"{settings['jobs']} jobs")
    return ", ".join(p for p in [*parts, settings_label(settings), target_text(run)] if p)


def _files_caption(run: RunRecord) -> str:
    s = run.settings
    if "files" not in s:
        return ", ".join(p for p in (settings_label(s), target_text(run)) if p)
    parts = [f"{s['files']:,} files of {units.format_size(s['file_size'])} in {s['folders']:,} folders",
             f"{s['threads']} workers", f"flush {s['flush']}", settings_label(s), target_text(run)]
    return ", ".join(p for p in parts if p)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.2f} ms"


def _errors(figures: dict[str, float]) -> str:
    """Failed requests, and the requests retried after a transient answer when there were any."""
    text = f"{figures.get('errors', 0):,.0f}"
    retried = figures.get("retried") or 0
    return Styled(f"{text} ({retried:,.0f} retried)", "yellow") if retried else text


Column = tuple[str, Callable[[dict[str, float]], str]]
FIO_COLUMNS: list[Column] = [
    ("read MiB/s", lambda f: mib(f.get("read_bw"))),
    ("write MiB/s", lambda f: mib(f.get("write_bw"))),
    ("effective MiB/s", lambda f: Styled(mib(f.get("effective_bw")), "bold")),
    ("IOPS", lambda f: f"{(f.get('read_iops') or 0) + (f.get('write_iops') or 0):,.0f}"),
    ("p99 latency", _latency),
]
FILE_COLUMNS: list[Column] = [
    ("files/s", lambda f: Styled(f"{f.get('files_per_s', 0):,.0f}", "bold")),
    ("MiB/s", lambda f: mib(f.get("effective_bw"))),
    ("file p50", lambda f: _ms(f.get("file_p50_lat"))),
    ("file p99", lambda f: _ms(f.get("file_p99_lat"))),
    ("mismatches", lambda f: "-" if "mismatches" not in f else f"{f['mismatches']:,.0f}"),
]
S3_COLUMNS: list[Column] = [
    ("MiB/s", lambda f: Styled(mib(f.get("effective_bw")), "bold")),
    ("objects/s", lambda f: f"{f.get('objects_per_s', 0):,.0f}"),
    ("p50", lambda f: _ms(f.get("lat_p50_ns"))),
    ("p90", lambda f: _ms(f.get("lat_p90_ns"))),
    ("p99", lambda f: _ms(f.get("lat_p99_ns"))),
    ("TTFB p50", lambda f: _ms(f.get("ttfb_p50_ns"))),
    ("errors", _errors),
]
# Block-clone synthetic fulls: the clone, the changed blocks, the space they really took.
CLONE_COLUMNS: list[Column] = [
    ("clone ms", lambda f: _number(f.get("clone_s", 0) * 1000, "")),
    ("clone s/TiB", lambda f: Styled(_number(f.get("clone_s_per_tib"), ""), "bold")),
    ("changed MiB/s", lambda f: mib(f.get("write_bw"))),
    ("space used MiB", lambda f: mib(f.get("fs_used_delta"))),
    ("unshared MiB", lambda f: mib(f.get("unique_bytes"))),
    ("extents", lambda f: f"{f.get('extents', 0):,.0f}"),
]
def _against_original(f: dict[str, float]) -> str:
    """The restore against the original full's: '1.20x slower' or '1.20x faster' (a cost under 1
    is a faster restore, which 'x slower' would have said as '0.83x slower')."""
    cost = f.get("fragmentation_cost")
    if not cost:
        return "-"
    return f"{cost:.2f}x slower" if cost >= 1 else f"{1 / cost:.2f}x faster"


FRAGMENTATION_COLUMN: Column = ("against the original", _against_original)
def _s3_detail(f: dict[str, float], notes: Sequence[str] = ()) -> str:
    """Object Lock's immutability check, a FAIL with its reasons (`notes`: the phase's
    detail["notes"]), or a mixed phase's share per request kind."""
    if "lock_delete_refused" in f:
        if s3_lock.lock_held(f):
            return Styled("immutable: PASS", "green")
        return Styled(f"immutable: FAIL: {'; '.join(s3_lock.failure_reasons(f, notes))}", "bold red")
    kinds = [(k, f[f"{k}_ops"]) for k in S3_REQUEST_KINDS if f.get(f"{k}_ops")]
    parts = [f"{k} {n:,.0f}" for k, n in kinds]
    if f.get("multipart_objects"):
        parts.append(f"multipart {f['multipart_objects']:,.0f}")
    return ", ".join(parts) or "-"


def request_kinds(figures: dict[str, float]) -> list[tuple[str, dict[str, float]]]:
    """A mixed S3 phase's request kinds that ran, each with its own figures (the stored
    'put_lat_p50_ns' as 'lat_p50_ns'), so the S3 columns read them as a phase's."""
    found = []
    for kind in S3_REQUEST_KINDS:
        own = of_kind(figures, kind)
        if own.get("ops"):
            found.append((kind, own))
    return found


def _kind_rows(op: OperationRecord, columns: list[Column]) -> list[Row]:
    """Under a complete mixed phase, a row per request kind: one p50/p99 over PUT, GET, LIST and
    DELETE together says little about any of them."""
    if op.status != COMPLETE:
        return []
    total = op.figures.get("ops") or sum(own["ops"] for _, own in request_kinds(op.figures))
    rows = []
    for kind, own in request_kinds(op.figures):
        count = f"{own['ops']:,.0f} request" + ("s" if own["ops"] != 1 else "")
        cells = tuple(count if heading == S3_DETAIL_COLUMN[0] else cell(own)
                      for heading, cell in columns)
        share = f"{own['ops'] / total:.0%} of its requests" if total else ""
        rows.append(Row(f"  ↳ {kind.upper()}", share, COMPLETE, cells))
    return rows


def multipart_text(run: RunRecord) -> str:
    """'12 objects went up as multipart (over 64 MiB, 16 MiB parts)', or '' when none did."""
    counts = [op.figures["multipart_objects"] for op in run.operations if op.figures.get("multipart_objects")]
    if not counts:
        return ""
    settings = run.settings
    sizes = [f"over {units.format_size(settings['multipart_threshold'])}" if settings.get("multipart_threshold") else "",
             f"{units.format_size(settings['part_size'])} parts" if settings.get("part_size") else ""]
    shape = ", ".join(part for part in sizes if part)
    return f"{sum(counts):,.0f} objects went up as multipart" + (f" ({shape})" if shape else "")


S3_DETAIL_COLUMN: Column = ("check / mix", _s3_detail)
MONITOR_COLUMNS: list[Column] = [
    ("disk %util", lambda f: _number(f.get("members_util"), "%")),
    ("disk w_await", lambda f: _number(f.get("members_w_await"), " ms")),
]
# A pool's own figures: a phase served from the ARC never reached the member disks.
ZFS_COLUMNS: list[Column] = [
    ("ARC hit", lambda f: _number(f.get("zfs.arc_hit"), "%")),
    ("pool used", lambda f: _number(f.get("zfs.pool_used"), "%")),
]


SNAPSHOT_PREFIX, SNAPSHOT_FILL, SNAPSHOT_INVALID = "snapshot.", ".data_pct_max", ".invalid"
THIN_PREFIX, THIN_DATA, THIN_METADATA = "thinpool.", ".data_pct_max", ".metadata_pct_max"


def _named(figures: dict[str, float], prefix: str, suffix: str) -> dict[str, float]:
    """{snapshot or pool: value} of the figures '<prefix><name><suffix>' (monitor/snapwatch.py,
    monitor/thinwatch.py store one per snapshot and per pool)."""
    return {k[len(prefix):-len(suffix)]: v for k, v in figures.items() if k.startswith(prefix) and k.endswith(suffix)}


def _fill(value: float | None) -> str:
    """A fill level, yellow from the warning threshold and bold red from the critical one."""
    level = FillThresholds().level(value) if value is not None else None
    style = {"warning": "yellow", "critical": "bold red"}.get(level or "", "")
    return Styled(_number(value, "%"), style) if style else _number(value, "%")


def _snapshot_cell(figures: dict[str, float]) -> str:
    """The fullest snapshot's highest Data%, and which snapshots turned Invalid."""
    fills = _named(figures, SNAPSHOT_PREFIX, SNAPSHOT_FILL)
    invalid = sorted(name for name, flag in _named(figures, SNAPSHOT_PREFIX, SNAPSHOT_INVALID).items() if flag)
    highest = max(fills.values()) if fills else None
    if invalid:
        return Styled(f"{_number(highest, '%')} Invalid ({', '.join(invalid)})", "bold red")
    return _fill(highest)


def _highest(figures: dict[str, float], suffix: str) -> str:
    values = _named(figures, THIN_PREFIX, suffix).values()
    return _fill(max(values) if values else None)


# Space a layout's snapshots or thin pool had left: the highest fill of the workload's phases.
SNAPSHOT_COLUMNS: list[Column] = [("snapshot Data% max", _snapshot_cell)]
THIN_COLUMNS: list[Column] = [
    ("thin pool data% max", lambda f: _highest(f, THIN_DATA)),
    ("thin pool meta% max", lambda f: _highest(f, THIN_METADATA)),
]


def monitor_columns(ops: list) -> list[Column]:
    """The sampled columns the phases have figures for: member disks, then a ZFS pool's, then
    the fill of an LVM layout's snapshots and thin pool."""
    columns = MONITOR_COLUMNS if any("members_util" in op.figures for op in ops) else []
    columns = columns + (ZFS_COLUMNS if any("zfs.arc_hit" in op.figures for op in ops) else [])
    names = {name for op in ops for name in op.figures}
    if any(name.startswith(SNAPSHOT_PREFIX) and name.endswith(SNAPSHOT_FILL) for name in names):
        columns = columns + SNAPSHOT_COLUMNS
    if any(name.startswith(THIN_PREFIX) for name in names):
        columns = columns + THIN_COLUMNS
    return columns


def phase_kind(run: RunRecord, op: OperationRecord) -> str:
    """What `op` measured (workloads/phase_kinds.py), as its workload declared it for `run`."""
    kind = naming.workload_of(op.name, capabilities.workload_kinds(run.kind, run.settings))
    return phase_kinds.of_kind(run, kind).of(naming.phase_of(op.name))


class TableSpec(NamedTuple):
    operations: list[OperationRecord]
    columns: list[Column]
    pattern_heading: str
    caption: str


def table_specs(run: RunRecord) -> list[TableSpec]:
    """One table per kind of phase (fio operations, small-file phases, S3 phases): its
    operations, columns, pattern heading and caption."""
    # A fault's rebuild and its member baseline are drawn in its own table (report/faults.py).
    measured = [op for op in run.operations if op.state not in (naming.REBUILD, naming.MEMBER)]
    kinds = [phase_kind(run, op) for op in measured]
    s3_ops, file_ops, clone_ops, fio_ops = ([op for op, kind in zip(measured, kinds) if kind == wanted]
                                            for wanted in (phase_kinds.S3, phase_kinds.FILES, phase_kinds.CLONE,
                                                           phase_kinds.FIO))
    specs = []
    if fio_ops or not (file_ops or s3_ops or clone_ops):
        fragmented = any("fragmentation_cost" in op.figures for op in fio_ops)
        specs.append(TableSpec(fio_ops, FIO_COLUMNS + ([FRAGMENTATION_COLUMN] if fragmented else []),
                               "fio pattern", _fio_caption(run)))
    if clone_ops:
        specs.append(TableSpec(clone_ops, CLONE_COLUMNS, "clone + changes", settings_label(run.settings)))
    if file_ops:
        specs.append(TableSpec(file_ops, FILE_COLUMNS, "files", _files_caption(run)))
    if s3_ops:
        detailed = any(name in op.figures for op in s3_ops
                       for name in ("lock_delete_refused", "put_ops", "get_ops", "multipart_objects"))
        caption = (settings_label(run.settings), run.target, multipart_text(run),
                   "↳: a mixed phase's requests of one kind, rates over the phase's whole time" if any(
                       _kind_rows(op, S3_COLUMNS) for op in s3_ops) else "")
        specs.append(TableSpec(s3_ops, S3_COLUMNS + ([S3_DETAIL_COLUMN] if detailed else []), "requests",
                               ", ".join(p for p in caption if p)))
    return specs


@dataclass(frozen=True)
class Row:
    operation: str
    pattern: str
    status: str                # COMPLETE, or what the phase ended as (shown instead of its figures)
    cells: tuple[str, ...]     # one per figure column (str or Styled); none unless complete
    cached: str | None = None  # why the disks saw under half its bytes (the cache guard), or None
    unstable: bool = False     # its headline figure's CV over 10%
    disturbed: str | None = None  # what other processes took while it ran (monitor/others.py), or None

    @property
    def flags(self) -> str:
        """'cached, disturbed, unstable': the phase's flags as its flags cell says them ('' for none)."""
        return ", ".join(name for name, on in (("cached", self.cached), ("disturbed", self.disturbed),
                                               ("unstable", self.unstable)) if on)


@dataclass(frozen=True)
class OperationsTable:
    """One table of a run's report: its title, the heading of the pattern column, the figure
    columns' headings, a row per operation, and the caption under it."""

    title: str
    pattern_heading: str
    headings: tuple[str, ...]
    rows: tuple[Row, ...]
    caption: str


SPREAD_HEADING = "n: 95% interval, CV"
# A column of its own, shown when a phase of the table is flagged: the reader sees the flag
# beside the figure it is about, not only in the notes under the run.
FLAGS_HEADING = "flags"


def headline_figure(op: OperationRecord) -> str | None:
    return op.headline_figure


def spread_cell(op: OperationRecord) -> str:
    """'3: 290.1–335.2, CV 3.1%' of the headline figure (in its column's unit), yellow when the
    CV is over 10% (stats.py; the flags column says `unstable`); 'one sample' for one sample."""
    name = headline_figure(op)
    figure = op.spread(name) if name is not None else None
    if figure is None:
        return "-"
    if figure.one_sample:
        return "one sample"
    scale = units.MiB if name == "effective_bw" else 1

    def shown(value: float) -> str:
        return f"{value / scale:,.1f}"

    assert figure.low is not None and figure.high is not None and figure.cv is not None
    # A log-scale interval is marked (stats.py: its centre is the geometric mean, not the mean).
    mark = {"log-t": " log", "min-max": " min-max"}.get(figure.method, "")
    text = f"{figure.n}: {shown(figure.low)}–{shown(figure.high)}{mark}, CV {figure.cv:.1%}"
    return Styled(text, "yellow") if figure.unstable else text


def flags_cell(row: Row) -> str:
    """The flags column's cell: `cached` and `disturbed` bold red (the figure is not the storage's
    alone), `unstable` yellow."""
    if not row.flags:
        return ""
    return Styled(row.flags, "bold red" if row.cached or row.disturbed else "yellow")


def _cells(op: OperationRecord, columns: list[Column], repeated: bool) -> tuple[str, ...]:
    if op.status != COMPLETE:
        return ()
    # Why a lock check failed is stored in its detail (the loader's notes), not in its figures.
    stored = op.detail.get("notes")
    notes = [str(note) for note in stored] if isinstance(stored, list) else []
    return tuple(_s3_detail(op.figures, notes) if cell is _s3_detail else cell(op.figures)
                 for _, cell in columns) + ((spread_cell(op),) if repeated else ())


def _flagged(rows: tuple[Row, ...]) -> tuple[Row, ...]:
    """The rows with a flags cell last, when any phase of the table is flagged."""
    if not any(row.flags for row in rows):
        return rows
    return tuple(Row(row.operation, row.pattern, row.status,
                     row.cells + (flags_cell(row),) if row.status == COMPLETE else row.cells,
                     row.cached, row.unstable, row.disturbed) for row in rows)


def run_tables(run: RunRecord) -> list[OperationsTable]:
    """The operations tables of `run`, each with the sampled columns its phases have figures for;
    phases measured several times show their medians and a spread column."""
    title = f"{run_heading(run)} — {run.target}" + (" (BUFFERED)" if run.settings.get("buffered") else "")
    tables = []
    for spec in table_specs(run):
        columns = spec.columns + monitor_columns(spec.operations)
        repeated = any(op.sample_count > 1 for op in spec.operations)
        spacer = ("",) if repeated else ()
        rows = _flagged(tuple(row for op in spec.operations for row in (
            Row(op.name, op.pattern, op.status, _cells(op, columns, repeated), op.cached, op.unstable, op.disturbed),
            *(Row(kind.operation, kind.pattern, kind.status, kind.cells + spacer) for kind in _kind_rows(op, columns)))))
        headings = tuple(h for h, _ in columns) + ((SPREAD_HEADING,) if repeated else ()) + (
            (FLAGS_HEADING,) if any(row.flags for row in rows) else ())
        caption = spec.caption + ("; figures are medians of the samples" if repeated else "")
        tables.append(OperationsTable(title, spec.pattern_heading, headings, rows, caption))
    return tables


def _number(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:,.1f}{unit}"


def restore_range_text(restore: RestoreRange) -> str:
    """'1,441.7–1,888.2': low to high, whichever end is random; the one form every table uses."""
    return f"{restore.low_bps / units.MiB:,.1f}–{restore.high_bps / units.MiB:,.1f}"


def model_range_text(restore: RestoreRange) -> str:
    """'; on the model's spinning disk 49.5–250.0 MiB/s' when the run stored the model's
    restores (disk_model.py), else ''."""
    if restore.model_worst_bps is None or restore.model_best_bps is None:
        return ""
    low, high = sorted((restore.model_worst_bps, restore.model_best_bps))
    return f"; model, the same file on a spinning disk: {low / units.MiB:,.1f}–{high / units.MiB:,.1f} MiB/s"
