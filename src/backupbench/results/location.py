"""Where results live: --results DIR, else $XDG_DATA_HOME/backupbench."""

from __future__ import annotations

import os
from pathlib import Path


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
