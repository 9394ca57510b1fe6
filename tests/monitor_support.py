"""What the monitor's tests share: a fake /proc driven by a hand clock (FakeProc, disk_line)
the recorded lab guest's /sys and mountinfo (FakeSys, lab_guest_host), a host's tree written from a
recorded listing (recorded_tree), and phase hooks that keep what they were told (RecordedHooks)."""

from __future__ import annotations

import os
from pathlib import Path

from backupbench.hostfiles import HostFiles
from backupbench.monitor.procfs import parse_diskstats

LAB = Path(__file__).parent / "fixtures" / "lab-guest"
MEMINFO = "MemTotal: 2048000 kB\nMemAvailable: 1024000 kB\nSwapTotal: 1024 kB\nSwapFree: 0 kB\n"


class FakeProc:
    """Writes /proc files under a root and drives a clock by hand."""

    def __init__(self, root: Path):
        (root / "proc").mkdir(parents=True, exist_ok=True)
        self.root = root
        self.now = 100.0
        self.cpu = [1000, 0, 500, 8000, 100, 0, 0, 0, 0, 0]
        self.write(diskstats=(LAB / "diskstats-1.txt").read_text(), load="0.50 0.40 0.30 1/100 42")
        (root / "proc" / "meminfo").write_text(MEMINFO)

    @property
    def host(self) -> HostFiles:
        return HostFiles(self.root)

    def clock(self) -> float:
        return self.now

    def write(self, diskstats: str | None = None, load: str | None = None) -> None:
        if diskstats is not None:
            (self.root / "proc" / "diskstats").write_text(diskstats)
        if load is not None:
            (self.root / "proc" / "loadavg").write_text(load + "\n")
        (self.root / "proc" / "stat").write_text("cpu  " + " ".join(map(str, self.cpu)) + "\n")

    def advance(self, seconds: float, **files) -> None:
        self.now += seconds
        ticks = int(seconds * 100)
        self.cpu[0] += ticks // 4          # 25 % user
        self.cpu[3] += ticks - ticks // 4  # 75 % idle
        self.write(**files)


def disk_line(name: str, wr_ios: int, wr_sectors: int, wr_ticks: int, io_ticks: int, queue: int,
              major: int = 254, minor: int = 0) -> str:
    return f"{major} {minor} {name} 0 0 0 0 {wr_ios} 0 {wr_sectors} {wr_ticks} 0 {io_ticks} {queue}\n"


MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 253:0 / /mnt/lin rw,relatime shared:2 - xfs /dev/mapper/vg0-lin rw
31 22 9:0 / /mnt/md rw,relatime shared:3 - ext4 /dev/md0 rw
32 22 253:5 / /mnt/thin rw,relatime shared:4 - ext4 /dev/mapper/vg0-thin rw
33 22 254:17 / /mnt/part rw,relatime shared:5 - ext4 /dev/vdb1 rw
34 22 7:3 / /mnt/loop\\040disk rw,relatime shared:6 - ext4 /dev/loop3 rw
35 22 253:10 / /mnt/onparts rw,relatime shared:7 - xfs /dev/mapper/vgp-lv rw
36 22 0:40 / /mnt/ram rw,relatime shared:8 - tmpfs tmpfs rw,size=1024k
37 22 0:41 / /mnt/over rw,relatime shared:9 - overlay overlay rw,lowerdir=/a,upperdir=/b,workdir=/c
38 22 0:42 / /mnt/nfs rw,relatime shared:10 - nfs4 server:/export rw
39 22 0:43 / /mnt/tp rw,noatime shared:11 - zfs tp/backups rw,xattr,noacl,casesensitive
"""


class FakeSys:
    """A /sys/class/block, /sys/dev/block and /sys/devices tree shaped like the kernel's."""

    def __init__(self, root: Path):
        self.root = root
        for d in ("sys/class/block", "sys/dev/block", "proc/self"):
            (root / d).mkdir(parents=True, exist_ok=True)

    def add(self, name: str, major: int, minor: int, slaves=(), parent: str | None = None,
            dm_name: str | None = None, md_level: str | None = None, backing: str | None = None,
            holders=()) -> None:
        if parent:
            rel = Path("devices/virtual/block") / parent / name
            (self.root / "sys" / rel / "partition").parent.mkdir(parents=True, exist_ok=True)
            (self.root / "sys" / rel / "partition").write_text("1\n")
        else:
            rel = Path("devices/virtual/block") / name
        node = self.root / "sys" / rel
        (node / "slaves").mkdir(parents=True, exist_ok=True)
        (node / "holders").mkdir(exist_ok=True)
        for s in slaves:
            os.symlink(f"../../{s}", node / "slaves" / s)
        for h in holders:
            os.symlink(f"../../{h}", node / "holders" / h)
        if dm_name:
            (node / "dm").mkdir()
            (node / "dm" / "name").write_text(dm_name + "\n")
        if md_level:
            (node / "md").mkdir()
            (node / "md" / "level").write_text(md_level + "\n")
        if backing:
            (node / "loop").mkdir()
            (node / "loop" / "backing_file").write_text(backing + "\n")
        os.symlink(f"../../{rel}", self.root / "sys/class/block" / name)
        os.symlink(f"../../{rel}", self.root / "sys/dev/block" / f"{major}:{minor}")


# dmsetup-table.txt's names; the recording has no dm/uuid, so an LVM -real is known by its name.
LAB_DM_NAMES = {"dm-0": "vg0-lin", "dm-5": "vg0-thin", "dm-7": "vg0-lin-real", "dm-8": "vg0-linsnap-cow",
                "dm-9": "vg0-linsnap"}


def lab_guest_host(tmp_path: Path) -> HostFiles:
    """The recorded lab guest's /sys and mountinfo under tmp_path (a loop device on /mnt/loop disk)."""
    numbers = {n: (c.major, c.minor) for n, c in parse_diskstats((LAB / "diskstats-1.txt").read_text()).items()}
    fake = FakeSys(tmp_path)
    for line in (LAB / "sys-block-slaves.txt").read_text().splitlines():
        name, _, rest = line.partition(":")
        slaves, _, holders = rest.partition("holders=")
        fake.add(name, *numbers[name], slaves=slaves.replace("slaves=", "").split(), holders=holders.split(),
                 dm_name=LAB_DM_NAMES.get(name), md_level="raid6" if name == "md0" else None)
    fake.add("vdb1", 254, 17, parent="vdb")
    fake.add("vdc1", 254, 33, parent="vdc")
    fake.add("dm-10", 253, 10, slaves=["vdb1", "vdc1"], dm_name="vgp-lv")
    fake.add("loop3", 7, 3, backing="/var/lib/images/disk 1.img")
    fake.add("loop0", 7, 0)
    fake.add("ram0", 1, 0)
    for disk, minor in (("vda", 1), ("vdd", 49), ("vde", 65), ("vdf", 81), ("vdg", 97), ("vdh", 113)):
        fake.add(f"{disk}1", 254, minor, parent=disk)
    (tmp_path / "proc/self/mountinfo").write_text(MOUNTINFO)
    return HostFiles(tmp_path)


def recorded_tree(root: Path, listing: Path) -> HostFiles:
    """A host written under root from a recorded listing of its /sys and mountinfo
    (tests/fixtures/btrfs/sysfs-three-filesystems.txt says the format)."""
    mounts: list[str] = []
    for line in listing.read_text().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "mount":
            mounts.append(rest)
        elif kind == "link":
            path, _, target = rest.partition(" -> ")
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).symlink_to(target)
        elif kind == "file":
            path, _, value = rest.partition(" = ")
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(value + "\n")
        elif kind == "dir":
            (root / rest.split()[0]).mkdir(parents=True, exist_ok=True)
    (root / "proc/self").mkdir(parents=True, exist_ok=True)
    (root / "proc/self/mountinfo").write_text("".join(line + "\n" for line in mounts))
    return HostFiles(root)


class RecordedHooks:
    """PhaseHooks that keep what they were told (the pipeline's PhaseRecorder stores it):
    runner/host_monitor.py's tests, in tests/unit and tests/integration."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.finished_detail: dict[str, dict] = {}

    def started(self, name, title, pattern, measured=True, warmup_s=0.0):
        self.calls.append(("started", name, measured))

    def progress(self, name, fraction, detail):
        self.calls.append(("progress", name, fraction))

    def finished(self, name, figures, detail=None, failed=False):
        self.calls.append(("finished", name, figures))
        self.finished_detail[name] = detail or {}

    def will_create(self, artefact):
        self.calls.append(("will_create", artefact["kind"]))
        return 7

    def removed(self, artefact_id, how="removed"):
        self.calls.append(("removed", artefact_id, how))
