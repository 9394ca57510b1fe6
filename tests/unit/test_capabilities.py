"""Capabilities are declared on a workload's Definition, stored with each run, and read back from
the run: a report or a comparison of an old run does not depend on today's registry."""

from __future__ import annotations

from backupbench.analysis.settings_diff import workload_settings
from backupbench.engines import fio_client
from backupbench.report import html
from backupbench.report.tables import table_specs
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.workloads import capabilities, firstwrite
from backupbench.workloads.capabilities import Capabilities
from backupbench.workloads.registry import WORKLOADS, artefact_removers, stored_capabilities

KB2014_SETTINGS = {"size": 64 * 2**20, "file_size": 64 * 2**20, "runtime": 5.0, "block_size": 512 * 1024,
                   "engine": "libaio", "jobs": 1}


def kb2014_run(**settings) -> RunRecord:
    op = OperationRecord(name="active-full", pattern="write qd1", status=COMPLETE,
                         figures={"effective_bw": 100.0 * 2**20, "write_bw": 100.0 * 2**20})
    return RunRecord(run_id="r", kind="kb2014", target="/t", status=COMPLETE, operations=[op],
                     settings={**KB2014_SETTINGS, **settings})


def test_a_new_run_stores_what_each_of_its_workloads_can_do():
    assert stored_capabilities("kb2014", {}) == {"capabilities": {"kb2014": ["fio_servers", "kb2014_operations"]}}
    recipe = {"recipe": {"workload": [{"kind": "s3"}, {"kind": "smallfiles"}, {"kind": "s3"}]}}
    assert stored_capabilities("recipe", recipe) == {"capabilities": {"s3": ["agents"], "smallfiles": []}}
    stored = stored_capabilities("first-write", {})["capabilities"]
    run = RunRecord(run_id="r", kind="first-write", target="/t", settings={"capabilities": stored})
    assert capabilities.of_run(run) == {"first-write": WORKLOADS["first-write"].capabilities}


def test_a_run_stored_before_capabilities_gets_them_from_its_kind_in_one_place():
    assert capabilities.of_kind(kb2014_run(), "kb2014") == Capabilities(fio_servers=True, kb2014_operations=True)
    recipe = RunRecord(run_id="r", kind="recipe", target="t",
                       settings={"recipe": {"workload": [{"kind": "first-write"}, {"kind": "smallfiles"}]}})
    assert capabilities.of_run(recipe) == {"first-write": Capabilities(fio_servers=True),
                                           "smallfiles": Capabilities()}
    # A name a later version stores is left out, not misread.
    later = RunRecord(run_id="r", kind="kb2014", target="/t",
                      settings={"capabilities": {"kb2014": ["kb2014_operations", "from_the_future"]}})
    assert capabilities.of_kind(later, "kb2014") == Capabilities(kb2014_operations=True)


def test_reports_read_the_runs_capabilities_not_the_registrys():
    (_, _, _, caption), = table_specs(kb2014_run())
    assert "5 s per operation" in caption
    # The same kind, stored as not timed per operation: the run says what it was.
    (_, _, _, caption), = table_specs(kb2014_run(capabilities={"kb2014": []}))
    assert "each phase covers the whole file once" in caption and "per operation" not in caption
    assert "KB2014 rules" in html.charts_html(kb2014_run())
    assert "KB2014 rules" not in html.charts_html(kb2014_run(capabilities={"kb2014": []}))


def test_a_comparison_reads_where_a_hosts_workload_ran_from_the_run():
    hosts = {"names": ["10.0.0.5", "10.0.0.6:8766"], "path": "/srv"}

    def recipe_run(stored: dict | None) -> RunRecord:
        settings = {"recipe": {"workload": [{"kind": "kb2014", "size": 64 * 2**20}], "hosts": hosts}}
        return RunRecord(run_id="r", kind="recipe", target="t",
                         settings={**settings, **({"capabilities": stored} if stored is not None else {})})

    assert workload_settings(recipe_run(None))[0]["hosts"] == ["10.0.0.5", "10.0.0.6:8766"]
    assert "hosts" not in workload_settings(recipe_run({"kb2014": []}))[0]


def test_the_remote_file_remover_comes_with_running_on_fio_servers():
    """first-write runs on fio servers too: its own Definition brings the remover it needs."""
    assert firstwrite.DEFINITION.removers_needed() == {fio_client.REMOTE_FILE: fio_client.remove_remote_file}
    for name, definition in WORKLOADS.items():
        assert (fio_client.REMOTE_FILE in definition.removers_needed()) == definition.capabilities.fio_servers, name
    assert fio_client.REMOTE_FILE in artefact_removers() and {"s3-objects", "s3-bucket"} <= set(artefact_removers())
