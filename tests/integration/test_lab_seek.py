"""Lab disks that seek, in the lab VM: four disks served by nbdkit with the disk model
(lab/diskmodel.py), one boot for every check here.

fio in the guest reads 512 KiB blocks one at a time, sequentially (near the model's transfer
rate) and at random over a whole disk (near one per seek + rotation + transfer), and field note
A runs on the four disks as one sequential stream (striped near 4x linear). The transfer rate is
50 MiB/s, as the throttled lab's: four disks at 200 MB/s would ask TCG for 760 MiB/s and measure
the emulator. Bounds are wide for TCG on a shared 2-core host; what they must tell apart is a
disk that seeks from one that does not (random at 96 % of sequential on the throttled lab).
"""

from __future__ import annotations

import pytest
from lab_support import lab_missing

from backupbench.errors import ToolMissingError
from backupbench.lab import nbd, selftest
from backupbench.lab.diskmodel import DiskModel
from backupbench.lab.disks import parse_disks
from backupbench.lab.image import ensure_image
from backupbench.lab.vm import LabVM
from backupbench.units import GiB, KiB, MiB


def _missing() -> str | None:
    missing = lab_missing("nbdkit")
    if missing is None:
        try:
            nbd.filter_path()
        except ToolMissingError as exc:
            missing = exc.message
    return missing


pytestmark = [pytest.mark.real, pytest.mark.vm, pytest.mark.root,
              pytest.mark.skipif(_missing() is not None, reason=_missing() or "")]

MODEL = DiskModel(transfer_rate=50 * MiB)
DISK = GiB
BLOCK = 512 * KiB


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    with LabVM(parse_disks(f"4x{DISK // GiB}GiB"), disk_model=MODEL, image=ensure_image(),
               work_parent=tmp_path_factory.mktemp("lab-seek-work")) as machine:
        yield machine


@pytest.fixture(scope="module")
def reads(vm) -> dict[str, float]:
    out = vm.out_dir / "seek"
    out.mkdir()
    result = vm.run(selftest.seek_reads_script(vm.guest_device(0), vm.guest_device(1), str(out), runtime_s=5),
                    timeout=300)
    assert result.returncode == 0, result.output
    return selftest.read_seek_results(out)


def test_sequential_reads_run_near_the_transfer_rate(vm, reads):
    assert 0.75 <= reads["sequential"] / MODEL.transfer_rate <= 1.05, reads
    served = vm.disk_servers.stats(0)
    assert served["reads"] > 0 and served["seeks"] <= 0.02 * served["reads"], served


def test_random_512k_reads_near_one_per_seek_rotation_transfer(vm, reads):
    expected = MODEL.random_rate(BLOCK, DISK, DISK)        # 8.5 + 4.17 + 10 ms -> 22 MiB/s
    assert 0.7 <= reads["random"] / expected <= 1.15, (reads, expected)
    assert reads["random"] / reads["sequential"] < 0.6     # the range KB2014 speaks of is there
    served = vm.disk_servers.stats(1)
    assert served["seeks"] >= 0.9 * served["reads"], served


def test_field_note_a_holds_on_seeking_disks(vm):
    out = vm.out_dir / "fna"
    out.mkdir()
    script = selftest.field_note_a_script(vm.guest_devices(), str(out), runtime_s=4, jobs=1, iodepth=8)
    result = vm.run(script, timeout=300)
    assert result.returncode == 0, result.output
    figures = selftest.read_results(out)
    assert 0.75 * MODEL.transfer_rate <= figures.linear.write_bytes_per_s <= 1.05 * MODEL.transfer_rate, figures
    assert 3.0 <= figures.ratio <= 4.5, figures
    assert figures.striped.guest_cpu_busy < 0.9, figures
