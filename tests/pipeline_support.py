"""What the pipeline's unit tests share: a workload on no directory of its own with one phase,
"work" (each test's subclass says what that phase does), and a run of it through
runner/pipeline.execute_remote with its results under the test's folder."""

from __future__ import annotations

from pathlib import Path

from backupbench.cli.progress import QuietReporter
from backupbench.runner.pipeline import RunRequest, execute_remote


class OnePhaseWorkload:
    """Everything the pipeline asks of a workload, answered for one that needs no directory,
    measures one phase ("work") and removes nothing at cleanup. Subclasses (dataclasses) give
    `kind` and `execute`."""

    kind = "one-phase-test"
    needs_directory = False
    buffered = False
    test_file_cautions = False
    space_fix = ""

    def __post_init__(self):
        self.notes: list[str] = []

    def target_label(self, target):
        return "nowhere"

    def engine_versions(self):
        return {}

    def phases(self):
        return ("work",)

    def settings(self):
        return {}

    def space_needed(self):
        return 0

    def check(self, target):
        return None

    def cleanup(self, target, run_id, hooks):
        return None


def run_remote(tmp_path: Path, workload: OnePhaseWorkload):
    """The workload run as `run` runs one on no directory; results under tmp_path/results."""
    return execute_remote(RunRequest(workload=workload, results=tmp_path / "results"), workload, QuietReporter())
