"""`backupbench size repository` as a user runs it: a real process, its stdout, stderr and exit
code; the --json document validated against the shipped schema; measured speeds from a store
the test made itself."""

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from backupbench.results import document
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.results.store import Store

TB = 10**12
MB_S = 10**6
CANDIDATES = ["--layout", "raid6,raidz2,draid2,minio-ec", "--draid-spares", "1", "--disks", "24",
              "--disk-size", "16TB", "--disk-speed", "250MB/s"]
FIELD_POLICY = ["--protected", "50TB", "--change-rate", "5%", "--dailies", "30", "--weeklies", "8",
                "--monthlies", "12", "--yearlies", "3", "--window", "8h"]


def validated(text: str) -> dict:
    data = json.loads(text)
    errors = sorted(Draft202012Validator(document.schema("size.repository")).iter_errors(data), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    return data


def test_the_field_plan_fits_no_candidate_and_says_what_would(cli):
    done = cli("size", "repository", *FIELD_POLICY, *CANDIDATES)
    assert done.returncode == 5
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "backupbench: No candidate meets the policy: the nearest, draid2:8d:24c:1s of 24 x 16 TB, misses window")
    out = " ".join(done.stdout.split())
    assert "Restore points at their peak: 30 dailies + 8 weeklies + 12 monthlies + 3 yearlies" in out
    assert "What would change it:" in out and "raid6: block clone on and 32 disks of 16 TB (8 more)" in out
    assert "from the per-disk model, not measured: uncertain" in out


def test_a_passing_plan_as_json(cli):
    done = cli("size", "repository", *FIELD_POLICY, "--monthlies", "4", "--yearlies", "1", "--block-clone",
               "--restore-size", "2TB", "--rto", "8h", "--afr", "1%", *CANDIDATES, "--json")
    assert done.returncode == 0, done.stderr
    data = validated(done.stdout)
    assert data["kind"] == "backupbench.size.repository"
    assert data["verdict"]["recommended"] == "draid2" and data["verdict"]["ranking"][0] == "draid2"
    assert data["retention"]["total_bytes"][-1] == 214_500_000_000_000  # test_sizing_repository_plan by hand
    draid = next(c for c in data["candidates"] if c["layout"] == "draid2")
    assert draid["built"] == "draid2:8d:24c:1s" and draid["usable_bytes"] == 294_256_036_249_167
    assert draid["speeds"]["active-full"]["source"] == "model" and draid["rebuild"]["another_failure_percent"] > 0
    # All four pass; ranked by the hours a disk failure leaves them exposed: dRAID's distributed spare first,
    # then the copy-on-write layouts rebuilding only what is allocated, md RAID 6 (every byte) last.
    assert all(c["passed"] for c in data["candidates"])
    assert data["verdict"]["ranking"] == ["draid2", "raidz2", "minio-ec", "raid6"]
    raid6 = next(c for c in data["candidates"] if c["layout"] == "raid6")
    assert raid6["binding"] == "restore" and raid6["rebuild"]["seconds"] == pytest.approx(16 * TB / (250 * MB_S))


@pytest.mark.parametrize("extra, message", [
    (["--method", "forever-forward"], "--weeklies 8, --monthlies 12, --yearlies 3 with --method forever-forward: "
                                      "GFS keeps periodic fulls, and forever-forward never makes one"),
    (["--rto", "4h"], "--rto needs --restore-size: the size of the restore it is for"),
    (["--protected", "0"], "--protected: must be more than 0 bytes"),
    (["--disk-size", "0"], "--disk-size: must be more than 0 bytes"),
    (["--layout", "raid0,draid2"], "raid0 has no redundancy: a failed disk loses the backups"),
    (["--reduction", "1:2"], "--reduction: not a ratio: '1:2'"),
])
def test_bad_input_is_one_line(cli, extra, message):
    done = cli("size", "repository", *FIELD_POLICY, *CANDIDATES, *extra)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"backupbench: {message}") and done.stderr.count("\n") == 1


def _store_a_lab_run(results, run_id: str = "20261201T000000-abcd", scale: float = 1.0) -> str:
    """An `apply` run of a recipe with an md RAID 6 and a dRAID2 layout, as the lab stores it."""
    store = Store(results / "results.db")
    entries = [{"name": "r6", "kind": "mdraid", "level": 6, "devices": [f"/dev/vd{c}" for c in "bcdefghijklmnopq"]},
               {"name": "dr", "kind": "zfs", "vdev": "draid2", "draid_data": 3, "draid_spares": 2,
                "devices": [f"/dev/vd{c}" for c in "bcdefghijklmnopq"]}]
    run = RunRecord(run_id=run_id, kind="recipe", target="lab", settings={"recipe": {"layout": entries}},
                    status=COMPLETE)
    store.create_run(run)
    seq = 0
    for name, speeds in (("r6", (1200, 90, 900, 60)), ("dr", (1500, 400, 1400, 80))):
        for operation, mb_s in zip(("active-full", "synthetic-full", "restore-sequential", "restore-random"), speeds):
            store.save_operation(run.run_id, seq, OperationRecord(
                name=f"{name}/{operation}", pattern="", status=COMPLETE, figures={"effective_bw": round(mb_s * scale) * MB_S},
                layout=name))
            seq += 1
    return run.run_id


def test_measured_speeds_from_a_stored_run(cli):
    cli.results.mkdir(parents=True)
    run_id = _store_a_lab_run(cli.results)
    done = cli("size", "repository", *FIELD_POLICY, "--monthlies", "4", "--yearlies", "1", "--block-clone",
               "--layout", "raid6,draid2", "--draid-spares", "1", "--disks", "24", "--disk-size", "16TB",
               "--from-run", run_id, "--rebuild-rate", "200MB/s", "--json")
    assert done.returncode == 0, done.stderr
    data = validated(done.stdout)
    speeds = {c["layout"]: c["speeds"]["active-full"] for c in data["candidates"]}
    # Measured on 16 disks, planned on 24: scaled through the per-disk model (RAID 6: 14 data disks to 22).
    assert speeds["raid6"]["source"] == "measured" and speeds["raid6"]["value"] == pytest.approx(1200 * MB_S * 22 / 14)
    assert (speeds["raid6"]["scaling"]["measured_disks"], speeds["raid6"]["scaling"]["planned_disks"]) == (16, 24)
    assert speeds["draid2"]["samples"] == 1 and speeds["draid2"]["scaling"]["how"] == "scaled"
    assert any("measured once" in line for line in data["verdict"]["uncertain"])
    unscaled = cli("size", "repository", *FIELD_POLICY, "--monthlies", "4", "--yearlies", "1", "--block-clone",
                   "--layout", "raid6", "--disks", "24", "--disk-size", "16TB", "--from-run", run_id,
                   "--rebuild-rate", "200MB/s", "--no-scale", "--json")
    assert unscaled.returncode == 0, unscaled.stderr
    (raid6,) = validated(unscaled.stdout)["candidates"]
    assert raid6["speeds"]["active-full"]["value"] == 1200 * MB_S
    assert raid6["speeds"]["active-full"]["scaling"]["how"] == "not-scaled"
    assert any("taken as measured, not scaled (--no-scale)" in note for note in raid6["notes"])
    refused = cli("size", "repository", *FIELD_POLICY, "--layout", "raidz2", "--disks", "24", "--disk-size", "16TB",
                  "--from-run", f"raidz2={run_id[:12]}")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"backupbench: run {run_id} measured draid2 and raid6, not raidz2: a run of "
                                     "another layout cannot give raidz2's speeds")


SCALED_RUN = "20261128T090000-5ca1ed00"
# docs/sizing.md's plan from a run on 6 disks, scaled to 24 (as the page shows it).
SCALED_COMMAND = ["size", "repository", "--protected", "50TB", "--change-rate", "5%", "--dailies", "30", "--weeklies",
                  "8", "--monthlies", "4", "--yearlies", "1", "--restore-size", "2TB", "--rto", "8h", "--layout", "raidz2",
                  "--disks", "24", "--disk-size", "16TB", "--rebuild-rate", "200MB/s", "--from-run", SCALED_RUN]


def _store_a_raidz2_run_on_six_disks(results) -> None:
    """docs/sizing.md's run, written by hand: one raidz2 layout of 6 disks with a member baseline."""
    store = Store(results / "results.db")
    entry = {"name": "z", "kind": "zfs", "vdev": "raidz2", "devices": [f"/dev/vd{c}" for c in "bcdefg"]}
    store.create_run(RunRecord(run_id=SCALED_RUN, kind="recipe", target="lab", settings={"recipe": {"layout": [entry]}},
                               status=COMPLETE))
    ops = [OperationRecord(name="z/member", pattern="", status=COMPLETE, layout="z", state="member",
                           figures={"member_bytes": 8e9, "read_bw": 200 * MB_S, "write_bw": 190 * MB_S})]
    for operation, mb_s in (("active-full", 700), ("synthetic-full", 90), ("restore-sequential", 760),
                            ("restore-random", 70)):
        ops.append(OperationRecord(name=f"z/healthy/{operation}", pattern="", status=COMPLETE, layout="z",
                                   state="healthy", figures={"effective_bw": mb_s * MB_S}))
    for seq, op in enumerate(ops):
        store.save_operation(SCALED_RUN, seq, op)


def test_the_pages_plan_scaled_from_six_disks_to_24(cli):
    cli.results.mkdir(parents=True)
    _store_a_raidz2_run_on_six_disks(cli.results)
    done = cli(*SCALED_COMMAND)
    assert done.returncode == 5, done.stderr  # the synthetic full misses the window
    said = " ".join(done.stdout.split())
    assert ("speeds of run 20261128T090000-5ca1ed00, layout z (6 disks) scaled from 6 to 24 disks through the per-disk "
            "model at 190.7 MiB/s a disk (member baseline): active-full x 5.50, synthetic-full x 1.13, "
            "restore-sequential x 5.50, restore-random x 1.07") in said
    assert "misses window by 62.5 h" in done.stderr
    kept = cli(*SCALED_COMMAND, "--no-scale", "--json")
    (raidz2,) = validated(kept.stdout)["candidates"]
    assert raidz2["speeds"]["synthetic-full"]["value"] == 90 * MB_S
    assert raidz2["speeds"]["synthetic-full"]["scaling"]["how"] == "not-scaled"


RECIPE = Path(__file__).parents[2] / "examples" / "repository-plan.toml"


def test_a_recipe_policy_plans_its_layouts(cli, tmp_path):
    done = cli("size", "repository", "--recipe", str(RECIPE), "--json")
    assert done.returncode == 5  # the example's policy fits none of them without block clone
    data = validated(done.stdout)
    assert [c["built"] for c in data["candidates"]] == ["raid6", "raidz2", "draid2:3d:24c:1s",
                                                       "minio-ec EC:4, 2 sets of 12"]
    assert data["policy"]["dailies"] == 30 and data["candidates"][0]["disks"] == 24
    # A flag given as well overrides the table.
    passing = cli("size", "repository", "--recipe", str(RECIPE), "--block-clone", "--monthlies", "4",
                  "--yearlies", "1", "--json")
    assert passing.returncode == 0, passing.stderr
    assert validated(passing.stdout)["verdict"]["recommended"] is not None
    bare = tmp_path / "bare.toml"
    bare.write_text("\n".join(line for line in RECIPE.read_text().splitlines() if not line.startswith(
        ("[policy]", "protected", "change_rate", "reduction", "dailies", "weeklies", "monthlies", "yearlies", "window",
         "disks", "disk_size", "disk_speed"))))
    refused = cli("size", "repository", "--recipe", str(bare))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"backupbench: {bare} has no [policy] table")


@pytest.mark.parametrize("extra, message", [
    (["--layout", "raid6"], "--layout with --recipe: the candidates are the recipe's layouts"),
    (["--method", "reverse-incremental"], "--weeklies 8, --monthlies 12, --yearlies 3 with --method "
                                          "reverse-incremental: GFS keeps periodic fulls"),
    (["--disk-size", "0"], "--disk-size: must be more than 0 bytes"),
])
def test_bad_input_with_a_recipe_is_one_line(cli, extra, message):
    done = cli("size", "repository", "--recipe", str(RECIPE), *extra)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.startswith(f"backupbench: {message}") and done.stderr.count("\n") == 1


def test_a_policy_that_fits_nowhere_says_by_how_much(cli):
    # 500 TB protected: about 2.3 PB of restore points against raid6's 352 TB usable.
    done = cli("size", "repository", *FIELD_POLICY, "--protected", "500TB", "--block-clone", *CANDIDATES)
    assert done.returncode == 5 and done.stderr.count("\n") == 1
    assert re.match(r"backupbench: No candidate meets the policy: the nearest, \S+ of 24 x 16 TB, misses capacity by "
                    r"[\d,.]+ [PT]B \(\d+% over its limit\)", done.stderr), done.stderr


def test_several_runs_of_a_layout_bound_the_margins_by_their_interval(cli):
    cli.results.mkdir(parents=True)
    first = _store_a_lab_run(cli.results)
    second = _store_a_lab_run(cli.results, run_id="20261202T000000-abce", scale=1.1)
    done = cli("size", "repository", *FIELD_POLICY, "--monthlies", "4", "--yearlies", "1", "--block-clone",
               "--layout", "raid6", "--disks", "24", "--disk-size", "16TB", "--from-run", f"{first},{second}",
               "--rebuild-rate", "200MB/s", "--json")
    assert done.returncode == 0, done.stderr
    speed = validated(done.stdout)["candidates"][0]["speeds"]["active-full"]
    # The median of 1200 and 1320, scaled from 16 disks to 24 (RAID 6: 14 data disks to 22).
    assert speed["samples"] == 2 and speed["value"] == pytest.approx(1260 * MB_S * 22 / 14)
    assert speed["low"] < 1200 * MB_S * 22 / 14 < 1320 * MB_S * 22 / 14 < speed["high"]
    assert any("(2 samples): a wide interval" in line for line in validated(done.stdout)["verdict"]["uncertain"])


def test_an_aging_run_gives_the_restores_at_the_age_planned_for(cli):
    from aging_support import aging_run

    cli.results.mkdir(parents=True)
    store = Store(cli.results / "results.db")
    run = aging_run("20261203T000000-a9e1")
    store.create_run(run)
    for seq, op in enumerate(run.operations):
        store.save_operation(run.run_id, seq, op)
    policy = [*FIELD_POLICY, "--monthlies", "4", "--yearlies", "1", "--block-clone", "--restore-size", "2TB",
              "--rto", "8h", "--layout", "raid6", "--disks", "24", "--disk-size", "16TB", "--disk-speed", "250MB/s"]
    done = cli("size", "repository", *policy, "--from-run", f"raid6={run.run_id}", "--at-age", "20d", "--json")
    assert done.returncode == 0, done.stderr
    (raid6,) = validated(done.stdout)["candidates"]
    assert (raid6["aged"]["day"], raid6["aged"]["asked_days"], raid6["aged"]["space_vs_plan"]) == (28, 20, 0.95)
    assert raid6["speeds"]["restore-sequential"]["value"] == 800 * 1024 * 1024
    shown = cli("size", "repository", *policy, "--from-run", f"raid6={run.run_id}")
    assert shown.returncode == 0, shown.stderr
    assert "As the repository ages" in shown.stdout and "day 42 of 42 (its last day, by default)" in \
        " ".join(shown.stdout.split())
    for extra, message in ((["--from-run", f"raid6={run.run_id}", "--at-age", "60d"],
                            f"--at-age 60d: aging run {run.run_id} measured days 0 to 42"),
                           (["--at-age", "20d"], "--at-age without --from-run"),
                           (["--from-run", f"raid6={_store_a_lab_run(cli.results)}", "--at-age", "20d"],
                            "--at-age: no run given to --from-run aged a repository")):
        refused = cli("size", "repository", *policy, *extra)
        assert refused.returncode == 2 and refused.stderr.startswith(f"backupbench: {message}"), refused.stderr
