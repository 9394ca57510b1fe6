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
