"""A sweep: one workload run over a grid of values of its own options (issue 42), as bench-fio
runs an iodepth x numjobs matrix. `backupbench sweep --over iodepth=1,4,16 --over jobs=1,2`
and a recipe entry's `sweep = { iodepth = [1, 4, 16], jobs = [1, 2] }` mean the same grid.

The one owner of what a grid is: which options may be swept (any option of the workload but
its credentials and the keys that say how the pipeline runs it), how a parameter named wrong
is refused (did you mean, or the workload whose option it is), the points in the order they
run (the product of the values, the first parameter slowest), how a point is written (as the
user wrote its values: `iodepth=4 jobs=2`), and the rule that every point runs the same
phases: a sweep compares points phase by phase, so `operations` or `s3_phases` cannot vary.
Each value is checked by the workload's own options model (the flag's or the key's), never
by rules of its own here: a value `run` refuses, a sweep refuses the same way.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from pydantic import BaseModel, SecretStr, ValidationError

from backupbench.schema import TYPED, describe

# At most this many values of one parameter, and points in all: each point is a whole run of
# the workload (minutes each at the default sizes); a larger grid is a typo or a week.
MAX_VALUES = 16
MAX_POINTS = 64
# Keys of a recipe entry that say how the pipeline runs the workload, not what it is.
NOT_OPTIONS = frozenset({"kind", "repeat", "sweep", "preset"})
# Characters a swept value may not hold: a point is named '<kind>@iodepth=4,jobs=2' inside an
# operation's name, which '/' splits (recipe/naming.py).
UNNAMEABLE = frozenset("/,=@[]")
# In a stored run's settings: the sweep it belongs to (SweepRecord.stored).
STORED_KEY = "sweep"


class SweepRefused(ValueError):
    """A grid that cannot run; `where` names the parameter it is about ('' for the whole grid),
    so a recipe can report it at its key (workload[0].sweep.iodepth)."""

    def __init__(self, message: str, where: str = ""):
        super().__init__(message)
        self.where = where


def parameter(name: str) -> str:
    """A parameter as an option's field name: `block-size` (a flag) and `block_size` (a key) alike."""
    return name.strip().removeprefix("--").replace("-", "_")


def value_text(value: Any) -> str:
    """A value as a point names it: as written (`512KiB`, `4`), true/false as TOML writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


@dataclass(frozen=True)
class Point:
    """One point of a grid: (parameter, value as written) in the grid's order; `given`, the
    values as the grid holds them (a recipe's 4 and "512KiB", a command line's text), for the
    options model to read."""

    values: tuple[tuple[str, str], ...]
    given: tuple[Any, ...] = field(default=(), compare=False)

    def given_values(self) -> dict[str, Any]:
        return {name: raw for (name, _), raw in zip(self.values, self.given or [v for _, v in self.values])}

    @property
    def text(self) -> str:
        """'iodepth=4 jobs=2': in a run's label and in every table."""
        return " ".join(f"{name}={value}" for name, value in self.values)

    @property
    def key(self) -> str:
        """'iodepth=4,jobs=2': in an operation's name (recipe/naming.py), where a space would split it."""
        return ",".join(f"{name}={value}" for name, value in self.values)

    def as_dict(self) -> dict[str, str]:
        return dict(self.values)


def points(grid: Mapping[str, Sequence[Any]]) -> list[Point]:
    """Every point of the grid, the first parameter varying slowest (`--over` order)."""
    names = list(grid)
    return [Point(tuple(zip(names, (value_text(v) for v in combination))), tuple(combination))
            for combination in itertools.product(*(grid[name] for name in names))]


def sweepable(model: type[BaseModel]) -> list[str]:
    """The options of `model` a sweep may vary: all but credentials and the pipeline's keys."""
    return [name for name, field in model.model_fields.items()
            if name not in NOT_OPTIONS and not _secret(field.annotation)]


def _secret(annotation: Any) -> bool:
    return "SecretStr" in str(annotation) or annotation is SecretStr


def check_grid(grid: Mapping[str, Sequence[Any]]) -> None:
    """The grid's shape: each parameter with values, none twice, not too many points."""
    if not grid:
        raise SweepRefused("a sweep needs at least one parameter with values, e.g. iodepth=1,4,16")
    for name, values in grid.items():
        texts = [value_text(value) for value in values]
        if not texts:
            raise SweepRefused(f"{name} has no values: give one or more, e.g. {name}=1,4", name)
        if any(not text for text in texts):
            raise SweepRefused(f"{name} has an empty value: give values separated by commas, e.g. {name}=1,4", name)
        odd = next((text for text in texts if any(char in UNNAMEABLE or char.isspace() for char in text)), None)
        if odd is not None:
            raise SweepRefused(f"{name} value {odd!r} cannot name a point (no spaces, / , = @ [ ] in a swept value)", name)
        repeated = sorted({text for text in texts if texts.count(text) > 1})
        if repeated:
            raise SweepRefused(f"{name} lists {', '.join(repeated)} twice", name)
        if len(texts) > MAX_VALUES:
            raise SweepRefused(f"{name} has {len(texts)} values; a sweep takes at most {MAX_VALUES} of one "
                               "parameter", name)
    count = 1
    for values in grid.values():
        count *= len(values)
    if count > MAX_POINTS:
        raise SweepRefused(f"the grid has {count:,} points; a sweep runs at most {MAX_POINTS} (each point is a "
                           "whole run): sweep fewer values, or in two sweeps")


def check_parameters(names: Sequence[str], workload: str, model: type[BaseModel],
                     others: Mapping[str, type[BaseModel]], parallelism: Sequence[str] = ()) -> None:
    """Each name an option `model` has and may sweep; else why not, with the option meant
    (did you mean), the workload whose option it is (`others`: every workload's options), or
    the workload's parallelism options (`streams` is no option: the s3 workload's is concurrency)."""
    allowed = sweepable(model)
    for name in names:
        if name in allowed:
            continue
        if name in model.model_fields and name not in NOT_OPTIONS:
            raise SweepRefused(f"{name} is a credential: it is not swept", name)
        close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.75)
        owners = [kind for kind, options in others.items() if kind != workload and name in options.model_fields]
        if close:
            hint = f"; did you mean {close[0]!r}?"
        elif owners:
            hint = f"; it is an option of {' and '.join(owners)} workloads"
        elif parallelism:
            hint = f"; its parallelism: {', '.join(parallelism)}"
        else:
            hint = ""
        raise SweepRefused(f"the {workload} workload has no option {name!r} to sweep{hint}", name)


def check_points(grid: Mapping[str, Sequence[Any]], build: Callable[[Point], Any],
                 phases: Callable[[Any], tuple[str, ...]]) -> list[tuple[Point, Any]]:
    """Every point built (`build`: the point's options, raising ValueError for a value the
    options refuse) and each running the same phases; a refusal names the point or the value."""
    built: list[tuple[Point, Any]] = []
    for point in points(grid):
        try:
            built.append((point, build(point)))
        except ValueError as exc:
            if not _builds(Point((), ()), build):  # refused without any swept value: another option's
                raise SweepRefused(str(exc)) from None
            alone = [name for (name, value), given in zip(point.values, point.given)
                     if _refused_alone(name, value, given, build)]
            where = alone[0] if alone else ""
            what = f"{where}={point.as_dict()[where]}" if where else point.text
            raise SweepRefused(f"{what}: {exc}", where) from None
    first = phases(built[0][1])
    for point, options in built[1:]:
        mine = phases(options)
        if mine != first:
            raise SweepRefused(f"every point must run the same phases ({built[0][0].text} runs {', '.join(first)}; "
                               f"{point.text} runs {', '.join(mine)}): a sweep sets each phase against itself at "
                               "the other points; choose the phases with the workload's own option instead")
    return built


def _refused_alone(name: str, value: str, given: Any, build: Callable[[Point], Any]) -> bool:
    """Whether `name=value` is refused by itself (the options' defaults around it): the error is
    then the value's, said at its parameter, not the combination's."""
    return not _builds(Point(((name, value),), (given,)), build)


def _builds(point: Point, build: Callable[[Point], Any]) -> bool:
    try:
        build(point)
    except ValueError:
        return False
    return True


def check_entry(entry: BaseModel, definition: Any, others: Mapping[str, type[BaseModel]]) -> None:
    """A recipe entry's `sweep` (its `definition`: workloads/base.Definition): SweepRefused
    naming the parameter, as `backupbench sweep` refuses the same grid."""
    grid = entry.sweep or {}  # type: ignore[attr-defined]
    check_grid(grid)
    check_parameters(list(grid), definition.name, definition.options, others, definition.parallelism)
    check_points(grid, lambda point: point_entry(entry, point), definition.phases)


def point_entries(entry: BaseModel) -> list[tuple[Point | None, BaseModel]]:
    """What a recipe entry runs: each point of its sweep as an entry of its own (no sweep), or
    the entry itself once ((None, entry)) when it sweeps nothing."""
    grid = entry.sweep  # type: ignore[attr-defined]
    if not grid:
        return [(None, entry)]
    return [(point, point_entry(entry, point)) for point in points(grid)]


def point_entry(entry: BaseModel, point: Point) -> BaseModel:
    """The entry with the point's values, validated as the recipe's values are (typed, as TOML
    wrote them); ValueError with the one line the recipe reader would print."""
    data = {name: getattr(entry, name) for name in entry.model_fields_set if name != STORED_KEY}
    try:
        return type(entry).model_validate({**data, **point.given_values()}, context={TYPED: True})
    except ValidationError as exc:
        first = exc.errors()[0]
        # The point's own value needs no name (the refusal names it); another key's does.
        where = ".".join(str(part) for part in first.get("loc", ()) if isinstance(part, str))
        shown = f"{where}: " if where and where not in point.as_dict() else ""
        raise ValueError(f"{shown}{describe(first)}") from None


def parallel(names: Sequence[str], parallelism: Sequence[str]) -> tuple[str, ...]:
    """The swept parameters that add parallelism (a workload's `Definition.parallelism`)."""
    return tuple(name for name in names if name in parallelism)


@dataclass(frozen=True)
class SweepRecord:
    """What each run of a `backupbench sweep` stores in its settings, so a report finds the
    sweep's runs again and knows the grid (and which points never ran) from the runs alone."""

    sweep_id: str
    workload: str
    grid: dict[str, list[str]]
    parallel: tuple[str, ...]
    point: Point
    number: int   # this point's place in the order the points ran, from 1

    def stored(self) -> dict[str, Any]:
        return {STORED_KEY: {"id": self.sweep_id, "workload": self.workload, "grid": self.grid,
                             "parallel": list(self.parallel), "point": self.point.as_dict(),
                             "number": self.number, "points": len(points(self.grid))}}

    @property
    def label(self) -> str:
        """The run's label: the sweep and the point, `sweep-1a2b3c4d iodepth=4 jobs=2`."""
        return f"{label_prefix(self.sweep_id)}{self.point.text}"


def label_prefix(sweep_id: str) -> str:
    return f"sweep-{sweep_id} "
