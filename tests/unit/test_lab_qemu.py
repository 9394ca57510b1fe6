"""Pure tests of the QEMU command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from backupbench.lab.disks import Throttle
from backupbench.lab.qemu import Disk, Share, VMConfig, drive_options, escape, qemu_argv
from backupbench.units import GiB, MiB


def _config(**overrides) -> VMConfig:
    values = dict(
        vmlinux=Path("/cache/vmlinux"), initramfs=Path("/cache/initramfs.cpio"), console_log=Path("/w/console.log"),
        agent_pipe=Path("/w/agent"), memory=GiB, cpus=2,
        disks=tuple(Disk(Path(f"/w/d{i}.img"), f"lab-d{i}") for i in range(4)),
        throttle=Throttle(bps_total=52428800),
        shares=(Share("lab-ctl", Path("/w/ctl")), Share("lab-s0", Path("/results"))),
    )
    values.update(overrides)
    return VMConfig(**values)


def _option_after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_tcg_not_kvm_and_memory():
    argv = qemu_argv(_config())
    assert argv[0] == "qemu-system-x86_64"
    assert _option_after(argv, "-accel") == ["tcg,thread=multi"]
    assert _option_after(argv, "-cpu") == ["max"]
    assert _option_after(argv, "-m") == ["1024M"]
    assert _option_after(argv, "-smp") == ["2"]
    assert "-enable-kvm" not in argv and "kvm" not in " ".join(argv)
    assert "-no-reboot" in argv


def test_pvh_kernel_and_arguments():
    argv = qemu_argv(_config(extra_kernel_args=("debug",)))
    assert _option_after(argv, "-kernel") == ["/cache/vmlinux"]
    assert _option_after(argv, "-initrd") == ["/cache/initramfs.cpio"]
    append = _option_after(argv, "-append")[0].split()
    assert {"console=ttyS0", "panic=-1", "pci=noacpi", "cryptomgr.notests"} <= set(append)
    assert append[-1] == "debug"


def test_each_disk_throttled_in_exact_bytes_per_second():
    argv = qemu_argv(_config())
    drives = _option_after(argv, "-drive")
    assert drives[0] == ("if=none,id=d0,file=/w/d0.img,format=raw,cache=none,aio=native,"
                         "throttling.bps-total=52428800")
    assert len(drives) == 4
    assert _option_after(argv, "-device") == [f"virtio-blk-pci,drive=d{i},serial=lab-d{i}" for i in range(4)]


def test_read_write_and_iops_limits():
    throttle = Throttle(bps_read=100 * MiB, bps_write=50_000_000, iops_total=400)
    option = drive_options(1, Disk(Path("/w/d1.img"), "lab-d1"), throttle)
    assert option.endswith("throttling.bps-read=104857600,throttling.bps-write=50000000,throttling.iops-total=400")


def test_unthrottled_and_no_direct_io():
    option = drive_options(0, Disk(Path("/w/d0.img"), "lab-d0"), Throttle(), direct_io=False)
    assert option == "if=none,id=d0,file=/w/d0.img,format=raw,cache=writeback,aio=threads"


def test_shares_host_root_read_only_and_results_writable():
    virtfs = _option_after(qemu_argv(_config()), "-virtfs")
    assert virtfs[0] == "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    assert virtfs[1] == "local,path=/w/ctl,mount_tag=lab-ctl,security_model=none,multidevs=remap"
    assert virtfs[2] == "local,path=/results,mount_tag=lab-s0,security_model=none,multidevs=remap"


def test_commas_in_paths_are_escaped():
    assert escape("/a,b/c") == "/a,,b/c"
    drive = drive_options(0, Disk(Path("/x,y/d0.img"), "lab-d0"), Throttle())
    assert "file=/x,,y/d0.img," in drive


def test_consoles():
    argv = qemu_argv(_config())
    assert _option_after(argv, "-chardev") == ["file,id=console,path=/w/console.log", "pipe,id=agent,path=/w/agent"]
    assert _option_after(argv, "-serial") == ["chardev:console", "chardev:agent"]


@pytest.mark.parametrize("memory", [100 * MiB, GiB + 1])
def test_memory_checked(memory):
    with pytest.raises(ValueError):
        qemu_argv(_config(memory=memory))


def test_a_qemu_that_ends_without_a_word_is_described_by_its_exit_status():
    from backupbench.lab.qemu import describe_exit

    assert describe_exit(None) == "" and describe_exit(0) == ""
    assert describe_exit(-11) == " (QEMU was ended by SIGSEGV)"
    assert describe_exit(-9) == " (QEMU was ended by SIGKILL)"
    assert describe_exit(1) == " (QEMU exit code 1)"
