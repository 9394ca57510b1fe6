"""Read fio's own ETA lines (``[W(1)][45.0%][w=1600MiB/s][...]``) for a progress bar."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PERCENT = re.compile(r"\]\[(\d+(?:\.\d+)?)%\]")
_RATE = re.compile(r"\]\[([rw]=[^\]]+)\]\[")


@dataclass(frozen=True)
class EtaStatus:
    fraction: float | None
    rates: str


def last_status(eta_text: str) -> EtaStatus:
    """The newest status in fio's ETA output; fraction None before fio prints any."""
    percents = _PERCENT.findall(eta_text)
    rates = _RATE.findall(eta_text)
    fraction = min(float(percents[-1]) / 100.0, 1.0) if percents else None
    return EtaStatus(fraction, rates[-1] if rates else "")
