import pytest

from backupbench import units


@pytest.mark.parametrize("text,expected", [
    ("512k", 512 * 1024), ("512K", 512 * 1024), ("512KiB", 512 * 1024), ("512KB", 512_000),
    ("1GiB", 2**30), ("1G", 2**30), ("1GB", 10**9), ("10TiB", 10 * 2**40), ("4096", 4096),
    ("1.5MiB", 1572864), (" 64 MiB ", 64 * 2**20), (7, 7),
])
def test_parse_size(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "12x", "1.5", "-1", "MiB", "1iB", "0.3k"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        units.parse_size(text)


def test_rates_never_confuse_kib_and_kb():
    assert units.parse_rate("50MB/s") == 50_000_000
    assert units.parse_rate("50MiB/s") == 52_428_800
    assert units.parse_rate("50M") == 52_428_800


@pytest.mark.parametrize("text,seconds", [("10s", 10), ("2m", 120), ("500ms", 0.5), ("1h", 3600), (3, 3.0), ("7", 7)])
def test_parse_duration(text, seconds):
    assert units.parse_duration(text) == seconds


def test_format_and_fio_size():
    assert units.format_size(2**30) == "1 GiB"
    assert units.format_size(1536) == "1.5 KiB"
    assert units.format_size(100) == "100 B"
    assert units.fio_size(512 * 1024) == "512k"
    assert units.fio_size(3 * 2**30) == "3g"
    assert units.fio_size(1000) == "1000"
    assert units.format_rate(50 * units.MiB) == "50.0 MiB/s"
