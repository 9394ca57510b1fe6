"""The lab VM for real: build (or reuse) the guest image, boot QEMU under TCG, and inside the
guest create and tear down LVM linear/striped/thin/snapshot volumes and an md RAID6, run
field note A (linear vs striped under throttled disks), and run backupbench itself.

Needs root and the lab's host packages (scripts/install-lab-deps.sh). The image is built
once into $BACKUPBENCH_LAB_CACHE or $XDG_CACHE_HOME/backupbench/lab and reused by later runs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lab_support import lab_missing

import backupbench
from backupbench.errors import RefusedError, ToolMissingError
from backupbench.process import running
from backupbench.lab import kernel, selftest
from backupbench.lab.disks import Throttle, parse_disks
from backupbench.lab.image import LabImage, ensure_image
from backupbench.lab.vm import LabError, LabVM
from backupbench.units import MiB

RATE = 50 * MiB
DISKS = "4x1GiB,1x512MiB:xfs"


pytestmark = [pytest.mark.real, pytest.mark.vm, pytest.mark.root,
              pytest.mark.skipif(lab_missing("apt-get", "mkfs.xfs") is not None,
                                 reason=lab_missing("apt-get", "mkfs.xfs") or "")]


@pytest.fixture(scope="session")
def lab_image():
    return ensure_image()


@pytest.fixture(scope="module")
def vm(lab_image, tmp_path_factory):
    shared = tmp_path_factory.mktemp("lab-share")
    with LabVM(parse_disks(DISKS), throttle=Throttle(bps_total=RATE), image=lab_image, shares=[shared],
               work_parent=tmp_path_factory.mktemp("lab-work")) as machine:
        machine.shared = shared  # type: ignore[attr-defined]
        yield machine


def sh(vm: LabVM, script: str, timeout: float = 120) -> str:
    result = vm.run(script, timeout=timeout)
    assert result.returncode == 0, f"guest script failed ({result.returncode}):\n{script}\n---\n{result.output}"
    return result.output


def lvs(vm: LabVM, vg: str) -> list[dict]:
    out = sh(vm, f"lvs --reportformat json -o lv_name,lv_attr,segtype,stripes,stripe_size,pool_lv,origin,devices {vg}")
    return json.loads(out)["report"][0]["lv"]


def test_boots_and_sees_throttled_disks_by_serial(vm):
    assert vm.boot_seconds is not None
    out = sh(vm, "for d in /dev/disk/by-id/virtio-lab-d*; do echo $d $(readlink -f $d) $(blockdev --getsize64 $d); done")
    lines = [line.split() for line in out.strip().splitlines()]
    assert [(name, dev) for name, dev, _ in lines] == [
        (f"/dev/disk/by-id/virtio-lab-d{i}", vm.guest_device(i)) for i in range(5)]
    assert [int(size) for _, _, size in lines] == [1024 * MiB] * 4 + [512 * MiB]


def test_prepared_filesystem_is_visible_to_blkid(vm):
    out = sh(vm, "blkid -o export /dev/vde")
    assert "TYPE=xfs" in out and "LABEL=lab-d4" in out


def test_modules_load_on_first_use(vm):
    out = sh(vm, """set -e
mkdir -p /mnt/x /mnt/y
mount /dev/vde /mnt/x && echo data > /mnt/x/f && umount /mnt/x
mkfs.ext4 -q -F /dev/vda && mount /dev/vda /mnt/y && umount /mnt/y && wipefs -q -a /dev/vda
truncate -s 64M /tmp/loop.img && dev=$(losetup -f --show /tmp/loop.img) && losetup -d "$dev"
echo "loop=$dev"
cut -d' ' -f1 /proc/modules
""")
    loaded = set(out.split())
    assert {"xfs", "ext4", "loop"} <= loaded, out
    assert any(line.startswith("loop=/dev/loop") for line in out.splitlines())


def test_lvm_linear_and_striped(vm):
    out = sh(vm, """set -e
pvcreate -qq /dev/vda /dev/vdb /dev/vdc /dev/vdd
vgcreate -qq bbt /dev/vda /dev/vdb /dev/vdc /dev/vdd
lvcreate -qq -y -n lin -l 100 bbt /dev/vda
lvcreate -qq -y -n str -i 4 -I 64k -L 800m bbt
""")
    try:
        volumes = {lv["lv_name"]: lv for lv in lvs(vm, "bbt")}
        assert volumes["lin"]["segtype"] == "linear" and volumes["lin"]["devices"] == "/dev/vda(0)"
        assert volumes["str"]["segtype"] == "striped" and volumes["str"]["stripes"] == "4"
        assert volumes["str"]["stripe_size"].startswith("64")
    finally:
        sh(vm, "lvremove -qq -y bbt && vgremove -qq bbt && pvremove -qq /dev/vda /dev/vdb /dev/vdc /dev/vdd")
    assert "bbt" not in sh(vm, "vgs --noheadings -o vg_name; pvs --noheadings")
    assert out == ""


def test_lvm_thin_pool_and_snapshot(vm):
    sh(vm, """set -e
pvcreate -qq /dev/vda /dev/vdb
vgcreate -qq bbt /dev/vda /dev/vdb
lvcreate -qq -y --type thin-pool -L 256m -n pool bbt
lvcreate -qq -y -V 1g -T bbt/pool -n thin
dd if=/dev/zero of=/dev/bbt/thin bs=1M count=8 oflag=direct status=none
lvcreate -qq -y -n origin -L 128m bbt
lvcreate -qq -y -s -L 32m -n snap bbt/origin
dd if=/dev/zero of=/dev/bbt/origin bs=1M count=4 oflag=direct status=none
""")
    try:
        volumes = {lv["lv_name"]: lv for lv in lvs(vm, "bbt")}
        assert volumes["pool"]["segtype"] == "thin-pool"
        assert volumes["thin"]["segtype"] == "thin" and volumes["thin"]["pool_lv"] == "pool"
        assert volumes["snap"]["origin"] == "origin" and volumes["snap"]["lv_attr"].startswith("s")
        assert volumes["origin"]["lv_attr"].startswith("o")
        status = sh(vm, "dmsetup status")
        assert " thin-pool " in status and " snapshot " in status
    finally:
        sh(vm, "lvremove -qq -y bbt && vgremove -qq bbt && pvremove -qq /dev/vda /dev/vdb")
    assert sh(vm, "dmsetup ls").strip() in ("", "No devices found")


def test_mdadm_raid6(vm):
    out = sh(vm, """set -e
mdadm --create /dev/md/bbt --run --quiet --level=6 --raid-devices=4 --assume-clean --chunk=64 \
    /dev/vda /dev/vdb /dev/vdc /dev/vdd
mdadm --detail --export /dev/md/bbt
cat /proc/mdstat
""")
    try:
        assert "MD_LEVEL=raid6" in out and "MD_DEVICES=4" in out
        assert "[UUUU]" in out  # clean from the start: no resync skewing a measurement
        assert "resync" not in out
    finally:
        sh(vm, "mdadm --stop /dev/md/bbt && mdadm --zero-superblock /dev/vda /dev/vdb /dev/vdc /dev/vdd")
    assert "md" not in sh(vm, "cat /proc/mdstat | grep ^md || true")


def test_field_note_a_striped_is_about_four_times_linear(vm):
    out_dir = vm.out_dir / "fna"
    out_dir.mkdir()
    result = vm.run(selftest.field_note_a_script(vm.guest_devices()[:4], str(out_dir), runtime_s=4), timeout=300)
    assert result.returncode == 0, result.output
    figures = selftest.read_results(out_dir)
    # linear pinned to one PV: one throttled disk; striped over four: four of them
    assert 0.8 * RATE < figures.linear.write_bytes_per_s < 1.25 * RATE
    assert 3.0 <= figures.ratio <= 4.5, figures
    # the disks bound, not the emulated CPU
    assert figures.striped.guest_cpu_busy < 0.9, figures


def test_backupbench_itself_runs_in_the_guest_and_writes_to_a_share(vm):
    target = vm.shared / "from-guest.txt"  # type: ignore[attr-defined]
    out = sh(vm, f"python3 -m backupbench --version && python3 -c 'import backupbench; print(backupbench.__file__)' "
                 f"&& echo written > {target}", timeout=300)
    assert f"backupbench, version {backupbench.__version__}" in out
    assert str(Path(backupbench.__file__)) in out  # the very same code, at the same path
    assert target.read_text() == "written\n"


def test_exit_code_streaming_and_fetch(vm, tmp_path):
    seen: list[str] = []
    result = vm.run("echo out; echo err >&2; printf 'kein Umlaut: ä\\n'; exit 7", stream=seen.append)
    assert result.returncode == 7
    assert result.guest_cpu_busy is not None and 0.0 <= result.guest_cpu_busy <= 1.0
    assert result.output == "out\nerr\nkein Umlaut: ä\n" == "".join(seen)
    assert vm.run("test -t 1 && echo tty || echo pipe").output == "pipe\n"
    assert vm.run("test -t 1 && echo tty || echo pipe", tty=True).output == "tty\n"
    host_file = tmp_path / "from-host.txt"  # under the host's /tmp: visible in the guest too
    host_file.write_text("hi\n")
    assert vm.run(["cat", str(host_file)]).output == "hi\n"
    sh(vm, "mkdir -p /tmp/res && echo 42 > /tmp/res/answer")
    fetched = vm.fetch("/tmp/res", tmp_path)
    assert (fetched / "answer").read_text() == "42\n"
    # the guest's root is the host's, read-only underneath: writes stay in the VM
    sh(vm, "echo guest > /etc/backupbench-lab-probe")
    assert not Path("/etc/backupbench-lab-probe").exists()


def test_refuses_when_images_do_not_fit(tmp_path):
    with pytest.raises(RefusedError, match="need"):
        with LabVM(parse_disks("2x1000TiB"), work_parent=tmp_path):
            pass
    assert list(tmp_path.iterdir()) == []


def test_qemu_missing_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissingError, match="qemu-system-x86_64") as info:
        with LabVM(parse_disks("1x1GiB"), work_parent=tmp_path):
            pass
    assert "apt-get install qemu-system-x86" in (info.value.fix or "")


def test_kernel_download_failure_names_the_package(tmp_path):
    with pytest.raises(kernel.AptError) as info:
        kernel.download([kernel.Package("linux-image-backupbench-nonexistent", "0.0")], tmp_path)
    assert "linux-image-backupbench-nonexistent" in info.value.message
    assert "E:" in info.value.message or "Unable" in info.value.message


CLI = """
import sys
from backupbench.cli.app import app, main
from backupbench.cli.lab_cmd import lab_command
if "lab" not in app.commands:
    app.add_command(lab_command)
sys.exit(main(sys.argv[1:]))
"""


def _cli(args: list[str], tmp_path: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, "lab", *args, "--work-dir", str(tmp_path / "work")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_cli_command_exit_code_and_cleanup(lab_image, tmp_path):
    done = _cli(["--command", "lvm version | head -1; exit 3", "--disks", "2x1GiB", "--disk-iops", "100"], tmp_path)
    stdout, stderr = done.communicate(timeout=300)
    assert done.returncode == 3, stderr
    assert "LVM version" in stdout
    assert "VM ready" in stderr and "disk images removed" in stderr
    assert list((tmp_path / "work").iterdir()) == []


def test_cli_ctrl_c_kills_the_vm_and_removes_the_images(lab_image, tmp_path):
    proc = _cli(["--command", "echo started; sleep 300"], tmp_path)
    assert proc.stdout is not None
    deadline = time.monotonic() + 240
    line = ""
    while time.monotonic() < deadline and "started" not in line:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
    assert "started" in line, proc.stderr.read() if proc.stderr else ""
    work = tmp_path / "work"
    assert len(list(work.iterdir())) == 1  # the run folder with the images, while it runs
    qemu_pids = _qemu_pids(work)
    assert qemu_pids
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert list(work.iterdir()) == []
    for pid in qemu_pids:
        assert not running(pid)


def _qemu_pids(work: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if cmdline.startswith("qemu-system-x86_64") and str(work) in cmdline:
                pids.append(int(entry.name))
    return pids


def test_qemu_failing_to_start_is_reported_and_cleaned_up(lab_image, tmp_path):
    broken = LabImage(tmp_path, tmp_path / "no-such-vmlinux", lab_image.initramfs, lab_image.kernel_release, ())
    work = tmp_path / "work"
    with pytest.raises(LabError, match="stopped before it was ready: .*no-such-vmlinux"):
        with LabVM(parse_disks("1x1GiB"), image=broken, work_parent=work):
            pass
    assert list(work.iterdir()) == []


def test_cli_timeout_stops_the_vm(lab_image, tmp_path):
    done = _cli(["--command", "echo begun; sleep 120", "--disks", "1x1GiB", "--timeout", "3s"], tmp_path)
    stdout, stderr = done.communicate(timeout=300)
    assert done.returncode == 1, stderr
    assert "begun" in stdout
    assert "did not finish the command within 3 s" in stderr
    assert list((tmp_path / "work").iterdir()) == []
