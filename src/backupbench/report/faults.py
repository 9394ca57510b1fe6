"""The fault tables (issue 13): per layout, each operation healthy / degraded / rebuilding /
rebuilt with the factor against healthy and the model, then the rebuild's own line. Cells are
made once here; the terminal and the HTML report draw the same ones."""

from __future__ import annotations

from rich.table import Table

from backupbench import units
from backupbench.analysis.compare import relative_speed
from backupbench.recipe import naming
from backupbench.report.fault_analysis import FaultReport, OperationRow


def _speed(row: OperationRow, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / units.MiB:,.1f}" if row.figure == "effective_bw" else f"{value:,.0f}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.0%}"


def headings(report: FaultReport) -> list[str]:
    unit = "MiB/s" if all(r.figure == "effective_bw" for r in report.rows) else "MiB/s or files/s"
    return ["operation", f"healthy {unit}", "degraded", "rebuilding", "rebuilt", "model", "healthy vs model"]


def rows(report: FaultReport) -> list[list[str]]:
    table = []
    for row in report.rows:
        healthy = row.speeds.get(naming.HEALTHY)
        cells = [row.operation, _speed(row, healthy)]
        for state in naming.FAULT_STATES[1:]:
            mine = row.speeds.get(state)
            against = (f" ({relative_speed(row.samples.get(state) or mine, row.samples.get(naming.HEALTHY) or healthy)})"
                       if healthy and mine is not None else "")
            cells.append(_speed(row, mine) + against)
        cells += [_speed(row, row.model.value) if row.model else "-", _percent(row.model_error)]
        table.append(cells)
    return table


def title(report: FaultReport) -> str:
    after = f"rebuilt onto {report.target}" if report.rebuilds else "no replacement"
    return f"{report.layout}: {', '.join(report.failed)} failed, {after} (faster/slower: against healthy)"


def rebuilt_counts(detail: dict) -> str:
    """What a rebuild's byte count is, by what reported it: each array counts something else,
    so two layouts' figures are compared only knowing which."""
    kind, target = detail.get("kind"), str(detail.get("target", ""))
    if kind == "md":
        return "the member's whole size: md rebuilds every block"
    if kind == "zfs" and "distributed" in target:
        # OpenZFS counts only the repair writes that reach the disks behind the distributed
        # spare (vdev_stat_update), one column of each stripe whose redundancy group held the
        # failed child; on a lightly filled pool that depends on dRAID's per-slice permutation.
        return ("zpool's 'rebuilt': written to the disks behind the distributed spare, the failed disk's "
                "column of each stripe whose group held it (about scanned / group width), not the data")
    if kind == "zfs":
        return "resilvered: written onto the new disk (its share of the data and parity)"
    if kind == "btrfs":
        return "copied by btrfs replace"
    return ""


def rebuild_line(report: FaultReport) -> str:
    figures = report.rebuild
    seconds = figures.get("rebuild_seconds")
    if not report.rebuilds:
        return f"{report.layout}: no replacement, measured degraded only"
    if seconds is None:
        return f"{report.layout}: the rebuild did not finish ({report.record.status})"
    parts = [f"{report.layout}: rebuild {units.format_duration(seconds)}"]
    if figures.get("rebuild_bytes"):
        counts = rebuilt_counts(report.record.detail)
        parts[0] += f" ({units.format_size(int(figures['rebuild_bytes']))}{': ' + counts if counts else ''})"
    if "rebuild_bw_loaded" in figures:
        parts.append(f"with the workloads {units.format_rate(figures['rebuild_bw_loaded'])}"
                     f" ({figures.get('rebuild_percent_loaded', 0):.0f}% in "
                     f"{units.format_duration(figures.get('rebuild_loaded_seconds', 0))})")
    if "rebuild_bw_idle" in figures:
        parts.append(f"idle {units.format_rate(figures['rebuild_bw_idle'])}")
    if report.model_rebuild is not None:
        parts.append(f"model {units.format_duration(report.model_rebuild.value)} "
                     f"({_percent(report.rebuild_error)}; {report.model_rebuild.why})")
    if report.member_bw:
        writes = f", writes {units.format_rate(report.member_write_bw)}" if report.member_write_bw else ""
        parts.append(f"one member reads {units.format_rate(report.member_bw)}{writes}")
    if "copyback_seconds" in figures:
        bw = f" at {units.format_rate(figures['copyback_bw'])}" if figures.get("copyback_bw") else ""
        parts.append(f"copied back onto {report.record.detail.get('copy_back', '?')} in "
                     f"{units.format_duration(figures['copyback_seconds'])}{bw} (idle; redundancy was whole)")
    return "; ".join(parts)


def fault_table(report: FaultReport) -> Table:
    table = Table(title=title(report), title_justify="left", caption=rebuild_line(report), caption_justify="left")
    for index, heading in enumerate(headings(report)):
        table.add_column(heading, justify="left" if index == 0 else "right")
    for cells in rows(report):
        table.add_row(*cells)
    return table


def comparison_rows(reports: list[FaultReport], layouts: tuple[str, ...]) -> list[list[str]]:
    """Two rows for the layout comparison: time to rebuild, and the restore speed during it."""
    by_layout = {r.layout: r for r in reports}
    if not any(name in by_layout for name in layouts):
        return []
    times, restores = ["rebuild time"], ["restore during rebuild MiB/s"]
    for name in layouts:
        report = by_layout.get(naming.layout_of(name))
        seconds = report.rebuild.get("rebuild_seconds") if report else None
        restore = report.restore_during_rebuild() if report else None
        times.append(units.format_duration(seconds) if seconds is not None else "-")
        restores.append(f"{restore / units.MiB:,.1f}" if restore is not None else "-")
    return [times, restores]
