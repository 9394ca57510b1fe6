"""Pure tests: --disks specs, throttles (exact bytes/s), lab options."""

from __future__ import annotations

import pytest

from backupbench.errors import InputError, RecipeError, RefusedError
from backupbench.lab.disks import (DiskSpec, Throttle, check_space, format_bytes_rate, format_disks, parse_disks,
                                   parse_throttle)
from backupbench.lab.options import LabOptions
from backupbench.schema import validate
from backupbench.units import GiB, MiB


def test_count_times_size_groups():
    disks = parse_disks("4x4GiB,4x1GiB")
    assert disks == [DiskSpec(4 * GiB)] * 4 + [DiskSpec(1 * GiB)] * 4


@pytest.mark.parametrize("text, expected", [
    ("1GiB", [DiskSpec(GiB)]),
    ("2 x 512MiB", [DiskSpec(512 * MiB)] * 2),
    ("1G", [DiskSpec(GiB)]),  # a bare letter is binary, like dd and fio
    ("1x1000MB", [DiskSpec(1000 * 1000 * 1000)]),
    ("2x1GiB:xfs", [DiskSpec(GiB, "xfs")] * 2),
    ("1x1GiB:EXT4, 3X64MiB", [DiskSpec(GiB, "ext4")] + [DiskSpec(64 * MiB)] * 3),
])
def test_parse_disks(text, expected):
    assert parse_disks(text) == expected


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("0x1GiB", "no disk"),
    ("4xlots", "not a size"),
    ("4x1GiB:zfs", "unknown filesystem"),
    ("1x1MiB", "at least"),
    ("1x100000001", "512-byte sectors"),
    ("27x1GiB", "at most 26"),
])
def test_parse_disks_refuses(text, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_disks(text)


def test_format_disks_round_trip():
    text = "4x4GiB,1x1GiB:xfs,2x512MiB"
    assert format_disks(parse_disks(text)) == text


def test_throttle_options_are_plain_bytes_per_second():
    assert Throttle(bps_total=52428800).options() == ["throttling.bps-total=52428800"]
    throttle = parse_throttle(None, None, read_rate="100MiB/s", write_rate="50MB/s", read_iops=400, write_iops="200")
    assert throttle.options() == [
        "throttling.bps-read=104857600", "throttling.bps-write=50000000",
        "throttling.iops-read=400", "throttling.iops-write=200",
    ]


def test_parse_throttle_units_and_none():
    assert parse_throttle("50MiB/s").bps_total == 52428800
    assert parse_throttle("50MB/s").bps_total == 50000000
    assert parse_throttle("none").unlimited
    assert parse_throttle(None, "none").unlimited
    assert parse_throttle("20MiB/s", 300).options() == ["throttling.bps-total=20971520", "throttling.iops-total=300"]


@pytest.mark.parametrize("kwargs, fragment", [
    ({"bps_total": 1, "bps_read": 1}, "cannot be combined"),
    ({"iops_total": 1, "iops_write": 1}, "cannot be combined"),
    ({"bps_total": 0}, "positive"),
])
def test_throttle_refuses(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        Throttle(**kwargs)


def test_bad_rate_text_names_the_option():
    with pytest.raises(InputError, match="--disk-rate"):
        parse_throttle("fast")
    with pytest.raises(InputError, match="--disk-iops"):
        parse_throttle(None, "many")


def test_describe_is_exact():
    assert Throttle(bps_total=52428800).describe() == "50 MiB/s"
    assert Throttle(bps_write=50000000, iops_read=100).describe() == "write 50 MB/s, read 100 IOPS"
    assert Throttle().describe() == "unthrottled"
    assert format_bytes_rate(1234567) == "1234567 B/s"


def test_check_space_refuses_more_than_free(tmp_path):
    with pytest.raises(RefusedError, match="need") as info:
        check_space(tmp_path, parse_disks("4x1000TiB"))
    assert "--disks" in (info.value.fix or "")
    check_space(tmp_path, parse_disks("1x16MiB"))


def _options(**values):
    return validate(LabOptions, values, lambda loc: "--" + str(loc[0]).replace("_", "-") if loc else "options")


def test_lab_options_defaults():
    options = _options()
    assert options.disk_specs() == [DiskSpec(4 * GiB)] * 4
    assert options.throttle() == Throttle(bps_total=52428800)
    assert options.memory == GiB


def test_read_write_rates_replace_the_default_total():
    options = _options(disk_write_rate="30MiB/s")
    assert options.throttle() == Throttle(bps_write=30 * MiB)


def test_explicit_total_and_read_rate_clash():
    with pytest.raises(RecipeError, match="cannot be combined"):
        _options(disk_rate="50MiB/s", disk_read_rate="10MiB/s")


@pytest.mark.parametrize("values, key", [
    ({"disks": "4xbig"}, "--disks"),
    ({"memory": "100MiB"}, "--memory"),
    ({"cpus": 0}, "--cpus"),
])
def test_lab_options_errors_name_the_flag(values, key):
    with pytest.raises(RecipeError, match=key):
        _options(**values)
