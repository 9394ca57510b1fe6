"""Percentiles, one way everywhere: nearest rank.

The p-th percentile is the smallest value with at least p% of the values at or below it:
always a value that was measured, never one made up between two. The same for per-file
latencies, per-request S3 latencies and the monitor's per-interval p95, so that a p99 in
one table means what it means in another.
"""

from __future__ import annotations

from typing import Sequence


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0 < p <= 100) of values sorted ascending; 0.0 for none."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * p // 100))
    return float(sorted_values[int(rank) - 1])
