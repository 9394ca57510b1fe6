"""A stored figure in its base unit: bytes, bytes per second, seconds, a 0-1 ratio.

Figures are stored as measured (ns, ms, MiB/s, %, ...): the run document and the CSV's `value`
keep them so. Programs that compare figures across units want one unit per quantity; the CSV's
`base_value`/`base_unit` and the Prometheus export both convert here, so they never disagree.
Units without a base (counts, IO/s, files/s, load) are their own base, factor 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from backupbench import units


@dataclass(frozen=True)
class BaseUnit:
    unit: str       # B, B/s, s, ratio, or the stored unit when it is its own base
    factor: float   # stored value x factor = value in `unit`


_CONVERSIONS = {
    "B": BaseUnit("B", 1),
    "KiB": BaseUnit("B", units.KiB),
    "MiB": BaseUnit("B", units.MiB),
    "B/s": BaseUnit("B/s", 1),
    "MiB/s": BaseUnit("B/s", units.MiB),
    "ns": BaseUnit("s", 1e-9),
    "ms": BaseUnit("s", 1e-3),
    "s": BaseUnit("s", 1),
    "%": BaseUnit("ratio", 0.01),
}


def base_unit(unit: str) -> BaseUnit:
    """The base unit a figure stored in `unit` converts to, and by what factor."""
    return _CONVERSIONS.get(unit) or BaseUnit(unit, 1)
