"""The small-file workload (field note E) as a pipeline Workload over the native engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backupbench.engines.smallfiles import FOLDER_PREFIX, PhaseResult, SmallFilesEngine
from backupbench import artefacts
from backupbench.runner.workload import PhaseHooks
from backupbench.workloads.smallfiles import SmallFilesSpec, bytes_needed

PHASE_TITLES = {"create": "create every file", "verify": "read back and compare"}


def figures_of(result: PhaseResult) -> dict[str, float]:
    figures = {
        "files_per_s": result.files_per_s,
        "effective_bw": result.mib_per_s * 2**20,
        "file_p50_lat": result.latency_p50_ns,
        "file_p99_lat": result.latency_p99_ns,
        "files": float(result.files),
        "runtime": result.seconds,
        "sync_seconds": result.sync_seconds,
    }
    if result.mismatches is not None:
        figures["mismatches"] = float(result.mismatches)
    return figures


@dataclass
class SmallFilesWorkload:
    spec: SmallFilesSpec
    engine: SmallFilesEngine = field(default_factory=SmallFilesEngine)
    kind: str = "smallfiles"
    buffered: bool = True  # page cache on purpose: an application's view (see workloads.smallfiles)
    test_file_cautions: bool = False
    keep: bool = False  # leave the tagged folder of files in place (to inspect it)
    space_fix: str = "free some space, or use fewer or smaller files (--files, --file-size)"

    def settings(self) -> dict[str, Any]:
        return self.spec.model_dump(mode="json")

    def space_needed(self) -> int:
        return bytes_needed(self.spec)

    def check(self, target: Path) -> None:
        self.engine.check(self.spec, target)

    def execute(self, target: Path, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        pattern = f"{self.spec.files:,} x {self.spec.file_size // 1024} KiB, {self.spec.threads} thr, {self.spec.flush}"
        started: set[str] = set()

        def on_phase(name: str, fraction: float, detail: str) -> None:
            if name not in started:
                started.add(name)
                title = PHASE_TITLES.get(name, f"rewrite every file in place ({name})")
                hooks.started(name, title, pattern)
            hooks.progress(name, fraction, detail)

        def on_result(result: PhaseResult) -> None:
            hooks.finished(result.name, figures_of(result), {"flush": result.flush})

        folder_id = hooks.will_create(artefacts.tree(tagged_folder(target, run_id), run_id, "small-file folder"))
        try:
            self.engine.run(self.spec, target, run_id, on_phase, keep=self.keep, on_result=on_result)
        finally:
            # The engine removes the folder on every exit path (the run's sweep makes sure);
            # with --keep it is the user's now.
            if self.keep:
                hooks.removed(folder_id, "kept (--keep)")

    def cleanup(self, target: Path, run_id: str, hooks: PhaseHooks) -> None:
        # The engine removes its folder on every exit path; the run's journal sweep makes sure.
        return None


def tagged_folder(target: Path, run_id: str) -> Path:
    return target / f"{FOLDER_PREFIX}{run_id}"
