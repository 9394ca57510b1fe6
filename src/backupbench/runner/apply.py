"""`backupbench apply`: for each layout of a recipe: provision, run the workloads, tear down.

Every layout is checked (kernel, tools, every device) before the first one is built, so a
recipe never half-runs. Teardown happens on success, failure and Ctrl-C; the journal lets
`backupbench cleanup` finish it after a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from backupbench.devices import facts
from backupbench.errors import RefusedError
from backupbench.layouts.executor import Provisioner
from backupbench.layouts.journal import Journal
from backupbench.layouts.snapwatch import SnapshotWatch
from backupbench.plan import Plan
from pydantic import SecretStr

from backupbench.layouts.minio import MinioServer
from backupbench.recipe.model import FirstWriteWorkload, Kb2014Workload, S3Workload, SmallFilesWorkload
from backupbench.workloads.s3 import S3Options
from backupbench.recipe.suite import SuiteOptions
from backupbench.results.model import RunRecord
from backupbench.runner import firstwrite, kb2014, s3_workload
from backupbench.runner.phases import Reporter
from backupbench.runner.pipeline import RunSession
from backupbench.runner.smallfiles import SmallFilesWorkload as SmallFilesWorkloadRunner
from backupbench.workloads.smallfiles import SmallFilesSpec

def journal_dir(results: Path) -> Path:
    return results / "journal"


def build_workload(spec, server: MinioServer | None = None):
    if isinstance(spec, S3Workload):
        values = spec.model_dump(exclude={"kind"})
        if spec.endpoint is None:
            if server is None:
                raise RefusedError("an s3 workload without endpoint runs only on a layout served by MinIO")
            values.update(endpoint=server.endpoint, create_bucket=True, access_key=SecretStr(server.access_key),
                          secret_key=SecretStr(server.secret_key))
        return s3_workload.workload(S3Options.model_validate(values))
    if isinstance(spec, SmallFilesWorkload):
        return SmallFilesWorkloadRunner(SmallFilesSpec.model_validate(spec.model_dump(exclude={"kind", "preset"})))
    options = SuiteOptions.model_validate(spec.model_dump(exclude={"kind"}))
    if isinstance(spec, Kb2014Workload):
        return kb2014.workload(options)
    if isinstance(spec, FirstWriteWorkload):
        return firstwrite.workload(options)
    raise AssertionError(f"no runner for workload {spec.kind}")


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
    with session:
        for step in plan.steps:
            layout = step.layout
            provisioner = Provisioner(Journal(journal_dir(results), plan.run_id, layout.name),
                                      on_action=lambda action: hooks.announce(action.description))
            try:
                provisioner.apply(layout.actions, lambda: hooks.recheck(layout.devices))
                _measure_layout(session, recipe, layout)
            finally:
                report = provisioner.teardown()
                for problem in report.failed:
                    session.run.notes.append(f"{layout.name}: teardown failed: {problem} (run backupbench cleanup)")
                for skipped in report.skipped:
                    session.run.notes.append(f"{layout.name}: left alone (not ours any more): {skipped}")
    return session.run


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
