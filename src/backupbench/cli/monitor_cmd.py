"""backupbench monitor: a live, iostat-like view of the host and its block devices."""

from __future__ import annotations

import os
import queue
import stat
import sys
import time
from pathlib import Path
from typing import Iterator

import click
from rich.console import Console
from rich.live import Live

from backupbench import stopping
from backupbench.cli.common import piped_width
from backupbench.errors import InputError
from backupbench.monitor import sysfs
from backupbench.paths import check_length
from backupbench.report.live import live_view, plain_block, summary_table
from backupbench.monitor.sampler import MAX_INTERVAL_S, MIN_INTERVAL_S, Sampler, check_interval
from backupbench.hostfiles import HostFiles
from backupbench.monitor.rates import Sample
from backupbench.monitor.stack import device_stack
from backupbench.monitor.summary import MonitorSummary
from backupbench.monitor.thresholds import Thresholds
from backupbench.units import parse_duration

# Wide enough for the averages table of every column, so that a file or pipe gets it whole.
_WIDE = 200


def _is_block_special(arg: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(arg).st_mode)
    except OSError:
        return False


def resolve_devices(args: tuple[str, ...], host: HostFiles) -> tuple[list[str], dict[str, str]]:
    """--device values -> kernel names (and labels). A directory or file that is not a
    device stands for the devices under its filesystem (top, layers, member disks)."""
    names: list[str] = []
    labels: dict[str, str] = {}
    for arg in args:
        looks_like_path = "/" in arg or arg in (".", "..")
        if looks_like_path and os.path.exists(arg) and not _is_block_special(arg) and not arg.startswith("/dev/"):
            stack = device_stack(arg, host)
            if stack.empty:
                raise InputError(f"{arg} is not on a block device ({stack.reason})",
                                 "name a device such as vda or dm-0, or a directory on a disk filesystem")
            found, labels_here = stack.all_names, stack.labels
        else:
            name = sysfs.resolve_device_name(arg, host)
            found, labels_here = [name], {}
        for name in found:
            if name not in names:
                names.append(name)
        labels.update(labels_here)
    return names, labels


def _duration(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise InputError(f"--duration: {exc}", "use e.g. 30s, 5m or 1h") from None
    if seconds <= 0:
        raise InputError("--duration must be above 0", "leave it out to run until Ctrl-C")
    return seconds


def _samples(arrived: queue.Queue, deadline: float | None, count: int | None) -> Iterator[Sample]:
    """The samples as the sampler hands them over, until the deadline passes or `count` came."""
    seen = 0
    while (deadline is None or time.monotonic() < deadline) and (count is None or seen < count):
        wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
        try:
            sample = arrived.get(timeout=wait)
        except queue.Empty:
            continue
        seen += 1
        yield sample


def _stderr_console() -> Console:
    """Piped, stdout carries only the blocks; the averages go where a person still sees them,
    whole even when stderr is a file too."""
    return Console(stderr=True, highlight=False, width=piped_width(sys.stderr, _WIDE))


def _print_summary(console: Console, summary: MonitorSummary, labels: dict[str, str]) -> None:
    console.print()
    console.print(summary_table(summary, labels))
    for line in summary.warnings:
        console.print(f"[bold red]warning:[/] {line}")
    for line in summary.notes:
        console.print(f"note: {line}", markup=False)
    for line in summary.errors:
        console.print(f"[yellow]sampling error:[/] {line}")
    if summary.csv_path is not None:
        console.print(f"CSV: {summary.csv_path}", markup=False)


@click.option("--device", "-d", "device_args", multiple=True, metavar="DEVICE",
              help="Device to show: a kernel name (vda, dm-0, md0, loop3), a /dev path, or a directory "
                   "(shows the devices under its filesystem, down to the member disks). Repeatable. "
                   "Default: all block devices.")
@click.option("--interval", "-i", type=float, default=1.0, show_default=True, metavar="SECONDS",
              help=f"Seconds between samples ({MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g}).")
@click.option("--duration", default=None, metavar="TIME",
              help="How long to watch, e.g. 30s, 5m. Default: until Ctrl-C.")
@click.option("--count", "-c", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop after N intervals, as iostat's count does. Default: until Ctrl-C or --duration.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Also write every sample to FILE (iostat/sar column names).")
def _monitor(device_args: tuple[str, ...], interval: float, duration: str | None, count: int | None,
             csv_path: Path | None) -> None:
    """Watch CPU, memory, load and block devices live, as `iostat -x -m` shows them.

    MB is MiB, as iostat -m prints it; rareq-sz and wareq-sz are KiB per request. Ctrl-C
    stops and prints the averages. When the output is not a terminal (a pipe, a file), each
    interval is printed as one plain block, as `iostat -x 1` does: a time line, the header
    and a row per device, never cut to the screen's width; the averages then go to stderr.
    """
    interval = check_interval(interval)
    seconds = _duration(duration)
    if csv_path is not None:
        check_length(csv_path.absolute(), "--csv", "give a shorter path")
    host = HostFiles()
    devices, labels = resolve_devices(device_args, host)
    thresholds = Thresholds()
    arrived: queue.Queue = queue.Queue()
    sampler = Sampler(interval, devices or None, csv_path, thresholds, host=host, on_sample=arrived.put)
    console = Console(highlight=False)
    interactive = console.is_terminal
    sampler.start()
    if not devices:
        labels = {d: lab for d in sampler.devices if (lab := sysfs.label(host, d))}
    samples = _samples(arrived, time.monotonic() + seconds if seconds is not None else None, count)
    try:
        if interactive:
            with Live(live_view(None, sampler.devices, thresholds, labels, interval), console=console,
                      auto_refresh=False) as live:
                for sample in samples:
                    live.update(live_view(sample, sampler.devices, thresholds, labels, interval), refresh=True)
        else:
            for sample in samples:
                click.echo(plain_block(sample, sampler.devices), nl=False)
                sys.stdout.flush()   # a reader at the other end of a pipe sees each interval as it ends
    except KeyboardInterrupt:
        stopping.reset()  # Ctrl-C is how an open-ended watch ends: a normal end, exit 0
    except BrokenPipeError:
        pass   # the reader went away (`| head`): nothing more to show, the summary still goes to stderr
    finally:
        summary = sampler.stop()
    _print_summary(console if interactive else _stderr_console(), summary, labels)


monitor_command = click.command("monitor")(_monitor)
