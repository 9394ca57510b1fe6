"""Expectations: `--expect 'restore-random>=300MiB/s' --expect 'active-full.p99<=50ms'`, a
run's figures held against promised ones (a CI gate, a vendor's datasheet).

Syntax: PHASE[.FIGURE]OP VALUE[UNIT], OP one of >= <= > <.
- PHASE: an operation of the run (`restore-random`), or the end of one (`restore-random`
  also matches every layout's `raid6/restore-random`; each is checked).
- FIGURE: a stored figure name (`read_p99_lat`, `members_util`, `mon.cpu_iowait.avg`) or an
  alias (ALIASES); a figure measured per device names it in brackets, as the result document
  splits it (`mon.w_await.p95[vda]`, `snapshot.data_pct_max[snap1]`). Without one, the phase's
  speed figure the unit names: a byte rate is its effective speed, files/s its files per
  second, objects/s its objects, IO/s its IOPS.
- UNIT: rates MiB/s GiB/s MB/s KiB/s B/s (backupbench.units: MiB binary, MB decimal); times
  ms us ns s m h; %; sizes MiB GiB...; IO/s, files/s, objects/s; none for plain counts.

Syntax, units, the figure a unit picks and the kind of a figure known by its name are checked
before a run (check_before_run); the rest once the run is measured (evaluate). A run that did
not complete (void, interrupted, failed) misses every expectation: its figures promise nothing.
"""

from __future__ import annotations

import difflib
import operator
import re
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, Callable, Sequence

from backupbench import units
from backupbench.analysis import noise
from backupbench.analysis.compare import p99_label, phase_p99
from backupbench.errors import ExpectationMissed, InputError
from backupbench.recipe import naming
from backupbench.results.document import DIMENSIONLESS
from backupbench.results.model import (COMPLETE, INTERRUPTED, RUNNING, VOID, OperationRecord, RunRecord, known_unit,
                                       split_device, stored_name)

OPERATORS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le,
                                                         ">": operator.gt, "<": operator.lt}
_EXPECTATION = re.compile(r"^\s*(?P<phase>[^.<>=\s]+)(?:\.(?P<figure>[^<>=\s\[\]]+)(?:\[(?P<device>[^\[\]\s]+)\])?)?"
                          r"\s*(?P<op>>=|<=|>|<)\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>\S*)\s*$")
# Aliases -> stored figure; P99, P50 and IOPS are worked out per phase.
P99, P50, IOPS = "p99", "p50", "iops"
ALIASES = {
    "bw": "effective_bw", "speed": "effective_bw", "effective": "effective_bw",
    "read": "read_bw", "write": "write_bw", "files/s": "files_per_s", "objects/s": "objects_per_s",
    "util": "members_util", "%util": "members_util", "await": "members_w_await",
    P99: P99, P50: P50, IOPS: IOPS,
}
P50_FIGURES = ("file_p50_lat", "lat_p50_ns")
# Figures stored without a unit of their own (results/model.py FIGURE_UNITS has the rest).
KNOWN_UNITS = {"files_per_s": "files/s", "objects_per_s": "objects/s", "clone_s": "s", "clone_s_per_tib": "s",
               "fs_used_delta": "B", "unique_bytes": "B", IOPS: "IO/s"}
# A figure's unit -> (what kind of quantity, how many of the unit make one of the kind's base).
UNIT_KINDS = {"B/s": ("rate", 1.0), "MiB/s": ("rate", 1 / units.MiB), "MiB": ("size", 1 / units.MiB),
              "ns": ("time", 1e9), "us": ("time", 1e6), "ms": ("time", 1e3),
              "s": ("time", 1.0), "%": ("percent", 1.0), "B": ("size", 1.0), "IO/s": ("IO/s", 1.0),
              "files/s": ("files/s", 1.0), "objects/s": ("objects/s", 1.0), "": ("number", 1.0)}
COUNT_UNITS = {"io/s": "IO/s", "iops": "IO/s", "files/s": "files/s", "objects/s": "objects/s"}
SUB_MILLISECOND = {"us": 1e-6, "µs": 1e-6, "ns": 1e-9}
# Without a FIGURE: the speed figure a unit of this kind names.
SPEED_BY_KIND = {"rate": "effective_bw", "files/s": "files_per_s", "objects/s": "objects_per_s", "IO/s": IOPS}
# A bare number is clear only where the figure is a count; elsewhere it would be read as bytes or ns.
BARE_NUMBER_KINDS = ("number", "IO/s", "files/s", "objects/s")
# The unit a Quantity's value is in; a threshold is given in it when the figure's own unit is not known.
BASE_UNITS = {"rate": "B/s", "time": "s", "percent": "%", "size": "B", "IO/s": "IO/s", "files/s": "files/s",
              "objects/s": "objects/s", "number": ""}


@dataclass(frozen=True)
class Quantity:
    kind: str      # rate (B/s), time (s), percent, size (B), IO/s, files/s, objects/s, number
    value: float   # in the kind's base unit


@dataclass(frozen=True)
class Expectation:
    text: str
    phase: str
    figure: str | None
    op: str
    quantity: Quantity
    bare: bool  # the value had no unit
    device: str | None = None  # FIGURE[DEVICE]: the figure as measured on that device
    bound: noise.Bound = "median"  # ...@low / @high: held against that end of the 95% interval


@dataclass(frozen=True)
class GateResult:
    expectation: Expectation
    operation: str
    figure: str          # the stored figure checked (or asked for, when the phase had none): 'mon.vda.w_await.p95'
    measured: float | None
    measured_text: str   # '205.1 MiB/s', '12.40 ms (write p99)', 'no figures: the phase failed'
    met: bool
    threshold: float     # the expectation's value in `unit`
    unit: str            # of `measured` and `threshold`: the figure's stored unit ('' for a plain count)


def _quantity(number: str, unit: str, text: str) -> Quantity:
    lowered = unit.lower()
    try:
        if not unit:
            return Quantity("number", float(number))
        if unit == "%":
            return Quantity("percent", float(number))
        if lowered in COUNT_UNITS:
            return Quantity(COUNT_UNITS[lowered], float(number))
        if lowered in SUB_MILLISECOND:
            return Quantity("time", float(number) * SUB_MILLISECOND[lowered])
        if lowered in ("ms", "s", "m", "min", "h"):
            return Quantity("time", units.parse_duration(number + lowered))
        # The unit's size from units.py, times the number: a threshold may be 0.4GiB/s, which is
        # no whole number of bytes.
        if lowered.endswith("/s"):
            return Quantity("rate", float(number) * units.parse_rate("1" + unit))
        return Quantity("size", float(number) * units.parse_size("1" + unit))
    except ValueError as exc:  # the number matched the pattern: the unit is what is wrong
        raise InputError(f"--expect {text!r}: unknown unit {unit!r}",
                         "units: MiB/s GiB/s MB/s, ms us s, %, IO/s files/s objects/s, MiB GiB") from exc


def parse(text: str) -> Expectation:
    """'restore-random>=300MiB/s' -> Expectation; InputError (one line) when it is not one."""
    core, bound = noise.split_bound(text)
    match = _EXPECTATION.match(core)
    if not match:
        raise InputError(f"--expect {text!r} is not PHASE[.FIGURE]OP VALUE[UNIT]",
                         "e.g. --expect 'restore-random>=300MiB/s' --expect 'active-full.p99<=50ms'")
    quantity = _quantity(match["number"], match["unit"], text)
    return Expectation(text.strip(), match["phase"], match["figure"], match["op"], quantity, not match["unit"],
                       match["device"], bound)


def parse_all(texts: Sequence[str]) -> list[Expectation]:
    return [parse(text) for text in texts]


def _suggest(wanted: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(wanted, known, n=3, cutoff=0.5)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _matching(phase: str, names: Sequence[str]) -> list[str]:
    """The names `phase` is, or is the end of after a '/'. A name may be a glob pattern: before
    a run, a state repeated as often as the run needs is `rebuilding-[0-9]*`."""
    exact = [name for name in names if fnmatchcase(phase, name)]
    return exact or [name for name in names if any(fnmatchcase(phase, tail) for tail in naming.tails(name))]


def check_phases(expectations: Sequence[Expectation], phases: Sequence[str], owner: str) -> None:
    """Every expectation names one of `phases` (checked before a run measures anything)."""
    for expectation in expectations:
        if not _matching(expectation.phase, phases):
            known = list(dict.fromkeys([*phases, *(naming.phase_of(name) for name in phases)]))
            raise InputError(f"--expect {expectation.text!r}: {owner} has no phase {expectation.phase!r}"
                             f"{_suggest(expectation.phase, known)}; its phases: {', '.join(phases) or 'none'}")


def check_before_run(expectations: Sequence[Expectation], phases: Sequence[str], owner: str) -> None:
    """All that needs no figures: each phase is one `owner` will measure, each figure is named or
    picked by the unit, and a figure whose unit its name tells takes a value of that kind."""
    check_phases(expectations, phases, owner)
    check_figures(expectations)


def check_figures(expectations: Sequence[Expectation]) -> None:
    for expectation in expectations:
        name = _figure_name(expectation)
        unit = _unit_by_name(name)
        if unit is not None:
            _require_kind(expectation, unit, _as_written(expectation, name))


def _as_written(expectation: Expectation, name: str) -> str:
    """How a message names the figure: as the user wrote it, an alias with what it stands for."""
    if expectation.figure is None:
        return name
    written = expectation.figure + (f"[{expectation.device}]" if expectation.device else "")
    lowered = expectation.figure.lower()
    return f"{written} ({name})" if lowered in ALIASES and name != lowered else written


def figure_unit(op: OperationRecord, name: str) -> str:
    return KNOWN_UNITS.get(name) or op.unit(name) or ("ns" if name.endswith("_ns") else "")


def _unit_by_name(name: str) -> str | None:
    """A figure's unit as its name alone tells it; None when only a measured phase can."""
    if name in (P99, P50):
        return "ns"
    return KNOWN_UNITS.get(name) or known_unit(name) or ("ns" if name.endswith("_ns") else None)


def _require_kind(expectation: Expectation, unit: str, what: str) -> None:
    """InputError unless the expectation's value is of the kind of a figure in `unit`."""
    kind = UNIT_KINDS.get(unit, ("number", 1.0))[0]
    wanted = expectation.quantity
    if wanted.kind != kind and not (expectation.bare and kind in BARE_NUMBER_KINDS):
        raise InputError(f"--expect {expectation.text!r}: {what} is a {kind}"
                         f"{f' ({unit})' if unit else ''}, the value given is a {wanted.kind}",
                         "give the value in the figure's kind of unit" + (", e.g. 300MiB/s" if kind == "rate" else ""))


def _resolve(op: OperationRecord, name: str, figures: dict[str, float] | None = None) -> tuple[str, float | None, str]:
    """(stored figure, value or None, what to call it) for a figure name or alias on one phase
    (`figures`: one of its samples instead of its medians)."""
    figures = op.figures if figures is None else figures
    if name == P99:
        found = phase_p99(figures)
        return (found[0], found[1], p99_label(found[0])) if found else ("", None, "")
    if name == P50:
        stored = next((n for n in P50_FIGURES if n in figures), "")
        return stored, figures.get(stored), ""
    if name == IOPS:
        parts = [figures[n] for n in ("read_iops", "write_iops") if n in figures]
        return IOPS, (sum(parts) if parts else None), ""
    return name, figures.get(name), ""


def _figure_name(expectation: Expectation) -> str:
    """The stored figure (or P99, P50, IOPS) the expectation is about; InputError when it
    names none and its unit picks none, or names a device for a figure not measured per device."""
    if expectation.figure is not None:
        name = ALIASES.get(expectation.figure.lower(), expectation.figure)
        if expectation.device is None:
            return name
        stored = stored_name(name, expectation.device)
        if split_device(stored) != (name, expectation.device):
            raise InputError(f"--expect {expectation.text!r}: {expectation.figure} is not measured per device",
                             "name a device only for mon.<disk figure>.<stat>, snapshot.* and thinpool.* figures, "
                             "e.g. active-full.mon.w_await.p95[vda]<=20ms")
        return stored
    kind = expectation.quantity.kind
    if kind == "number":
        raise InputError(f"--expect {expectation.text!r}: give a unit or name the figure",
                         f"e.g. {expectation.phase}>=300MiB/s for its speed, {expectation.phase}.iops>=1000")
    if kind not in SPEED_BY_KIND:
        raise InputError(f"--expect {expectation.text!r}: name the figure for a {kind}",
                         f"e.g. {expectation.phase}.p99<=50ms or {expectation.phase}.util<=80%")
    return SPEED_BY_KIND[kind]


def _check_figure_exists(expectation: Expectation, name: str, ops: Sequence[OperationRecord]) -> None:
    """Some completed phase the expectation names has the figure (a layout without it is then a
    miss, not an error); else the name is a typo or belongs to another workload's phases."""
    if not ops or any(_resolve(op, name)[1] is not None for op in ops):
        return
    aliases = sorted(alias for alias, target in ALIASES.items()
                     if any(_resolve(op, target)[1] is not None for op in ops))
    stored = sorted({figure for op in ops for figure in op.figures})
    asked = expectation.figure or name
    # The monitor's own (mon.*) figures are many: named in the suggestions, not in the list.
    listed = [*aliases, *(figure for figure in stored if not figure.startswith("mon."))]
    raise InputError(f"--expect {expectation.text!r}: {expectation.phase} has no figure {asked!r}"
                     f"{_suggest(asked, [*aliases, *stored])}; its figures: {', '.join(listed)}")


def _shown(kind: str, base_value: float, unit: str) -> str:
    """A measured value in the words of its kind: '205.1 MiB/s', '12.40 ms', '38.0%'."""
    if kind == "rate":
        return units.format_rate(base_value)
    if kind == "time":
        return f"{base_value * 1e3:,.2f} ms" if base_value < 1 else f"{base_value:,.2f} s"
    if kind == "percent":
        return f"{base_value:,.1f}%"
    if kind == "size":
        return units.format_size(base_value)
    return f"{base_value:,.6g}" + (f" {unit}" if unit else "")


def _unmeasured(expectation: Expectation, operation: str, figure: str, why: str, unit: str | None) -> GateResult:
    """A miss with nothing measured: the threshold in the figure's unit when it is known and of
    the value's kind, else in the base unit of the value's kind."""
    if unit is not None:
        kind, per_base = UNIT_KINDS.get(unit, ("number", 1.0))
        if kind == expectation.quantity.kind or (expectation.bare and kind in BARE_NUMBER_KINDS):
            return GateResult(expectation, operation, figure, None, why, False, expectation.quantity.value * per_base,
                              unit)
    return GateResult(expectation, operation, figure, None, why, False, expectation.quantity.value,
                      BASE_UNITS[expectation.quantity.kind])


def _check_op(expectation: Expectation, name: str, op: OperationRecord) -> GateResult:
    if op.status != COMPLETE:
        return _unmeasured(expectation, op.name, name, f"no figures: the phase {op.status}", _unit_by_name(name))
    stored, value, called = _resolve(op, name)
    if value is None:
        return _unmeasured(expectation, op.name, stored or name, "not measured in this phase",
                           figure_unit(op, stored) if stored else _unit_by_name(name))
    unit = figure_unit(op, stored)
    _require_kind(expectation, unit, f"{stored} of {op.name}")
    kind, per_base = UNIT_KINDS.get(unit, ("number", 1.0))
    threshold = expectation.quantity.value * per_base
    # A phase measured several times: the median is held (or the interval's end, with @low/@high).
    samples = [v for v in (_resolve(op, name, sample)[1] for sample in op.samples) if v is not None] or [value]
    judged = noise.judge_bound(samples, expectation.op, threshold, expectation.bound,
                               shown=lambda number: _shown(kind, number / per_base, unit))
    plain = len(samples) == 1 and expectation.bound == "median"
    measured = (_shown(kind, value / per_base, unit) if plain else judged.text) + (f" ({called})" if called else "")
    return GateResult(expectation, op.name, stored, value, measured, judged.met, threshold, unit)


def why_not_complete(run: RunRecord) -> str | None:
    """Why no expectation can be met by the run ('run is void: ...'), None for a complete run."""
    if run.status == COMPLETE:
        return None
    if run.status == VOID:
        # The void reason is among the notes (runner/pipeline.py RunSession.void); every reason says "void".
        reason = run.error or "; ".join(note for note in run.notes if " void" in note)
        return f"run is void: {reason}" if reason else "run is void"
    if run.status == INTERRUPTED:
        return "run was interrupted"
    if run.status == RUNNING:
        return "run has not finished"
    return f"run {run.status}" + (f": {run.error}" if run.error else "")


def evaluate(expectations: Sequence[Expectation], run: RunRecord, owner: str = "") -> list[GateResult]:
    """Each expectation against each phase it names (a recipe run: every layout's); InputError
    for a phase or figure the run does not have, naming the closest ones. A run that did not
    complete misses every expectation, saying why; one cut short may lack the phase named."""
    names = [op.name for op in run.operations]
    not_complete = why_not_complete(run)
    if not_complete is None or run.status == VOID:  # every phase ran: a name it lacks is a typo
        check_phases(expectations, names, owner or f"run {run.run_id}")
    check_figures(expectations)
    results = []
    for expectation in expectations:
        ops = [op for op in run.operations if op.name in _matching(expectation.phase, names)]
        figure = _figure_name(expectation)
        if not ops:
            results.append(_unmeasured(expectation, expectation.phase, figure, str(not_complete),
                                       _unit_by_name(figure)))
            continue
        _check_figure_exists(expectation, figure, [op for op in ops if op.status == COMPLETE])
        results += [_check_op(expectation, figure, op) for op in ops]
    if not_complete is None:
        return results
    return [replace(result, met=False, measured_text=not_complete + (
        f" (measured {result.measured_text})" if result.measured is not None else "")) for result in results]


def missed(results: Sequence[GateResult]) -> list[GateResult]:
    return [result for result in results if not result.met]


def raise_if_missed(results: Sequence[GateResult]) -> None:
    """ExpectationMissed (exit 5) when any expectation was missed; called after all output."""
    failed = missed(results)
    if failed:
        shown = "; ".join(r.expectation.text + ("" if r.operation == r.expectation.phase else f" on {r.operation}")
                          + f": {r.measured_text}" for r in failed)
        raise ExpectationMissed(f"{len(failed)} of {len(results)} expectation checks missed: {shown}")


def _result_dict(result: GateResult) -> dict[str, Any]:
    # The device is a label of the figure, as in the document's phases (results/document.py).
    figure, device = split_device(result.figure)
    return {"expectation": result.expectation.text, "operation": result.operation, "figure": figure,
            **({"device": device} if device is not None else {}), "operator": result.expectation.op,
            "threshold": result.threshold, "measured": result.measured, "unit": result.unit or DIMENSIONLESS,
            "measured_text": result.measured_text, "met": result.met}


def expectations_dict(results: Sequence[GateResult]) -> dict[str, list[dict[str, Any]]]:
    """The `expectations` key of a command's --json output ({} when none were given)."""
    return {"expectations": [_result_dict(result) for result in results]} if results else {}
