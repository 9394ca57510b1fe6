"""Aging runs as the store keeps them, made by hand: the phases and figures workloads/aging.py
stores (day-NNN:job, day-NNN:restore-...:newest/oldest) on the days a test chooses, with the
speeds it chooses, so the readers (analysis/aging.py, the reports, the plan) are tested without a
filesystem."""

from __future__ import annotations

from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

MiB = 1024 * 1024
FULL = 128 * MiB
DEFAULT_DAYS = (0, 14, 28, 42)


def _figures(values: list[float] | float) -> tuple[float, list[dict[str, float]]]:
    """A figure's stored value and samples: several values are samples (their median stored)."""
    if isinstance(values, list):
        ordered = sorted(values)
        return ordered[len(ordered) // 2], [{"effective_bw": value} for value in values]
    return values, []


def restore(day: int, operation: str, role: str, mib_s: list[float] | float, model_mib_s: float,
            group: str = "", layout: str = "") -> OperationRecord:
    """One restore phase: `mib_s` one value, or a list of samples."""
    value, samples = _figures([v * MiB for v in mib_s] if isinstance(mib_s, list) else mib_s * MiB)
    model = "model_seq_bw" if operation == "restore-sequential" else "model_random_bw"
    point_day = day if role == "newest" else 0
    name = f"day-{day:03d}:{operation}:{role}"
    return OperationRecord(
        name=f"{group}/{name}" if group else name, pattern="read qd1", status=COMPLETE, layout=layout,
        figures={"effective_bw": value, "read_bw": value, model: model_mib_s * MiB, "file_bytes": float(FULL),
                 "file_extents": 1.0 + day * 5, "file_jumps": day * 5.0, "simulated_day": float(day),
                 "point_day": float(point_day), "point_age_days": float(day - point_day)},
        samples=[{**sample, "simulated_day": float(day)} for sample in samples],
        detail={"file": f"full-{point_day:04d}.vbk", "role": role, "map": f"day-{day:03d}-{role}.map.csv",
                "model_disk": "250 MB/s, 8 ms access"})


def job(day: int, space_vs_plan: float, group: str = "", layout: str = "", **more: float) -> OperationRecord:
    name = f"day-{day:03d}:job"
    return OperationRecord(
        name=f"{group}/{name}" if group else name, pattern="active-full" if day == 0 else "synthetic-full",
        status=COMPLETE, layout=layout,
        figures={"simulated_day": float(day), "job_s": 0.5 if day == 0 else 0.05, "write_bytes": float(FULL),
                 "effective_bw": 256.0 * MiB, "space_vs_plan": space_vs_plan, "extents": 1.0 + day * 5,
                 "free_extents": 5.0 + day, "free_under_1mib_pct": day / 10, **more})


def aging_run(run_id: str = "20261201T000000-a9e1", days: tuple[int, ...] = DEFAULT_DAYS,
              sequential: dict[int, list[float] | float] | None = None, oldest_random: float = 300.0,
              group: str = "", layout: str = "", settings: dict | None = None) -> RunRecord:
    """A run that aged a repository: the newest full's sequential restore slows from 1,000 MiB/s
    by 100 MiB/s every 14 days (or `sequential`'s values by day), random at 400 MiB/s; the oldest
    point's random restore at `oldest_random`; the space 0.5x the plan on day 0 up to 0.95x."""
    run = RunRecord(run_id=run_id, kind="aging", target="/srv/repo", status=COMPLETE, settings=settings or {})
    for day in days:
        run.operations.append(job(day, min(0.95, 0.5 + day / 60), group, layout))
        seq = (sequential or {}).get(day, 1000.0 - 100.0 * day / 14)
        run.operations.append(restore(day, "restore-sequential", "newest", seq, 250.0 - day * 4, group, layout))
        run.operations.append(restore(day, "restore-random", "newest", 400.0, 50.0 - day / 2, group, layout))
        if day:
            run.operations.append(restore(day, "restore-sequential", "oldest", 900.0, 200.0, group, layout))
            run.operations.append(restore(day, "restore-random", "oldest", oldest_random, 40.0, group, layout))
    return run
