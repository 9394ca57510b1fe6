"""A recipe's layouts measured in rounds (runner/schedule.py says which): all built first,
then round r runs sample r of every layout's workloads, layout after layout in the round's
order (reversed each round), and all torn down at the end.

Each layout's actions are journalled under its name as it is built (layouts/executor.py), so
whatever ends the run (a failed build, a failed phase, Ctrl-C) every layout built so far is
torn down here, newest first, signals held meanwhile; and what a teardown could not undo
stays pending in the run's journal for its sweep and `backupbench cleanup`.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Callable, Sequence

from backupbench import stopping
from backupbench.errors import BackupbenchError
from backupbench.layouts.actions import LayoutPlan
from backupbench.layouts.executor import Provisioner, TeardownReport
from backupbench.layouts.lvm import thin_pool_vgs
from backupbench.layouts.minio import MinioServer
from backupbench.monitor.snapwatch import SnapshotWatch
from backupbench.monitor.thinwatch import ThinPoolWatch
from backupbench.runner.pipeline import RunSession
from backupbench.runner.schedule import round_order

# (layout, its MinIO server or None, the sample to run): one round's share of one layout.
MeasureSample = Callable[[LayoutPlan, "MinioServer | None", int], None]


@dataclass
class _Watches:
    """A layout's LVM watches, over all its rounds (its phases are not back to back)."""

    snapshots: SnapshotWatch
    pools: ThinPoolWatch


def run_alternated(session: RunSession, layouts: Sequence[LayoutPlan], rounds: int, recheck: Callable,
                   announce: Callable[[str], None], measure: MeasureSample) -> None:
    """Build every layout of `layouts`, measure them in `rounds` rounds, tear all down."""
    built: list[tuple[str, Provisioner]] = []
    failed: list[tuple[str, TeardownReport]] = []
    try:
        for layout in layouts:
            provisioner = Provisioner(session.journal, layout.name,
                                      on_action=lambda action: announce(action.description))
            built.append((layout.name, provisioner))
            provisioner.apply(layout.actions, lambda layout=layout: recheck(layout.devices))
        watches = _measure_rounds(session, layouts, rounds, measure)
        for name, watch in watches.items():
            _watched(session, name, watch)
    finally:
        for name, provisioner in reversed(built):
            report = torn_down(session, name, provisioner)
            if report.failed:
                failed.append((name, report))
    if failed:
        name, report = failed[0]
        raise BackupbenchError(f"the teardown of layout {name} failed: {report.failed[0]}",
                               "see what holds the device, then run `backupbench cleanup`")


def _measure_rounds(session: RunSession, layouts: Sequence[LayoutPlan], rounds: int,
                    measure: MeasureSample) -> dict[str, _Watches]:
    """Every round over the built layouts, each with its MinIO server and LVM watches running
    throughout (both stopped before the teardown: MinIO holds the mounted drives)."""
    with ExitStack() as running:
        servers = {layout.name: _started(running, layout_server(session, layout)) for layout in layouts}
        watches = {layout.name: _Watches(running.enter_context(SnapshotWatch(layout.watched_snapshots)),
                                         running.enter_context(ThinPoolWatch(thin_pool_vgs(layout))))
                   for layout in layouts}
        by_name = {layout.name: layout for layout in layouts}
        for round_number in range(1, rounds + 1):
            for name in round_order(list(by_name), round_number):
                measure(by_name[name], servers[name], round_number)
    return watches


def torn_down(session: RunSession, name: str, provisioner: Provisioner) -> TeardownReport:
    """Undo a layout's actions (a second Ctrl-C waits until it is done); what was left alone
    or failed is said in the run's notes."""
    with stopping.held():
        report = provisioner.teardown()
    session.run.notes.extend(f"{name}: left alone (not ours any more): {skipped}" for skipped in report.skipped)
    session.run.notes.extend(f"{name}: teardown failed: {problem}" for problem in report.failed)
    return report


def layout_server(session: RunSession, layout: LayoutPlan) -> MinioServer | None:
    """The MinIO server a layout with S3 drives is measured through (a context manager, not
    yet started); None for a layout without."""
    if not layout.s3_drives:
        return None
    return MinioServer(list(layout.s3_drives), log_path=session.folder / f"{layout.name}.minio.log",
                       extra_env=dict(layout.s3_env))


def _started(running: ExitStack, server: MinioServer | None) -> MinioServer | None:
    return None if server is None else running.enter_context(server)


def _watched(session: RunSession, name: str, watch: _Watches) -> None:
    """What the layout's LVM watches saw over all its rounds, on every phase of the layout."""
    mine = [op for op in session.run.operations if op.name.startswith(name + "/")]
    record_watches(session, name, name, mine, watch.snapshots, watch.pools)


def record_watches(session: RunSession, layout: str, said_as: str, operations: list, snapshots: SnapshotWatch,
                   pools: ThinPoolWatch) -> None:
    """What a layout's LVM watches saw: their figures on the phases they watched, their notes
    (said as `said_as`), and the run void when a snapshot overflowed or a thin pool filled."""
    if snapshots.snapshots or pools.vgs:
        session.annotate(operations, {**snapshots.figures(), **pools.figures()})
    session.run.notes.extend(f"{said_as}: {note}" for note in (*snapshots.notes(), *pools.notes()))
    if (full_pool := pools.void_reason(layout)) is not None:
        session.void(full_pool)
    if snapshots.invalid:
        session.void(f"snapshot {', '.join(sorted(snapshots.invalid))} of {layout} overflowed and is Invalid: "
                     "the figures of this run are void; give the snapshots more space")
