"""A measured speed on the plan's disks. A run measured a layout on its own disks (a lab's 6, a
test bed's 2 loop devices); the plan is for the candidate's, often many more. When the counts
differ, the figure is scaled through the per-disk model (sizing/operation_model.py):

    scaled = measured x model(planned) / model(measured)

model(measured) is the operation's speed on the layout as it was measured (its recipe entry:
kind, shape and disk count, measured_speeds.MeasuredLayout.spec), model(planned) on the
candidate, both worked out for the same disk: the measured efficiency against the model at the
measured count (measured / model(measured)) is kept, and applied at the planned count.

The disk both are worked out for: one disk's speed the run measured (the member baseline, else
the monitor: sizing/measured_speeds.py), else --disk-speed; with --disk-access-time. In the
model active-full and restore-sequential are data disks x the disk's speed, so their ratio is
the same at any speed: they scale without one. The random and mixed operations depend on how a
seek compares with a transfer: without a disk speed they are kept as measured, and said so.

The interval: the measured bounds are carried through the product (a factor keeps relative
widths) and widened for the extrapolation. The model's ratio r is trusted to within
MODEL_TOLERANCE of its exponent (25%: the error past which a fault report says a layout is off
its model, sizing/speed_model.py): the bounds are the measured ones times r^0.75 and r^1.25.
For 6 -> 24 disks of raidz2 (r = 22/4 = 5.5) that is 3.6x..8.4x (-35%/+53% around 5.5x); for
r = 2, -16%/+19%; none at r = 1, and as wide for half the disks as for twice. An exponent, not
a fixed percentage: an extrapolation's error grows with its distance, multiplicatively, and
the low bound never reaches 0. A stated allowance, not a measured confidence interval: the
margins use its low bound, and the plan lists a scaled speed as uncertain.

Kept as measured (labelled, with a note): --no-scale (`no_scale` in a recipe's [policy]); a
run whose disks are not known (a plain directory); a layout the model cannot work out.
"""

from __future__ import annotations

from backupbench import units
from backupbench.errors import InputError
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.measured_speeds import MeasuredLayout
from backupbench.sizing.operation_model import model_speeds
from backupbench.sizing.plan_model import Scaling, ScalingHow, Speed
from backupbench.sizing.policy import DiskModel
from backupbench.sizing.speed_model import MODEL_TOLERANCE

# Linear in the disk's speed in the model (data disks x speed): the ratio needs no speed.
LINEAR = ("active-full", "restore-sequential")
# Any speed gives a linear operation the same ratio; this one is only what it is worked out at.
NOMINAL_SPEED = 100 * 10**6


def widened(speed: Speed, factor: float) -> tuple[float, float, float]:
    """(value, low, high) of `speed` x `factor`, its bounds widened by factor^(+/-MODEL_TOLERANCE)."""
    ends = (factor ** (1 - MODEL_TOLERANCE), factor ** (1 + MODEL_TOLERANCE))
    return speed.value * factor, speed.low * min(ends), speed.high * max(ends)


def _per_disk(measured: MeasuredLayout, disk: DiskModel) -> tuple[float | None, str]:
    if measured.disk_speed is not None:
        return measured.disk_speed, measured.disk_speed_from
    if disk.disk_speed is not None:
        return float(disk.disk_speed), "--disk-speed"
    return None, ""


def _models(measured_spec: LayoutSpec, spec: LayoutSpec, speed: float,
            disk: DiskModel) -> tuple[dict[str, Speed], dict[str, Speed]]:
    at = DiskModel.model_validate({"disk_speed": max(1, round(speed)), "disk_access_time": disk.disk_access_time})
    return model_speeds(measured_spec, at), model_speeds(spec, at)


class _Scaler:
    """The scaling of one measured layout's speeds to one candidate (see the module doc)."""

    def __init__(self, measured: MeasuredLayout, spec: LayoutSpec, disk: DiskModel):
        self.measured, self.spec, self.disk = measured, spec, disk
        self.speed, self.speed_from = _per_disk(measured, disk)
        self.models: dict[float, tuple[dict[str, Speed], dict[str, Speed]]] = {}
        self.refused = ""  # why the model cannot work out the layouts ("" while it can)

    def scaling(self, how: ScalingHow, why: str, factor: float | None = None, speed: float | None = None,
                speed_from: str = "") -> Scaling:
        return Scaling(how=how, measured_disks=self.measured.disks, planned_disks=self.spec.disks, factor=factor,
                       disk_speed=speed, disk_speed_from=speed_from, why=why)

    def ratio(self, operation: str) -> tuple[float, float, str] | None:
        """(model(planned) / model(measured), the speed it was worked out at, where that came
        from), or None when it cannot be (no disk speed for a random operation, or the model
        refuses a layout: `refused` says why)."""
        speed, speed_from = self.speed, self.speed_from
        if speed is None:
            if operation not in LINEAR:
                return None
            speed, speed_from = NOMINAL_SPEED, ""
        assert self.measured.spec is not None
        if speed not in self.models:
            try:
                self.models[speed] = _models(self.measured.spec, self.spec, speed, self.disk)
            except InputError as exc:
                self.refused = exc.message
                return None
        at_measured, at_planned = self.models[speed]
        return at_planned[operation].value / at_measured[operation].value, speed, speed_from

    def scaled(self, operation: str, speed: Speed) -> Speed:
        found = self.ratio(operation)
        if found is None:
            why = self.refused or ("no one disk's speed to work the model out at: no member baseline or monitor "
                                   "figures in the run, and no --disk-speed")
            return speed.model_copy(update={"scaling": self.scaling("not-scaled", why)})
        factor, at, at_from = found
        value, low, high = widened(speed, factor)
        n, m = self.measured.disks, self.spec.disks
        disk = f"a disk of {units.format_rate(at)} ({at_from})" if at_from else "any disk speed (linear in it)"
        why = (f"x {factor:.3f}: the per-disk model's {operation} on {m} disks over {n}, for {disk}; interval "
               f"widened by x{factor:.3f}^(1 -/+ {MODEL_TOLERANCE:g}) for the extrapolation")
        return Speed(value=value, low=low, high=high, source="measured", samples=speed.samples,
                     why=f"{speed.why}; scaled from {n} to {m} disks",
                     scaling=self.scaling("scaled", why, factor, at if at_from else None, at_from))


def on_planned_disks(speeds: dict[str, Speed], measured: MeasuredLayout, spec: LayoutSpec,
                     disk: DiskModel) -> tuple[dict[str, Speed], list[str]]:
    """`measured`'s speeds (operation -> speed) on `spec`'s disks, and the notes the plan
    makes of them (see the module doc)."""
    if not speeds:
        return speeds, []
    n, m, label = measured.disks, spec.disks, measured.label
    scaler = _Scaler(measured, spec, disk)
    if n is None or measured.spec is None:
        why = ("the disks it was measured on are not known (a run of a directory)" if n is None
               else "size does not model the layout it measured")
        kept = {op: s.model_copy(update={"scaling": scaler.scaling("unknown", why)}) for op, s in speeds.items()}
        return kept, [f"speeds of {label}: {why}, so they are taken as measured, not scaled to the plan's {m} disks"]
    if n == m:
        return {op: s.model_copy(update={"scaling": scaler.scaling("same", f"measured on {n} disks, as planned")})
                for op, s in speeds.items()}, []
    if disk.no_scale:
        why = f"--no-scale: taken as measured on {n} disks, for {m}"
        kept = {op: s.model_copy(update={"scaling": scaler.scaling("not-scaled", why)}) for op, s in speeds.items()}
        return kept, [f"speeds of {label}: the plan has {m} disks; taken as measured, not scaled (--no-scale)"]
    scaled = {op: scaler.scaled(op, s) for op, s in speeds.items()}
    how = {op: s.scaling for op, s in scaled.items() if s.scaling is not None}
    factors = {op: found.factor for op, found in how.items() if found.factor is not None}
    kept = {op: found.why for op, found in how.items() if found.factor is None}
    notes = []
    if factors:
        at = f" at {units.format_rate(scaler.speed)} a disk ({scaler.speed_from})" if scaler.speed is not None else ""
        notes.append(f"speeds of {label} scaled from {n} to {m} disks through the per-disk model{at}: "
                     + ", ".join(f"{op} x {factor:.2f}" for op, factor in factors.items())
                     + "; their intervals widened for the extrapolation")
    if kept:
        notes.append(f"{', '.join(kept)} of {label}: not scaled to {m} disks ({next(iter(kept.values()))}); "
                     "taken as measured")
    return scaled, notes
