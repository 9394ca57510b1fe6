"""Runs: one or more workloads against one or more targets, recorded as one stored run.

A RunSession opens a run (store row + folder), executes workloads against targets with
every phase monitored, and closes the run with its final status on every exit path.
`execute()` is `backupbench run`: one workload, one directory. Nothing here prints:
progress goes to a Reporter, failures leave as typed errors.

Everything a run creates is written into its journal first (see journal.py); whatever
ends the run, its journal is swept before the run is closed, so a run leaves nothing
behind, and a run killed outright leaves a journal that `backupbench cleanup` sweeps the
same way.
"""

from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol

from backupbench import process, stopping
from backupbench.devices import eligibility, facts
from backupbench.devices.compression import content_caution, filesystem_compression
from backupbench.engines.content import from_settings
from backupbench.errors import BackupbenchError, Interrupted, LeftBehind, RefusedError, RunKept, StoreError
from backupbench.journal import Journal, journal_dir
from backupbench.paths import for_program
from backupbench.redaction import redact, redact_data
from backupbench.monitor import Thresholds, cache_guard, combined, device_stack
from backupbench.monitor.options import IGNORE_OTHERS_ENV, MonitorOptions
from backupbench.results.location import HOST_FILE, SETTINGS_FILE, remove_opening_folder, run_folder, store_file
from backupbench.results.model import (COMPLETE, FAILED, INTERRUPTED, VOID, OperationRecord, RunRecord,
                                       current_owner, new_run_id, now_iso)
from backupbench.results.store import Store
from backupbench import artefacts
from backupbench.runner.cleanup import SCRATCH_FOLDER, SweepReport, finish, sweep
from backupbench.runner.phases import MonitorPlan, PhaseRecorder, Reporter
from backupbench.runner.placement import ONCE, TOP_LEVEL, NewRun, Placement, Sampling, Where
from backupbench.workloads.base import Workload
from backupbench.workloads.registry import stored_capabilities


@dataclass(frozen=True)
class RunRequest:
    workload: Workload
    results: Path
    target: Path | None = None  # None: a scratch directory in `scratch_parent`, removed after
    scratch_parent: Path = Path(".")
    monitor: MonitorOptions = MonitorOptions()
    host_facts: dict | None = None  # e.g. the engine version, recorded with the run
    # Told the moment the run is stored as closed (a stop signal after that still counts).
    on_closed: Callable[[RunRecord], None] | None = None
    label: str = ""  # --label: the user's name for the run
    repeat: int = 1  # --repeat: how many times each phase is measured
    # Files a workload reads where they lie (a restore): the monitor follows them to their disks.
    reads: tuple[Path, ...] = ()
    # Stored beside the workload's settings: what the run is part of (a sweep's grid and point).
    settings: Mapping[str, Any] = field(default_factory=dict)


def check_target(target: Path, workload: Workload, journal: Journal | None = None,
                 run_id: str | None = None) -> facts.DirectoryFacts:
    """The target's facts, or RefusedError naming every reason it cannot be used.
    The O_DIRECT probe writes one small file; with a journal it is written down first."""
    probe_id = None
    if journal is not None and run_id is not None:
        probe_id = journal.will_create(artefacts.file(target / facts.PROBE_FILE.of(run_id), run_id,
                                                      facts.PROBE_FILE.what))
    found = facts.collect_directory(target, probe_tag=run_id)
    if probe_id is not None:
        journal.removed(probe_id)
    refusals = eligibility.directory_refusals(found, workload.space_needed(), workload.buffered, workload.space_fix)
    if refusals:
        raise RefusedError("; ".join(r.problem for r in refusals), "; ".join(r.fix for r in refusals))
    return found


def run_as_dict(run: RunRecord) -> dict:
    return asdict(run)


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(redact_data(data), indent=2, sort_keys=True) + "\n")


def monitor_plan(options: MonitorOptions, targets: tuple[Path, ...]) -> MonitorPlan | None:
    """Sample the devices under `targets`; with none, every block device, but warn about none of
    them: a run with no storage here (an S3 endpoint elsewhere) does its I/O on none of them."""
    if options.no_monitor:
        return None
    latency_ms = options.warn_latency * 1000.0 if targets else math.inf
    thresholds = Thresholds(io_await_ms=latency_ms, load1=options.warn_load)
    stack = combined([device_stack(target) for target in targets]) if targets else None
    others = not (options.ignore_others or os.environ.get(IGNORE_OTHERS_ENV, "") not in ("", "0"))
    return MonitorPlan(stack, options.monitor_interval, thresholds, others=others)


def open_journal(results: Path, run_id: str) -> Journal:
    """The run's journal, held by this process until the run is over."""
    return Journal(journal_dir(results), run_id, header={"run_id": run_id, "store": str(store_file(results))})


@contextmanager
def journalled(journal: Journal) -> Iterator[Journal]:
    """Within the block, children started are journalled; on the way out, whatever is
    still in the journal is removed (signals held meanwhile), and the journal closed if
    nothing is left."""
    started: dict[int, int] = {}

    def record(child: process.Background, event: str) -> None:
        if event == "started":
            started[id(child)] = journal.will_create(artefacts.child_process(child, journal.label))
        elif id(child) in started:
            journal.removed(started.pop(id(child)), "stopped")

    try:
        with process.spawns_reported_to(record, journal.label):
            yield journal
    finally:
        with stopping.held():
            finish(journal, sweep(journal))


class RunSession:
    """Use as a context manager: the run is closed (complete, failed or interrupted) on exit."""

    def __init__(self, new: NewRun, *, results: Path, reporter: Reporter, monitor: MonitorOptions,
                 journal: Journal, on_closed: Callable[[RunRecord], None] | None = None):
        self.results = results
        self.on_closed = on_closed
        self.reporter = reporter
        self.monitor_options = monitor
        self.journal = journal
        self.store = Store(store_file(results))
        self.run = RunRecord(run_id=new.run_id, kind=new.kind, target=new.target,
                             settings={**new.settings, "monitor": monitor.model_dump(mode="json"),
                                       **stored_capabilities(new.kind, new.settings)},
                             host=new.host, owner=current_owner(), label=new.label)
        self.folder = run_folder(results, self.run.run_id)
        self._recorder: PhaseRecorder | None = None
        self._void_reason: str | None = None

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def __enter__(self) -> "RunSession":
        try:
            # The folder and the store's row appear together: a stop between them would leave a
            # folder of a run the store never heard of (CI: SIGINT 0.49 s in). It waits until both.
            with stopping.held():
                try:
                    self.folder.mkdir(parents=True, exist_ok=False)
                    write_json(self.folder / SETTINGS_FILE, self.run.settings)
                    write_json(self.folder / HOST_FILE, self.run.host)
                except OSError as exc:
                    raise StoreError(f"cannot make the run folder {self.folder}: {exc.strerror or exc}",
                                     "pass --results DIR naming a writable folder with a shorter path") from exc
                self.store.create_run(self.run)
            self.reporter.run_started(self.run)
        except BaseException as exc:
            # Opened half (a stop signal, a full disk): close it as a run that ended so, or take
            # back the folder of a run the store never got.
            if self.store.has_run(self.run_id):
                self.__exit__(type(exc), exc, exc.__traceback__)
            else:
                remove_opening_folder(self.folder)
            raise
        return self

    def measure(self, workload: Workload, where: Where, place: Placement = TOP_LEVEL,
                sampling: Sampling = ONCE) -> None:
        """Run `workload` at `where`; its phases are stored as operations of this run at `place`,
        measured as `sampling` says."""
        target = self._prepare_target(workload, where, place)
        monitor = self._plan_monitor(workload, target, where, place)
        self._run_samples(workload, target, monitor, place, sampling)

    def _prepare_target(self, workload: Workload, where: Where, place: Placement) -> Path | None:
        """The target checked and described (its facts in the run's host; cautions about caches
        and constant data in its notes); None for a workload that needs no directory."""
        target = where.path if workload.needs_directory else None
        if target is not None:
            found = check_target(target, workload, self.journal, self.run_id)
            # Cache cautions are about one big test file; a small-file workload caches on purpose.
            if workload.test_file_cautions:
                cautions = eligibility.directory_cautions(found, workload.space_needed(), workload.buffered)
                self.run.notes += [caution for caution in cautions if caution not in self.run.notes]
            self.run.host.setdefault("targets", {})[place.key] = found.as_dict()
            self._content_caution(workload, found, ())
        else:
            self._content_caution(workload, None, where.storage)
        if not where.checked:
            workload.check(target)
        return target

    def _plan_monitor(self, workload: Workload, target: Path | None, where: Where,
                      place: Placement) -> MonitorPlan | None:
        """What the monitor samples (the stack under the target or its storage, described in the
        run's host) and where the target's bytes land, for the cache guard."""
        monitor = monitor_plan(self.monitor_options, (target,) if target is not None else where.storage)
        if monitor is not None and monitor.stack is not None:
            self.run.host.setdefault("device_stacks", {})[place.key] = {
                "describe": monitor.stack.describe(), "devices": monitor.stack.all_names,
                "members": list(monitor.stack.members)}
        self._guard_caches(workload, target, monitor, where.local_io)
        return monitor

    def _run_samples(self, workload: Workload, target: Path | None, monitor: MonitorPlan | None,
                     place: Placement, sampling: Sampling) -> None:
        base = self.folder / place.group if place.group else self.folder
        wanted = sampling.wanted
        for sample in wanted:
            reason = sampling.stop_reason() if sampling.stop_reason is not None and sample != wanted[0] else None
            if reason:
                self.run.notes.append(f"{place.group or place.key}: {sample - 1} of {sampling.repeat} samples; {reason}")
                break
            folder = base / f"sample-{sample}" if sampling.repeat > 1 else base
            folder.mkdir(parents=True, exist_ok=True)
            self._recorder = PhaseRecorder(self.run, self.store, folder, self.reporter, monitor, place=place,
                                           run_root=self.folder, journal=self.journal, sample=sample)
            try:
                workload.execute(target, folder, self.run_id, self._recorder)
            finally:
                with stopping.held():
                    workload.cleanup(target, self.run_id, self._recorder)

    def _guard_caches(self, workload: Workload, target: Path | None, monitor: MonitorPlan | None,
                      local_io: bool = False) -> None:
        """Where the target's bytes land, for each phase's cache check; and a caution now when
        the test file fits in the RAM that could serve it (monitor/cache_guard.py)."""
        stack = monitor.stack if monitor is not None else (device_stack(target) if target is not None else None)
        if stack is None:
            return
        storage = cache_guard.storage_facts(stack, self.run.host.get("memory_bytes"))
        if monitor is not None and not stack.empty:
            # A workload without a directory of its own (S3) has a server do its I/O: unknown how;
            # one reading files in place (a restore) does its own.
            monitor.storage = storage
            monitor.buffered = workload.buffered if workload.needs_directory or local_io else None
        caution = (cache_guard.pre_run_caution(workload.space_needed(), workload.buffered, storage)
                   if workload.test_file_cautions else None)
        if caution and caution not in self.run.notes:
            self.run.notes.append(caution)
            self.reporter.caution(caution)

    def _content_caution(self, workload: Workload, known: facts.DirectoryFacts | None,
                         storage: tuple[Path, ...]) -> None:
        """Constant data where the filesystem compresses it: say that the figures are compression's.
        `known`: the target's facts, collected already; else the storage an S3 workload lands on."""
        content = from_settings(workload.settings())
        if content is None or not content.constant:
            return
        places = [known] if known is not None else [facts.collect_directory(p, probe_direct=False) for p in storage]
        for found in places:
            note = content_caution(found.path, filesystem_compression(found, workload.buffered), content.label,
                                   content.constant)
            if note and note not in self.run.notes:
                self.run.notes.append(note)

    def add_operation(self, record: OperationRecord, announced: bool = False) -> None:
        """Store a record measured beside the workloads (a fault's rebuild, a member's baseline);
        announced: its stage was shown as started while it ran."""
        self.store.save_operation(self.run_id, len(self.run.operations), record)
        self.run.operations.append(record)
        if not announced:
            self.reporter.stage_started(record.name, record.pattern)
        self.reporter.stage_finished(record.name, record)

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
        # Nothing may cut the closing short: a signal now is recorded and acted on after.
        with stopping.held():
            leftovers = sweep(self.journal)
            self._close(exc, leftovers)
        if self.run.status == INTERRUPTED:
            if isinstance(exc, RunKept):
                return False
            raise RunKept(f"interrupted: stopped and cleaned up; the partial run is kept as {self.run_id} "
                          "(interrupted)", self.run_id) from exc
        if exc is None and not leftovers.clean:
            more = f" (and {len(leftovers.failed) - 1} more)" if len(leftovers.failed) > 1 else ""
            raise LeftBehind(f"run {self.run_id} is stored {self.run.status}; left behind: {leftovers.failed[0]}{more}",
                             "run `backupbench cleanup` once that is reachable again (a lost host back) or "
                             "released: the run's journal still lists it", self.run)
        return False

    def _close(self, exc: BaseException | None, leftovers: SweepReport) -> None:
        if isinstance(exc, (KeyboardInterrupt, Interrupted)) or stopping.requested() is not None:
            self.run.status, self.run.error = INTERRUPTED, "interrupted"
        elif exc is not None:
            self.run.status = FAILED
            self.run.error = exc.one_line() if isinstance(exc, BackupbenchError) else repr(exc)
        else:
            # What it measured stands whatever could not be removed after: that is in the notes
            # ("left behind: ..."), and the journal stays open for `backupbench cleanup`.
            # A void run says why where every reader looks (show, --json, the gates).
            self.run.status, self.run.error = (VOID, self._void_reason) if self._void_reason else (COMPLETE, None)
        self.run.notes += [f"left behind: {line}" for line in leftovers.failed]
        # Printed and stored from here: no URL's userinfo, no known secret (redaction.py).
        self.run.notes = [redact(note) for note in self.run.notes]
        self.run.error = redact(self.run.error) if self.run.error else self.run.error
        if self._recorder is not None:
            self._recorder.abort(self.run.status)
        self.run.finished_at = now_iso()
        write_json(self.folder / HOST_FILE, self.run.host)
        write_json(self.folder / "result.json", run_as_dict(self.run))
        self.store.finish_run(self.run)
        if self.on_closed is not None:
            self.on_closed(self.run)


def with_repeat(settings: dict[str, Any], repeat: int) -> dict[str, Any]:
    """The settings stored with a run: `repeat` beside them when phases were measured more than once."""
    return {**settings, "repeat": repeat} if repeat > 1 else settings


def _scratch_directory(parent: Path, run_id: str, journal: Journal) -> Path:
    scratch = (parent / SCRATCH_FOLDER.of(run_id)).resolve()
    journal.will_create(artefacts.folder(scratch, run_id, SCRATCH_FOLDER.what))
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
    Store(store_file(request.results))  # a --results that is no directory fails first, in one line
    with journalled(open_journal(request.results, run_id)) as journal:
        target = None
        if workload.needs_directory:
            if request.target is not None:
                # A path that shows in tables, journals and reports: one no program misreads.
                target = Path(for_program(request.target.expanduser().resolve()))
            else:
                target = _scratch_directory(request.scratch_parent, run_id, journal)
            # Refuse before a run is opened: a bad target or endpoint leaves nothing in the store.
            check_target(target, workload, journal, run_id)
        workload.check(target)
        new = NewRun(run_id, workload.kind, workload.target_label(target),
                     with_repeat({**workload.settings(), **request.settings}, request.repeat), host, request.label)
        session = RunSession(new, results=request.results, reporter=reporter, monitor=request.monitor,
                             journal=journal, on_closed=request.on_closed)
        with session:
            where = Where(target, request.reads, checked=True, local_io=bool(request.reads))
            session.measure(workload, where, sampling=Sampling(request.repeat))
        return session.run


class RemoteWorkload(Workload, Protocol):
    """A workload that runs on other machines (fio servers, agents): what it learns about
    them as it goes (a host lost, a file left behind) is in `notes`."""

    notes: list[str]


def execute_remote(request: RunRequest, workload: RemoteWorkload, reporter: Reporter) -> RunRecord:
    """`backupbench run --hosts / --agents`: execute for a workload on other machines. It is
    checked (every host reachable) before a run is opened, this machine's monitor is off (it
    carries none of their I/O), and the workload's notes join the run's before it is closed."""
    host = {**facts.collect_host(), **(request.host_facts or {}), **workload.engine_versions()}
    run_id = new_run_id()
    Store(store_file(request.results))  # a --results that is no directory fails first, in one line
    with journalled(open_journal(request.results, run_id)) as journal:
        workload.check(None)
        monitor = request.monitor.model_copy(update={"no_monitor": True})
        new = NewRun(run_id, workload.kind, workload.target_label(None),
                     with_repeat({**workload.settings(), **request.settings}, request.repeat), host, request.label)
        session = RunSession(new, results=request.results, reporter=reporter, monitor=monitor, journal=journal,
                             on_closed=request.on_closed)
        with session:
            try:
                session.measure(workload, Where(checked=True), sampling=Sampling(request.repeat))
            finally:
                session.run.notes += [note for note in workload.notes if note not in session.run.notes]
        return session.run
