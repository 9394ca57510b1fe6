"""Rich renderables for a run: the operations table, restore range, backup windows, notes."""

from __future__ import annotations

from typing import Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from backupbench import units
from backupbench.engines.content import settings_label
from backupbench.analysis.compare import first_write_penalty, layout_matrix, relative_speed, run_name, speed_changes
from backupbench.analysis.compare import run_heading, speed_text
from backupbench.analysis.settings_diff import SettingDifference, settings_differences
from backupbench.analysis.windows import RestoreRange, backup_windows, layouts_of, restore_range
from backupbench.report.fault_analysis import fault_reports
from backupbench.report.faults import comparison_rows, fault_table
from backupbench.monitor.thresholds import FillThresholds
from backupbench.report.hosts import hosts_renderables
from backupbench.results.model import COMPLETE, RunRecord


def _mib(value: float | None) -> str:
    return "-" if not value else f"{value / units.MiB:,.1f}"


def _latency(op_figures: dict[str, float]) -> str:
    values = [v for k, v in op_figures.items() if k in ("read_p99_lat", "write_p99_lat")]
    if not values:
        return "-"
    worst_ms = max(values) / 1e6
    return f"{worst_ms:,.2f} ms"


def target_text(run: RunRecord) -> str:
    """'xfs on dm-0': the filesystem and device under the (first) target, or ''."""
    target = next(iter(run.host.get("targets", {}).values()), {})
    if not target.get("fs_type"):
        return ""
    return f"{target['fs_type']} on {target.get('block_device') or target.get('source') or '?'}"


def _fio_caption(run: RunRecord) -> str:
    settings = run.settings
    if "size" not in settings:
        return ", ".join(p for p in (settings_label(settings), target_text(run)) if p)
    parts = [
        f"{units.format_size(settings.get('file_size') or settings.get('size') or 0)} test file",
        (f"{settings.get('runtime', 0):g} s per operation" if run.kind == "kb2014"
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


def _errors(figures: dict[str, float]) -> str | Text:
    """Failed requests, and the requests retried after a transient answer when there were any."""
    text = f"{figures.get('errors', 0):,.0f}"
    retried = figures.get("retried") or 0
    return Text(f"{text} ({retried:,.0f} retried)", style="yellow") if retried else text


Column = tuple[str, Callable[[dict[str, float]], "str | Text"]]
FIO_COLUMNS: list[Column] = [
    ("read MiB/s", lambda f: _mib(f.get("read_bw"))),
    ("write MiB/s", lambda f: _mib(f.get("write_bw"))),
    ("effective MiB/s", lambda f: Text(_mib(f.get("effective_bw")), style="bold")),
    ("IOPS", lambda f: f"{(f.get('read_iops') or 0) + (f.get('write_iops') or 0):,.0f}"),
    ("p99 latency", _latency),
]
FILE_COLUMNS: list[Column] = [
    ("files/s", lambda f: Text(f"{f.get('files_per_s', 0):,.0f}", style="bold")),
    ("MiB/s", lambda f: _mib(f.get("effective_bw"))),
    ("file p50", lambda f: _ms(f.get("file_p50_lat"))),
    ("file p99", lambda f: _ms(f.get("file_p99_lat"))),
    ("mismatches", lambda f: "-" if "mismatches" not in f else f"{f['mismatches']:,.0f}"),
]
S3_COLUMNS: list[Column] = [
    ("MiB/s", lambda f: Text(_mib(f.get("effective_bw")), style="bold")),
    ("objects/s", lambda f: f"{f.get('objects_per_s', 0):,.0f}"),
    ("p50", lambda f: _ms(f.get("lat_p50_ns"))),
    ("p90", lambda f: _ms(f.get("lat_p90_ns"))),
    ("p99", lambda f: _ms(f.get("lat_p99_ns"))),
    ("TTFB p50", lambda f: _ms(f.get("ttfb_p50_ns"))),
    ("errors", lambda f: _errors(f)),
]
# Block-clone synthetic fulls: the clone, the changed blocks, the space they really took.
CLONE_COLUMNS: list[Column] = [
    ("clone ms", lambda f: _number(f.get("clone_s", 0) * 1000, "")),
    ("clone s/TiB", lambda f: Text(_number(f.get("clone_s_per_tib"), ""), style="bold")),
    ("changed MiB/s", lambda f: _mib(f.get("write_bw"))),
    ("space used MiB", lambda f: _mib(f.get("fs_used_delta"))),
    ("unshared MiB", lambda f: _mib(f.get("unique_bytes"))),
    ("extents", lambda f: f"{f.get('extents', 0):,.0f}"),
]
FRAGMENTATION_COLUMN: Column = ("x slower than the original", lambda f: (
    "-" if not f.get("fragmentation_cost") else f"{f['fragmentation_cost']:.2f}x"))
def _s3_detail(f: dict[str, float]) -> str | Text:
    """Object Lock's immutability check, or a mixed phase's share per request kind."""
    if "lock_delete_refused" in f:
        passed = f.get("lock_delete_refused") == 1 and f.get("lock_overwrite_kept") == 1 and f.get("lock_applied") == 1
        return Text("immutable: PASS" if passed else "immutable: FAIL", style="green" if passed else "bold red")
    kinds = [(k, f[f"{k}_ops"]) for k in ("put", "get", "list", "delete") if f.get(f"{k}_ops")]
    return ", ".join(f"{k} {n:,.0f}" for k, n in kinds) or "-"


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
    """{snapshot or pool: value} of the figures '<prefix><name><suffix>' (layouts/snapwatch.py,
    layouts/thinwatch.py store one per snapshot and per pool)."""
    return {k[len(prefix):-len(suffix)]: v for k, v in figures.items() if k.startswith(prefix) and k.endswith(suffix)}


def _fill(value: float | None) -> str | Text:
    """A fill level, yellow from the warning threshold and bold red from the critical one."""
    level = FillThresholds().level(value) if value is not None else None
    style = {"warning": "yellow", "critical": "bold red"}.get(level or "", "")
    return Text(_number(value, "%"), style=style) if style else _number(value, "%")


def _snapshot_cell(figures: dict[str, float]) -> str | Text:
    """The fullest snapshot's highest Data%, and which snapshots turned Invalid."""
    fills = _named(figures, SNAPSHOT_PREFIX, SNAPSHOT_FILL)
    invalid = sorted(name for name, flag in _named(figures, SNAPSHOT_PREFIX, SNAPSHOT_INVALID).items() if flag)
    highest = max(fills.values()) if fills else None
    if invalid:
        return Text(f"{_number(highest, '%')} Invalid ({', '.join(invalid)})", style="bold red")
    return _fill(highest)


def _highest(figures: dict[str, float], suffix: str) -> str | Text:
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


def _is_file_phase(op) -> bool:
    return "files_per_s" in op.figures or (not op.figures and op.pattern.endswith(("none", "fsync", "sync-end")))


def _table(run: RunRecord, ops: list, columns: list[Column], pattern_heading: str, caption: str) -> Table:
    buffered = run.settings.get("buffered")
    title = f"{run_heading(run)} — {run.target}" + (" (BUFFERED)" if buffered else "")
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("operation")
    table.add_column(pattern_heading)
    columns = columns + monitor_columns(ops)
    for heading, _ in columns:
        table.add_column(heading, justify="right")
    for op in ops:
        if op.status != COMPLETE:
            table.add_row(op.name, op.pattern, Text(op.status, style="yellow"), *[""] * (len(columns) - 1))
        else:
            table.add_row(op.name, op.pattern, *[cell(op.figures) for _, cell in columns])
    return table


def _is_s3_phase(op) -> bool:
    return "objects_per_s" in op.figures or (not op.figures and op.pattern.startswith(("PUT", "GET", "DELETE")))


def table_specs(run: RunRecord) -> list[tuple[list, list[Column], str, str]]:
    """One table per kind of phase (fio operations, small-file phases, S3 phases): its
    operations, columns, pattern heading and caption. The terminal and the HTML report
    render the same tables from this."""
    # A fault's rebuild and its member baseline are drawn in its own table (report/faults.py).
    measured = [op for op in run.operations if op.detail.get("state") not in ("rebuild", "member")]
    s3_ops = [op for op in measured if _is_s3_phase(op)]
    file_ops = [op for op in measured if op not in s3_ops and _is_file_phase(op)]
    clone_ops = [op for op in measured if "clone_s" in op.figures]
    fio_ops = [op for op in measured if op not in file_ops and op not in s3_ops and op not in clone_ops]
    specs = []
    if fio_ops or not (file_ops or s3_ops or clone_ops):
        fragmented = any("fragmentation_cost" in op.figures for op in fio_ops)
        specs.append((fio_ops, FIO_COLUMNS + ([FRAGMENTATION_COLUMN] if fragmented else []), "fio pattern",
                      _fio_caption(run)))
    if clone_ops:
        specs.append((clone_ops, CLONE_COLUMNS, "clone + changes", settings_label(run.settings)))
    if file_ops:
        specs.append((file_ops, FILE_COLUMNS, "files", _files_caption(run)))
    if s3_ops:
        detailed = any("lock_delete_refused" in op.figures or "put_ops" in op.figures for op in s3_ops)
        specs.append((s3_ops, S3_COLUMNS + ([S3_DETAIL_COLUMN] if detailed else []), "requests",
                      ", ".join(p for p in (settings_label(run.settings), run.target) if p)))
    return specs


def operations_tables(run: RunRecord) -> list[Table]:
    return [_table(run, *spec) for spec in table_specs(run)]


def _number(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:,.1f}{unit}"


def settings_table(differences: list[SettingDifference], names: list[str]) -> RenderableType:
    """Settings that differ between compared runs, flagged; printed above every comparison."""
    if not differences:
        return Text(f"Same settings: {' and '.join(names)} ran the same workload the same way.")
    table = Table(title="Settings differ: the comparison below measures them as well as the storage",
                  title_justify="left", title_style="bold yellow")
    table.add_column("setting")
    for name in names:
        table.add_column(name)
    for difference in differences:
        table.add_row(Text(difference.setting, style="yellow"), *difference.values)
    return table


def baseline_table(run: RunRecord, baseline: RunRecord) -> RenderableType:
    """Each phase against the baseline run, below the settings in which the two differ."""
    names = [f"baseline {run_name(baseline)}", f"this run {run_name(run)}"]
    settings = settings_table(settings_differences([baseline, run]), names)
    title = f"Against baseline {run_name(baseline)}" + (f" ({baseline.run_id})" if baseline.label else "")
    changes = speed_changes(run, baseline)
    if not changes:
        return Group(settings, Text(f"{title}: no completed phase in common to compare", style="yellow"))
    table = Table(title=title, title_justify="left")
    for heading in ("phase", "baseline", "this run", "this run against the baseline"):
        table.add_column(heading, justify="left" if heading == "phase" else "right")
    for row in changes:
        table.add_row(row.operation, speed_text(row.figure, row.baseline), speed_text(row.figure, row.current),
                      row.wording)
    return Group(settings, table)


def restore_range_text(restore: RestoreRange) -> str:
    """'1,441.7–1,888.2': low to high, whichever end is random; the one form every table uses."""
    return f"{restore.low_bps / units.MiB:,.1f}–{restore.high_bps / units.MiB:,.1f}"


def recorded_backup_size(run: RunRecord) -> int | None:
    """--backup-size as given to `run`, or in a recipe's workload."""
    if run.settings.get("backup_size"):
        return run.settings["backup_size"]
    workloads = (run.settings.get("recipe") or {}).get("workload") or []
    return next((w["backup_size"] for w in workloads if w.get("backup_size")), None)


def _layout_lines(run: RunRecord, layout: str | None, size: int | None) -> list[RenderableType]:
    lines: list[RenderableType] = []
    prefix = f"{layout}: " if layout else ""
    restore = restore_range(run, layout)
    if restore:
        # On flash, random reads can beat sequential ones: say which end is which rather than assume.
        lines.append(Text(
            f"{prefix}Restore range: {restore_range_text(restore)} MiB/s "
            f"(unfragmented/sequential {units.format_rate(restore.best_bps)}, "
            f"fully fragmented/random {units.format_rate(restore.worst_bps)})"
        ))
    windows = backup_windows(run, size, layout) if size else []
    if windows:
        table = Table(title=f"{prefix}Backup windows for {units.format_size(size)}", title_justify="left")
        table.add_column("job")
        table.add_column("hours", justify="right")
        for window in windows:
            table.add_row(window.label, f"{window.seconds / 3600:,.1f}")
        lines.append(table)
    penalty = first_write_penalty(run, layout)
    if penalty is not None:
        lines.append(Text(f"{prefix}First-write penalty: overwrite is {penalty:,.2f}x as fast as the first "
                          "write (1.00x = no allocation cost)"))
    return lines


def summary_lines(run: RunRecord, backup_size: int | None = None) -> list[RenderableType]:
    size = backup_size or recorded_backup_size(run)
    lines: list[RenderableType] = []
    for layout in layouts_of(run):
        lines += _layout_lines(run, layout, size)
    for report in fault_reports(run):
        lines.append(fault_table(report))
        lines += [Text(f"note: {line}", style="yellow") for line in report.model_warnings()]
    for note in run.notes:
        lines.append(Text(f"note: {note}", style="yellow"))
    if run.status != COMPLETE:
        lines.append(Text(f"run {run.status}" + (f": {run.error}" if run.error else ""), style="red"))
    return lines


def layouts_table(run: RunRecord) -> RenderableType | None:
    matrix = layout_matrix(run)
    if matrix is None:
        return None
    table = Table(title="Layouts compared (effective MiB/s or files/s; faster/slower: against the first layout)",
                  title_justify="left")
    table.add_column("phase")
    for layout in matrix.layouts:
        table.add_column(layout, justify="right")
    for phase in matrix.phases:
        table.add_row(phase, *layout_cells(matrix, phase))
    for cells in comparison_rows(fault_reports(run), matrix.layouts):
        table.add_row(*cells)
    verdicts = [Text(f"Verdict: {v.text}") for v in map(matrix.verdict, matrix.phases) if v is not None]
    return Group(table, *verdicts)


def layout_cells(matrix, phase: str) -> list[str]:
    """One phase across the layouts: '201.0 (4.00x faster)' against the first layout; the HTML
    report shows the same cells."""
    cells = []
    for layout in matrix.layouts:
        found = matrix.values.get((phase, layout))
        if found is None:
            cells.append("-")
            continue
        figure, value = found
        shown = f"{value / units.MiB:,.1f}" if figure == "effective_bw" else f"{value:,.0f}"
        reference = matrix.reference_layout(phase)
        base = matrix.values.get((phase, reference or ""))
        against = base is not None and base[0] == figure and layout != reference
        cells.append(shown + (f" ({relative_speed(value, base[1])})" if against and base else ""))
    return cells


def run_report(run: RunRecord, backup_size: int | None = None, baseline: RunRecord | None = None) -> RenderableType:
    tables = operations_tables(run)
    # A multi-host run's Hosts table right under the totals it breaks down.
    parts: list[RenderableType] = [*tables, *hosts_renderables(run), *summary_lines(run, backup_size)]
    comparison = layouts_table(run)
    if comparison is not None:
        parts.insert(len(tables), comparison)
    if baseline is not None:
        parts.append(baseline_table(run, baseline))
    return Group(*parts)


def history_table(runs: list[RunRecord]) -> Table:
    table = Table(title="Stored runs", title_justify="left")
    for heading in ("run", "started (UTC)"):
        table.add_column(heading, no_wrap=True)
    labelled = any(run.label for run in runs)  # no empty column for stores without labels
    for heading in (["label"] if labelled else []) + ["status", "target", "size"]:
        table.add_column(heading)
    table.add_column("active-full MiB/s", justify="right")
    table.add_column("restore MiB/s", justify="right")
    for run in runs:
        speeds = {op.name: op.figures.get("effective_bw") for op in run.operations if op.status == COMPLETE}
        restore = restore_range(run)
        table.add_row(
            run.run_id, run.started_at.replace("+00:00", "").replace("T", " "),
            *([Text(run.label)] if labelled else []), run.status, run.target,
            units.format_size(run.settings.get("file_size") or 0),
            _mib(speeds.get("active-full")),
            restore_range_text(restore) if restore else "-",
        )
    return table
