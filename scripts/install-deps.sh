#!/usr/bin/env bash
# Installs what backupbench needs and is missing: Debian packages, then a project venv.
# Safe to run again: it only installs what is not already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package that provides it
declare -A NEEDED=(
  [fio]=fio
  [iostat]=sysstat
  [losetup]=mount
  [mkfs.ext4]=e2fsprogs
  [mkfs.xfs]=xfsprogs
  [mkfs.btrfs]=btrfs-progs
  [wipefs]=util-linux
  [findmnt]=util-linux
  [sfdisk]=fdisk
  [pvs]=lvm2
  [setpriv]=util-linux
  [chromium]=chromium
  [pgrep]=procps
)
missing=()
for cmd in "${!NEEDED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEEDED[$cmd]}")
done
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# The HTML report's charts draw text as shapes, but the page's own text needs a font in Chromium.
if [ "${1:-}" = "--test" ] && [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
  missing+=(fonts-dejavu-core)
fi
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "backupbench needs Python 3.11 or newer as python3" >&2
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp=.venv/.installed
if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "installing Python packages into .venv"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test]'
  touch "$stamp"
fi
