"""Live progress for a run, on stderr so that --json output stays clean on stdout."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from backupbench.results.model import RunRecord, OperationRecord


class RichReporter:
    def __init__(self, console: Console):
        self.console = console
        self.progress = Progress(
            TextColumn("{task.description:<22}"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
            TextColumn("{task.fields[detail]}"),
            # The live figures change once a second (fio's ETA lines, the loaders' progress): rich's
            # default 10 redraws a second cost 1.5% of a core for nothing (bench/live_display.py).
            console=console, transient=False, refresh_per_second=2,
        )
        self.tasks: dict[str, TaskID] = {}
        self.starts: dict[str, int] = {}  # how often each stage started: a repeated phase's samples

    def __enter__(self) -> "RichReporter":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def run_started(self, run: RunRecord) -> None:
        self.console.print(f"run {run.run_id}: {run.target}", highlight=False)

    def stage_started(self, name: str, description: str) -> None:
        # A repeated phase (--repeat, or layouts measured in rounds) starts once per sample: its
        # bars would read the same without the sample's number.
        count = self.starts[name] = self.starts.get(name, 0) + 1
        label = name if count == 1 else f"{name} #{count}"
        self.tasks[name] = self.progress.add_task(label, total=1.0, detail="")

    def stage_progress(self, name: str, fraction: float, detail: str) -> None:
        self.progress.update(self.tasks[name], completed=fraction, detail=detail)

    def stage_finished(self, name: str, record: OperationRecord | None) -> None:
        self.progress.update(self.tasks[name], completed=1.0, detail="done")

    def caution(self, text: str) -> None:
        self.console.print(f"[yellow]caution:[/] {text}", highlight=False)


class QuietReporter:
    def run_started(self, run: RunRecord) -> None: ...
    def stage_started(self, name: str, description: str) -> None: ...
    def stage_progress(self, name: str, fraction: float, detail: str) -> None: ...
    def stage_finished(self, name: str, record: OperationRecord | None) -> None: ...
    def caution(self, text: str) -> None: ...
