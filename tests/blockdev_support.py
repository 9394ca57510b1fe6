"""Recorded machines for the device tests, without root and without touching a disk: a fake
sysfs and /proc tree under the test's tmp_path, fake /dev nodes, and a fake command runner
answering lsblk/pvs/wipefs/blkid from recordings; all passed in as parameters (no patching)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from backupbench import process, units
from backupbench.devices.probe_host import Host, PathInfo
from backupbench.errors import ToolMissingError


# --- a recorded machine: fake sysfs//proc tree, fake /dev nodes, fake command runner ------

class FakeHost(Host):
    """Host files from a tree under tmp_path; /dev nodes from a table (tests cannot mknod)."""

    def __init__(self, root: Path, nodes: dict[str, PathInfo]):
        super().__init__(root)
        self.nodes = nodes

    def path_info(self, path: str) -> PathInfo:
        return self.nodes.get(path) or PathInfo(path, path, False, False, "missing", None)


def block_node(path: str, major_minor: str, target: str | None = None) -> PathInfo:
    return PathInfo(path, target or path, target is not None, True, "block device", major_minor)


def make_sysfs(root: Path, devices: dict[str, dict]) -> None:
    """/sys/class/block/NAME, /sys/dev/block/MAJ:MIN as the kernel lays them out.

    Each device: maj_min, size (bytes), ro, rota, holders, slaves, parent (partitions)."""
    base = root / "sys/devices/virtual/block"
    for name, dev in devices.items():
        directory = base / dev["parent"] / name if dev.get("parent") else base / name
        (directory / "queue").mkdir(parents=True, exist_ok=True)
        (directory / "dev").write_text(dev["maj_min"] + "\n")
        (directory / "size").write_text(f"{dev['size'] // 512}\n")
        (directory / "ro").write_text("1\n" if dev.get("ro") else "0\n")
        (directory / "queue/rotational").write_text("1\n" if dev.get("rota", True) else "0\n")
        if dev.get("parent"):
            (directory / "partition").write_text("1\n")
        for kind in ("holders", "slaves"):
            (directory / kind).mkdir(exist_ok=True)
            for other in dev.get(kind, ()):
                (directory / kind / other).symlink_to(f"../../{other}")
        for link_dir, link_name in ((root / "sys/class/block", name), (root / "sys/dev/block", dev["maj_min"])):
            link_dir.mkdir(parents=True, exist_ok=True)
            (link_dir / link_name).symlink_to(os.path.relpath(directory, link_dir))


def write_proc(root: Path, mountinfo: str, swaps: str = "Filename\tType\tSize\tUsed\tPriority\n",
               mdstat: str | None = None) -> None:
    (root / "proc/self").mkdir(parents=True, exist_ok=True)
    (root / "proc/self/mountinfo").write_text(mountinfo)
    (root / "proc/swaps").write_text(swaps)
    if mdstat is not None:
        (root / "proc/mdstat").write_text(mdstat)


def wipefs_json(device: str, signatures: list[tuple[str, int]]) -> str:
    return json.dumps({"signatures": _wipefs_entries(device, signatures)})


def _wipefs_entries(device: str, signatures: list[tuple[str, int]]) -> list[dict]:
    # As wipefs names a device in its JSON: the last part of the path it was given.
    return [{"device": os.path.basename(device), "offset": hex(offset), "type": kind, "uuid": None, "label": None}
            for kind, offset in signatures]


class FakeRunner:
    """Answers lsblk/pvs/wipefs/blkid from recordings; remembers every command asked for."""

    def __init__(self, lsblk: str, wipefs: dict[str, list[tuple[str, int]]], pvs: str | None,
                 blkid: dict[str, str] | None = None):
        self.lsblk, self.wipefs, self.pvs, self.blkid = lsblk, wipefs, pvs, blkid
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, timeout, check, **kwargs) -> process.Result:
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        tool = argv[0]
        if tool == "lsblk":
            return process.Result(argv, 0, self.lsblk, "")
        if tool == "pvs":
            if self.pvs is None:
                raise ToolMissingError("pvs is not installed")
            return process.Result(argv, 0, self.pvs, "")
        if tool == "wipefs":
            if self.blkid is not None:
                raise ToolMissingError("wipefs is not installed")
            devices = [arg for arg in argv[1:] if not arg.startswith("-")]
            entries = [entry for device in devices for entry in _wipefs_entries(device, self.wipefs.get(device, []))]
            return process.Result(argv, 0, json.dumps({"signatures": entries}), "")
        if tool == "blkid" and self.blkid is not None:
            text = self.blkid.get(argv[-1], "")
            return process.Result(argv, 0 if text else 2, text, "")
        raise AssertionError(f"unexpected command {argv}")


# --- a machine with / on LVM over a partition, /boot beside it, btrfs, swap ---------------

def small_machine(tmp_path: Path, extra_wipefs: dict | None = None) -> tuple[FakeHost, FakeRunner]:
    gib = units.GiB
    make_sysfs(tmp_path, {
        "vda": {"maj_min": "254:0", "size": 20 * gib},
        "vda1": {"maj_min": "254:1", "size": gib, "parent": "vda"},
        "vda2": {"maj_min": "254:2", "size": 10 * gib, "parent": "vda", "holders": ["dm-0"]},
        "vda3": {"maj_min": "254:3", "size": 9 * gib, "parent": "vda"},
        "dm-0": {"maj_min": "253:0", "size": 10 * gib, "slaves": ["vda2"]},
        "vdb": {"maj_min": "254:16", "size": 8 * gib},
        "vdc": {"maj_min": "254:32", "size": 8 * gib},
        "vdd": {"maj_min": "254:48", "size": 2 * gib},
    })
    write_proc(tmp_path, (
        "27 1 253:0 / / rw,relatime - ext4 /dev/mapper/sys-root rw\n"
        "28 27 254:1 / /boot rw,relatime - ext4 /dev/vda1 rw\n"
        "29 27 0:45 / /srv/backup rw,relatime - btrfs /dev/vdc rw,space_cache=v2\n"
        "30 27 0:46 / /tmp rw - tmpfs tmpfs rw\n"
    ), "Filename\tType\tSize\tUsed\tPriority\n/dev/vdd                partition\t2097148\t0\t-2\n")
    numbers = {"vda": "254:0", "vda1": "254:1", "vda2": "254:2", "vda3": "254:3", "dm-0": "253:0",
               "vdb": "254:16", "vdc": "254:32", "vdd": "254:48"}
    nodes = {f"/dev/{k}": block_node(f"/dev/{k}", v) for k, v in numbers.items()}
    nodes["/dev/mapper/sys-root"] = block_node("/dev/mapper/sys-root", "253:0", "/dev/dm-0")
    types = {"vda": "disk", "vda1": "part", "vda2": "part", "vda3": "part", "dm-0": "lvm",
             "vdb": "disk", "vdc": "disk", "vdd": "disk"}
    lsblk = json.dumps({"blockdevices": [
        {"name": k, "kname": k, "path": f"/dev/{k}", "maj:min": numbers[k], "type": t, "size": 1,
         "ro": False, "rota": True, "mountpoints": [None]} for k, t in types.items()]})
    wipefs = {"/dev/vda": [("gpt", 0x200), ("PMBR", 0x1FE)], "/dev/vda1": [("ext4", 0x438)],
              "/dev/vda2": [("LVM2_member", 0x218)], "/dev/dm-0": [("ext4", 0x438)],
              "/dev/vdc": [("btrfs", 0x10040)], "/dev/vdd": [("swap", 0xFF6)], **(extra_wipefs or {})}
    return FakeHost(tmp_path, nodes), FakeRunner(lsblk, wipefs, pvs=None)
