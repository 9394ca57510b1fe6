"""Runs' figures in Prometheus' text exposition format (0.0.4), for a pushgateway.

Prometheus wants base units in metric names (seconds, bytes, ratios), so here, unlike the
run document, values are converted (results/base_units.py, as the CSV's base_value): ns and
ms to seconds, MiB to bytes, percent to a 0-1 ratio. Every figure is a gauge named
backupbench_<figure>_<unit suffix>, labelled with the run (run_id, label, kind), the phase,
for per-device figures the device and, for a mixed S3 phase's per-kind figures (put_lat_p99_ns),
the request kind as `op` (backupbench_lat_p99_seconds{op="put"}); the same metric without `op`
is over every request of the phase. No timestamps: a pushgateway refuses pushed samples that
carry one. The text is written by prometheus_client (generate_latest over a registry holding
only these figures), so its escaping and number formats are the library's, not this module's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from backupbench.results.base_units import base_unit
from backupbench.results.csvout import figure_rows
from backupbench.results.model import S3_REQUEST_KINDS, RunRecord, known_unit

METRIC_PREFIX = "backupbench_"


@dataclass(frozen=True)
class Conversion:
    suffix: str                     # the base unit's name, appended to the metric name
    factor: float                   # stored value x factor = value in the base unit
    drops: frozenset[str] = frozenset()  # name tokens that named the stored unit


def _conversion(suffix: str, factor: float, *drops: str) -> Conversion:
    return Conversion(suffix, factor, frozenset(drops))


# The metric name's suffix for each base unit, and the name tokens that named the stored unit.
SUFFIXES = {"B": "bytes", "B/s": "bytes_per_second", "s": "seconds", "ratio": "ratio"}
UNIT_TOKENS = {"KiB": ("kib",), "MiB": ("mib",), "MiB/s": ("s",), "ns": ("ns",), "ms": ("ms",), "s": ("s",),
               "%": ("pct", "percent")}
# Any other count per second (IO/s, files/s, merges/s): the name says what is counted.
PER_SECOND = _conversion("per_second", 1, "per", "s")
# Counts and plain numbers: the figure's name already says what is counted.
UNSUFFIXED_UNITS = frozenset({"1", "files", "objects", "requests", "hosts", "load", "x"})


def _tokens(text: str) -> list[str]:
    return [token for token in re.split(r"[^a-z0-9]+", text.lower()) if token]


def metric_for(figure: str, unit: str) -> tuple[str, float]:
    """(metric name, factor to multiply the stored value by) for a figure (device split out)."""
    base = base_unit(unit)
    conversion = (_conversion(SUFFIXES[base.unit], base.factor, *UNIT_TOKENS.get(unit, ()))
                  if base.unit in SUFFIXES else PER_SECOND if unit.endswith("/s") else None)
    if conversion is None:
        suffix = [] if unit in UNSUFFIXED_UNITS else _tokens(unit.replace("/", " per "))
        conversion = Conversion("_".join(suffix), 1)
    tokens = [token for token in _tokens(figure) if token not in conversion.drops]
    suffix = conversion.suffix.split("_") if conversion.suffix else []
    if suffix and tokens[-len(suffix):] != suffix:
        tokens += suffix
    return METRIC_PREFIX + "_".join(tokens), conversion.factor


def _request_kind(figure: str) -> tuple[str, str | None]:
    """('lat_p99_ns', 'put') for a mixed S3 phase's 'put_lat_p99_ns'; (figure, None) otherwise."""
    kind, _, plain = figure.partition("_")
    if kind in S3_REQUEST_KINDS and known_unit(plain):
        return plain, kind
    return figure, None


class _Figures(Collector):
    """The runs' figures as gauge families, for a registry of their own (never the process's
    default one, which would add the exporting process's own metrics)."""

    def __init__(self, runs: Iterable[RunRecord]):
        self.families: dict[str, GaugeMetricFamily] = {}
        self.left_out: list[str] = []
        seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        for row in figure_rows(runs):
            figure, device, unit = row["figure"], row["device"], row["unit"]
            figure, request_kind = _request_kind(figure)
            metric, factor = metric_for(figure, unit)
            labels = (("run_id", row["run_id"]), ("label", row["label"]), ("kind", row["run_kind"]),
                      ("phase", row["phase"]))
            labels += (("device", device),) if device else ()
            labels += (("op", request_kind),) if request_kind else ()
            if (metric, labels) in seen:  # two stored names that read the same once converted
                shown = f"{row['figure']}[{device}]" if device else row["figure"]
                self.left_out.append(f"# {shown} of {row['run_id']} {row['phase']} left out: it is {metric} again")
                continue
            seen.add((metric, labels))
            family = self.families.setdefault(metric, GaugeMetricFamily(metric, f"{figure} (stored in {unit})"))
            # add_sample, not add_metric: one family's samples differ in their label names (device, op).
            family.add_sample(metric, dict(labels), row["value"] * factor)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return iter(self.families.values())


def exposition(runs: Iterable[RunRecord]) -> str:
    """The text a pushgateway takes (`curl --data-binary @- .../metrics/job/backupbench`)."""
    figures = _Figures(runs)
    if not figures.families:
        return ""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(figures)
    # The figures left out are said as comments, which the format allows after the families.
    return generate_latest(registry).decode() + "".join(line + "\n" for line in figures.left_out)
