"""The live progress bars: one per stage, a repeated phase's later samples numbered."""

from __future__ import annotations

import io

from rich.console import Console

from backupbench.cli.progress import RichReporter


def test_each_sample_of_a_repeated_phase_gets_a_bar_with_its_number():
    console = Console(file=io.StringIO(), width=120, record=True, color_system=None)
    with RichReporter(console) as reporter:
        for _ in range(3):  # layouts measured in rounds: each round one sample of each
            for stage in ("linear/active-full", "striped/active-full"):
                reporter.stage_started(stage, "write qd8")
                reporter.stage_progress(stage, 0.5, "")
                reporter.stage_finished(stage, None)
        reporter.stage_started("thin/first-write", "write qd8")
    assert [task.description for task in reporter.progress.tasks] == [
        "linear/active-full", "striped/active-full", "linear/active-full #2", "striped/active-full #2",
        "linear/active-full #3", "striped/active-full #3", "thin/first-write"]
    assert "striped/active-full #3" in console.export_text()
