"""One run of one workload against one directory, end to end.

check the target -> open a run (store + folder) -> the workload's phases, each sampled by
the monitor -> store figures and raw output -> the workload's cleanup (always).
Nothing here prints: progress goes to a Reporter, failures leave as typed errors.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from backupbench.devices import eligibility, facts
from backupbench.errors import BackupbenchError, Interrupted, RefusedError
from backupbench.monitor import Thresholds, device_stack
from backupbench.recipe.monitor import MonitorOptions
from backupbench.results.location import run_folder
from backupbench.results.model import COMPLETE, FAILED, INCOMPLETE, RunRecord, new_run_id, now_iso
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


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _scratch_directory(parent: Path, run_id: str) -> Path:
    scratch = (parent / f"bb-scratch-{run_id}").resolve()
    try:
        scratch.mkdir()
    except OSError as exc:
        raise RefusedError(f"cannot create a scratch directory in {parent.resolve()}: {exc.strerror}",
                           "name a writable directory: backupbench run PATH") from exc
    return scratch


def _monitor_plan(options: MonitorOptions, target: Path) -> MonitorPlan | None:
    if options.no_monitor:
        return None
    thresholds = Thresholds(io_await_ms=options.warn_latency * 1000.0, load1=options.warn_load)
    return MonitorPlan(device_stack(target), options.monitor_interval, thresholds)


def execute(request: RunRequest, reporter: Reporter) -> RunRecord:
    run_id = new_run_id()
    if request.target is not None:
        return _execute_in(request, request.target.expanduser().resolve(), run_id, reporter)
    scratch = _scratch_directory(request.scratch_parent, run_id)
    try:
        return _execute_in(request, scratch, run_id, reporter)
    finally:
        # Only our own scratch folder, and only if empty: anything else in it is not ours.
        try:
            scratch.rmdir()
        except OSError:
            pass


def _execute_in(request: RunRequest, target: Path, run_id: str, reporter: Reporter) -> RunRecord:
    workload = request.workload
    found = check_target(target, workload.space_needed(), workload.buffered)
    workload.check(target)
    host = {**facts.collect_host(), **(request.host_facts or {}), "target": found.as_dict()}
    monitor = _monitor_plan(request.monitor, target)
    if monitor is not None:
        host["device_stack"] = {"describe": monitor.stack.describe(), "devices": monitor.stack.all_names,
                                "members": list(monitor.stack.members)}
    store = Store(request.results / "results.db")
    folder = run_folder(request.results, run_id)
    folder.mkdir(parents=True, exist_ok=False)
    run = RunRecord(
        run_id=run_id, kind=workload.kind, target=str(target),
        settings={**workload.settings(), "monitor": request.monitor.model_dump(mode="json")}, host=host,
        notes=eligibility.directory_cautions(found, workload.space_needed(), workload.buffered,
                                             host.get("memory_bytes")),
    )
    _write_json(folder / "settings.json", run.settings)
    _write_json(folder / "host.json", run.host)
    store.create_run(run)
    reporter.run_started(run)
    recorder = PhaseRecorder(run, store, folder, reporter, monitor)
    try:
        workload.execute(target, folder, run_id, recorder)
        run.status = COMPLETE
    except (KeyboardInterrupt, Interrupted) as exc:
        run.status, run.error = INCOMPLETE, "interrupted"
        recorder.abort(INCOMPLETE)
        raise Interrupted(f"interrupted: stopped and cleaned up; the partial run is kept as {run_id} "
                          "(incomplete)") from exc
    except BackupbenchError as exc:
        run.status, run.error = FAILED, exc.one_line()
        recorder.abort(FAILED)
        raise
    finally:
        workload.cleanup(target, run_id)
        run.finished_at = now_iso()
        _write_json(folder / "result.json", run_as_dict(run))
        store.finish_run(run)
    return run
