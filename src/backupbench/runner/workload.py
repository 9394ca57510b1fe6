"""What the pipeline needs from a workload, and the hooks a workload reports its phases to.

A workload runs named phases (layout, active-full, create, update-1, ...). It announces each
one to PhaseHooks; the pipeline turns that into progress, monitor samples, stored figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class PhaseHooks(Protocol):
    def started(self, name: str, title: str, pattern: str, measured: bool = True) -> None: ...

    def will_create(self, artefact: dict[str, Any]) -> int | None:
        """Write down something about to be created (a file, a folder, S3 objects) in the
        run's journal, before creating it; returns the id to report its removal with."""

    def removed(self, artefact_id: int | None, how: str = "removed") -> None: ...

    def progress(self, name: str, fraction: float, detail: str) -> None: ...

    def finished(self, name: str, figures: dict[str, float], detail: dict[str, Any] | None = None) -> None: ...


class Workload(Protocol):
    kind: str
    buffered: bool

    def settings(self) -> dict[str, Any]:
        """Everything that shapes the figures, stored with the run."""

    def space_needed(self) -> int: ...

    def check(self, target: Path) -> None:
        """Refusals of the workload's own (RefusedError), beyond the directory checks."""

    def execute(self, target: Path, folder: Path, run_id: str, hooks: PhaseHooks) -> None: ...

    def cleanup(self, target: Path, run_id: str, hooks: PhaseHooks) -> None:
        """Remove what execute created in target; called on every exit path."""
