"""Operation naming has one owner (recipe/naming.py): a workload's phases are known from its
Definition without building it, and are the phases the built workload runs."""

from __future__ import annotations

import pytest

from backupbench.layouts.capabilities import HostCapabilities
from backupbench.plan import build as build_plan
from backupbench.recipe import model, naming
from backupbench.workloads.base import ServedBy
from backupbench.workloads.registry import WORKLOADS

NOTHING = HostCapabilities(frozenset(), frozenset())
SERVED = ServedBy("ec", "http://127.0.0.1:9000", "access-key-of-the-layout", "secret-key-of-the-layout")

# Entries whose phases differ from the defaults' (operations, passes, verify, phases, increments).
ENTRIES = [
    {"kind": "kb2014"},
    {"kind": "kb2014", "operations": ["active-full", "synthetic-full"]},  # write-only: no layout phase
    {"kind": "kb2014", "operations": ["restore-random"]},
    {"kind": "first-write"},
    {"kind": "smallfiles", "preset": "quick"},
    {"kind": "smallfiles", "files": 10, "patterns": [0, 1], "verify": False},
    {"kind": "s3", "endpoint": "http://10.0.0.9:9000", "bucket": "bench"},
    {"kind": "s3", "endpoint": "http://10.0.0.9:9000", "bucket": "bench", "s3_phases": "put,mixed"},
    {"kind": "s3", "object_lock": "governance", "retention": "1d"},  # no endpoint: the layout's MinIO
    {"kind": "block-clone", "increments": 2, "full_size": "1MiB", "clone_block_size": "64KiB"},
]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: f"{entry['kind']}-{len(entry)}")
def test_a_definitions_phases_are_the_built_workloads_phases(entry):
    definition = WORKLOADS[entry["kind"]]
    parsed = definition.recipe_entry.model_validate(entry)
    built = definition.build(parsed, SERVED)
    assert definition.phases(parsed) == built.phases() and built.phases()
    if WORKLOADS[entry["kind"]].served_by_layout(parsed):
        return  # no options of `run` without an endpoint
    # The same from the options alone (run --workload), which carry no kind.
    options = definition.options.model_validate({k: v for k, v in parsed.model_dump().items()
                                                 if k in definition.options.model_fields})
    assert definition.phases(options) == built.phases()


def test_every_workload_declares_its_phases():
    for name, definition in WORKLOADS.items():
        assert definition.phases(definition.recipe_entry.model_validate(_minimal(name))), name


def _minimal(name: str) -> dict:
    return {"kind": name, **({"endpoint": "http://10.0.0.9:9000", "bucket": "bench"} if name == "s3" else {})}


def test_names_are_joined_the_one_way():
    assert naming.workload_group("raid6", 0, "kb2014", 1) == "raid6"
    assert naming.workload_group("raid6", 1, "smallfiles", 2) == "raid6/2-smallfiles"
    assert naming.workload_group("", 0, "kb2014", 1) == "" and naming.workload_group("", 0, "s3", 2) == "1-s3"
    group = naming.in_state(naming.workload_group("raid6", 1, "smallfiles", 2), naming.repeated_rebuilding(3))
    name = naming.operation(group, "create")
    assert name == "raid6/2-smallfiles/rebuilding-3/create"
    assert (naming.phase_of(name), naming.group_of(name), naming.layout_of(group)) == (
        "create", "raid6/2-smallfiles/rebuilding-3", "raid6")
    assert naming.operation("", "put") == "put" and naming.in_state("raid6", "") == "raid6"
    assert naming.layout_operation("raid6", naming.REBUILD) == "raid6/rebuild"


def test_names_are_read_back_the_one_way():
    assert naming.tails("raid6/degraded/restore-random") == ["degraded/restore-random", "restore-random"]
    assert naming.tails("put") == []
    kinds = ["kb2014", "smallfiles", "kb2014"]
    assert naming.workload_of("raid6/2-smallfiles/healthy/create", kinds) == "smallfiles"
    assert naming.workload_of("3-kb2014/active-full", kinds) == "kb2014"
    # A layout named as a workload's group is not taken for one: the group follows it.
    assert naming.workload_of("2-smallfiles/1-kb2014/active-full", kinds) == "kb2014"
    assert naming.workload_of("active-full", ["kb2014"]) == "kb2014" and naming.workload_of("x/put", kinds) is None


MINIO_RECIPE = {
    "name": "served", "devices": ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"],
    "layout": [{"name": "ec", "kind": "minio-ec", "devices": ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"],
                "parity": 2}],
    "workload": [{"kind": "s3", "s3_phases": "put,mixed", "mix": "put=1,get=1"}, {"kind": "kb2014",
                                                                                   "operations": ["active-full"]}],
}


def test_a_served_s3_workloads_operations_are_planned_without_its_server():
    """Its MinIO runs only once the layout is built: its phases come from its options."""
    plan = build_plan(model.parse(MINIO_RECIPE), "20261124T000000-aaaa", NOTHING, lambda device: [])
    assert plan.operations() == ["ec/1-s3/put", "ec/1-s3/mixed", "ec/2-kb2014/active-full"]


def test_fault_states_are_named_once():
    assert naming.fault_states(None) == ("",)
    assert naming.FAULT_STATES == ("healthy", "degraded", "rebuilding", "rebuilt")
    assert naming.REPEATED_REBUILDING == "rebuilding-[0-9]*"
