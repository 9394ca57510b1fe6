#!/usr/bin/env bash
# Installs what backupbench needs and is missing: system packages, then the project venv.
#   scripts/install-deps.sh          what running needs (`make run`): fio, util-linux, the
#                                    filesystem and LVM tools the layouts call, a Python >= 3.10
#   scripts/install-deps.sh --test   what only the tests need on top (`make test`): sysstat's
#                                    iostat (the monitor is checked against it), a browser and a
#                                    font for the HTML report test, pgrep, sfdisk, losetup
# Safe to run again: it only installs what is not already there.
# Debian 12 and Ubuntu 22.04/24.04 (apt) are the tested path. Rocky/RHEL 9 (dnf) is written
# from those distributions' package names but cannot be tested on this project's Debian
# machines; docs/install.md says what differs there (no btrfs-progs, python3.11 from AppStream).
set -euo pipefail
cd "$(dirname "$0")/.."
# mkfs.*, wipefs, lvcreate live in sbin, which a non-root PATH may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

if command -v apt-get >/dev/null 2>&1; then
  manager=apt
elif command -v dnf >/dev/null 2>&1; then
  manager=dnf
else
  echo "neither apt-get nor dnf found: install the packages docs/install.md lists by hand" >&2
  exit 1
fi
distro=$(. /etc/os-release 2>/dev/null && echo "${ID:-unknown}")

# command -> package providing it, for what `backupbench run` / `apply` call (src/backupbench:
# the fio engine, setpriv --pdeathsig in process.py, the device probes, the layouts' actions).
declare -A RUN_APT=(
  [fio]=fio
  [setpriv]=util-linux [lsblk]=util-linux [findmnt]=util-linux [wipefs]=util-linux [blkid]=util-linux
  [mount]=mount [umount]=mount
  [mkfs.ext4]=e2fsprogs [mkfs.xfs]=xfsprogs [mkfs.btrfs]=btrfs-progs
  [lvcreate]=lvm2
)
# RHEL 9 ships no btrfs-progs (Red Hat dropped btrfs): the btrfs layouts are unavailable there.
declare -A RUN_DNF=(
  [fio]=fio
  [setpriv]=util-linux [lsblk]=util-linux [findmnt]=util-linux [wipefs]=util-linux [blkid]=util-linux
  [mount]=util-linux [umount]=util-linux
  [mkfs.ext4]=e2fsprogs [mkfs.xfs]=xfsprogs
  [lvcreate]=lvm2
)
# Only the tests call these; backupbench's monitor reads /proc itself and never runs iostat.
declare -A TEST_APT=([iostat]=sysstat [pgrep]=procps [sfdisk]=fdisk [losetup]=mount [chromium]=chromium
                     [openssl]=openssl)
declare -A TEST_DNF=([iostat]=sysstat [pgrep]=procps-ng [sfdisk]=util-linux [losetup]=util-linux
                     [chromium]=chromium [openssl]=openssl)
if [ "$distro" = ubuntu ]; then
  # Ubuntu packages Chromium as chromium-browser (a snap behind an apt package).
  unset 'TEST_APT[chromium]'
  command -v chromium >/dev/null 2>&1 || TEST_APT[chromium-browser]=chromium-browser
fi

missing=()
# add_missing NAME_OF_ARRAY: every package of that command->package map whose command is absent.
add_missing() {
  local -n table=$1
  local cmd
  for cmd in "${!table[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("${table[$cmd]}")
  done
}
if [ "$manager" = apt ]; then add_missing RUN_APT; else add_missing RUN_DNF; fi
if [ "$want_test" = 1 ]; then
  if [ "$manager" = apt ]; then add_missing TEST_APT; else add_missing TEST_DNF; fi
  # The HTML report's charts draw text as shapes, but the page's own text needs a font in the browser.
  if [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] && [ ! -e /usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf ]; then
    if [ "$manager" = apt ]; then missing+=(fonts-dejavu-core); else missing+=(dejavu-sans-fonts); fi
  fi
fi

# python_version PYTHON: "3 11" for a Python 3.11, nothing when it is no Python.
python_version() { "$1" -c 'import sys; print(*sys.version_info[:2])' 2>/dev/null || true; }

# The newest Python >= 3.10 on PATH: a versioned name first, because on Rocky/RHEL 9 python3
# is 3.9 while python3.11/python3.12 sit beside it.
find_python() {
  local name major minor
  for name in python3.14 python3.13 python3.12 python3.11 python3.10 python3; do
    command -v "$name" >/dev/null 2>&1 || continue
    read -r major minor <<<"$(python_version "$name")"
    if [ "${major:-0}" -eq 3 ] && [ "${minor:-0}" -ge 10 ]; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

python=$(find_python || true)
if [ -z "$python" ]; then
  if [ "$manager" = dnf ]; then
    missing+=(python3.11 python3.11-pip)  # AppStream's; python3 stays the system's 3.9
  else
    echo "backupbench needs Python 3.10 or newer (python3 here is $(python_version python3 | tr ' ' .));" \
      "Debian 12 and Ubuntu 22.04/24.04 have one" >&2
    exit 1
  fi
elif [ "$manager" = apt ] && ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  # Debian and Ubuntu split venv's ensurepip out of the interpreter's package.
  if [ "$python" = "$(command -v python3)" ]; then missing+=(python3-venv); else missing+=("$(basename "$python")-venv"); fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${missing[*]} (run as root, or: sudo $manager install ${missing[*]})" >&2
    exit 1
  fi
  echo "installing packages: ${missing[*]}"
  if [ "$manager" = apt ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    # strict=0: a package the enabled repositories lack (chromium without EPEL) is skipped, not fatal.
    dnf install -y -q --setopt=strict=0 "${missing[@]}"
    if [ "$want_test" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
      echo "note: chromium comes from EPEL (dnf install epel-release); the HTML report test skips without it" >&2
    fi
  fi
  python=${python:-$(find_python || true)}
fi
if [ -z "$python" ]; then
  echo "still no Python 3.10 or newer after installing ${missing[*]}" >&2
  exit 1
fi

stamp_run=.venv/.installed-run
stamp_test=.venv/.installed-test
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $python ($(python_version "$python" | tr ' ' .))"
  "$python" -m venv .venv
fi
# install_project EXTRAS STAMP: the project (editable) into .venv when pyproject.toml changed since.
install_project() {
  if [ ! -f "$2" ] || [ pyproject.toml -nt "$2" ]; then
    echo "installing Python packages into .venv"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".$1"
    touch "$2"
  fi
}
if [ "$want_test" = 1 ]; then
  install_project "[test]" "$stamp_test"
else
  install_project "" "$stamp_run"
fi
