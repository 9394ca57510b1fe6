"""ZFS's own figures from recorded outputs of the lab guest (tests/fixtures/zfs)."""

from pathlib import Path

import pytest

from backupbench.errors import ToolMissingError
from backupbench.hostfiles import HostFiles
from backupbench.monitor.zfs import (PoolGauge, hit_percent, leaf_paths, parse_kstat, parse_pool_space,
                                     pool_of)

ZFS = Path(__file__).parents[1] / "fixtures" / "zfs"


def test_leaf_vdevs_of_data_special_and_log_but_not_groups_or_distributed_spares():
    paths = leaf_paths((ZFS / "zpool-list-vHP-draid2.txt").read_text())
    assert paths == [f"/dev/vd{d}1" for d in "abcdefgh"]
    by_id = leaf_paths((ZFS / "zpool-list-vHP-raidz2.txt").read_text())
    assert by_id[:2] == ["/dev/disk/by-id/virtio-lab-d0-part1", "/dev/disk/by-id/virtio-lab-d1-part1"]
    assert by_id[2:] == ["/dev/vdc1", "/dev/vdd1"]


def test_the_pool_of_a_dataset():
    assert pool_of("zfs", "tank/backups/vm1") == "tank"
    assert pool_of("zfs", "tank") == "tank"
    assert pool_of("xfs", "/dev/vda") is None


def test_arcstats_counters_and_the_hit_ratio_over_a_phase():
    stats = parse_kstat((ZFS / "arcstats.txt").read_text())
    assert stats["hits"] == 1768 and stats["misses"] == 0 and stats["c_max"] == 627368960
    assert hit_percent({"hits": 100, "misses": 50}, {"hits": 190, "misses": 60}) == pytest.approx(90.0)
    assert hit_percent(stats, stats) is None  # no lookups: no ratio, not 0 %


def test_pool_space_in_bytes():
    space = parse_pool_space((ZFS / "zpool-list-Hp-capacity.txt").read_text())
    assert (space.size, space.allocated) == (4026531840, 1548288)
    assert space.used_percent == pytest.approx(100 * 1548288 / 4026531840)
    with pytest.raises(ValueError):
        parse_pool_space("tp\t3.75G\t1.48M\t0\n")  # not -p: not bytes


def _host_with_arcstats(tmp_path: Path, hits: int, misses: int) -> HostFiles:
    text = (ZFS / "arcstats.txt").read_text()
    text = text.replace("hits                            4    1768", f"hits                            4    {hits}", 1)
    text = text.replace("misses                          4    0", f"misses                          4    {misses}", 1)
    folder = tmp_path / "proc/spl/kstat/zfs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "arcstats").write_text(text)
    return HostFiles(tmp_path)


def test_a_gauge_gives_the_phases_hit_ratio_and_how_full_the_pool_ended(tmp_path):
    space = (ZFS / "zpool-list-Hp-capacity.txt").read_text()
    calls = []

    def zpool(argv):
        calls.append(argv)
        return space
    gauge = PoolGauge("tp", _host_with_arcstats(tmp_path, 1000, 1000), run=zpool).start()
    _host_with_arcstats(tmp_path, 1300, 1100)
    figures, errors = gauge.figures()
    assert errors == []
    assert figures["zfs.arc_hit"] == pytest.approx(75.0)
    assert figures["zfs.pool_allocated"] == 1548288
    assert calls == [["zpool", "list", "-Hp", "-o", "name,size,allocated,capacity", "tp"]]
    assert PoolGauge.unit("zfs.arc_hit") == "%" and PoolGauge.unit("zfs.pool_allocated") == "B"


def test_a_gauge_says_what_it_could_not_read(tmp_path):
    def no_zpool(argv):
        raise ToolMissingError("zpool is not installed")
    figures, errors = PoolGauge("tp", HostFiles(tmp_path), run=no_zpool).start().figures()
    assert figures == {}
    assert errors == ["cannot read /proc/spl/kstat/zfs/arcstats", "pool tp: zpool is not installed"]
