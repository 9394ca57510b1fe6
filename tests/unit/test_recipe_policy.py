"""A recipe's [policy]: the same fields as `size repository`'s flags, validated by the same model,
did-you-mean for typos, one line for what contradicts itself; its layouts as the candidates, and
the plan of a stored run at the speeds it measured."""

import pytest

from backupbench.errors import InputError, RecipeError
from backupbench.recipe import model
from backupbench.recipe.policy import BackupPolicy, PolicyTable
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.sizing.measured_speeds import MeasuredLayout
from backupbench.sizing.policy import RepositoryOptions
from backupbench.sizing.recipe_plan import plan_of_run, recipe_candidates
from backupbench.stats import spread

DEVICES = [f"/dev/vd{c}" for c in "bcdefg"]
POLICY = {"protected": "50TB", "change_rate": "5%", "dailies": 30, "weeklies": 8, "monthlies": 12, "yearlies": 3,
          "disks": 24, "disk_size": "16TB", "disk_speed": "250MB/s"}
LAYOUTS = [{"name": "r6", "kind": "mdraid", "level": 6, "devices": DEVICES},
           {"name": "dr", "kind": "zfs", "vdev": "draid2", "draid_data": 3, "draid_spares": 1, "devices": DEVICES},
           {"name": "lin", "kind": "lvm-linear", "devices": DEVICES}]
TB = 10**12
MB_S = 10**6


def recipe(**policy):
    return model.parse({"name": "plan", "devices": DEVICES, "layout": LAYOUTS, "workload": [{"kind": "kb2014"}],
                        "policy": {**POLICY, **policy}})


def test_the_policy_table_is_the_flags_model():
    table = recipe().policy
    assert isinstance(table, BackupPolicy) and isinstance(table, PolicyTable)
    assert (table.protected, table.change_rate, table.dailies, table.disks, table.disk_size) == (50 * TB, 5.0, 30, 24,
                                                                                               16 * TB)
    # Every policy and disk field of the table is a flag of `size repository` (one model, two spellings).
    assert set(PolicyTable.model_fields) <= set(RepositoryOptions.model_fields)
    assert table.policy() == BackupPolicy.model_validate({k: POLICY[k] for k in POLICY if k in BackupPolicy.model_fields})


@pytest.mark.parametrize("typo, meant", [("weeklis", "weeklies"), ("chnage_rate", "change_rate"),
                                         ("disk_sise", "disk_size")])
def test_a_typo_in_policy_gets_did_you_mean(typo, meant):
    data = {**POLICY, typo: 1}
    data.pop(meant, None)
    with pytest.raises(RecipeError) as caught:
        recipe(**{typo: 1}) if meant not in POLICY else model.parse(
            {"name": "plan", "devices": DEVICES, "layout": LAYOUTS, "workload": [{"kind": "kb2014"}], "policy": data})
    assert f"policy.{typo}" in caught.value.message and f"did you mean {meant!r}" in caught.value.message
    assert "\n" not in caught.value.message


def test_contradictory_retention_is_one_line_naming_the_keys():
    with pytest.raises(RecipeError) as caught:
        recipe(method="forever-forward")
    assert caught.value.message == ("recipe: policy: weeklies = 8, monthlies = 12, yearlies = 3 with method = "
                                    "forever-forward: GFS keeps periodic fulls, and forever-forward never makes one "
                                    "(use method = forward-synthetic or forward-active, or drop the GFS counts)")
    with pytest.raises(RecipeError, match=r"policy: rto needs restore_size"):
        recipe(rto="4h")


@pytest.mark.parametrize("key, value, message", [("protected", "0", "policy.protected: must be more than 0 bytes"),
                                                 ("disk_size", "0", "policy.disk_size: must be more than 0 bytes"),
                                                 ("disks", 1, "policy.disks: Input should be greater than or equal "
                                                              "to 2")])
def test_zero_sizes_are_refused(key, value, message):
    with pytest.raises(RecipeError) as caught:
        recipe(**{key: value})
    assert caught.value.message.startswith(f"recipe: {message}")


def test_policy_with_hosts_is_refused():
    with pytest.raises(RecipeError, match=r"\[policy\] plans a repository on the recipe's layouts"):
        model.parse({"name": "h", "hosts": {"names": ["10.0.0.5"], "path": "/srv/backup"}, "workload": [{"kind": "kb2014"}],
                     "policy": POLICY})


def test_recipe_layouts_become_candidates_on_the_planned_disks():
    specs, notes = recipe_candidates([dict(entry) for entry in LAYOUTS], 24, 16 * TB)
    assert [(spec.layout, spec.disks, spec.draid_data, spec.draid_spares) for spec in specs] == [
        ("raid6", 24, None, None), ("draid2", 24, 3, 1)]
    assert notes == ["layout lin (lvm-linear) is not a candidate: size does not model its kind"]
    with pytest.raises(InputError, match="none of the recipe's layouts"):
        recipe_candidates([LAYOUTS[2]], 24, 16 * TB)


def _run(speeds_by_layout: dict[str, tuple[int, int]], **policy) -> RunRecord:
    run = RunRecord(run_id="20261201T000000-abcd", kind="recipe", target="lab",
                    settings={"recipe": recipe(**policy).model_dump(mode="json")}, status=COMPLETE)
    for name, (full, synthetic) in speeds_by_layout.items():
        for operation, mb_s in (("active-full", full), ("synthetic-full", synthetic)):
            run.operations.append(OperationRecord(name=f"{name}/{operation}", pattern="", status=COMPLETE,
                                                  figures={"effective_bw": mb_s * MB_S}, layout=name))
    return run


def test_a_run_with_a_policy_plans_at_its_own_speeds():
    plan = plan_of_run(_run({"dr": (1500, 400)}))
    assert plan is not None and [c.layout for c in plan.candidates] == ["raid6", "draid2"]
    draid = next(c for c in plan.candidates if c.layout == "draid2")
    raid6 = next(c for c in plan.candidates if c.layout == "raid6")
    # dr measured on the recipe's 6 devices, planned on the table's 24: draid2:3d:1s writes (6 - 1) x 3/5 = 3 disks'
    # worth of data on 6 and (24 - 1) x 3/5 = 13.8 on 24 (sizing/scaled_speeds.py).
    full = draid.speeds["active-full"]
    assert full.source == "measured" and full.value == pytest.approx(1500 * MB_S * 13.8 / 3)
    assert full.label == "measured on 6, scaled to 24"
    assert raid6.speeds["active-full"].source == "model"  # the run did not measure r6: the table's disk_speed
    assert "layout lin (lvm-linear) is not a candidate: size does not model its kind" in plan.notes
    assert plan_of_run(RunRecord(run_id="x", kind="recipe", target="t", settings={"recipe": {}})) is None


def test_fio_on_a_minio_ec_layout_is_not_taken_as_its_speed():
    # fio on minio-ec runs on one drive's filesystem: 50 MiB/s there says nothing of the erasure set.
    layouts = [*LAYOUTS, {"name": "ec", "kind": "minio-ec", "devices": DEVICES}]
    stored = model.parse({"name": "plan", "devices": DEVICES, "layout": layouts, "workload": [{"kind": "kb2014"}],
                          "policy": POLICY})
    run = RunRecord(run_id="20261201T000000-abcd", kind="recipe", target="lab",
                    settings={"recipe": stored.model_dump(mode="json")}, status=COMPLETE)
    for name in ("dr", "ec"):
        run.operations.append(OperationRecord(name=f"{name}/active-full", pattern="", status=COMPLETE,
                                              figures={"effective_bw": 50 * MB_S}, layout=name))
    plan = plan_of_run(run)
    assert plan is not None
    ec = next(c for c in plan.candidates if c.layout.startswith("minio-ec"))
    draid = next(c for c in plan.candidates if c.layout == "draid2")
    assert ec.speeds["active-full"].source == "model" and draid.speeds["active-full"].source == "measured"
    assert any("layout ec: fio measured one drive's filesystem, not MinIO's erasure set" in note for note in ec.notes)


def test_a_stored_run_still_tells_the_default_reduction_from_a_written_one():
    defaulted = plan_of_run(_run({"dr": (1500, 400)}))
    written = plan_of_run(_run({"dr": (1500, 400)}, reduction="3:1"))
    assert defaulted is not None and defaulted.reduction_source.startswith("default 2:1")
    assert written is not None and written.reduction_source == "given" and written.policy.reduction == 3.0


def test_several_runs_of_a_layout_give_an_interval():
    first = MeasuredLayout("a", "dr", "draid2", "zfs", 6, {"active-full": 1000.0})
    joined = first.joined(MeasuredLayout("b", "dr", "draid2", "zfs", 6, {"active-full": 1200.0})).joined(
        MeasuredLayout("c", "dr", "draid2", "zfs", 6, {"active-full": 1100.0}))
    speed = joined.speed("active-full")
    figure = spread([1000.0, 1200.0, 1100.0])
    # median 1100; mean 1100, stdev 100, t(2) = 4.303: 1100 -/+ 4.303 * 100 / sqrt(3) = 851.6 .. 1348.4
    assert speed.value == 1100.0 and speed.samples == 3 and not speed.uncertain
    assert speed.low == pytest.approx(figure.low) == pytest.approx(851.6, abs=0.1)
    assert speed.high == pytest.approx(1348.4, abs=0.1)
    assert first.speed("active-full").samples == 1 and first.speed("active-full").uncertain
