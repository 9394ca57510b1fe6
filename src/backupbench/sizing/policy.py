"""The backup policy of `backupbench size repository`: its flags, the notes and refusals it earns,
and where its data reduction came from.

The policy's fields (BackupPolicy, DiskModel) are defined once in recipe/policy.py, where a
recipe's [policy] table reads them too; here they become the command's flags with the candidate
layouts (LayoutOptions) and the runs that measured them. `check_policy` refuses what contradicts
itself (recipe/policy.contradiction, spelled as flags) and notes what saves nothing:
block clone speeds up synthetic fulls and merges and makes them share blocks; an active full
is written anew, so with forward-active it saves nothing (said as a note, not refused).

`reduction_source` is the hook where a ratio measured by a run (what a filesystem or the backup
software stored per byte read) will plug in: it names where the ratio came from, and the plan
reports it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from backupbench.errors import InputError
from backupbench.schema import Duration
from backupbench.recipe.policy import (DEFAULT_REDUCTION, METHODS, PERIODIC_FULLS, TRANSFORMS,  # noqa: F401
                                       BackupPolicy, DiskModel, Method, contradiction, given_fields,
                                       parse_ratio)
from backupbench.sizing.options import DiskSizes, LayoutOptions, Names

def reduction_source(policy: BackupPolicy) -> str:
    """Where the data reduction came from (the hook for a ratio measured by a run)."""
    if policy.reduction == DEFAULT_REDUCTION and "reduction" not in policy.model_fields_set:
        return "default 2:1 (Veeam's sizing guidance: usually 2:1 or more)"
    return "given"


def check_policy(policy: BackupPolicy) -> list[str]:
    """Refuse a policy that contradicts itself (InputError, one line); return the notes it earns."""
    found = contradiction(policy)
    if found is not None:
        raise InputError(*found)
    notes = []
    if policy.block_clone and policy.method == "forward-active":
        notes.append("block clone saves nothing with forward-active: each active full is written anew")
    if policy.block_clone and policy.method == "reverse-incremental":
        notes.append("block clone only spares reverse-incremental the compact's extra full: each rollback is "
                     "written anew")
    return notes


class RepositoryOptions(DiskModel, LayoutOptions, BackupPolicy):
    """`backupbench size repository`: the policy, the candidate layouts and disks, and the runs
    that measured them."""

    layout: Names | None = Field(  # type: ignore[assignment]
        None, min_length=1, description=LayoutOptions.model_fields["layout"].description + " [default with "
        "--recipe: the recipe's layouts].", json_schema_extra={"metavar": "LAYOUT[,LAYOUT...]"})
    disk_size: DiskSizes | None = Field(  # type: ignore[assignment]
        None, min_length=1, description=LayoutOptions.model_fields["disk_size"].description + " [default with "
        "--recipe: its [policy]'s].", json_schema_extra={"metavar": "SIZE[,SIZE...]"})
    recipe: Path | None = Field(
        None, description="A recipe with a [policy] table: its policy and disks, and its layouts as the candidates; "
        "flags given as well override the table's values.", json_schema_extra={"metavar": "FILE"})
    from_run: Names | None = Field(
        None, min_length=1, description="Measured speeds (and a fault run's rebuild rate) from a stored run: RUN "
        "for every candidate whose layout it measured, LAYOUT=RUN for one candidate; comma-separated for "
        "several (an id, a unique prefix, or 'latest'). An aging run (--workload aging) gives the restore "
        "speeds at --at-age.", json_schema_extra={"metavar": "[LAYOUT=]RUN[,...]"})
    at_age: Duration | None = Field(
        None, gt=0, description="The repository's age the restores are planned for, e.g. 180d: an aging run given "
        "to --from-run gives its restores on the first day it measured at or after it [default: the run's last "
        "day].", json_schema_extra={"metavar": "AGE"})

    def policy(self) -> BackupPolicy:
        return given_fields(self, BackupPolicy)

    def disk(self) -> DiskModel:
        return given_fields(self, DiskModel)
