"""Reading a stored run's folder back: the raw files the report draws from.

The report draws; finding and reading what a run left in its folder (each phase's monitor
CSV, the commands.txt files) happens here, beside where results live.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backupbench.monitor import csvlog
from backupbench.monitor.csvlog import MonitorSeries
from backupbench.results.model import OperationRecord


def monitor_csv_path(run_folder: Path, op: OperationRecord) -> Path | None:
    """The phase's monitor CSV inside the run folder, or None. Recorded relative to the run
    folder, or (layouts measured with several workloads) to the layout's folder."""
    recorded = op.monitor_csv
    if not recorded:
        return None
    candidates = [run_folder / recorded]
    layout = op.layout
    if layout:
        candidates.append(run_folder / Path(layout).parent / recorded)
        candidates.append(run_folder / layout / Path(recorded).name)
    root = run_folder.resolve()
    for path in candidates:
        resolved = path.resolve()
        if resolved.is_relative_to(root) and resolved.is_file():
            return resolved
    return None


@dataclass(frozen=True)
class PhaseSamples:
    """A phase's monitor samples, or why there are none."""

    series: MonitorSeries | None
    path: Path | None
    problem: str = ""


def phase_samples(run_folder: Path, op: OperationRecord) -> PhaseSamples:
    path = monitor_csv_path(run_folder, op)
    if path is None:
        return PhaseSamples(None, None, f"monitor CSV {op.monitor_csv} not found in the run folder")
    try:
        return PhaseSamples(csvlog.load(path), path)
    except OSError as exc:
        return PhaseSamples(None, path, f"cannot read {path.name}: {exc.strerror or exc}")


def command_files(run_folder: Path) -> list[tuple[Path, str]]:
    """Every non-empty commands.txt of the run (the run folder's, then each layout's):
    (its folder relative to the run folder, its text)."""
    files = sorted(run_folder.rglob("commands.txt"), key=lambda p: (len(p.relative_to(run_folder).parts), str(p)))
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text:
            found.append((path.relative_to(run_folder).parent, text))
    return found
