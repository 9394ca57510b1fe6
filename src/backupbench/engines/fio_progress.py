"""Read fio's own ETA lines (``[W(1)][45.0%][w=1600MiB/s][w=3200 IOPS][eta 00m:05s]``) for a
progress bar: how far, and the current speed and IOPS fio reports each second (the live figures
every timed phase shows)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PERCENT = re.compile(r"\]\[(\d+(?:\.\d+)?)%\]")
_RATE = re.compile(r"\]\[([rw]=[^\]]+?B/s[^\]]*)\]\[(?:([rw]=[^\]]+ IOPS)\])?")


@dataclass(frozen=True)
class EtaStatus:
    fraction: float | None
    rates: str


def last_status(eta_text: str) -> EtaStatus:
    """The newest status in fio's ETA output; fraction None before fio prints any."""
    percents = _PERCENT.findall(eta_text)
    rates = _RATE.findall(eta_text)
    fraction = min(float(percents[-1]) / 100.0, 1.0) if percents else None
    if not rates:
        return EtaStatus(fraction, "")
    speed, iops = rates[-1]
    return EtaStatus(fraction, f"{speed} {iops}".strip())
