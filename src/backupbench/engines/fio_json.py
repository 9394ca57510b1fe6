"""Pure parsing of fio's JSON output (``--output-format=json`` or ``json+``), local or client/server.

Local runs list ``jobs``; ``fio --client`` runs list ``client_stats`` (one entry per job per
host) plus an "All clients" aggregate. Either way we reduce to one DirectionStats per
direction, and keep the per-host split for client/server runs. json+ adds each job's latency
histogram (``bins``), from which several jobs' or hosts' percentiles are merged (fio_bins.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from backupbench.engines import fio_bins
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
    # The histogram p99_ns is read from (json+ only; jobs or hosts combined: their sum) and
    # which latency it counts, "lat_ns" or "clat_ns": only histograms of one kind add up.
    bins: dict[int, int] | None = field(default=None, repr=False)
    bins_of: str = ""

    @property
    def active(self) -> bool:
        return self.io_bytes > 0

    def percentiles(self) -> dict[float, int]:
        """p50, p95, p99 and p99.9 (ns) from the histogram; empty without one."""
        return fio_bins.percentiles(self.bins) if self.bins else {}


@dataclass(frozen=True)
class SteadyState:
    """fio's steady-state detection of a job (`steadystate=`): whether the criterion held over
    the window before the runtime ran out, and the criterion's last value as fio printed it."""

    criterion: str           # what was asked, e.g. 'iops_slope:0.300000%'
    attained: bool
    measured: str            # e.g. '0.117070%' (a slope may be negative: fio judges its size)
    window_s: float


@dataclass(frozen=True)
class FioSummary:
    read: DirectionStats
    write: DirectionStats
    runtime_ms: int
    fio_version: str
    job_names: tuple[str, ...]
    per_host: dict[str, "FioSummary"] = field(default_factory=dict)
    steady_state: SteadyState | None = None


def _steady_state(entries: list[dict[str, Any]]) -> SteadyState | None:
    """The steady-state result of jobs reported as a group: attained only if every job's was."""
    found = [e["steadystate"] for e in entries if isinstance(e.get("steadystate"), dict)]
    if not found:
        return None
    return SteadyState(criterion=str(found[0].get("ss", "")), attained=all(int(f.get("attained", 0)) for f in found),
                       measured=str(found[0].get("criterion", "")), window_s=float(found[0].get("duration", 0) or 0))


def _direction(entry: dict[str, Any], direction: str) -> DirectionStats:
    stats = entry.get(direction) or {}
    kind = "lat_ns"
    lat = stats.get(kind) or {}
    if "percentile" not in lat:
        kind = "clat_ns"
        lat = stats.get(kind) or {}
    percentiles = lat.get("percentile") or {}
    p99 = percentiles.get(P99)
    measured = p99 is not None and int(stats.get("total_ios", 1) or 0) > 0
    bins = None
    if measured and "bins" in lat:
        # An empty histogram beside a measured p99 would be fio's slip: then there is none to merge.
        bins = fio_bins.parse(lat["bins"], f"{direction} {kind} bins") or None
    return DirectionStats(
        bw_bytes=float(stats.get("bw_bytes", 0) or 0),
        iops=float(stats.get("iops", 0) or 0),
        io_bytes=int(stats.get("io_bytes", 0) or 0),
        p99_ns=float(p99) if measured else None,
        mean_ns=float(lat["mean"]) if lat.get("N") else None,
        bins=bins,
        bins_of=kind if bins is not None else "",
    )


def _combined_p99(parts: list[DirectionStats]) -> tuple[float | None, dict[int, int] | None, str]:
    """The p99 of jobs run side by side, with the histogram it was read from (None without one)."""
    measured = [p for p in parts if p.p99_ns is not None]
    kinds = {p.bins_of for p in measured}
    if len(measured) == 1:
        return measured[0].p99_ns, measured[0].bins, measured[0].bins_of  # fio's own figure
    if measured and all(p.bins is not None for p in measured) and len(kinds) == 1:
        merged = fio_bins.merge(p.bins for p in measured if p.bins is not None)
        return float(fio_bins.percentiles(merged, (99.0,))[99.0]), merged, kinds.pop()
    # Some part without a histogram (plain json, as local runs ask for: with group_reporting
    # they have one part anyway): the worst part's p99 bounds the whole, overstating it.
    p99s = [p.p99_ns for p in measured if p.p99_ns is not None]
    return (max(p99s) if p99s else None), None, ""


def _combine(parts: list[DirectionStats]) -> DirectionStats:
    """Jobs run side by side: throughput adds up; latency percentiles are read from their
    histograms summed (json+), else the worst job's p99 stands for the whole."""
    p99, bins, bins_of = _combined_p99(parts)
    weighted = [(p.mean_ns, p.iops) for p in parts if p.mean_ns is not None and p.iops > 0]
    total_iops = sum(w for _, w in weighted)
    return DirectionStats(
        bw_bytes=sum(p.bw_bytes for p in parts),
        iops=sum(p.iops for p in parts),
        io_bytes=sum(p.io_bytes for p in parts),
        p99_ns=p99,
        mean_ns=sum(m * w for m, w in weighted) / total_iops if total_iops else None,
        bins=bins,
        bins_of=bins_of,
    )


def _check_errors(entries: list[dict[str, Any]]) -> None:
    failed = [e for e in entries if int(e.get("error", 0) or 0) != 0]
    if failed:
        first = failed[0]
        raise EngineError(f"fio job {first.get('jobname')!r} reported error {first.get('error')}")


def _wall_ms(entry: dict[str, Any]) -> int:
    """How long an entry ran: its directions' runtime. Not job_runtime, which under
    group_reporting is the sum over the group's jobs (4 jobs of 10.6 s said 42.1 s, and the
    cache guard then took 4x the bytes as moved)."""
    directions = [int(entry.get(d, {}).get("runtime", 0) or 0) for d in ("read", "write", "trim")]
    return max(directions) or int(entry.get("job_runtime", 0) or 0)


def _summarise(entries: list[dict[str, Any]], version: str) -> FioSummary:
    return FioSummary(
        read=_combine([_direction(e, "read") for e in entries]),
        write=_combine([_direction(e, "write") for e in entries]),
        runtime_ms=max((_wall_ms(e) for e in entries), default=0),
        fio_version=version,
        job_names=tuple(str(e.get("jobname", "")) for e in entries),
        steady_state=_steady_state(entries),
    )


def _host_key(entry: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """A client entry's server: its hostname, with its port when servers on one machine (one
    hostname) answer on several ports."""
    name = str(entry.get("hostname", "?"))
    ports = {e.get("port") for e in entries if str(e.get("hostname", "?")) == name}
    return f"{name}:{entry.get('port')}" if len(ports) > 1 else name


def parse(data: dict[str, Any]) -> FioSummary:
    version = str(data.get("fio version", "unknown"))
    if "client_stats" in data:
        entries = [e for e in data["client_stats"] if e.get("jobname") != ALL_CLIENTS]
        _check_errors(entries)
        hosts: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            hosts.setdefault(_host_key(entry, entries), []).append(entry)
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


# fio prints C's "-nan"/"nan" for a value it could not compute (a steady-state slope over one
# sample): not JSON. Read as NaN, which the figures that use it then leave out.
_NOT_A_NUMBER = re.compile(r"(:\s*)-?nan\b")


def parse_text(text: str) -> FioSummary:
    # fio may print warnings before the JSON document when --output is not used, and its client
    # what became of a lost host after it.
    start = text.find("{")
    if start < 0:
        raise EngineError("fio printed no JSON result")
    try:
        return parse(json.JSONDecoder().raw_decode(_NOT_A_NUMBER.sub(r"\1NaN", text[start:]))[0])
    except json.JSONDecodeError as exc:
        raise EngineError(f"fio's JSON result is unreadable: {exc}") from exc
