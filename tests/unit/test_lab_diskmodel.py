"""The seeking disk model's arithmetic (the Python reference of native/diskmodel), its options,
and how its disks reach nbdkit and QEMU: pure, nothing started."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from backupbench.errors import RecipeError, ToolMissingError
from backupbench.lab import nbd
from backupbench.lab.diskmodel import DiskModel, read_stats
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


def test_filter_parameters_and_server_argv():
    argv = nbd.nbdkit_argv(Path("/w/d0.img"), Path("/w/d0.nbd"), Path("/w/d0.pid"), HDD,
                           Path("/t/nbdkit-diskmodel-filter.so"), stats=Path("/w/d0.stats"))
    assert argv == ["nbdkit", "--foreground", "--unix", "/w/d0.nbd", "--pidfile", "/w/d0.pid",
                    "--filter=/t/nbdkit-diskmodel-filter.so", "file", "file=/w/d0.img",
                    "diskmodel-track-ns=800000", "diskmodel-full-ns=15237500", "diskmodel-rpm=7200",
                    "diskmodel-rate=200000000", "diskmodel-slack-ns=5000000", "diskmodel-stats=/w/d0.stats"]


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
    custom = _options(disk_model="hdd", seek_time="12ms", track_seek="1ms", rpm=5400, transfer_rate="120MiB/s")
    assert custom.seeking_model() == DiskModel(average_seek_ns=12_000_000, track_seek_ns=1_000_000, rpm=5400,
                                               transfer_rate=120 * MiB)


@pytest.mark.parametrize("values, message", [
    ({"rpm": 5400}, "--rpm is a setting of the disk model: add --disk-model hdd"),
    ({"disk_model": "ssd"}, "--disk-model"),
    ({"disk_model": "hdd", "seek_time": "0.5ms"}, "shorter than the track-to-track"),
    ({"disk_model": "hdd", "transfer_rate": "fast"}, "--transfer-rate"),
    ({"disk_model": "hdd", "track_seek": "soon"}, "--track-seek"),
    ({"disk_model": "hdd", "rpm": 100}, "--rpm"),
])
def test_bad_model_options_are_one_line(values, message):
    with pytest.raises(RecipeError, match=message):
        _options(**values)


def test_the_progress_line_says_what_the_disks_are():
    assert nbd.describe(None, Throttle(bps_total=50 * MiB)) == "50 MiB/s"
    text = nbd.describe(HDD, Throttle())
    assert text.startswith("seeking disk model: average seek 8.5 ms") and "7200 rpm" in text and "190.7 MiB/s" in text
    assert nbd.describe(HDD, Throttle(iops_total=100)).endswith(", 100 IOPS")
