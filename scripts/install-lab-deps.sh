#!/usr/bin/env bash
# Installs the host packages that `backupbench lab` needs, only those that are missing.
# Safe to run again; when nothing is missing it installs nothing (no apt-get update either).
# The guest runs the host's own tools (shared read-only into the VM), so fio, lvm2, xfsprogs,
# thin-provisioning-tools (LVM's thin_check), e2fsprogs and btrfs-progs are needed here even
# though the host kernel cannot use LVM; qemu-system-x86 runs the VM, busybox-static is its
# init, kmod (depmod, modprobe) indexes the guest kernel's modules, cpio is for inspecting
# the initramfs. The guest kernel and mdadm are NOT installed here: the lab downloads
# them with `apt-get download` and unpacks them into its cache (installing them on the host
# would pull in udev and upgrade systemd).
# The seeking lab disks (`--disk-model hdd`): nbdkit serves each disk, under the project's own C
# filter (native/diskmodel), which gcc builds against nbdkit-plugin-dev's header into
# .tools/lib (scripts/build-diskmodel.sh, run at the end, rebuilds it only when its source changed).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian package -> a command it installs
declare -A NEEDED=(
  [qemu-system-x86]=qemu-system-x86_64
  [busybox-static]=busybox
  [lvm2]=lvm
  [xfsprogs]=mkfs.xfs
  [thin-provisioning-tools]=thin_check
  [kmod]=depmod
  [cpio]=cpio
  [fio]=fio
  [e2fsprogs]=mkfs.ext4
  [btrfs-progs]=mkfs.btrfs
  [util-linux]=blkid
  [nbdkit]=nbdkit
  [gcc]=gcc
)
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
missing=()
for pkg in "${!NEEDED[@]}"; do
  command -v "${NEEDED[$pkg]}" >/dev/null 2>&1 || missing+=("$pkg")
done
# busybox-static must really be the static one: the guest's init is that binary.
if [ -e /bin/busybox ] && ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
  missing+=(busybox-static)
fi
# Headers, not commands: the filter's (nbdkit-plugin-dev) and the C library's (libc6-dev, which
# gcc only recommends).
[ -f /usr/include/nbdkit-filter.h ] || missing+=(nbdkit-plugin-dev)
[ -f /usr/include/stdio.h ] || missing+=(libc6-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages for the lab: ${missing[*]} (run as root, or: sudo apt-get install --no-install-recommends ${missing[*]})" >&2
    exit 1
  fi
  echo "installing Debian packages for the lab: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
bash scripts/build-diskmodel.sh
