"""Every workload by name: `backupbench run --workload NAME` and a recipe's `kind = "NAME"`.

Adding a workload is one module in this folder (its options, phases, figures and its
Workload: see docs/architecture.md for a worked example) and one line here.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from backupbench.artefacts import Remover
from backupbench.workloads import aging, blockclone, firstwrite, kb2014, restore, s3, smallfiles
from backupbench.workloads.base import Definition
from backupbench.workloads import phase_kinds
from backupbench.workloads.capabilities import STORED_KEY, Capabilities, kinds_of

WORKLOADS: dict[str, Definition] = {definition.name: definition for definition in (
    kb2014.DEFINITION,
    firstwrite.DEFINITION,
    smallfiles.DEFINITION,
    s3.DEFINITION,
    blockclone.DEFINITION,
    restore.DEFINITION,
    aging.DEFINITION,
)}


def artefact_removers() -> dict[str, Remover]:
    """Removers for the artefact kinds workloads add (beyond files, folders and processes),
    those their capabilities need among them."""
    return {kind: remover for definition in WORKLOADS.values()
            for kind, remover in definition.removers_needed().items()}


def names_where(wanted: Callable[[Capabilities], bool]) -> tuple[str, ...]:
    """The workloads whose capabilities are as `wanted`, in registry order (for messages)."""
    return tuple(name for name, definition in WORKLOADS.items() if wanted(definition.capabilities))


def stored_capabilities(kind: str, settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What a new run stores beside its settings: the capabilities and the phase kinds of every
    kind of workload it runs (workloads/capabilities.py and phase_kinds.py read them back)."""
    kinds = [name for name in kinds_of(kind, settings) if name in WORKLOADS]
    return {STORED_KEY: {name: WORKLOADS[name].capabilities.stored() for name in kinds},
            phase_kinds.STORED_KEY: {name: WORKLOADS[name].phase_kinds.stored() for name in kinds}}
