"""What each phase of a workload measures, which is the table a report shows it in: fio's I/O,
small files, S3 requests or block clones. Declared once on the workload's Definition, stored
with every run (settings["phase_kinds"]: kind -> its declaration), read back from the run, as
capabilities are (workloads/capabilities.py): a report reads what the run was, not what
today's code says about its kind.

Runs stored before phase kinds were (backupbench up to issue 38) carry none: theirs are derived
from their kinds, once, here (`of_run`), from BEFORE_STORED, frozen as it stood then.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Mapping

from backupbench.results.model import RunRecord
from backupbench.workloads.capabilities import workload_kinds

STORED_KEY = "phase_kinds"
FIO, FILES, S3, CLONE = "fio", "files", "s3", "clone"
KINDS = (FIO, FILES, S3, CLONE)


@dataclass(frozen=True)
class PhaseKinds:
    """A workload's phases by what they measure: the kind of the first of `patterns` (fnmatch,
    over the phase's name) that a phase matches, else `default`."""

    default: str = FIO
    patterns: tuple[tuple[str, str], ...] = ()

    def of(self, phase: str) -> str:
        return next((kind for pattern, kind in self.patterns if fnmatchcase(phase, pattern)), self.default)

    def stored(self) -> dict[str, Any]:
        return {"default": self.default, "patterns": [list(pair) for pair in self.patterns]}

    @classmethod
    def from_stored(cls, data: Any) -> "PhaseKinds":
        """From a run's stored declaration; what this version cannot read is left out (fio's I/O
        for a kind it does not know, the table every phase went to before there were others)."""
        if not isinstance(data, dict):
            return cls()
        default = data.get("default") if data.get("default") in KINDS else FIO
        pairs = data.get("patterns") if isinstance(data.get("patterns"), list) else []
        return cls(str(default), tuple((str(pair[0]), str(pair[1])) for pair in pairs
                                       if isinstance(pair, list) and len(pair) == 2 and pair[1] in KINDS))


# Each kind's phases when runs began to store them (issue 38), for the runs stored before:
# frozen, never edited when a workload is added.
BEFORE_STORED: Mapping[str, PhaseKinds] = {
    "kb2014": PhaseKinds(FIO),
    "first-write": PhaseKinds(FIO),
    "smallfiles": PhaseKinds(FILES),
    "s3": PhaseKinds(S3),
    "block-clone": PhaseKinds(FIO, (("increment-*", CLONE),)),
}


def of_run(run: RunRecord) -> dict[str, PhaseKinds]:
    """kind -> the phase kinds of every kind of workload `run` ran, as stored with it (derived
    from its kinds, by BEFORE_STORED, for a run stored without them)."""
    stored = run.settings.get(STORED_KEY)
    if isinstance(stored, dict):
        return {str(kind): PhaseKinds.from_stored(data) for kind, data in stored.items()}
    return {kind: BEFORE_STORED.get(kind, PhaseKinds()) for kind in workload_kinds(run.kind, run.settings)}


def of_kind(run: RunRecord, kind: str | None) -> PhaseKinds:
    """The phase kinds `run` stored for its workload of `kind` (fio's I/O for any other)."""
    return of_run(run).get(kind or "", PhaseKinds())
