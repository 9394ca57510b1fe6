"""The S3 options added for issue 14: data content, Veeam block sizes and size ranges, object
lock, multipart, the mixed phase; what the load generator is told; the lock check's figures."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backupbench.engines.s3_records import OpRecord, mixed_figures
from backupbench.errors import RecipeError
from backupbench.schema import validate
from backupbench.workloads.s3 import S3Entry
from backupbench.workloads.s3_lock import check_figures, checked_keys, failure_reasons
from backupbench.workloads.s3_options import S3Options
from backupbench.workloads.s3_phase import content_seed
from backupbench.workloads.s3_values import SizeRange, parse_size_range

BASE = {"endpoint": "http://127.0.0.1:9000", "bucket": "backups"}


def opts(**values) -> S3Options:
    return S3Options(**{**BASE, **values})


def one_line(**values) -> str:
    with pytest.raises(RecipeError) as caught:
        validate(S3Options, {**BASE, **values}, lambda loc: "--" + str(loc[0]).replace("_", "-") if loc else "options")
    line = caught.value.one_line()
    assert "\n" not in line
    return line


@pytest.mark.parametrize("text, low, high", [
    ("lan", 512 * 1024, 512 * 1024), ("local-16tb", 4 * 2**20, 4 * 2**20), ("wan", 256 * 1024, 256 * 1024),
    ("1MiB-8MiB", 2**20, 8 * 2**20), ("wan-local-16tb", 256 * 1024, 4 * 2**20), ("4KiB-4KiB", 4096, 4096),
    (65536, 65536, 65536),
])
def test_object_sizes_take_veeam_names_and_ranges(text, low, high):
    assert opts(object_size=text).object_size == SizeRange(low, high)
    assert parse_size_range(SizeRange(low, high)) == SizeRange(low, high)


def test_a_range_is_stored_as_bytes_and_read_back():
    o = opts(object_size="1MiB-8MiB")
    dumped = o.model_dump(mode="json")["object_size"]
    assert dumped == f"{2**20}-{8 * 2**20}" and opts(object_size=dumped).object_size == o.object_size
    assert opts(object_size="1MiB").model_dump(mode="json")["object_size"] == 2**20
    assert o.data_bytes == 2000 * (2**20 + 8 * 2**20) // 2


def test_content_options_belong_to_s3():
    assert opts().content().kind == "incompressible"
    o = opts(compress=50, dedupe=30)
    assert (o.data, o.compress, o.dedupe) == ("compressible", 50, 30)
    assert opts(pattern="0x55").content().pattern == 0x55
    config = opts(compress=50, object_size="1MiB-2MiB", object_lock="governance", retention="2h").object_plan(7).loader_config()
    assert (config["data"], config["compress"], config["seed"], config["object_size_max"]) == \
        ("compressible", 50, 7, 2 * 2**20)
    assert (config["lock_mode"], config["retention_s"]) == ("GOVERNANCE", 7200.0)
    assert S3Entry(kind="s3", compress=20).compress == 20  # a recipe key as well


def test_lock_adds_the_check_phase_unless_phases_are_given():
    assert opts(object_lock="compliance", retention="1d").s3_phases == ("put", "get", "lock-check", "delete")
    assert opts(object_lock="governance", retention="1d", s3_phases="put").s3_phases == ("put",)
    assert opts().s3_phases == ("put", "get", "delete")


def test_mix_shares():
    assert opts(s3_phases="put,mixed").shares == {"put": 45, "get": 45, "list": 5, "delete": 5}
    assert opts(s3_phases="put,mixed", mix="get=9,put=1").mix == {"put": 1, "get": 9}
    assert opts(s3_phases="put,mixed", mix={"list": 1}).mix == {"list": 1}


@pytest.mark.parametrize("values, said", [
    ({"retention": "1d"}, "retention applies to locked objects"),
    ({"object_lock": "governance"}, "needs a retention"),
    ({"object_lock": "forever", "retention": "1d"}, "--object-lock"),
    ({"compress": 50, "pattern": "0xaa"}, "do not apply to data = 'pattern'"),
    ({"data": "incompressible", "compress": 50}, "compressible"),
    ({"object_size": "8MiB-1MiB"}, "upside down"),
    ({"object_size": "big-small"}, "not a size or a range"),
    ({"object_size": "1GiB-9TiB"}, "more than S3's 10,000 parts"),
    ({"part_size": "1MiB"}, "--part-size"),
    ({"s3_phases": "put,lock-check"}, "needs object_lock"),
    ({"mix": "put=5"}, "add mixed to s3_phases"),
    ({"s3_phases": "put,mixed", "mix": "put=0"}, "add up to more than 0"),
    ({"s3_phases": "put,mixed", "mix": "put"}, "OP=SHARE"),
    ({"s3_phases": "put,delete,mixed"}, "order"),
])
def test_bad_input_is_one_line(values, said):
    assert said in one_line(**values)


def test_seed_is_fixed_by_the_run_and_the_agent():
    assert content_seed("r1") == content_seed("r1") != content_seed("r2")
    assert 0 <= content_seed("r1") < 2**63
    seeds = {content_seed(run, agent) for run in ("r1", "r2") for agent in ("", "10.0.0.5-7480", "10.0.0.6-7480")}
    assert len(seeds) == 6 and all(0 <= seed < 2**63 for seed in seeds)


def test_checked_keys_spread_over_the_run():
    assert checked_keys(set(range(100))) == [0, 25, 50, 74, 99]
    assert checked_keys({3, 9}) == [3, 9]


def test_lock_check_figures_say_held_or_not():
    held = check_figures({"checked": 5, "lock_applied": 5, "delete_refused": 5, "overwrite_kept": 5}, 2.0)
    assert (held["lock_delete_refused"], held["lock_overwrite_kept"], held["errors"]) == (1, 1, 0)
    broken = check_figures({"checked": 5, "lock_applied": 5, "delete_refused": 4, "overwrite_kept": 5}, 2.0)
    assert (broken["lock_delete_refused"], broken["errors"]) == (0, 1)
    assert check_figures({}, 1.0)["lock_delete_refused"] == 0  # nothing checked is no pass


def test_a_lock_failure_is_said_once_per_reason_with_how_many_objects():
    broken = check_figures({"checked": 5, "lock_applied": 3, "delete_refused": 5, "overwrite_kept": 5}, 1.0)
    notes = ["backupbench/r/obj-00000001: no GOVERNANCE lock on the object",
             "backupbench/r/obj-00000004: no GOVERNANCE lock on the object",
             "backupbench/r/obj-00000004: the overwrite was refused (<nil>)"]
    # A refused overwrite is no reason for a FAIL: the check is whether the original survived.
    assert failure_reasons(broken, notes) == ["no GOVERNANCE lock on the object (2 of 5 objects)"]
    assert failure_reasons(broken) == ["the lock was not applied"]   # a run stored without its notes
    assert failure_reasons(check_figures({}, 1.0), notes) == ["no object was checked"]
    assert failure_reasons(check_figures({"checked": 5, "lock_applied": 5, "delete_refused": 5,
                                          "overwrite_kept": 5}, 1.0), notes) == []


def test_mixed_figures_per_kind_over_the_phase_runtime():
    records = [OpRecord("put", 100, 0, 0, -1, 1_000_000_000, 10, 200),
               OpRecord("get", 1, 0, 0, 5, 2_000_000_000, 30, 200),
               OpRecord("get", 2, 1, 0, 5, 1_000_000_000, 0, 404, "NoSuchKey"),
               OpRecord("list", -1, 1, 0, -1, 500_000_000, 0, 200)]
    f = mixed_figures(records)
    assert (f["ops"], f["errors"], f["bytes"], f["runtime"]) == (3, 1, 40, 2.0)
    assert (f["put_ops"], f["get_ops"], f["get_errors"], f["list_ops"]) == (1, 1, 1, 1)
    assert f["get_effective_bw"] == 15.0 and f["put_objects_per_s"] == 0.5
    assert "delete_ops" not in f


def test_options_stay_valid_when_rebuilt_from_themselves():
    o = opts(object_size="1MiB-2MiB", compress=10, s3_phases="put,mixed", mix="put=1,get=1")
    again = S3Options.model_validate({name: getattr(o, name) for name in S3Options.model_fields})
    assert again == o
    with pytest.raises(ValidationError):
        opts(object_size=0)


def test_the_s3_table_says_whether_the_lock_held_and_what_the_mix_did():
    from backupbench.report.tables import table_specs
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    def op(name, **figures):
        return OperationRecord(name=name, pattern="PUT x", status=COMPLETE, figures={"objects_per_s": 1.0, **figures})

    run = RunRecord(run_id="r", kind="s3", target="http://127.0.0.1:9000/b", status=COMPLETE, settings={},
                    operations=[op("lock-check", lock_applied=1, lock_delete_refused=1, lock_overwrite_kept=1),
                                op("lock-check-2", lock_applied=1, lock_delete_refused=0, lock_overwrite_kept=1),
                                op("mixed", put_ops=132, get_ops=131, list_ops=15, delete_ops=22)])
    [(ops, columns, _, _)] = table_specs(run)
    heading, cell = columns[-1]
    assert heading == "check / mix"
    # Without the loader's notes (issue 37), the FAIL still says which check broke.
    assert [str(cell(o.figures)) for o in ops] == ["immutable: PASS",
                                                   "immutable: FAIL: a DELETE of the version was allowed",
                                                   "put 132, get 131, list 15, delete 22"]


def _failed_lock_run():
    """A governance lock check as the s3 workload stores one whose objects carried no lock:
    the loader's notes in detail["notes"], one per object and failed check."""
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    keys = [f"backupbench/r/obj-0000000{k}" for k in range(5)]
    notes = [note for key in keys for note in (f"{key}: no GOVERNANCE lock on the object",
                                               f"{key}: DELETE of the version was allowed")]
    figures = check_figures({"checked": 5, "lock_applied": 0, "delete_refused": 0, "overwrite_kept": 5}, 1.0)
    check = OperationRecord(name="lock-check", pattern="DELETE + overwrite 5 locked objects", status=COMPLETE,
                            figures=figures, detail={"objects": list(range(5)), "notes": notes,
                                                     "lock_mode": "governance"})
    return RunRecord(run_id="20261126T000000-lock", kind="s3", target="http://127.0.0.1:9000/b", status=COMPLETE,
                     settings={}, operations=[check])


REASONS = "no GOVERNANCE lock on the object (5 of 5 objects); DELETE of the version was allowed (5 of 5 objects)"


def test_a_failed_lock_check_says_why_beside_fail_in_the_terminal():
    # Issue 37: `immutable: FAIL` was printed alone; the reason was only in --json's detail notes.
    from rich.console import Console

    from backupbench.report.terminal import run_report

    console = Console(width=400, record=True, color_system=None)
    console.print(run_report(_failed_lock_run()))
    assert f"immutable: FAIL: {REASONS}" in console.export_text()


def test_a_failed_lock_check_says_why_beside_fail_in_the_html_report(tmp_path):
    pytest.importorskip("matplotlib")
    from backupbench.report import html

    page = html.render(_failed_lock_run(), results_dir=tmp_path)
    # Issue 41: the reasons, a sentence, are a numbered note under the table, so the column stays narrow.
    assert '<span class="strong flag-bad">immutable: FAIL<sup class="note-mark">1</sup></span>' in page
    assert f'<ol class="table-notes"><li>immutable: FAIL: {REASONS}</li></ol>' in page


def test_the_s3_table_shows_retried_requests_only_when_there_were_some():
    from backupbench.report.tables import table_specs
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    def op(name, **figures):
        return OperationRecord(name=name, pattern="PUT x", status=COMPLETE, figures={"objects_per_s": 1.0, **figures})

    run = RunRecord(run_id="r", kind="s3", target="http://127.0.0.1:9000/b", status=COMPLETE, settings={},
                    operations=[op("put", errors=2, retried=14, retries=20), op("get", errors=0, retried=0)])
    [(ops, columns, _, _)] = table_specs(run)
    errors = dict(columns)["errors"]
    assert [str(errors(o.figures)) for o in ops] == ["2 (14 retried)", "0"]
