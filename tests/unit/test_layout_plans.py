"""Plans for every layout kind: the exact commands, their undo, and the refusals."""

from pathlib import Path

import pytest

from backupbench.layouts.actions import Action, Guard
from backupbench.layouts.capabilities import HostCapabilities, missing
from backupbench.layouts.executor import Provisioner, undo_actions
from backupbench.journal import Journal, JournalBusy, open_journals, read
from backupbench.layouts.naming import Names
from backupbench.layouts.registry import plan_layout
from backupbench.plan import build
from backupbench.process import Result
from backupbench.recipe import model

RUN = "20261122T010000-ab12"
DEVICES = ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"]
ALL = HostCapabilities(
    kernel=frozenset({"dm", "dm-thin-pool", "dm-snapshot", "md", "raid456", "zfs", "fs:xfs", "fs:ext4", "fs:btrfs"}),
    tools=frozenset({"lvcreate", "thin_check", "mdadm", "mkfs.xfs", "mkfs.ext4", "mkfs.btrfs", "btrfs", "zpool"}),
)


def recipe(*layouts, workload=None):
    return model.parse({"name": "t", "devices": DEVICES, "layout": list(layouts),
                        "workload": workload or [{"kind": "kb2014"}]})


def commands(layout_spec):
    plan = plan_layout(recipe(layout_spec).layout[0], RUN, Path("/mnt/bb"))
    return plan, [list(argv) for action in plan.actions for argv in action.do]


def test_lvm_striped_exact_commands():
    plan, cmds = commands({"name": "striped", "kind": "lvm-striped", "devices": DEVICES, "stripe_size": "64k"})
    vg = "bb_striped_ab12"
    assert cmds == [
        ["pvcreate", *DEVICES],
        ["vgcreate", "--addtag", "backupbench", "--addtag", f"bb_run_{RUN}", vg, *DEVICES],
        ["lvcreate", "--yes", "--addtag", "backupbench", "--addtag", f"bb_run_{RUN}", "-n", "lv",
         "-i", "4", "-I", "64k", "-l", "100%FREE", vg],
        ["mkfs.xfs", "-f", "-L", Names(RUN, "striped").label, "-m", "reflink=1,crc=1", f"/dev/{vg}/lv"],
        ["mkdir", "-p", f"/mnt/bb/{RUN}/striped"],
        ["mount", f"/dev/{vg}/lv", f"/mnt/bb/{RUN}/striped"],
    ]
    undo = [list(argv) for action in reversed(plan.actions) for argv in action.undo]
    assert undo == [["umount", f"/mnt/bb/{RUN}/striped"], ["rmdir", f"/mnt/bb/{RUN}/striped"],
                    ["lvremove", "-y", f"{vg}/lv"], ["vgremove", vg], ["pvremove", *DEVICES]]
    assert plan.actions[0].destructive and plan.mount_point == Path(f"/mnt/bb/{RUN}/striped")


def test_lvm_linear_thin_and_snapshots():
    _, cmds = commands({"name": "lin", "kind": "lvm-linear", "devices": DEVICES[:1], "size": "1GiB",
                        "filesystem": {"type": "ext4", "owner": "veeam", "group": "veeam", "mode": "0700"}})
    assert ["lvcreate", "--yes", "--addtag", "backupbench", "--addtag", f"bb_run_{RUN}", "-n", "lv", "-L",
            "1048576k", "bb_lin_ab12"] in cmds
    assert cmds[-2:] == [["chown", "veeam:veeam", f"/mnt/bb/{RUN}/lin"], ["chmod", "0700", f"/mnt/bb/{RUN}/lin"]]
    assert cmds[3][0] == "mkfs.ext4" and "lazy_itable_init=0,lazy_journal_init=0" in cmds[3]

    _, cmds = commands({"name": "thin", "kind": "lvm-thin", "devices": DEVICES[:2], "chunk_size": "64k",
                        "virtual_size": "4GiB"})
    assert any(c[:2] == ["lvcreate", "--yes"] and "thin-pool" in c and c[-3:] == ["-c", "64k", "bb_thin_ab12"]
               for c in cmds)
    assert any("--thinpool" in c and "4194304k" in c for c in cmds)

    plan, cmds = commands({"name": "snap", "kind": "lvm-snapshot", "devices": DEVICES[:2], "origin_size": "1GiB",
                           "snapshots": 2, "snapshot_size": "256MiB"})
    snaps = [c for c in cmds if "-s" in c]
    assert [c[c.index("-n") + 1] for c in snaps] == ["snap1", "snap2"]
    assert all(c[-3:] == ["-L", "262144k", "bb_snap_ab12/origin"] for c in snaps)
    # Snapshots are taken after the filesystem is mounted: the workload's writes are then first writes.
    assert cmds.index(snaps[0]) > max(i for i, c in enumerate(cmds) if c[0] == "mount")
    assert plan.watched_snapshots == (("bb_snap_ab12", "snap1"), ("bb_snap_ab12", "snap2"))


def test_mdraid_is_assume_clean_and_named():
    plan, cmds = commands({"name": "r6", "kind": "mdraid", "level": 6, "chunk": "64k", "devices": DEVICES})
    assert cmds[0] == ["mdadm", "--create", "/dev/md/bb-r6-ab12", "--run", "--metadata", "1.2", "--level", "6",
                       "--raid-devices", "4", "--chunk", "64K", "--assume-clean", "--name", "bb-r6-ab12", *DEVICES]
    assert plan.actions[0].undo == (("mdadm", "--stop", "/dev/md/bb-r6-ab12"),
                                    ("mdadm", "--zero-superblock", *DEVICES))
    assert "assume-clean" in plan.notes[0]


def test_btrfs_zfs_and_plain_filesystem():
    _, cmds = commands({"name": "b", "kind": "btrfs", "devices": DEVICES[:2], "data": "raid1", "metadata": "raid1"})
    assert cmds[0] == ["mkfs.btrfs", "-f", "-L", Names(RUN, "b").label, "-d", "raid1", "-m", "raid1", *DEVICES[:2]]
    assert cmds[1] == ["btrfs", "device", "scan", *DEVICES[:2]]
    plan, cmds = commands({"name": "z", "kind": "zfs", "vdev": "draid2", "draid_data": 1, "draid_spares": 1,
                           "devices": DEVICES, "properties": {"xattr": "sa", "atime": "off", "recordsize": "1M"}})
    assert cmds[0] == ["mkdir", "-p", f"/mnt/bb/{RUN}/z"]
    assert cmds[1] == ["zpool", "create", "-m", f"/mnt/bb/{RUN}/z", "-O", f"backupbench:run={RUN}",
                       "-O", "atime=off", "-O", "recordsize=1M", "-O", "xattr=sa", "bb_z_ab12",
                       "draid2:1d:4c:1s", *DEVICES]
    assert plan.actions[0].undo == (("rmdir", f"/mnt/bb/{RUN}/z"),)
    assert plan.actions[1].guard.contains == RUN
    # Teardown leaves the disks as empty as they were: the pool, its labels on the partition
    # zpool made on each disk, and the partition table.
    assert plan.actions[1].undo == (("zpool", "destroy", "bb_z_ab12"),
                                    *(("zpool", "labelclear", "-f", f"{d}1") for d in DEVICES),
                                    *(("wipefs", "-a", d) for d in DEVICES))
    assert plan.whole_disks
    plan, cmds = commands({"name": "x", "kind": "filesystem", "devices": ["/dev/vda"]})
    assert cmds[0][0] == "mkfs.xfs" and plan.actions[0].undo == (("wipefs", "-a", "/dev/vda"),)
    assert plan.actions[0].guard == Guard(("blkid", "-p", "-o", "value", "-s", "LABEL", "/dev/vda"), Names(RUN, "x").label)
    assert len(Names(RUN, "x").label) == 12 and Names(RUN, "x").label != Names(RUN, "y").label


def test_missing_kernel_features_refuse_the_layout_with_the_reason():
    no_dm = HostCapabilities(kernel=frozenset({"fs:xfs"}), tools=frozenset({"lvcreate", "mkfs.xfs"}))
    plan = build(recipe({"name": "lin", "kind": "lvm-linear", "devices": DEVICES[:1]}), RUN, no_dm, lambda d: [])
    assert len(plan.refusals) == 1
    assert "lvm-linear needs device-mapper" in plan.refusals[0] and "lab" in plan.refusals[0]
    assert missing(plan.steps[0].layout.requirements, ALL) == []


@pytest.mark.parametrize("misc, refused", [("236 device-mapper\n", False), ("", True)])
def test_lvm_is_refused_on_a_kernel_without_device_mapper(tmp_path, misc, refused):
    """The probe reads a recorded host, not this machine: /proc/misc with and without
    device-mapper, no module loading (as on the project's machines), the LVM tools installed."""
    from backupbench.hostfiles import HostFiles
    from backupbench.layouts.capabilities import collect
    for name, text in {"misc": f"183 hw_random\n{misc}", "filesystems": "\txfs\n"}.items():
        (tmp_path / "proc").mkdir(exist_ok=True)
        (tmp_path / "proc" / name).write_text(text)
    (tmp_path / "sys" / "module").mkdir(parents=True)
    caps = collect(HostFiles(tmp_path), which=lambda tool: f"/usr/sbin/{tool}", tools=("lvcreate", "mkfs.xfs"))
    plan = build(recipe({"name": "lin", "kind": "lvm-linear", "devices": DEVICES[:1]}), RUN, caps, lambda d: [])
    if refused:
        assert plan.refusals == ["lin: lvm-linear needs device-mapper, which this machine does not offer; this "
                                 "kernel lacks it: try the layout in the lab VM (backupbench lab RECIPE)"]
    else:
        assert plan.refusals == []


def test_device_refusals_are_collected_per_layout():
    reasons = {"/dev/vdb": ["/dev/vdb holds an ext4 filesystem"]}
    plan = build(recipe({"name": "a", "kind": "lvm-linear", "devices": DEVICES[:2]},
                        {"name": "b", "kind": "lvm-linear", "devices": DEVICES[2:]}),
                 RUN, ALL, lambda d: reasons.get(d, []))
    assert plan.refusals == ["a: /dev/vdb: /dev/vdb holds an ext4 filesystem"]


def test_zfs_takes_whole_disks_and_refuses_a_partition_other_kinds_accept():
    kinds = {"/dev/vda": "disk", "/dev/vdb": "part", "/dev/vdc": "disk", "/dev/vdd": "disk"}
    zfs = build(recipe({"name": "z", "kind": "zfs", "vdev": "raidz1", "devices": DEVICES}),
                RUN, ALL, lambda d: [], device_kind=kinds.get)
    assert len(zfs.refusals) == 1
    assert zfs.refusals[0].startswith("z: /dev/vdb: is a partition, and this layout takes whole disks")
    lvm = build(recipe({"name": "l", "kind": "lvm-linear", "devices": DEVICES}),
                RUN, ALL, lambda d: [], device_kind=kinds.get)
    assert lvm.refusals == []


class FakeHost:
    """Records commands; answers guards from a table. Passed in, never patched in."""

    def __init__(self, guard_output=None, fail=()):
        self.calls = []
        self.guard_output = guard_output or {}
        self.fail = fail

    def __call__(self, argv, timeout=0, check=True):
        from backupbench.errors import ProcessError
        self.calls.append(argv)
        if argv[0] in self.fail:
            raise ProcessError(argv, 1, f"{argv[0]}: failed")
        return Result(argv, 0, self.guard_output.get(argv[0], ""), "")


def test_executor_journals_rechecks_once_and_undoes_only_what_the_guard_allows(tmp_path):
    plan = plan_layout(recipe({"name": "s", "kind": "lvm-striped", "devices": DEVICES[:2]}).layout[0], RUN,
                       Path("/mnt/bb"))
    host = FakeHost({"vgs": f"  backupbench,bb_run_{RUN}\n", "lvs": "  other_tag\n", "findmnt": f"/mnt/bb/{RUN}/s\n"})
    rechecks = []
    journal = Journal(tmp_path, RUN)
    provisioner = Provisioner(journal, "s", run=host)
    provisioner.apply(plan.actions, lambda: rechecks.append(True))
    assert rechecks == [True]
    assert [c[0] for c in host.calls] == ["pvcreate", "vgcreate", "lvcreate", "mkfs.xfs", "mkdir", "mount"]
    host.guard_output["ls"] = f"/mnt/bb/{RUN}/s\n"
    pending = read(next(open_journals(tmp_path))).pending
    assert len(pending) == 5 and {p.layout for p in pending} == {"s"}  # mkfs on an LV has no undo of its own
    host.calls.clear()
    report = provisioner.teardown()
    # The LV's tags are not ours any more: it and nothing on it is removed.
    assert "make striped LV bb_s_ab12/lv: 2 stripes of 64k" in report.skipped
    assert ["lvremove", "-y", "bb_s_ab12/lv"] not in host.calls
    assert ["umount", f"/mnt/bb/{RUN}/s"] in host.calls and ["vgremove", "bb_s_ab12"] in host.calls
    assert read(journal.path).pending == []  # nothing failed: nothing left for cleanup


def test_a_failed_undo_keeps_the_journal_open_for_cleanup(tmp_path):
    action = Action("mount", (("mount", "/dev/x", "/m"),), (("umount", "/m"),))
    journal = Journal(tmp_path, RUN)
    provisioner = Provisioner(journal, "m", run=FakeHost(fail=("umount",)))
    provisioner.apply((action,), lambda: None)
    report = provisioner.teardown()
    assert report.failed and "umount: failed" in report.failed[0]
    journal.release()
    path = next(open_journals(tmp_path))
    # cleanup later: the undo is still pending and succeeds now.
    later = FakeHost()
    pending = [Action.from_dict(p.action) for p in read(path).pending]
    result = undo_actions(pending, Journal.at(path), later, layout="m")
    assert result.undone == ["mount"] and later.calls == [["umount", "/m"]]
    assert read(path).pending == []


def test_after_a_failed_undo_no_destructive_undo_runs_and_a_broken_guard_is_a_failure(tmp_path):
    plan = plan_layout(recipe({"name": "x", "kind": "filesystem", "devices": ["/dev/vda"]}).layout[0], RUN,
                       Path("/mnt/bb"))
    host = FakeHost({"findmnt": f"/mnt/bb/{RUN}/x\n", "ls": f"/mnt/bb/{RUN}/x\n", "blkid": Names(RUN, "x").label},
                    fail=("umount",))
    journal = Journal(tmp_path, RUN)
    provisioner = Provisioner(journal, "x", run=host)
    provisioner.apply(plan.actions, lambda: None)
    host.calls.clear()
    report = provisioner.teardown()
    assert ["wipefs", "-a", "/dev/vda"] not in host.calls  # the filesystem may still be mounted
    assert any("not attempted" in line for line in report.failed)
    assert read(journal.path).pending  # left for cleanup

    class HangingGuard(FakeHost):
        def __call__(self, argv, timeout=0, check=True):
            from backupbench.errors import ProcessError
            if argv[0] == "findmnt":
                raise ProcessError(argv, None, "", "findmnt did not finish within 120 s")
            return super().__call__(argv, timeout, check)

    action = Action("mount", (("mount", "/dev/x", "/m"),), (("umount", "/m"),), Guard(("findmnt", "/m"), "/m"))
    report = undo_actions([action], None, HangingGuard())
    assert report.failed and "could not check" in report.failed[0] and not report.skipped


def test_cleanup_skips_a_journal_a_running_apply_holds(tmp_path):
    live = Journal(tmp_path, RUN)
    live.record("done", Action("mount", (("mount", "/dev/x", "/m"),), (("umount", "/m"),)), "live")
    with pytest.raises(JournalBusy):
        Journal.at(live.path)
    live.release()
    assert Journal.at(live.path).label == RUN


TAGS = ["--addtag", "backupbench", "--addtag", f"bb_run_{RUN}"]
MNT = f"/mnt/bb/{RUN}"


def xfs(layout: str, device: str) -> list[str]:
    return ["mkfs.xfs", "-f", "-L", Names(RUN, layout).label, "-m", "reflink=1,crc=1", device]


def mounted(layout: str, device: str, point: str | None = None) -> list[list[str]]:
    point = point or f"{MNT}/{layout}"
    return [["mkdir", "-p", point], ["mount", device, point]]


# Every layout kind the recipe can name, with the exact commands it runs, in order.
EVERY_KIND = [
    ({"name": "lin", "kind": "lvm-linear", "devices": DEVICES[:2]}, [
        ["pvcreate", *DEVICES[:2]], ["vgcreate", *TAGS, "bb_lin_ab12", *DEVICES[:2]],
        ["lvcreate", "--yes", *TAGS, "-n", "lv", "-l", "100%FREE", "bb_lin_ab12"],
        xfs("lin", "/dev/bb_lin_ab12/lv"), *mounted("lin", "/dev/bb_lin_ab12/lv")]),
    ({"name": "thin", "kind": "lvm-thin", "devices": DEVICES[:1], "virtual_size": "8GiB"}, [
        ["pvcreate", DEVICES[0]], ["vgcreate", *TAGS, "bb_thin_ab12", DEVICES[0]],
        ["lvcreate", "--yes", *TAGS, "-n", "pool", "--type", "thin-pool", "-l", "90%VG", "bb_thin_ab12"],
        ["lvcreate", "--yes", *TAGS, "-n", "thin", "--type", "thin", "-V", "8388608k", "--thinpool", "pool",
         "bb_thin_ab12"],
        xfs("thin", "/dev/bb_thin_ab12/thin"), *mounted("thin", "/dev/bb_thin_ab12/thin")]),
    ({"name": "snap", "kind": "lvm-snapshot", "devices": DEVICES[:1], "origin_size": "1GiB", "thin": True}, [
        ["pvcreate", DEVICES[0]], ["vgcreate", *TAGS, "bb_snap_ab12", DEVICES[0]],
        ["lvcreate", "--yes", *TAGS, "-n", "pool", "--type", "thin-pool", "-l", "90%VG", "bb_snap_ab12"],
        ["lvcreate", "--yes", *TAGS, "-n", "origin", "--type", "thin", "-V", "1048576k", "--thinpool", "pool",
         "bb_snap_ab12"],
        xfs("snap", "/dev/bb_snap_ab12/origin"), *mounted("snap", "/dev/bb_snap_ab12/origin"),
        ["lvcreate", "--yes", *TAGS, "-n", "snap1", "-s", "bb_snap_ab12/origin"]]),
    ({"name": "r0", "kind": "mdraid", "level": 0, "devices": DEVICES[:2], "filesystem": {"type": "ext4"}}, [
        ["mdadm", "--create", "/dev/md/bb-r0-ab12", "--run", "--metadata", "1.2", "--level", "0",
         "--raid-devices", "2", "--assume-clean", "--name", "bb-r0-ab12", *DEVICES[:2]],
        ["mkfs.ext4", "-F", "-q", "-L", Names(RUN, "r0").label, "-E", "lazy_itable_init=0,lazy_journal_init=0",
         "/dev/md/bb-r0-ab12"], *mounted("r0", "/dev/md/bb-r0-ab12")]),
    ({"name": "r10", "kind": "mdraid", "level": 10, "devices": DEVICES, "assume_clean": False}, [
        ["mdadm", "--create", "/dev/md/bb-r10-ab12", "--run", "--metadata", "1.2", "--level", "10",
         "--raid-devices", "4", "--name", "bb-r10-ab12", *DEVICES],
        xfs("r10", "/dev/md/bb-r10-ab12"), *mounted("r10", "/dev/md/bb-r10-ab12")]),
    ({"name": "rz", "kind": "zfs", "vdev": "raidz1", "devices": DEVICES[:2], "special": DEVICES[2:], "ashift": 12}, [
        ["mkdir", "-p", f"{MNT}/rz"], ["zpool", "create", "-o", "ashift=12", "-m", f"{MNT}/rz", "-O", f"backupbench:run={RUN}", "bb_rz_ab12",
         "raidz1", *DEVICES[:2], "special", "mirror", *DEVICES[2:]]]),
    ({"name": "m", "kind": "zfs", "vdev": "mirror", "devices": DEVICES[:2], "log": DEVICES[2:3]}, [
        ["mkdir", "-p", f"{MNT}/m"], ["zpool", "create", "-m", f"{MNT}/m", "-O", f"backupbench:run={RUN}", "bb_m_ab12", "mirror", *DEVICES[:2],
         "log", DEVICES[2]]]),
    ({"name": "s1", "kind": "minio-single", "devices": DEVICES[:1]}, [
        xfs("s1", DEVICES[0]), *mounted("s1", DEVICES[0])]),
    ({"name": "ec", "kind": "minio-ec", "devices": DEVICES, "parity": 2}, [
        ["mkdir", "-p", f"{MNT}/ec"],
        *[step for i, d in enumerate(DEVICES, 1)
          for step in (xfs(f"ec-d{i}", d), *mounted("ec", d, f"{MNT}/ec/d{i}"))]]),
    ({"name": "here", "kind": "directory", "path": "/srv/repo"}, []),
]


@pytest.mark.parametrize("spec, expected", EVERY_KIND, ids=[spec["kind"] + ":" + spec["name"] for spec, _ in EVERY_KIND])
def test_every_layout_kind_runs_exactly_these_commands(spec, expected):
    plan, cmds = commands(spec)
    assert cmds == expected
    # Every destructive step has an undo guarded by a check that the object is ours.
    for action in plan.actions:
        if action.destructive:
            assert action.undo and action.guard is not None, action.description


ALL_SPECS = [spec for spec, _ in EVERY_KIND] + [
    {"name": "striped", "kind": "lvm-striped", "devices": DEVICES},
    {"name": "b", "kind": "btrfs", "devices": DEVICES[:2], "data": "raid1", "metadata": "raid1"},
    {"name": "x", "kind": "filesystem", "devices": ["/dev/vda"], "minio": True},
]


@pytest.mark.parametrize("spec", ALL_SPECS, ids=[spec["kind"] + ":" + spec["name"] for spec in ALL_SPECS])
def test_undo_and_guard_use_only_the_programs_cleanup_allows(spec):
    from backupbench.layouts.actions import GUARD_PROGRAMS, UNDO_PROGRAMS
    plan, _ = commands(spec)
    for action in plan.actions:
        assert {argv[0] for argv in action.undo} <= UNDO_PROGRAMS, action.description
        assert action.guard is None or action.guard.argv[0] in GUARD_PROGRAMS, action.description


def test_every_layout_kind_is_covered():
    from backupbench.layouts.registry import LAYOUT_KINDS
    assert {spec["kind"] for spec, _ in EVERY_KIND} | {"lvm-striped", "btrfs", "filesystem"} == set(LAYOUT_KINDS)
    assert {spec["kind"] for spec in ALL_SPECS} == set(LAYOUT_KINDS)


@pytest.mark.parametrize("device, partition", [
    ("/dev/vda", "/dev/vda1"), ("/dev/nvme0n1", "/dev/nvme0n1p1"), ("/dev/loop7", "/dev/loop7p1"),
    ("/dev/disk/by-id/virtio-lab-d0", "/dev/disk/by-id/virtio-lab-d0-part1"),
])
def test_the_partition_zpool_puts_a_whole_disks_data_in(device, partition):
    from backupbench.layouts.zfs import first_partition
    assert first_partition(device) == partition


@pytest.mark.parametrize("proc, expected", [
    ({"modules": "", "sys/kernel/modules_disabled": "0\n"}, {"zfs", "md", "raid456"}),
    ({"modules": "", "sys/kernel/modules_disabled": "1\n"}, set()),  # loading switched off since boot
    ({}, set()),  # a kernel without module support: module files on disk do not help
])
def test_a_module_on_disk_counts_only_where_the_kernel_can_load_it(tmp_path, proc, expected):
    from backupbench.hostfiles import HostFiles
    from backupbench.layouts.capabilities import collect
    for name, text in {"misc": "", "filesystems": "", **proc}.items():
        (tmp_path / "proc" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "proc" / name).write_text(text)
    (tmp_path / "sys" / "module").mkdir(parents=True)
    extra = tmp_path / "lib" / "modules" / "6.1.0-56-amd64" / "updates" / "dkms"
    extra.mkdir(parents=True)
    for module in ("zfs.ko.xz", "md-mod.ko", "raid456.ko"):
        (extra / module).write_bytes(b"")
    found = collect(HostFiles(tmp_path), which=lambda _tool: None, release="6.1.0-56-amd64")
    assert found.kernel == frozenset(expected)
