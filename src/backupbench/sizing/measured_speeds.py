"""Which stored run measured which candidate layout: the measured speeds of a repository plan.

An `apply` run measured each layout of its recipe: its phases carry the recipe layout's name,
and speed_model.sizing_spec says which layout `size` models it as. A candidate and a stored
layout are the same layout when they are of the same *kind*: the layout name without dRAID's
shape (raid6, raidz2, draid2, minio-ec, btrfs-raid1); the disks may differ (a lab measures
small disks, and fewer of them): each speed carries the disks it was measured on, and the plan
scales it to the candidate's count through the per-disk model (sizing/scaled_speeds.py).

The disks a layout was measured on: the recipe entry's `devices` as stored with the run (the
monitor's members under the layout, `host.device_stacks`, when the entry names none). One
disk's own speed, which the model is worked out at: the fault run's member baseline (the
member's sequential read, measured alone before the layout was built), else the most a member
was seen to read or write in one of the layout's healthy phases (the monitor's
`members_rMB_s`/`members_wMB_s`: a floor of what a disk does), else none (the plan then takes
--disk-speed). A plain run of a directory knows neither: the directory may sit on one disk or a
controller's LUN of many, and which layout it was is only what --from-run LAYOUT=RUN says.

    --from-run RUN           every candidate whose kind RUN measured takes RUN's speeds
    --from-run LAYOUT=RUN    RUN's speeds go to the candidate LAYOUT (a plain `run` of a
                             directory records no layout: it must be given this way)

A run that measured none of the candidates, or a pinned run of another layout, is refused:
another layout's speeds would pass for this one's. Several runs of one layout are its samples:
the plan takes their median, and the 95% interval of their mean bounds the margins. The speeds are the KB2014 operations'
effective speeds of the healthy layout (analysis.windows.effective_speeds); the rebuild rate is
a fault run's (sizing/measured_rebuild.py), under the workloads when it was measured so.
A minio-ec layout is the exception: fio ran on one drive's filesystem, not through the erasure
set, so its KB2014 figures are not the candidate's; the plan takes the model and says why.
An aging run of a layout gives its restore speeds at the age planned for (sizing/aged_speeds.py:
--at-age, or the run's last day), which take the place of a new repository's; its other
operations come from the other runs given for the layout, or the model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from backupbench import units
from backupbench.analysis.aging import aging_series
from backupbench.analysis.windows import effective_speeds, layouts_of
from backupbench.errors import InputError
from backupbench.recipe import naming
from backupbench.results.model import COMPLETE, RunRecord
from backupbench.sizing.aged_speeds import AgedSpeeds, aged_speeds
from backupbench.sizing.capacity import LayoutSpec, is_layout_name, layout_family, parse_draid
from backupbench.sizing.measured_rebuild import layout_operations, measured_rebuilds, member_record, recipe_layout
from backupbench.sizing.plan_model import Speed
from backupbench.sizing.speed_model import sizing_spec
from backupbench.stats import spread

# Layouts whose fio phases run on a drive's filesystem beside the server, not through the layout.
FIO_BESIDE_THE_SERVER = ("minio-ec",)
PLAN_OPERATIONS = ("active-full", "synthetic-full", "reverse-incremental", "restore-sequential", "restore-random")


def layout_kind(name: str) -> str:
    """'draid2:8d:24c:1s' -> 'draid2'; other layout names as they are."""
    if is_layout_name(name) and layout_family(name) == "draid":
        return f"draid{parse_draid(name)[0]}"
    return name


@dataclass(frozen=True)
class MeasuredLayout:
    run_id: str
    name: str | None            # the recipe layout's name; None: a plain run of a directory
    kind: str | None            # as `size` models it; None: not a layout size models
    recipe_kind: str            # the recipe's own kind (mdraid, zfs, directory, ...)
    disks: int | None
    speeds: dict[str, float] = field(default_factory=dict)
    rebuild_rate: float | None = None  # per disk, in the rebuild model's units
    rebuild_how: str = ""
    # Each operation's speed in every run given for this layout (the first run's is `speeds`).
    samples: dict[str, tuple[float, ...]] = field(default_factory=dict)
    # Why the run's KB2014 figures are not this layout's speeds ("" when they are).
    speeds_refused: str = ""
    # An aging run's restores at the age planned for: they replace the restore speeds.
    aged: AgedSpeeds | None = None
    # The layout as `size` models it on the disks measured (None: a directory, or a kind it does not model).
    spec: LayoutSpec | None = None
    # One disk's own sequential speed (bytes/s) and where it was found (see the module doc).
    disk_speed: float | None = None
    disk_speed_from: str = ""

    @property
    def label(self) -> str:
        where = f"layout {self.name}" if self.name else "a directory"
        return f"run {self.run_id}, {where}" + (f" ({self.disks} disks)" if self.disks else "")

    def speed(self, operation: str) -> Speed | None:
        """One run: that run's figure, one sample. Several runs of the layout: the median, and the
        95% interval of their mean (stats.spread) as the bounds a margin is worked out from. An
        aging run's restores at the age planned for come first."""
        if self.aged is not None and operation in self.aged.speeds:
            return self.aged.speeds[operation]
        values = self.samples.get(operation) or ((self.speeds[operation],) if operation in self.speeds else ())
        if not values:
            return None
        if len(values) == 1:
            return Speed.single(values[0], "measured", self.label, samples=1)
        figure = spread(values)
        low = figure.low if figure.low is not None else figure.minimum
        high = figure.high if figure.high is not None else figure.maximum
        return Speed(value=figure.median, low=min(low, figure.median), high=max(high, figure.median),
                     source="measured", samples=len(values), why=f"{self.label} and {len(values) - 1} more run(s) "
                     f"of it: median, 95% interval of the mean")

    def joined(self, other: "MeasuredLayout") -> "MeasuredLayout":
        """This layout with `other`'s figures as further samples (another run of the same layout);
        what only one of them measured (an aging run's restores, a fault run's rebuild) is kept.
        Speeds measured on different numbers of disks are not samples of one figure: refused (a
        rebuild rate is per disk, and joins whatever the count)."""
        if (self.speeds or self.aged) and (other.speeds or other.aged) and self.disks != other.disks:
            counts = " and ".join("disks not known" if m.disks is None else f"{m.disks} disks" for m in (self, other))
            raise InputError(f"{self.label} and {other.label}: speeds measured on {counts} are not samples of one "
                             "figure", "give --from-run runs of the layout on one number of disks")
        samples = {op: (*(self.samples.get(op) or ((self.speeds[op],) if op in self.speeds else ())),
                        *((other.speeds[op],) if op in other.speeds else ()))
                   for op in dict.fromkeys([*self.speeds, *other.speeds])}
        rebuild = (self.rebuild_rate, self.rebuild_how) if self.rebuild_rate is not None else (
            other.rebuild_rate, other.rebuild_how)
        speed = (self.disk_speed, self.disk_speed_from) if self.disk_speed is not None else (
            other.disk_speed, other.disk_speed_from)
        return dataclasses.replace(self, speeds={**other.speeds, **self.speeds}, samples=samples,
                                   aged=self.aged or other.aged, rebuild_rate=rebuild[0], rebuild_how=rebuild[1],
                                   disk_speed=speed[0], disk_speed_from=speed[1])


def _rebuild(run: RunRecord, name: str) -> tuple[float | None, str]:
    for rebuild in measured_rebuilds(run):
        if rebuild.layout == name:
            kind = "loaded" if "loaded" in rebuild.rates else "whole"
            how = "under the workloads" if kind == "loaded" else "as measured"
            return rebuild.rates[kind], f"{how}: rebuilt in {rebuild.seconds:.1f} s"
    return None, ""


def _disk_count(run: RunRecord, name: str, entry: dict) -> int | None:
    """The recipe entry's devices, else the monitor's members under the layout."""
    members = ((run.host.get("device_stacks") or {}).get(name) or {}).get("members") or ()
    return len(entry.get("devices") or ()) or len(members) or None


def _disk_speed(run: RunRecord, name: str) -> tuple[float | None, str]:
    """One disk's sequential speed: the member baseline's read, else the most a member moved in
    a healthy phase as the monitor saw it (see the module doc)."""
    ops = layout_operations(run, name)
    member = member_record(ops)
    if member is not None and member.figures.get("read_bw"):
        return float(member.figures["read_bw"]), "member baseline"
    seen = [op.figures[figure] for op in ops if op.status == COMPLETE and op.state in ("", naming.HEALTHY)
            for figure in ("members_rMB_s", "members_wMB_s") if op.figures.get(figure)]
    return (max(seen) * units.MiB, "monitor") if seen else (None, "")


def _aged(run: RunRecord, name: str | None, at_age: int | None) -> AgedSpeeds | None:
    """The layout's aging workload's restores at `at_age` days (its first, when it aged twice)."""
    series = [found for found in aging_series(run) if (found.layout or None) == name]
    return aged_speeds(series[0], run.run_id, at_age) if series else None


def measured_layouts(run: RunRecord, at_age: int | None = None) -> list[MeasuredLayout]:
    """Each layout `run` measured, with its speeds and rebuild rate, and an aging run's restores
    at `at_age` days (None: its last day)."""
    found = []
    for name in layouts_of(run):
        speeds = {op: bw for op, bw in effective_speeds(run, name).items() if op in PLAN_OPERATIONS}
        aged = _aged(run, name, at_age)
        if name is None:
            found.append(MeasuredLayout(run.run_id, None, None, "directory", None, speeds, aged=aged))
            continue
        entry = recipe_layout(run, name)
        spec = sizing_spec(entry, 1)
        rate, how = _rebuild(run, name)
        refused = ""
        if entry.get("kind") in FIO_BESIDE_THE_SERVER and (speeds or aged):
            refused = (f"run {run.run_id}, layout {name}: fio measured one drive's filesystem, not MinIO's erasure "
                       "set, so the model gives its speeds")
            speeds, aged = {}, None
        disks = _disk_count(run, name, entry)
        if spec is not None and disks is not None and spec.disks != disks:
            spec = dataclasses.replace(spec, disk_sizes=(1,) * disks)  # the members the monitor found
        disk_speed, speed_from = _disk_speed(run, name)
        found.append(MeasuredLayout(run.run_id, name, None if spec is None else layout_kind(spec.layout),
                                    str(entry.get("kind", "?")), disks, speeds, rate, how, speeds_refused=refused,
                                    aged=aged, spec=spec, disk_speed=disk_speed, disk_speed_from=speed_from))
    return found


def parse_pin(text: str) -> tuple[str | None, str]:
    """'raidz2=RUN' -> ('raidz2', 'RUN'); 'RUN' -> (None, 'RUN')."""
    layout, sep, ref = text.partition("=")
    if not sep:
        return None, text.strip()
    if not layout.strip() or not ref.strip():
        raise InputError(f"--from-run {text!r}: give RUN or LAYOUT=RUN", "e.g. --from-run raidz2=latest")
    return layout.strip(), ref.strip()


def _what(layouts: list[MeasuredLayout]) -> str:
    names = sorted({m.kind or m.recipe_kind for m in layouts})
    return " and ".join(names) if names else "nothing"


def _pinned(candidate: str, ref: str, layouts: list[MeasuredLayout]) -> MeasuredLayout:
    kind = layout_kind(candidate)
    match = [m for m in layouts if m.kind == kind]
    if not match and len(layouts) == 1 and layouts[0].name is None:
        return layouts[0]  # a plain run: the user says which layout it measured
    if not match:
        run_id = layouts[0].run_id if layouts else ref
        raise InputError(f"run {run_id} measured {_what(layouts)}, not {kind}: a run of another layout cannot "
                         f"give {candidate}'s speeds", f"pin a run of {kind}, or leave {candidate} to the model")
    return match[0]


def assign(candidates: list[str], runs: list[tuple[str | None, str, list[MeasuredLayout]]]) -> dict[str, MeasuredLayout]:
    """Candidate layout (as given) -> the stored layout that measured it. `runs` holds
    (pinned candidate or None, the reference given, the layouts that run measured)."""
    kinds = {layout_kind(c): c for c in candidates}
    chosen: dict[str, MeasuredLayout] = {}
    for pin, ref, layouts in runs:
        if pin is not None:
            if layout_kind(pin) not in kinds:
                raise InputError(f"--from-run {pin}={ref}: {pin} is not one of the candidates ({', '.join(candidates)})",
                                 "pin the run to a layout given with --layout")
            candidate, found = kinds[layout_kind(pin)], _pinned(pin, ref, layouts)
            chosen[candidate] = chosen[candidate].joined(found) if candidate in chosen else found
            continue
        if any(m.name is None for m in layouts):
            raise InputError(f"run {layouts[0].run_id} measured a directory, not a layout: which candidate was it?",
                             f"pin it: --from-run LAYOUT={ref}, e.g. {candidates[0]}={ref}")
        matched = [m for m in layouts if m.kind in kinds]
        if not matched:
            raise InputError(f"run {layouts[0].run_id if layouts else ref} measured {_what(layouts)}: none of the "
                             f"candidates ({', '.join(candidates)})", "give a run of a candidate layout, or add its "
                             "layout to --layout")
        for m in matched:
            candidate = kinds[m.kind or ""]
            chosen[candidate] = chosen[candidate].joined(m) if candidate in chosen else m
    for candidate, m in chosen.items():
        if not m.speeds and m.rebuild_rate is None and not m.speeds_refused and m.aged is None:
            raise InputError(f"{m.label} has no backup-operation speeds and no rebuild for {candidate}",
                             "use a run of the kb2014 workload, of a fault or of the aging workload on that layout")
    return chosen
