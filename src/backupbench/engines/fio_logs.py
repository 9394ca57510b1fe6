"""fio's 1 s latency and IOPS logs (`write_lat_log`, `write_iops_log`, `log_avg_msec=1000`: fio_job.py),
read back as each direction's total latency over time (pure, over the files' text).

fio writes one file per job, `<name>_lat.<n>.log` (for a host of `fio --client`,
`<name>.<host tag>_lat.<n>.log.<address>`: runner/hosts.py names each host's logs), each line `msec, value, direction, 0, 0`: the mean total latency (ns) of the
I/Os that completed in the window ending at msec, counted from the end of the ramp. The IOPS
log beside it gives the same windows' I/O rates, so several jobs' and hosts' means are
weighted by how many I/Os each did, as one mean over all their I/Os would be.

Two quirks of fio 3.33 are absorbed here: a job's last window is logged twice at the same
time (the whole window, then the sliver left when the job ended), and the IOPS log stamps its
windows a millisecond early at times (999, 2999) or leaves the last one out. Windows are
placed on the nearest whole second; the first line of a second wins; a second some job has no
rate for is the jobs' plain mean, with no I/O count.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from backupbench.errors import EngineError

DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
# Each (job, host) log's windows: (direction, second) -> value.
Windows = dict[tuple[str, int], float]


@dataclass(frozen=True)
class SecondMean:
    """One second of one direction: fio's mean total latency, and how many I/Os it averages
    (None where some job's IOPS log has no line for that second)."""

    t_s: int
    mean_ns: float
    ios: int | None


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(name)}(?:\.(.+?))?_(lat|iops)\.(\d+)\.log(?:\.(.+))?$")


def log_files(folder: Path, name: str) -> dict[str, dict[tuple[str, str, str], Path]]:
    """The job `name`'s lat and IOPS logs in `folder`: kind -> (job number, host tag, address)
    -> path ('' for a tag or address the name has none of)."""
    found: dict[str, dict[tuple[str, str, str], Path]] = {"lat": {}, "iops": {}}
    pattern = _pattern(name)
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        match = pattern.match(path.name)
        if match:
            tag, kind, job, address = match.groups()
            found[kind][(job, tag or "", address or "")] = path
    return found


def parse_log(text: str, where: str = "fio log") -> Windows:
    """A log's windows, each on its nearest second; the first line of a second wins (fio logs
    a job's last window again with what was left when it ended)."""
    windows: Windows = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        try:
            msec, value, direction = int(cells[0]), float(cells[1]), int(cells[2])
        except (IndexError, ValueError) as exc:
            raise EngineError(f"{where} line {number} is not 'msec, value, direction, ...': {line[:80]!r}") from exc
        second = max(1, round(msec / 1000))
        windows.setdefault((DIRECTIONS.get(direction, str(direction)), second), value)
    return windows


def merge(latencies: Iterable[Windows], rates: Iterable[Windows | None]) -> dict[str, list[SecondMean]]:
    """Each job's (and host's) windows, paired with its IOPS windows (None: no IOPS log), as
    one mean per direction and second, weighted by the I/Os each job did in it."""
    parts: dict[tuple[str, int], list[tuple[float, float | None]]] = defaultdict(list)
    for lat, iops in zip(latencies, rates):
        for key, mean in lat.items():
            parts[key].append((mean, None if iops is None else iops.get(key)))
    merged: dict[str, list[SecondMean]] = defaultdict(list)
    for (direction, second), values in sorted(parts.items(), key=lambda item: (item[0][0], item[0][1])):
        weights = [w for _, w in values if w is not None]
        if len(weights) == len(values) and sum(weights) > 0:
            mean = sum(m * w for m, w in values if w is not None) / sum(weights)
            merged[direction].append(SecondMean(second, mean, round(sum(weights))))
        else:
            merged[direction].append(SecondMean(second, sum(m for m, _ in values) / len(values), None))
    return dict(merged)


def read_series(folder: Path, name: str) -> dict[str, list[SecondMean]]:
    """The job `name`'s latency over time per direction, from every job's and host's logs in
    `folder`; {} when it left none (a run stored before backupbench asked for them)."""
    files = log_files(folder, name)
    latencies: list[Windows] = []
    rates: list[Windows | None] = []
    for key, path in files["lat"].items():
        latencies.append(parse_log(_read(path), path.name))
        iops = files["iops"].get(key)
        rates.append(parse_log(_read(iops), iops.name) if iops is not None else None)
    return merge(latencies, rates)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise EngineError(f"cannot read fio's log {path}: {exc.strerror or exc}") from exc
