"""The lab: a throwaway QEMU VM whose virtual disks are throttled, for LVM, md RAID and ZFS
experiments on machines whose kernel has none of them (no device-mapper, no md, no modules).

    from backupbench.lab import LabVM, Throttle, parse_disks
    with LabVM(parse_disks("4x4GiB"), throttle=Throttle(bps_total=50 * MiB)) as vm:
        vm.run(["lvs"]).check()

Modules: `image` (build and cache kernel + initramfs), `kernel` (apt download, vmlinux from
bzImage), `modules` (which modules, in which order), `initramfs` + `cpio` (the guest's init
and its archive), `disks` (--disks specs, throttles, sparse images), `qemu` (the command line),
`agent` (what comes back from the guest), `vm` (LabVM), `options` (the CLI's options, defined
once), `selftest` (field note A inside the VM, for the tests and the bench), `zfs_module`
(spl.ko and zfs.ko built with DKMS for the guest's kernel, once, cached; the image carries
them when they exist), `diskmodel` and `nbd` (disks that seek: each served by nbdkit under
the model's C filter, native/diskmodel; `--disk-model hdd`).

Design: the guest runs the host's own userspace, shared read-only over virtio-9p
------------------------------------------------------------------------------------
Two ways were open to give the guest Python + backupbench + pydantic/click/rich, fio, lvm2,
mdadm, mkfs.*: (a) copy the interpreter, site-packages, binaries and their ldd libraries
into the initramfs, or (b) keep the initramfs small and share the host's `/` read-only into
the guest (`-virtfs local,path=/,readonly=on`). The lab uses (b):

- The guest runs *exactly* the code and tools of the host, at the same paths: the lab's own
  interpreter (`sys.executable`, its folder first in PATH, its import path in PYTHONPATH), so
  `python3 -m backupbench apply ...` in the guest is the same program as on a real server, and
  there is no list of files to keep in sync (fio alone would drag ~75 MB of libraries).
- The guest's root is an overlay: the 9p host root as the read-only lower layer, a tmpfs on
  top. So the guest can write anywhere (/etc/lvm/lvm.conf without udev, /etc/lvm/backup,
  mount points under /mnt), nothing reaches the host, and `LVM_SYSTEM_DIR` tricks are not
  needed. The guest's own /proc, /sys, /dev and a fresh /run are mounted over it.
- What the host must not have installed comes from the image: Debian's kernel modules and
  mdadm (from `apt-get download`, never installed on the host).
- Results come home through writable 9p shares mounted at the same path as on the host
  (`--results DIR`), so the guest's backupbench writes straight into the host's store
  (SQLite over 9p works: journal mode, no mmap). Commands and their exit codes travel over
  the second serial port; stdout/stderr stream back live.

Measured on the development machine (2 cores, TCG; figures vary with other load on the
host, which other engineers' test runs share):
- initramfs 18 MB uncompressed (busybox, the closure of 48 modules with their own
  modules.dep, mdadm); building the image from nothing takes 11-15 s, mostly downloading and
  unpacking the 71 MB kernel package; a cached image is found in ~5 ms.
- QEMU start -> first command output (`bench/lab.py`, 5 boots each): median 3.2 s (2.6-6.2)
  and 4.0 s (3.4-4.3) in two sessions; the agent is ready ~0.3 s before that. Getting there
  from ~8 s: kernel arguments (see `qemu`) and loading only the boot modules at boot (all of them
  cost 4.7 s under TCG; the rest load on first use through the kernel's modprobe requests,
  LVM's own `modprobe`, and the static /dev nodes from modules.devname).
- Option (a) was not built: its ~100 MB initramfs would add roughly 1.5-3 s of unpacking to
  every boot at the measured rate for 18 MB, and Python would not run faster: TCG runs it
  about 30x slower (in the guest `import pydantic` costs 3.3 s of CPU against 0.095 s on the
  host, 50 frozen dataclasses 1.9 s against 0.061 s), and 9p reads are not what costs. So the
  CLI imports only the command it runs and pydantic builds a validator on first use:
  `backupbench apply --help` in the guest 14.0-14.8 s of CPU where it took 24.9-31.6 s
  (`run --help` 11.5-14.4 s against 19.8-25.6 s; two rounds in one boot).
- Every program started in the guest costs time of its own (two rounds in one boot): /bin/true
  0.13-0.22 s, lsblk and wipefs 0.2-0.5 s, an LVM command 0.4-1.0 s, fio 0.8-2.2 s (its 64
  libraries), `zpool status` 0.4-1.6 s. So the device checks look at all of a write's devices
  with one lsblk, pvs and wipefs (devices/checks.py): one apply of four LVM and md layouts ran
  126 programs in 70 s before, 95 in 53 s after the lsblk/pvs half of that change.
- Field note A (4 disks at 50 MiB/s, fio 512 KiB sequential direct writes, 4 jobs, 15 s):
  linear 50.0 MiB/s, striped 200.0-200.3 MiB/s, ratio 4.00-4.01; guest CPU 11-16 % / 23-35 %;
  from LabVM() to the VM gone 43-49 s (bench/lab.py). The same experiment as a recipe
  (`backupbench lab examples/field-note-a-linear-vs-striped.toml --disks 4x2GiB`, XFS, 1 GiB
  test file) gave 50.4 vs 201.5 MiB/s (4.00x) in 110 s including an image rebuild.

Security: the guest is root over a read-only view of the host's whole filesystem; nothing in
it can write to the host except the shares named, which is what a lab on the developer's own
machine needs. It has no network.
"""

from backupbench.lab.disks import DiskSpec, Throttle, parse_disks, parse_throttle
from backupbench.lab.image import LabImage, default_cache_root, ensure_image
from backupbench.lab.vm import GuestResult, LabError, LabVM

__all__ = ["DiskSpec", "GuestResult", "LabError", "LabImage", "LabVM", "Throttle", "default_cache_root",
           "ensure_image", "parse_disks", "parse_throttle"]
