"""Device facts and verdicts on real loop devices over files this test made (root only).

Every device here is one the test attached itself; the finalizer swaps off, unmounts and
detaches each, even when a test fails. The checks must never write: the sha256 of each
backing file is the same before and after. The machine's own root disk is probed read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from backupbench import units
from backupbench.cli.devices_cmd import devices_command
from backupbench.devices.block import DeviceRefused, eligible, recheck_before_write
from backupbench.devices.blockfacts import collect, probe_signatures
from backupbench.devices.blockrules import named_refusals
from host_support import Loop, LoopDevices, require_tools, sha256

pytestmark = pytest.mark.real
SIZE = 32 * units.MiB


def md_superblock_1_2(device_bytes: int, max_dev: int = 4) -> bytes:
    """An md v1.2 superblock (as mdadm writes at 4 KiB) with a valid checksum, so libblkid and
    wipefs see a linux_raid_member without mdadm being installed (this host has no md)."""
    sb = bytearray(256 + 2 * max_dev)
    sectors = device_bytes // 512
    struct.pack_into("<IIII", sb, 0, 0xA92B4EFC, 1, 0, 0)                # magic, major, features
    sb[16:32] = uuid.uuid4().bytes                                        # set_uuid
    name = b"backupbench-test:0"
    sb[32:32 + len(name)] = name                                          # set_name
    struct.pack_into("<QIIQII", sb, 64, 1_700_000_000, 6, 2, sectors - 2056, 128, max_dev)
    struct.pack_into("<QQQQ", sb, 128, 2048, sectors - 2048, 8, 0)       # data/super offsets
    struct.pack_into("<II", sb, 160, 3, 0)                                # dev_number
    sb[168:184] = uuid.uuid4().bytes                                      # device_uuid
    struct.pack_into("<QQQ", sb, 192, 1_700_000_000, 1, 2**64 - 1)        # utime, events, resync
    struct.pack_into("<I", sb, 220, max_dev)
    for role in range(max_dev):
        struct.pack_into("<H", sb, 256 + 2 * role, role)
    total = sum(struct.unpack_from(f"<{len(sb) // 4}I", sb))
    struct.pack_into("<I", sb, 216, ((total & 0xFFFFFFFF) + (total >> 32)) & 0xFFFFFFFF)
    return bytes(sb)


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=120)


def settle(device: str) -> None:
    """Push anything the preparation wrote through the loop device into the backing file."""
    fd = os.open(device, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Scratch:
    """Mounts, swaps and holders this test made on its loop devices (conftest's loop_device,
    which makes and detaches those); all undone by cleanup()."""

    tmp: Path
    devices: LoopDevices
    mounts: list[Path] = field(default_factory=list)
    swaps: list[str] = field(default_factory=list)
    holders: list[subprocess.Popen] = field(default_factory=list)

    def loop(self, name: str, *, read_only: bool = False, prepare_file: Callable[[Path], None] | None = None) -> Loop:
        return self.devices(name, SIZE, read_only=read_only, prepare_file=prepare_file)

    def mount(self, device: str, *options: str) -> Path:
        target = self.tmp / f"mnt-{os.path.basename(device)}"
        target.mkdir()
        sh("mount", *(["-o", ",".join(options)] if options else []), device, str(target))
        self.mounts.append(target)
        return target

    def swapon(self, device: str) -> None:
        done = sh("swapon", device, check=False)
        if done.returncode != 0:
            pytest.skip(f"swapon does not work in this sandbox: {done.stderr.strip()}")
        self.swaps.append(device)

    def hold_exclusively(self, device: str) -> None:
        """Another program keeps the device open with O_EXCL, as mkfs or a VM would."""
        code = ("import os, sys, time; os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL); "
                "print('held', flush=True); time.sleep(120)")
        holder = subprocess.Popen([sys.executable, "-c", code, device], stdout=subprocess.PIPE, text=True)
        self.holders.append(holder)
        assert holder.stdout.readline().strip() == "held"

    def cleanup(self) -> list[str]:
        problems = []
        for holder in self.holders:
            holder.kill()
            holder.wait(timeout=10)
        for device in reversed(self.swaps):
            if (done := sh("swapoff", device, check=False)).returncode:
                problems.append(f"swapoff {device}: {done.stderr}")
        for target in reversed(self.mounts):
            if (done := sh("umount", str(target), check=False)).returncode:
                sh("umount", "-l", str(target), check=False)
                problems.append(f"umount {target}: {done.stderr}")
        return problems


@pytest.fixture
def scratch(tmp_path, loop_device):
    require_tools("losetup", "wipefs", "lsblk", "mount", "mkfs.ext4")
    made = Scratch(tmp_path, loop_device)
    try:
        yield made
    finally:
        problems = made.cleanup()
        assert not problems, problems


def rules_of(facts) -> set[str]:
    return {name for name, _ in named_refusals(facts)}


def mkfs_ext4(device: str) -> None:
    # No lazy init: a background thread would otherwise keep writing after mount.
    sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", device)


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")


def test_blank_loop_device_is_usable_and_passes_the_recheck(scratch):
    loop = scratch.loop("blank")
    before = sha256(loop.backing)
    facts, reasons = eligible(loop.device)
    assert reasons == [], reasons
    assert (facts.type, facts.size_bytes, facts.read_only) == ("loop", SIZE, False)
    assert facts.backing_file == str(loop.backing)
    assert facts.signatures == () and facts.holders == () and facts.probe_errors == ()
    recheck_before_write(loop.device, expected=facts)   # nothing changed, exclusive open works
    assert sha256(loop.backing) == before


def test_one_wipefs_run_tells_each_loop_devices_signatures_apart(scratch):
    """The real wipefs names each device as the device checks expect (devices/checks.py):
    otherwise every check would quietly fall back to one wipefs per device."""
    blank, formatted = scratch.loop("blank"), scratch.loop("formatted")
    mkfs_ext4(formatted.device)
    found = probe_signatures([blank.device, formatted.device])
    assert set(found) == {blank.device, formatted.device}, found
    assert found[blank.device] == ([], None)
    [(signatures, why)] = [found[formatted.device]]
    assert [s.type for s in signatures] == ["ext4"] and why is None


def prepare_ext4(s: Scratch, loop: Loop) -> str:
    mkfs_ext4(loop.device)
    return "carries an ext4 filesystem"


def prepare_ext4_mounted(s: Scratch, loop: Loop) -> str:
    mkfs_ext4(loop.device)
    target = s.mount(loop.device, "ro")   # read-only: the mounted fs itself must not write either
    return f"is mounted on {target} (ext4)"


def prepare_table(label: str) -> Callable[[Scratch, Loop], str]:
    def prepare(s: Scratch, loop: Loop) -> str:
        need("sfdisk")
        subprocess.run(["sfdisk", "--quiet", "--no-reread", "--no-tell-kernel", loop.device],
                       input=f"label: {label}\n,8M\n,\n", text=True, capture_output=True, check=True)
        return f"has a partition table ({label})"
    return prepare


def prepare_swap(s: Scratch, loop: Loop) -> str:
    sh("mkswap", loop.device)
    return "carries a swap signature"


def prepare_swap_active(s: Scratch, loop: Loop) -> str:
    sh("mkswap", loop.device)
    s.swapon(loop.device)
    return "is in use as swap"


def prepare_pv(s: Scratch, loop: Loop) -> str:
    need("pvcreate")
    # --devices: LVM looks at (and writes) this device only. pvcreate needs no device-mapper.
    subprocess.run(["pvcreate", "--devices", loop.device, loop.device], capture_output=True, text=True,
                   check=True, env={**os.environ, "LVM_SUPPRESS_FD_WARNINGS": "1"})
    return "is an LVM physical volume"


CASES = {
    "ext4": (prepare_ext4, "filesystem_or_signature"),
    "ext4-mounted": (prepare_ext4_mounted, "mounted"),
    "gpt": (prepare_table("gpt"), "partition_table"),
    "dos": (prepare_table("dos"), "partition_table"),
    "swap": (prepare_swap, "swap"),
    "swap-active": (prepare_swap_active, "swap"),
    "lvm-pv": (prepare_pv, "lvm_pv"),
}


@pytest.mark.parametrize("case", CASES)
def test_refused_with_the_reason_and_never_written(scratch, case):
    prepare, rule = CASES[case]
    loop = scratch.loop(case)
    words = prepare(scratch, loop)
    settle(loop.device)
    before = sha256(loop.backing)

    facts, reasons = eligible(loop.device)
    found = dict(named_refusals(facts))
    assert rule in found, reasons
    assert found[rule].problem.startswith(f"{loop.device} {words}"), found[rule].problem
    assert facts.probe_errors == ()
    with pytest.raises(DeviceRefused) as refused:
        recheck_before_write(loop.device)
    assert words in refused.value.message

    assert sha256(loop.backing) == before, "a check wrote to the device"


def test_md_superblock_next_to_swap_is_refused_for_both(scratch):
    def md_and_swap(backing: Path) -> None:
        sh("mkswap", str(backing))
        with open(backing, "r+b") as handle:
            handle.seek(4096)
            handle.write(md_superblock_1_2(SIZE))
    loop = scratch.loop("md-swap", prepare_file=md_and_swap)
    before = sha256(loop.backing)
    facts, _ = eligible(loop.device)
    assert [(s.type, s.offset) for s in facts.signatures] == [("linux_raid_member", 0x1000), ("swap", 0xFF6)]
    assert facts.md_member and facts.md_array is None   # a superblock, but no running array
    assert rules_of(facts) == {"md_member", "swap", "conflicting_signatures"}
    found = dict(named_refusals(facts))
    assert found["conflicting_signatures"].problem.startswith(
        f"{loop.device} carries conflicting signatures: an md superblock (linux_raid_member) and a swap signature")
    assert sha256(loop.backing) == before


def test_read_only_loop_device_is_refused(scratch):
    loop = scratch.loop("ro", read_only=True)
    before = sha256(loop.backing)
    facts, _ = eligible(loop.device)
    assert facts.read_only is True and rules_of(facts) == {"read_only"}
    assert sha256(loop.backing) == before


def test_symlinks_files_and_missing_paths(scratch, tmp_path):
    used = scratch.loop("used")
    mkfs_ext4(used.device)
    blank = scratch.loop("spare")
    settle(used.device)
    hashes = {loop.backing: sha256(loop.backing) for loop in (used, blank)}

    to_used = tmp_path / "to-used"
    to_used.symlink_to(used.device)
    facts, reasons = eligible(to_used)
    assert facts.is_symlink and facts.resolved == used.device
    assert rules_of(facts) == {"filesystem_or_signature"}
    assert reasons[0].problem == f"{to_used} -> {used.device} carries an ext4 filesystem"

    to_blank = tmp_path / "to-blank"
    to_blank.symlink_to(blank.device)
    assert eligible(to_blank)[1] == []   # like /dev/disk/by-id/...: fine when the target is

    facts, reasons = eligible(used.backing)
    assert rules_of(facts) == {"not_block_device"}
    assert reasons[0].problem == f"{used.backing} is not a block device: it is a regular file"

    facts, reasons = eligible(tmp_path / "no-such-disk")
    assert rules_of(facts) == {"missing"} and "does not exist" in reasons[0].problem

    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "gone")
    assert eligible(dangling)[1][0].problem == f"{dangling} is a symlink to {tmp_path / 'gone'}, which does not exist"

    for backing, digest in hashes.items():
        assert sha256(backing) == digest


def test_mounted_device_fails_the_recheck_as_in_use(scratch):
    loop = scratch.loop("mounted")
    mkfs_ext4(loop.device)
    target = scratch.mount(loop.device)
    with pytest.raises(DeviceRefused) as refused:
        recheck_before_write(loop.device)
    assert f"is mounted on {target}" in refused.value.message
    assert "is in use by the kernel: an exclusive open failed (EBUSY)" in refused.value.message


def test_a_device_another_program_holds_exclusively_fails_only_the_recheck(scratch):
    loop = scratch.loop("held")
    scratch.hold_exclusively(loop.device)
    facts, reasons = eligible(loop.device)
    assert reasons == []   # nothing on it and nothing the rules can see ...
    with pytest.raises(DeviceRefused) as refused:
        recheck_before_write(loop.device, expected=facts)   # ... but the kernel says busy
    assert [r.problem for r in refused.value.reasons] == [
        f"{loop.device} is in use by the kernel: an exclusive open failed (EBUSY); it is mounted "
        "(perhaps in another mount namespace), held by device-mapper or md, active swap, "
        "or held open exclusively by another program"]


def test_recheck_refuses_a_device_that_changed_since_the_plan(scratch):
    loop = scratch.loop("grows")
    planned, reasons = eligible(loop.device)
    assert reasons == []
    with open(loop.backing, "r+b") as handle:
        handle.truncate(SIZE + 16 * units.MiB)
    sh("losetup", "--set-capacity", loop.device)
    with pytest.raises(DeviceRefused) as refused:
        recheck_before_write(loop.device, expected=planned)
    assert "changed since it was checked: size 32 MiB -> 48 MiB" in refused.value.message

    planned = collect(loop.device)
    mkfs_ext4(loop.device)
    with pytest.raises(DeviceRefused) as refused:
        recheck_before_write(loop.device, expected=planned)
    assert "signatures none -> ext4@0x438" in refused.value.message


def root_disk_from_mountinfo() -> tuple[str, str] | None:
    """(kernel name of the device holding /, of its disk), found without backupbench."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/":
            number = fields[2]
    link = Path(f"/sys/dev/block/{number}")
    if not link.exists():
        return None
    name = link.resolve().name
    disk = link.resolve().parent.name if (link / "partition").exists() else name
    return name, disk


def test_the_root_disk_of_this_machine_is_refused():
    found = root_disk_from_mountinfo()
    if found is None:
        pytest.skip("/ is not on a block device here (overlay or network root)")
    name, disk = found
    for kname in {name, disk}:
        facts, reasons = eligible(f"/dev/{kname}")
        assert "system_disk" in rules_of(facts), reasons
        assert "/" in facts.holds_root_or_boot


def test_devices_command_lists_our_loop_device_and_judges_named_paths(scratch, tmp_path):
    blank = scratch.loop("listed")
    used = scratch.loop("listed-used")
    sh("mkswap", used.device)
    link = tmp_path / "scratch-disk"
    link.symlink_to(used.device)

    listing = CliRunner().invoke(devices_command, ["--json"])
    assert listing.exit_code == 0, listing.output
    rows = {row["path"]: row for row in json.loads(listing.output)["devices"]}
    assert rows[blank.device]["verdict"] == "usable"
    assert {r["rule"] for r in rows[used.device]["reasons"]} == {"swap"}

    named = CliRunner().invoke(devices_command, [blank.device, str(link)])
    assert named.exit_code == 3
    assert "usable" in named.output and f"{link} -> {used.device}" in named.output
