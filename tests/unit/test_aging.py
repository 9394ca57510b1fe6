"""The aging workload without root: its options, phases and space, the changed blocks it draws,
the repository engine on this machine's own filesystem (copies: block clone needs XFS or btrfs,
tests/integration/test_aging_real.py), and the free-space tools' output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backupbench import retention, units
from backupbench.devices import free_space
from backupbench.engines.backup_files import BackupFile, Buffers, Tally
from backupbench.engines.backup_repository import BlockShape, Changes, Repository, Stored
from backupbench.errors import InputError, RecipeError
from backupbench.recipe.model import parse
from backupbench.sizing.policy import BackupPolicy, check_policy
from backupbench.sizing.restore_points import retention_table
from backupbench.workloads import aging, phase_kinds
from backupbench.workloads.aging import AgingOptions, phase_names, space_needed

FIXTURES = Path(__file__).parents[1] / "fixtures" / "free_space"


def options(**values) -> AgingOptions:
    return AgingOptions(**{"full_size": "64MiB", "days": 14, **values})


# ---- options, phases, space ------------------------------------------------------------------

def test_the_scale_the_policy_is_played_at():
    o = options(change_rate="5%", reduction="2:1")
    # 64 MiB stored at 2:1 of 1 MiB blocks: 128 blocks of 1 MiB protected, 6.4 (5%) changed a day.
    assert (o.blocks, o.protected, o.per_day) == (128, 128 * units.MiB, 6.4)
    assert o.shape.mean == 512 * units.KiB and o.shape.length_bounds == (384 * units.KiB, 640 * units.KiB)
    # The plan's closed form at this scale: forward-synthetic, 7 dailies: 14 points, 2 fulls + 12 increments
    # of 3.2 MiB (128 MiB x 5% / 2, rounded up) ...
    plan = retention_table(BackupPolicy(protected=o.protected, change_rate=5, dailies=7, workspace=0))
    assert plan.total_bytes[0] == 2 * 64 * units.MiB + 12 * 3_355_444
    # ... of the blocks as the run stores them: each aligned up to 4 KiB, 514 KiB on average (the even draw's
    # 512 KiB mean + half the alignment): a full of 128 x 514 KiB, an increment of 6.4 x 514 KiB.
    assert o.shape.mean_length() == 514 * units.KiB
    assert o.planned_bytes() == 2 * 128 * 514 * units.KiB + 12 * 3_368_551


def test_phases_follow_the_calendar_measured_every_week_and_on_the_last_day():
    names = phase_names(options(days=10))
    assert names == ("day-000:job", "day-000:restore-sequential:newest", "day-000:restore-random:newest",
                     "day-007:job", "day-007:restore-sequential:newest", "day-007:restore-random:newest",
                     "day-007:restore-sequential:oldest", "day-007:restore-random:oldest",
                     "day-010:job", "day-010:restore-sequential:newest", "day-010:restore-random:newest",
                     "day-010:restore-sequential:oldest", "day-010:restore-random:oldest")
    # forever-forward's oldest point is its one full: restored once, as the newest.
    assert not [n for n in phase_names(options(method="forever-forward", dailies=3)) if n.endswith(":oldest")]
    reverse = phase_names(options(method="reverse-incremental", operations="restore-random", measure_every=14))
    assert reverse == ("day-000:job", "day-000:restore-random:newest", "day-014:job", "day-014:restore-random:newest",
                       "day-014:restore-random:oldest")
    assert aging.workload(options()).phases() == phase_names(options())


def test_the_days_job_is_a_clone_phase_and_the_restores_fio():
    kinds = aging.DEFINITION.phase_kinds
    assert [kinds.of(n) for n in phase_names(options(days=7))[:4]] == [
        phase_kinds.CLONE, phase_kinds.FIO, phase_kinds.FIO, phase_kinds.CLONE]


def test_space_needed_holds_every_day_of_the_run_and_block_clone_needs_less():
    copied, cloned = options(days=28), options(days=28, block_clone=True)
    # At least the plan's peak (the calendar reaches it by day 13), at most 30% over it.
    assert copied.planned_bytes() <= space_needed(copied) <= 1.3 * copied.planned_bytes()
    assert space_needed(cloned) < space_needed(copied)
    assert space_needed(options(days=2)) < space_needed(copied)  # a short run never reaches the peak
    assert aging.workload(copied).settings()["space_needed"] == space_needed(copied)


def test_a_policy_the_plan_refuses_is_refused_with_its_line():
    with pytest.raises(InputError) as planned:
        check_policy(BackupPolicy(protected="1TB", change_rate=5, method="forever-forward", weeklies=2))
    with pytest.raises(InputError) as aged:
        aging.workload(options(method="forever-forward", weeklies=2))
    assert (aged.value.message, aged.value.fix) == (planned.value.message, planned.value.fix)
    assert aged.value.message.startswith("--weeklies 2 with --method forever-forward")
    # A recipe's entry is refused at load, spelled as keys.
    entry = {"kind": "aging", "method": "reverse-incremental", "monthlies": 1}
    with pytest.raises(RecipeError) as recipe:
        parse({"name": "aged", "layout": [{"kind": "directory", "name": "d", "path": "/srv/r"}], "workload": [entry]})
    assert "monthlies = 1 with method = reverse-incremental: GFS keeps periodic fulls" in recipe.value.message


@pytest.mark.parametrize("values, said", [
    ({"align": "1MiB"}, "would be padded to --align 1 MiB"),
    ({"backup_block_size": "20MiB"}, "from 4 KiB to 16 MiB"),
    ({"align": "6KiB"}, "multiple of 4 KiB"),
    ({"full_size": "1MiB", "method": "reverse-incremental"}, "a day's rollback"),
])
def test_options_that_cannot_be_played_are_refused(values, said):
    with pytest.raises(ValueError) as refused:
        options(**values)
    assert said in str(refused.value)


# ---- the changed blocks ----------------------------------------------------------------------

def shape(blocks: int = 1000) -> BlockShape:
    return BlockShape(blocks, 512 * units.KiB, 0.25, 4 * units.KiB, units.MiB)


def test_each_day_changes_the_same_blocks_for_the_same_seed():
    changes = Changes(shape(), 50.0, seed=3)
    day = changes.of_day(5)
    assert day == Changes(shape(), 50, seed=3).of_day(5) != Changes(shape(), 50, seed=4).of_day(5)
    assert day != changes.of_day(6) and len(day) == 50 and [b for b, _ in day] == sorted({b for b, _ in day})
    low, high = shape().length_bounds
    sizes = [length for _, length in day] + changes.first_full()
    assert all(low <= s <= high and s % (4 * units.KiB) == 0 for s in sizes)
    mean = sum(changes.first_full()) / 1000
    assert 0.97 * 514 * units.KiB < mean < 1.03 * 514 * units.KiB  # the mean, aligned up: about 2 KiB more


def test_a_fraction_of_a_block_a_day_changes_one_more_block_that_often():
    changes = Changes(shape(), 25.6, seed=1)
    counts = [len(changes.of_day(day)) for day in range(1, 1001)]
    assert set(counts) == {25, 26} and 25.55 < sum(counts) / 1000 < 25.65


def test_a_hot_share_takes_most_of_the_changes():
    changes = Changes(shape(), 50, seed=1, hot_share=0.1, hot_changes=0.9)
    touched = [block for day in range(1, 31) for block, _ in changes.of_day(day)]
    hot = set(changes._hot)
    assert len(hot) == 100 and sum(block in hot for block in touched) == 30 * 45


# ---- the repository, by copy ----------------------------------------------------------------

def read(path: Path, stored: Stored) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(stored.offset)
        return handle.read(stored.length)


def direct_io(folder: Path) -> bool:
    """Whether files in `folder` open with O_DIRECT (not on tmpfs): the engine writes only so."""
    try:
        os.close(os.open(folder, os.O_TMPFILE | os.O_RDWR | getattr(os, "O_DIRECT", 0), 0o600))
    except OSError:
        return False
    return True


@pytest.fixture
def repository(tmp_path: Path):
    if not direct_io(tmp_path):
        pytest.skip(f"{tmp_path} refuses O_DIRECT (tmpfs?): the engine's files need it")
    buffers = Buffers(seed=5, pool_bytes=8 * units.MiB)
    repo = Repository(tmp_path, BlockShape(16, 64 * units.KiB, 0.5, 4 * units.KiB, 128 * units.KiB), False, buffers)
    yield repo
    repo.close()
    buffers.close()


def test_a_synthetic_full_holds_every_blocks_newest_version(repository, tmp_path):
    changes = Changes(repository.shape, 4, seed=2)
    repository.write("full-0000.vbk", list(enumerate(changes.first_full())))
    first = {b: read(tmp_path / "full-0000.vbk", s) for b, s in enumerate(repository.current)}
    repository.write("increment-0001.vib", changes.of_day(1))
    newest = {b: read(tmp_path / s.file, s) for b, s in enumerate(repository.current)}
    repository.synthetic_full("full-0002.vbk")
    assert {s.file for s in repository.current} == {"full-0002.vbk"}
    assert {b: read(tmp_path / "full-0002.vbk", s) for b, s in enumerate(repository.current)} == newest != first
    assert repository.tally.read == repository.tally.written - sum(len(v) for v in first.values()) - sum(
        length for _, length in changes.of_day(1))  # copied: every byte read once, written once
    repository.delete("increment-0001.vib")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full-0000.vbk", "full-0002.vbk"]


def test_a_merge_and_a_rollback_rewrite_the_full_in_place(repository, tmp_path):
    changes = Changes(repository.shape, 5, seed=9)
    repository.write("full-0000.vbk", list(enumerate(changes.first_full())))
    repository.keep_in_place("full-0000.vbk")
    before = {b: read(tmp_path / "full-0000.vbk", s) for b, s in enumerate(repository.current)}
    repository.write("increment-0001.vib", changes.of_day(1))
    repository.merge("full-0000.vbk", "increment-0001.vib")
    merged = {b: read(tmp_path / "full-0000.vbk", s) for b, s in enumerate(repository.full["full-0000.vbk"])}
    changed = {b for b, _ in changes.of_day(1)}
    assert all((merged[b] != before[b]) == (b in changed) for b in before)
    assert all(s.file == "full-0000.vbk" for s in repository.current)
    repository.rollback("full-0000.vbk", "rollback-0002.vrb", changes.of_day(2))
    rolled = (tmp_path / "rollback-0002.vrb").read_bytes()
    assert rolled == b"".join(merged[b] for b, _ in changes.of_day(2))  # the old versions, in block order


def test_a_full_rewritten_in_place_reuses_the_gaps_its_old_versions_left(tmp_path):
    if not direct_io(tmp_path):
        pytest.skip(f"{tmp_path} refuses O_DIRECT (tmpfs?): the engine's files need it")
    opened = BackupFile(tmp_path / "f", Tally())
    try:
        assert [opened.append(8192) for _ in range(3)] == [0, 8192, 16384]
        assert opened.place((0, 8192), 4096) == 0 and opened.gaps == [(4096, 4096)]     # fits: its tail a gap
        # Too big for its place: that place and the gap beside it join, and hold it.
        assert opened.place((8192, 8192), 12288) == 4096 and opened.gaps == []
        assert opened.place((16384, 8192), 16384) == 24576                             # nothing holds it: the end
        assert opened.gaps == [(16384, 8192)] and opened.gap_bytes == 8192
        assert opened.place(None, 4096) == 16384 and opened.gaps == [(20480, 4096)]    # first fit
    finally:
        opened.close()


# ---- free space ------------------------------------------------------------------------------

def test_xfs_free_space_histogram():
    found = free_space.parse_xfs_freesp((FIXTURES / "xfs-freesp.txt").read_text(), 4096)
    assert (found.extents, found.free_bytes) == (35, 86983 * 4096)
    assert found.small_bytes == (5 + 64) * 4096   # extents of 4-7 and 64-127 blocks: under 1 MiB
    figures = found.figures()
    assert figures["free_mean_extent_bytes"] == pytest.approx(86983 * 4096 / 35)
    assert figures["free_under_1mib_pct"] == pytest.approx(100 * 69 / 86983)


def test_ext4_free_space_from_e2freefrag():
    found = free_space.parse_e2freefrag((FIXTURES / "e2freefrag-holes.txt").read_text())
    assert (found.extents, found.free_bytes) == (17, 97551 * 4096)
    assert found.small_bytes == (15 + 176 + 224) * 4096   # up to the 512K...1024K- row
    assert free_space.parse_e2freefrag((FIXTURES / "e2freefrag.txt").read_text()).small_bytes == 0


def test_zfs_gives_its_own_score_and_others_say_nothing():
    assert free_space.parse_zpool_fragmentation("12\n").figures() == {"free_fragmentation_pct": 12.0}
    assert free_space.parse_zpool_fragmentation("-\n") is None


def test_retention_start_is_a_monday_the_first_of_a_year():
    assert retention.START.weekday() == 0 and (retention.START.month, retention.START.day) == (1, 1)
