"""The verdict of a repository plan: the candidates ranked, the recommendation in one sentence,
and what would make each rejected candidate pass.

Ranking: the candidates that meet every requirement first, the one with the fewest hours at
reduced redundancy after a disk failure (the repository's exposure) ahead, then the widest
margin of its binding requirement; then those that miss, the nearest miss first.

What would change it, for a rejected candidate, each found by trying the plan again:
- more disks of the same size: the fewest that pass (up to 4 times as many, or 64 more if that is more;
  past 16 more, found by doubling and halving the step: `_fewest_disks`);
- bigger disks, as many: the smallest size of DISK_SIZES_TB (as sold) above the current that passes;
- one policy change: block clone on; the window, RTO or rebuild limit it needs; fewer dailies,
  weeklies, monthlies or yearlies (the most that still pass);
- when no single change does: block clone or the window it needs, together with more or bigger disks.
Measured speeds stay as measured when the disks change; model speeds follow the model.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Callable, Iterator

from backupbench.errors import InputError
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.plan_model import CandidatePlan, Change, Requirement, Verdict
from backupbench.sizing.policy import BackupPolicy

# Hard-disk capacities as sold, decimal TB.
DISK_SIZES_TB = (4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32)
TB = 10**12
MORE_DISKS_AT_LEAST = 64
# More disks are tried one by one this far, then by doubling steps (_fewest_disks).
LINEAR_STEPS = 16
POLICY_CHANGES_SHOWN = 2

Evaluate = Callable[[BackupPolicy, LayoutSpec], CandidatePlan]


def ranked(plans: list[CandidatePlan]) -> list[CandidatePlan]:
    def key(plan: CandidatePlan) -> tuple:
        margin = _binding(plan).relative_margin
        return (0, plan.rebuild.seconds, -margin) if plan.passed else (1, -margin, 0.0)
    return sorted(plans, key=key)


def _binding(plan: CandidatePlan) -> Requirement:
    found = plan.requirement(plan.binding)
    assert found is not None
    return found


def size_text(n_bytes: float) -> str:
    """Decimal, as disks are sold: '352 TB', '1.25 TB', '800 GB'."""
    for unit, factor in (("PB", 10**15), ("TB", TB), ("GB", 10**9), ("MB", 10**6)):
        if abs(n_bytes) >= factor:
            return f"{n_bytes / factor:,.3g} {unit}" if abs(n_bytes) < 100 * factor else \
                f"{n_bytes / factor:,.0f} {unit}"
    return f"{n_bytes:,.0f} B"


def hours_text(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:,.1f} h" if hours >= 0.1 else f"{seconds / 60:,.1f} min"


def amount_text(requirement: Requirement, value: float) -> str:
    return size_text(value) if requirement.unit == "B" else hours_text(value)


def _describe(plan: CandidatePlan) -> str:
    return f"{plan.built} of {plan.disks} x {size_text(plan.disk_bytes)}"


def _recommendation(best: CandidatePlan, runner_up: CandidatePlan | None, policy: BackupPolicy) -> str:
    years = f"{policy.horizon} year{'s' if policy.horizon > 1 else ''}"
    parts = [f"holds {policy.retention_text()} for {years} at {best.fill_percent[-1]:.0f}% full",
             f"the longest backup day in {hours_text(best.worst_day_seconds)} of the {hours_text(policy.window)} window"]
    if best.restore is not None and policy.rto is not None:
        parts.append(f"a {size_text(best.restore.restore_size)} restore in at most "
                     f"{hours_text(best.restore.worst_seconds)} of the {hours_text(policy.rto)} RTO")
    rebuild = f"rebuild {hours_text(best.rebuild.seconds)}"
    if runner_up is not None:
        rebuild += f" against {runner_up.built}'s {hours_text(runner_up.rebuild.seconds)}"
    binding = _binding(best)
    return (f"{_describe(best)}: " + ", ".join(parts) + f", {rebuild}; binding: {binding.name}, "
            f"{amount_text(binding, binding.margin)} ({binding.relative_margin:.0%}) to spare.")


def sentence(plans: list[CandidatePlan], policy: BackupPolicy) -> str:
    order = ranked(plans)
    best = order[0]
    if best.passed:
        return _recommendation(best, order[1] if len(order) > 1 else None, policy)
    binding = _binding(best)
    return (f"No candidate meets the policy: the nearest, {_describe(best)}, misses {binding.name} by "
            f"{amount_text(binding, -binding.margin)} ({-binding.relative_margin:.0%} over its limit).")


def uncertainty(plans: list[CandidatePlan]) -> list[str]:
    lines = []
    for plan in plans:
        model = [name for name, speed in plan.speeds.items() if speed.source == "model"]
        measured = {name: speed for name, speed in plan.speeds.items() if speed.source == "measured"}
        once = [name for name, speed in measured.items() if speed.samples == 1]
        few = [f"{name} ({speed.samples} samples)" for name, speed in measured.items() if 1 < speed.samples < 3]
        if plan.rebuild.rate.source == "model":
            model.append("rebuild")
        if model:
            lines.append(f"{plan.layout}: {', '.join(model)} from the per-disk model, not measured: uncertain")
        if once:
            lines.append(f"{plan.layout}: {', '.join(once)} measured once (one sample), no spread to judge the "
                         "margins by: give --from-run several runs of the layout (or an aging run measured with "
                         "--repeat 3)")
        if few:
            lines.append(f"{plan.layout}: {', '.join(few)}: a wide interval, the margins use its low bound")
        scaled: dict[str, list[str]] = {}
        for name, speed in measured.items():
            if speed.scaled:
                scaled.setdefault(speed.label, []).append(name)
        lines += [f"{plan.layout}: {', '.join(names)} {label} through the per-disk model: the margins use its "
                  "widened low bound" for label, names in scaled.items()]
    return lines


def with_disks(spec: LayoutSpec, count: int, size: int | None = None) -> LayoutSpec:
    """`spec` on `count` disks of `size` (a dRAID spec's 'c' follows the count)."""
    disk = min(spec.disk_sizes) if size is None else size
    return dataclasses.replace(spec, layout=re.sub(r":\d+c", f":{count}c", spec.layout), disk_sizes=(disk,) * count)


def _more_disks(spec: LayoutSpec, count: int) -> tuple[str, str, LayoutSpec]:
    return "disks", f"{count} disks of {size_text(min(spec.disk_sizes))} ({count - spec.disks} more)", \
        with_disks(spec, count)


def _fewest_disks(spec: LayoutSpec, passes: Callable[[LayoutSpec], CandidatePlan | None]
                  ) -> tuple[tuple[str, str, LayoutSpec], CandidatePlan] | None:
    """The fewest more disks that pass, up to the top the module doc names. Each count costs a
    plan over every disk, so a scan of every count is quadratic (100,000 disks ran for minutes):
    the first LINEAR_STEPS counts are tried in turn (a shape a layout cannot take, such as a
    dRAID group, can fail between passing counts there), then the step doubles to the first pass
    and the gap before it is halved down, which finds the fewest as long as more disks of one
    size never plan worse (capacity and the model's speeds grow with the count)."""
    top = max(spec.disks * 4, spec.disks + MORE_DISKS_AT_LEAST)

    def tried(count: int) -> tuple[tuple[str, str, LayoutSpec], CandidatePlan] | None:
        change = _more_disks(spec, count)
        result = passes(change[2])
        return (change, result) if result is not None else None

    first_linear = min(top, spec.disks + LINEAR_STEPS)
    for count in range(spec.disks + 1, first_linear + 1):
        if (found := tried(count)) is not None:
            return found
    failed, step = first_linear, 1
    while failed < top:
        count = min(top, failed + step)
        if (found := tried(count)) is not None:
            while count - failed > 1:   # found at `count`, not at `failed`: halve the gap
                middle = (failed + count) // 2
                if (closer := tried(middle)) is not None:
                    count, found = middle, closer
                else:
                    failed = middle
            return found
        failed, step = count, step * 2
    return None


def _bigger_disks(spec: LayoutSpec) -> Iterator[tuple[str, str, LayoutSpec]]:
    """(kind, text, spec): bigger disks, as many, smallest first."""
    for tb in DISK_SIZES_TB:
        if tb * TB > min(spec.disk_sizes):
            yield "disk size", f"{spec.disks} disks of {tb} TB", with_disks(spec, spec.disks, tb * TB)


def _disk_change(spec: LayoutSpec, passes: Callable[[LayoutSpec], CandidatePlan | None]
                 ) -> Iterator[tuple[tuple[str, str, LayoutSpec], CandidatePlan]]:
    """The fewest more disks that pass, then the smallest bigger disks that pass (each at most once)."""
    if (fewest := _fewest_disks(spec, passes)) is not None:
        yield fewest
    for change in _bigger_disks(spec):
        if (result := passes(change[2])) is not None:
            yield change, result
            return


def _ceil_tenth_hour(seconds: float) -> float:
    return math.ceil(seconds / 360) * 360.0


def _policy_changes(policy: BackupPolicy, plan: CandidatePlan) -> Iterator[tuple[str, str, BackupPolicy]]:
    """(family, text, policy): block clone, the limits the plan misses, then each retention tier
    from one fewer down (the first that passes keeps the most)."""
    if not policy.block_clone and policy.method != "forward-active":
        yield "block clone", "block clone on", policy.model_copy(update={"block_clone": True})
    for name, flag, label in (("window", "window", "window"), ("restore", "rto", "RTO"),
                              ("rebuild", "rebuild_limit", "rebuild limit")):
        check = plan.requirement(name)
        if check is not None and not check.met:
            needed = _ceil_tenth_hour(check.value)
            yield name, f"a {hours_text(needed)} {label}", policy.model_copy(update={flag: needed})
    for name, one, floor in (("dailies", "daily", 1), ("weeklies", "weekly", 0), ("monthlies", "monthly", 0),
                             ("yearlies", "yearly", 0)):
        for count in range(getattr(policy, name) - 1, floor - 1, -1):
            yield name, f"{count} {one if count == 1 else name} (not {getattr(policy, name)})", \
                policy.model_copy(update={name: count})


def _tried(evaluate: Evaluate, policy: BackupPolicy, spec: LayoutSpec) -> CandidatePlan | None:
    try:
        plan = evaluate(policy, spec)
    except InputError:
        return None  # a shape the layout cannot take (MinIO set sizes, dRAID groups)
    return plan if plan.passed else None


def _change(layout: str, kind: str, text: str, plan: CandidatePlan) -> Change:
    return Change(layout=layout, kind=kind, text=text, binding=plan.binding,  # type: ignore[arg-type]
                  relative_margin=_binding(plan).relative_margin)


def what_would_change(policy: BackupPolicy, spec: LayoutSpec, plan: CandidatePlan, evaluate: Evaluate) -> list[Change]:
    """The smallest changes that make the rejected `plan` pass (see the module doc)."""
    found: dict[str, Change] = {}
    for (kind, text, _), result in _disk_change(spec, lambda changed: _tried(evaluate, policy, changed)):
        found[kind] = _change(plan.layout, kind, text, result)
    families: set[str] = set()
    for family, text, changed_policy in _policy_changes(policy, plan):
        if family in families or len(families) == POLICY_CHANGES_SHOWN:
            continue
        if (result := _tried(evaluate, changed_policy, spec)) is not None:
            families.add(family)
            found[f"policy {family}"] = _change(plan.layout, "policy", text, result)
    return list(found.values()) or _combined(policy, spec, plan, evaluate)


def _relaxations(policy: BackupPolicy, plan: CandidatePlan) -> Iterator[tuple[str, BackupPolicy]]:
    """Policy changes to pair with disk changes: block clone, every missed time limit at what the
    plan needs, and both."""
    limits = [(text, changed) for family, text, changed in _policy_changes(policy, plan)
              if family in ("window", "restore", "rebuild")]
    clone = next(((text, changed) for family, text, changed in _policy_changes(policy, plan)
                  if family == "block clone"), None)
    if clone is not None:
        yield clone
    if limits:
        update = {flag: getattr(changed, flag) for _, changed in limits for flag in ("window", "rto", "rebuild_limit")
                  if getattr(changed, flag) != getattr(policy, flag)}
        text = " and ".join(text for text, _ in limits)
        yield text, policy.model_copy(update=update)
        if clone is not None:
            yield f"{clone[0]}, {text}", policy.model_copy(update={**update, "block_clone": True})


def _combined(policy: BackupPolicy, spec: LayoutSpec, plan: CandidatePlan, evaluate: Evaluate) -> list[Change]:
    """No single change passes: policy relaxations together with more or bigger disks."""
    for text, changed_policy in _relaxations(policy, plan):
        if (result := _tried(evaluate, changed_policy, spec)) is not None:
            return [_change(plan.layout, "policy", text, result)]
        def passes(changed: LayoutSpec, relaxed: BackupPolicy = changed_policy) -> CandidatePlan | None:
            return _tried(evaluate, relaxed, changed)
        for (kind, disk_text, _), result in _disk_change(spec, passes):
            return [_change(plan.layout, kind, f"{text} and {disk_text}", result)]
    return []


def verdict(policy: BackupPolicy, specs: dict[str, LayoutSpec], plans: list[CandidatePlan],
            evaluate_for: Callable[[str], Evaluate]) -> Verdict:
    """`evaluate_for(layout)` plans that candidate again under another policy or on other disks."""
    order = ranked(plans)
    changes = [change for plan in order if not plan.passed
               for change in what_would_change(policy, specs[plan.layout], plan, evaluate_for(plan.layout))]
    return Verdict(ranking=[plan.layout for plan in order], recommended=order[0].layout if order[0].passed else None,
                   sentence=sentence(plans, policy), changes=changes, uncertain=uncertainty(plans))

