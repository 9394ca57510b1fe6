"""`backupbench apply`: for each layout of a recipe: provision, run the workloads, tear down
(a recipe with [hosts] builds nothing: runner/apply_hosts.py). With repeats, layouts that use
no device in common are built together and measured in alternating rounds instead
(runner/schedule.py decides, runner/alternate.py runs them); the run's notes say which.

Every layout is checked (kernel, tools, every device) before the first one is built, so a
recipe never half-runs. Teardown happens on success, failure and Ctrl-C; the journal lets
`backupbench cleanup` finish it after a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from backupbench import artefacts
from backupbench.devices import facts
from backupbench.errors import BackupbenchError, RefusedError
from backupbench.journal import Journal
from backupbench.layouts.executor import Provisioner
from backupbench.layouts.minio import MinioServer
from backupbench.layouts.naming import MOUNT_FOLDER
from backupbench.layouts.lvm import thin_pool_vgs
from backupbench.monitor.snapwatch import SnapshotWatch
from backupbench.monitor.thinwatch import ThinPoolWatch
from backupbench.plan import Plan
from backupbench.recipe import naming
from backupbench.results.model import RunRecord
from backupbench.runner.alternate import layout_server, record_watches, run_alternated, torn_down
from backupbench.runner.apply_hosts import apply_on_hosts
from backupbench.runner.faulted import FaultRun, member_baseline
from backupbench.runner.phases import Reporter
from backupbench.runner.pipeline import RunSession, journalled, open_journal
from backupbench.runner.placement import NewRun, Placement, Sampling, Where
from backupbench.runner.schedule import schedule
from backupbench.workloads.base import ServedBy, Workload
from backupbench.workloads.registry import WORKLOADS
from backupbench.workloads.sweep import point_entries


def build_workload(entry, server: MinioServer | None = None, layout: str = "") -> Workload:
    """A recipe's workload entry -> the same Workload `backupbench run --workload KIND` builds;
    on a layout served by MinIO the workload is told the server."""
    served = (ServedBy(layout, server.endpoint, server.access_key, server.secret_key)
              if server is not None else None)
    return WORKLOADS[entry.kind].build(entry, served)


@dataclass
class ApplyHooks:
    """What apply needs from the outside world, passed in so tests can see every step."""

    recheck: Callable[[tuple[str, ...]], None]  # right before the first destructive command
    announce: Callable[[str], None] = lambda message: None
    on_closed: Callable[[RunRecord], None] | None = None  # the run is stored as closed
    label: str = ""  # --label: what the run is called wherever runs are compared


def apply(plan: Plan, results: Path, reporter: Reporter, hooks: ApplyHooks, host_facts: dict | None = None) -> RunRecord:
    if plan.recipe.hosts is not None:  # nothing to build: the workloads run on other machines
        return apply_on_hosts(plan, results, reporter, announce=hooks.announce, on_closed=hooks.on_closed,
                              host_facts=host_facts, label=hooks.label)
    if plan.refusals:
        raise RefusedError("the recipe cannot run here: " + "; ".join(plan.refusals),
                           "fix the devices or run it where the kernel has what it needs (see backupbench plan)")
    recipe = plan.recipe
    host = {**facts.collect_host(), **(host_facts or {})}
    with journalled(open_journal(results, plan.run_id)) as journal:
        folder = run_mount_folder(plan)
        if folder is not None:
            # Made by the first layout's `mkdir -p`, removed (once empty) when the run closes.
            journal.will_create(artefacts.folder(folder, plan.run_id, MOUNT_FOLDER.what))
        # The plan's object names (VGs, md arrays, mounts) carry its run id: the stored run keeps it.
        new = NewRun(plan.run_id, "recipe", recipe.name, {"recipe": recipe.model_dump(mode="json")}, host, hooks.label)
        session = RunSession(new, results=results, reporter=reporter, monitor=recipe.monitor, journal=journal,
                             on_closed=hooks.on_closed)
        with session:
            order = schedule([step.layout for step in plan.steps], [spec.repeat for spec in recipe.workload])
            if order.note:
                session.run.notes.append(order.note)
            if order.alternated:
                run_alternated(session, [step.layout for step in plan.steps if step.layout.name in order.alternated],
                               order.rounds, hooks.recheck, hooks.announce,
                               lambda layout, server, sample: _measure_sample(session, recipe, layout, server, sample))
            for step in plan.steps:
                if step.layout.name in order.one_by_one:
                    _one_layout(session, step.layout, plan, journal, hooks)
        return session.run


def run_mount_folder(plan: Plan) -> Path | None:
    """The <mount root>/<run id> folder the layouts' mount points are made in."""
    for step in plan.steps:
        point = step.layout.mount_point
        if step.layout.kind != "directory" and point is not None and point.parent.name == MOUNT_FOLDER.of(plan.run_id):
            return point.parent
    return None


def _one_layout(session: RunSession, layout, plan: Plan, journal: Journal, hooks: ApplyHooks) -> None:
    provisioner = Provisioner(journal, layout.name, on_action=lambda action: hooks.announce(action.description))
    try:
        if layout.fault is not None:
            session.reporter.stage_started(naming.layout_operation(layout.name, naming.MEMBER),
                                           "one member read, then written, alone")
            session.add_operation(member_baseline(layout, hooks.recheck, session.folder / layout.name), announced=True)
        provisioner.apply(layout.actions, lambda: hooks.recheck(layout.devices))
        _measure_layout(session, plan.recipe, layout, provisioner, hooks)
    finally:
        report = torn_down(session, layout.name, provisioner)
    if report.failed:
        # Our own leftovers would make the next layout fail for a confusing reason: stop here.
        raise BackupbenchError(f"the teardown of layout {layout.name} failed: {report.failed[0]}",
                               "see what holds the device, then run `backupbench cleanup`")


def _measure_layout(session: RunSession, recipe, layout, provisioner: Provisioner, hooks: ApplyHooks) -> None:
    server = layout_server(session, layout)
    if server is None:
        _measure_states(session, recipe, layout, None, provisioner, hooks)
        return
    with server:
        _measure_states(session, recipe, layout, server, provisioner, hooks)


def _measure_states(session: RunSession, recipe, layout, server: MinioServer | None, provisioner: Provisioner,
                    hooks: ApplyHooks) -> None:
    """The workloads once; under a fault, once per state of the array (runner/faulted.py)."""
    if layout.fault is None:
        _measure_workloads(session, recipe, layout, server)
        return
    fault = FaultRun(layout=layout, folder=session.folder / layout.name, provisioner=provisioner,
                     recheck=hooks.recheck, journal=session.journal, run_id=session.run_id, reporter=session.reporter,
                     server=server.connection() if server is not None else None)
    try:
        fault.run(lambda state: _measure_workloads(session, recipe, layout, server, state,
                                                   stop_reason=fault.sample_stop_reason))
    finally:
        session.add_operation(fault.record(), announced=fault.rebuild_announced)
        session.run.notes.extend(fault.notes + [f"{layout.name}: rebuild watch: {e}" for e in fault.watch.errors])


def _where(layout) -> tuple[Path | None, tuple[Path, ...]]:
    """(the directory a layout's workloads run in, the paths its data lands on): fio and
    small-file workloads on a MinIO layout run on its first drive."""
    target = layout.s3_drives[0] if layout.s3_drives else layout.mount_point
    return target, layout.s3_drives or ((layout.mount_point,) if layout.mount_point else ())


def _swept(recipe, layout_name: str) -> list[tuple[str, object]]:
    """(group, entry) of every workload the recipe runs on a layout, in order: an entry with a
    `sweep` once per point (workloads/sweep.py), each point a group of its own (recipe/naming.py)."""
    count = len(recipe.workload)
    return [(naming.workload_group(layout_name, index, spec.kind, count, point.key if point else ""), entry)
            for index, spec in enumerate(recipe.workload) for point, entry in point_entries(spec)]


def _measure_workloads(session: RunSession, recipe, layout, server: MinioServer | None, state: str = "",
                       stop_reason: Callable[[], str | None] | None = None) -> None:
    target, storage = _where(layout)
    for index, (base, spec) in enumerate(_swept(recipe, layout.name)):
        group = naming.in_state(base, state)
        # A later workload of a state that has ended (a rebuild) would measure the next one.
        if index and stop_reason is not None and (reason := stop_reason()):
            session.run.notes.append(f"{group}: not measured; {reason}")
            continue
        before = len(session.run.operations)
        with SnapshotWatch(layout.watched_snapshots) as watch, ThinPoolWatch(thin_pool_vgs(layout)) as pools:
            session.measure(build_workload(spec, server, layout.name), Where(target, storage),
                            Placement(group, base, state), Sampling(spec.repeat, stop_reason=stop_reason))
        record_watches(session, layout.name, group, session.run.operations[before:], watch, pools)


def _measure_sample(session: RunSession, recipe, layout, server: MinioServer | None, sample: int) -> None:
    """One round of a layout measured in alternation (runner/alternate.py): sample `sample` of
    each workload (each point of a sweep) repeated that often; its LVM watches run over all
    rounds, in alternate.py."""
    target, storage = _where(layout)
    for base, spec in _swept(recipe, layout.name):
        if spec.repeat < sample:
            continue
        session.measure(build_workload(spec, server, layout.name), Where(target, storage), Placement(base, base),
                        Sampling(spec.repeat, range(sample, sample + 1)))
