"""Every workload by name: `backupbench run --workload NAME` and a recipe's `kind = "NAME"`.

Adding a workload is one module in this folder (its options, phases, figures and its
Workload: see docs/architecture.md for a worked example) and one line here.
"""

from __future__ import annotations

from backupbench.artefacts import Remover
from backupbench.workloads import blockclone, firstwrite, kb2014, s3, smallfiles
from backupbench.workloads.base import Definition

WORKLOADS: dict[str, Definition] = {definition.name: definition for definition in (
    kb2014.DEFINITION,
    firstwrite.DEFINITION,
    smallfiles.DEFINITION,
    s3.DEFINITION,
    blockclone.DEFINITION,
)}


def artefact_removers() -> dict[str, Remover]:
    """Removers for the artefact kinds workloads add (beyond files, folders and processes)."""
    return {kind: remover for definition in WORKLOADS.values() for kind, remover in definition.removers.items()}
