"""A repository plan worked out by hand: the per-disk model's speeds, one candidate against a
policy, the ranking and the sentence, what would make a rejected candidate pass, and measured
speeds taken from stored runs (and refused from a run of another layout)."""

import math

import pytest

from backupbench.errors import InputError
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.sizing.capacity import LayoutSpec
from backupbench.sizing.measured_speeds import assign, layout_kind, measured_layouts, parse_pin
from backupbench.sizing.operation_model import model_speeds
from backupbench.sizing.policy import BackupPolicy, DiskModel
from backupbench.sizing.repository_plan import evaluate, plan_repository
from backupbench.sizing.restore_points import retention_table

TB = 10**12
MB_S = 10**6
BLOCK = 512 * 1024
DISK = DiskModel(disk_speed=250 * MB_S, disk_access_time=0.008)


def spec(layout: str, disks: int = 24, size: int = 16 * TB, **params) -> LayoutSpec:
    return LayoutSpec(layout, (size,) * disks, **params)


def policy(**values) -> BackupPolicy:
    return BackupPolicy(**{"protected": "50TB", "change_rate": "5%", "dailies": 30, "weeklies": 8, **values})


def test_model_speeds_by_hand():
    raidz2 = model_speeds(spec("raidz2"), DISK)
    # Sequential write: 22 data columns x 250 MB/s; a 512 KiB read waits 8 ms, then 22 disks share it.
    assert raidz2["active-full"].value == pytest.approx(22 * 250 * MB_S)
    one_read = BLOCK / (0.008 + BLOCK / (22 * 250 * MB_S))
    assert raidz2["restore-random"].value == pytest.approx(one_read)
    # Synthetic full, queue depth 4: a raidz vdev serves one random read at a time (24 // 22 = 1);
    # writes are copy-on-write, sequential: 1 / (1 / read + 1 / write).
    assert raidz2["synthetic-full"].value == pytest.approx(1 / (1 / one_read + 1 / (22 * 250 * MB_S)))
    assert all(speed.source == "model" and speed.uncertain for speed in raidz2.values())

    raid6 = model_speeds(spec("raid6"), DISK)
    # md's 512 KiB chunk: a read touches 1 member; 4 reads at once on different members.
    read = 4 * BLOCK / (0.008 + BLOCK / (250 * MB_S))
    # A 512 KiB write is a read-modify-write of data + 2 parity: twice the time, 4 at once on 3 members each:
    # write = read / 2, so 1 read + 1 write per block runs at 1 / (1 / r + 2 / r) = r / 3.
    assert raid6["synthetic-full"].value == pytest.approx(read / 3)
    # Reverse incremental, 1 read + 2 writes: 1 / (1 / r + 2 x 2 / r) = r / 5.
    assert raid6["reverse-incremental"].value == pytest.approx(read / 5)
    assert raid6["restore-sequential"].value == pytest.approx(250 * MB_S)

    draid = model_speeds(spec("draid2", draid_spares=1), DISK)
    # d = 8: (24 - 1) x 8 / 10 = 18.4 disks of data written; 24 // 8 = 3 reads at once.
    assert draid["active-full"].value == pytest.approx(18.4 * 250 * MB_S)
    read = 3 * BLOCK / (0.008 + BLOCK / (8 * 250 * MB_S))
    assert draid["synthetic-full"].value == pytest.approx(1 / (1 / read + 1 / (18.4 * 250 * MB_S)))


def test_model_needs_a_disk_speed():
    with pytest.raises(InputError, match="needs --disk-speed"):
        model_speeds(spec("raidz2"), DiskModel())
    with pytest.raises(InputError, match="--vdevs 2"):
        model_speeds(spec("raidz2", vdevs=2), DISK)


def test_one_candidate_by_hand():
    given = policy(monthlies=4, yearlies=1, block_clone=True, restore_size="2TB", rto="8h")
    table = retention_table(given)
    # The peak is a full's day (test_sizing_restore_points): 25 TB (current data) + 35 x 1.25 + 3 weeklies x 8.75
    # + 3 monthlies x 25 + 1 yearly x 25 = 195 TB; x 1.1 workspace = 214.5 TB.
    assert table.total_bytes[-1] == 214_500_000_000_000
    plan = evaluate(given, table, spec("draid2", draid_spares=1), DiskModel(disk_speed=250 * MB_S, afr=1))
    # draid2:8d:24c:1s: (24 - 1) x 8 / 10 x 16 TB = 294.4 TB of data area; as OpenZFS counts it
    # 293.82 TB (test_sizing_capacity_accounting), and 128 KiB records, charged 320 x 409 bytes
    # each, hold 131,072 / 130,880 of that: 294.26 TB usable.
    usable = 293_824_997_133_568 * 131_072 // 130_880
    assert (plan.built, plan.usable_bytes) == ("draid2:8d:24c:1s", usable) == ("draid2:8d:24c:1s", 294_256_036_249_167)
    fill = 214.5 * TB / usable
    assert plan.fill_percent[-1] == pytest.approx(100 * fill)
    # The day: a 1.25 TB increment at 18.4 x 250 MB/s; the synthetic full is cloned.
    assert plan.worst_day_seconds == pytest.approx(1.25 * TB / (18.4 * 250 * MB_S))  # 271.7 s
    # Restore: 2 TB / 2 = 1 TB read, 8 disks at once sequentially; fully fragmented one 512 KiB read at a time.
    assert plan.restore.read_bytes == TB
    assert plan.restore.best_seconds == pytest.approx(TB / (8 * 250 * MB_S))
    assert plan.restore.worst_seconds == pytest.approx(TB / (BLOCK / (0.008 + BLOCK / (8 * 250 * MB_S))))  # 4.38 h
    # Rebuild: 16 TB x fill x 23/24 (the spare share) on the failed disk; x (8 + 1) / (23 x 250 MB/s).
    assert plan.rebuild.label == "distributed spare"
    assert plan.rebuild.seconds == pytest.approx(16 * TB * fill * 23 / 24 * 9 / (23 * 250 * MB_S), rel=1e-6)
    assert plan.rebuild.another_failure_percent == pytest.approx(
        100 * (1 - math.exp(-23 * 0.01 * plan.rebuild.seconds / 3600 / 8766)))
    assert plan.passed and [r.name for r in plan.requirements] == ["capacity", "window", "restore"]
    # Margins: capacity 1 - 72.90% = 27.1% of the usable space; restore (8 - 4.38) / 8 = 45.3%: capacity binds.
    assert plan.requirement("capacity").relative_margin == pytest.approx(1 - fill)
    assert plan.requirement("restore").relative_margin == pytest.approx(1 - plan.restore.worst_seconds / 28_800)
    assert plan.binding == "capacity"


def test_forward_active_day_is_the_full_and_forever_forward_adds_the_merge():
    active = policy(method="forward-active")
    plan = evaluate(active, retention_table(active), spec("raidz2"), DISK)
    assert plan.worst_day_seconds == pytest.approx(25 * TB / (22 * 250 * MB_S))  # the weekly active full
    merge = policy(method="forever-forward", weeklies=0)
    plan = evaluate(merge, retention_table(merge), spec("raidz2"), DISK)
    speeds = model_speeds(spec("raidz2"), DISK)
    increment = 1.25 * TB
    assert plan.worst_day_seconds == pytest.approx(increment / speeds["active-full"].value
                                                   + increment / speeds["synthetic-full"].value)


def test_what_would_make_raid6_pass():
    given = policy(monthlies=12, yearlies=3, block_clone=True)
    result = plan_repository(given, DISK, [spec("raid6")])
    # 462 TB needed (test_sizing_restore_points), 22 x 16 = 352 TB of data area, of which XFS
    # on the md array leaves 349.54 TB usable (test_sizing_capacity_accounting): missed by 112.46 TB.
    (plan,) = result.candidates
    assert not plan.passed and plan.binding == "capacity"
    assert plan.requirement("capacity").margin == 349_540_682_223_616 - 462_000_000_000_000
    assert result.verdict.recommended is None
    assert result.verdict.sentence == ("No candidate meets the policy: the nearest, raid6 of 24 x 16 TB, misses "
                                       "capacity by 112 TB (32% over its limit).")
    changes = {change.kind: change.text for change in result.verdict.changes}
    # 29 data disks + 2 parity hold 460.76 TB with XFS: short; 30 + 2 = 32. 462 / 22 = 21 TB: 22 TB disks.
    assert changes["disks"] == "32 disks of 16 TB (8 more)"
    assert changes["disk size"] == "24 disks of 22 TB"
    # Fewer monthlies: at 11, the newest yearly is no longer a monthly (11 // 12 = 0) and costs a full of its
    # own (462 TB again); at 7 (6 beyond the weeklies, 3 yearlies): (25 + 43.75 + 26.25 + 6 x 25 + 3 x 25) x 1.1
    # = 352 TB, still too much; at 6: 324.5 TB.
    assert changes["policy"] == "6 monthlies (not 12)"


def test_the_field_plan_by_hand_for_raid6():
    """README's hand check of the field note D plan (size repository, 'Checked by hand for raid6')."""
    given = policy(monthlies=12, yearlies=3, window="8h")
    plan = evaluate(given, retention_table(given), spec("raid6"), DISK)
    # On a year's first full: 6 chain fulls x 25 + 30 increments x 1.25 + (3 + 11 + 2) GFS fulls x 25 = 587.5 TB;
    # x 1.1 = 646.25 TB.
    assert plan.needed_bytes[-1] == 646_250_000_000_000
    # (24 - 2) x 16 TB = 352 TB of data area; the md array is 22 members of 16 TB less 129 MiB, in
    # 512 KiB chunks, and XFS on it leaves 349.54 TB (test_sizing_capacity_accounting): short by 296.71 TB.
    assert plan.usable_bytes == 349_540_682_223_616
    assert plan.requirement("capacity").margin == 349_540_682_223_616 - 646_250_000_000_000
    # Synthetic full: 512 KiB at random, 8 ms + 512 KiB / 250 MB/s each, 4 at once, read-modify-write: / 3.
    synthetic = 4 * BLOCK / (0.008 + BLOCK / (250 * MB_S)) / 3
    assert plan.speeds["synthetic-full"].value == pytest.approx(synthetic) == pytest.approx(69.23 * MB_S, rel=1e-3)
    # The day: 1.25 TB at 22 x 250 MB/s + 25 TB at 69.2 MB/s = 361,330 s (100.4 h) against 8 h.
    assert plan.worst_day_seconds == pytest.approx(1.25 * TB / (22 * 250 * MB_S) + 25 * TB / synthetic)
    assert plan.requirement("window").margin == pytest.approx(8 * 3600 - 361_329.6, abs=0.1)
    # md rebuilds the whole 16 TB member at 250 MB/s: 64,000 s.
    assert plan.rebuild.seconds == 64_000


def test_block_clone_and_more_disks_together():
    given = policy(monthlies=12, yearlies=3)  # no block clone: a weekly synthetic full of 25 TB at ~69 MB/s
    result = plan_repository(given, DISK, [spec("raid6")])
    (change,) = result.verdict.changes
    # With block clone 462 TB: 32 disks, as above; without it no count of disks speeds up the random reads.
    assert change.text == "block clone on and 32 disks of 16 TB (8 more)"


def test_ranking_prefers_the_shorter_rebuild_and_says_why():
    given = policy(monthlies=4, yearlies=1, block_clone=True)
    result = plan_repository(given, DISK, [spec("raidz2"), spec("draid2", draid_spares=1)])
    assert result.verdict.ranking == ["draid2", "raidz2"] and result.verdict.recommended == "draid2"
    sentence = result.verdict.sentence
    assert sentence.startswith("draid2:8d:24c:1s of 24 x 16 TB: holds 30 dailies + 8 weeklies + 4 monthlies + "
                               "1 yearly for 3 years at 73% full, the longest backup day in ")
    # dRAID: 16 TB x 72.90% x 23/24 x 9 / (23 x 250 MB/s) = 17,495 s; raidz2 rebuilds what is allocated,
    # 16 TB x 214.5 / 341.18 = 10.06 TB, onto one disk at 250 MB/s: 40,236 s. 294.26 - 214.5 = 79.8 TB to spare.
    assert "rebuild 4.9 h against raidz2's 11.2 h; binding: capacity, 79.8 TB (27%) to spare." in sentence
    assert any("from the per-disk model" in line for line in result.verdict.uncertain)


def test_candidates_refused():
    with pytest.raises(InputError, match="raid6 twice"):
        plan_repository(policy(), DISK, [spec("raid6"), spec("raid6")])
    with pytest.raises(InputError, match="raid0 has no redundancy"):
        plan_repository(policy(), DISK, [spec("raid0")])
    with pytest.raises(InputError, match="--disk-size"):
        plan_repository(policy(), DISK, [spec("raid6", size=0)])


def _apply_run(run_id: str, layouts: dict[str, dict], speeds: dict[str, float]) -> RunRecord:
    entries = [{"name": name, "devices": [f"/dev/vd{chr(98 + i)}" for i in range(16)], **entry}
               for name, entry in layouts.items()]
    run = RunRecord(run_id=run_id, kind="recipe", target="lab", settings={"recipe": {"layout": entries}})
    for name in layouts:
        for operation, bw in speeds.items():
            run.operations.append(OperationRecord(name=f"{name}/{operation}", pattern="", status=COMPLETE,
                                                  figures={"effective_bw": bw}, layout=name))
    return run


def test_measured_speeds_go_to_the_candidate_of_their_layout():
    run = _apply_run("20261201T000000-aaaa", {"r6": {"kind": "mdraid", "level": 6},
                                              "dr": {"kind": "zfs", "vdev": "draid2", "draid_data": 3,
                                                     "draid_spares": 2}},
                     {"active-full": 900 * MB_S, "synthetic-full": 300 * MB_S})
    layouts = measured_layouts(run)
    assert [(m.name, m.kind, m.disks) for m in layouts] == [("r6", "raid6", 16), ("dr", "draid2", 16)]
    chosen = assign(["raidz2", "draid2:8d:24c:1s"], [(None, "latest", layouts)])
    assert list(chosen) == ["draid2:8d:24c:1s"] and chosen["draid2:8d:24c:1s"].name == "dr"
    given = policy()
    plan = evaluate(given, retention_table(given), spec("draid2:8d:24c:1s"), DISK, chosen["draid2:8d:24c:1s"])
    # Measured on draid2:3d:16c:2s, planned on draid2:8d:24c:1s: a large write moves (16 - 2) x 3/5 = 8.4
    # disks' worth of data there and (24 - 1) x 8/10 = 18.4 here (sizing/scaled_speeds.py).
    full = plan.speeds["active-full"]
    assert full.source == "measured" and full.value == pytest.approx(900 * MB_S * 18.4 / 8.4)
    assert full.label == "measured on 16, scaled to 24"
    assert plan.speeds["synthetic-full"].why == "run 20261201T000000-aaaa, layout dr (16 disks); scaled from 16 to 24 disks"
    assert plan.rebuild.rate.source == "model"
    unscaled = evaluate(given, retention_table(given), spec("draid2:8d:24c:1s"),
                        DISK.model_copy(update={"no_scale": True}), chosen["draid2:8d:24c:1s"])
    assert unscaled.speeds["active-full"].value == 900 * MB_S
    assert any("the plan has 24 disks; taken as measured, not scaled (--no-scale)" in note for note in unscaled.notes)


def test_a_run_of_another_layout_is_refused():
    run = _apply_run("20261201T000000-bbbb", {"r6": {"kind": "mdraid", "level": 6}}, {"active-full": 900 * MB_S})
    layouts = measured_layouts(run)
    with pytest.raises(InputError) as caught:
        assign(["raidz2", "raid6"], [("raidz2", "bbbb", layouts)])
    assert caught.value.message == ("run 20261201T000000-bbbb measured raid6, not raidz2: a run of another layout "
                                    "cannot give raidz2's speeds")
    with pytest.raises(InputError, match="measured raid6: none of the candidates"):
        assign(["raidz2"], [(None, "bbbb", layouts)])
    with pytest.raises(InputError, match="draid3 is not one of the candidates"):
        assign(["raidz2"], [("draid3", "bbbb", layouts)])


def test_a_plain_run_must_be_pinned():
    run = RunRecord(run_id="20261201T000000-cccc", kind="kb2014", target="/srv", settings={})
    run.operations.append(OperationRecord(name="active-full", pattern="write", status=COMPLETE,
                                          figures={"effective_bw": 400 * MB_S}))
    layouts = measured_layouts(run)
    with pytest.raises(InputError, match="measured a directory, not a layout"):
        assign(["raidz2"], [(None, "cccc", layouts)])
    chosen = assign(["raidz2"], [("raidz2", "cccc", layouts)])
    assert chosen["raidz2"].speeds == {"active-full": 400 * MB_S}


def test_pins_and_kinds():
    assert parse_pin("raidz2=latest") == ("raidz2", "latest") and parse_pin("abcd") == (None, "abcd")
    with pytest.raises(InputError, match="give RUN or LAYOUT=RUN"):
        parse_pin("=abcd")
    assert layout_kind("draid2:3d:45c:2s") == "draid2" and layout_kind("draid:4d") == "draid1"
    assert layout_kind("raid6") == "raid6" and layout_kind("minio-ec") == "minio-ec"


def test_a_fault_runs_rebuild_rate_is_used():
    run = _apply_run("20261201T000000-dddd", {"r6": {"kind": "mdraid", "level": 6}}, {})
    run.operations += [
        OperationRecord(name="r6/member", pattern="", status=COMPLETE, figures={"member_bytes": 1e9},
                        layout="r6", state="member"),
        OperationRecord(name="r6/healthy/active-full", pattern="", status=COMPLETE,
                        figures={"effective_bw": 800 * MB_S}, layout="r6", state="healthy"),
        OperationRecord(name="r6/rebuild", pattern="", status=COMPLETE, figures={"rebuild_seconds": 10.0},
                        layout="r6", state="rebuild", detail={"target": "disk"}),
    ]
    chosen = assign(["raid6"], [(None, "dddd", measured_layouts(run))])
    given = policy(method="forward-active")
    plan = evaluate(given, retention_table(given), spec("raid6"), DiskModel(), chosen["raid6"])
    # md rebuilt its 1 GB member in 10 s: 100 MB/s per disk; a 16 TB member at that rate: 160,000 s.
    assert plan.rebuild.rate.source == "measured" and plan.rebuild.rate.value == pytest.approx(100 * MB_S)
    assert plan.rebuild.seconds == pytest.approx(160_000)
    assert "as measured: rebuilt in 10.0 s" in plan.rebuild.rate.why
    # The healthy array's active full, measured on 16 disks and scaled to 24 (14 data disks to 22): no
    # --disk-speed needed for a forward-active plan, a large write being linear in the disk's speed.
    assert plan.speeds["active-full"].value == pytest.approx(800 * MB_S * 22 / 14)


@pytest.mark.parametrize("needed", [13, 20, 29, 37, 95, 96])
def test_the_fewest_more_disks_are_found_without_trying_every_count(needed):
    """More disks of one size never plan worse; the search doubles past the first 16 and halves
    back, so it names the same count a scan of every count would, in far fewer plans."""
    from backupbench.sizing.verdict import LINEAR_STEPS, _fewest_disks

    start = spec("raid6", disks=12)
    tried: list[int] = []

    def passes(changed: LayoutSpec):
        tried.append(changed.disks)
        return object() if changed.disks >= needed else None

    found = _fewest_disks(start, passes)
    if needed > max(start.disks * 4, start.disks + 64):
        assert found is None
        return
    (kind, text, changed), _ = found
    assert kind == "disks" and changed.disks == needed and f"({needed - 12} more)" in text
    assert len(tried) <= LINEAR_STEPS + 2 * math.ceil(math.log2(needed))


def test_a_count_a_layout_cannot_take_among_the_first_counts_is_passed_over():
    from backupbench.sizing.verdict import _fewest_disks

    found = _fewest_disks(spec("raid6", disks=12), lambda changed: object() if changed.disks in (15, 17) else None)
    assert found is not None and found[0][2].disks == 15
