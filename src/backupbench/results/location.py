"""Where results live: --results DIR, else $XDG_DATA_HOME/backupbench."""

from __future__ import annotations

import os
from pathlib import Path

from backupbench.results.model import OperationRecord


def results_dir(explicit: Path | None = None) -> Path:
    if explicit is not None:
        return explicit.expanduser().resolve()
    env = os.environ.get("BACKUPBENCH_RESULTS")
    if env:
        return Path(env).expanduser().resolve()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "backupbench"


def run_folder(results: Path, run_id: str) -> Path:
    return results / "runs" / run_id


def monitor_csv_path(run_folder: Path, op: OperationRecord) -> Path | None:
    """The phase's monitor CSV inside the run folder, or None. Recorded relative to the run
    folder, or (layouts measured with several workloads) to the layout's folder."""
    recorded = op.detail.get("monitor_csv")
    if not recorded:
        return None
    candidates = [run_folder / recorded]
    layout = op.detail.get("layout")
    if layout:
        candidates.append(run_folder / Path(layout).parent / recorded)
        candidates.append(run_folder / layout / Path(recorded).name)
    root = run_folder.resolve()
    for path in candidates:
        resolved = path.resolve()
        if resolved.is_relative_to(root) and resolved.is_file():
            return resolved
    return None
