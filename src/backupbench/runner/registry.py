"""Workloads by name, as `run --workload NAME` and recipes call them."""

from __future__ import annotations

from typing import Callable

from backupbench.recipe.suite import SuiteOptions
from backupbench.runner import firstwrite, kb2014
from backupbench.runner.workload import Workload

WORKLOADS: dict[str, tuple[str, Callable[[SuiteOptions], Workload]]] = {
    "kb2014": ("Veeam KB2014 backup operations: active full, synthetic full, reverse "
               "incremental, restores (field note C)", kb2014.workload),
    "first-write": ("first write vs overwrite vs read of one region: thin-provisioning and "
                    "CoW allocation cost (field note B)", firstwrite.workload),
}


def build(name: str, options: SuiteOptions) -> Workload:
    return WORKLOADS[name][1](options)
