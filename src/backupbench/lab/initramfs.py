"""The guest's initramfs: busybox, the kernel modules, mdadm, lvm.conf, the init script and
its stand-in for udev's device database.

It stays small (a few MB, no libraries): the userspace the guest runs commands with is the
host's own root filesystem, shared read-only over virtio-9p and made writable in the guest by
an overlay with a tmpfs on top (see `backupbench.lab` for why). What the host root lacks on
purpose lives here: mdadm (downloaded, never installed on the host) and an LVM configuration
that works without udev.

The init script is PID 1. It loads the modules, mounts the control share (`lab-ctl`), the
host root and the overlay, mounts the guest's own /proc, /sys, /dev and /run over it (a fresh
/run: the host's may say that udev runs; /tmp stays the host's, writable through the overlay,
so that recipes and folders there are visible),
mounts the extra shares at the same paths they have on the host, and then serves the agent
port (the second serial port, ttyS1): it answers `RUN <script>` by running the script as root
in the chroot with stdout and stderr through a pipe onto the port (`RUNTTY`: on the port
itself, a terminal, for live progress bars), followed by an end marker carrying the exit
code and the guest's /proc/stat `cpu` line from before and after (read by the shell itself, no
process started); `EXIT` syncs and powers the guest off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from backupbench.lab import cpio

# What the agent writes on ttyS1; \x1e (record separator) cannot come from a sane command
# by accident, and the per-boot nonce makes a collision with binary output harmless.
MARK = "\x1e"
READY = "LABREADY"
DONE = "LABDONE"
FAIL = "LABFAIL"

MSIZE = 512 * 1024  # 9p message size: fewer round trips for reads of Python files and libraries

LVM_CONF = """\
# backupbench lab guest: no udev in the guest, LVM manages /dev itself
devices {
    obtain_device_list_from_udev = 0
    external_device_info_source = "none"
    use_devicesfile = 0
}
activation {
    udev_sync = 0
    udev_rules = 0
    monitoring = 0
}
"""

# Run by busybox `uevent` for every kernel event. The guest has no udevd, so libudev finds no
# database entry for a block device. zpool waits through libudev for the partitions it writes
# until their DEVLINKS property is set (Debian's libzfs), and gives up after 30 s ("failed to
# detect device partitions"). So each block device gets what udevd would leave: an entry in
# /run/udev/data naming its links, and the links: /dev/block/MAJ:MIN, and for a partition of a
# disk with a serial /dev/disk/by-id/virtio-SERIAL-partN (zpool names a by-id disk's data
# partition so).
UEVENT_STUB = r"""#!/bin/sh
[ "$SUBSYSTEM" = block ] && [ -n "$MAJOR" ] && [ -n "$DEVNAME" ] || exit 0
R=/newroot
id="$MAJOR:$MINOR"
byid=
if [ "$DEVTYPE" = partition ] && [ -n "$PARTN" ]; then
    sysdir=$(readlink -f "/sys/class/block/$DEVNAME")
    parent=${sysdir%/*}
    [ -r "$parent/serial" ] && byid="disk/by-id/virtio-$(cat "$parent/serial")-part$PARTN"
fi
case "$ACTION" in
    add|change)
        ln -sfn "../$DEVNAME" "$R/dev/block/$id"
        links="S:block/$id"
        if [ -n "$byid" ]; then
            ln -sfn "../../$DEVNAME" "$R/dev/$byid"
            links="$links
S:$byid"
        fi
        echo "$links" > "$R/run/udev/data/b$id"
        ;;
    remove)
        rm -f "$R/run/udev/data/b$id" "$R/dev/block/$id"
        for link in "$R"/dev/disk/by-id/*-part*; do
            [ "$(readlink "$link")" = "../../$DEVNAME" ] && rm -f "$link"
        done
        ;;
esac
exit 0
"""

INIT = r"""#!/bin/sh
# backupbench lab guest init (PID 1); see backupbench/lab/initramfs.py
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
set -o pipefail
R=/newroot
MSIZE=@MSIZE@
P9="trans=virtio,version=9p2000.L,msize=$MSIZE"
AGENT=
stage() { read -r up _ </proc/uptime; echo "lab-init: $up $*" >/dev/console; }
fail() {
    echo "lab-init: FAILED: $*" >/dev/console
    [ -n "$AGENT" ] && printf '\036@FAIL@ %s\n' "$*" >&3
    sync
    reboot -f
}
mount -t proc proc /proc
stage "init started"
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec 3<>/dev/ttyS1 || fail "no agent port /dev/ttyS1"
stty -F /dev/ttyS1 raw -echo || fail "cannot set the agent port raw"
AGENT=1
# Only what booting needs; the rest is loaded on first use (see modules.py).
while read -r module; do insmod "$module" || fail "cannot load $module"; done < /etc/lab/modules
mkdir -p /ctl /lower /rw "$R"
stage "modules loaded"
# Servers in the guest listen on 127.0.0.1 (MinIO with several drives refuses an address
# that is not one of this machine's): bring loopback up, it comes up with 127.0.0.1/8.
ip link set lo up || fail "cannot bring up the loopback interface"
mount -t 9p -o "$P9" lab-ctl /ctl || fail "cannot mount the control share"
. /ctl/config
mount -t 9p -o "$P9,ro,cache=loose" hostroot /lower || fail "cannot mount the host root"
mount -t tmpfs -o mode=0755 lab-rw /rw || fail "cannot mount the writable layer"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay "$R" || fail "cannot mount the overlay root"
mount -t proc proc "$R/proc" && mount -t sysfs sysfs "$R/sys" && mount -t devtmpfs devtmpfs "$R/dev" || fail "cannot mount /proc /sys /dev"
mkdir -p "$R/dev/pts" "$R/dev/shm" "$R/dev/disk/by-id"
mount -t devpts devpts "$R/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
mount -t tmpfs -o mode=0755 tmpfs "$R/run" || fail "cannot mount /run"
mkdir -p "$R/run/lock" "$R/run/lvm" "$R/run/mdadm"
mkdir -p "$R$LAB_CTL_PATH" && mount -o bind /ctl "$R$LAB_CTL_PATH" || fail "cannot mount the control share at $LAB_CTL_PATH"
while read -r tag mode path; do
    mkdir -p "$R$path" && mount -t 9p -o "$P9,$mode" "$tag" "$R$path" || fail "cannot mount share $tag at $path"
done < /ctl/shares
# The chroot's modprobe (LVM runs it) must see the guest kernel's modules, not the host's.
mkdir -p "$R/lib/modules" && mount -o bind /lib/modules "$R/lib/modules" || fail "cannot mount the modules"
mkdir -p "$R/etc/lvm" "$R/usr/local/sbin"
cp /etc/lab/lvm.conf "$R/etc/lvm/lvm.conf"
rm -f "$R/etc/lvm/lvmlocal.conf"
cp /lab/bin/* "$R/usr/local/sbin/"
# Nodes whose first open loads their module (what kmod-static-nodes does on a full system):
# /dev/mapper/control -> dm-mod, /dev/loop-control -> loop, /dev/btrfs-control -> btrfs.
while read -r module node spec; do
    case "$module" in ''|\#*) continue ;; esac
    numbers=${spec#?}
    [ "$node" != "${node%/*}" ] && mkdir -p "$R/dev/${node%/*}"
    mknod "$R/dev/$node" "${spec%"$numbers"}" "${numbers%%:*}" "${numbers#*:}" 2>/dev/null
done < "/lib/modules/$(uname -r)/modules.devname"
stage "root mounted"
mkdir -p "$R/run/udev/data" "$R/dev/block"
uevent /etc/lab/uevent &
for dev in /sys/class/block/*; do
    IFS=: read -r major minor < "$dev/dev" || continue
    ACTION=add SUBSYSTEM=block MAJOR=$major MINOR=$minor DEVNAME=${dev##*/} /etc/lab/uevent
done
for dev in /sys/block/vd*; do
    [ -r "$dev/serial" ] && ln -sf "../../${dev##*/}" "$R/dev/disk/by-id/virtio-$(cat "$dev/serial")"
done
stage "ready"
printf '\036@READY@ %s\n' "$LAB_NONCE" >&3
while read -r verb arg <&3; do
    case "$verb" in
        RUN|RUNTTY)
            read -r cpu_before </proc/stat
            if [ "$verb" = RUNTTY ]; then
                env -i /usr/sbin/chroot "$R" /bin/sh "$arg" </dev/null >&3 2>&3 3>&-
            else
                # a pipe, as for any command whose output is captured (no progress bars)
                env -i /usr/sbin/chroot "$R" /bin/sh "$arg" </dev/null 2>&1 3>&- | cat >&3
            fi
            rc=$?
            read -r cpu_after </proc/stat
            printf '\036@DONE@ %s %s %s|%s\n' "$LAB_NONCE" "$rc" "$cpu_before" "$cpu_after" >&3
            ;;
        EXIT)
            break
            ;;
    esac
done
sync
reboot -f
"""


def init_script() -> str:
    return (INIT.replace("@MSIZE@", str(MSIZE)).replace("@FAIL@", FAIL)
            .replace("@READY@", READY).replace("@DONE@", DONE))


@dataclass
class InitramfsContents:
    busybox: bytes
    applets: list[str]  # paths like "bin/sh", from `busybox --list-full`
    kernel_release: str
    module_tree: list[tuple[str, bytes]]  # every file of lib/modules/KVER (modules, modules.dep, ...)
    boot_modules: list[str]  # paths relative to lib/modules/KVER, insmod'ed by init in this order
    binaries: dict[str, bytes] = field(default_factory=dict)  # name -> content, for /lab/bin


def entries(contents: InitramfsContents) -> list[cpio.Entry]:
    """Archive members, parents first. Pure: the same contents give the same archive."""
    members = [cpio.Entry.directory(d) for d in ("dev", "proc", "sys", "tmp", "run", "newroot")]
    members.append(cpio.Entry.file("bin/busybox", contents.busybox, 0o755))
    for applet in contents.applets:
        applet = applet.strip("/")
        # A busybox -> busybox link makes init fail with -40 (ELOOP).
        if applet and applet != "bin/busybox":
            members.append(cpio.Entry.symlink(applet, "/bin/busybox"))
    members.append(cpio.Entry.file("init", init_script().encode(), 0o755))
    members.append(cpio.Entry.file("etc/lab/lvm.conf", LVM_CONF.encode()))
    members.append(cpio.Entry.file("etc/lab/uevent", UEVENT_STUB.encode(), 0o755))
    tree = f"lib/modules/{contents.kernel_release}"
    known = {path for path, _ in contents.module_tree}
    missing = [path for path in contents.boot_modules if path not in known]
    if missing:
        raise ValueError(f"boot modules not in the module tree: {missing}")
    members.append(cpio.Entry.file("etc/lab/modules", "".join(f"/{tree}/{path}\n" for path in contents.boot_modules).encode()))
    for path, data in contents.module_tree:
        members.append(cpio.Entry.file(f"{tree}/{path}", data))
    for name, data in sorted(contents.binaries.items()):
        members.append(cpio.Entry.file(f"lab/bin/{name}", data, 0o755))
    return cpio.with_parents(members)


def build(contents: InitramfsContents, dest: Path) -> int:
    """Write the archive to `dest`; its size in bytes."""
    data = cpio.archive(entries(contents))
    dest.write_bytes(data)
    return len(data)


def is_static_elf(data: bytes) -> bool:
    """True for an ELF executable without a program interpreter (PT_INTERP)."""
    import struct

    if not data.startswith(b"\x7fELF") or data[4] != 2:  # 64-bit only
        return False
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for index in range(phnum):
        p_type, = struct.unpack_from("<I", data, phoff + index * phentsize)
        if p_type == 3:  # PT_INTERP
            return False
    return True
