"""Device stack resolution over a fake /sys and /proc tree built in tmp_path from the lab
guest's recorded slaves/holders listing (sys-block-slaves.txt) and diskstats numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from backupbench.errors import InputError
from backupbench.hostfiles import HostFiles
from backupbench.monitor.stack import device_stack
from backupbench.monitor.sysfs import default_devices, resolve_device_name

from monitor_support import lab_guest_host

ZFS = Path(__file__).parents[1] / "fixtures" / "zfs"


@pytest.fixture
def host(tmp_path: Path) -> HostFiles:
    return lab_guest_host(tmp_path)


def test_lv_resolves_through_its_dm_layer_to_the_disk(host):
    # vg0-lin is an origin (dm-7 its -real, known by name here) with a classic snapshot whose COW
    # (dm-8) is on vda too: the snapshot and its COW are layers, vda the one member.
    stack = device_stack("/mnt/lin/backups/job1/file.vbk", host)   # need not exist
    assert (stack.mount_point, stack.fs_type) == ("/mnt/lin", "xfs")
    assert stack.top == "dm-0" and stack.layers == ("dm-7", "dm-9", "dm-8") and stack.members == ("vda",)
    assert stack.all_names == ["dm-0", "dm-7", "dm-9", "dm-8", "vda"]
    assert stack.labels["dm-0"] == "vg0-lin" and stack.reason is None
    assert "dm-0 (vg0-lin)" in stack.describe()


def test_md_array_resolves_to_its_four_member_disks(host):
    stack = device_stack("/mnt/md", host)
    assert stack.top == "md0" and stack.members == ("vde", "vdf", "vdg", "vdh")
    assert stack.labels["md0"] == "raid6"
    assert stack.all_names == ["md0", "vde", "vdf", "vdg", "vdh"]


def test_a_striped_lv_resolves_to_every_pv_its_table_names(host):
    # dmsetup-table.txt: vg0-str is `striped 4 128` over 254:0, 254:16, 254:32, 254:48 (vda to vdd)
    from backupbench.monitor.stack import walk_stack
    assert walk_stack("dm-1", host) == ([], ["vda", "vdb", "vdc", "vdd"], {"dm-1": ("vda", "vdb", "vdc", "vdd")})


def test_thin_volume_walks_every_layer_depth_first(host):
    # dm-5 -> dm-4 -> (dm-2 -> vdd), (dm-3 -> vda)
    stack = device_stack("/mnt/thin/x", host)
    assert stack.top == "dm-5"
    assert stack.layers == ("dm-4", "dm-2", "dm-3")
    assert stack.members == ("vdd", "vda")
    assert stack.slaves["dm-4"] == ("dm-2", "dm-3")


def test_filesystem_on_a_partition_samples_partition_and_disk(host):
    stack = device_stack("/mnt/part/file", host)
    assert stack.top == "vdb1" and stack.members == ("vdb",)
    assert stack.all_names == ["vdb1", "vdb"]


def test_lv_on_partitions_resolves_partitions_to_their_disks(host):
    stack = device_stack("/mnt/onparts", host)
    assert stack.top == "dm-10" and stack.layers == ("vdb1", "vdc1") and stack.members == ("vdb", "vdc")


def test_loop_device_reports_its_backing_file(host):
    stack = device_stack("/mnt/loop disk/dir", host)
    assert stack.top == "loop3" and stack.members == ("loop3",)
    assert stack.backing_files == {"loop3": "/var/lib/images/disk 1.img"}


def test_root_filesystem_on_a_plain_disk(host):
    stack = device_stack("/srv/anything", host)
    assert stack.mount_point == "/" and stack.top == "vda" and stack.all_names == ["vda"]


@pytest.mark.parametrize("path,fs", [("/mnt/ram/f", "tmpfs"), ("/mnt/over", "overlay"), ("/mnt/nfs/d", "nfs4")])
def test_paths_without_a_block_device_give_an_empty_stack_with_a_reason(host, path, fs):
    stack = device_stack(path, host)
    assert stack.empty and stack.all_names == [] and stack.members == ()
    assert fs in stack.reason and stack.fs_type == fs


def test_unreadable_mount_table_gives_a_reason_not_an_exception(tmp_path):
    stack = device_stack("/x", HostFiles(tmp_path / "nothing"))
    assert stack.empty and "mount table" in stack.reason


def test_all_block_devices_means_no_ram_no_unattached_loop_no_partitions(host):
    names = ["ram0", "loop0", "loop3", "vda", "vdb", "vdb1", "dm-0", "md0"]
    assert default_devices(host, names) == ["loop3", "vda", "vdb", "dm-0", "md0"]


def test_device_names_resolve_or_fail_with_a_fix(host):
    assert resolve_device_name("dm-0", host) == "dm-0"
    assert resolve_device_name("vdb1", host) == "vdb1"
    with pytest.raises(InputError) as err:
        resolve_device_name("sdz", host)
    assert "sdz" in err.value.message and err.value.fix


def recorded(name: str):
    """A zpool stand-in answering `zpool list -vHP POOL` with a recorded output."""
    def run(pool: str) -> list[str]:
        from backupbench.monitor.zfs import leaf_paths
        assert pool == "tp"
        return leaf_paths((ZFS / name).read_text())
    return run


def test_a_zfs_dataset_resolves_through_its_pools_vdevs_to_the_disks(host):
    stack = device_stack("/mnt/tp/job1", host, pool_vdevs=recorded("zpool-list-vHP-draid2.txt"))
    assert stack.pool == "tp" and stack.top is None and not stack.empty
    # data (dRAID), special mirror and log: every leaf partition, then its disk
    assert stack.layers == tuple(f"vd{d}1" for d in "abcdefgh")
    assert stack.members == tuple(f"vd{d}" for d in "abcdefgh")
    assert stack.all_names == [*stack.layers, *stack.members]
    assert "pool tp" in stack.describe() and "members vda" in stack.describe()


def test_vdevs_this_machine_does_not_show_are_left_out_of_a_pools_stack(host):
    # /dev/disk/by-id links do not exist in the fake tree: the plain /dev/vdc1 and /dev/vdd1 remain
    stack = device_stack("/mnt/tp", host, pool_vdevs=recorded("zpool-list-vHP-raidz2.txt"))
    assert stack.members == ("vdc", "vdd") and stack.layers == ("vdc1", "vdd1")


def test_a_pool_whose_vdevs_cannot_be_listed_gives_a_reason(host):
    from backupbench.errors import ToolMissingError

    def no_zpool(pool: str) -> list[str]:
        raise ToolMissingError("zpool is not installed")
    stack = device_stack("/mnt/tp", host, pool_vdevs=no_zpool)
    assert stack.empty and stack.pool == "tp" and "zpool is not installed" in stack.reason


def test_the_drives_of_an_erasure_coded_minio_are_followed_together(host):
    from backupbench.monitor.stack import combined
    one = device_stack("/mnt/part", host)
    both = combined([one, device_stack("/mnt/md/d", host), device_stack("/mnt/ram", host)])
    assert both.top is None and both.layers == ("vdb1", "md0")
    assert both.members == ("vdb", "vde", "vdf", "vdg", "vdh")
    assert both.reason is None and not both.empty
    assert both.describe().count(" | ") == 2 and "tmpfs" in both.describe()
    assert combined([one]) is one


def test_an_agent_names_the_disks_under_its_root_and_why_when_there_are_none(host):
    """agent/feed.py: a per-host timeline sums the disks the agent's root stands on, not the host's others."""
    from backupbench.agent.feed import target_disks

    sampled = ["md0", "vde", "vdf", "vdg", "vdh", "vda", "dm-0", "dm-7"]
    disks, stack = target_disks(Path("/mnt/md/agent-root"), host, sampled)
    assert disks == ["vde", "vdf", "vdg", "vdh"] and stack == device_stack("/mnt/md", host).describe()
    # Only sampled members count: a member the sampler does not see has no rates to add.
    assert target_disks(Path("/mnt/md"), host, ["md0", "vde"])[0] == ["vde"]
    none, why = target_disks(Path("/mnt/ram/agent-root"), host, sampled)
    assert none == [] and why.startswith("root /mnt/ram/agent-root is on no sampled disk: ")


# --- btrfs on several devices: the mount names one, /sys/fs/btrfs/<fsid>/devices/ all ----------

BTRFS_TREE = Path(__file__).parents[1] / "fixtures" / "btrfs" / "sysfs-three-filesystems.txt"
RECORDED = "/tmp/btrec.ypH7"   # where the recording's filesystems were mounted


@pytest.fixture
def btrfs_host(tmp_path: Path) -> HostFiles:
    from monitor_support import recorded_tree
    return recorded_tree(tmp_path, BTRFS_TREE)


def test_a_btrfs_raid1_on_three_devices_is_followed_through_all_three(btrfs_host):
    stack = device_stack(f"{RECORDED}/mnt/backups/job1.vbk", btrfs_host)
    assert stack.source == "/dev/loop0" and stack.fs_type == "btrfs"
    assert stack.members == ("loop0", "loop1", "loop2") and stack.all_names == ["loop0", "loop1", "loop2"]
    assert stack.top is None and stack.spans == stack.members and stack.layers == ()
    assert stack.backing_files == {f"loop{n}": f"{RECORDED}/f{n}" for n in range(3)}
    assert stack.describe() == (f"{RECORDED}/mnt: btrfs on loop0 ({RECORDED}/f0), loop1 ({RECORDED}/f1), "
                                f"loop2 ({RECORDED}/f2)")


def test_a_btrfs_raid1_on_a_partition_and_a_device_is_followed_through_both(btrfs_host):
    # Mounted from loop4, named by the kernel as from loop3p1: whichever member the mount names.
    stack = device_stack(f"{RECORDED}/mnt2", btrfs_host)
    assert stack.spans == ("loop3p1", "loop4") and stack.top is None
    assert stack.layers == ("loop3p1",) and stack.members == ("loop3", "loop4")
    assert stack.all_names == ["loop3p1", "loop3", "loop4"] and stack.slaves == {"loop3p1": ("loop3",)}
    assert stack.describe().startswith(f"{RECORDED}/mnt2: btrfs on loop3p1, loop4 ({RECORDED}/f4); members loop3")


def test_a_btrfs_on_one_device_stands_on_it_as_before(btrfs_host):
    stack = device_stack(f"{RECORDED}/mnt3/x", btrfs_host)
    assert stack.top == "loop5" and stack.members == ("loop5",) and stack.spans == ()
    assert stack.describe() == f"{RECORDED}/mnt3: btrfs on loop5 ({RECORDED}/f5)"


def test_every_user_of_a_btrfs_raid1_stack_gets_every_member(btrfs_host):
    """The cache guard's disks, the monitor's headline members, the agent's timeline disks and
    a MinIO's drives on two such filesystems all come from the stack's members."""
    from backupbench.agent.feed import target_disks
    from backupbench.monitor import Thresholds, cache_guard
    from backupbench.monitor.stack import combined
    from backupbench.runner.phases import MonitorPlan

    stack = device_stack(f"{RECORDED}/mnt", btrfs_host)
    facts = cache_guard.storage_facts(stack, None, btrfs_host)
    assert [loop.device for loop in facts.loops] == ["loop0", "loop1", "loop2"]

    class Summary:
        def mean_over(self, names, metric):
            self.names = names
            return 1.0
    summary = Summary()
    MonitorPlan(stack, 1.0, Thresholds()).headline(summary)
    assert summary.names == ["loop0", "loop1", "loop2"]
    assert target_disks(Path(f"{RECORDED}/mnt/root"), btrfs_host, ["loop0", "loop1", "loop2"])[0] == \
        ["loop0", "loop1", "loop2"]
    drives = combined([stack, device_stack(f"{RECORDED}/mnt2", btrfs_host)])
    assert drives.members == ("loop0", "loop1", "loop2", "loop3", "loop4") and drives.layers == ("loop3p1",)


# --- a classic LVM snapshot: the origin's writes copy into COW devices that are not below it ---

COW_TREE = Path(__file__).parents[1] / "fixtures" / "lvm-snapshot" / "sysfs-cow-on-other-disks.txt"


@pytest.fixture
def snapshot_host(tmp_path: Path) -> HostFiles:
    from monitor_support import recorded_tree
    return recorded_tree(tmp_path, COW_TREE)


def test_an_origin_is_followed_into_every_snapshots_cow_and_its_disk(snapshot_host):
    # The lvm-snapshot layout mounts the origin: the workload's first writes land on vda and copy
    # the old blocks into snap's COW on vdb and snap2's on vdc.
    stack = device_stack("/mnt/origin/backups/job1.vbk", snapshot_host)
    assert stack.top == "dm-0" and stack.labels["dm-0"] == "vg-origin"
    assert stack.layers == ("dm-1", "dm-3", "dm-2", "dm-5", "dm-4")
    assert stack.members == ("vda", "vdb", "vdc")
    assert stack.slaves == {"dm-0": ("dm-1",), "dm-1": ("vda",), "dm-3": ("dm-1", "dm-2"), "dm-2": ("vdb",),
                            "dm-5": ("dm-1", "dm-4"), "dm-4": ("vdc",)}
    assert stack.describe() == ("/mnt/origin: xfs on dm-0 (vg-origin) via dm-1 (vg-origin-real), dm-3 (vg-snap), "
                                "dm-2 (vg-snap-cow), dm-5 (vg-snap2), dm-4 (vg-snap2-cow); members vda, vdb, vdc")


def test_a_mounted_snapshot_stands_on_its_own_cow_and_the_origins_disk_only(snapshot_host):
    # Writes to a snapshot go to its own COW; the origin and the other snapshot see none of them.
    stack = device_stack("/mnt/snap", snapshot_host)
    assert stack.top == "dm-3" and stack.layers == ("dm-1", "dm-2") and stack.members == ("vda", "vdb")


def test_a_real_device_is_known_by_lvms_uuid_not_by_a_name_that_ends_in_real(snapshot_host, tmp_path):
    # A device-mapper device someone named `...-real` without LVM (no LVM- uuid) is only a layer.
    (tmp_path / "sys/devices/virtual/block/dm-1/dm/uuid").write_text("\n")
    stack = device_stack("/mnt/origin", snapshot_host)
    assert stack.layers == ("dm-1",) and stack.members == ("vda",)


def test_every_user_of_an_origins_stack_gets_the_cow_disks(snapshot_host):
    """The monitor's headline members and an agent's timeline disks come from the stack's members."""
    from backupbench.agent.feed import target_disks
    from backupbench.monitor import Thresholds
    from backupbench.runner.phases import MonitorPlan

    stack = device_stack("/mnt/origin", snapshot_host)

    class Summary:
        def mean_over(self, names, metric):
            self.names = names
            return 1.0
    summary = Summary()
    MonitorPlan(stack, 1.0, Thresholds()).headline(summary)
    assert summary.names == ["vda", "vdb", "vdc"]
    assert target_disks(Path("/mnt/origin/root"), snapshot_host, ["vda", "vdb", "vdc", "dm-0"])[0] == ["vda", "vdb", "vdc"]


@pytest.mark.parametrize("dm_name,real", [
    ("vg0-lin-real", True),       # LV lin's -real
    ("vg0-x---real", True),       # LV x-'s -real: its own hyphen doubled, then LVM's
    ("vg0-x--real", False),       # an LV named x-real
    ("vg0-x----real", False),     # an LV named x--real
    ("vg0-lin", False),
])
def test_without_a_uuid_only_lvms_own_real_suffix_counts(tmp_path, dm_name, real):
    from backupbench.monitor.sysfs import lvm_origin_real
    from monitor_support import FakeSys

    FakeSys(tmp_path).add("dm-1", 253, 1, slaves=["vda"], dm_name=dm_name)
    assert lvm_origin_real(HostFiles(tmp_path), "dm-1") is real
