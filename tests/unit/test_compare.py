"""Comparisons that cannot mislead: the direction in words, settings that differ listed first,
one order for ranges, a baseline with nothing in common refused, a verdict per phase."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from backupbench.analysis.compare import (
    layout_matrix, overall_verdict, phase_verdict, relative_speed, require_common_phase, run_names, speed_changes,
    target_line, target_text,
)
from backupbench.analysis.settings_diff import settings_differences
from backupbench.analysis.windows import restore_range
from backupbench.errors import InputError
from backupbench.recipe import model as recipe_model
from backupbench.workloads.registry import WORKLOADS
from backupbench.report.terminal import history_table, run_report, run_size_text
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

MiB = 2**20


def text_of(renderable) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


ONE_SAMPLE = "on one sample (each side): noise unknown, measure with --repeat 3"


def op(name: str, mib: float, util: float | None = None, p99_ms: float | None = None, repeated: bool = False,
       layout: str = "") -> OperationRecord:
    """A phase at `mib` MiB/s; repeated: measured 3 times, 1% apart (the median `mib`)."""
    figures = {"effective_bw": mib * MiB, "read_bw": mib * MiB}
    if util is not None:
        figures["members_util"] = util
    if p99_ms is not None:
        figures["read_p99_lat"] = p99_ms * 1e6
    samples = [{**figures, "effective_bw": mib * MiB * f, "read_bw": mib * MiB * f} for f in (0.99, 1.0, 1.01)]
    return OperationRecord(name, "randread qd1", COMPLETE, figures=figures, layout=layout,
                           samples=samples if repeated else [])


def kb_run(run_id: str, speeds: dict[str, float], label: str = "", **settings) -> RunRecord:
    stored = {"jobs": 1, "iodepth": None, "block_size": 512 * 1024, "file_size": 2**30, "runtime": 10.0,
              "engine": "libaio", "buffered": False, "data": "incompressible", "compress": 0, "dedupe": 0, **settings}
    run = RunRecord(run_id, "kb2014", "/srv/backups", stored, host={"hostname": "repo01", "fio": "fio-3.33"},
                    status=COMPLETE, label=label)
    run.operations = [op(name, mib) for name, mib in speeds.items()]
    return run


@pytest.mark.parametrize("current, reference, wording", [
    ((198.0, 200.0, 202.0), (99.0, 100.0, 101.0), "2.00x faster"),
    ((49.5, 50.0, 50.5), (99.0, 100.0, 101.0), "2.00x slower"),  # was "slowdown 0.50x"... and "0.50x" for 2x
    # mean 100.33 +- 4.303 * 6.03 / sqrt(3) = 14.98 each side: intervals overlap
    ((95.0, 100.0, 106.0), (101.0, 94.0, 106.0), "no difference beyond noise (±29%)"),
    ((100.0, 100.5, 101.0), (102.5, 103.0, 103.5), "1.02x slower"),  # tight enough to tell 3% apart
    (200.0, 100.0, f"2.00x faster {ONE_SAMPLE}"),
    (101.0, 100.0, f"1.01x faster {ONE_SAMPLE}"),  # was "same (within 2%)": nobody knows the noise
    ((99.0, 103.0), 100.0, "1.01x faster on one sample (the reference): noise unknown, measure with --repeat 3"),
    (0.0, 100.0, "no speed to compare"),
])
def test_relative_speed_says_the_direction(current, reference, wording):
    assert relative_speed(current, reference) == wording


def test_speed_changes_against_a_baseline():
    baseline = kb_run("base", {"active-full": 100, "restore-random": 400})
    run = kb_run("new", {"active-full": 200, "restore-random": 200, "synthetic-full": 50})
    changes = {c.operation: c for c in speed_changes(run, baseline)}
    assert set(changes) == {"active-full", "restore-random"}
    assert changes["active-full"].wording == f"2.00x faster {ONE_SAMPLE}" and changes["active-full"].factor == 2.0
    assert changes["restore-random"].wording == f"2.00x slower {ONE_SAMPLE}"


def test_speed_changes_against_a_repeated_baseline_know_the_noise():
    baseline, run = kb_run("base", {}), kb_run("new", {})
    baseline.operations = [op("active-full", 100, repeated=True), op("restore-random", 400, repeated=True)]
    run.operations = [op("active-full", 200, repeated=True), op("restore-random", 402, repeated=True)]
    changes = {c.operation: c.wording for c in speed_changes(run, baseline)}
    assert changes["active-full"] == "2.00x faster"
    assert changes["restore-random"].startswith("no difference beyond noise (±")


def test_a_baseline_with_no_phase_in_common_is_an_error_naming_both():
    baseline = kb_run("base", {"active-full": 100})
    require_common_phase(["active-full", "create"], "run new", baseline)
    with pytest.raises(InputError) as raised:
        require_common_phase(["create", "update-1"], "run new", baseline)
    assert raised.value.message == ("run new and baseline base have no phase in common "
                                    "(run new: create, update-1; base: active-full)")


def _on(fs_type: str, device: str) -> dict[str, str]:
    return {"fs_type": fs_type, "block_device": device, "source": f"/dev/{device}"}


@pytest.mark.parametrize("targets, under", [
    ({}, ""),
    ({"target": {"fs_type": None, "source": "tmpfs"}}, ""),
    ({"target": _on("xfs", "sdb")}, "xfs on sdb"),
    # layouts built one after another on the same disks: one device, said once
    ({"linear": _on("xfs", "dm-0"), "striped": _on("xfs", "dm-0")}, "xfs on dm-0"),
    # layouts built together (alternating repeats): the caption named only linear's dm-0 before
    ({"linear": _on("xfs", "dm-0"), "striped": _on("xfs", "dm-2"), "thin": _on("xfs", "dm-6")},
     "xfs on dm-0 (linear) / dm-2 (striped) / dm-6 (thin)"),
    # field note D's filesystems on one loop device: each layout's own, not the first one's
    ({"ext4": _on("ext4", "loop0"), "xfs": _on("xfs", "loop0"), "xfs-reflink": _on("xfs", "loop0")},
     "ext4 on loop0 (ext4) / xfs on loop0 (xfs) / loop0 (xfs-reflink)"),
    ({"gone": None, "target": _on("xfs", "sdb")}, "xfs on sdb"),
    ({"nfs": {"fs_type": "nfs4", "source": "nas:/export"}}, "nfs4 on nas:/export"),
])
def test_target_text_names_what_lies_under_every_layout(targets, under):
    run = kb_run("r", {"active-full": 100})
    run.host["targets"] = targets
    assert target_text(run) == under
    assert target_line(run) == "/srv/backups" + (f" ({under})" if under else "")


def test_a_run_tables_caption_names_each_layouts_device():
    run = kb_run("r", {"linear/active-full": 50, "striped/active-full": 100})
    run.host["targets"] = {"linear": _on("xfs", "dm-0"), "striped": _on("xfs", "dm-2")}
    assert "xfs on dm-0 (linear) / dm-2 (striped)" in " ".join(text_of(run_report(run)).split())


def test_runs_whose_layouts_were_numbered_otherwise_do_not_differ_in_target():
    """Built one after another, layouts land on dm-0 each; built together (repeats), on dm-0,
    dm-1: the same storage, which a comparison must not call a difference in settings."""
    one_by_one, together = kb_run("a", {"active-full": 100}), kb_run("b", {"active-full": 100})
    for run in (one_by_one, together):
        run.kind = "recipe"
    one_by_one.host["targets"] = {"linear": _on("xfs", "dm-0"), "striped": _on("xfs", "dm-0")}
    together.host["targets"] = {"linear": _on("xfs", "dm-0"), "striped": _on("xfs", "dm-1")}
    assert "target" not in {d.setting for d in settings_differences([one_by_one, together])}
    together.host["targets"]["striped"] = _on("ext4", "dm-1")
    found = {d.setting: d.values for d in settings_differences([one_by_one, together])}
    assert found["target"] == ("/srv/backups (xfs)", "/srv/backups (xfs (linear) / ext4 (striped))")
    # a plain run's device is the storage itself: another disk under the same path is a difference
    plain_sdb, plain_sdc = kb_run("c", {"active-full": 100}), kb_run("d", {"active-full": 100})
    plain_sdb.host["targets"], plain_sdc.host["targets"] = {"target": _on("xfs", "sdb")}, {"target": _on("xfs", "sdc")}
    assert {d.setting: d.values for d in settings_differences([plain_sdb, plain_sdc])}["target"] == (
        "/srv/backups (xfs on sdb)", "/srv/backups (xfs on sdc)")


def test_settings_that_differ_are_listed_with_each_runs_value():
    one = kb_run("one", {"active-full": 100})
    four = kb_run("four", {"active-full": 100}, jobs=4, iodepth=8, block_size=2**20, runtime=30.0, data="pattern",
                  pattern=0x55)
    four.host["hostname"], four.host["fio"], four.target = "repo02", "fio-3.36", "/mnt/other"
    found = {d.setting: d.values for d in settings_differences([one, four])}
    assert found == {
        "jobs (fio numjobs)": ("1", "4"), "iodepth": ("per operation", "8"), "block size": ("512 KiB", "1 MiB"),
        "runtime per operation": ("10 s", "30 s"),
        "data content": ("incompressible (random, fresh for every block)", "constant pattern 0x55"),
        "host name": ("repo01", "repo02"), "fio version": ("fio-3.33", "fio-3.36"),
        "target": ("/srv/backups", "/mnt/other")}
    assert settings_differences([one, kb_run("again", {"restore-random": 5})]) == []


def test_settings_of_recipe_runs_come_from_their_workloads():
    def recipe(run_id: str, jobs: int) -> RunRecord:
        return RunRecord(run_id, "recipe", "r", {"recipe": {"layout": [{"name": "a", "kind": "lvm"}],
                                                            "workload": [{"kind": "kb2014", "jobs": jobs}]}})
    found = {d.setting: d.values for d in settings_differences([recipe("x", 1), recipe("y", 2)])}
    assert found == {"jobs (fio numjobs)": ("1", "2")}


def stored_recipe_run(tmp_path, run_id: str, workload: str, hosts: str = "") -> RunRecord:
    """A recipe run's settings exactly as runner/apply.py stores them: the recipe, dumped."""
    path = tmp_path / f"{run_id}.toml"
    layout = '[[layout]]\nname = "dir"\nkind = "directory"\npath = "/srv"\n'
    path.write_text(f'name = "r"\n{hosts or layout}\n[[workload]]\n{workload}\n')
    recipe = recipe_model.load(path)
    return RunRecord(run_id, "recipe", "r", {"recipe": recipe.model_dump(mode="json")}, status=COMPLETE)


def test_recipe_runs_differ_in_file_size_and_operations(tmp_path):
    small = stored_recipe_run(tmp_path, "small", 'kind = "kb2014"\nsize = "1GiB"\noperations = ["active-full"]')
    large = stored_recipe_run(tmp_path, "large", 'kind = "kb2014"\nsize = "4GiB"')
    found = {d.setting: d.values for d in settings_differences([small, large])}
    assert found == {"operations": ("active-full", "active-full, synthetic-full, reverse-incremental, "
                                                   "restore-sequential, restore-random"),
                     "test file size": ("1 GiB", "4 GiB")}


def test_a_recipe_run_and_a_plain_run_of_the_same_workload_do_not_differ(tmp_path):
    # The recipe keeps `size` and no block size (the workload's own); `run` stores what it used.
    recipe_run = stored_recipe_run(tmp_path, "recipe", 'kind = "kb2014"\nsize = "1GiB"\njobs = 3')
    kb2014 = WORKLOADS["kb2014"]
    options = kb2014.options.model_validate({"size": 2**30, "jobs": 3})
    plain = RunRecord("plain", "kb2014", "r", kb2014.build(options, None).settings(), status=COMPLETE)
    assert plain.settings["file_size"] < 2**30 and plain.settings["block_size"] == 512 * 1024
    assert {d.setting for d in settings_differences([recipe_run, plain])} == {"layouts"}
    first_write = stored_recipe_run(tmp_path, "fw", 'kind = "first-write"\nsize = "1GiB"\njobs = 3')
    found = {d.setting: d.values for d in settings_differences([recipe_run, first_write])}
    assert found["block size"] == ("512 KiB", "1 MiB") and found["workload"] == ("kb2014", "first-write")


def test_a_recipe_entry_this_version_cannot_build_is_read_as_written():
    old = RunRecord("old", "recipe", "r", {"recipe": {"workload": [
        {"kind": "kb2014", "size": 2**30, "block_size": None, "retired_key": 1}]}})
    new = RunRecord("new", "recipe", "r", {"recipe": {"workload": [{"kind": "kb2014", "size": 2**32}]}})
    found = {d.setting: d.values for d in settings_differences([old, new])}
    assert found["test file size"] == ("1 GiB", "4 GiB")
    assert found["block size"] == ("the workload's own", "512 KiB")


def test_a_hosts_recipe_names_its_machines_as_run_hosts_does(tmp_path):
    one = stored_recipe_run(tmp_path, "one", 'kind = "kb2014"',
                            hosts='[hosts]\nnames = ["10.0.0.5"]\npath = "/srv/backup"\n')
    two = stored_recipe_run(tmp_path, "two", 'kind = "kb2014"',
                            hosts='[hosts]\nnames = ["10.0.0.5", "10.0.0.6"]\npath = "/srv/backup"\n')
    assert {d.setting: d.values for d in settings_differences([one, two])} == \
        {"hosts (fio --client)": ("10.0.0.5", "10.0.0.5, 10.0.0.6")}


def test_verdict_names_winner_margin_and_member_disk_evidence():
    verdict = phase_verdict("restore-random", [("lvm-linear", op("restore-random", 205, util=97.0, repeated=True)),
                                               ("lvm-striped", op("restore-random", 412, util=38.0, repeated=True))])
    assert verdict.winner == "lvm-striped"
    assert verdict.text == ("lvm-striped wins restore-random: 412.0 MiB/s vs 205.0 MiB/s for lvm-linear "
                            "(2.01x faster); its member disks were 38% busy against 97%")


def test_verdict_falls_back_to_latency_and_says_when_there_is_no_winner():
    verdict = phase_verdict("restore-random", [("a", op("x", 100, p99_ms=9.8, repeated=True)),
                                               ("b", op("x", 300, p99_ms=3.1, repeated=True)),
                                               ("c", op("x", 150, repeated=True))])
    assert verdict.text == ("b wins restore-random: 300.0 MiB/s vs 150.0 MiB/s for c, the next best (2.00x faster)")
    verdict = phase_verdict("restore-random", [("a", op("x", 100, p99_ms=9.8, repeated=True)),
                                               ("b", op("x", 300, p99_ms=3.1, repeated=True))])
    assert verdict.text.endswith("(3.00x faster); its read p99 latency was 3.10 ms against 9.80 ms")
    tie = phase_verdict("active-full", [("a", op("x", 100, repeated=True)), ("b", op("x", 101, repeated=True))])
    assert tie.winner is None
    assert tie.text.startswith("no clear winner in active-full: b 101.0 MiB/s vs 100.0 MiB/s for a "
                               "(no difference beyond noise (±")
    assert phase_verdict("active-full", [("a", op("x", 100))]) is None
    assert overall_verdict([verdict, tie]) == "Overall: b is the fastest in 1 of 2 phases compared"
    assert overall_verdict([verdict]) is None


def test_a_verdict_on_one_sample_names_no_winner_and_asks_for_repeats():
    # Issue 37: "b leads" named a winner all the same; one sample names none, not even a leader,
    # and the evidence (which read as why it won) is left out.
    verdict = phase_verdict("restore-random", [("a", op("x", 100, util=97.0)), ("b", op("x", 300, util=38.0))])
    assert verdict.winner is None
    assert verdict.text == (f"no winner in restore-random on one sample: b 300.0 MiB/s vs 100.0 MiB/s for a "
                            f"(3.00x faster {ONE_SAMPLE})")
    assert overall_verdict([verdict, verdict]) is None
    # One side measured several times, the other once: still one sample, and said whose.
    mixed = phase_verdict("restore-random", [("a", op("x", 100, repeated=True)), ("b", op("x", 300))])
    assert mixed.winner is None and mixed.text.startswith("no winner in restore-random on one sample: b ")
    assert "(this side): noise unknown, measure with --repeat 3" in mixed.text and "leads" not in mixed.text


def test_layouts_compared_on_one_sample_name_no_leader_in_the_terminal():
    run = RunRecord("r", "recipe", "layouts", {}, status=COMPLETE)
    run.operations = [op(f"{layout}/restore-random", mib, util=util, layout=layout)
                      for layout, mib, util in (("linear", 205, 97.0), ("striped", 412, 38.0))]
    text = " ".join(text_of(run_report(run)).split())
    assert ("Verdict: no winner in restore-random on one sample: striped 412.0 MiB/s vs 205.0 MiB/s for linear "
            f"(2.01x faster {ONE_SAMPLE})") in text
    assert "leads" not in text and "wins" not in text and "busy against" not in text


def test_runs_are_called_by_label_and_shared_labels_stay_apart():
    runs = [kb_run("id1", {}, label="raid6"), kb_run("id2", {}), kb_run("id3", {}, label="raid6")]
    assert run_names(runs) == ["raid6 (id1)", "id2", "raid6 (id3)"]


def test_restore_range_is_low_to_high_in_show_and_history_alike():
    # Flash: random restores beat sequential ones. Both views print the same low–high range.
    run = kb_run("flash", {"restore-sequential": 300, "restore-random": 400})
    assert (restore_range(run).low_bps, restore_range(run).high_bps) == (300 * MiB, 400 * MiB)
    shown, listed = text_of(run_report(run)), text_of(history_table([run]))
    assert "Restore range: 300.0–400.0 MiB/s" in shown and "300.0–400.0" in listed
    # One restore operation: no range, but its speed (issue 42: history showed "-").
    one = text_of(history_table([kb_run("one", {"active-full": 100, "restore-random": 250})]))
    assert "250.0 (random only)" in one


def test_show_with_a_baseline_lists_differing_settings_above_the_comparison():
    baseline = kb_run("base", {"active-full": 100, "restore-random": 400}, label="jobs1")
    run = kb_run("new", {"active-full": 200, "restore-random": 400}, jobs=4)
    text = text_of(run_report(run, baseline=baseline))
    assert text.index("Settings differ") < text.index("Against baseline jobs1 (base)")
    assert re.search(r"jobs \(fio numjobs\)\s+│ 1\s+│ 4", text)
    assert re.search(r"active-full\s+│\s+100.0 MiB/s │\s+200.0 MiB/s │\s+2.00x faster on one sample", text)
    assert re.search(r"restore-random .* no difference \(1.00x\) on one sample \(each side\): noise unknown, measure with "
                     r"--repeat 3", text)
    assert "slowdown" not in text
    same = text_of(run_report(kb_run("again", {"active-full": 100}), baseline=baseline))
    assert "Same settings: baseline jobs1 and this run again ran the same workload the same way." in same


def test_layouts_compared_say_faster_or_slower_and_give_a_verdict():
    run = RunRecord("r", "recipe", "layouts", {}, status=COMPLETE)
    run.operations = [op(f"{layout}/restore-random", mib, util=util, layout=layout, repeated=True)
                      for layout, mib, util in (("linear", 205, 97.0), ("striped", 412, 38.0))]
    matrix = layout_matrix(run)
    assert matrix is not None and matrix.verdict("restore-random").winner == "striped"
    text = text_of(run_report(run))
    assert "412.0 (2.01x faster)" in text
    assert "Verdict: striped wins restore-random: 412.0 MiB/s vs 205.0 MiB/s for linear (2.01x faster)" in text


def test_history_shows_what_each_run_moved_or_held_not_a_zero_or_one_files_size():
    s3 = RunRecord("s3run", "s3", "http://127.0.0.1:9000", {"objects": 2000, "object_size": MiB}, status=COMPLETE)
    s3.operations = [OperationRecord(name="put", pattern="PUT", status=COMPLETE,
                                     figures={"bytes": 2000.0 * MiB, "effective_bw": 100.0 * MiB}),
                     OperationRecord(name="get", pattern="GET", status=COMPLETE, figures={"bytes": 4000.0 * MiB})]
    planned = RunRecord("s3plan", "s3", "http://127.0.0.1:9000", {"objects": 2000, "object_size": MiB})
    files = RunRecord("files", "smallfiles", "/srv", {"files": 20_000, "file_size": 64 * 1024, "folders": 20})
    kb = kb_run("kb", {"active-full": 100})
    assert [run_size_text(run) for run in (s3, planned, files, kb)] == [
        "2.0 GiB PUT", "2,000 x 1 MiB", "1.2 GiB (20,000 x 64 KiB)", "1 GiB"]
    listed = text_of(history_table([s3, files]))
    assert "2.0 GiB PUT" in listed and "1.2 GiB (20,000 x 64 KiB)" in listed and " 0 B " not in listed
