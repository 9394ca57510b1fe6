#!/usr/bin/env bash
# ZFS for the lab VM: the host's zfsutils-linux (the guest runs the host's zpool and zfs) and
# the kernel module built with DKMS for the guest's kernel, cached in .tools/zfs.
# The host's own kernel cannot load modules here; backupbench keeps refusing ZFS on the host.
#
# Debian ships ZFS in `contrib`; bookworm-backports has 2.3 (dRAID, O_DIRECT that bypasses the
# ARC). This adds those two components to apt's sources in their own file,
# /etc/apt/sources.list.d/backupbench-zfs.sources, installs dkms and zfsutils-linux from
# bookworm-backports, and builds the module (`backupbench lab --build-zfs`: ~4 minutes the first
# time on 2 cores, nothing when it is built for this kernel and version).
# Safe to run again. Needs the venv (scripts/install-deps.sh) and root for apt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

. /etc/os-release
if [ "${VERSION_CODENAME:-}" != bookworm ]; then
  echo "ZFS for the lab is set up on Debian 12 (bookworm) only; this is ${PRETTY_NAME:-unknown}: skipped" >&2
  exit 0
fi
SOURCES=/etc/apt/sources.list.d/backupbench-zfs.sources
SUITE=bookworm-backports

backports_candidate() {
  apt-cache policy zfsutils-linux 2>/dev/null | grep -q "$SUITE/contrib"
}

needed=()
command -v dkms >/dev/null 2>&1 || needed+=(dkms)
command -v gcc-12 >/dev/null 2>&1 || needed+=(gcc-12)
command -v make >/dev/null 2>&1 || needed+=(make)
zfs_installed=$(dpkg-query -W -f '${Status}|${Version}' zfsutils-linux 2>/dev/null || true)
case "$zfs_installed" in
  *" installed|"*~bpo12*) ;;
  *) needed+=(zfsutils-linux) ;;
esac

if [ ${#needed[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing for ZFS in the lab: ${needed[*]} (run scripts/install-zfs.sh as root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! backports_candidate; then
    echo "adding Debian's contrib and $SUITE to apt's sources ($SOURCES)"
    cat > "$SOURCES" <<EOF
# Added by backupbench's scripts/install-zfs.sh: ZFS (contrib) from $SUITE, for the lab VM.
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates $SUITE
Components: contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian
Suites: $SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -qq
  fi
  echo "installing Debian packages for ZFS in the lab: ${needed[*]}"
  # Backports are pinned low by apt: name the suite, or bookworm's 2.1 would be chosen.
  apt-get install -y -qq --no-install-recommends -t "$SUITE" "${needed[@]}" >/dev/null
fi

.venv/bin/backupbench lab --build-zfs
