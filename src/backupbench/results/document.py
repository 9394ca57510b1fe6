"""The result document: what `--json` prints, versioned, every number with its unit.

Every document starts with `schema_version`, `kind` ("backupbench.<command>") and the
`backupbench_version` that wrote it. Each kind's shape is a pydantic model (document_models.py,
command_documents.py), checked before a document is printed; the JSON Schemas shipped in
results/schema/ are generated from those models (cli/documents.py), and docs/results.md
describes them. A run's figures keep the units they were stored in
(bandwidth B/s, latency ns, monitor await ms): converting would round, and the unit is named
beside every value, so a reader converts exactly once, on its side. A device a figure was
measured on (`mon.vda.w_await.p95`) is a label of the figure, not a part of its name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import metadata, resources
from typing import Any

from backupbench import __version__
from backupbench.results.document_models import SCHEMA_VERSION
from backupbench.results.model import OperationRecord, RunRecord, split_device, stored_name

KIND_PREFIX = "backupbench."
# A figure stored without a unit is a count, a flag or a ratio: UCUM's dimensionless unit.
DIMENSIONLESS = "1"


def backupbench_version() -> str:
    try:
        return metadata.version("backupbench")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return __version__


def envelope(command: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` as the document of `command` (e.g. "size.capacity"): the three header keys first."""
    head = {"schema_version": SCHEMA_VERSION, "kind": KIND_PREFIX + command,
            "backupbench_version": backupbench_version()}
    clash = head.keys() & payload.keys()
    if clash:
        raise ValueError(f"the {command} payload already has {sorted(clash)}")
    return {**head, **payload}


def schema(kind: str) -> dict[str, Any]:
    """The shipped JSON Schema of a document kind ("backupbench.run" or "run")."""
    name = kind.removeprefix(KIND_PREFIX)
    text = resources.files("backupbench.results").joinpath("schema", f"{name}.schema.json").read_text()
    return json.loads(text)


def schema_names() -> list[str]:
    """Every shipped schema's kind, without the prefix ("run", "error", "size.capacity", ...)."""
    folder = resources.files("backupbench.results").joinpath("schema")
    return sorted(entry.name.removesuffix(".schema.json") for entry in folder.iterdir()
                  if entry.name.endswith(".schema.json"))


def figure_unit(op: OperationRecord, name: str) -> str:
    return op.unit(name) or DIMENSIONLESS


def figure_list(op: OperationRecord) -> list[dict[str, Any]]:
    figures = []
    for name, value in op.figures.items():
        if value is None:
            continue
        figure, device = split_device(name)
        entry: dict[str, Any] = {"name": figure}
        if device is not None:
            entry["device"] = device
        figures.append({**entry, "value": float(value), "unit": figure_unit(op, name), **spread_keys(op, name)})
    return figures


def spread_keys(op: OperationRecord, name: str) -> dict[str, Any]:
    """A figure measured several times: its samples, min/max, CV, 95% interval and whether it
    is unstable (results/document_models.Figure); nothing for one sample."""
    figure = op.spread(name) if op.sample_count > 1 else None
    if figure is None or figure.one_sample:
        return {}
    return {"samples": list(figure.samples), "min": figure.minimum, "max": figure.maximum, "cv": figure.cv,
            "interval": {"low": figure.low, "high": figure.high, "method": figure.method}, "unstable": figure.unstable}


def phase_figures(phase: dict[str, Any]) -> dict[str, float]:
    """A document's phase back to {name as stored ('mon.vda.w_await.p95'): value}, for
    Python readers of the document."""
    return {stored_name(f["name"], f.get("device")): f["value"] for f in phase["figures"]}


def phase_dict(op: OperationRecord, latency: dict[str, Any] | None = None) -> dict[str, Any]:
    flags: dict[str, Any] = {"cached": op.cached is not None, "unstable": op.unstable,
                             "disturbed": op.disturbed is not None}
    if op.cached is not None:
        flags["cached_reason"] = op.cached
    if op.disturbed is not None:
        flags["disturbed_reason"] = op.disturbed
    return {"name": op.name, "pattern": op.pattern, "status": op.status, "started_at": op.started_at,
            "finished_at": op.finished_at, "figures": figure_list(op), **flags, "detail": op.document_detail(),
            **({"latency": latency} if latency is not None else {})}


def run_dict(run: RunRecord) -> dict[str, Any]:
    return {"id": run.run_id, "label": run.label, "kind": run.kind, "target": run.target, "status": run.status,
            "started_at": run.started_at, "finished_at": run.finished_at, "error": run.error, "owner": run.owner,
            "settings": run.settings, "host": run.host, "notes": run.all_notes}


@dataclass(frozen=True)
class Window:
    """The time a full backup of the analysed size takes at a phase's effective speed."""

    layout: str | None
    phase: str
    job: str
    seconds: float
    low_seconds: float | None = None   # at the fast end of the speed's interval
    high_seconds: float | None = None
    method: str = "t"


@dataclass(frozen=True)
class RestoreRange:
    layout: str | None
    sequential_bps: float  # unfragmented restore
    random_bps: float      # fully fragmented restore
    model_sequential_bps: float | None = None  # the same on the model's disk (disk_model.py)
    model_random_bps: float | None = None


@dataclass(frozen=True)
class Analysis:
    """What `show` works out from a run beyond its figures (analysis/ computes it; the CLI
    hands it over, since results/ comes before analysis/)."""

    backup_size: int | None = None
    windows: tuple[Window, ...] = ()
    restore_ranges: tuple[RestoreRange, ...] = ()
    baseline: RunRecord | None = None
    # Each phase's latency picture by name (analysis/latency.py, from the run folder's raw files).
    latency: dict[str, dict[str, Any]] = field(default_factory=dict)


def _windows(analysis: Analysis) -> dict[str, Any] | None:
    if analysis.backup_size is None:
        return None
    return {"backup_size": analysis.backup_size, "size_unit": "B",
            "items": [{"layout": w.layout, "phase": w.phase, "job": w.job, "duration": w.seconds,
                       **({"interval": {"low": w.low_seconds, "high": w.high_seconds, "method": w.method}}
                          if w.low_seconds is not None and w.high_seconds is not None else {}), "unit": "s"}
                      for w in analysis.windows]}


def _restore_ranges(analysis: Analysis) -> list[dict[str, Any]]:
    return [{"layout": r.layout, "low": min(r.sequential_bps, r.random_bps),
             "high": max(r.sequential_bps, r.random_bps), "sequential": r.sequential_bps,
             "random": r.random_bps, **_model(r), "unit": "B/s"}
            for r in analysis.restore_ranges]


def _model(r: RestoreRange) -> dict[str, float]:
    if r.model_sequential_bps is None or r.model_random_bps is None:
        return {}
    return {"model_sequential": r.model_sequential_bps, "model_random": r.model_random_bps}


def run_body(run: RunRecord, analysis: Analysis = Analysis()) -> dict[str, Any]:
    """A run without the document header: one entry of `history --json`, or a whole `show`."""
    baseline = analysis.baseline
    return {
        "run": run_dict(run),
        "phases": [phase_dict(op, analysis.latency.get(op.name)) for op in run.operations],
        "windows": _windows(analysis),
        "restore_ranges": _restore_ranges(analysis),
        "baseline": None if baseline is None else {"run": run_dict(baseline),
                                                   "phases": [phase_dict(op) for op in baseline.operations]},
    }


def run_document(run: RunRecord, analysis: Analysis = Analysis()) -> dict[str, Any]:
    return envelope("run", run_body(run, analysis))


def error_document(message: str, fix: str | None, exit_code: int) -> dict[str, Any]:
    return envelope("error", {"error": message, "fix": fix, "exit_code": exit_code})
