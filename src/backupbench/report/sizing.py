"""Tables of the sizing answers (`backupbench size ...`): capacity, rebuild, snapshot, windows.

Sizes are shown both ways, the exact one first: disks are sold in TB, sizes are often given
in TiB.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from backupbench import units
from backupbench.sizing.capacity import Capacity
from backupbench.sizing.rebuild import RebuildEstimate
from backupbench.sizing.snapshot import SnapshotSizing
from backupbench.sizing.window import MeasuredWindow, WindowEstimate

_DECIMAL = (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3))
_BINARY = ((units.TiB * 1024, "PiB"), (units.TiB, "TiB"), (units.GiB, "GiB"), (units.MiB, "MiB"), (units.KiB, "KiB"))


def _trim(value: float) -> str:
    text = f"{value:,.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _decimal(n_bytes: int) -> str | None:
    for unit, factor in _DECIMAL:
        if n_bytes >= factor:
            return f"{_trim(n_bytes / factor)} {unit}"
    return None


def size_text(n_bytes: int) -> str:
    """Both ways, the exact one first: '84 TB (76.4 TiB)' for disks sold in TB,
    '10 TiB (11 TB)' for a size given in TiB."""
    decimal = _decimal(n_bytes)
    if decimal is None:
        return f"{n_bytes:,} B"
    exact_binary = any(n_bytes >= factor and n_bytes % factor == 0 for factor, _ in _BINARY)
    exact_decimal = any(n_bytes >= factor and n_bytes % factor == 0 for _, factor in _DECIMAL)
    if exact_binary and not exact_decimal:
        return f"{units.format_size(n_bytes)} ({decimal})"
    return f"{decimal} ({units.format_size(n_bytes)})"


def rate_text(bytes_per_second: float) -> str:
    return f"{bytes_per_second / units.MiB:,.1f} MiB/s"


def hours_text(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:,.2f}"


def _fits(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def capacity_table(results: list[Capacity]) -> Table:
    table = Table(title="Usable capacity", title_justify="left")
    for heading, justify in (("layout", "left"), ("disks", "right"), ("raw", "right"), ("usable", "right"),
                             ("efficiency", "right"), ("may fail (any)", "right"), ("may fail (best case)", "right")):
        table.add_column(heading, justify=justify)  # type: ignore[arg-type]
    for result in results:
        table.add_row(result.layout, str(result.disks), size_text(result.raw), size_text(result.usable),
                      f"{result.efficiency:.1f}%", str(result.failures_tolerated), str(result.failures_best_case))
    return table


def rebuild_table(results: list[RebuildEstimate], title: str | None = None) -> Table:
    rate = results[0].rate
    table = Table(title=title or f"Rebuild after one disk fails, each disk rebuilding at {rate_text(rate)} "
                                 f"({_trim(rate / 10**6)} MB/s)", title_justify="left")
    for heading in ("layout", "data to rebuild", "one replacement disk (h)", "distributed spare (h)",
                    "faster", "distributed as", "may fail meanwhile"):
        table.add_column(heading, justify="left" if heading in ("layout", "distributed as") else "right")
    for result in results:
        table.add_row(
            result.layout, size_text(result.failed_disk_data), hours_text(result.classic.seconds),
            hours_text(result.distributed.seconds if result.distributed else None),
            f"{result.speedup:,.1f}x" if result.speedup else "-", result.draid or "-",
            str(result.failures_while_rebuilding),
        )
    table.caption = ("one replacement disk: data / rate (that disk writes everything). distributed spare "
                     "(dRAID): data x (d + 1) / ((c - 1) x rate), d reads + 1 write per block spread over "
                     "the c - 1 surviving disks.")
    table.caption_justify = "left"
    return table


def snapshot_table(result: SnapshotSizing) -> Table:
    per = "each" if result.snapshots > 1 else "size"
    table = Table(title=f"Classic snapshot of a {size_text(result.origin)} origin, {size_text(result.change)} "
                        "expected to change (field note E's rule)", title_justify="left")
    for heading in ("", "factor", "base = change x factor", "margin factor", "margin = base x factor",
                    f"{per} = base + margin", *((f"all {result.snapshots}",) if result.snapshots > 1 else ())):
        table.add_column(heading, justify="left" if not heading else "right")
    for name, row in (("low", result.low), ("high", result.high)):
        table.add_row(name, f"{row.factor:g}", size_text(row.base), f"{row.margin_factor:g}", size_text(row.margin),
                      size_text(row.size), *((size_text(row.total),) if result.snapshots > 1 else ()))
    return table


def window_table(estimate: WindowEstimate) -> Table:
    table = Table(title=f"Backup window for {size_text(estimate.backup_size)}", title_justify="left")
    timed = estimate.speed is not None
    window = estimate.window_seconds
    table.add_column("job")
    table.add_column("moves", justify="right")
    if timed:
        table.add_column("at", justify="right")
        table.add_column("hours", justify="right")
    if timed and window is not None:
        table.add_column(f"fits {_trim(window / 3600)} h", justify="right")
    if window is not None:
        table.add_column(f"needs for {_trim(window / 3600)} h", justify="right")
    rows = [("full", estimate.backup_size, estimate.full_seconds, estimate.full_fits, estimate.needed_full_speed)]
    if estimate.incremental_size is not None:
        rows.append((f"incremental ({estimate.change_percent:g}% changed)", estimate.incremental_size,
                     estimate.incremental_seconds, estimate.incremental_fits, estimate.needed_incremental_speed))
    for job, moved, seconds, fits, needed in rows:
        cells = [job, size_text(moved)]
        if timed and estimate.speed is not None:
            cells += [rate_text(estimate.speed), hours_text(seconds)]
        if timed and window is not None:
            cells.append(_fits(fits))
        if window is not None:
            cells.append(rate_text(needed) if needed is not None else "-")
        table.add_row(*cells)
    return table


def measured_table(run_id: str, rows: list[MeasuredWindow], backup_size: int) -> Table:
    table = Table(title=f"Backup windows for {size_text(backup_size)}, measured in run {run_id}",
                  title_justify="left")
    window = rows[0].window_seconds
    incremental = any(row.incremental_seconds is not None for row in rows)
    layouts = any(row.layout for row in rows)
    if layouts:
        table.add_column("layout", no_wrap=True)
    table.add_column("job", no_wrap=True)
    table.add_column("effective MiB/s", justify="right")
    table.add_column("full h", justify="right")
    if incremental:
        table.add_column("incremental job", no_wrap=True)
        table.add_column("incr. h", justify="right")
    if window is not None:
        table.add_column(f"full fits {_trim(window / 3600)} h", justify="right")
        if incremental:
            table.add_column("incr. fits", justify="right")
    for row in rows:
        cells = [*((row.layout or "-",) if layouts else ()), row.label, f"{row.speed / units.MiB:,.1f}",
                 hours_text(row.full_seconds)]
        if incremental:
            cells += [row.incremental_label or "-", hours_text(row.incremental_seconds)]
        if window is not None:
            cells.append(_fits(row.full_fits))
            if incremental:
                cells.append(_fits(row.incremental_fits))
        table.add_row(*cells)
    return table


def snapshot_lines(result: SnapshotSizing) -> list[str]:
    """What the snapshot table means for writes, space and alerts, in sentences."""
    n = result.snapshots
    return [
        f"First write to a chunk with {n} classic snapshot{'s' if n > 1 else ''}: 1 + 2 x {n} = "
        f"{result.first_write_ios} I/Os, so first writes run at about {result.write_speed_factor:.2f}x "
        "(worst case: rewrites of a chunk already copied pay nothing).",
        f"Never needs more than {size_text(result.full_cover)} (every chunk copied, plus its exception "
        "table, at the default 4 KiB chunk).",
        f"Alert while snapshots exist: I/O latency above {result.latency_alert_ms:g} ms, load average "
        f"above {result.load_alert:g} (backupbench run ... --warn-latency {result.latency_alert_ms:g}ms "
        f"--warn-load {result.load_alert:g}).",
    ]


def notes(pairs: list[tuple[str, str]]) -> list[Text]:
    """'note: <owner>: <note>' lines, in the colour of a caution."""
    return [Text(f"note: {owner}: {note}" if owner else f"note: {note}", style="yellow") for owner, note in pairs]
