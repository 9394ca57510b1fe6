"""In what order a recipe's layouts are measured when its workloads are repeated (pure).

Drift over a run (a warming disk, a filling cache, a neighbour's load) must fall on every
layout alike, so when it costs no re-provisioning the layouts are built together and measured
in rounds: round r runs sample r of every layout, in turn, the order reversed each round
(a, b; b, a; a, b ...), so neither side always goes first. That costs nothing only when no
two of them use one device (a `directory` layout uses none). A layout with a `fault` is left
out: its states (healthy, degraded, rebuilding, rebuilt) follow one array's life in order,
and its member baseline reads and writes its disks alone; it is built, measured and torn down
on its own after the rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence


class Scheduled(Protocol):
    """What the schedule reads of a layout (layouts/actions.LayoutPlan has it)."""

    name: str
    devices: tuple[str, ...]
    fault: object | None


@dataclass(frozen=True)
class Schedule:
    alternated: tuple[str, ...]  # built together, measured in rounds, torn down together
    one_by_one: tuple[str, ...]  # built, measured (every sample) and torn down one after another
    rounds: int                  # how many rounds the alternated layouts run (the most repeats)
    note: str | None             # what a reader comparing the layouts must know (None: nothing)


# The note's verbs: told before the run (`plan`) or after it (the run's note).
_PLANNED = {"built": "will be built", "was built": "will be built", "ran": "will run"}
_DONE = {"built": "were built", "was built": "was built", "ran": "ran"}


def schedule(layouts: Sequence[Scheduled], repeats: Sequence[int], planned: bool = False) -> Schedule:
    """How a recipe's `layouts` (in recipe order) are measured, given each workload's `repeat`;
    `planned`: the note says what will happen (for `plan`), not what did."""
    verbs = _PLANNED if planned else _DONE
    rounds = max(repeats, default=1)
    names = tuple(layout.name for layout in layouts)
    if len(layouts) < 2 or rounds < 2:
        return Schedule((), names, 1, None)
    plain = [layout for layout in layouts if layout.fault is None]
    faulted = tuple(layout.name for layout in layouts if layout.fault is not None)
    shared = shared_devices(plain)
    if shared or len(plain) < 2:
        return Schedule((), names, 1, back_to_back_note(rounds, shared, faulted, verbs))
    alternated = tuple(layout.name for layout in plain)
    return Schedule(alternated, faulted, rounds, alternated_note(alternated, rounds, faulted, verbs))


def shared_devices(layouts: Sequence[Scheduled]) -> list[tuple[str, str, str]]:
    """(device, first layout, second layout) for each device two layouts both use."""
    owner: dict[str, str] = {}
    shared = []
    for layout in layouts:
        for device in layout.devices:
            if device in owner and owner[device] != layout.name:
                shared.append((device, owner[device], layout.name))
            owner.setdefault(device, layout.name)
    return shared


def round_order(names: Sequence[str], round_number: int) -> tuple[str, ...]:
    """The layouts' order in round `round_number` (from 1): as written, reversed every other round."""
    return tuple(names) if round_number % 2 else tuple(reversed(names))


def alternated_note(names: Sequence[str], rounds: int, faulted: Sequence[str], verbs: dict[str, str] = _DONE) -> str:
    first, second = ", ".join(round_order(names, 1)), ", ".join(round_order(names, 2))
    note = (f"repeats: layouts {', '.join(names)} use no device in common, so they {verbs['built']} together and "
            f"measured in {rounds} rounds, each round one sample of every layout in turn (round 1: {first}; "
            f"round 2: {second}; and so on), so drift over the run falls on them alike")
    if faulted:
        note += (f"; {', '.join(faulted)} (with a fault: its states run in order) {verbs['was built']}, measured and torn down "
                 "on its own after them, its samples back to back")
    return note


def back_to_back_note(rounds: int, shared: Sequence[tuple[str, str, str]], faulted: Sequence[str],
                      verbs: dict[str, str] = _DONE) -> str:
    """Samples not interleaved across layouts, and why: a device two layouts use (alternating
    them would mean building each again per sample), or a fault's states run in order."""
    if shared:
        device, first, second = shared[0]
        why = (f"{first} and {second} both use {device}, so each layout is built, measured and torn down before "
               "the next; alternating them would mean building each again per sample")
    else:
        why = (f"{', '.join(faulted)} has a fault, whose states run in order on one array, and no two other layouts "
               "are left to alternate")
    return (f"repeats: each layout's {rounds} samples {verbs['ran']} back to back, layout after layout ({why}): drift over "
            "the run falls on the layouts unequally")
