"""`backupbench run`: the backup-operation suite against one directory, end to end.

check the target -> open a run -> lay out the tagged test file -> each operation through
the engine -> store figures and raw output -> remove the test file (always).
The caller supplies a Reporter for progress; nothing here prints.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from backupbench import process
from backupbench.devices import eligibility, facts
from backupbench.engines.fio import FioEngine, FioRun
from backupbench.engines.fio_job import FioJob, command
from backupbench.errors import BackupbenchError, Interrupted, RefusedError
from backupbench.recipe.suite import SuiteOptions
from backupbench.results.location import run_folder
from backupbench.results.model import (COMPLETE, FAILED, INCOMPLETE, OperationRecord, RunRecord,
                                       new_run_id, now_iso)
from backupbench.results.store import Store
from backupbench.workloads.kb2014 import Operation, select

TAG = "backupbench"
LAYOUT_STAGE = "layout"
# Layout writes the whole file; a little queue depth keeps it from dominating `make run`.
LAYOUT_IODEPTH = 8


class Reporter(Protocol):
    def stage_started(self, name: str, description: str) -> None: ...
    def stage_progress(self, name: str, fraction: float, detail: str) -> None: ...
    def stage_finished(self, name: str, record: OperationRecord | None) -> None: ...
    def run_started(self, run: RunRecord) -> None: ...


@dataclass(frozen=True)
class SuiteRequest:
    options: SuiteOptions
    results: Path
    target: Path | None = None  # None: a scratch directory in `scratch_parent`, removed after
    scratch_parent: Path = Path(".")


def test_file_name(run_id: str) -> str:
    return f"{TAG}-{run_id}.dat"


def operation_job(op: Operation, options: SuiteOptions, test_file: Path) -> FioJob:
    return FioJob(
        name=op.name, filename=test_file, rw=op.rw, rwmixwrite=op.rwmixwrite,
        block_size=options.block_size, region_size=options.region_size,
        iodepth=options.iodepth or op.iodepth, numjobs=options.jobs,
        ioengine=options.engine, direct=not options.buffered, runtime_s=options.runtime,
        comment=f"{op.title}: {op.io_per_block_text}",
    )


def layout_job(options: SuiteOptions, test_file: Path) -> FioJob:
    return FioJob(
        name=LAYOUT_STAGE, filename=test_file, rw="write", block_size=options.block_size,
        region_size=options.file_size, iodepth=LAYOUT_IODEPTH, ioengine=options.engine,
        direct=not options.buffered,
        comment="writes the whole test file once so that reads find real data",
    )


def figures_of(op: Operation, fio_run: FioRun) -> dict[str, float]:
    summary = fio_run.summary
    figures = {
        "read_bw": summary.read.bw_bytes,
        "write_bw": summary.write.bw_bytes,
        "read_iops": summary.read.iops,
        "write_iops": summary.write.iops,
        "effective_bw": op.effective_rate(summary.read.bw_bytes, summary.write.bw_bytes),
        "runtime": summary.runtime_ms / 1000.0,
    }
    if summary.read.p99_ns is not None and summary.read.active:
        figures["read_p99_lat"] = summary.read.p99_ns
    if summary.write.p99_ns is not None and summary.write.active:
        figures["write_p99_lat"] = summary.write.p99_ns
    return figures


def _prepare_target(request: SuiteRequest, run_id: str) -> tuple[Path, bool]:
    if request.target is not None:
        return request.target.expanduser().resolve(), False
    scratch = (request.scratch_parent / f"bb-scratch-{run_id}").resolve()
    try:
        scratch.mkdir()
    except OSError as exc:
        raise RefusedError(f"cannot create a scratch directory in {request.scratch_parent.resolve()}: "
                           f"{exc.strerror}", "name a writable directory: backupbench run PATH") from exc
    return scratch, True


def check_target(target: Path, options: SuiteOptions) -> facts.DirectoryFacts:
    """The target's facts, or RefusedError naming every reason it cannot be used."""
    found = facts.collect_directory(target)
    refusals = eligibility.directory_refusals(found, options.file_size, options.buffered)
    if refusals:
        raise RefusedError("; ".join(r.problem for r in refusals), "; ".join(r.fix for r in refusals))
    return found


class SuiteRun:
    """One execution; keeps what must be undone so that every exit path can undo it."""

    def __init__(self, request: SuiteRequest, reporter: Reporter, engine: FioEngine | None = None):
        self.request = request
        self.options = request.options
        self.reporter = reporter
        self.engine = engine or FioEngine()
        self.run_id = new_run_id()
        self.commands: list[str] = []
        self._current: tuple[int, OperationRecord] | None = None

    def execute(self) -> RunRecord:
        process.require_tool(self.engine.binary)
        target, scratch = _prepare_target(self.request, self.run_id)
        try:
            return self._execute_in(target)
        finally:
            if scratch:
                # Only our own empty scratch folder; a non-empty one means someone else wrote there.
                try:
                    target.rmdir()
                except OSError:
                    pass

    def _execute_in(self, target: Path) -> RunRecord:
        found = check_target(target, self.options)
        host = facts.collect_host(self.engine.version())
        cautions = eligibility.directory_cautions(found, self.options.file_size, self.options.buffered,
                                                  host.get("memory_bytes"))
        store = Store(self.request.results / "results.db")
        folder = run_folder(self.request.results, self.run_id)
        folder.mkdir(parents=True, exist_ok=False)
        run = RunRecord(
            run_id=self.run_id, kind="kb2014", target=str(target),
            settings={**self.options.model_dump(mode="json"), "file_size": self.options.file_size},
            host={**host, "target": found.as_dict()}, notes=cautions,
        )
        _write_json(folder / "settings.json", run.settings)
        _write_json(folder / "host.json", run.host)
        store.create_run(run)
        self.reporter.run_started(run)
        test_file = target / test_file_name(self.run_id)
        try:
            self._layout(test_file, folder)
            for seq, op in enumerate(select(self.options.operations)):
                run.operations.append(self._operation(seq, op, test_file, folder, store))
            run.status = COMPLETE
        except (KeyboardInterrupt, Interrupted) as exc:
            run.status, run.error = INCOMPLETE, "interrupted"
            self._mark_running_ops(run, store, INCOMPLETE)
            raise Interrupted("interrupted: fio stopped, test file removed, partial run kept as "
                              f"{self.run_id} (incomplete)") from exc
        except BackupbenchError as exc:
            run.status, run.error = FAILED, exc.one_line()
            self._mark_running_ops(run, store, FAILED)
            raise
        finally:
            test_file.unlink(missing_ok=True)
            run.finished_at = now_iso()
            (folder / "commands.txt").write_text("\n".join(self.commands) + "\n")
            _write_json(folder / "result.json", run_as_dict(run))
            store.finish_run(run)
        return run

    def _layout(self, test_file: Path, folder: Path) -> None:
        job = layout_job(self.options, test_file)
        self.reporter.stage_started(LAYOUT_STAGE, f"lay out {test_file.name}")
        self.commands.append(_command_line(job, folder))
        self.engine.run(job, folder, lambda f, d: self.reporter.stage_progress(LAYOUT_STAGE, f, d))
        self.reporter.stage_finished(LAYOUT_STAGE, None)

    def _operation(self, seq: int, op: Operation, test_file: Path, folder: Path, store: Store) -> OperationRecord:
        job = operation_job(op, self.options, test_file)
        record = OperationRecord(
            name=op.name, pattern=job.pattern,
            detail={"job_file": f"{op.name}.fio", "raw": f"{op.name}.json", "buffered": self.options.buffered},
        )
        self._current = (seq, record)
        store.save_operation(self.run_id, seq, record)
        self.reporter.stage_started(op.name, op.title)
        self.commands.append(_command_line(job, folder))
        fio_run = self.engine.run(job, folder, lambda f, d: self.reporter.stage_progress(op.name, f, d))
        record.figures = figures_of(op, fio_run)
        record.status, record.finished_at = COMPLETE, now_iso()
        store.save_operation(self.run_id, seq, record)
        self.reporter.stage_finished(op.name, record)
        return record

    def _mark_running_ops(self, run: RunRecord, store: Store, status: str) -> None:
        if self._current is None:
            return
        seq, record = self._current
        if record.status != COMPLETE:
            record.status, record.finished_at = status, now_iso()
            store.save_operation(self.run_id, seq, record)
            run.operations.append(record)


def _command_line(job: FioJob, folder: Path) -> str:
    return process.render(command(folder / f"{job.name}.fio", folder / f"{job.name}.json"))


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def run_as_dict(run: RunRecord) -> dict:
    return asdict(run)


def run_suite(request: SuiteRequest, reporter: Reporter, engine: FioEngine | None = None) -> RunRecord:
    return SuiteRun(request, reporter, engine).execute()

