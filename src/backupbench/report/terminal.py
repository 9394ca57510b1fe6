"""Rich renderables for a run: the operations table, restore range, backup windows, notes."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from backupbench import units
from backupbench.analysis.compare import first_write_penalty, layout_matrix, slowdowns
from backupbench.analysis.windows import backup_windows, restore_range
from backupbench.results.model import COMPLETE, RunRecord


def _mib(value: float | None) -> str:
    return "-" if not value else f"{value / units.MiB:,.1f}"


def _latency(op_figures: dict[str, float]) -> str:
    values = [v for k, v in op_figures.items() if k in ("read_p99_lat", "write_p99_lat")]
    if not values:
        return "-"
    worst_ms = max(values) / 1e6
    return f"{worst_ms:,.2f} ms"


def _settings_caption(run: RunRecord) -> str:
    settings = run.settings
    target = next(iter(run.host.get("targets", {}).values()), {})
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
    if target.get("fs_type"):
        parts.append(f"{target['fs_type']} on {target.get('block_device') or target.get('source') or '?'}")
    return ", ".join(parts)


def operations_table(run: RunRecord) -> Table:
    buffered = run.settings.get("buffered")
    title = f"Run {run.run_id} — {run.target}" + (" (BUFFERED)" if buffered else "")
    table = Table(title=title, title_justify="left", caption=_settings_caption(run), caption_justify="left")
    table.add_column("operation")
    table.add_column("fio pattern")
    headings = ["read MiB/s", "write MiB/s", "effective MiB/s", "IOPS", "p99 latency"]
    monitored = any("members_util" in op.figures for op in run.operations)
    if monitored:
        headings += ["disk %util", "disk w_await"]
    for heading in headings:
        table.add_column(heading, justify="right")
    for op in run.operations:
        f = op.figures
        if op.status != COMPLETE:
            table.add_row(op.name, op.pattern, "", "", Text(op.status, style="yellow"),
                          *[""] * (len(headings) - 3))
            continue
        iops = (f.get("read_iops") or 0) + (f.get("write_iops") or 0)
        cells = [
            op.name, op.pattern, _mib(f.get("read_bw")), _mib(f.get("write_bw")),
            Text(_mib(f.get("effective_bw")), style="bold"), f"{iops:,.0f}", _latency(f),
        ]
        if monitored:
            cells += [_number(f.get("members_util"), "%"), _number(f.get("members_w_await"), " ms")]
        table.add_row(*cells)
    return table


def _number(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:,.1f}{unit}"


def slowdown_table(run: RunRecord, baseline: RunRecord) -> Table:
    table = Table(title=f"Against baseline {baseline.run_id}", title_justify="left")
    for heading in ("phase", "baseline", "this run", "slowdown"):
        table.add_column(heading, justify="left" if heading == "phase" else "right")
    for row in slowdowns(run, baseline):
        scale, unit = (units.MiB, " MiB/s") if row.figure == "effective_bw" else (1, " files/s")
        table.add_row(row.operation, f"{row.baseline / scale:,.1f}{unit}", f"{row.current / scale:,.1f}{unit}",
                      Text(f"{row.factor:,.2f}x", style="bold"))
    return table


def summary_lines(run: RunRecord, backup_size: int | None = None) -> list[RenderableType]:
    lines: list[RenderableType] = []
    restore = restore_range(run)
    if restore:
        # On flash, random reads can beat sequential ones: show the range low to high
        # and say which end is which rather than assume.
        low, high = sorted((restore.worst_bps, restore.best_bps))
        lines.append(Text(
            f"Restore range: {low / units.MiB:,.1f}-{high / units.MiB:,.1f} MiB/s "
            f"(unfragmented/sequential {units.format_rate(restore.best_bps)}, "
            f"fully fragmented/random {units.format_rate(restore.worst_bps)})"
        ))
    size = backup_size or run.settings.get("backup_size")
    if size:
        windows = backup_windows(run, size)
        if windows:
            table = Table(title=f"Backup windows for {units.format_size(size)}", title_justify="left")
            table.add_column("job")
            table.add_column("hours", justify="right")
            for window in windows:
                table.add_row(window.label, f"{window.seconds / 3600:,.1f}")
            lines.append(table)
    penalty = first_write_penalty(run)
    if penalty is not None:
        lines.append(Text(f"First-write penalty: overwrite is {penalty:,.2f}x as fast as the first write "
                          "(1.00x = no allocation cost)"))
    for note in run.notes:
        lines.append(Text(f"note: {note}", style="yellow"))
    if run.status != COMPLETE:
        lines.append(Text(f"run {run.status}" + (f": {run.error}" if run.error else ""), style="red"))
    return lines


def layouts_table(run: RunRecord) -> Table | None:
    matrix = layout_matrix(run)
    if matrix is None:
        return None
    table = Table(title="Layouts compared (effective MiB/s or files/s; x = against the first layout)",
                  title_justify="left")
    table.add_column("phase")
    for layout in matrix.layouts:
        table.add_column(layout, justify="right")
    for phase in matrix.phases:
        cells = []
        for layout in matrix.layouts:
            found = matrix.values.get((phase, layout))
            if found is None:
                cells.append("-")
                continue
            figure, value = found
            shown = f"{value / units.MiB:,.1f}" if figure == "effective_bw" else f"{value:,.0f}"
            ratio = matrix.ratio(phase, layout)
            cells.append(shown + (f" ({ratio:.2f}x)" if ratio is not None and layout != matrix.layouts[0] else ""))
        table.add_row(phase, *cells)
    return table


def run_report(run: RunRecord, backup_size: int | None = None, baseline: RunRecord | None = None) -> RenderableType:
    parts: list[RenderableType] = [operations_table(run), *summary_lines(run, backup_size)]
    comparison = layouts_table(run)
    if comparison is not None:
        parts.insert(1, comparison)
    if baseline is not None:
        parts.append(slowdown_table(run, baseline))
    return Group(*parts)


def history_table(runs: list[RunRecord]) -> Table:
    table = Table(title="Stored runs", title_justify="left")
    for heading in ("run", "started (UTC)"):
        table.add_column(heading, no_wrap=True)
    for heading in ("status", "target", "size"):
        table.add_column(heading)
    table.add_column("active-full MiB/s", justify="right")
    table.add_column("restore MiB/s", justify="right")
    for run in runs:
        speeds = {op.name: op.figures.get("effective_bw") for op in run.operations if op.status == COMPLETE}
        restore = restore_range(run)
        table.add_row(
            run.run_id, run.started_at.replace("+00:00", "").replace("T", " "), run.status, run.target,
            units.format_size(run.settings.get("file_size") or 0),
            _mib(speeds.get("active-full")),
            f"{_mib(restore.worst_bps)}-{_mib(restore.best_bps)}" if restore else "-",
        )
    return table
