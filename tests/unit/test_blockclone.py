"""The block-clone workload's pure parts: options, fio jobs, FIEMAP parsing, figures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backupbench import units
from backupbench.engines import clone
from backupbench.engines.fio_json import DirectionStats, FioSummary
from backupbench.errors import RecipeError, RefusedError
from backupbench.recipe.model import parse
from backupbench.schema import validate
from backupbench.workloads import blockclone
from backupbench.workloads.blockclone import BlockCloneOptions
from backupbench.workloads.registry import WORKLOADS


def options(**given) -> BlockCloneOptions:
    return validate(BlockCloneOptions, given, lambda loc: "--" + str(loc[0]).replace("_", "-") if loc else "options")


# ---- options ---------------------------------------------------------------------------------

def test_defaults_and_derived_sizes():
    o = options()
    assert (o.full_size, o.increments, o.change_rate, o.clone_block_size) == (units.GiB, 5, 5.0, 512 * units.KiB)
    assert o.blocks == 2048 and o.change_blocks == 102 and o.change_bytes == 102 * 512 * units.KiB
    assert o.clone_call_size is None and o.restore_runtime == 10.0


@pytest.mark.parametrize("given, expected", [("5%", 5.0), (" 2.5 % ", 2.5), ("7", 7.0), (12, 12.0), (100, 100.0)])
def test_change_rate_is_a_percentage(given, expected):
    assert options(change_rate=given).change_rate == expected


def test_sizes_round_to_whole_blocks_and_change_at_least_one():
    o = options(full_size="10MiB", clone_block_size="3MiB", change_rate="0.01%")
    assert o.file_size == 9 * units.MiB and o.blocks == 3 and o.change_blocks == 1
    assert options(full_size="4MiB", clone_block_size="1MiB", change_rate="100%").change_blocks == 4


@pytest.mark.parametrize("given, flag, text", [
    ({"change_rate": "5x"}, "--change-rate", "not a percentage"),
    ({"change_rate": 0}, "--change-rate", "greater than 0"),
    ({"change_rate": "101%"}, "--change-rate", "less than or equal to 100"),
    ({"increments": 0}, "--increments", "greater than or equal to 1"),
    ({"clone_block_size": "6k"}, "--clone-block-size", "multiple of 4 KiB"),
    ({"clone_block_size": "128MiB"}, "--clone-block-size", "to 64 MiB"),
    ({"full_size": "100k"}, "--clone-block-size", "larger than the full"),
    ({"full_size": 0}, "--full-size", "more than 0 bytes"),
    ({"clone_call_size": "100k"}, "--clone-call-size", "whole number of 512 KiB blocks"),
    ({"restore_runtime": "0"}, "--restore-runtime", "greater than or equal to 0.001"),
    ({"size": "1GiB"}, "--size", "not a known key"),
])
def test_bad_values_are_one_line_naming_the_key(given, flag, text):
    with pytest.raises(RecipeError) as caught:
        options(**given)
    line = caught.value.one_line()
    assert line.startswith(f"{flag}:") and text in line and "\n" not in line


def test_registered_and_usable_in_a_recipe():
    assert WORKLOADS["block-clone"] is blockclone.DEFINITION
    recipe = parse({"name": "r", "layout": [{"name": "d", "kind": "directory", "path": "/srv/repo"}],
                    "workload": [{"kind": "block-clone", "full_size": "64MiB", "change_rate": "7%", "increments": 2}]})
    entry = recipe.workload[0]
    built = blockclone.DEFINITION.build(entry, None)
    assert built.options == options(full_size="64MiB", change_rate=7, increments=2)
    with pytest.raises(RecipeError, match="change_rat"):
        parse({"name": "r", "layout": [{"name": "d", "kind": "directory", "path": "/srv/repo"}],
               "workload": [{"kind": "block-clone", "change_rat": "7%"}]})


def test_flags_do_not_collide_with_other_workloads():
    # The data-content keys are shared on purpose: one --data flag for every workload.
    from backupbench.workloads.content_options import ContentOptions

    mine = set(BlockCloneOptions.model_fields) - set(ContentOptions.model_fields)
    # The aging workload's full, change rate and seed are these same things, over days.
    same = {"aging": {"full_size", "change_rate", "change_seed"}}
    for name, definition in WORKLOADS.items():
        if name != "block-clone":
            assert not (mine - same.get(name, set())) & set(definition.options.model_fields), name


def test_the_data_content_reaches_the_full_and_the_changes():
    work = blockclone.full_job(options(full_size="64MiB", compress=50), Path("/r/full.dat")).text()
    assert "buffer_compress_percentage=50" in work and "randseed=" in work
    assert "buffer_pattern=0x55" in blockclone.change_job(options(full_size="64MiB", pattern="0x55"), 1,
                                                           Path("/r/i1.dat")).text()


# ---- phases and fio jobs ---------------------------------------------------------------------

def test_phases_settings_and_space():
    work = blockclone.workload(options(full_size="64MiB", increments=3))
    assert work.phases() == ("full", "increment-1", "increment-2", "increment-3", "restore-sequential-original",
                             "restore-sequential", "restore-random-original", "restore-random")
    assert work.settings()["file_size"] == 64 * units.MiB and work.settings()["change_rate"] == 5.0
    assert work.space_needed() == 64 * units.MiB + 3 * work.options.change_bytes


def test_full_job_writes_fresh_random_data_sequentially(tmp_path):
    text = blockclone.full_job(options(full_size="64MiB", change_seed=9), tmp_path / "full.dat").text()
    for line in ("rw=write", "direct=1", "bs=512k", "size=64m", "refill_buffers=1", "randrepeat=0", "randseed=9",
                 "fallocate=none", "iodepth=1"):
        assert line in text.splitlines(), line


def test_change_job_writes_each_changed_block_once_with_its_own_seed(tmp_path):
    o = options(full_size="64MiB", change_rate="10%", change_seed=4)
    lines = blockclone.change_job(o, 3, tmp_path / "s.dat").text().splitlines()
    for line in ("[increment-3]", "rw=randwrite", "size=64m", f"io_size={units.fio_size(o.change_bytes)}",
                 "randseed=7", "randrepeat=0", "refill_buffers=1", "fallocate=none"):
        assert line in lines, line
    assert not any(line.startswith(("norandommap", "time_based")) for line in lines)


def test_restore_jobs_are_timed_direct_reads(tmp_path):
    job = blockclone.restore_job(options(restore_runtime="3s"), "restore-random", "randread", tmp_path / "f", "x")
    lines = job.text().splitlines()
    assert "rw=randread" in lines and "runtime=3s" in lines and "time_based=1" in lines and "direct=1" in lines


# ---- FIEMAP and clone ranges -----------------------------------------------------------------

def fiemap_answer(records: list[tuple[int, int, int, int]]) -> bytes:
    buffer = bytearray(clone.fiemap_request(0, count=len(records) + 1))
    clone.FIEMAP_HEADER.pack_into(buffer, 0, 0, 0, 0, len(records), len(records) + 1, 0)
    for index, (logical, physical, length, flags) in enumerate(records):
        clone.FIEMAP_EXTENT.pack_into(buffer, clone.FIEMAP_HEADER.size + index * clone.FIEMAP_EXTENT.size,
                                      logical, physical, length, 0, 0, flags, 0, 0, 0)
    return bytes(buffer)


def test_fiemap_answer_is_parsed_and_summarized():
    shared, last = clone.FIEMAP_EXTENT_SHARED, clone.FIEMAP_EXTENT_LAST
    found = clone.parse_fiemap(fiemap_answer([
        (0, 1 << 20, 4096, shared),
        (4096, 9 << 20, 4096, 0),                          # a changed block elsewhere on disk
        (8192, (1 << 20) + 8192, 8192, shared),            # back on the original run
        (16384, (1 << 20) + 16384, 4096, shared | last),   # continues the one before
    ]))
    assert [e.length for e in found] == [4096, 4096, 8192, 4096] and found[-1].last and found[0].shared
    summary = clone.summarize(found)
    assert summary.records == 4 and summary.extents == 3
    assert summary.shared_bytes == 16384 and summary.unique_bytes == 4096 and summary.shared_extents == 3


def test_request_header_asks_from_start_to_the_end_with_sync():
    start, length, flags, mapped, count, _ = clone.FIEMAP_HEADER.unpack_from(clone.fiemap_request(4096, 8), 0)
    assert (start, flags, mapped, count) == (4096, clone.FIEMAP_FLAG_SYNC, 0, 8)
    assert start + length == clone.FIEMAP_MAX_OFFSET


def test_clone_ranges_cover_the_file():
    assert clone.ranges(10, None) == [(0, 10)]
    assert clone.ranges(10, 4) == [(0, 4), (4, 4), (8, 2)]
    assert clone.ranges(0, 4) == []
    assert clone.FICLONERANGE == 0x4020940D and clone.CLONE_RANGE.size == 32


# ---- figures ---------------------------------------------------------------------------------

def summary(read_bw: float = 0.0, write_bw: float = 0.0, write_bytes: int = 0) -> FioSummary:
    return FioSummary(read=DirectionStats(bw_bytes=read_bw, io_bytes=int(read_bw)),
                      write=DirectionStats(bw_bytes=write_bw, io_bytes=write_bytes), runtime_ms=1000,
                      fio_version="fio-3", job_names=("x",))


def test_increment_figures():
    logical, change = units.GiB, 50 * units.MiB
    extents = clone.ExtentSummary(extents=201, records=300, mapped_bytes=logical, shared_bytes=logical - change,
                                  shared_extents=150)
    figures = blockclone.increment_figures(logical, clone.CloneResult(0.002, 1, logical),
                                           summary(write_bw=100 * units.MiB, write_bytes=change),
                                           used_before=10 * units.MiB, used_after=61 * units.MiB, extents=extents)
    assert figures["clone_s"] == 0.002 and figures["clone_s_per_tib"] == pytest.approx(0.002 * 1024)
    assert figures["clone_bw"] == pytest.approx(logical / 0.002)
    assert figures["change_write_s"] == pytest.approx(0.5) and figures["write_bw"] == 100 * units.MiB
    assert figures["effective_bw"] == pytest.approx(logical / 0.502)
    assert figures["fs_used_delta"] == 51 * units.MiB and figures["fs_used_per_change"] == pytest.approx(51 / 50)
    assert figures["unique_bytes"] == change and figures["extents"] == 201 and figures["fiemap_records"] == 300
    assert set(blockclone._units(figures)["units"]) <= set(figures)


def test_restore_figures_and_fragmentation_cost():
    original = blockclone.restore_figures(summary(read_bw=400.0), 1, None)
    assert original["effective_bw"] == 400.0 and "fragmentation_cost" not in original
    fragmented = blockclone.restore_figures(summary(read_bw=100.0), 500, original["effective_bw"])
    assert fragmented["fragmentation_cost"] == 4.0 and fragmented["extents"] == 500
    assert fragmented["original_bw"] == 400.0


# ---- refusal ---------------------------------------------------------------------------------

def test_check_refuses_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(clone, "reflink_refusal", lambda d: "the filesystem cannot clone blocks (FICLONE: nope)")
    with pytest.raises(RefusedError) as caught:
        blockclone.workload(options()).check(tmp_path)
    assert "cannot hold block clones" in caught.value.message and "reflink=1" in caught.value.fix
    monkeypatch.setattr(clone, "reflink_refusal", lambda d: None)
    blockclone.workload(options()).check(tmp_path)


def test_the_reflink_probe_leaves_nothing_behind(tmp_path: Path):
    answer = clone.reflink_refusal(tmp_path)
    assert answer is None or "clone" in answer or "probe" in answer
    assert os.listdir(tmp_path) == []


def test_the_report_gives_clones_their_own_table_and_restores_their_cost():
    from backupbench.report.tables import table_specs
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    def op(name, **figures):
        return OperationRecord(name=name, pattern="x", status=COMPLETE, figures=figures)

    run = RunRecord(run_id="r", kind="block-clone", target="/t", status=COMPLETE, settings={"data": "incompressible"},
                    operations=[op("full", effective_bw=1.0, write_bw=1.0),
                                op("increment-1", clone_s=0.002, clone_s_per_tib=3.0, write_bw=2.0**20, extents=12),
                                op("restore-random", effective_bw=1.0, fragmentation_cost=1.3)])
    (fio_ops, fio_columns, _, _), (clone_ops, clone_columns, _, caption) = table_specs(run)
    assert [o.name for o in fio_ops] == ["full", "restore-random"] and [o.name for o in clone_ops] == ["increment-1"]
    assert fio_columns[-1][0] == "against the original" and fio_columns[-1][1](fio_ops[1].figures) == "1.30x slower"
    # A restore faster than the original's (issue 42: it said "0.83x slower").
    assert fio_columns[-1][1]({"fragmentation_cost": 0.8}) == "1.25x faster"
    assert [h for h, _ in clone_columns][:2] == ["clone ms", "clone s/TiB"]
    assert clone_columns[0][1](clone_ops[0].figures) == "2.0" and caption.startswith("data: incompressible")


def _ioctl_refusing(answers: list[OSError | None], calls: list[str]):
    def ioctl(fd, request, argument):
        calls.append("ioctl")
        answer = answers.pop(0)
        if answer is not None:
            raise answer
    return ioctl


def _busy() -> OSError:
    return BlockingIOError(11, "Resource temporarily unavailable")


@pytest.fixture
def no_waiting(monkeypatch):
    monkeypatch.setattr(clone, "BUSY_POLL_S", 0.0)


def test_a_clone_zfs_refuses_while_its_source_block_is_unwritten_is_made_again_until_it_is(monkeypatch, no_waiting):
    calls: list[str] = []
    monkeypatch.setattr(clone.fcntl, "ioctl", _ioctl_refusing([_busy(), _busy(), _busy(), None], calls))
    monkeypatch.setattr(clone, "syncfs", lambda fd: calls.append(f"syncfs {fd}"))
    clone.clone_ioctl(5, clone.FICLONE, 7, 7)
    assert calls == ["ioctl", "syncfs 7", "ioctl", "ioctl", "ioctl"]  # the source's filesystem synced once


def test_a_clone_still_refused_at_the_limit_raises_the_refusal(monkeypatch, no_waiting):
    calls: list[str] = []
    monkeypatch.setattr(clone, "BUSY_LIMIT_S", 0.0)
    monkeypatch.setattr(clone.fcntl, "ioctl", _ioctl_refusing([_busy(), _busy(), None], calls))
    monkeypatch.setattr(clone, "syncfs", lambda fd: calls.append("syncfs"))
    with pytest.raises(BlockingIOError):
        clone.clone_ioctl(5, clone.FICLONERANGE, b"range", 7)
    assert calls == ["ioctl", "syncfs", "ioctl"]


def test_an_error_other_than_busy_is_not_retried(monkeypatch, no_waiting):
    calls: list[str] = []
    monkeypatch.setattr(clone.fcntl, "ioctl", _ioctl_refusing([OSError(95, "not supported"), None], calls))
    monkeypatch.setattr(clone, "syncfs", lambda fd: calls.append("syncfs"))
    with pytest.raises(OSError):
        clone.clone_ioctl(5, clone.FICLONE, 7, 7)
    assert calls == ["ioctl"]
