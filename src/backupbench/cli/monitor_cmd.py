"""backupbench monitor: a live, iostat-like view of the host and its block devices."""

from __future__ import annotations

import os
import queue
import stat
import time
from pathlib import Path

import click
from rich.console import Console
from rich.live import Live

from backupbench import stopping
from backupbench.errors import InputError
from backupbench.monitor import sysfs
from backupbench.report.live import live_view, summary_table
from backupbench.monitor.sampler import MAX_INTERVAL_S, MIN_INTERVAL_S, Sampler, check_interval
from backupbench.hostfiles import HostFiles
from backupbench.monitor.stack import device_stack
from backupbench.monitor.thresholds import Thresholds
from backupbench.units import parse_duration


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


@click.option("--device", "-d", "device_args", multiple=True, metavar="DEVICE",
              help="Device to show: a kernel name (vda, dm-0, md0, loop3), a /dev path, or a directory "
                   "(shows the devices under its filesystem, down to the member disks). Repeatable. "
                   "Default: all block devices.")
@click.option("--interval", "-i", type=float, default=1.0, show_default=True, metavar="SECONDS",
              help=f"Seconds between samples ({MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g}).")
@click.option("--duration", default=None, metavar="TIME",
              help="How long to watch, e.g. 30s, 5m. Default: until Ctrl-C.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Also write every sample to FILE (iostat/sar column names).")
def _monitor(device_args: tuple[str, ...], interval: float, duration: str | None, csv_path: Path | None) -> None:
    """Watch CPU, memory, load and block devices live, as `iostat -x -m` shows them.

    MB is MiB, as iostat -m prints it. Ctrl-C stops and prints the averages.
    """
    interval = check_interval(interval)
    seconds = _duration(duration)
    host = HostFiles()
    devices, labels = resolve_devices(device_args, host)
    thresholds = Thresholds()
    arrived: queue.Queue = queue.Queue()
    sampler = Sampler(interval, devices or None, csv_path, thresholds, host=host, on_sample=arrived.put)
    console = Console(highlight=False)
    sampler.start()
    if not devices:
        labels = {d: lab for d in sampler.devices if (lab := sysfs.label(host, d))}
    deadline = time.monotonic() + seconds if seconds is not None else None
    try:
        with Live(live_view(None, sampler.devices, thresholds, labels, interval), console=console,
                  auto_refresh=False) as live:
            while deadline is None or time.monotonic() < deadline:
                wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
                try:
                    sample = arrived.get(timeout=wait)
                except queue.Empty:
                    continue
                live.update(live_view(sample, sampler.devices, thresholds, labels, interval), refresh=True)
    except KeyboardInterrupt:
        stopping.reset()  # Ctrl-C is how an open-ended watch ends: a normal end, exit 0
    finally:
        summary = sampler.stop()
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


monitor_command = click.command("monitor")(_monitor)
