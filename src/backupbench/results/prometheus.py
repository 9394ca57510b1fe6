"""Runs' figures in Prometheus' text exposition format (0.0.4), for a pushgateway.

Prometheus wants base units in metric names (seconds, bytes, ratios), so here, unlike the
run document, values are converted: ns and ms to seconds, MiB to bytes, percent to a 0-1
ratio. Every figure is a gauge named backupbench_<figure>_<unit suffix>, labelled with the
run (run_id, label, kind), the phase and, for per-device figures, the device. No
timestamps: a pushgateway refuses pushed samples that carry one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable

from backupbench import units
from backupbench.results.csvout import figure_rows
from backupbench.results.model import RunRecord

METRIC_PREFIX = "backupbench_"


@dataclass(frozen=True)
class Conversion:
    suffix: str                     # the base unit's name, appended to the metric name
    factor: float                   # stored value x factor = value in the base unit
    drops: frozenset[str] = frozenset()  # name tokens that named the stored unit


def _conversion(suffix: str, factor: float, *drops: str) -> Conversion:
    return Conversion(suffix, factor, frozenset(drops))


CONVERSIONS = {
    "B": _conversion("bytes", 1),
    "KiB": _conversion("bytes", units.KiB, "kib"),
    "MiB": _conversion("bytes", units.MiB, "mib"),
    "B/s": _conversion("bytes_per_second", 1),
    "MiB/s": _conversion("bytes_per_second", units.MiB, "s"),
    "ns": _conversion("seconds", 1e-9, "ns"),
    "ms": _conversion("seconds", 1e-3, "ms"),
    "s": _conversion("seconds", 1, "s"),
    "%": _conversion("ratio", 0.01, "pct", "percent"),
}
# Any other count per second (IO/s, files/s, merges/s): the name says what is counted.
PER_SECOND = _conversion("per_second", 1, "per", "s")
# Counts and plain numbers: the figure's name already says what is counted.
UNSUFFIXED_UNITS = frozenset({"1", "files", "objects", "requests", "hosts", "load", "x"})


def _tokens(text: str) -> list[str]:
    return [token for token in re.split(r"[^a-z0-9]+", text.lower()) if token]


def metric_for(figure: str, unit: str) -> tuple[str, float]:
    """(metric name, factor to multiply the stored value by) for a figure (device split out)."""
    conversion = CONVERSIONS.get(unit) or (PER_SECOND if unit.endswith("/s") else None)
    if conversion is None:
        suffix = [] if unit in UNSUFFIXED_UNITS else _tokens(unit.replace("/", " per "))
        conversion = Conversion("_".join(suffix), 1)
    tokens = [token for token in _tokens(figure) if token not in conversion.drops]
    suffix = conversion.suffix.split("_") if conversion.suffix else []
    if suffix and tokens[-len(suffix):] != suffix:
        tokens += suffix
    return METRIC_PREFIX + "_".join(tokens), conversion.factor


def _label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _help_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


@dataclass
class _Family:
    help: str
    samples: list[str]
    seen: set[tuple[tuple[str, str], ...]]


def exposition(runs: Iterable[RunRecord]) -> str:
    """The text a pushgateway takes (`curl --data-binary @- .../metrics/job/backupbench`)."""
    families: dict[str, _Family] = {}
    left_out: list[str] = []
    for row in figure_rows(runs):
        figure, device, unit = row["figure"], row["device"], row["unit"]
        metric, factor = metric_for(figure, unit)
        labels = (("run_id", row["run_id"]), ("label", row["label"]), ("kind", row["run_kind"]),
                  ("phase", row["phase"]))
        labels += (("device", device),) if device else ()
        family = families.setdefault(metric, _Family(f"{figure} (stored in {unit})", [], set()))
        if labels in family.seen:  # two stored names that read the same once converted
            shown = f"{figure}[{device}]" if device else figure
            left_out.append(f"# {shown} of {row['run_id']} {row['phase']} left out: it is {metric} again")
            continue
        family.seen.add(labels)
        text = ",".join(f'{key}="{_label_value(text)}"' for key, text in labels)
        family.samples.append(f"{metric}{{{text}}} {_number(row['value'] * factor)}")
    lines = []
    for metric, family in families.items():
        lines += [f"# HELP {metric} {_help_text(family.help)}", f"# TYPE {metric} gauge", *family.samples]
    return "\n".join(lines + left_out) + "\n" if lines else ""
