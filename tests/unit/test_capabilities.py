"""Capabilities are declared on a workload's Definition, stored with each run, and read back from
the run: a report or a comparison of an old run does not depend on today's registry."""

from __future__ import annotations

from backupbench.analysis.settings_diff import workload_settings
from backupbench.engines import fio_client
from backupbench.report import html
from backupbench.report.tables import table_specs
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.report.terminal import run_size_text
from backupbench.workloads import blockclone, capabilities, firstwrite, phase_kinds
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
    assert stored_capabilities("kb2014", {})["capabilities"] == {"kb2014": ["fio_servers", "kb2014_operations"]}
    recipe = {"recipe": {"workload": [{"kind": "s3"}, {"kind": "smallfiles"}, {"kind": "s3"}]}}
    assert stored_capabilities("recipe", recipe)["capabilities"] == {"s3": ["agents"], "smallfiles": []}
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


def test_each_workload_declares_what_its_phases_measure_and_a_run_stores_it():
    kinds = {name: definition.phase_kinds for name, definition in WORKLOADS.items()}
    assert kinds["s3"].of("mixed") == phase_kinds.S3 and kinds["smallfiles"].of("update-2") == phase_kinds.FILES
    assert kinds["kb2014"].of("restore-random") == phase_kinds.FIO
    clone = kinds["block-clone"]
    assert [clone.of(name) for name in blockclone.phase_names(blockclone.BlockCloneOptions(increments=2))] == [
        "fio", "clone", "clone", "fio", "fio", "fio", "fio"]
    # Stored and read back; a run stored before gets the same from its kind.
    recipe = {"recipe": {"workload": [{"kind": "block-clone"}, {"kind": "s3"}]}}
    stored = stored_capabilities("recipe", recipe)["phase_kinds"]
    now = RunRecord(run_id="r", kind="recipe", target="t", settings={**recipe, "phase_kinds": stored})
    before = RunRecord(run_id="r", kind="recipe", target="t", settings=recipe)
    assert phase_kinds.of_run(now) == phase_kinds.of_run(before) == {"block-clone": clone, "s3": kinds["s3"]}
    # Every kind there was when storing began (frozen: restore and aging came after, their runs store theirs).
    assert set(phase_kinds.BEFORE_STORED) == set(WORKLOADS) - {"restore", "aging"}


def test_a_report_reads_what_a_phase_measured_from_the_run():
    put = OperationRecord(name="put", pattern="PUT 1 MiB x4", status=COMPLETE,
                          figures={"objects_per_s": 4.0, "bytes": 4 * 2**20, "effective_bw": 2**20})
    s3 = RunRecord(run_id="r", kind="s3", target="http://h:9000", status=COMPLETE, operations=[put],
                   settings={"objects": 4, "object_size": 2**20})
    assert run_size_text(s3) == "4 MiB PUT" and [spec.pattern_heading for spec in table_specs(s3)] == ["requests"]
    # The same phase, stored as measuring fio's I/O: the run says what it was, not its kind's name.
    as_io = RunRecord(run_id="r", kind="s3", target="http://h:9000", status=COMPLETE, operations=[put],
                      settings={"objects": 4, "object_size": 2**20, "phase_kinds": {"s3": {"default": "fio"}}})
    assert run_size_text(as_io) == "-" and [spec.pattern_heading for spec in table_specs(as_io)] == ["fio pattern"]


def test_the_remote_file_remover_comes_with_running_on_fio_servers():
    """first-write runs on fio servers too: its own Definition brings the remover it needs."""
    assert firstwrite.DEFINITION.removers_needed() == {fio_client.REMOTE_FILE: fio_client.remove_remote_file}
    for name, definition in WORKLOADS.items():
        assert (fio_client.REMOTE_FILE in definition.removers_needed()) == definition.capabilities.fio_servers, name
    assert fio_client.REMOTE_FILE in artefact_removers() and {"s3-objects", "s3-bucket"} <= set(artefact_removers())
