"""`backupbench apply`: for each layout of a recipe: provision, run the workloads, tear down.

Every layout is checked (kernel, tools, every device) before the first one is built, so a
recipe never half-runs. Teardown happens on success, failure and Ctrl-C; the journal lets
`backupbench cleanup` finish it after a crash.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pydantic import SecretStr

from backupbench.devices import facts
from backupbench.errors import BackupbenchError, RefusedError
from backupbench.layouts.executor import Provisioner
from backupbench.layouts.journal import Journal, journal_dir
from backupbench.layouts.minio import MinioServer
from backupbench.layouts.snapwatch import SnapshotWatch
from backupbench.plan import Plan
from backupbench.results.model import RunRecord
from backupbench.runner import registry
from backupbench.runner.phases import Reporter
from backupbench.runner.pipeline import RunSession
from backupbench.runner.workload import Workload


def build_workload(spec, server: MinioServer | None = None) -> Workload:
    """A recipe's workload entry -> the same Workload `backupbench run --workload KIND` builds."""
    values = spec.model_dump(exclude={"kind", "preset"})
    if spec.kind == "s3" and spec.endpoint is None:
        if server is None:
            raise RefusedError("an s3 workload without endpoint runs only on a layout served by MinIO")
        values.update(endpoint=server.endpoint, create_bucket=True, access_key=SecretStr(server.access_key),
                      secret_key=SecretStr(server.secret_key))
    return registry.build(spec.kind, registry.options_model(spec.kind).model_validate(values))


@dataclass
class ApplyHooks:
    """What apply needs from the outside world, passed in so tests can see every step."""

    recheck: Callable[[tuple[str, ...]], None]  # right before the first destructive command
    announce: Callable[[str], None] = lambda message: None


def apply(plan: Plan, results: Path, reporter: Reporter, hooks: ApplyHooks, host_facts: dict | None = None) -> RunRecord:
    if plan.refusals:
        raise RefusedError("the recipe cannot run here: " + "; ".join(plan.refusals),
                           "fix the devices or run it where the kernel has what it needs (see backupbench plan)")
    recipe = plan.recipe
    host = {**facts.collect_host(), **(host_facts or {})}
    # The plan's object names (VGs, md arrays, mounts) carry its run id: the stored run keeps it.
    session = RunSession(results, "recipe", recipe.name, {"recipe": recipe.model_dump(mode="json")}, host,
                         reporter, recipe.monitor, run_id=plan.run_id)
    try:
        with session:
            for step in plan.steps:
                _one_layout(session, step.layout, plan, results, hooks)
    finally:
        _remove_run_mount_folder(plan)
    return session.run


def _remove_run_mount_folder(plan: Plan) -> None:
    """The <mount root>/<run id> folder the layouts' mount points were made in, once empty."""
    for step in plan.steps:
        point = step.layout.mount_point
        if step.layout.kind != "directory" and point is not None and point.parent.name == plan.run_id:
            try:
                point.parent.rmdir()
            except OSError:
                pass  # not empty (a teardown left something): cleanup's business, not ours
            return


def _one_layout(session: RunSession, layout, plan: Plan, results: Path, hooks: ApplyHooks) -> None:
    provisioner = Provisioner(Journal(journal_dir(results), plan.run_id, layout.name),
                              on_action=lambda action: hooks.announce(action.description))
    try:
        provisioner.apply(layout.actions, lambda: hooks.recheck(layout.devices))
        _measure_layout(session, plan.recipe, layout)
    finally:
        # A second Ctrl-C must not cut the teardown short: signals wait until it is done.
        with deferred_signals():
            report = provisioner.teardown()
        for skipped in report.skipped:
            session.run.notes.append(f"{layout.name}: left alone (not ours any more): {skipped}")
        for problem in report.failed:
            session.run.notes.append(f"{layout.name}: teardown failed: {problem}")
    if report.failed:
        # Our own leftovers would make the next layout fail for a confusing reason: stop here.
        raise BackupbenchError(f"the teardown of layout {layout.name} failed: {report.failed[0]}",
                               "see what holds the device, then run `backupbench cleanup`")


@contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP until the block ends, then act on the first one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda number, _frame: caught.append(number)) for sig in watched}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if caught:
        raise KeyboardInterrupt


def _measure_layout(session: RunSession, recipe, layout) -> None:
    if not layout.s3_drives:
        _measure_workloads(session, recipe, layout, None)
        return
    with MinioServer(list(layout.s3_drives), log_path=session.folder / f"{layout.name}.minio.log",
                     extra_env=dict(layout.s3_env)) as server:
        _measure_workloads(session, recipe, layout, server)


def _measure_workloads(session: RunSession, recipe, layout, server: MinioServer | None) -> None:
    # fio and small-file workloads on a MinIO layout run on its first drive.
    target = layout.s3_drives[0] if layout.s3_drives else layout.mount_point
    for index, spec in enumerate(recipe.workload):
        group = layout.name if len(recipe.workload) == 1 else f"{layout.name}/{index + 1}-{spec.kind}"
        before = len(session.run.operations)
        with SnapshotWatch(layout.watched_snapshots) as watch:
            session.measure(build_workload(spec, server), target, group=group)
        if watch.snapshots:
            session.annotate(session.run.operations[before:], watch.figures())
        if watch.invalid:
            session.void(f"snapshot {', '.join(sorted(watch.invalid))} of {layout.name} overflowed and is Invalid: "
                         "the figures of this run are void; give the snapshots more space")
