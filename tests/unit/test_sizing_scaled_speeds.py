"""Speeds that say where they come from (issue 41, item 4): a speed measured on a few disks is
scaled to the plan's through the per-disk model, its interval widened, and the plan says so;
--no-scale keeps it as measured, labelled; a run whose disks are not known keeps "measured"."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator
from rich.console import Console

from backupbench.cli import documents
from backupbench.cli import options as cli_options
from backupbench.errors import InputError, RecipeError
from backupbench.recipe import model
from backupbench.report.repository import repository_report
from backupbench.results import document
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.measured_speeds import assign, measured_layouts
from backupbench.sizing.policy import BackupPolicy, DiskModel, RepositoryOptions
from backupbench.sizing.recipe_plan import plan_of_run
from backupbench.sizing.repository_plan import plan_repository

TB = 10**12
MB_S = 10**6
BLOCK = 512 * 1024
ACCESS = 0.008
POLICY = BackupPolicy(protected=50 * TB, change_rate=5.0, dailies=30, weeklies=8, restore_size=2 * TB, rto=8 * 3600.0)
SPEEDS = {"active-full": 900 * MB_S, "synthetic-full": 300 * MB_S, "restore-sequential": 1000 * MB_S,
          "restore-random": 200 * MB_S}


def _run(disks: int = 6, member_read: float | None = 200 * MB_S, figures: dict[str, float] | None = None,
         run_id: str = "20261201T000000-aaaa") -> RunRecord:
    """An apply run of one raidz2 layout "z" on `disks` devices; with a fault's member baseline
    when `member_read` is given."""
    entry = {"name": "z", "kind": "zfs", "vdev": "raidz2", "devices": [f"/dev/vd{chr(98 + i)}" for i in range(disks)]}
    run = RunRecord(run_id=run_id, kind="recipe", target="lab", settings={"recipe": {"layout": [entry]}})
    if member_read is not None:
        run.operations.append(OperationRecord(name="z/member", pattern="", status=COMPLETE, layout="z", state="member",
                                              figures={"member_bytes": 1e9, "read_bw": member_read,
                                                       "write_bw": member_read / 2}))
    for operation, bw in SPEEDS.items():
        run.operations.append(OperationRecord(name=f"z/{operation}", pattern="", status=COMPLETE, layout="z",
                                              figures={"effective_bw": bw, **(figures or {})}))
    return run


def _plan(run: RunRecord, disks: int = 24, pin: str | None = None, **disk):
    """The plan of raidz2 on `disks` disks at `run`'s speeds; `disk`: DiskModel's fields (a
    rebuild rate given, since these runs measured no rebuild)."""
    chosen = assign(["raidz2"], [(pin, run.run_id, measured_layouts(run))])
    model = DiskModel.model_validate({"rebuild_rate": 100 * MB_S, **disk})
    plan = plan_repository(POLICY, model, [LayoutSpec("raidz2", (16 * TB,) * disks)], chosen)
    return plan, plan.candidates[0]


def _random_read(data_disks: int, speed: float) -> float:
    """operation_model's random 512 KiB read of a raidz vdev: one at a time, a seek, then its data disks share it."""
    return BLOCK / (ACCESS + BLOCK / (data_disks * speed))


def test_the_scaled_figure_is_the_arithmetic():
    plan, raidz2 = _plan(_run())
    full = raidz2.speeds["active-full"]
    # A large write on raidz2: 22 data columns of 24 against 4 of 6; the disk's speed cancels.
    assert full.value == pytest.approx(900 * MB_S * 22 / 4)
    assert full.low == pytest.approx(900 * MB_S * 5.5 ** 0.75) and full.high == pytest.approx(900 * MB_S * 5.5 ** 1.25)
    assert full.label == "measured on 6, scaled to 24" and full.source == "measured" and full.scaled
    scaling = full.scaling
    assert scaling is not None and (scaling.how, scaling.measured_disks, scaling.planned_disks) == ("scaled", 6, 24)
    assert scaling.factor == pytest.approx(5.5)
    assert (scaling.disk_speed, scaling.disk_speed_from) == (200 * MB_S, "member baseline")
    # A random read does not scale with the data disks alone: the seek stays, the transfer is shared.
    random = raidz2.speeds["restore-random"]
    ratio = _random_read(22, 200 * MB_S) / _random_read(4, 200 * MB_S)
    # (8 ms + 512 KiB / (4 x 200 MB/s)) / (8 ms + 512 KiB / (22 x 200 MB/s)) = 8.655 / 8.119 ms
    assert random.value == pytest.approx(200 * MB_S * ratio) and ratio == pytest.approx(1.0660, abs=1e-4)
    assert random.low == pytest.approx(200 * MB_S * ratio ** 0.75)
    # The margins use the widened low bound: the restore's worst time is at it.
    assert raidz2.restore is not None and raidz2.restore.worst_seconds == pytest.approx(1 * TB / random.low)
    assert any("scaled from 6 to 24 disks through the per-disk model" in note and "active-full x 5.50" in note
               for note in raidz2.notes)
    assert "raidz2: active-full, synthetic-full, restore-sequential, restore-random measured on 6, scaled to 24 " \
           "through the per-disk model: the margins use its widened low bound" in plan.verdict.uncertain


def test_fewer_disks_scale_down_as_wide():
    _, raidz2 = _plan(_run(disks=24), disks=6)
    full = raidz2.speeds["active-full"]
    assert full.value == pytest.approx(900 * MB_S * 4 / 22) and full.label == "measured on 24, scaled to 6"
    assert full.low == pytest.approx(900 * MB_S * (4 / 22) ** 1.25) and full.high == pytest.approx(
        900 * MB_S * (4 / 22) ** 0.75)


def test_the_column_says_where_each_speed_comes_from():
    plan, _ = _plan(_run())
    console = Console(width=300, record=True)
    for part in repository_report(plan):
        console.print(part)
    lines = [line for line in console.export_text().splitlines() if "weekly synthetic full" in line]
    assert lines and "measured on 6, scaled to 24" in lines[0]


def test_no_scale_keeps_the_measured_figure_labelled():
    _, raidz2 = _plan(_run(), no_scale=True)
    full = raidz2.speeds["active-full"]
    assert (full.value, full.low, full.high) == (900 * MB_S,) * 3
    assert full.label == "measured on 6, not scaled" and not full.scaled
    assert full.scaling is not None and full.scaling.how == "not-scaled" and full.scaling.factor is None
    assert any("the plan has 24 disks; taken as measured, not scaled (--no-scale)" in note for note in raidz2.notes)


def test_no_scale_is_a_flag_and_a_policy_key():
    options = cli_options.build(RepositoryOptions, {"protected": "50TB", "change_rate": "5%", "no_scale": True})
    assert options.disk().no_scale is True
    assert cli_options.build(RepositoryOptions, {"protected": "50TB", "change_rate": "5%",
                                                 "no_scale": False}).disk().no_scale is False
    layout = {"name": "z", "kind": "zfs", "vdev": "raidz2", "devices": [f"/dev/vd{c}" for c in "bcdefg"]}
    recipe = {"name": "p", "devices": layout["devices"], "layout": [layout], "workload": [{"kind": "kb2014"}],
              "policy": {"protected": "50TB", "change_rate": "5%", "disks": 24, "disk_size": "16TB",
                         "disk_speed": "250MB/s", "no_scale": True}}
    run = RunRecord(run_id="20261201T000000-bbbb", kind="recipe", target="lab", status=COMPLETE,
                    settings={"recipe": model.parse(recipe).model_dump(mode="json")})
    run.operations.append(OperationRecord(name="z/active-full", pattern="", status=COMPLETE, layout="z",
                                          figures={"effective_bw": 900 * MB_S}))
    plan = plan_of_run(run)
    assert plan is not None and plan.candidates[0].speeds["active-full"].label == "measured on 6, not scaled"
    with pytest.raises(RecipeError, match="policy.no_scale: must be true or false, without quotes"):
        model.parse({**recipe, "policy": {**recipe["policy"], "no_scale": "yes"}})


def test_as_many_disks_as_planned_is_measured():
    _, raidz2 = _plan(_run(disks=24))
    full = raidz2.speeds["active-full"]
    assert full.value == 900 * MB_S and full.label == "measured"
    assert full.scaling is not None and full.scaling.how == "same" and full.uncertain  # one sample


def test_a_run_of_a_directory_keeps_measured_and_says_it_could_not_scale():
    run = RunRecord(run_id="20261201T000000-cccc", kind="kb2014", target="/srv", settings={})
    run.operations.append(OperationRecord(name="active-full", pattern="write", status=COMPLETE,
                                          figures={"effective_bw": 400 * MB_S}))
    _, raidz2 = _plan(run, disk_speed=250 * MB_S, pin="raidz2")
    full = raidz2.speeds["active-full"]
    assert full.value == 400 * MB_S and full.label == "measured"
    assert full.scaling is not None and full.scaling.how == "unknown" and full.scaling.measured_disks is None
    assert any("the disks it was measured on are not known (a run of a directory), so they are taken as "
               "measured, not scaled to the plan's 24 disks" in note for note in raidz2.notes)


def test_random_operations_need_a_disk_speed_the_sequential_ones_do_not():
    _, raidz2 = _plan(_run(member_read=None))
    assert raidz2.speeds["active-full"].label == "measured on 6, scaled to 24"
    assert raidz2.speeds["active-full"].scaling.disk_speed is None  # type: ignore[union-attr]
    assert raidz2.speeds["restore-random"].label == "measured on 6, not scaled"
    assert raidz2.speeds["restore-random"].value == 200 * MB_S
    assert any(note.startswith("synthetic-full, restore-random of run 20261201T000000-aaaa, layout z (6 disks): "
                               "not scaled to 24 disks (no one disk's speed") for note in raidz2.notes)
    # --disk-speed gives the model its disk when the run measured none.
    _, given = _plan(_run(member_read=None), disk_speed=200 * MB_S)
    assert given.speeds["restore-random"].value == pytest.approx(
        200 * MB_S * _random_read(22, 200 * MB_S) / _random_read(4, 200 * MB_S))
    assert given.speeds["restore-random"].scaling.disk_speed_from == "--disk-speed"  # type: ignore[union-attr]


def test_the_monitor_gives_a_disk_speed_without_a_member_baseline():
    _, raidz2 = _plan(_run(member_read=None, figures={"members_rMB_s": 150.0, "members_wMB_s": 120.0}))
    scaling = raidz2.speeds["restore-random"].scaling
    assert scaling is not None and scaling.how == "scaled" and scaling.disk_speed_from == "monitor"
    assert scaling.disk_speed == 150 * 1024**2


def test_runs_on_different_disk_counts_are_not_samples_of_one_figure():
    six, twelve = _run(), _run(disks=12, run_id="20261201T000000-dddd")
    with pytest.raises(InputError, match="speeds measured on 6 disks and 12 disks are not samples of one figure"):
        assign(["raidz2"], [(None, six.run_id, measured_layouts(six)), (None, twelve.run_id, measured_layouts(twelve))])


def test_the_document_carries_the_source_and_the_counts():
    plan, _ = _plan(_run())
    data = document.envelope("size.repository", plan.model_dump(mode="json"))
    assert documents.checked(data) is data
    Draft202012Validator(documents.schema("size.repository")).validate(data)
    full = data["candidates"][0]["speeds"]["active-full"]
    assert full["source"] == "measured"
    assert {key: full["scaling"][key] for key in ("how", "measured_disks", "planned_disks", "disk_speed_from")} == {
        "how": "scaled", "measured_disks": 6, "planned_disks": 24, "disk_speed_from": "member baseline"}
    assert full["scaling"]["factor"] == pytest.approx(5.5)
    assert data["disks"]["no_scale"] is False
