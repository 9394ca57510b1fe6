"""Rendering samples: the iostat-like live view and the summary (rich), and the plain-text
block per interval that `monitor` prints when its output is not a terminal.

Pure functions from data to rich renderables or text; the CLI owns the Live and the console.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from backupbench.monitor.csvlog import format_timestamp
from backupbench.monitor.metrics import DISK_METRICS, disk_key
from backupbench.monitor.rates import Sample
from backupbench.monitor.summary import MonitorSummary
from backupbench.monitor.thresholds import Thresholds

_AWAITS = ("r_await", "w_await")
# iostat's own widths: 13 for the device, 8 for a figure; wider where a name or value needs it.
_PLAIN_DEVICE_WIDTH = 13
_PLAIN_FIGURE_WIDTH = 8


def _device_label(device: str, labels: Mapping[str, str] | None) -> str:
    label = (labels or {}).get(device)
    return f"{device} ({label})" if label else device


def host_line(sample: Sample, thresholds: Thresholds | None = None) -> Text:
    """'cpu user 3.1% sys 1.0% iowait 0.4% steal 0.0% idle 95.5% | mem ... | load ...'."""
    thresholds = thresholds or Thresholds()
    text = Text(format_timestamp(sample.wall)[11:23] + "  ", style="dim")
    if sample.cpu is not None:
        c = sample.cpu
        text.append(f"cpu user {c.user:.1f}% sys {c.system:.1f}% ")
        text.append(f"iowait {c.iowait:.1f}%", style="yellow" if c.iowait >= 20 else "")
        text.append(f" steal {c.steal:.1f}% idle {c.idle:.1f}%")
    if sample.memory is not None:
        m = sample.memory
        text.append(f"  |  mem {m.used_mib:,.0f} MiB ({m.used_pct:.1f}%) swap {m.swap_used_mib:,.0f} MiB")
    if sample.load is not None:
        ld = sample.load
        text.append("  |  load ")
        text.append(f"{ld.load1:.2f}", style="bold red" if ld.load1 > thresholds.load1_limit() else "")
        text.append(f" {ld.load5:.2f} {ld.load15:.2f}")
    return text


def device_table(sample: Sample | None, devices: Sequence[str], thresholds: Thresholds | None = None,
                 labels: Mapping[str, str] | None = None) -> Table:
    """One row per device with iostat -x -m's columns; '-' where there is no value yet."""
    thresholds = thresholds or Thresholds()
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("Device", no_wrap=True)
    for metric in DISK_METRICS:
        table.add_column(metric.column, justify="right")
    for device in devices:
        rates = sample.disks.get(device) if sample is not None else None
        if rates is None:
            table.add_row(_device_label(device, labels), *["-"] * len(DISK_METRICS), style="dim")
            continue
        cells = []
        for metric in DISK_METRICS:
            value = metric.read(rates)
            hot = metric.key in _AWAITS and value > thresholds.io_await_ms
            cells.append(Text(f"{value:.2f}", style="bold red" if hot else ""))
        table.add_row(_device_label(device, labels), *cells)
    return table


def live_view(sample: Sample | None, devices: Sequence[str], thresholds: Thresholds | None = None,
              labels: Mapping[str, str] | None = None, interval_s: float = 1.0) -> Group:
    if sample is None:
        head = Text(f"priming counters, first figures in {interval_s:g} s ...", style="dim")
    else:
        head = host_line(sample, thresholds)
    return Group(head, device_table(sample, devices, thresholds, labels))


def summary_table(summary: MonitorSummary, labels: Mapping[str, str] | None = None) -> Table:
    """Per device: the average of each iostat figure, and the highest %util of an interval."""
    table = Table(title=f"averages over {summary.duration_s:.1f} s ({summary.samples} samples)",
                  box=None, pad_edge=False, header_style="bold", title_justify="left")
    table.add_column("Device", no_wrap=True)
    for metric in DISK_METRICS:
        table.add_column(metric.column, justify="right")
    table.add_column("max %util", justify="right")
    for device in summary.devices:
        if disk_key(device, "util") not in summary:
            table.add_row(_device_label(device, labels), *["-"] * (len(DISK_METRICS) + 1), style="dim")
            continue
        cells = [f"{summary[disk_key(device, m)].avg:.1f}" for m in DISK_METRICS]
        cells.append(f"{summary[disk_key(device, 'util')].max:.1f}")
        table.add_row(_device_label(device, labels), *cells)
    return table


def _plain_cpu(sample: Sample) -> list[str]:
    """iostat's avg-cpu lines (without %nice, which /proc/stat's reading here folds into %user);
    no blank line after them as iostat has: a blank line is what ends an interval's block here."""
    if sample.cpu is None:
        return []
    cpu = sample.cpu
    values = (cpu.user, cpu.system, cpu.iowait, cpu.steal, cpu.idle)
    return ["avg-cpu:  %user %system %iowait  %steal   %idle",
            "         " + " ".join(f"{value:>{width}.2f}" for value, width in zip(values, (6, 7, 7, 7, 7)))]


def plain_block(sample: Sample, devices: Sequence[str]) -> str:
    """One interval as `iostat -x` prints it into a pipe: a time line, avg-cpu, the header, one
    row per device, then a blank line. Every column is written whole (nothing is cut to a terminal's
    width) and a device without figures this interval shows '-' in each, so that every row
    has as many fields as the header for awk or a spreadsheet."""
    header = ["Device", *(metric.column for metric in DISK_METRICS)]
    rows = []
    for device in devices:
        rates = sample.disks.get(device)
        rows.append([device, *(f"{metric.read(rates):.2f}" if rates is not None else "-" for metric in DISK_METRICS)])
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    widths = [max(widths[0], _PLAIN_DEVICE_WIDTH), *(max(w, _PLAIN_FIGURE_WIDTH) for w in widths[1:])]
    lines = [format_timestamp(sample.wall), *_plain_cpu(sample)]
    for row in (header, *rows):
        cells = [row[0].ljust(widths[0]), *(cell.rjust(width) for cell, width in zip(row[1:], widths[1:]))]
        lines.append(" ".join(cells))
    return "\n".join(lines) + "\n\n"
