"""Options of the monitor that samples the host during every measured phase (flags of
`backupbench run`, keys of a recipe's [monitor] table)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from backupbench.schema import Duration, Flag

# Test suites and CI running several benchmarks at once set it, rather than a flag on every run.
IGNORE_OTHERS_ENV = "BACKUPBENCH_IGNORE_OTHERS"


class MonitorOptions(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    no_monitor: bool = Field(False, description="Do not sample CPU, memory, load and disks during the run.")
    monitor_interval: Duration = Field(
        1.0, ge=0.2, le=10.0, description="Sampling interval, 0.2 to 10 s.",
        json_schema_extra={"metavar": "DURATION"},
    )
    ignore_others: Flag = Field(
        False, description="Do not watch other processes' CPU and I/O during each phase, and so never mark a phase "
                           "disturbed: for a machine shared on purpose. Also set by BACKUPBENCH_IGNORE_OTHERS=1.")
    warn_latency: Duration = Field(
        0.1, gt=0, le=3600, description="Warn when a disk's r_await or w_await goes above this.",
        json_schema_extra={"metavar": "DURATION"},
    )
    warn_load: float | None = Field(
        None, gt=0, le=1_000_000,
        description="Warn when the 1-minute load average goes above this [default: core count].",
        json_schema_extra={"metavar": "LOAD"},
    )
