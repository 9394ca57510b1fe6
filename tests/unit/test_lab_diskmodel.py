"""The seeking disk model's arithmetic and its command queue (the Python reference of
native/diskmodel), its options, and how its disks reach nbdkit and QEMU: pure, nothing started."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from backupbench.errors import RecipeError, ToolMissingError
from backupbench.lab import nbd
from backupbench.lab.diskmodel import Arrival, DiskModel, read_stats, schedule
from backupbench.lab.disks import Throttle
from backupbench.lab.options import LabOptions
from backupbench.lab.qemu import Disk, drive_options
from backupbench.schema import validate
from backupbench.units import GiB, KiB, MiB

HDD = DiskModel()
BLOCK = 512 * KiB


def test_defaults_are_a_7200_rpm_disk():
    assert (HDD.average_seek_ns, HDD.track_seek_ns, HDD.rpm, HDD.transfer_rate) == (8_500_000, 800_000, 7200, 200_000_000)
    assert HDD.rotation_ns == 4_166_666           # half a revolution at 7,200 rpm
    # full stroke from the datasheet's average: track + (average - track) * 15/8
    assert HDD.full_seek_ns == 800_000 + 14_437_500


def test_a_sequential_request_pays_only_its_transfer():
    service = HDD.service(head=10 * MiB, offset=10 * MiB, count=BLOCK, capacity=GiB)
    assert (service.distance, service.seek_ns, service.rotation_ns) == (0, 0, 0)
    assert service.transfer_ns == 2_621_440 == service.total_ns   # 524288 B at 200 MB/s


def test_seek_grows_with_the_root_of_the_distance():
    shortest = HDD.service(0, 512, 0, GiB)
    assert shortest.seek_ns == HDD.track_seek_ns + int((HDD.full_seek_ns - HDD.track_seek_ns) * math.sqrt(512 / GiB))
    assert shortest.rotation_ns == HDD.rotation_ns
    assert HDD.service(GiB, 0, 0, GiB).seek_ns == HDD.full_seek_ns            # the whole stroke, either way
    quarter = HDD.service(0, GiB // 4, 0, GiB).seek_ns
    assert quarter == HDD.track_seek_ns + (HDD.full_seek_ns - HDD.track_seek_ns) // 2
    assert HDD.service(3 * GiB // 4, GiB // 2, 0, GiB).seek_ns == quarter     # backwards costs the same


def test_the_expected_random_read_matches_drawn_requests():
    # 8/15 is E[sqrt|X - Y|] for uniform X, Y: the model's mean seek over random positions is the
    # datasheet's average seek (whole disk), and scales with sqrt(span) within part of a disk.
    rng = random.Random(39)
    for span in (GiB, GiB // 4):
        head, total, count = 0, 0, 20_000
        for _ in range(count):
            offset = rng.randrange(span // BLOCK) * BLOCK
            total += HDD.service(head, offset, BLOCK, GiB).total_ns
            head = offset + BLOCK
        expected = HDD.random_read_seconds(BLOCK, span, GiB)
        assert total / count / 1e9 == pytest.approx(expected, rel=0.02)
    assert HDD.random_read_seconds(BLOCK, GiB, GiB) == pytest.approx((8.5 + 30 / 7.2 + 2.62144) / 1000, rel=1e-6)
    assert HDD.random_rate(BLOCK, GiB, GiB) / MiB == pytest.approx(32.7, abs=0.1)


def test_bad_models_are_refused():
    with pytest.raises(ValueError, match="shorter than the track-to-track"):
        DiskModel(average_seek_ns=500_000)
    with pytest.raises(ValueError, match="more than 0"):
        DiskModel(transfer_rate=0)
    with pytest.raises(ValueError, match="at least 1"):
        DiskModel(queue_depth=0)


def test_filter_parameters_and_server_argv():
    argv = nbd.nbdkit_argv(Path("/w/d0.img"), Path("/w/d0.nbd"), Path("/w/d0.pid"), HDD,
                           Path("/t/nbdkit-diskmodel-filter.so"), stats=Path("/w/d0.stats"))
    assert argv == ["nbdkit", "--foreground", "--unix", "/w/d0.nbd", "--pidfile", "/w/d0.pid", "--threads=33",
                    "--filter=/t/nbdkit-diskmodel-filter.so", "file", "file=/w/d0.img",
                    "diskmodel-track-ns=800000", "diskmodel-full-ns=15237500", "diskmodel-rpm=7200",
                    "diskmodel-rate=200000000", "diskmodel-slack-ns=5000000", "diskmodel-queue-depth=32",
                    "diskmodel-max-passes=32", "diskmodel-stats=/w/d0.stats"]
    # a thread for the request on the platter and one for each the disk may choose among
    fifo = nbd.nbdkit_argv(Path("/w/d0.img"), Path("/w/d0.nbd"), Path("/w/d0.pid"), DiskModel(queue_depth=1),
                           Path("/t/f.so"))
    assert "--threads=2" in fifo and "diskmodel-queue-depth=1" in fifo


def test_stats_file_is_read_as_numbers():
    assert read_stats("requests=3\nseek_ns=123\nbroken\nlate=0\n") == {"requests": 3, "seek_ns": 123, "late": 0}


def test_a_missing_filter_says_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setenv(nbd.FILTER_ENV, str(tmp_path / "absent.so"))
    with pytest.raises(ToolMissingError, match="not built") as info:
        nbd.filter_path()
    assert "scripts/build-diskmodel.sh" in (info.value.fix or "")


def test_qemu_attaches_a_served_disk_over_nbd():
    served = Disk(Path("/w/d0.img"), "lab-d0", socket=Path("/w,x/d0.nbd"))
    text = drive_options(0, served, Throttle())
    assert text == "if=none,id=d0,file.driver=nbd,file.server.type=unix,file.server.path=/w,,x/d0.nbd,format=raw"
    assert "aio=" not in text and "cache=" not in text
    assert drive_options(0, served, Throttle(iops_total=100)).endswith(",throttling.iops-total=100")


def _options(**values) -> LabOptions:
    return validate(LabOptions, values, lambda loc: "--" + str(loc[0]).replace("_", "-") if loc else "options")


def test_the_hdd_option_builds_the_model_and_drops_the_default_throttle():
    assert _options().seeking_model() is None and _options().throttle().bps_total == 50 * MiB
    options = _options(disk_model="hdd")
    assert options.seeking_model() == HDD
    assert options.throttle().unlimited            # the model's transfer rate is the disk's speed
    assert _options(disk_model="hdd", disk_rate="100MiB/s").throttle().bps_total == 100 * MiB
    custom = _options(disk_model="hdd", seek_time="12ms", track_seek="1ms", rpm=5400, transfer_rate="120MiB/s",
                      disk_queue_depth=1)
    assert custom.seeking_model() == DiskModel(average_seek_ns=12_000_000, track_seek_ns=1_000_000, rpm=5400,
                                               transfer_rate=120 * MiB, queue_depth=1)


@pytest.mark.parametrize("values, message", [
    ({"rpm": 5400}, "--rpm is a setting of the disk model: add --disk-model hdd"),
    ({"disk_model": "ssd"}, "--disk-model"),
    ({"disk_model": "hdd", "seek_time": "0.5ms"}, "shorter than the track-to-track"),
    ({"disk_model": "hdd", "transfer_rate": "fast"}, "--transfer-rate"),
    ({"disk_model": "hdd", "track_seek": "soon"}, "--track-seek"),
    ({"disk_model": "hdd", "rpm": 100}, "--rpm"),
    ({"disk_queue_depth": 4}, "--disk-queue-depth is a setting of the disk model: add --disk-model hdd"),
    ({"disk_model": "hdd", "disk_queue_depth": 0}, "--disk-queue-depth"),
])
def test_bad_model_options_are_one_line(values, message):
    with pytest.raises(RecipeError, match=message):
        _options(**values)


def test_the_progress_line_says_what_the_disks_are():
    assert nbd.describe(None, Throttle(bps_total=50 * MiB)) == "50 MiB/s"
    text = nbd.describe(HDD, Throttle())
    assert text.startswith("seeking disk model: average seek 8.5 ms") and "7200 rpm" in text and "190.7 MiB/s" in text
    assert nbd.describe(HDD, Throttle(iops_total=100)).endswith(", 100 IOPS")


# ---- the command queue (schedule) -------------------------------------------------------------
MS = 1_000_000
QUICK = DiskModel(average_seek_ns=2 * MS, track_seek_ns=200_000, rpm=15000, transfer_rate=100_000_000)
CHUNK = 256 * KiB   # 2,621,440 ns at 100 MB/s


def _together(chunks: list[int], at: int = 1_000 * MS) -> list[Arrival]:
    """One chunk each at these chunk numbers, all come within microseconds, in this order."""
    return [Arrival(at + i * 1_000, chunk * CHUNK, CHUNK) for i, chunk in enumerate(chunks)]


def _order(model: DiskModel, requests: list[Arrival], head: int = 0) -> list[int]:
    return [requests[s.index].offset // CHUNK for s in schedule(model, requests, GiB, head=head)]


def test_depth_1_serves_in_arrival_order_one_after_another():
    requests = _together([5, 1, 9, 2]) + [Arrival(2_000 * MS, 3 * CHUNK, CHUNK)]
    fifo = DiskModel(queue_depth=1)
    served = schedule(fifo, requests, GiB)
    assert [s.index for s in served] == [0, 1, 2, 3, 4]
    assert served[0].start_ns == requests[0].arrival_ns and served[0].candidates == 1
    for before, after in zip(served, served[1:4]):
        assert after.start_ns == before.end_ns        # queued: it starts when the disk is free
    assert served[4].start_ns == 2_000 * MS           # came to an idle disk long after: starts when it came
    head = 0
    for s in served:                                  # each charged from where the last one ended
        request = requests[s.index]
        assert s.service == fifo.service(head, request.offset, request.count, GiB)
        head = request.offset + request.count


def test_the_sweep_serves_what_is_ahead_of_the_head_in_order_then_starts_again():
    # The first comes to an idle disk and is served at once; the others wait, and the disk goes
    # up from its head (at 6: the first's end) and then back to the lowest.
    assert _order(QUICK, _together([5, 9, 2, 7, 1, 6])) == [5, 6, 7, 9, 1, 2]
    served = schedule(QUICK, _together([5, 9, 2, 7, 1, 6]), GiB)
    assert [s.candidates for s in served] == [1, 5, 4, 3, 2, 1]
    assert served[1].service.distance == 0 and served[1].service.seek_ns == 0   # 6 starts where 5 ended


def test_two_interleaved_streams_are_served_one_run_each():
    # Two sequential streams far apart, their requests arriving alternately while the disk is busy:
    # in arrival order every request seeks; the sweep seeks once to each stream.
    far = 2048
    offsets = [0, far, 1, far + 1, 2, far + 2, 3, far + 3]
    requests = _together(offsets)
    fifo = schedule(DiskModel(queue_depth=1), requests, GiB)
    queued = schedule(DiskModel(), requests, GiB)
    assert sum(s.service.distance != 0 for s in fifo) == 7
    assert [requests[s.index].offset // CHUNK for s in queued] == [0, 1, 2, 3, far, far + 1, far + 2, far + 3]
    assert sum(s.service.distance != 0 for s in queued) == 1
    assert queued[-1].end_ns < fifo[-1].end_ns


def test_only_the_first_queue_depth_waiting_are_chosen_among():
    # Depth 2: after the first, the disk sees 9 and 2 (not 1, the fourth): the sweep takes 9
    # (ahead of the head at 6), then 2 and 1 in turn.
    assert _order(DiskModel(queue_depth=2), _together([5, 9, 2, 1])) == [5, 9, 1, 2]
    assert [s.candidates for s in schedule(DiskModel(queue_depth=2), _together([5, 9, 2, 1]), GiB)] == [1, 2, 2, 1]


def test_a_request_behind_the_head_is_served_once_passed_over_max_passes_times():
    # A stream keeps the head busy just ahead of it; the request at 0 (behind) would wait for the
    # whole stream without the bound.
    stream = [100 + i for i in range(10)]
    requests = _together([99, 0, *stream])
    order = _order(DiskModel(max_passes=3), requests)
    assert order[:5] == [99, 100, 101, 102, 0]       # passed by 100, 101 and 102, then served
    served = schedule(DiskModel(max_passes=3), requests, GiB)
    assert [s.aged for s in served[:5]] == [False, False, False, False, True]
    assert _order(DiskModel(), requests)[-1] == 0    # 32 passes: after the whole stream


def test_a_gap_within_the_slack_is_not_idle_time():
    first = Arrival(1_000 * MS, 0, CHUNK)
    end = first.arrival_ns + QUICK.service(0, 0, CHUNK, GiB).total_ns
    soon = schedule(QUICK, [first, Arrival(end + 3 * MS, CHUNK, CHUNK)], GiB)
    later = schedule(QUICK, [first, Arrival(end + 6 * MS, CHUNK, CHUNK)], GiB)
    assert soon[1].start_ns == end                   # within the 5 ms slack: starts where the first ended
    assert later[1].start_ns == end + 6 * MS         # beyond it: the disk was idle


def test_a_late_host_io_moves_when_the_disk_is_free_and_so_what_it_chooses_among():
    # The second arrives after the first's deadline but before the disk is free when the host's
    # I/O for the first ran 2 ms behind: then it is chosen among the waiting, not first alone.
    first = Arrival(1_000 * MS, 10 * CHUNK, CHUNK)
    end = first.arrival_ns + QUICK.service(0, 10 * CHUNK, CHUNK, GiB).total_ns
    others = [Arrival(end - 1_000, 50 * CHUNK, CHUNK), Arrival(end + MS, 11 * CHUNK, CHUNK)]
    on_time = schedule(QUICK, [first, *others], GiB)
    behind = schedule(QUICK, [Arrival(first.arrival_ns, first.offset, first.count, behind_ns=2 * MS), *others], GiB)
    assert [s.index for s in on_time] == [0, 1, 2]
    assert [s.index for s in behind] == [0, 2, 1]    # 11 and 50 both waited: 11 is next in the sweep
    assert behind[1].start_ns == end + 2 * MS


def test_the_queued_random_rate_is_the_sweep_over_a_full_queue():
    # One waiting at a time is random_rate's arithmetic; a full queue shortens the seeks (the
    # rotation stays half a revolution: no rotational ordering), never beyond the transfer rate.
    assert HDD.random_rate_queued(BLOCK, GiB, GiB, waiting=1) == pytest.approx(HDD.random_rate(BLOCK, GiB, GiB), rel=0.02)
    queued = HDD.random_rate_queued(BLOCK, GiB, GiB, waiting=15)
    assert 1.3 * HDD.random_rate(BLOCK, GiB, GiB) < queued < BLOCK / ((HDD.track_seek_ns + HDD.rotation_ns) / 1e9)
    assert DiskModel(queue_depth=1).random_rate_queued(BLOCK, GiB, GiB, waiting=15) == pytest.approx(
        HDD.random_rate(BLOCK, GiB, GiB), rel=0.02)
    assert HDD.random_rate_queued(BLOCK, GiB, GiB, waiting=15) == queued      # seeded: the same every time


def test_sockets_of_a_deep_work_folder_go_to_a_short_folder_removed_with_the_servers(tmp_path):
    deep = tmp_path / ("w" * 120)
    deep.mkdir()
    servers = nbd.DiskServers(DiskModel(), deep, filter_so=tmp_path / "filter.so")
    short = servers.socket_folder()
    assert short != deep and short.is_dir() and len(str(short / "d999.nbd")) <= nbd.SOCKET_PATH_MAX
    servers.stop()
    assert not short.exists() and deep.is_dir()   # only the folder it made is removed
    shallow = nbd.DiskServers(DiskModel(), tmp_path, filter_so=tmp_path / "filter.so")
    assert shallow.socket_folder() == tmp_path
    shallow.stop()
    assert tmp_path.is_dir()
