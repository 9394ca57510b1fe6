"""What a stored run looks like. Figures are named numbers with a unit, so later workloads
(monitor summaries, small-file phases) add figures without changing the schema."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from backupbench import process

# Run and operation states.
RUNNING = "running"
COMPLETE = "complete"
INTERRUPTED = "interrupted"  # a stop signal, or the process died: partial results kept
FAILED = "failed"
VOID = "void"  # finished, but something made the figures meaningless (an Invalid snapshot)

# Well-known figure names and their units.
FIGURE_UNITS = {
    "read_bw": "B/s",
    "write_bw": "B/s",
    "effective_bw": "B/s",
    "read_iops": "IO/s",
    "write_iops": "IO/s",
    "read_p99_lat": "ns",
    "write_p99_lat": "ns",
    "runtime": "s",
    "members_util": "%",
    "members_w_await": "ms",
}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# Set by `backupbench lab` for the guest: the guest's runs belong to the host's lab process,
# which outlives them; the guest's own processes mean nothing on the host.
OWNER_ENV = "BACKUPBENCH_RUN_OWNER"


def current_owner() -> str:
    """Who a new run belongs to (process.identity): a run whose owner is gone is not running."""
    return os.environ.get(OWNER_ENV) or process.identity(os.getpid()) or ""


def new_run_id() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{secrets.token_hex(4)}"


@dataclass
class OperationRecord:
    name: str
    pattern: str
    status: str = RUNNING
    started_at: str = field(default_factory=now_iso)
    finished_at: str | None = None
    figures: dict[str, float] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    # Units of figures whose names are not in FIGURE_UNITS (monitor figures, for one).
    units: dict[str, str] = field(default_factory=dict)

    def unit(self, name: str) -> str:
        return self.units.get(name) or FIGURE_UNITS.get(name, "")

    def figure(self, name: str) -> float | None:
        return self.figures.get(name)


@dataclass
class RunRecord:
    run_id: str
    kind: str
    target: str
    settings: dict[str, Any]
    host: dict[str, Any] = field(default_factory=dict)
    status: str = RUNNING
    started_at: str = field(default_factory=now_iso)
    finished_at: str | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    operations: list[OperationRecord] = field(default_factory=list)
    # The process the run belongs to (process.identity()): a run whose process is gone is
    # not running, whatever its stored status says.
    owner: str = ""
