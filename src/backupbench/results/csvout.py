"""Runs' figures as CSV in long format: one row per run, phase, figure and device.

Long rather than wide: runs of different workloads have different figures, and a monitor
figure is one per device, so a fixed set of columns holds them all and a spreadsheet or
pandas pivots them as it likes. Values are written exactly (Python's shortest repr of the
stored float), units as in the run document (results/document.py); beside them the same value
in its base unit (`base_value`, `base_unit`: B, B/s, s, a 0-1 ratio; results/base_units.py), one
unit per quantity whatever each figure was stored in. `phase_status` is the phase's own status
(a phase whose every request failed is `failed`, whatever its figures). A phase measured several
times has its median in `value`, its sample count in `n`, min/max, CV, the 95% interval and
`unstable` (CV over 10%) beside it and its samples in `samples` (';'-separated); one sample: n 1.
The phase's own flags are columns of every row of it: `cached` (the cache guard: its disks
saw under half the bytes it moved) and `phase_unstable` (its headline figure's CV over 10%);
so are the recipe layout it ran on (`layout`, '' for `run PATH`) and a fault's state (`state`),
which the phase name carries too (`raid6/degraded/restore-random`) but a pivot wants apart.
Columns are only ever added at the end: a reader by position keeps working.
"""

from __future__ import annotations

import csv
from typing import Any, Iterable, Iterator, TextIO

from backupbench.results.base_units import base_unit
from backupbench.results.document import figure_unit, spread_keys
from backupbench.results.model import RunRecord, split_device

COLUMNS = ("run_id", "label", "run_kind", "run_status", "started_at", "phase", "phase_status",
           "figure", "device", "value", "unit", "base_value", "base_unit", "n", "min", "max", "cv", "ci95_low",
           "ci95_high", "unstable", "samples", "cached", "phase_unstable", "layout", "state", "ci95_method", "disturbed")


def _spread_columns(op, name: str) -> dict[str, Any]:
    """n (1 for one sample, the other spread columns then empty); samples joined by ';'."""
    found = spread_keys(op, name)
    if not found:
        return {"n": 1}
    return {"n": len(found["samples"]), "min": found["min"], "max": found["max"], "cv": found["cv"],
            "ci95_low": found["interval"]["low"], "ci95_high": found["interval"]["high"],
            "unstable": "yes" if found["unstable"] else "no", "samples": ";".join(map(repr, found["samples"])),
            "ci95_method": found["interval"]["method"]}


def figure_rows(runs: Iterable[RunRecord]) -> Iterator[dict[str, Any]]:
    for run in runs:
        for op in run.operations:
            for name, value in op.figures.items():
                if value is None:
                    continue
                figure, device = split_device(name)
                unit = figure_unit(op, name)
                base = base_unit(unit)
                yield {"run_id": run.run_id, "label": run.label, "run_kind": run.kind, "run_status": run.status,
                       "started_at": run.started_at, "phase": op.name, "phase_status": op.status,
                       "figure": figure, "device": device or "", "value": float(value), "unit": unit,
                       "base_value": float(value) * base.factor, "base_unit": base.unit, **_spread_columns(op, name),
                       "cached": "yes" if op.cached else "no", "phase_unstable": "yes" if op.unstable else "no",
                       "layout": op.layout, "state": op.state, "disturbed": "yes" if op.disturbed else "no"}


def write_figures(runs: Iterable[RunRecord], stream: TextIO) -> None:
    writer = csv.DictWriter(stream, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(figure_rows(runs))
