"""Faults (issue 13), pure: the recipe key and its refusals, what each kind runs, the array
state read from md's sysfs and from real `zpool status -j` output of the lab, the rebuild
figures from samples, the model, and the journal's refusal of a sysctl it does not restore."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backupbench.errors import ProcessError, RecipeError
from backupbench.faults.figures import RebuildSpan, rebuild_figures
from backupbench.monitor.rebuild import RebuildState, Sample, md_state, zpool_state
from backupbench.monitor import rebuild_btrfs
from backupbench.monitor.rebuild_btrfs import BtrfsReader, btrfs_state, members, replace_status
from backupbench.plan import build, plan_layouts
from backupbench.layouts import capabilities
from backupbench.recipe.model import parse
from backupbench.runner.cleanup import _undoable
from backupbench.sizing import speed_model

FIXTURES = Path(__file__).parents[1] / "fixtures" / "zfs"
DISKS = [f"/dev/vd{letter}" for letter in "abcdefg"]
RUN_ID = "20261123T000000-abcd1234"


def _recipe(layout: dict, devices=DISKS):
    return parse({"name": "f", "devices": devices, "layout": [{"name": "l", **layout}],
                  "workload": [{"kind": "kb2014", "operations": ["restore-random"]}]})


def _refusal(layout: dict) -> str:
    with pytest.raises(RecipeError) as caught:
        _recipe(layout)
    return caught.value.message


RAID6 = {"kind": "mdraid", "level": 6, "devices": DISKS[:5]}
RAIDZ2 = {"kind": "zfs", "vdev": "raidz2", "devices": DISKS[:5]}
DRAID2 = {"kind": "zfs", "vdev": "draid2", "draid_data": 3, "draid_spares": 1, "devices": DISKS[:6]}
BTRFS = {"kind": "btrfs", "data": "raid1", "metadata": "raid1", "devices": DISKS[:3]}
BTRFS_FIXTURES = Path(__file__).parents[1] / "fixtures" / "btrfs"


def test_md_fault_fails_removes_and_adds_the_spare_and_teardown_zeroes_it():
    layout = plan_layouts(_recipe({**RAID6, "fault": {"fail": "/dev/vdc", "replace": "/dev/vdf",
                                                     "speed_limit_max": "20MiB/s"}}), RUN_ID)[0]
    fault = layout.fault
    md = f"/dev/md/bb-l-{RUN_ID.rsplit('-', 1)[1]}"
    assert fault.fail == (("mdadm", "--manage", md, "--fail", "/dev/vdc"), ("mdadm", "--manage", md, "--remove", "/dev/vdc"))
    assert fault.rebuild == (("mdadm", "--manage", md, "--add", "/dev/vdf"),)
    assert fault.sysctls == (("dev.raid.speed_limit_max", 20480),)
    # The replacement is the layout's: checked empty before, superblock zeroed after.
    assert "/dev/vdf" in layout.devices
    assert ("mdadm", "--zero-superblock", *DISKS[:6]) in layout.actions[0].undo


def test_zfs_fault_onto_a_disk_and_onto_the_distributed_spare():
    raidz = plan_layouts(_recipe({**RAIDZ2, "fault": {"fail": 1, "replace": "/dev/vdf"}}), RUN_ID)[0]
    pool = raidz.fault.array
    assert raidz.fault.fail == (("zpool", "offline", "-f", pool, "/dev/vde"),)
    assert raidz.fault.rebuild == (("zpool", "replace", pool, "/dev/vde", "/dev/vdf"),)
    clear = next(a for a in raidz.actions if "replacement" in a.description)
    # Partitioned by zpool only if the run got that far: cleared only when the partition is there.
    assert clear.guard.argv == ("test", "-b", "/dev/vdf1") and ("wipefs", "-a", "/dev/vdf") in clear.undo
    draid = plan_layouts(_recipe({**DRAID2, "fault": {"fail": "/dev/vdc"}}), RUN_ID)[0]
    assert draid.fault.rebuild == (("zpool", "replace", "-s", draid.fault.array, "/dev/vdc", "draid2-0-0"),)
    assert draid.fault.replacements == () and "distributed" in draid.fault.target
    assert draid.fault.copy_back == ()
    back = plan_layouts(_recipe({**DRAID2, "fault": {"fail": "/dev/vdc", "copy_back": "/dev/vdg"}}), RUN_ID)[0]
    assert back.fault.copy_back == (("zpool", "replace", back.fault.array, "/dev/vdc", "/dev/vdg"),)
    # The copy-back disk is the layout's: checked empty before, its label cleared after.
    assert "/dev/vdg" in back.devices
    assert any(a.guard and a.guard.argv == ("test", "-b", "/dev/vdg1") for a in back.actions)


def test_btrfs_fault_remounts_degraded_and_replaces_by_devid():
    layout = plan_layouts(_recipe({**BTRFS, "filesystem": {"type": "btrfs", "mount_options": ["noatime"]},
                                   "fault": {"fail": "/dev/vda", "replace": "/dev/vdd"}}), RUN_ID)[0]
    fault, point = layout.fault, str(layout.mount_point)
    assert fault.kind == "btrfs" and fault.array == point and fault.member_ids == (1,)
    assert fault.fail == (("umount", point), ("wipefs", "-a", "/dev/vda"),
                          ("mount", "-o", "degraded,noatime", "/dev/vdb", point))
    assert fault.rebuild == (("btrfs", "replace", "start", "1", "/dev/vdd", point),)
    mkfs = layout.actions[0]
    # The failed member's label is wiped by the fault: the undo's guard asks a survivor, and
    # the replacement is wiped too.
    assert mkfs.guard.argv[-1] == "/dev/vdb" and ("wipefs", "-a", "/dev/vdd") in mkfs.undo
    assert "/dev/vdd" in layout.devices
    counted = plan_layouts(_recipe({**BTRFS, "fault": {"fail": 1}}), RUN_ID)[0].fault
    assert counted.failed == ("/dev/vdc",) and counted.member_ids == (3,) and not counted.rebuilds


def _fixture(name: str) -> str:
    return (BTRFS_FIXTURES / name).read_text()


def test_btrfs_state_from_real_show_and_replace_status_output():
    healthy = btrfs_state(_fixture("show-healthy.txt"), _fixture("replace-never.txt"), {})
    assert not healthy.rebuilding and not healthy.degraded and not healthy.finished
    degraded = btrfs_state(_fixture("show-degraded.txt"), _fixture("replace-never.txt"), {3: 2706112512})
    assert degraded.degraded and not degraded.rebuilding and degraded.percent is None
    running = btrfs_state(_fixture("show-replacing.txt"), _fixture("replace-running.txt"), {3: 2706112512})
    assert running.rebuilding and running.degraded and running.percent == 53.8
    assert running.done_bytes == int(2706112512 * 0.538) and not running.finished
    done = btrfs_state(_fixture("show-replaced.txt"), _fixture("replace-finished.txt"), {3: 2706112512})
    assert done.finished and not done.degraded and done.percent == 100.0
    assert members(_fixture("show-degraded.txt"))[3].missing
    assert not members(_fixture("show-replaced.txt"))[3].missing
    with pytest.raises(ValueError, match="does not know"):
        replace_status("something new")


def _btrfs_reader_that_fails(monkeypatch, mounted_after: bool) -> BtrfsReader:
    """A reader whose mount point is a mount when it looks, and then (mounted_after) still or no
    longer one when btrfs fails on it."""
    answers = iter([True, mounted_after])
    monkeypatch.setattr(rebuild_btrfs.os.path, "ismount", lambda path: next(answers))

    def failing(argv: list[str]) -> str:
        raise ProcessError(argv, 1, "ERROR: not a valid btrfs filesystem: /mnt/x")
    monkeypatch.setattr(rebuild_btrfs, "_output", failing)
    return BtrfsReader("/mnt/x", (3,))


def test_a_btrfs_unmounted_while_it_is_read_is_the_unmounted_moment_not_an_error(monkeypatch):
    state = _btrfs_reader_that_fails(monkeypatch, mounted_after=False)()
    assert state.degraded and not state.rebuilding and state.percent is None


def test_a_btrfs_command_that_fails_on_a_mounted_filesystem_is_still_an_error(monkeypatch):
    with pytest.raises(ProcessError, match="not a valid btrfs"):
        _btrfs_reader_that_fails(monkeypatch, mounted_after=True)()


@pytest.mark.parametrize("layout, words", [
    ({"kind": "mdraid", "level": 0, "devices": DISKS[:2], "fault": {"fail": 1}}, "has none (RAID 0)"),
    ({"kind": "lvm-striped", "devices": DISKS[:2], "fault": {"fail": 1}}, "has none"),
    ({"kind": "lvm-linear", "devices": DISKS[:2], "fault": {"fail": 1}}, "has none"),
    ({"kind": "zfs", "vdev": "stripe", "devices": DISKS[:2], "fault": {"fail": 1}}, "has none (stripe)"),
    ({**RAID6, "fault": {"fail": 3}}, "survives 2 loses its data; set allow_data_loss"),
    ({**RAID6, "fault": {"fail": "/dev/vdg"}}, "/dev/vdg is not a member of this layout"),
    ({**RAID6, "fault": {"fail": 1, "replace": "/dev/vda"}}, "is already a member"),
    ({**RAID6, "fault": {"fail": 2, "replace": "/dev/vdf"}}, "need as many replacements"),
    ({**RAID6, "fault": {"fail": 1, "replace": "spare"}}, "dRAID distributed spare"),
    ({**RAIDZ2, "fault": {"fail": 1, "replace": "spare"}}, "needs a dRAID vdev with distributed spares"),
    ({**DRAID2, "fault": {"fail": 2, "replace": "spare"}}, "the dRAID has 1"),
    ({**RAIDZ2, "fault": {"fail": 1, "copy_back": "/dev/vdg"}}, "copy_back needs the rebuild to go onto a dRAID"),
    ({**DRAID2, "fault": {"fail": 1, "replace": "/dev/vdg", "copy_back": "/dev/vdg"}}, "named twice"),
    ({**DRAID2, "fault": {"fail": "/dev/vdc", "copy_back": "/dev/vda"}}, "is already a member"),
    ({**RAID6, "fault": {"fail": 1, "replace": "/dev/vdf", "copy_back": "/dev/vdg"}}, "copy_back follows a dRAID"),
    ({"kind": "btrfs", "data": "single", "devices": DISKS[:2], "fault": {"fail": 1}}, "has none (data single"),
    ({**BTRFS, "fault": {"fail": 2, "replace": ["/dev/vdd", "/dev/vde"], "allow_data_loss": True}},
     "one device at a time"),
    ({**BTRFS, "minio": True, "fault": {"fail": 1}}, "drop minio = true"),
    # btrfs mounts the survivors degraded: with none left there is nothing to mount.
    ({**BTRFS, "fault": {"fail": 3, "allow_data_loss": True}}, "leaves none to mount degraded"),
    ({**BTRFS, "fault": {"fail": 1, "replace": "spare"}}, "dRAID distributed spare"),
    ({"kind": "minio-ec", "devices": DISKS[:4], "parity": 0, "fault": {"fail": 1}}, "has none"),
    ({"kind": "minio-single", "devices": DISKS[:1], "fault": {"fail": 1}}, "has none"),
    ({**RAID6, "fault": {"fail": 1, "speed_limit_max": "10"}}, "1KiB/s"),
    ({**RAID6, "fault": {"fail": 1, "rebuild_lod": "none"}}, "did you mean 'rebuild_load'"),
])
def test_faults_that_cannot_run_are_refused_with_the_reason(layout, words):
    assert words in _refusal(layout)


def test_a_replacement_outside_devices_is_refused():
    with pytest.raises(RecipeError, match="does not name"):
        _recipe({**RAID6, "fault": {"fail": 1, "replace": "/dev/vdz"}})


def test_data_loss_is_allowed_only_in_the_lab():
    recipe = _recipe({**RAID6, "fault": {"fail": 3, "allow_data_loss": True}})
    caps = capabilities.HostCapabilities(kernel=frozenset({"md", "raid456", "xfs"}),
                                         tools=frozenset({"mdadm", "mkfs.xfs"}))
    outside = build(recipe, RUN_ID, caps, lambda device: [])
    assert any("allow_data_loss is honoured only in the lab VM" in r for r in outside.refusals)
    inside = build(recipe, RUN_ID, caps, lambda device: [], in_lab=True)
    assert not any("allow_data_loss" in r for r in inside.refusals)


def test_the_rules_read_only_what_a_layout_declares():
    """faults/rules.py decides from a layout's declared facts alone: no layout module needed."""
    from backupbench.faults import rules
    from backupbench.faults.spec import FaultSpec

    draid = rules.LayoutFacts("zfs", tuple(DISKS[:6]), 2, " (draid2)", draid_parity=2, distributed_spares=1)
    rules.fits(FaultSpec(fail=1), draid)
    rules.fits_kind(FaultSpec(fail=1, copy_back="/dev/vdg"), draid)  # onto the spare by default, then back
    with pytest.raises(ValueError, match="the dRAID has 1"):
        rules.fits_kind(FaultSpec(fail=2, replace="spare"), draid)
    with pytest.raises(ValueError, match="has none \\(RAID 0\\)"):
        rules.fits(FaultSpec(fail=1), rules.LayoutFacts("mdraid", tuple(DISKS[:2]), 0, " (RAID 0)"))
    with pytest.raises(ValueError, match="lvm-raid is not supported yet"):
        rules.fits(FaultSpec(fail=1), rules.LayoutFacts("lvm-raid", tuple(DISKS[:2]), 1))
    quorum = rules.LayoutFacts("minio-ec", tuple(DISKS[:4]), 2, erasure_parity=2)
    with pytest.raises(ValueError, match="without write quorum"):
        rules.fits_kind(FaultSpec(fail=2), quorum)
    rules.fits_kind(FaultSpec(fail=1), quorum)


def test_md_state_from_sysfs():
    running = md_state({"sync_action": "recover", "sync_completed": "162600 / 520192", "sync_speed": "23585",
                        "degraded": "1"})
    assert running.rebuilding and running.degraded and not running.finished
    assert running.percent == pytest.approx(31.26, abs=0.01)
    assert running.done_bytes == 162600 * 512 and running.speed == 23585 * 1024
    just_added = md_state({"sync_action": "idle", "sync_completed": "none", "sync_speed": "none", "degraded": "1"})
    assert not just_added.finished and just_added.percent is None
    done = md_state({"sync_action": "idle", "sync_completed": "none", "sync_speed": "none", "degraded": "0"})
    assert done.finished and not done.degraded


def _status(name: str) -> dict:
    return json.loads((FIXTURES / f"status-draid-{name}.json").read_text())


def test_zpool_state_from_real_status_output():
    degraded = zpool_state(_status("degraded"), "t2")
    assert degraded.degraded and not degraded.rebuilding and degraded.percent is None and not degraded.finished
    resilver = zpool_state(_status("rebuilding"), "t2")
    assert resilver.rebuilding and not resilver.finished
    assert resilver.percent == pytest.approx(100 * 215101440 / (543211520 - 82800640))
    ended = zpool_state(_status("rebuilt"), "t2")
    assert ended.finished and ended.percent == 100.0 and ended.done_bytes == 186888192
    # A dRAID sequential rebuild is in rebuild_stats; the scrub ZFS starts after it is not it.
    sequential = zpool_state(_status("seq-rebuilding"), "t2")
    assert sequential.finished and sequential.percent == 100.0 and sequential.done_bytes == 171065344
    # A scan older than the rebuild asked for is an earlier one.
    assert not zpool_state(_status("rebuilt"), "t2", since=1795470321).finished
    with pytest.raises(ValueError, match="does not list pool"):
        zpool_state(_status("rebuilt"), "other")


def _sample(at: float, phase: str, percent: float | None, done: int | None, finished=False) -> Sample:
    return Sample(at, phase, RebuildState(percent is not None and not finished, True, percent, done, None, finished))


def test_copy_back_figures_are_its_own_span_and_not_the_rebuilds():
    from backupbench.faults.figures import copy_back_figures

    samples = [_sample(0, "rebuilding", 50.0, 100), _sample(2, "rebuilt", 100.0, 200, finished=True),
               _sample(10, "copy-back", 25.0, 50), _sample(14, "copy-back", 100.0, 200, finished=True)]
    rebuild = rebuild_figures(samples, RebuildSpan(0.0, None, 2.0))
    assert rebuild["rebuild_bytes"] == 200 and rebuild["rebuild_seconds"] == 2.0
    back = copy_back_figures(samples, RebuildSpan(9.0, None, 14.0))
    assert back == {"copyback_seconds": 5.0, "copyback_bytes": 200.0, "copyback_bw": 40.0}


def test_rebuild_figures_split_the_loaded_and_the_idle_part():
    samples = [_sample(10, "degraded", None, None), _sample(21, "rebuilding", 10.0, 100),
               _sample(30, "rebuilding", 25.0, 250), _sample(40, "rebuilding", 50.0, 500),
               _sample(60, "rebuilding", 100.0, 1000, finished=True)]
    figures = rebuild_figures(samples, RebuildSpan(started=20, load_ended=30, ended=60))
    assert figures["rebuild_seconds"] == 40
    assert figures["rebuild_bytes"] == pytest.approx(1000)
    assert figures["rebuild_bw_loaded"] == pytest.approx(250 / 10)
    assert figures["rebuild_percent_loaded"] == pytest.approx(25)
    assert figures["rebuild_bw_idle"] == pytest.approx(750 / 30)
    idle = rebuild_figures(samples, RebuildSpan(started=20, load_ended=None, ended=60))
    assert "rebuild_bw_loaded" not in idle and idle["rebuild_bw_idle"] == pytest.approx(1000 / 40)
    assert rebuild_figures(samples, RebuildSpan(started=20, load_ended=30, ended=None)) == {}



def test_a_rebuild_that_ended_with_the_workloads_has_no_idle_speed():
    # Seen in the lab (md RAID6, 1022 MiB): 94% rebuilt when the workloads stopped, finished at
    # the next sample 0.8 s later; the last 6% over 0.8 s read as 7,808 MiB/s "idle".
    samples = [_sample(20, "rebuilding", 10.0, 100), _sample(100, "rebuilding", 94.0, 940),
               _sample(100.8, "rebuilt", 100.0, 1000, finished=True)]
    figures = rebuild_figures(samples, RebuildSpan(started=20, load_ended=100, ended=100.8))
    assert "rebuild_bw_idle" not in figures and "rebuild_idle_seconds" not in figures
    # What was seen is kept: 80.8 s, 940 bytes under load in its 80 s, 94% of the 1000.
    assert figures["rebuild_seconds"] == pytest.approx(80.8)
    assert figures["rebuild_bw_loaded"] == pytest.approx(940 / 80)
    assert figures["rebuild_percent_loaded"] == pytest.approx(94)
    # 2 s of idle is a measurement again: the last 60 bytes in 2 s.
    later = samples[:2] + [_sample(102, "rebuilt", 100.0, 1000, finished=True)]
    assert rebuild_figures(later, RebuildSpan(20, 100, 102))["rebuild_bw_idle"] == pytest.approx(60 / 2)


def test_a_zfs_read_smaller_than_an_uncached_record_reads_the_whole_record():
    # RAIDZ2 of 5 with recordsize=1M and primarycache=metadata (the degraded-rebuild example's
    # properties): a 512 KiB restore read reads its 1 MiB record whole and keeps nothing, and
    # the next 512 KiB reads it again: 3 data columns x 50 MiB/s x 512/1024 = 75.
    member = 50.0
    uncached = {**RAIDZ2, "properties": {"recordsize": "1M", "primarycache": "metadata"}}
    model = speed_model.expected_read(uncached, member, 512 * 1024)
    assert model.value == pytest.approx(75.0)
    assert "whole 1024 KiB record" in model.why and "primarycache=metadata" in model.why
    # The default recordsize (128 KiB) is under the read: nothing read twice.
    assert speed_model.expected_read({**RAIDZ2, "properties": {"primarycache": "metadata"}}, member,
                                     512 * 1024).value == 3 * member
    # The ARC keeping data (primarycache=all, the default): the rest of the record is served from it.
    assert speed_model.expected_read({**RAIDZ2, "properties": {"recordsize": "1M"}}, member,
                                     512 * 1024).value == 3 * member
    # dRAID2 3d likewise; md is not ZFS: no record.
    assert speed_model.expected_read({**DRAID2, "properties": uncached["properties"]}, member,
                                     512 * 1024).value == pytest.approx(75.0)
    assert speed_model.record_read_share({"kind": "mdraid", "level": 6, "properties": {}}, 4096) == (1.0, "")


def test_read_model_counts_the_disks_a_read_touches():
    member = 50.0
    raid6_64k = {"kind": "mdraid", "level": 6, "chunk": 65536, "devices": DISKS[:5]}
    assert speed_model.expected_read(raid6_64k, member, 512 * 1024).value == 5 * member
    assert speed_model.expected_read({**raid6_64k, "chunk": 512 * 1024}, member, 512 * 1024).value == member
    assert speed_model.expected_read(RAIDZ2, member, 512 * 1024).value == 3 * member
    assert speed_model.expected_read(DRAID2, member, 512 * 1024).value == 3 * member
    assert speed_model.off(speed_model.error(80, 50)) and not speed_model.off(speed_model.error(60, 50))
    assert speed_model.expected_read(BTRFS, member, 512 * 1024).value == member  # raid1: one copy per stream
    raid10 = {**BTRFS, "data": "raid10", "devices": DISKS[:4]}
    assert speed_model.expected_read(raid10, member, 512 * 1024).value == 2 * member
    assert speed_model.expected_read({**raid10, "data": "raid6"}, member, 64 * 1024).value == member


def test_write_model_counts_the_members_that_carry_data():
    member = 40.0
    raid6 = {"kind": "mdraid", "level": 6, "devices": DISKS[:5]}
    assert speed_model.expected_write(raid6, member).value == 3 * member
    assert speed_model.expected_write({**raid6, "level": 1, "devices": DISKS[:2]}, member).value == member
    assert speed_model.expected_write({**raid6, "level": 10, "devices": DISKS[:4]}, member).value == 2 * member
    assert speed_model.expected_write(RAIDZ2, member).value == 3 * member
    # draid2:3d:6c:1s: 5 disks take writes, 3 of every 5 columns are data
    assert speed_model.expected_write(DRAID2, member).value == pytest.approx(5 * 3 / 5 * member)
    assert speed_model.expected_write(BTRFS, member).value == member
    # MinIO picks EC:2 for 4 drives; EC:1 when the recipe says so
    minio = {"kind": "minio-ec", "devices": DISKS[:4]}
    assert speed_model.expected_write(minio, member).value == 2 * member
    assert speed_model.expected_write({**minio, "parity": 1}, member).value == 3 * member
    assert speed_model.expected_read({**minio, "parity": 1}, member, 2**20).value == 3 * member


def test_rebuild_model_is_size_rebuild_at_the_member_or_md_limit():
    gib = 2**30
    md = speed_model.expected_rebuild_seconds(RAID6, gib, 50 * 2**20, used_percent=100.0, distributed=False,
                                             speed_limit_max=20 * 2**20)
    assert md.value == pytest.approx(gib / (20 * 2**20))
    draid = speed_model.expected_rebuild_seconds(DRAID2, gib, 50 * 2**20, used_percent=50.0, distributed=True,
                                                speed_limit_max=None)
    classic = speed_model.expected_rebuild_seconds(DRAID2, gib, 50 * 2**20, used_percent=50.0, distributed=False,
                                                  speed_limit_max=None)
    assert draid.value < classic.value and "distributed" in draid.why
    # btrfs copies what the member held (25% of it here) at the member's speed.
    btrfs = speed_model.expected_rebuild_seconds(BTRFS, gib, 50 * 2**20, used_percent=25.0, distributed=False,
                                                speed_limit_max=None)
    assert btrfs.value == pytest.approx(gib / 4 / (50 * 2**20), rel=0.01)


def test_cleanup_restores_md_speed_limits_and_nothing_else():
    def entry(argv):
        return {"description": "x", "do": [], "undo": [argv], "guard": None}
    assert _undoable(entry(["sysctl", "-w", "dev.raid.speed_limit_max=200000"]))[0] is not None
    action, why = _undoable(entry(["sysctl", "-w", "kernel.core_pattern=|/bin/sh"]))
    assert action is None and "only restores md's speed limits" in why


def _fault_run():
    from backupbench.results.model import COMPLETE, OperationRecord, RunRecord

    def op(state, bw, **figures):
        record = OperationRecord(name=f"raid6/{state}/restore-random", pattern="randread qd1", status=COMPLETE,
                                 figures={"effective_bw": bw * 2**20, **figures})
        record.layout, record.state = "raid6", state
        return record

    member = OperationRecord(name="raid6/member", pattern="read", status=COMPLETE,
                             figures={"read_bw": 50 * 2**20, "write_bw": 40 * 2**20, "member_bytes": 2**30})
    member.layout, member.state = "raid6", "member"
    rebuild = OperationRecord(name="raid6/rebuild", pattern="rebuild onto /dev/vdf", status=COMPLETE,
                              figures={"rebuild_seconds": 100.0, "rebuild_bytes": 2**30})
    rebuild.layout, rebuild.state = "raid6", "rebuild"
    rebuild.detail.update({"failed": ["/dev/vdc"], "target": "/dev/vdf",
                           "rebuilds": True, "rebuild_load": "once", "rebuild_csv": "raid6/rebuild.csv"})
    layout = {"name": "raid6", "kind": "mdraid", "level": 6, "chunk": 65536, "devices": DISKS[:5],
              "fault": {"speed_limit_max": 20 * 2**20}}
    return RunRecord(run_id="r", kind="recipe", target="t", status=COMPLETE,
                     settings={"recipe": {"layout": [layout], "workload": [{"kind": "kb2014"}]}},
                     operations=[member, op("healthy", 200.0), op("degraded", 50.0), op("rebuilding", 40.0),
                                 op("rebuilt", 210.0), rebuild])


def test_fault_report_sets_each_state_against_healthy_and_the_model():
    from backupbench.report.fault_analysis import fault_reports
    from backupbench.report.faults import comparison_rows, rebuild_line, rows

    [report] = fault_reports(_fault_run())
    [cells] = rows(report)
    one = " on one sample (each side): noise unknown, measure with --repeat 3"
    assert cells == ["restore-random", "200.0", f"50.0 (4.00x slower{one})", f"40.0 (5.00x slower{one})",
                     f"210.0 (1.05x faster{one})", "250.0", "-20%"]
    # the rebuild: 1 GiB at md's 20 MiB/s limit = 51.2 s by the model, 100 s measured
    assert report.model_rebuild.value == pytest.approx(51.2)
    assert "model 51.2 s (+95%" in rebuild_line(report)
    assert any("the rebuild took +95% against the model" in w for w in report.model_warnings())
    assert not any("restore-random" in w for w in report.model_warnings())  # -20% is within 25%
    assert comparison_rows([report], ("raid6",)) == [["rebuild time", "1.7 min"],
                                                     ["restore during rebuild MiB/s", "40.0"]]


def test_a_figure_below_its_model_says_how_hard_the_members_worked():
    from backupbench.report.fault_analysis import fault_reports

    # The lab's RAIDZ2 restore-sequential (issue 25): the members read 9-16 MiB/s of their
    # 50 MiB/s while the guest's CPU was busy; a disk-bound figure says so instead.
    run = _fault_run()
    healthy = next(op for op in run.operations if op.state == "healthy")
    healthy.figures.update({"effective_bw": 100 * 2**20, "members_rMB_s": 12.0, "members_util": 27.0,
                            "mon.cpu_user.avg": 18.7, "mon.cpu_system.avg": 45.4, "mon.cpu_steal.avg": 0.0})

    def line():
        [report] = fault_reports(run)
        [said] = [w for w in report.model_warnings() if "restore-random" in w]
        return said

    assert "healthy is -60% against its model" in line()
    assert line().endswith("; the members read 12.0 MiB/s each, 24% of their own sequential speed, 27% busy: "
                           "something other than the disks bound it (CPU 64% busy)")
    healthy.figures["mon.cpu_steal.avg"] = 12.0  # a VM's host taking time: said apart
    assert line().endswith("(CPU 64% busy, 12% stolen)")
    del healthy.figures["mon.cpu_user.avg"]  # no CPU figures: nothing said of the CPU
    assert line().endswith("something other than the disks bound it")
    # At their sequential speed, or busy (random reads), the disks were the bound.
    healthy.figures["members_rMB_s"] = 45.0
    assert line().endswith("90% of their own sequential speed, 27% busy: the disks bound it")
    healthy.figures.update({"members_rMB_s": 12.0, "members_util": 96.0})
    assert line().endswith("24% of their own sequential speed, 96% busy: the disks bound it")
    # No members' figure (a run from before it was stored): the gap is said, nothing more.
    del healthy.figures["members_rMB_s"]
    assert line().endswith("more than 25% off")
    # Above its model (a cache, fewer disks than thought) nothing is claimed about the members.
    healthy.figures.update({"effective_bw": 400 * 2**20, "members_rMB_s": 12.0})
    assert "+60% against its model" in line() and "members read" not in line()


def test_a_write_below_its_model_is_set_against_the_members_write_speed():
    from backupbench.report.fault_analysis import fault_reports
    from backupbench.results.model import COMPLETE, OperationRecord

    run = _fault_run()
    # active-full: 3 data members x 40 MiB/s write = 120 MiB/s by the model; 30 measured.
    write = OperationRecord(name="raid6/healthy/active-full", pattern="write qd1", status=COMPLETE,
                            figures={"effective_bw": 30 * 2**20, "members_wMB_s": 15.0, "members_rMB_s": 40.0})
    write.layout, write.state = "raid6", "healthy"
    run.operations.insert(1, write)
    [report] = fault_reports(run)
    [said] = [w for w in report.model_warnings() if "active-full" in w]
    assert said.endswith("; the members wrote 15.0 MiB/s each, 38% of their own sequential speed: "
                         "something other than the disks bound it")


def test_the_rebuild_line_says_what_its_bytes_count():
    from backupbench.report.fault_analysis import fault_reports
    from backupbench.report.faults import rebuild_line, rebuilt_counts

    run = _fault_run()
    run.operations[-1].detail["kind"] = "md"
    [report] = fault_reports(run)
    assert "rebuild 1.7 min (1 GiB: the member's whole size: md rebuilds every block)" in rebuild_line(report)
    # A resilver counts what it wrote onto the new disk; dRAID's sequential rebuild only the failed
    # disk's column of the groups that held it (issue 25: 96 MiB against 34 MiB for one fill, since
    # in dRAID's first slice of 7 children one child is in none of the groups); without a kind, nothing.
    assert rebuilt_counts({"kind": "zfs", "target": "/dev/vdf"}).startswith("resilvered: written onto the new disk")
    draid = rebuilt_counts({"kind": "zfs", "target": "draid2-0-0 (distributed)"})
    assert "the failed disk's column of each stripe whose group held it" in draid and "not the data" in draid
    assert rebuilt_counts({"target": "/dev/vdf"}) == ""


def test_fault_report_models_active_full_from_the_member_write():
    from backupbench.report.fault_analysis import fault_reports
    from backupbench.results.model import COMPLETE, OperationRecord

    run = _fault_run()
    write = OperationRecord(name="raid6/healthy/active-full", pattern="write qd1", status=COMPLETE,
                            figures={"effective_bw": 90 * 2**20})
    write.layout, write.state = "raid6", "healthy"
    run.operations.insert(1, write)
    [report] = fault_reports(run)
    row = next(r for r in report.rows if r.operation == "active-full")
    # RAID 6 of 5: 3 members carry data, each writes 40 MiB/s -> 120 MiB/s; 90 measured is -25%
    assert row.model.value == 120 * 2**20 and row.model_error == pytest.approx(-0.25)
    assert "3 x member write" in row.model.why


def test_fault_run_in_the_html_report(tmp_path):
    from backupbench.report import html

    page = html.render(_fault_run(), results_dir=tmp_path)
    assert "Degraded and rebuilding" in page and '50.0 (4.00x slower)<sup class="note-mark">1</sup>' in page
    assert "Model and measurement disagree" in page


def test_measured_rebuild_rate_is_per_disk_as_the_model_counts_it():
    from backupbench.sizing.measured_rebuild import measured_rebuilds
    from backupbench.sizing.rebuild import rebuild_time

    run = _fault_run()
    rebuild = run.operations[-1]
    rebuild.figures.update({"rebuild_percent_loaded": 25.0, "rebuild_loaded_seconds": 40.0,
                            "rebuild_idle_seconds": 60.0})
    [measured] = measured_rebuilds(run)
    assert measured.spec.layout == "raid6" and measured.spec.disk_sizes == (2**30,) * 5
    # md rebuilds the whole 1 GiB member: a quarter of it in 40 s under load, the rest in 60 s idle.
    assert measured.rates["whole"] == pytest.approx(2**30 / 100)
    assert measured.rates["loaded"] == pytest.approx(2**30 / 4 / 40)
    assert measured.rates["idle"] == pytest.approx(2**30 * 3 / 4 / 60)
    # Fed back into the model the whole rate gives the time measured; 10x larger disks, 10x the time.
    assert rebuild_time(measured.spec, int(measured.rates["whole"])).classic.seconds == pytest.approx(100, rel=1e-6)
    bigger = rebuild_time(measured.spec.__class__("raid6", (10 * 2**30,) * 5), int(measured.rates["whole"]))
    assert bigger.classic.seconds == pytest.approx(1000, rel=1e-6)
    rebuild.status = "interrupted"
    assert measured_rebuilds(run) == []


def test_plan_shows_what_the_fault_runs_between_the_states():
    from rich.console import Console

    from backupbench.layouts.capabilities import HostCapabilities
    from backupbench.report import plan_view

    recipe = _recipe({**DRAID2, "fault": {"fail": "/dev/vdc", "copy_back": "/dev/vdg"}})
    caps = HostCapabilities(kernel=frozenset({"zfs"}), tools=frozenset({"zpool", "zfs"}))
    plan = build(recipe, RUN_ID, caps, lambda device: [], in_lab=True)
    console = Console(width=200, record=True)
    console.print(plan_view.render(plan))
    text = console.export_text()
    pool = plan.steps[0].layout.fault.array
    assert "fault: healthy, then fail /dev/vdc (degraded):" in text
    assert f"$ zpool offline -f {pool} /dev/vdc" in text
    assert f"$ zpool replace -s {pool} /dev/vdc draid2-0-0" in text
    assert f"copy back onto /dev/vdg (idle, timed):\n    $ zpool replace {pool} /dev/vdc /dev/vdg" in text
    assert plan_view.as_dict(plan)["layouts"][0]["fault"]["copy_back"] == [["zpool", "replace", pool, "/dev/vdc",
                                                                          "/dev/vdg"]]


def test_the_member_is_measured_for_member_runtime_read_only_first_and_written_only_after_a_recheck(tmp_path):
    from backupbench.engines import fio_json
    from backupbench.engines.fio import FioRun
    from backupbench.runner import faulted

    fixture = (Path(__file__).parents[1] / "fixtures" / "fio").glob("*.json")
    sample = next(p for p in sorted(fixture) if '"jobs"' in p.read_text() and "client_stats" not in p.read_text())
    events: list[tuple] = []

    class Engine:
        """engines/fio.FioEngine as faulted.member_baseline uses it: each job recorded, one summary."""

        def run(self, job, out_dir, progress=None, timeout_s=None):
            options = dict(job.options())
            events.append(("fio", options["rw"], options["runtime"], job.readonly, timeout_s))
            assert "size" not in options and options["filename"] == "/dev/vdc" and out_dir == tmp_path / "raid6"
            return FioRun(job, fio_json.parse_text(sample.read_text()), out_dir / f"{job.name}.fio",
                          out_dir / f"{job.name}.json", [], 0.0)

    for fault, runtime, seconds in (({"fail": "/dev/vdc"}, "5s", 5.0),
                                    ({"fail": "/dev/vdc", "member_runtime": "1.5s"}, "1500ms", 1.5)):
        events.clear()
        layout = plan_layouts(_recipe({**RAID6, "fault": fault}), RUN_ID)[0]
        record = faulted.member_baseline(layout, lambda devices: events.append(("recheck", devices)),
                                         tmp_path / "raid6", engine=Engine())
        assert events == [("fio", "read", runtime, True, 120 + seconds), ("recheck", ("/dev/vdc",)),
                          ("fio", "write", runtime, False, 120 + seconds)]
        assert record.detail["device"] == "/dev/vdc" and record.status == "complete"
    assert "member_runtime" in _refusal({**RAID6, "fault": {"fail": 1, "member_runtime": "0.5s"}})


def test_the_fill_file_is_journalled_then_written_once_and_synced_through_the_fio_engine(tmp_path):
    from backupbench.runner import fill
    from backupbench.units import MiB

    class Journal:
        def __init__(self):
            self.entries = []

        def will_create(self, artefact):
            self.entries.append(artefact)

    class Engine:
        def run(self, job, out_dir, progress=None, timeout_s=None):
            self.job, self.out_dir = job, out_dir

    journal, engine = Journal(), Engine()
    fill.fill_file(tmp_path, 96 * MiB, RUN_ID, journal, tmp_path / "raid6" / "fill", engine)
    [entry] = journal.entries
    assert entry["path"] == str(tmp_path / fill.FILL_FILE.of(RUN_ID)) and entry["tag"] == RUN_ID
    options = dict(engine.job.options())
    assert (options["rw"], options["size"], options["ioengine"], options["direct"], options["end_fsync"]) == (
        "write", "96m", "psync", "0", "1")
    assert "buffer_compress_percentage" not in options and engine.out_dir.is_dir()
