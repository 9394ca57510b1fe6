"""What a workload can do, declared once on its Definition (as fio's ioengines declare their
flags), stored with every run, and read back from the run.

Code asks a workload's declaration ("does it run on fio servers?"), never its name. A run
stores the capabilities of every kind of workload it ran (settings["capabilities"]:
kind -> the names of its flags), so a report or a comparison reads what the run was, not
what today's code says about its kind: an old run reads the same tomorrow.

Runs stored before capabilities were stored (backupbench up to issue 24) carry none: their
capabilities are derived from their kinds, once, here (`of_run`), from BEFORE_STORED, the
table as it stood when storing began. It is frozen: a later workload never changes it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Iterable, Mapping

from backupbench.results.model import RunRecord

STORED_KEY = "capabilities"
RECIPE_KIND = "recipe"


@dataclass(frozen=True)
class Capabilities:
    # Runs on hosts running `fio --server` (run --hosts, a recipe's [hosts] names); its test
    # file there is removed by a job sent to the host (engines/fio_client.remove_remote_file).
    fio_servers: bool = False
    # Runs from backupbench agents (run --agents, a recipe's [hosts] agents).
    agents: bool = False
    # Its phases are KB2014's backup operations: effective speeds by KB2014's rules (synthetic
    # full read+write/2, reverse incremental /3), each operation timed by `runtime`, and the
    # KB2014 block size; backup windows and the restore range follow from them.
    kb2014_operations: bool = False

    def stored(self) -> list[str]:
        """The names of the flags it has, as a run stores them."""
        return [name for name, value in asdict(self).items() if value]

    @classmethod
    def from_stored(cls, names: Iterable[Any]) -> "Capabilities":
        """From a run's stored names; a name this version does not know is left out."""
        known = {field.name for field in fields(cls)}
        return cls(**{str(name): True for name in names if str(name) in known})


NONE = Capabilities()

# The capabilities of each kind when runs began to store their own (issue 24), for the runs
# stored before: frozen, never edited when a workload or a capability is added.
BEFORE_STORED: Mapping[str, Capabilities] = {
    "kb2014": Capabilities(fio_servers=True, kb2014_operations=True),
    "first-write": Capabilities(fio_servers=True),
    "s3": Capabilities(agents=True),
}


def workload_kinds(kind: str, settings: Mapping[str, Any]) -> list[str]:
    """The kind of each workload a run ran, in order: its own kind, or a recipe run's workloads'
    (a kind twice when the recipe has it twice)."""
    if kind != RECIPE_KIND:
        return [kind]
    entries = (settings.get("recipe") or {}).get("workload") or []
    return [str(entry.get("kind")) for entry in entries if isinstance(entry, dict)]


def kinds_of(kind: str, settings: Mapping[str, Any]) -> list[str]:
    """The kinds of workload a run ran: its own kind, or a recipe run's workloads' kinds."""
    return list(dict.fromkeys(workload_kinds(kind, settings)))


def of_run(run: RunRecord) -> dict[str, Capabilities]:
    """kind -> capabilities of every kind of workload `run` ran, as stored with it (the one
    place a run stored without them gets them derived from its kinds, by BEFORE_STORED)."""
    stored = run.settings.get(STORED_KEY)
    if isinstance(stored, dict):
        return {str(kind): Capabilities.from_stored(names) for kind, names in stored.items()
                if isinstance(names, list)}
    return {kind: BEFORE_STORED.get(kind, NONE) for kind in kinds_of(run.kind, run.settings)}


def of_kind(run: RunRecord, kind: str) -> Capabilities:
    """The capabilities `run` stored for its workload of `kind` (none if it ran no such workload)."""
    return of_run(run).get(kind, NONE)

