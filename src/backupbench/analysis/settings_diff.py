"""The settings that differ between runs set side by side: a `--jobs 4` run against a
`--jobs 1` one measures the settings as much as the storage, and a comparison must say so
before it shows a single ratio."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from pydantic import ValidationError

from backupbench import units
from backupbench.analysis.compare import target_line
from backupbench.engines.content import from_settings
from backupbench.engines.fio_client import parse_hosts
from backupbench.errors import BackupbenchError
from backupbench.results.model import RunRecord
from backupbench.workloads import capabilities
from backupbench.workloads.registry import WORKLOADS

MISSING = "-"


@dataclass(frozen=True)
class SettingDifference:
    setting: str
    values: tuple[str, ...]  # one per run, in the order the runs were given


def as_run_settings(entry: dict[str, Any]) -> dict[str, Any]:
    """A recipe's workload entry as the settings `run` stores for the same workload: a recipe
    keeps what was written (`size`, no block size for the workload's own), a run what the
    workload made of it (`file_size` in whole blocks per job, the block size it used). An entry
    this version cannot build (an older recipe, an s3 entry served by its layout's MinIO) is
    kept as written."""
    definition = WORKLOADS.get(str(entry.get("kind")))
    if definition is None:
        return entry
    try:
        built = definition.build(definition.recipe_entry.model_validate(entry), None)
    except (ValidationError, BackupbenchError):
        return entry
    return {**entry, **built.settings()}


def _on_hosts(entry: dict[str, Any], hosts: dict[str, Any], run: RunRecord) -> dict[str, Any]:
    """A [hosts] recipe's entry with the machines it ran on, as `run --hosts` / `--agents` store
    them: on fio servers if the run stored that its workload of that kind runs there."""
    if capabilities.of_kind(run, str(entry.get("kind"))).fio_servers and hosts.get("names"):
        try:
            return {**entry, "hosts": [host.name for host in parse_hosts(",".join(hosts["names"]))]}
        except BackupbenchError:
            return {**entry, "hosts": list(hosts["names"])}
    return {**entry, "agents": list(hosts["agents"])} if hosts.get("agents") else entry


def workload_settings(run: RunRecord) -> list[dict[str, Any]]:
    """A plain run's settings, or each workload entry of a recipe run as a run would store it."""
    recipe = run.settings.get("recipe") or {}
    if not recipe.get("workload"):
        return [run.settings]
    entries = [as_run_settings(entry) for entry in recipe["workload"]]
    hosts = recipe.get("hosts")
    return [_on_hosts(entry, hosts, run) for entry in entries] if hosts else entries


def _size(value: Any) -> str:
    return units.format_size(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _block_size(value: Any) -> str:
    # Unset only in a recipe entry that could not be built: the workload's own block size.
    return "the workload's own" if value is None else _size(value)


def _seconds(value: Any) -> str:
    return f"{value:g} s" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _yes_no(value: Any) -> str:
    return "yes" if value else "no"


def _iodepth(value: Any) -> str:
    # Unset: each operation's own depth (1 sequential, 4 merges), not one number.
    return "per operation" if value is None else str(value)


def _listed(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _workload_value(key: str, shown: Callable[[Any], str], written_as: str = "") -> Callable[[RunRecord], str]:
    """One workload key, shown; a recipe's distinct values joined (its workloads in order).
    `written_as`: the key an entry that could not be built keeps the value under instead."""
    def read(run: RunRecord) -> str:
        found = [shown(entry[key] if key in entry else entry[written_as]) for entry in workload_settings(run)
                 if key in entry or (written_as and written_as in entry)]
        return "; ".join(dict.fromkeys(found)) or MISSING
    return read


def _data_content(run: RunRecord) -> str:
    labels = [content.label for content in map(from_settings, workload_settings(run)) if content is not None]
    return "; ".join(dict.fromkeys(labels)) or MISSING


def _workload(run: RunRecord) -> str:
    kinds = [entry.get("kind") for entry in workload_settings(run) if entry.get("kind")]
    return "; ".join(dict.fromkeys(kinds)) if run.kind == "recipe" and kinds else run.kind


def _host_fact(key: str) -> Callable[[RunRecord], str]:
    return lambda run: str(run.host.get(key) or MISSING)


def _target(run: RunRecord) -> str:
    # A recipe's layouts stand on devices the run made: their kernel names (dm-0, md127, loop1)
    # say in what order they were built, not what storage was measured (the layouts row does).
    return target_line(run, devices=run.kind != "recipe")


def _layouts(run: RunRecord) -> str:
    layouts = (run.settings.get("recipe") or {}).get("layout") or []
    return ", ".join(f"{layout.get('name')} ({layout.get('kind')})" for layout in layouts) or MISSING


# (what the reader calls it, how to read it from a run), in the order they are listed.
SETTINGS: tuple[tuple[str, Callable[[RunRecord], str]], ...] = (
    ("workload", _workload),
    ("operations", _workload_value("operations", _listed)),
    ("jobs (fio numjobs)", _workload_value("jobs", str)),
    ("iodepth", _workload_value("iodepth", _iodepth)),
    ("block size", _workload_value("block_size", _block_size)),
    ("test file size", _workload_value("file_size", _size, written_as="size")),
    ("runtime per operation", _workload_value("runtime", _seconds)),
    ("ramp before each operation", _workload_value("ramp", _seconds)),
    ("steady state", _workload_value("steady_state", lambda v: v or "off")),
    ("I/O engine", _workload_value("engine", str)),
    ("buffered I/O", _workload_value("buffered", _yes_no)),
    ("files", _workload_value("files", lambda v: f"{v:,}")),
    ("file size", _workload_value("file_size", _size)),
    ("workers", _workload_value("threads", str)),
    ("object size", _workload_value("object_size", str)),
    ("streams", _workload_value("concurrency", str)),
    ("duration", _workload_value("duration", _seconds)),
    ("data content", _data_content),
    ("host name", _host_fact("hostname")),
    ("hosts (fio --client)", _workload_value("hosts", _listed)),
    ("agents", _workload_value("agents", _listed)),
    ("fio version", _host_fact("fio")),
    ("layouts", _layouts),
    ("target", _target),
)


def _applies(name: str, runs: Sequence[RunRecord]) -> bool:
    # Small-file runs store their file size as file_size too: one row for it, named for what it is.
    small_files = any("files" in entry for run in runs for entry in workload_settings(run))
    return name != ("test file size" if small_files else "file size")


def settings_differences(runs: Sequence[RunRecord]) -> list[SettingDifference]:
    """Each setting whose value is not the same in every run, with every run's value."""
    found = []
    for name, read in SETTINGS:
        values = tuple(read(run) for run in runs)
        if len(set(values)) > 1 and _applies(name, runs):
            found.append(SettingDifference(name, values))
    return found


def differing_names(differences: Sequence[SettingDifference]) -> str:
    """'jobs (fio numjobs), iodepth': what a caution names."""
    return ", ".join(difference.setting for difference in differences)
