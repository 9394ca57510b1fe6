"""Runs' figures as CSV in long format: one row per run, phase, figure and device.

Long rather than wide: runs of different workloads have different figures, and a monitor
figure is one per device, so a fixed set of columns holds them all and a spreadsheet or
pandas pivots them as it likes. Values are written exactly (Python's shortest repr of the
stored float), units as in the run document (results/document.py).
"""

from __future__ import annotations

import csv
from typing import Any, Iterable, Iterator, TextIO

from backupbench.results.document import figure_unit
from backupbench.results.model import RunRecord, split_device

COLUMNS = ("run_id", "label", "run_kind", "run_status", "started_at", "phase", "phase_status",
           "figure", "device", "value", "unit")


def figure_rows(runs: Iterable[RunRecord]) -> Iterator[dict[str, Any]]:
    for run in runs:
        for op in run.operations:
            for name, value in op.figures.items():
                if value is None:
                    continue
                figure, device = split_device(name)
                yield {"run_id": run.run_id, "label": run.label, "run_kind": run.kind, "run_status": run.status,
                       "started_at": run.started_at, "phase": op.name, "phase_status": op.status,
                       "figure": figure, "device": device or "", "value": float(value),
                       "unit": figure_unit(op, name)}


def write_figures(runs: Iterable[RunRecord], stream: TextIO) -> None:
    writer = csv.DictWriter(stream, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(figure_rows(runs))
