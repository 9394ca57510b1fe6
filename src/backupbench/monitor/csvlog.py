"""The monitor's CSV: one row per interval, column names as iostat / sar print them.

    timestamp,elapsed_s,%user,%system,%iowait,%steal,%idle,mem_used_MiB,%memused,
    swap_used_MiB,ldavg-1,ldavg-5,ldavg-15, then per device
    <dev>:r/s,<dev>:w/s,<dev>:rMB/s,<dev>:wMB/s,<dev>:rrqm/s,<dev>:wrqm/s,<dev>:r_await,
    <dev>:w_await,<dev>:aqu-sz,<dev>:rareq-sz,<dev>:wareq-sz,<dev>:%util

`read_csv` reads it back (the report draws from it).

timestamp is local time with its UTC offset (ISO 8601, ms) at the end of the interval;
elapsed_s is seconds from the priming snapshot to that end. An empty cell means no value
for that interval (device absent or reset, file unreadable). Each row is flushed as it is
written, so an interrupted run keeps every finished interval.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Sequence

from backupbench.monitor.metrics import DISK_METRICS, HOST_METRICS
from backupbench.monitor.rates import Sample

LEAD_COLUMNS = ("timestamp", "elapsed_s")


def header(devices: Sequence[str]) -> list[str]:
    cols = [*LEAD_COLUMNS, *(m.column for m in HOST_METRICS)]
    for device in devices:
        cols += [f"{device}:{m.column}" for m in DISK_METRICS]
    return cols


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def format_timestamp(wall: float) -> str:
    return datetime.fromtimestamp(wall).astimezone().isoformat(timespec="milliseconds")


def row(sample: Sample, devices: Sequence[str]) -> list[str]:
    cells = [format_timestamp(sample.wall), f"{sample.elapsed_s:.3f}"]
    cells += [_fmt(m.read(sample)) for m in HOST_METRICS]
    for device in devices:
        rates = sample.disks.get(device)
        if rates is None:
            cells += [""] * len(DISK_METRICS)
        else:
            cells += [_fmt(m.read(rates)) for m in DISK_METRICS]
    return cells


class CsvLog:
    """Writes the header at open and one flushed row per sample."""

    def __init__(self, path: Path, devices: Sequence[str]):
        self.path = Path(path)
        self.devices = list(devices)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file)
        self._writer.writerow(header(self.devices))
        self._file.flush()

    def write(self, sample: Sample) -> None:
        self._writer.writerow(row(sample, self.devices))
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


@dataclass(frozen=True)
class MonitorSeries:
    """One phase's monitor CSV: elapsed seconds and every column as floats (NaN = no value)."""

    elapsed: tuple[float, ...]
    columns: dict[str, tuple[float, ...]]
    devices: tuple[str, ...]

    def column(self, name: str) -> tuple[float, ...] | None:
        return self.columns.get(name)


def _float(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


def read_csv(text: str) -> MonitorSeries:
    """Columns as `CsvLog` writes them; unknown columns are kept, bad cells are NaN."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])
    rows = [row for row in reader if row]
    columns: dict[str, tuple[float, ...]] = {}
    for index, name in enumerate(header):
        if name == "timestamp":
            continue
        columns[name] = tuple(_float(row[index]) if index < len(row) else math.nan for row in rows)
    devices: list[str] = []
    for name in header:
        if ":" in name:
            device = name.rsplit(":", 1)[0]
            devices += [device] if device not in devices else []
    return MonitorSeries(columns.pop("elapsed_s", ()), columns, tuple(devices))


def load(path: Path) -> MonitorSeries:
    """A phase's monitor CSV from its file (undecodable bytes replaced)."""
    return read_csv(Path(path).read_text(encoding="utf-8", errors="replace"))
