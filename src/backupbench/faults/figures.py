"""The rebuild's own figures from the 1 s samples of its state: how long it took, and how
fast it went while the workloads ran and after (idle). Pure: tests feed it samples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from backupbench.monitor.rebuild import Sample

# Figure names of the `<layout>/rebuild` operation, with their units.
REBUILD_UNITS = {
    "rebuild_seconds": "s", "rebuild_bytes": "B", "rebuild_bw_loaded": "B/s", "rebuild_bw_idle": "B/s",
    "rebuild_percent_loaded": "%", "rebuild_loaded_seconds": "s", "rebuild_idle_seconds": "s",
    "copyback_seconds": "s", "copyback_bytes": "B", "copyback_bw": "B/s",
}

# A rebuild seen finished this soon after the workloads stopped ended while they ran, as far as
# 1 s samples can tell: its idle part is no measurement (a few % "copied" in a fraction of a
# second read as GB/s), so no idle speed is given (runner/faulted.py notes why).
MIN_IDLE_SECONDS = 1.5


@dataclass(frozen=True)
class RebuildSpan:
    started: float                 # watch-elapsed seconds the rebuild command was given
    load_ended: float | None       # the workloads stopped (None: an idle rebuild)
    ended: float | None            # the rebuild was seen finished (None: it did not finish)


def _done_at(samples: Sequence[Sample], when: float) -> float:
    """Bytes rebuilt by `when`: the last sample at or before it that says."""
    done = 0.0
    for sample in samples:
        if sample.elapsed > when:
            break
        if sample.state.done_bytes is not None and sample.state.rebuilding:
            done = float(sample.state.done_bytes)
    return done


def total_bytes(samples: Sequence[Sample], since: float, until: float = float("inf")) -> float | None:
    """What the rebuild had to copy: done / percent of the latest sample that says both."""
    best = None
    for sample in samples:
        state = sample.state
        if since <= sample.elapsed <= until and state.done_bytes and state.percent and state.percent > 0:
            best = state.done_bytes * 100.0 / state.percent
    return best


def rebuild_figures(samples: Sequence[Sample], span: RebuildSpan) -> dict[str, float]:
    figures: dict[str, float] = {}
    if span.ended is None:
        return figures
    figures["rebuild_seconds"] = span.ended - span.started
    total = total_bytes(samples, span.started, span.ended)
    if total is not None:
        figures["rebuild_bytes"] = total
    own = [s for s in samples if s.elapsed >= span.started]
    if span.load_ended is not None:
        loaded = min(span.load_ended, span.ended) - span.started
        figures["rebuild_loaded_seconds"] = loaded
        done = total if span.load_ended >= span.ended and total is not None else _done_at(own, span.load_ended)
        if loaded > 0:
            figures["rebuild_bw_loaded"] = done / loaded
        if total:
            figures["rebuild_percent_loaded"] = min(100.0, 100.0 * done / total)
        idle_from, idle_done = span.load_ended, done
    else:
        idle_from, idle_done = span.started, 0.0
    idle = span.ended - idle_from
    long_enough = idle > (MIN_IDLE_SECONDS if span.load_ended is not None else 0.0)
    if long_enough and total is not None:
        figures["rebuild_idle_seconds"] = idle
        figures["rebuild_bw_idle"] = max(0.0, total - idle_done) / idle
    return figures


def copy_back_figures(samples: Sequence[Sample], span: RebuildSpan) -> dict[str, float]:
    """A dRAID spare's data copied back onto a real disk (idle): its time, bytes and speed."""
    idle = rebuild_figures(samples, RebuildSpan(span.started, None, span.ended))
    renamed = {"rebuild_seconds": "copyback_seconds", "rebuild_bytes": "copyback_bytes",
               "rebuild_bw_idle": "copyback_bw"}
    return {renamed[name]: value for name, value in idle.items() if name in renamed}
