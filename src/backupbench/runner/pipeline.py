"""Runs: one or more workloads against one or more targets, recorded as one stored run.

A RunSession opens a run (store row + folder), executes workloads against targets with
every phase monitored, and closes the run with its final status on every exit path.
`execute()` is `backupbench run`: one workload, one directory. Nothing here prints:
progress goes to a Reporter, failures leave as typed errors.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from backupbench.devices import eligibility, facts
from backupbench.errors import BackupbenchError, Interrupted, RefusedError
from backupbench.monitor import Thresholds, device_stack
from backupbench.recipe.monitor import MonitorOptions
from backupbench.results.location import run_folder
from backupbench.results.model import (COMPLETE, FAILED, INCOMPLETE, VOID, OperationRecord, RunRecord,
                                       new_run_id, now_iso)
from backupbench.results.store import Store
from backupbench.runner.phases import MonitorPlan, PhaseRecorder, Reporter
from backupbench.runner.workload import Workload


@dataclass(frozen=True)
class RunRequest:
    workload: Workload
    results: Path
    target: Path | None = None  # None: a scratch directory in `scratch_parent`, removed after
    scratch_parent: Path = Path(".")
    monitor: MonitorOptions = MonitorOptions()
    host_facts: dict | None = None  # e.g. the engine version, recorded with the run


def check_target(target: Path, need_bytes: int, buffered: bool) -> facts.DirectoryFacts:
    """The target's facts, or RefusedError naming every reason it cannot be used."""
    found = facts.collect_directory(target)
    refusals = eligibility.directory_refusals(found, need_bytes, buffered)
    if refusals:
        raise RefusedError("; ".join(r.problem for r in refusals), "; ".join(r.fix for r in refusals))
    return found


def run_as_dict(run: RunRecord) -> dict:
    return asdict(run)


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def needs_directory(workload: Workload) -> bool:
    """False for workloads whose target is not a directory here (an S3 endpoint)."""
    return getattr(workload, "needs_directory", True)


def monitor_plan(options: MonitorOptions, target: Path | None) -> MonitorPlan | None:
    """Sample the devices under `target`; with no target, every block device."""
    if options.no_monitor:
        return None
    thresholds = Thresholds(io_await_ms=options.warn_latency * 1000.0, load1=options.warn_load)
    return MonitorPlan(device_stack(target) if target is not None else None, options.monitor_interval, thresholds)


class RunSession:
    """Use as a context manager: the run is closed (complete, failed or incomplete) on exit."""

    def __init__(self, results: Path, kind: str, target: str, settings: dict[str, Any],
                 host: dict[str, Any], reporter: Reporter, monitor: MonitorOptions, run_id: str | None = None):
        self.results = results
        self.reporter = reporter
        self.monitor_options = monitor
        self.store = Store(results / "results.db")
        self.run = RunRecord(run_id=run_id or new_run_id(), kind=kind, target=target,
                             settings={**settings, "monitor": monitor.model_dump(mode="json")}, host=host)
        self.folder = run_folder(results, self.run.run_id)
        self._recorder: PhaseRecorder | None = None
        self._void_reason: str | None = None

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def __enter__(self) -> "RunSession":
        self.folder.mkdir(parents=True, exist_ok=False)
        write_json(self.folder / "settings.json", self.run.settings)
        write_json(self.folder / "host.json", self.run.host)
        self.store.create_run(self.run)
        self.reporter.run_started(self.run)
        return self

    def measure(self, workload: Workload, target: Path | None, group: str = "", checked: bool = False) -> None:
        """Run `workload` in `target`; its phases are stored as operations of this run.
        checked: the caller already ran workload.check(target)."""
        key = group or "target"
        if needs_directory(workload):
            found = check_target(target, workload.space_needed(), workload.buffered)
            # Cache cautions are about one big test file; a small-file workload caches on purpose.
            if getattr(workload, "test_file_cautions", True):
                self.run.notes += eligibility.directory_cautions(
                    found, workload.space_needed(), workload.buffered, self.run.host.get("memory_bytes"))
            self.run.host.setdefault("targets", {})[key] = found.as_dict()
        else:
            target = None
        if not checked:
            workload.check(target)
        monitor = monitor_plan(self.monitor_options, target)
        if monitor is not None and monitor.stack is not None:
            self.run.host.setdefault("device_stacks", {})[key] = {
                "describe": monitor.stack.describe(), "devices": monitor.stack.all_names,
                "members": list(monitor.stack.members)}
        folder = self.folder / group if group else self.folder
        folder.mkdir(parents=True, exist_ok=True)
        self._recorder = PhaseRecorder(self.run, self.store, folder, self.reporter, monitor, group, self.folder)
        try:
            workload.execute(target, folder, self.run_id, self._recorder)
        finally:
            workload.cleanup(target, self.run_id)

    def annotate(self, operations: list[OperationRecord], figures: dict[str, float]) -> None:
        """Add figures measured beside the phases (e.g. snapshot fill) to stored operations."""
        for op in operations:
            op.figures.update(figures)
            self.store.save_operation(self.run_id, self.run.operations.index(op), op)

    def void(self, reason: str) -> None:
        """The run's figures cannot be trusted (e.g. a snapshot overflowed); say why."""
        self._void_reason = reason
        if reason not in self.run.notes:
            self.run.notes.append(reason)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            self.run.status = VOID if self._void_reason else COMPLETE
        elif isinstance(exc, (KeyboardInterrupt, Interrupted)):
            self.run.status, self.run.error = INCOMPLETE, "interrupted"
        else:
            self.run.status = FAILED
            self.run.error = exc.one_line() if isinstance(exc, BackupbenchError) else repr(exc)
        if exc is not None and self._recorder is not None:
            self._recorder.abort(self.run.status)
        self.run.finished_at = now_iso()
        write_json(self.folder / "host.json", self.run.host)
        write_json(self.folder / "result.json", run_as_dict(self.run))
        self.store.finish_run(self.run)
        if isinstance(exc, KeyboardInterrupt) or (isinstance(exc, Interrupted) and "kept as" not in exc.message):
            raise Interrupted(f"interrupted: stopped and cleaned up; the partial run is kept as {self.run_id} "
                              "(incomplete)") from exc
        return False


def _scratch_directory(parent: Path, run_id_hint: str) -> Path:
    scratch = (parent / f"bb-scratch-{run_id_hint}").resolve()
    try:
        scratch.mkdir()
    except OSError as exc:
        raise RefusedError(f"cannot create a scratch directory in {parent.resolve()}: {exc.strerror}",
                           "name a writable directory: backupbench run PATH") from exc
    return scratch


def execute(request: RunRequest, reporter: Reporter) -> RunRecord:
    """`backupbench run`: one workload in one directory (a scratch one if none is named)."""
    workload = request.workload
    host = {**facts.collect_host(), **(request.host_facts or {})}
    run_id = new_run_id()
    scratch = target = None
    if not needs_directory(workload):
        pass
    elif request.target is not None:
        target = request.target.expanduser().resolve()
    else:
        scratch = target = _scratch_directory(request.scratch_parent, run_id)
    try:
        # Refuse before a run is opened: a bad target or endpoint leaves nothing in the store.
        if target is not None:
            check_target(target, workload.space_needed(), workload.buffered)
        workload.check(target)
        label = str(target) if target is not None else getattr(workload, "target_label", workload.kind)
        session = RunSession(request.results, workload.kind, label, workload.settings(), host,
                             reporter, request.monitor, run_id=run_id)
        with session:
            session.measure(workload, target, checked=True)
        return session.run
    finally:
        if scratch is not None:
            # Only our own scratch folder, and only if empty: anything else in it is not ours.
            try:
                scratch.rmdir()
            except OSError:
                pass
