"""Pure parsing of fio's JSON output (``--output-format=json``), local or client/server.

Local runs list ``jobs``; ``fio --client`` runs list ``client_stats`` (one entry per job per
host) plus an "All clients" aggregate. Either way we reduce to one DirectionStats per
direction, and keep the per-host split for client/server runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from backupbench.errors import EngineError

ALL_CLIENTS = "All clients"
P99 = "99.000000"


@dataclass(frozen=True)
class DirectionStats:
    bw_bytes: float = 0.0
    iops: float = 0.0
    io_bytes: int = 0
    # Total latency (submission + completion) when fio reports it, else completion latency.
    # Submission matters: extending O_DIRECT writes on ext4 complete inside io_submit.
    p99_ns: float | None = None
    mean_ns: float | None = None

    @property
    def active(self) -> bool:
        return self.io_bytes > 0


@dataclass(frozen=True)
class FioSummary:
    read: DirectionStats
    write: DirectionStats
    runtime_ms: int
    fio_version: str
    job_names: tuple[str, ...]
    per_host: dict[str, "FioSummary"] = field(default_factory=dict)


def _direction(entry: dict[str, Any], direction: str) -> DirectionStats:
    stats = entry.get(direction) or {}
    lat = stats.get("lat_ns") or {}
    if "percentile" not in lat:
        lat = stats.get("clat_ns") or {}
    percentiles = lat.get("percentile") or {}
    p99 = percentiles.get(P99)
    return DirectionStats(
        bw_bytes=float(stats.get("bw_bytes", 0) or 0),
        iops=float(stats.get("iops", 0) or 0),
        io_bytes=int(stats.get("io_bytes", 0) or 0),
        p99_ns=float(p99) if p99 is not None and int(stats.get("total_ios", 1) or 0) > 0 else None,
        mean_ns=float(lat["mean"]) if lat.get("N") else None,
    )


def _combine(parts: list[DirectionStats]) -> DirectionStats:
    """Jobs run side by side: throughput adds up; the worst job's p99 bounds the whole."""
    p99s = [p.p99_ns for p in parts if p.p99_ns is not None]
    weighted = [(p.mean_ns, p.iops) for p in parts if p.mean_ns is not None and p.iops > 0]
    total_iops = sum(w for _, w in weighted)
    return DirectionStats(
        bw_bytes=sum(p.bw_bytes for p in parts),
        iops=sum(p.iops for p in parts),
        io_bytes=sum(p.io_bytes for p in parts),
        p99_ns=max(p99s) if p99s else None,
        mean_ns=sum(m * w for m, w in weighted) / total_iops if total_iops else None,
    )


def _check_errors(entries: list[dict[str, Any]]) -> None:
    failed = [e for e in entries if int(e.get("error", 0) or 0) != 0]
    if failed:
        first = failed[0]
        raise EngineError(f"fio job {first.get('jobname')!r} reported error {first.get('error')}")


def _summarise(entries: list[dict[str, Any]], version: str) -> FioSummary:
    return FioSummary(
        read=_combine([_direction(e, "read") for e in entries]),
        write=_combine([_direction(e, "write") for e in entries]),
        runtime_ms=max((int(e.get("job_runtime", e.get("read", {}).get("runtime", 0)) or 0) for e in entries), default=0),
        fio_version=version,
        job_names=tuple(str(e.get("jobname", "")) for e in entries),
    )


def parse(data: dict[str, Any]) -> FioSummary:
    version = str(data.get("fio version", "unknown"))
    if "client_stats" in data:
        entries = [e for e in data["client_stats"] if e.get("jobname") != ALL_CLIENTS]
        _check_errors(entries)
        hosts: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            hosts.setdefault(str(entry.get("hostname", "?")), []).append(entry)
        whole = _summarise(entries, version)
        return FioSummary(
            read=whole.read, write=whole.write, runtime_ms=whole.runtime_ms,
            fio_version=version, job_names=whole.job_names,
            per_host={host: _summarise(group, version) for host, group in hosts.items()},
        )
    entries = data.get("jobs")
    if not entries:
        raise EngineError("fio output has neither 'jobs' nor 'client_stats'")
    _check_errors(entries)
    return _summarise(entries, version)


def parse_text(text: str) -> FioSummary:
    # fio may print warnings before the JSON document when --output is not used.
    start = text.find("{")
    if start < 0:
        raise EngineError("fio printed no JSON result")
    try:
        return parse(json.loads(text[start:]))
    except json.JSONDecodeError as exc:
        raise EngineError(f"fio's JSON result is unreadable: {exc}") from exc
