"""Which stored run measured which candidate layout: the measured speeds of a repository plan.

An `apply` run measured each layout of its recipe: its phases carry the recipe layout's name,
and speed_model.sizing_spec says which layout `size` models it as. A candidate and a stored
layout are the same layout when they are of the same *kind*: the layout name without dRAID's
shape (raid6, raidz2, draid2, minio-ec, btrfs-raid1); the disks may differ (a lab measures
small disks): the speeds are taken as measured, not scaled, and the plan says so.

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
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from backupbench.analysis.windows import effective_speeds, layouts_of
from backupbench.errors import InputError
from backupbench.results.model import RunRecord
from backupbench.sizing.capacity import is_layout_name, layout_family, parse_draid
from backupbench.sizing.measured_rebuild import measured_rebuilds, recipe_layout
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

    @property
    def label(self) -> str:
        where = f"layout {self.name}" if self.name else "a directory"
        return f"run {self.run_id}, {where}" + (f" ({self.disks} disks)" if self.disks else "")

    def speed(self, operation: str) -> Speed | None:
        """One run: that run's figure, one sample. Several runs of the layout: the median, and the
        95% interval of their mean (stats.spread) as the bounds a margin is worked out from."""
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
        """This layout with `other`'s figures as further samples (another run of the same layout)."""
        samples = {op: (*(self.samples.get(op) or (value,)), *((other.speeds[op],) if op in other.speeds else ()))
                   for op, value in self.speeds.items()}
        return dataclasses.replace(self, samples=samples)


def _rebuild(run: RunRecord, name: str) -> tuple[float | None, str]:
    for rebuild in measured_rebuilds(run):
        if rebuild.layout == name:
            kind = "loaded" if "loaded" in rebuild.rates else "whole"
            how = "under the workloads" if kind == "loaded" else "as measured"
            return rebuild.rates[kind], f"{how}: rebuilt in {rebuild.seconds:.1f} s"
    return None, ""


def measured_layouts(run: RunRecord) -> list[MeasuredLayout]:
    """Each layout `run` measured, with its speeds and rebuild rate."""
    found = []
    for name in layouts_of(run):
        speeds = {op: bw for op, bw in effective_speeds(run, name).items() if op in PLAN_OPERATIONS}
        if name is None:
            found.append(MeasuredLayout(run.run_id, None, None, "directory", None, speeds))
            continue
        entry = recipe_layout(run, name)
        spec = sizing_spec(entry, 1)
        rate, how = _rebuild(run, name)
        refused = ""
        if entry.get("kind") in FIO_BESIDE_THE_SERVER and speeds:
            refused = (f"run {run.run_id}, layout {name}: fio measured one drive's filesystem, not MinIO's erasure "
                       "set, so the model gives its speeds")
            speeds = {}
        found.append(MeasuredLayout(run.run_id, name, None if spec is None else layout_kind(spec.layout),
                                    str(entry.get("kind", "?")), len(entry.get("devices") or ()) or None,
                                    speeds, rate, how, speeds_refused=refused))
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
        if not m.speeds and m.rebuild_rate is None and not m.speeds_refused:
            raise InputError(f"{m.label} has no backup-operation speeds and no rebuild for {candidate}",
                             "use a run of the kb2014 workload or of a fault on that layout")
    return chosen
