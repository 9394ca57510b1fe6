"""The lab's self-test: field note A (LVM linear vs striped) inside a lab VM.

Four throttled disks, one VG; a linear LV pinned to the first PV and a `-i 4 -I 64k` striped
LV; fio 512 KiB sequential direct writes with libaio, 4 jobs each in its own region
(`offset_increment`), on each in turn. With every disk capped at R, the linear LV can only
reach R and the striped LV about 4R, so striped/linear near 4 shows that the throttles bind
and the lab measures the layout, not the emulator. The guest's CPU is sampled around each
run: a saturated guest CPU would mean TCG, not the disks, set the figure.

On seeking disks (lab/diskmodel.py) the LVs seek wherever jobs share a disk, and the model's
command queue decides how much: with 4 jobs at queue depth 16 (the example recipe's shape) the disk
serves each stream's queued run in one sweep, and the ratio holds near 4 (3.38x measured at
50 MiB/s on 1 GiB disks, 3.60x on 4 GiB ones; 1.51x and 1.56x served in arrival order). Jobs at
queue depth 1 leave it nothing to sort (the next request of a stream comes only after the last
is answered): 16 jobs x 1 measure 2.0x, as a disk without a write cache would.
`seek_reads_script` is the model's own check: 512 KiB reads, sequential on one disk and random
over another, one at a time and with several in flight.

The benches (bench/lab.py, bench/lab_seek.py) and the integration tests use this; `backupbench
lab` with a recipe is the general way to run such experiments.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from backupbench.lab.agent import cpu_busy_fraction
from backupbench.units import MiB

VG = "bblab_a"
LAYOUTS = ("linear", "striped")


def field_note_a_script(devices: list[str], out_dir: str, runtime_s: int = 5, lv_size_mib: int = 768,
                        jobs: int = 4, iodepth: int = 1) -> str:
    """Guest shell script: provision, run fio on each LV (JSON into out_dir), tear down."""
    if len(devices) < 2:
        raise ValueError("field note A needs at least two disks")
    devs = " ".join(shlex.quote(d) for d in devices)
    region = lv_size_mib // jobs
    fio_common = (f"--rw=write --bs=512k --direct=1 --ioengine=libaio --iodepth={iodepth} --numjobs={jobs} "
                  f"--size={region}m --offset_increment={region}m --time_based --runtime={runtime_s} "
                  f"--ramp_time=1 --group_reporting --output-format=json")
    out = shlex.quote(out_dir)
    return f"""set -e
cleanup() {{ lvremove -qq -y {VG} >/dev/null 2>&1 || true; vgremove -qq -y {VG} >/dev/null 2>&1 || true; pvremove -qq -y {devs} >/dev/null 2>&1 || true; }}
trap cleanup EXIT
pvcreate -qq -y {devs}
vgcreate -qq --addtag backupbench {VG} {devs}
lvcreate -qq -y -n linear -L {lv_size_mib}m {VG} {shlex.quote(devices[0])}
lvcreate -qq -y -n striped -i {len(devices)} -I 64k -L {lv_size_mib}m {VG}
lvs --noheadings -o lv_name,segtype,stripes,devices {VG}
for lv in {' '.join(LAYOUTS)}; do
    head -n1 /proc/stat > {out}/$lv.cpu-before
    fio --name=$lv --filename=/dev/{VG}/$lv {fio_common} > {out}/$lv.json
    head -n1 /proc/stat > {out}/$lv.cpu-after
done
"""


@dataclass
class LayoutFigure:
    layout: str
    write_bytes_per_s: float
    write_iops: float
    guest_cpu_busy: float  # 0..1, all vCPUs

    @property
    def mib_s(self) -> float:
        return self.write_bytes_per_s / MiB


@dataclass
class FieldNoteA:
    linear: LayoutFigure
    striped: LayoutFigure

    @property
    def ratio(self) -> float:
        return self.striped.write_bytes_per_s / self.linear.write_bytes_per_s


def read_results(out_dir: Path) -> FieldNoteA:
    figures = {}
    for layout in LAYOUTS:
        job = json.loads((out_dir / f"{layout}.json").read_text())["jobs"][0]
        busy = cpu_busy_fraction((out_dir / f"{layout}.cpu-before").read_text(),
                                 (out_dir / f"{layout}.cpu-after").read_text()) or 0.0
        figures[layout] = LayoutFigure(layout, float(job["write"]["bw_bytes"]), float(job["write"]["iops"]), busy)
    return FieldNoteA(figures["linear"], figures["striped"])


def random_read_name(depth: int) -> str:
    """The name of the random reads at `depth` in flight: 'random' at 1, 'random-qd32' at 32."""
    return "random" if depth == 1 else f"random-qd{depth}"


def seek_reads_script(sequential_device: str, random_device: str, out_dir: str, runtime_s: int = 5,
                      block: int = 512 * 1024, random_depths: tuple[int, ...] = (1,)) -> str:
    """Guest shell script: `block`-byte direct reads, sequential over one device one at a time,
    then at random places over the whole of another with each of `random_depths` in flight, fio's
    JSON into out_dir (sequential.json, random.json, random-qd32.json...). `randrepeat=0`: a
    fresh draw each run, not the same offsets served again."""
    common = (f"--bs={block} --direct=1 --ioengine=libaio --time_based --runtime={runtime_s} "
              f"--randrepeat=0 --output-format=json")
    out = shlex.quote(out_dir)
    lines = [f"fio --name=sequential --filename={shlex.quote(sequential_device)} --rw=read --iodepth=1 {common} "
             f"> {out}/sequential.json"]
    for depth in random_depths:
        name = random_read_name(depth)
        lines.append(f"fio --name={name} --filename={shlex.quote(random_device)} --rw=randread --iodepth={depth} "
                     f"{common} > {out}/{name}.json")
    return "set -e\n" + "\n".join(lines) + "\n"


def read_seek_results(out_dir: Path) -> dict[str, float]:
    """{"sequential": bytes/s, "random": bytes/s, "random-qd32": ...} from seek_reads_script's output."""
    return {path.stem: float(json.loads(path.read_text())["jobs"][0]["read"]["bw_bytes"])
            for path in sorted(out_dir.glob("*.json"))}


def read_bytes(out_dir: Path) -> int:
    """The bytes every fio run of seek_reads_script read."""
    return sum(json.loads(path.read_text())["jobs"][0]["read"]["io_bytes"] for path in out_dir.glob("*.json"))
