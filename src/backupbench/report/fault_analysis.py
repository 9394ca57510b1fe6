"""A fault run read back (here, not in analysis/: it sets measurements against sizing's models, and sizing
already reads analysis): per layout, each operation's speed healthy, degraded, rebuilding
and rebuilt (x against healthy), the rebuild's own figures, and the model beside them
(sizing/speed_model.py). The terminal and HTML reports draw the same FaultReport."""

from __future__ import annotations

from dataclasses import dataclass, field

from backupbench.analysis.compare import headline
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.sizing import speed_model
from backupbench.sizing.measured_rebuild import layout_operations, member_record, recipe_layout, used_percent
from backupbench.sizing.speed_model import Expected
from backupbench.units import MiB
from backupbench.workloads import capabilities

READ_OPERATIONS = ("restore-sequential", "restore-random", "get")
# Large sequential writes: what the write model describes (a merge's randrw is not).
WRITE_OPERATIONS = ("active-full", "put")
KB2014_BLOCK = 512 * 1024
# Members moving at least this share of their own measured speed, or this busy, were the bound.
DISKS_BOUND_SHARE = 0.8
DISKS_BUSY_PCT = 90.0


@dataclass
class OperationRow:
    operation: str
    figure: str                               # effective_bw or files_per_s
    speeds: dict[str, float] = field(default_factory=dict)  # state -> value (the median of its samples)
    samples: dict[str, list[float]] = field(default_factory=dict)  # state -> its samples, for the verdicts
    model: Expected | None = None
    healthy_figures: dict[str, float] = field(default_factory=dict)  # the monitor's, to say why it is off

    @property
    def model_error(self) -> float | None:
        healthy = self.speeds.get(naming.HEALTHY)
        return speed_model.error(healthy, self.model.value) if self.model and healthy else None


@dataclass
class FaultReport:
    layout: str
    target: str
    failed: list[str]
    rebuild_load: str
    rebuild: dict[str, float]
    rows: list[OperationRow]
    member_bw: float | None
    model_rebuild: Expected | None
    record: OperationRecord  # the `<layout>/rebuild` operation: its samples, phases and clock
    member_write_bw: float | None = None

    @property
    def rebuilds(self) -> bool:
        return bool(self.record.detail.get("rebuilds", True))

    @property
    def csv(self) -> str:
        return self.record.detail.get("rebuild_csv", "")

    @property
    def rebuild_error(self) -> float | None:
        seconds = self.rebuild.get("rebuild_seconds")
        return speed_model.error(seconds, self.model_rebuild.value) if self.model_rebuild and seconds else None

    def restore_during_rebuild(self) -> float | None:
        for name in ("restore-random", "restore-sequential"):
            row = next((r for r in self.rows if r.operation == name), None)
            if row is not None and "rebuilding" in row.speeds:
                return row.speeds["rebuilding"]
        return None

    def _why_below(self, row: OperationRow) -> str:
        """For a figure below its disk model, what the monitor saw: the members moving at their
        own sequential speed or busy (the disks bound it: the model's count of them is off), or
        well under it and idle enough (something else did: in the lab, often the emulated CPU).
        Both are needed: random reads keep a disk busy far below its sequential speed, and a
        QEMU-throttled disk reads at its limit while the guest sees it mostly idle."""
        if row.model_error is None or row.model_error >= 0:
            return ""
        reads = row.operation in READ_OPERATIONS
        figures = row.healthy_figures
        each = figures.get("members_rMB_s" if reads else "members_wMB_s")
        own = self.member_bw if reads else self.member_write_bw
        if each is None or not own:
            return ""
        share, busy = each * MiB / own, figures.get("members_util")
        moved = (f"; the members {'read' if reads else 'wrote'} {each:.1f} MiB/s each, {share:.0%} of their own "
                 f"sequential speed" + (f", {busy:.0f}% busy" if busy is not None else ""))
        if share >= DISKS_BOUND_SHARE or (busy is not None and busy >= DISKS_BUSY_PCT):
            return moved + ": the disks bound it"
        return moved + ": something other than the disks bound it" + _cpu_said(figures)

    def model_warnings(self) -> list[str]:
        lines = []
        for row in self.rows:
            if speed_model.off(row.model_error):
                lines.append(f"{self.layout}: {row.operation} healthy is {row.model_error:+.0%} against its model "
                             f"({row.model.why}): more than {speed_model.MODEL_TOLERANCE:.0%} off"
                             + self._why_below(row))
        if speed_model.off(self.rebuild_error):
            lines.append(f"{self.layout}: the rebuild took {self.rebuild_error:+.0%} against the model "
                         f"({self.model_rebuild.why}): more than {speed_model.MODEL_TOLERANCE:.0%} off"
                         + (" (the workloads ran during it)" if self.rebuild_load != "none" else ""))
        return lines


def _cpu_said(figures: dict[str, float]) -> str:
    """The CPU's share spent computing (user + system), and time taken by the hypervisor
    (steal) apart: in a VM that is the host's own contention, not this machine's work."""
    user, system, steal = (figures.get(f"mon.cpu_{k}.avg") for k in ("user", "system", "steal"))
    if user is None or system is None:
        return ""
    return f" (CPU {user + system:.0f}% busy" + (f", {steal:.0f}% stolen" if steal and steal >= 1 else "") + ")"


def _block_size(run: RunRecord) -> int:
    """The block size the run's KB2014 operations read with (the model's reads are in it)."""
    workloads = (run.settings.get("recipe") or {}).get("workload") or []
    return next((w.get("block_size") for w in workloads
                 if capabilities.of_kind(run, str(w.get("kind"))).kb2014_operations and w.get("block_size")),
                KB2014_BLOCK)


def _rows(ops: list[OperationRecord]) -> list[OperationRow]:
    rows: dict[str, OperationRow] = {}
    for op in ops:
        state = op.state
        best = headline(op.figures)
        if state not in naming.FAULT_STATES or best is None or op.status != COMPLETE:
            continue
        operation = naming.phase_of(op.name)
        row = rows.setdefault(operation, OperationRow(operation, best[0]))
        row.speeds.setdefault(state, best[1])
        row.samples.setdefault(state, op.sample_values(best[0]))
        if state == naming.HEALTHY and not row.healthy_figures:
            row.healthy_figures = dict(op.figures)
    return list(rows.values())


def _report(run: RunRecord, rebuild: OperationRecord) -> FaultReport:
    name = rebuild.layout
    ops = layout_operations(run, name)
    member = member_record(ops)
    layout = recipe_layout(run, name)
    rows = _rows(ops)
    member_bw = member.figures.get("read_bw") if member else None
    model_rebuild = None
    if member_bw and member and member.figures.get("member_bytes"):
        for row in rows:
            if row.operation in READ_OPERATIONS and row.figure == "effective_bw":
                row.model = speed_model.expected_read(layout, member_bw, _block_size(run))
            elif row.operation in WRITE_OPERATIONS and row.figure == "effective_bw" and member.figures.get("write_bw"):
                row.model = speed_model.expected_write(layout, member.figures["write_bw"])
        used = used_percent(ops, rebuild, member.figures["member_bytes"])
        fault = layout.get("fault") or {}
        model_rebuild = speed_model.expected_rebuild_seconds(
            layout, int(member.figures["member_bytes"]), member_bw, used_percent=used,
            distributed="distributed" in rebuild.detail["target"], speed_limit_max=fault.get("speed_limit_max"))
    return FaultReport(name, rebuild.detail.get("target", ""), rebuild.detail.get("failed", []),
                       rebuild.detail.get("rebuild_load", ""), dict(rebuild.figures), rows, member_bw, model_rebuild,
                       rebuild, member.figures.get("write_bw") if member else None)


def fault_reports(run: RunRecord) -> list[FaultReport]:
    return [_report(run, op) for op in run.operations if op.state == naming.REBUILD]
