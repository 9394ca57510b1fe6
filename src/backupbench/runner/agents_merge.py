"""The pure half of the s3 workload from N agents (runner/agents.py): how the run is shared
out over the agents, and how their phases come back together as one operation.

Figures: ops, bytes, errors and retried requests summed; rates over the common wall time (first agent's start
to last agent's end; each start is the loader's own time 0, as in a run from one host; by the
agents' clocks, which NTP keeps within milliseconds); latency
percentiles of every request of every agent together (the agents return their exact sorted
latencies), not averages of percentiles, which would hide a slow agent's tail. A mixed phase
also per request kind (PUT, GET, LIST, DELETE), each from every agent's requests of that kind,
named as a mixed phase from one host names them (engines/s3_records.kind_figures), so every
output shows the same per-kind rows; multipart objects summed.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from typing import Any, Iterable

from backupbench.agent.protocol import pack_sorted, unpack_sorted
from backupbench.engines.s3_records import kind_figures, of_kind
from backupbench.stats import nearest_rank

MERGE_NOTE = ("latency percentiles of every agent's requests together (a mixed phase's per kind, of every "
              "agent's requests of that kind); rates over the common wall time")
COUNTED = ("ops", "errors", "retried", "retries", "bytes")


def split(total: int, parts: int) -> list[int]:
    """total as `parts` near-equal shares, the larger ones first."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def merge_phase(op: str, phases: dict[str, dict[str, Any]]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """One phase of every agent that finished it -> (merged figures, each agent's figures)."""
    starts = {label: float(p["started_wall"]) for label, p in phases.items()}
    first = min(starts.values())
    per_host: dict[str, dict[str, float]] = {}
    for label, phase in phases.items():
        # launch_s: from the agent starting its loader to the loader's time 0 (not phase time).
        per_host[label] = {**phase["figures"], "start_offset_s": starts[label] - first,
                           "launch_s": float(phase.get("launch_s", 0.0))}
    runtimes = [f["runtime"] for f in per_host.values()]
    wall = max(max(f["start_offset_s"] + f["runtime"] for f in per_host.values()), max(runtimes))
    merged = _together(op, [p["figures"] for p in phases.values()], list(phases.values()), wall)
    if any("multipart_objects" in f for f in per_host.values()):
        merged["multipart_objects"] = sum(f.get("multipart_objects", 0.0) for f in per_host.values())
    merged["hosts_reporting"] = float(len(phases))
    if op == "mixed":
        merged.update(_kinds(phases, wall))
    return merged, per_host


def _together(op: str, figures: list[dict[str, float]], samples: list[dict[str, Any]], wall: float) -> dict[str, float]:
    """N agents' figures of one phase (or of one request kind of a mixed phase) as one: counts
    summed, rates over `wall`, percentiles of the agents' packed latencies (`samples`) together."""
    merged = {name: sum(f.get(name, 0.0) for f in figures) for name in COUNTED}
    merged.update(runtime=wall, effective_bw=merged["bytes"] / wall if wall > 0 else 0.0,
                  objects_per_s=merged["ops"] / wall if wall > 0 else 0.0)
    latencies = list(heapq.merge(*(unpack_sorted(s["lat_ns"]) for s in samples)))
    for p in (50, 90, 99):
        merged[f"lat_p{p}_ns"] = nearest_rank(latencies, p)
    if op == "get":
        ttfb = list(heapq.merge(*(unpack_sorted(s.get("ttfb_ns") or pack_sorted([])) for s in samples)))
        merged["ttfb_p50_ns"], merged["ttfb_p99_ns"] = nearest_rank(ttfb, 50), nearest_rank(ttfb, 99)
    return merged


def _kinds(phases: dict[str, dict[str, Any]], wall: float) -> dict[str, float]:
    """A mixed phase's per-kind figures (put_ops, get_lat_p99_ns, ...) merged as the phase's are,
    each kind's percentiles of every agent's requests of that kind (the agents send them:
    agent/runs.py), rates over the common wall time, named as from one host (kind_figures)."""
    figures: dict[str, float] = {}
    for kind in sorted({kind for p in phases.values() for kind in p.get("kinds", {})}):
        mine = [p for p in phases.values() if kind in p.get("kinds", {})]
        part = _together(kind, [of_kind(p["figures"], kind) for p in mine], [p["kinds"][kind] for p in mine], wall)
        figures.update(kind_figures(kind, part, wall))
    return figures


def errors_by_kind(finished: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Every finished agent's failed requests, counted by kind (SlowDown, timeout, ...) together."""
    return dict(sum((Counter(phase.get("errors") or {}) for phase in finished.values()), Counter()))


def every_request_failed(figures: dict[str, float]) -> bool:
    """No agent's request succeeded and some failed: the phase failed, whatever its figures say
    (as one host's s3 phase is stored)."""
    return not figures.get("ops") and bool(figures.get("errors"))


_LIVE = re.compile(r"([\d,.]+) MiB/s, ([\d,.]+) objects/s")


def live_total(details: Iterable[str], done: int, agents: int) -> str:
    """Every agent's live figures (its loader's progress, engines/s3._rate_text) summed: what the
    phase moves right now over all of them, beside how many agents are done."""
    found = [(float(m[1].replace(",", "")), float(m[2].replace(",", ""))) for text in details
             if (m := _LIVE.search(text))]
    said = f"{done}/{agents} agents done"
    if not found:
        return said
    return f"{sum(f[0] for f in found):,.1f} MiB/s, {sum(f[1] for f in found):,.0f} objects/s over {len(found)} agents, {said}"
