"""Workloads by name, as `run --workload NAME` and recipes call them.

Each entry: a one-line description, the options schema, and a builder from options.
"""

from __future__ import annotations

from typing import Any, Callable

from pydantic import BaseModel

from backupbench.recipe.suite import SuiteOptions
from backupbench.runner import firstwrite, kb2014, s3_workload
from backupbench.runner.smallfiles import SmallFilesWorkload
from backupbench.workloads.s3 import S3Options
from backupbench.runner.workload import Workload
from backupbench.workloads.smallfiles import SmallFilesSpec

WORKLOADS: dict[str, tuple[str, type[BaseModel], Callable[[Any], Workload]]] = {
    "kb2014": ("Veeam KB2014 backup operations: active full, synthetic full, reverse "
               "incremental, restores (field note C)", SuiteOptions, kb2014.workload),
    "first-write": ("first write vs overwrite vs read of one region: thin-provisioning and "
                    "CoW allocation cost (field note B)", SuiteOptions, firstwrite.workload),
    "smallfiles": ("many small files created, then rewritten in place pass by pass "
                   "(field note E)", SmallFilesSpec, SmallFilesWorkload),
    "s3": ("objects PUT then GET (then DELETE) by many streams against an S3 endpoint "
           "(field note D); needs --endpoint and --bucket, no PATH", S3Options, s3_workload.workload),
}


def describe(name: str) -> str:
    return WORKLOADS[name][0]


def options_model(name: str) -> type[BaseModel]:
    return WORKLOADS[name][1]


def build(name: str, options: Any) -> Workload:
    return WORKLOADS[name][2](options)
