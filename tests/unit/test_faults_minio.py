"""Faults on minio-ec, pure: the refusals, the commands (a read-only tmpfs over the failed
drive's folder, the replacement made and mounted over it), a teardown that leaves nothing
from whichever state the fault reached, and MinIO's heal state read from answers of the
real server (tests/fixtures/minio, recorded from .tools/bin/minio on loop devices)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backupbench import process
from backupbench.errors import BackupbenchError, RecipeError
from backupbench.faults.plan import FaultPlan
from backupbench.layouts.actions import GUARD_PROGRAMS, UNDO_PROGRAMS
from backupbench.layouts.executor import undo_actions
from backupbench.layouts.minio_plan import STAND_IN
from backupbench.monitor.rebuild_minio import drives, heal_state, sigv4_headers
from backupbench.plan import plan_layouts
from backupbench.recipe.model import parse
from backupbench.runner.faulted import state_reader

FIXTURES = Path(__file__).parents[1] / "fixtures" / "minio"
DISKS = [f"/dev/vd{letter}" for letter in "abcdefg"]
RUN_ID = "20261123T000000-abcd1234"
EC4 = {"kind": "minio-ec", "devices": DISKS[:4]}
# The drive the recorded answers healed.
HEALED_DRIVE = "/tmp/mexp/mnt/d4"


def _layout(layout: dict):
    recipe = parse({"name": "f", "devices": DISKS, "layout": [{"name": "ec", **layout}],
                    "workload": [{"kind": "s3", "objects": 10}]})
    return plan_layouts(recipe, RUN_ID)[0]


def _refusal(layout: dict) -> str:
    with pytest.raises(RecipeError) as caught:
        _layout(layout)
    return caught.value.message


def test_a_failed_drive_gets_a_read_only_tmpfs_and_its_replacement_is_mounted_over_it():
    layout = _layout({**EC4, "filesystem": {"type": "xfs", "mount_options": ["noatime"]},
                      "fault": {"fail": "/dev/vdc", "replace": "/dev/vde"}})
    fault, root = layout.fault, str(layout.mount_point)
    drive = f"{root}/d3"
    assert fault.kind == "minio" and fault.array == root and fault.member_ids == (3,)
    assert fault.fail == (("mount", "-t", "tmpfs", "-o", "ro,size=1m", STAND_IN, drive),)
    mkfs, mount = fault.rebuild
    assert mkfs[0] == "mkfs.xfs" and mkfs[-1] == "/dev/vde"
    assert mount == ("mount", "-o", "noatime", "/dev/vde", drive)
    # The replacement is the layout's: checked blank before, wiped with the failed drive's filesystem.
    assert "/dev/vde" in layout.devices
    wipe = next(a for a in layout.actions if a.description == "make xfs on /dev/vdc")
    assert wipe.undo == (("wipefs", "-a", "/dev/vdc"), ("wipefs", "-a", "/dev/vde"))
    assert wipe.guard.argv[-1] == "/dev/vdc"
    for action in layout.actions:
        assert {argv[0] for argv in action.undo} <= UNDO_PROGRAMS, action.description
        assert action.guard is None or action.guard.argv[0] in GUARD_PROGRAMS, action.description


def test_without_a_replacement_the_drive_stays_failed():
    layout = _layout({**EC4, "parity": 2, "fault": {"fail": 1}})
    assert layout.fault.failed == ("/dev/vdd",) and not layout.fault.rebuilds
    assert [a.description for a in layout.actions if not a.do] == [
        f"unmount the read-only tmpfs the fault puts on {layout.mount_point}/d4 (if it got that far)"]


@pytest.mark.parametrize("fault, words", [
    ({"fail": 3}, "survives 2 loses its data"),  # MinIO's default EC:2 on 4 drives (layout_model)
    ({"fail": ["/dev/vda", "/dev/vdb", "/dev/vdc"], "allow_data_loss": True}, "loses read quorum"),
    ({"fail": "/dev/vdg"}, "/dev/vdg is not a member of this layout"),
    ({"fail": 1, "replace": "/dev/vda"}, "is already a member"),
    ({"fail": 1, "replace": ["/dev/vde", "/dev/vdf"]}, "need as many replacements"),
    ({"fail": 1, "replace": "spare"}, "dRAID distributed spare"),
])
def test_minio_faults_that_cannot_run_are_refused_in_one_line(fault, words):
    message = _refusal({**EC4, "fault": fault})
    assert "\n" not in message and words in message


def test_failing_half_the_drives_at_equal_parity_is_refused_for_want_of_write_quorum():
    message = _refusal({**EC4, "parity": 2, "fault": {"fail": 2}})
    assert "without write quorum (3 drives)" in message and "fail at most 1" in message
    assert _layout({**EC4, "parity": 2, "fault": {"fail": 1}}).fault.survives == 2
    assert "has none" in _refusal({**EC4, "parity": 0, "fault": {"fail": 1}})


def test_a_replacement_outside_devices_is_refused():
    with pytest.raises(RecipeError, match="does not name"):
        parse({"name": "f", "devices": DISKS[:4], "workload": [{"kind": "s3", "objects": 10}],
               "layout": [{"name": "ec", **EC4, "fault": {"fail": 1, "replace": "/dev/vdz"}}]})


class MountHost:
    """Just the commands a minio-ec teardown runs, over stacks of mounts per folder: what
    findmnt lists (bottom first), umount pops, wipefs clears."""

    def __init__(self, stacks: dict[str, list[str]], labels: dict[str, str]):
        self.stacks, self.labels, self.ran = stacks, labels, []

    def __call__(self, argv, timeout=0, check=True) -> process.Result:
        self.ran.append(tuple(argv))
        program, target = argv[0], argv[-1]
        out, code = "", 0
        if program == "findmnt":
            out = "".join(f"{source}\n" for source in self.stacks.get(target, []))
            code = 0 if out else 1
        elif program == "mountpoint":
            code = 0 if self.stacks.get(target) else 32
        elif program == "umount":
            if not self.stacks.get(target):
                raise BackupbenchError(f"umount: {target}: not mounted")
            self.stacks[target].pop()
        elif program == "blkid":
            out = self.labels.get(target, "")
        elif program == "wipefs":
            self.labels.pop(target, None)
        return process.Result(list(argv), code, out, "")


@pytest.mark.parametrize("reached", ["built", "failed", "replaced"])
def test_teardown_leaves_nothing_from_whichever_state_the_fault_reached(reached):
    layout = _layout({**EC4, "fault": {"fail": "/dev/vdd", "replace": "/dev/vde"}})
    drive = f"{layout.mount_point}/d4"
    stacks = {f"{layout.mount_point}/d{i}": [DISKS[i - 1]] for i in range(1, 5)}
    stacks[drive] += {"built": [], "failed": [STAND_IN], "replaced": [STAND_IN, "/dev/vde"]}[reached]
    labels = {a.guard.argv[-1]: a.guard.contains for a in layout.actions if a.guard and a.guard.argv[0] == "blkid"}
    if reached == "replaced":
        labels["/dev/vde"] = "its own label"
    host = MountHost(stacks, labels)
    report = undo_actions(list(reversed(layout.actions)), None, host)
    assert not report.failed and all(not stack for stack in stacks.values())
    assert not host.labels  # every drive and the replacement wiped
    # Only the fault's own unmounts are skipped, and only for the steps it did not reach.
    assert len(report.skipped) == {"built": 2, "failed": 1, "replaced": 0}[reached]
    assert all("if" in line for line in report.skipped)


def _answer(name: str) -> dict:
    return json.loads((FIXTURES / f"heal-status-{name}.json").read_text())


def test_heal_state_from_the_real_servers_answers():
    healthy = heal_state(_answer("healthy"))
    assert not healthy.degraded and not healthy.rebuilding and healthy.finished and healthy.percent is None
    degraded = heal_state(_answer("degraded"), (HEALED_DRIVE,))
    assert degraded.degraded and not degraded.rebuilding and not degraded.finished
    assert [d.state for d in drives(_answer("degraded"))] == ["ok", "ok", "ok", "unformatted"]
    healing = heal_state(_answer("healing"), (HEALED_DRIVE,))
    assert healing.rebuilding and healing.degraded and not healing.finished
    assert healing.done_bytes == 51387548 and healing.percent == pytest.approx(100 * 51387548 / 209715200)
    # Healed: heal_info stays on the drive, finished; MinIO's estimate of the total was behind the data.
    healed = heal_state(_answer("healed"), (HEALED_DRIVE,))
    assert healed.finished and not healed.degraded and not healed.rebuilding
    assert healed.percent == 100.0 and healed.done_bytes == 309189788


def test_a_fresh_drive_minio_has_not_healed_yet_is_not_finished():
    # Every drive ok, but no heal of the awaited drive seen: before MinIO's drive monitor looks.
    assert not heal_state(_answer("healthy"), (HEALED_DRIVE,)).finished
    with pytest.raises(ValueError, match="does not list drive /elsewhere/d4"):
        heal_state(_answer("healthy"), ("/elsewhere/d4",))
    with pytest.raises(ValueError, match="lists no drive"):
        heal_state({"sets": []})


def test_the_heal_status_request_is_signed_for_s3_in_us_east_1():
    headers = sigv4_headers("POST", "http://127.0.0.1:9000/minio/admin/v3/background-heal/status",
                            "bbuser", "secret", 1795497937.0)
    assert headers["x-amz-date"] == "20261124T052537Z"
    credential, signed, signature = headers["Authorization"].split(", ")
    assert credential == "AWS4-HMAC-SHA256 Credential=bbuser/20261124/us-east-1/s3/aws4_request"
    assert signed == "SignedHeaders=host;x-amz-content-sha256;x-amz-date"
    other = sigv4_headers("POST", "http://127.0.0.1:9000/minio/admin/v3/background-heal/status",
                          "bbuser", "other", 1795497937.0)
    assert len(signature) == len("Signature=") + 64 and other["Authorization"] != headers["Authorization"]


def test_the_minio_reader_needs_the_running_server():
    fault = FaultPlan(spec=None, kind="minio", array="/run/x/ec", failed=("/dev/vdd",), replacements=(),  # type: ignore[arg-type]
                      fail=(), rebuild=(), member_ids=(4,))
    with pytest.raises(BackupbenchError, match="through the running server"):
        state_reader(fault)
