"""Each phase's latency picture (results/latency.py) from what its run left in the run folder:
fio's JSON (json+ bins) and 1 s latency logs, the S3 loader's per-request records, or the
latencies N agents sent (runner/agents_latency.py). Read when a report or a run document is
made, never stored: the raw files are the record, this is a view of them.

A phase measured several times has its samples' files in `sample-<n>/`: its histogram and
percentiles are over every sample's requests together (bins added, latencies merged), its
course over time one line per sample. A run stored before fio was asked for json+ has no bins:
its fio phases say so instead of drawing.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backupbench.agent.protocol import unpack_sorted
from backupbench.engines import fio_json, fio_logs, s3_records
from backupbench.errors import EngineError
from backupbench.recipe.naming import group_of
from backupbench.results.latency import (Course, PhaseLatency, fio_seconds, from_bins, from_latencies, request_seconds,
                                         second_of)
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.workloads.s3_values import MIX_OPS

FIO_OF = "fio's total latency (submission + completion) of every I/O, from its json+ bins{together}"
FIO_COURSE = "fio's mean of each second (its 1 s latency log; several jobs or hosts weighted by their I/Os)"
S3_OF = "every successful request's latency (start to last byte){together}"
S3_COURSE = "the requests that ended in each second: their count, mean, p50 and p99"
_SAMPLE = re.compile(r"^sample-(\d+)$")


@dataclass(frozen=True)
class Found:
    """A phase's picture, or why it has none ('' for a phase that measures no latency)."""

    latency: PhaseLatency | None = None
    problem: str = ""


def phase_folders(run_folder: Path, op: OperationRecord, raw: str) -> list[tuple[int, Path]]:
    """(sample number, folder) of each sample that left `raw`: `sample-<n>/` under the phase's
    group when it was measured several times, else the group's folder."""
    group = group_of(op.name)
    base = run_folder / group if group else run_folder
    samples = sorted((int(m[1]), path) for path in (base.iterdir() if base.is_dir() else ())
                     if (m := _SAMPLE.match(path.name)) and (path / raw).is_file())
    if samples:
        return samples
    return [(1, base)] if (base / raw).is_file() else []


def _together(hosts: int, samples: int, who: str, how: str) -> str:
    """' (2 hosts and 3 samples, added bucket by bucket)'; '' for one host's one sample."""
    parts = [f"{count} {what}" for count, what in ((hosts, who), (samples, "samples")) if count > 1]
    return f" ({' and '.join(parts)}, {how})" if parts else ""


# ---- fio --------------------------------------------------------------------------------

def fio_latency(folders: list[tuple[int, Path]], raw: str) -> Found:
    bins: dict[str, list[dict[int, int]]] = defaultdict(list)
    courses: dict[str, list[Course]] = defaultdict(list)
    hosts = 1
    for sample, folder in folders:
        summary = fio_json.parse_text((folder / raw).read_text(errors="replace"))
        hosts = max(hosts, len(summary.per_host))
        series = fio_logs.read_series(folder, raw.removesuffix(".json"))
        for direction, stats in (("read", summary.read), ("write", summary.write)):
            if stats.active and stats.bins:
                bins[direction].append(stats.bins)
                if series.get(direction):
                    courses[direction].append(Course(sample, fio_seconds(series[direction])))
    if not bins:
        return Found(problem="fio's output has no latency bins (runs stored before backupbench asked fio for "
                             "json+ have none)")
    kinds = tuple(from_bins(direction, bins[direction], courses[direction]) for direction in ("read", "write")
                  if bins[direction])
    what = FIO_OF.format(together=_together(hosts, len(folders), "hosts", "added bucket by bucket"))
    return Found(PhaseLatency("fio", what, FIO_COURSE, kinds, len(folders), hosts))


# ---- S3 from one host -------------------------------------------------------------------

def s3_latency(folders: list[tuple[int, Path]], records_name: str) -> Found:
    latencies: dict[str, list[list[int]]] = defaultdict(list)
    courses: dict[str, list[Course]] = defaultdict(list)
    for sample, folder in folders:
        records = [r for r in s3_records.read_records(folder / records_name) if r.ok]
        for kind in sorted({r.op for r in records}):
            mine = [r for r in records if r.op == kind]
            latencies[kind].append(sorted(r.end_ns - r.start_ns for r in mine))
            courses[kind].append(Course(sample, request_seconds((r.end_ns, r.end_ns - r.start_ns) for r in mine)))
    return _s3_found(latencies, courses, len(folders), 1)


def _s3_order(kind: str) -> tuple[int, str]:
    """A mixed phase's kinds in the order its mix names them (put, get, list, delete)."""
    return (MIX_OPS.index(kind) if kind in MIX_OPS else len(MIX_OPS), kind)


def _s3_found(latencies: dict[str, list[list[int]]], courses: dict[str, list[Course]], samples: int,
              hosts: int) -> Found:
    if not latencies:
        return Found(problem="no request succeeded: there is no latency to draw")
    kinds = tuple(from_latencies(kind, latencies[kind], courses[kind]) for kind in sorted(latencies, key=_s3_order))
    what = S3_OF.format(together=_together(hosts, samples, "agents", "their requests together"))
    return Found(PhaseLatency("s3", what, S3_COURSE, kinds, samples, hosts))


# ---- S3 from N agents -------------------------------------------------------------------

def agents_latency(folders: list[tuple[int, Path]], name: str) -> Found:
    """Every agent's requests together; each agent's seconds moved by when its loader began
    timing after the first one's, to the nearest second (NTP keeps their clocks within ms)."""
    latencies: dict[str, list[list[int]]] = defaultdict(list)
    courses: dict[str, list[Course]] = defaultdict(list)
    hosts = 1
    for sample, folder in folders:
        agents: dict[str, Any] = json.loads((folder / name).read_text())["agents"]
        hosts = max(hosts, len(agents))
        first = min((float(a["started_wall"]) for a in agents.values()), default=0.0)
        per_kind: dict[str, list[list[int]]] = defaultdict(list)
        per_second: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for agent in agents.values():
            shift = round(float(agent["started_wall"]) - first)
            for kind, part in agent["kinds"].items():
                per_kind[kind].append(unpack_sorted(part["lat_ns"]) if part.get("lat_ns") else [])
                for t, packed in part.get("seconds", []):
                    per_second[kind][int(t) + shift] += unpack_sorted(packed)
        for kind, parts in per_kind.items():
            if not any(parts):
                continue
            latencies[kind].append(sorted(v for part in parts for v in part))
            seconds = per_second[kind]
            courses[kind].append(Course(sample, tuple(second_of(t, sorted(seconds[t])) for t in sorted(seconds))))
    return _s3_found(latencies, courses, len(folders), hosts)


# ---- a phase, a run ---------------------------------------------------------------------

def phase_latency(run_folder: Path, op: OperationRecord) -> Found:
    """The phase's picture from its raw files; Found() for a phase that measures no latency."""
    detail = op.detail
    readers = (("latencies", agents_latency), ("records", s3_latency), ("raw", fio_latency))
    for key, reader in readers:
        name = detail.get(key)
        if not isinstance(name, str) or not name or (key == "raw" and not name.endswith(".json")):
            continue
        folders = phase_folders(run_folder, op, name)
        if not folders:
            return Found(problem=f"{name} is not in the run folder")
        try:
            return reader(folders, name)
        except (EngineError, OSError, ValueError, KeyError, TypeError) as exc:
            return Found(problem=f"cannot read {name}: {exc}")
    return Found()


def run_latency(run: RunRecord, run_folder: Path) -> dict[str, Found]:
    """Each complete phase's picture or problem, by name; phases without latencies left out."""
    found = {}
    for op in run.operations:
        if op.status != COMPLETE:
            continue
        result = phase_latency(run_folder, op)
        if result.latency is not None or result.problem:
            found[op.name] = result
    return found


def document_latency(found: dict[str, Found]) -> dict[str, dict[str, Any]]:
    """Each phase's picture as its run document gives it (results/latency_models.py)."""
    return {name: f.latency.document() for name, f in found.items() if f.latency is not None}
