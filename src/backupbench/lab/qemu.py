"""The QEMU command line for a lab VM, as a pure function of its configuration (and what
QEMU's exit status says when it stops early: a crash of QEMU itself leaves no message).

Choices, each measured on the development machines (see shared/docs/lab-notes.md):
- TCG, not KVM: /dev/kvm there is PVM, Debian's kernel crawls under it and `-cpu host` dies.
  `-accel tcg,thread=multi -cpu max`, one host thread per vCPU.
- The ELF vmlinux through PVH (`-kernel vmlinux`), no bootloader; SeaBIOS only hands over.
- Kernel arguments that cut the boot (QEMU start -> agent ready) from ~8 s to ~3 s under TCG
  on an idle host: `pci=noacpi` (evaluating the ACPI interrupt links cost ~0.5 s per PCI
  device; `acpi=off` would be as fast but leaves the guest with one CPU),
  `cryptomgr.notests` (~1 s of self-tests), `initcall_blacklist=` for the initcalls that
  still cost 0.1-0.4 s each (the KDF self-test, kprobe tracing, TCP cubic, encrypted keys),
  `ipv6.disable=1`, `rodata=off` (no write-protection pass and W+X scan; nothing in a
  throwaway guest needs it), `mitigations=off`, `tsc=reliable no_timer_check`.
  `panic=-1` with `-no-reboot` turns a guest panic into QEMU exiting instead of a hang.
  Tried and not kept: `maxcpus=1` with the second vCPU onlined after boot (slower), qboot
  instead of SeaBIOS and q35 instead of pc (no gain), a leaner -cpu model (no gain once
  measured on an idle host).
- Disks: virtio-blk-pci with a serial (`lab-dN`, so the guest finds them by id), raw sparse
  files, `cache=none,aio=native` (O_DIRECT: the host's page cache must not serve the guest),
  throttled in QEMU's block layer in bytes/s. With the seeking disk model (lab/nbd.py) a disk
  is an NBD client of its nbdkit's unix socket instead; no cache or aio option then (they are
  the file driver's), the model sets the pace and QEMU's throttle, if given, still applies.
- The host's root read-only over virtio-9p (`hostroot`), a writable control share
  (`lab-ctl`) and any extra shares; `multidevs=remap` because / spans several filesystems.
- ttyS0 -> console log file; ttyS1 -> the agent pipe (commands in, output and exit codes out).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

from backupbench.lab.disks import Throttle
from backupbench.paths import Syntax, for_program
from backupbench.units import MiB

QEMU = "qemu-system-x86_64"
KERNEL_ARGS = (
    "console=ttyS0", "quiet", "loglevel=3", "panic=-1",
    # what costs TCG time at boot and the lab does not need (measured, see the module doc)
    "pci=noacpi", "cryptomgr.notests", "mitigations=off", "tsc=reliable", "no_timer_check", "ipv6.disable=1",
    "rodata=off",
    "initcall_blacklist=crypto_kdf108_init,init_kprobe_trace,cubictcp_register,init_encrypted",
)


@dataclass(frozen=True)
class Share:
    tag: str
    host_path: Path
    readonly: bool = False


@dataclass(frozen=True)
class Disk:
    path: Path
    serial: str
    socket: Path | None = None  # served by nbdkit (the seeking disk model) on this unix socket


@dataclass(frozen=True)
class VMConfig:
    vmlinux: Path
    initramfs: Path
    console_log: Path
    agent_pipe: Path  # QEMU opens AGENT.in (to the guest) and AGENT.out (from the guest)
    memory: int  # bytes, whole MiB
    cpus: int = 2
    disks: tuple[Disk, ...] = ()
    throttle: Throttle = field(default_factory=Throttle)
    shares: tuple[Share, ...] = ()
    direct_io: bool = True  # False where the images' filesystem refuses O_DIRECT (tmpfs)
    extra_kernel_args: tuple[str, ...] = ()


def escape(value: str | Path) -> str:
    """A path inside a QEMU option list (commas doubled; see paths.py)."""
    return for_program(value, Syntax.QEMU_OPTION)


def drive_options(index: int, disk: Disk, throttle: Throttle, direct_io: bool = True) -> str:
    if disk.socket is not None:
        source = f"file.driver=nbd,file.server.type=unix,file.server.path={escape(disk.socket)},format=raw"
        return ",".join([f"if=none,id=d{index},{source}", *throttle.options()])
    cache = "cache=none,aio=native" if direct_io else "cache=writeback,aio=threads"
    return ",".join([f"if=none,id=d{index},file={escape(disk.path)},format=raw,{cache}", *throttle.options()])


def qemu_argv(config: VMConfig) -> list[str]:
    if config.memory % MiB or config.memory < 256 * MiB:
        raise ValueError(f"guest memory must be whole MiB and at least 256 MiB, not {config.memory}")
    if config.cpus < 1:
        raise ValueError("the guest needs at least one CPU")
    argv = [
        QEMU, "-name", "backupbench-lab",
        "-machine", "pc", "-accel", "tcg,thread=multi", "-cpu", "max",
        "-smp", str(config.cpus), "-m", f"{config.memory // MiB}M",
        "-nodefaults", "-no-user-config", "-display", "none", "-vga", "none", "-nic", "none", "-no-reboot",
        "-kernel", for_program(config.vmlinux), "-initrd", for_program(config.initramfs),
        "-append", " ".join((*KERNEL_ARGS, *config.extra_kernel_args)),
        "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
    ]
    for share in config.shares:
        options = f"local,path={escape(share.host_path)},mount_tag={share.tag},security_model=none,multidevs=remap"
        argv += ["-virtfs", options + (",readonly=on" if share.readonly else "")]
    for index, disk in enumerate(config.disks):
        argv += ["-drive", drive_options(index, disk, config.throttle, config.direct_io),
                 "-device", f"virtio-blk-pci,drive=d{index},serial={disk.serial}"]
    argv += [
        "-chardev", f"file,id=console,path={escape(config.console_log)}", "-serial", "chardev:console",
        "-chardev", f"pipe,id=agent,path={escape(config.agent_pipe)}", "-serial", "chardev:agent",
    ]
    return argv


def describe_exit(code: int | None) -> str:
    """How QEMU ended, added to what it and the guest said: a signal (a crash of QEMU itself
    leaves no error message) or an exit code other than 0; nothing for 0 or still running."""
    if code is None or code == 0:
        return ""
    if code < 0:
        try:
            return f" (QEMU was ended by {signal.Signals(-code).name})"
        except ValueError:
            return f" (QEMU was ended by signal {-code})"
    return f" (QEMU exit code {code})"
