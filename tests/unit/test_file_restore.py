"""The pure parts of restoring existing files: an extent map in figures (engines/file_map.py),
the model's restores of it (disk_model.py), and the restore workload's names and options."""

from __future__ import annotations

import pytest

from backupbench import disk_model
from backupbench.engines.clone import FIEMAP_EXTENT_DELALLOC, FIEMAP_EXTENT_SHARED, Extent
from backupbench.engines.file_map import FileMap, Run, drawn_runs, jumps_of, runs_of
from backupbench.errors import RecipeError
from backupbench.cli import options as cli_options
from backupbench.workloads.restore import RestoreOptions, labels, phase_names

MiB = 2**20


def _map(extents: list[Extent], size: int) -> FileMap:
    runs, unplaced = runs_of(extents)
    return FileMap("/f", size, runs, unplaced, jumps_of(runs))


def test_a_contiguous_file_is_one_extent_with_no_jump_however_fiemap_splits_it():
    found = _map([Extent(0, 100 * MiB, 4 * MiB, 0), Extent(4 * MiB, 104 * MiB, 4 * MiB, 0)], 8 * MiB)
    assert (found.extents, found.jumps, found.holes, found.mean_extent_bytes) == (1, (), 0, 8 * MiB)


def test_jumps_have_their_signed_distances_in_file_order():
    # Written out of order: logical 0 lies after logical 1 MiB on the disk.
    found = _map([Extent(MiB, 10 * MiB, MiB, 0), Extent(0, 50 * MiB, MiB, 0), Extent(2 * MiB, 11 * MiB, MiB, 0)],
                 3 * MiB)
    assert found.jumps == (-41 * MiB,)  # back from 51 MiB to 10 MiB; 1 MiB and 2 MiB lie one after the other
    assert found.extents == 2 and found.median_jump_bytes == 41 * MiB


def test_shared_extents_are_counted_and_a_split_of_the_shared_state_alone_is_no_jump():
    found = _map([Extent(0, 0, MiB, FIEMAP_EXTENT_SHARED), Extent(MiB, MiB, MiB, 0),
                  Extent(2 * MiB, 90 * MiB, MiB, FIEMAP_EXTENT_SHARED)], 3 * MiB)
    assert (found.shared_extents, found.shared_bytes) == (2, 2 * MiB)
    assert found.jumps == (88 * MiB,) and found.extents == 2


def test_extents_not_yet_placed_are_counted_apart_and_holes_are_seen():
    found = _map([Extent(MiB, 5 * MiB, MiB, 0), Extent(3 * MiB, 0, MiB, FIEMAP_EXTENT_DELALLOC)], 4 * MiB)
    assert found.unplaced == 1 and found.holes == 1 and found.extents == 1


def test_a_picture_keeps_the_shape_of_a_file_with_more_runs_than_it_can_draw():
    runs = tuple(Run(i * 4096, (i * 7919 % 1000) * 4096, 4096) for i in range(10_000))
    drawn = drawn_runs(FileMap("/f", 10_000 * 4096, runs), limit=100)
    assert len(drawn) == 100 and drawn[0] == runs[0] and drawn[-1] == runs[-1]


def test_the_model_restores_by_hand():
    disk = disk_model.ModelDisk(speed_bps=200e6, access_s=0.01)
    # 1 GB in one piece: 5 s at 200 MB/s; with 100 jumps, 1 s more.
    assert disk_model.sequential_bps(1e9, 0, disk) == pytest.approx(200e6)
    assert disk_model.sequential_bps(1e9, 100, disk) == pytest.approx(1e9 / 6.0)
    # 500 KB blocks: 10 ms + 2.5 ms each; a jump every 1 MB adds half an access per block.
    assert disk_model.random_bps(1e9, 0, 500e3, disk) == pytest.approx(500e3 / 0.0125)
    assert disk_model.random_bps(1e9, 1000, 500e3, disk) == pytest.approx(500e3 / (0.01 * 1.5 + 0.0025))
    assert disk_model.projected({"file_bytes": 1e9, "file_jumps": 0.0}, 500e3, disk) == {
        "model_seq_bw": pytest.approx(200e6), "model_random_bw": pytest.approx(40e6)}
    assert disk_model.projected({"effective_bw": 1.0}, 500e3, disk) == {}


def test_one_file_keeps_kb2014s_names_several_are_named_by_file():
    one = RestoreOptions(files=("/b/job.vbk",))
    assert phase_names(one) == ("restore-sequential", "restore-random")
    two = RestoreOptions(files=("/b/job.vbk", "/b/job-1.vib"), operations=("restore-random",))
    assert phase_names(two) == ("job.vbk:restore-random", "job-1.vib:restore-random")
    assert labels(("/a/x.vbk", "/b/x.vbk", "/b/y.vib")) == {"/a/x.vbk": "a/x.vbk", "/b/x.vbk": "b/x.vbk",
                                                            "/b/y.vib": "y.vib"}


@pytest.mark.parametrize("values,said", [
    ({"files": "relative.vbk"}, "--files"),
    ({"files": "/b/a.vbk,/b/a.vbk"}, "listed twice"),
    ({"operations": "active-full"}, "--operations"),
    ({"disk_speed": "0MB/s"}, "--disk-speed"),
])
def test_restore_options_refuse_what_cannot_be_meant(values, said):
    with pytest.raises(RecipeError, match=said):
        cli_options.build(RestoreOptions, values)
