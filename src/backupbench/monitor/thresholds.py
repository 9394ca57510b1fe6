"""When a sample deserves a warning in the run output (defaults from the field notes)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from backupbench.errors import InputError

DEFAULT_IO_AWAIT_MS = 100.0


@dataclass(frozen=True)
class Thresholds:
    """io_await_ms: r_await or w_await of any sampled device above this is a warning.
    load1: 1-minute load average above this is a warning; None means the core count
    (os.cpu_count()) of the machine doing the sampling."""

    io_await_ms: float = DEFAULT_IO_AWAIT_MS
    load1: float | None = None

    def __post_init__(self) -> None:
        if not self.io_await_ms > 0:
            raise InputError(f"I/O latency threshold must be above 0 ms, not {self.io_await_ms}",
                             "use e.g. 100 (milliseconds)")
        if self.load1 is not None and not self.load1 > 0:
            raise InputError(f"load threshold must be above 0, not {self.load1}",
                             "leave it unset to use the core count")

    def load1_limit(self) -> float:
        return float(self.load1) if self.load1 is not None else float(os.cpu_count() or 1)

    def describe_load1(self) -> str:
        limit = self.load1_limit()
        return f"{limit:g}" if self.load1 is not None else f"{limit:g} (core count)"


# lvm's dmeventd starts warning of a thin pool at 80 % full; 95 % is one step from writes stopping.
DEFAULT_FILL_WARN_PCT = 80.0
DEFAULT_FILL_CRITICAL_PCT = 95.0


@dataclass(frozen=True)
class FillThresholds:
    """How full a classic snapshot's CoW space or a thin pool's data or metadata may get before
    the run's notes say so. At 100 % a classic snapshot turns Invalid and a thin pool stops
    taking writes, so a run that came close is worth a word even when nothing broke."""

    warn_pct: float = DEFAULT_FILL_WARN_PCT
    critical_pct: float = DEFAULT_FILL_CRITICAL_PCT

    def __post_init__(self) -> None:
        if not 0 < self.warn_pct <= self.critical_pct <= 100:
            raise InputError(f"fill thresholds must be 0 < warning <= critical <= 100 %, not "
                             f"{self.warn_pct:g} % and {self.critical_pct:g} %", "use e.g. 80 and 95")

    def level(self, percent: float) -> str | None:
        """'critical', 'warning', or None below the warning threshold."""
        if percent >= self.critical_pct:
            return "critical"
        return "warning" if percent >= self.warn_pct else None

    def note(self, what: str, percent: float) -> str | None:
        """'snapshot snap1 Data% reached 86.2 % (warning from 80 %)', or None below it."""
        level = self.level(percent)
        if level is None:
            return None
        limit = self.critical_pct if level == "critical" else self.warn_pct
        return f"{what} reached {percent:.1f} % ({level} from {limit:g} %)"
