#!/usr/bin/env bash
# Installs backupbench from this offline bundle (made by scripts/make-dist.sh, where this file
# is install.sh) on a server that reaches no package index:
#   ./install.sh [--prefix DIR] [--python PYTHON]
# --prefix  the venv to create or update (default /opt/backupbench); the command is then
#           DIR/bin/backupbench
# --python  the interpreter; by default the newest python3.X (3.10 or newer) on PATH that the
#           bundle has wheels for (see PYTHONS), e.g. python3.11 beside RHEL 9's python3 3.9
# pip is run with --no-index: everything comes from wheels/ here, nothing from a network.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

prefix=/opt/backupbench
python=
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    *) echo "usage: $0 [--prefix DIR] [--python PYTHON]" >&2; exit 2 ;;
  esac
done

# A bundle damaged on its way to an air-gapped host fails here, not halfway through pip.
(cd "$here" && sha256sum --check --quiet SHA256SUMS)

# version_of PYTHON: "3.11" for a Python 3.11, nothing when it does not run.
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true; }

if [ -z "$python" ]; then
  for name in python3.14 python3.13 python3.12 python3.11 python3.10 python3; do
    command -v "$name" >/dev/null 2>&1 || continue
    if grep -qxF "$(version_of "$name")" "$here/PYTHONS"; then
      python=$(command -v "$name")
      break
    fi
  done
  if [ -z "$python" ]; then
    echo "no Python this bundle has wheels for ($(tr '\n' ' ' < "$here/PYTHONS")) is on PATH:" \
      "install one (RHEL 9: dnf install python3.11) or give --python" >&2
    exit 1
  fi
elif ! grep -qxF "$(version_of "$python")" "$here/PYTHONS"; then
  echo "$python is Python $(version_of "$python"); this bundle has wheels for: $(tr '\n' ' ' < "$here/PYTHONS")" >&2
  exit 1
fi

if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "$python cannot make a venv: install its venv package (Debian/Ubuntu: python3-venv," \
    "or python3.X-venv for python3.X) from your local mirror" >&2
  exit 1
fi
echo "installing backupbench into $prefix with $python ($(version_of "$python"))"
"$python" -m venv "$prefix"
version=$(ls "$here"/wheels/backupbench-*.whl | head -n1 | xargs basename | cut -d- -f2)
# The constraints hold pip to what make-dist.sh resolved for this Python: wheels/ also holds
# other Pythons' (newer) versions of the same packages.
install=("$prefix/bin/python" -m pip install --no-index --find-links "$here/wheels"
         --constraint "$here/requirements-$(version_of "$python").txt" "backupbench==$version")
echo "+ ${install[*]}"
"${install[@]}"

# The static binaries go where backupbench looks for the tools the project builds (process.py's
# PROJECT_TOOLS); the venv's bin/ gets links, for a shell that activated the venv.
tools=$("$prefix/bin/python" -c 'from backupbench import process; print(process.PROJECT_TOOLS)')
mkdir -p "$tools"
for binary in "$here"/bin/*; do
  [ -e "$binary" ] || continue
  install -m "$([ -x "$binary" ] && echo 755 || echo 644)" "$binary" "$tools/"
  if [ -x "$binary" ]; then ln -sf "$tools/$(basename "$binary")" "$prefix/bin/"; fi
done
echo "installed: $prefix/bin/backupbench (tools in $tools); put it on PATH with" \
  "ln -s $prefix/bin/backupbench /usr/local/bin/"
