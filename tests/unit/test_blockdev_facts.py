"""Collection and verdicts over recorded machines, without root and without touching a disk.

The lab VM's recorded tool output (tests/fixtures/lab-guest) is served by a fake command
runner, and its sysfs and /proc by a small tree under tmp_path built from the recordings;
both are passed in as parameters (no patching). Then every device gets its verdict.
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from backupbench import process, units
from backupbench.cli.devices_cmd import DeviceProbe, devices_command
from backupbench.devices.block import DeviceRefused, changes, eligible, recheck_before_write
from backupbench.devices.blockfacts import BlockFacts, collect, probe_signatures
from backupbench.devices.checks import DeviceChecks
from backupbench.devices.probe_parse import Signature
from backupbench.devices.systemfacts import collect_system
from backupbench.devices.blockrules import named_refusals
from backupbench.errors import RefusedError, ToolMissingError
from blockdev_support import (FakeHost, FakeRunner, block_node, make_sysfs, small_machine, wipefs_json,
                              write_proc)

LAB_DISKS = [f"vd{c}" for c in "abcdefgh"]
# Where libblkid finds each signature (byte offset of the magic), as wipefs reports it.
OFFSETS = {"LVM2_member": 0x218, "linux_raid_member": 0x1000, "ext4": 0x438, "xfs": 0x0, "swap": 0xFF6}


def lab_machine(fixtures: Path, tmp_path: Path, *, blkid_only: bool = False) -> tuple[FakeHost, FakeRunner]:
    lab = fixtures / "lab-guest"
    lsblk_text = (lab / "lsblk.json").read_text()
    tree = json.loads(lsblk_text)["blockdevices"]
    info: dict[str, dict] = {}

    def visit(node: dict) -> None:
        info.setdefault(node["kname"], node)
        for child in node.get("children", []):
            visit(child)
    for node in tree:
        visit(node)

    # Holders and slaves as recorded from /sys/class/block/*/{holders,slaves}.
    links: dict[str, dict[str, list[str]]] = {}
    for line in (lab / "sys-block-slaves.txt").read_text().splitlines():
        match = re.match(r"(\S+): slaves=(.*?)\s+holders=(.*)$", line)
        name, slaves, holders = match.groups()
        links[name] = {"slaves": slaves.split(), "holders": holders.split()}
    make_sysfs(tmp_path, {
        name: {"maj_min": n["maj:min"], "size": n["size"], "ro": n["ro"], "rota": n["rota"], **links[name]}
        for name, n in info.items()
    })

    nodes = {f"/dev/{name}": block_node(f"/dev/{name}", n["maj:min"]) for name, n in info.items()}
    for name, n in info.items():
        if n["path"] != f"/dev/{name}":   # /dev/mapper/vg0-lin -> ../dm-0
            nodes[n["path"]] = block_node(n["path"], n["maj:min"], f"/dev/{name}")
    nodes["/dev/vg0/lin"] = block_node("/dev/vg0/lin", info["dm-0"]["maj:min"], "/dev/dm-0")

    # mounts.txt is /proc/mounts; give it the mountinfo shape, device numbers from lsblk.
    numbers = {path: node.major_minor for path, node in nodes.items()}
    lines = []
    for i, line in enumerate((lab / "mounts.txt").read_text().splitlines()):
        source, point, fstype, options, *_ = line.split()
        number = numbers.get(source, f"0:{30 + i}")
        lines.append(f"{20 + i} 1 {number} / {point} {options} - {fstype} {source} {options}")
    write_proc(tmp_path, "\n".join(lines) + "\n", (lab / "swaps.txt").read_text(), (lab / "mdstat.txt").read_text())

    # blkid.txt: one line per device with its type. blkid stops at a RAID superblock, so it
    # does not show the swap signature mkswap put on vdh (README); wipefs lists both, at the
    # offsets a real wipefs reported for md 1.2 + swap on this host (test_blockdev_parse).
    wipefs: dict[str, list[tuple[str, int]]] = {}
    exports: dict[str, str] = {}
    for line in (lab / "blkid.txt").read_text().splitlines():
        device, rest = line.split(": ", 1)
        kind = re.search(r'\bTYPE="([^"]+)"', rest).group(1)
        resolved = nodes[device].resolved
        wipefs[resolved] = [(kind, OFFSETS[kind])]
        exports[resolved] = "".join(f"{k}={v}\n" for k, v in re.findall(r'(\w+)="([^"]*)"', rest))
    wipefs["/dev/vdh"].append(("swap", OFFSETS["swap"]))
    runner = FakeRunner(lsblk_text, wipefs, (lab / "pvs.json").read_text(), exports if blkid_only else None)
    return FakeHost(tmp_path, nodes), runner


def rules_of(facts) -> set[str]:
    return {name for name, _ in named_refusals(facts)}


def problems_of(facts) -> str:
    return "\n".join(reason.problem for _, reason in named_refusals(facts))


# --- the lab VM: every disk is in use, each for its own reason ---------------------------

@pytest.fixture
def lab(fixtures, tmp_path):
    host, runner = lab_machine(fixtures, tmp_path)
    system = collect_system(run=runner, host=host)
    return host, runner, system


def test_lab_system_facts(lab):
    _, _, system = lab
    assert system.errors == ()
    assert system.mounts == {"dm-0": ("/mnt/lin",)}
    assert system.physical_volumes == {f"vd{c}": "vg0" for c in "abcd"}
    assert system.md_arrays[0].name == "md0" and system.swaps == ()
    assert system.system_mounts == {}   # the lab's / is the initramfs (rootfs), on no disk


@pytest.mark.parametrize("disk, expected", [
    ("vda", {"lvm_pv", "holders", "mounted"}),
    ("vdb", {"lvm_pv", "holders"}),
    ("vdc", {"lvm_pv", "holders"}),
    ("vdd", {"lvm_pv", "holders"}),
    ("vde", {"md_member", "holders"}),
    ("vdf", {"md_member", "holders"}),
    ("vdg", {"md_member", "holders"}),
    ("vdh", {"md_member", "holders", "swap", "conflicting_signatures"}),
])
def test_every_lab_disk_is_refused_for_what_is_on_it(lab, disk, expected):
    host, runner, system = lab
    facts, reasons = eligible(f"/dev/{disk}", run=runner, host=host, system=system)
    assert reasons
    assert rules_of(facts) == expected
    assert facts.probe_errors == () and facts.type == "disk" and facts.size_bytes > 0
    for reason in reasons:
        assert reason.problem.startswith(f"/dev/{disk} ") and reason.fix


def test_lab_lvm_disks_name_the_volume_group_and_what_sits_on_them(lab):
    host, runner, system = lab
    vda = collect("/dev/vda", run=runner, host=host, system=system)
    assert vda.lvm_pv and vda.lvm_vg == "vg0"
    assert vda.holders == ("dm-1", "dm-3", "dm-7", "dm-8")
    assert ("dm-0", "/mnt/lin") in vda.child_mountpoints
    text = problems_of(vda)
    assert "is an LVM physical volume in volume group vg0" in text
    assert "is held by dm-1, dm-3, dm-7 and dm-8" in text
    assert "dm-0 on /mnt/lin" in text


def test_lab_vdh_carries_md_and_swap_and_both_are_refused(lab):
    host, runner, system = lab
    vdh = collect("/dev/vdh", run=runner, host=host, system=system)
    assert vdh.md_member and vdh.md_array == "md0 (active raid6)"
    assert [s.type for s in vdh.signatures] == ["linux_raid_member", "swap"]
    reasons = dict((name, r) for name, r in named_refusals(vdh))
    assert "md superblock (linux_raid_member)" in reasons["md_member"].problem
    assert "member of md array md0 (active raid6)" in reasons["md_member"].problem
    assert "mdadm --stop /dev/md0" in reasons["md_member"].fix
    assert reasons["swap"].problem == "/dev/vdh carries a swap signature"
    assert reasons["conflicting_signatures"].problem.startswith(
        "/dev/vdh carries conflicting signatures: an md superblock (linux_raid_member) and a swap signature")
    assert "wipefs -a /dev/vdh" in reasons["conflicting_signatures"].fix
    assert "never wipes" in reasons["conflicting_signatures"].fix


def test_lab_layers_above_the_disks_are_refused_too(lab):
    host, runner, system = lab
    expected = {
        "/dev/md0": {"device_type", "filesystem_or_signature"},      # raid6 array with ext4
        "/dev/dm-0": {"device_type", "mounted"},                     # vg0/lin, XFS on /mnt/lin
        "/dev/dm-5": {"device_type", "read_only"},                   # the thin pool's device
        "/dev/dm-7": {"device_type", "holders", "mounted"},          # lin-real, under mounted lin
    }
    for path, rules in expected.items():
        assert rules_of(collect(path, run=runner, host=host, system=system)) == rules, path
    lin = collect("/dev/vg0/lin", run=runner, host=host, system=system)
    assert lin.is_symlink and lin.resolved == "/dev/dm-0" and lin.kernel_name == "dm-0"
    assert "/dev/vg0/lin -> /dev/dm-0 is mounted on /mnt/lin (xfs)" in problems_of(lin)


def test_collection_only_reads(lab):
    host, runner, system = lab
    for disk in LAB_DISKS:
        collect(f"/dev/{disk}", run=runner, host=host)
    read_only = {"lsblk": "--json", "pvs": "--reportformat", "wipefs": "--no-act"}
    # Every tool was asked (an empty call list would pass the loop below unchecked) ...
    assert {argv[0] for argv in runner.calls} == set(read_only)
    assert sum(argv[0] == "wipefs" for argv in runner.calls) == len(LAB_DISKS)
    # ... and only ever to read.
    for argv in runner.calls:
        assert read_only[argv[0]] in argv, argv
        assert not {"-a", "--all", "--force", "-f", "--yes"} & set(argv), argv


def test_without_wipefs_blkid_is_used_and_hides_vdh_swap(fixtures, tmp_path):
    host, runner = lab_machine(fixtures, tmp_path, blkid_only=True)
    vdh = collect("/dev/vdh", run=runner, host=host)
    # blkid stops at the RAID superblock: the swap header is invisible, md still refuses it.
    assert [s.type for s in vdh.signatures] == ["linux_raid_member"]
    assert rules_of(vdh) == {"md_member", "holders"}
    assert ["blkid", "--probe", "--output", "export", "/dev/vdh"] in runner.calls


def test_devices_command_over_the_lab(lab):
    host, runner, _ = lab
    result = CliRunner().invoke(devices_command, ["--json"], obj=DeviceProbe(run=runner, host=host))
    assert result.exit_code == 0, result.output
    rows = {row["path"]: row for row in json.loads(result.output)["devices"]}
    assert {f"/dev/{d}" for d in LAB_DISKS} | {"/dev/md0", "/dev/dm-0"} <= set(rows)
    assert all(row["verdict"] == "refused" for row in rows.values())
    vdh = rows["/dev/vdh"]
    assert {r["rule"] for r in vdh["reasons"]} == {"md_member", "holders", "swap", "conflicting_signatures"}
    assert vdh["facts"]["md_array"] == "md0 (active raid6)"

    table = CliRunner().invoke(devices_command, [], obj=DeviceProbe(run=runner, host=host))
    assert table.exit_code == 0
    assert "/dev/vdh" in table.output and "refused" in table.output and "usable" not in table.output
    assert "vg0-lin" in table.output   # the dm name is shown next to dm-0


def test_devices_command_named_refused_device_exits_3(lab):
    host, runner, _ = lab
    result = CliRunner().invoke(devices_command, ["vdh"], obj=DeviceProbe(run=runner, host=host))
    assert result.exit_code == RefusedError.exit_code
    assert "fix: " in result.output and "wipefs -a /dev/vdh" in result.output


def test_the_disk_holding_root_and_boot_is_found_through_lvm_and_partitions(tmp_path):
    host, runner = small_machine(tmp_path)
    system = collect_system(run=runner, host=host)
    assert system.errors == () and not system.lvm_scanned   # no LVM tools: the label still counts
    assert system.system_mounts == {"dm-0": ("/",), "vda2": ("/",), "vda": ("/", "/boot"), "vda1": ("/boot",)}
    assert system.mounts["vdc"] == ("/srv/backup",)          # btrfs: anonymous 0:45, found by source
    assert system.swaps == ("vdd",)

    def facts(name):
        return collect(f"/dev/{name}", run=runner, host=host, system=system)

    vda = facts("vda")
    assert vda.holds_root_or_boot == ("/", "/boot") and vda.partitions == ("vda1", "vda2", "vda3")
    assert rules_of(vda) == {"system_disk", "mounted", "partition_table"}
    assert "/dev/vda holds / and /boot (the running system)" in problems_of(vda)
    assert "has a partition table (gpt) with partitions vda1, vda2 and vda3" in problems_of(vda)
    assert set(vda.child_mountpoints) == {("vda1", "/boot"), ("dm-0", "/")}

    spare = facts("vda3")   # blank, but on the system disk
    assert spare.parent == "vda" and spare.type == "part"
    assert rules_of(spare) == {"system_disk"}
    assert "/dev/vda3 is on the disk that holds / and /boot" in problems_of(spare)

    assert rules_of(facts("vda2")) == {"system_disk", "holders", "lvm_pv", "mounted"}   # dm-0 on /
    assert rules_of(facts("dm-0")) == {"system_disk", "mounted", "device_type"}
    assert rules_of(facts("vdc")) == {"mounted"}
    assert rules_of(facts("vdd")) == {"swap"}
    assert "/dev/vdd is in use as swap" in problems_of(facts("vdd"))
    assert rules_of(facts("vdb")) == set()
    root = collect("/dev/mapper/sys-root", run=runner, host=host, system=system)
    assert "/dev/mapper/sys-root -> /dev/dm-0 holds /" in problems_of(root)


def test_a_failed_probe_refuses(tmp_path):
    host, runner = small_machine(tmp_path)

    def broken(argv, **kwargs):
        if argv[0] == "wipefs":
            return process.Result(list(argv), 1, "",
                                  "wipefs: error: /dev/vdb: probing initialization failed: Permission denied")
        return runner(argv, **kwargs)
    facts = collect("/dev/vdb", run=broken, host=host)
    assert rules_of(facts) == {"probe_failed"}
    assert "probing initialization failed" in problems_of(facts)

    def no_lsblk(argv, **kwargs):
        if argv[0] == "lsblk":
            raise ToolMissingError("lsblk is not installed")
        return runner(argv, **kwargs)
    facts = collect("/dev/vdb", run=no_lsblk, host=host)
    assert rules_of(facts) == {"probe_failed"} and "lsblk could not run" in problems_of(facts)


def test_recheck_passes_a_clean_device_and_opens_it_exclusively(tmp_path):
    host, runner = small_machine(tmp_path)
    expected, reasons = eligible("/dev/vdb", run=runner, host=host)
    assert reasons == []
    opened = []
    recheck_before_write("/dev/vdb", expected=expected, run=runner, host=host, open_exclusive=opened.append)
    assert opened == ["/dev/vdb"]


def test_recheck_refuses_a_device_the_kernel_will_not_give_exclusively(tmp_path):
    host, runner = small_machine(tmp_path)

    def busy(path):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), path)
    with pytest.raises(DeviceRefused) as caught:
        recheck_before_write("/dev/vdb", run=runner, host=host, open_exclusive=busy)
    assert isinstance(caught.value, RefusedError)
    assert "is in use by the kernel" in caught.value.message
    assert len(caught.value.reasons) == 1


def test_recheck_refuses_what_changed_since_the_plan(tmp_path):
    host, runner = small_machine(tmp_path)
    expected = collect("/dev/vdb", run=runner, host=host)
    planned_smaller = replace(expected, size_bytes=4 * units.GiB)
    with pytest.raises(DeviceRefused) as caught:
        recheck_before_write("/dev/vdb", expected=planned_smaller, run=runner, host=host,
                             open_exclusive=lambda path: None)
    assert "changed since it was checked: size 4 GiB -> 8 GiB" in caught.value.message

    host, runner = small_machine(tmp_path / "later", extra_wipefs={"/dev/vdb": [("xfs", 0)]})
    with pytest.raises(DeviceRefused) as caught:
        recheck_before_write("/dev/vdb", expected=expected, run=runner, host=host, open_exclusive=lambda p: None)
    assert "/dev/vdb carries an xfs filesystem" in caught.value.message
    assert "signatures none -> xfs@0x0" in caught.value.message
    assert len(caught.value.reasons) == 2


def test_changes_names_each_difference():
    host_facts = dict(path="/dev/sdz", resolved="/dev/sdz", is_symlink=False, exists=True, is_block=True,
                      file_kind="block device", kernel_name="sdz", major_minor="8:240", size_bytes=units.GiB)
    before = BlockFacts(**host_facts)
    assert changes(before, before) == []
    after = replace(before, holders=("dm-3",), mountpoints=("/mnt",), major_minor="8:16", kernel_name="sdb")
    found = changes(before, after)
    assert "holders none -> dm-3" in found and "mount points none -> /mnt" in found
    assert "it is now device sdb (8:16), not sdz (8:240)" in found


def test_devices_command_maps_kernel_names_and_reports_usable(tmp_path):
    host, runner = small_machine(tmp_path)
    probe = DeviceProbe(run=runner, host=host)
    result = CliRunner().invoke(devices_command, ["vdb", "--json"], obj=probe)
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["devices"]
    assert (row["path"], row["verdict"], row["reasons"]) == ("/dev/vdb", "usable", [])
    result = CliRunner().invoke(devices_command, ["vdb", "vda3"], obj=probe)
    assert result.exit_code == 3
    assert "usable" in result.output and "is on the disk that holds / and /boot" in result.output


def test_the_plans_checks_and_each_recheck_look_once_at_all_their_devices(tmp_path):
    host, runner = small_machine(tmp_path, extra_wipefs={"/dev/vda3": [("xfs", 0)]})
    opened = []
    devices = ("/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vda3")
    checks = DeviceChecks(devices, run=runner, host=host, open_exclusive=opened.append)
    verdicts = {device: checks.reasons(device) for device in devices}
    # One lsblk, one pvs, one wipefs for all four, and still each device's own verdict.
    assert [argv[0] for argv in runner.calls] == ["lsblk", "pvs", "wipefs"]
    assert runner.calls[-1][-4:] == ["/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vda3"]
    assert verdicts["/dev/vdb"] == []
    assert any("mounted" in reason for reason in verdicts["/dev/vdc"]), verdicts
    assert any("swap" in reason for reason in verdicts["/dev/vdd"]), verdicts
    assert any("carries an xfs filesystem" in reason for reason in verdicts["/dev/vda3"]), verdicts

    runner.calls.clear()
    checks.recheck(("/dev/vdb",))
    # Looked at again right before the write (nothing reused from the plan).
    assert [argv[0] for argv in runner.calls] == ["lsblk", "pvs", "wipefs"]
    assert opened == ["/dev/vdb"]
    with pytest.raises(DeviceRefused, match="/dev/vdd"):
        checks.recheck(("/dev/vdb", "/dev/vdd"))


def test_a_recheck_of_several_devices_sees_what_was_written_on_one_since_the_plan(tmp_path):
    host, runner = small_machine(tmp_path)
    checks = DeviceChecks(("/dev/vdb", "/dev/vdd"), run=runner, host=host, open_exclusive=lambda path: None)
    assert checks.reasons("/dev/vdb") == [] and checks.reasons("/dev/vdd") != []
    runner.wipefs["/dev/vdb"] = [("ext4", 0x438)]   # someone's mkfs after the plan
    with pytest.raises(DeviceRefused) as caught:
        checks.recheck(("/dev/vdb", "/dev/vdd"))
    # vdb is checked first: with the plan's facts it would pass, and vdd's swap would be the refusal.
    assert "/dev/vdb carries an ext4 filesystem" in caught.value.message
    assert "signatures none -> ext4@0x438" in caught.value.message
    assert [argv[3:] for argv in runner.calls if argv[0] == "wipefs"][-1] == ["/dev/vdb", "/dev/vdd"]


def test_one_wipefs_for_several_devices_only_when_its_answer_can_be_told_apart(tmp_path):
    host, runner = small_machine(tmp_path, extra_wipefs={"/dev/vdb": [("ext4", 0x438)]})
    # A symlink and a node named like another device: wipefs would call both "vdb".
    host.nodes["/dev/disk/by-id/virtio-b"] = block_node("/dev/disk/by-id/virtio-b", "254:16", "/dev/vdb")
    host.nodes["/dev/other/vdb"] = block_node("/dev/other/vdb", "254:17")
    found = probe_signatures(["/dev/disk/by-id/virtio-b", "/dev/vdd", "/tmp/not-a-device"], runner, host)
    assert found == {"/dev/vdb": ([Signature("ext4", 0x438)], None),
                     "/dev/vdd": ([Signature("swap", 0xFF6)], None)}
    assert runner.calls[-1][3:] == ["/dev/vdb", "/dev/vdd"]
    runner.calls.clear()
    assert probe_signatures(["/dev/vdb", "/dev/other/vdb"], runner, host) == {}
    assert probe_signatures(["/dev/vdb"], runner, host) == {}
    assert runner.calls == []   # nothing to gain from one run, or no way to tell them apart

    def answers_for_another(argv, **kwargs):
        return process.Result(list(argv), 0, wipefs_json("/dev/vdz", [("xfs", 0)]), "")
    assert probe_signatures(["/dev/vdb", "/dev/vdd"], answers_for_another, host) == {}


def test_without_wipefs_the_checks_ask_blkid_device_by_device(tmp_path):
    host, recorded = small_machine(tmp_path)
    runner = FakeRunner(recorded.lsblk, {}, pvs=None, blkid={"/dev/vdb": "DEVNAME=/dev/vdb\nTYPE=xfs\n"})
    checks = DeviceChecks(("/dev/vdb", "/dev/vdd"), run=runner, host=host)
    assert any("carries an xfs filesystem" in reason for reason in checks.reasons("/dev/vdb"))
    assert any("swap" in reason for reason in checks.reasons("/dev/vdd"))
    # The one run for both finds no wipefs; then each device: wipefs (missing), then blkid.
    assert [argv[0] for argv in runner.calls] == ["lsblk", "pvs", "wipefs", "wipefs", "blkid", "wipefs", "blkid"]


def test_a_wipefs_run_over_several_devices_that_fails_is_asked_again_device_by_device(tmp_path):
    host, runner = small_machine(tmp_path, extra_wipefs={"/dev/vdb": [("ext4", 0x438)]})

    def first_batch_fails(argv, **kwargs):
        if argv[0] == "wipefs" and len(argv) > 4:
            runner.calls.append([str(a) for a in argv])
            return process.Result(list(argv), 1, "", "wipefs: error: /dev/vdc: probing initialization failed")
        return runner(argv, **kwargs)
    checks = DeviceChecks(("/dev/vdb", "/dev/vdd"), run=first_batch_fails, host=host)
    assert any("carries an ext4 filesystem" in reason for reason in checks.reasons("/dev/vdb"))
    wipefs = [argv[3:] for argv in runner.calls if argv[0] == "wipefs"]
    assert wipefs == [["/dev/vdb", "/dev/vdd"], ["/dev/vdb"]]
