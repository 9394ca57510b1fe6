#!/usr/bin/env bash
# Builds the offline bundle for servers that reach no package index (`make dist`):
#   dist/backupbench-<version>-offline.tar.gz, unpacking to backupbench-<version>-offline/ with
#     wheels/      backupbench's wheel and every dependency's, for each CPython asked for, on
#                  x86_64 Linux with glibc >= 2.17 .. 2.34 (RHEL 9 has 2.34, Ubuntu 22.04 2.35)
#     bin/         backupbench-s3load, built static (CGO_ENABLED=0): no libc version to match;
#                  with --with-minio also MinIO (~110 MB, so only when asked), static too
#     install.sh   scripts/offline-install.sh: a venv, `pip install --no-index`, the binaries
#     requirements-3.X.txt  the exact versions resolved for each CPython (install.sh holds pip to them)
#     backupbench-cp3X.pex  for each CPython, one file holding backupbench and exactly those
#                  wheels: `python3.X backupbench-cp3X.pex run DIR` with nothing installed
#     PYTHONS      the CPython versions the wheels are for; SHA256SUMS of everything
# The wheels + install.sh are the main path (an ordinary venv, pip alone). A pex cannot import
# the compiled extensions (numpy, matplotlib, pydantic-core) from inside itself: on first run it
# unpacks its wheels into PEX_ROOT (~/.cache/pex by default, ~160 MB) and runs from there.
# Each pex is built from the same pinned wheels (pex --no-pypi --find-links wheels/) for a
# --complete-platform written below (CPython 3.X, x86_64, glibc 2.17..2.34, the same tags pip
# download is given), so no interpreter of that version is needed on the build host.
#
#   scripts/make-dist.sh [--pythons "3.10 3.11 3.12"] [--with-minio] [--no-pex] [--out DIR]
# --pythons (or $BACKUPBENCH_DIST_PYTHONS) narrows the versions, as the bundle test does;
# --no-pex leaves the pex files out (they double the bundle's size).
# Needs PyPI (the wheels, and uv and pex, installed into the build venv when missing) and Go
# (the loader); the result needs neither.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

pythons=${BACKUPBENCH_DIST_PYTHONS:-"3.10 3.11 3.12"}
with_minio=0
with_pex=1
out=$root/dist
while [ $# -gt 0 ]; do
  case $1 in
    --pythons) pythons=$2; shift 2 ;;
    --with-minio) with_minio=1; shift ;;
    --no-pex) with_pex=0; shift ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: $0 [--pythons \"3.10 3.11 3.12\"] [--with-minio] [--no-pex] [--out DIR]" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=$(command -v python3); fi
fi
go=${GO:-$(command -v go || true)}
[ -n "$go" ] || go=/usr/local/go/bin/go
if [ ! -x "$go" ]; then
  echo "Go is needed to build the S3 load generator (https://go.dev/dl, or set GO=/path/to/go)" >&2
  exit 1
fi
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

work=$(mktemp -d "${TMPDIR:-/tmp}/backupbench-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The wheel is built from a copy: setuptools keeps build/lib between builds, so a module
# deleted from src/ would otherwise still ship.
mkdir -p "$work/source" "$work/wheels" "$work/bin"
cp pyproject.toml README.md "$work/source/"
tar -C "$root" --exclude=__pycache__ --exclude='*.egg-info' -cf - src | tar -C "$work/source" -xf -
echo "building backupbench's wheel"
"$python" -m pip wheel -q --no-deps --wheel-dir "$work/wheels" "$work/source"
wheel=$(ls "$work/wheels"/backupbench-*.whl)
version=$(basename "$wheel" | cut -d- -f2)
name=backupbench-$version-offline
stage=$work/$name
mkdir -p "$stage"
mv "$work/wheels" "$work/bin" "$stage/"

# pip download --python-version still evaluates markers for the Python running pip (pypa/pip
# issues 10050, 11010): tomli, needed on 3.10 only, would be left out. uv resolves for the
# target; pip then fetches exactly those wheels.
# tool NAME REQUIREMENT WHY: $NAME_UPPERCASE, NAME on PATH, or the build venv's, installed there
# when missing (never into a system Python).
tool() {
  local name=$1 requirement=$2 why=$3 found
  found=$(printenv "${name^^}" || command -v "$name" || true)
  [ -n "$found" ] || found=$(dirname "$python")/$name
  if [ ! -x "$found" ]; then
    if ! "$python" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
      echo "$name is needed $why: pip install '$requirement', or set ${name^^}=/path/to/$name" >&2
      exit 1
    fi
    echo "installing $name into $(dirname "$(dirname "$python")")" >&2
    "$python" -m pip install -q "$requirement" >&2
  fi
  echo "$found"
}
uv=$(tool uv "uv>=0.5" "to resolve for other Pythons")
# --complete-platform and the installed-wheel layout are pex 2's; made and tested with 2.105.
[ "$with_pex" = 0 ] || pex=$(tool pex "pex>=2.100" "to build the single-file pex")
# Newest glibc first, as pip orders them on a host of its own; 2.34 is the oldest target's.
platforms=()
for minor in $(seq 34 -1 17); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
for version_wanted in $pythons; do
  echo "resolving and downloading the dependencies' wheels for CPython $version_wanted"
  pins=$stage/requirements-$version_wanted.txt
  "$uv" pip compile --quiet --native-tls --no-header --no-annotate --only-binary :all: \
    --python-version "$version_wanted" --python-platform x86_64-manylinux_2_34 -o "$pins" "$work/source/pyproject.toml"
  "$python" -m pip download -q --no-deps --only-binary=:all: --implementation cp \
    --python-version "$version_wanted" "${platforms[@]}" --dest "$stage/wheels" -r "$pins"
  echo "$version_wanted" >> "$stage/PYTHONS"
  [ "$with_pex" = 1 ] || continue
  # The target described completely (marker environment and wheel tags, most specific first),
  # as `pex3 interpreter inspect --markers --tags` would print it on such a host: pex resolves
  # for it with no interpreter of that version here, and evaluates tomli's python_version
  # marker for the target, not for the Python running pex.
  tag=cp${version_wanted/./}
  "$python" - "$version_wanted" > "$work/$tag.json" <<'PLATFORM'
import json, sys
major, minor = map(int, sys.argv[1].split("."))
platforms = [f"manylinux_2_{glibc}_x86_64" for glibc in range(34, 16, -1)]
platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
cp = f"cp{major}{minor}"
pys = [f"py{major}{minor}", f"py{major}"] + [f"py{major}{m}" for m in range(minor - 1, -1, -1)]
tags = [f"{cp}-{abi}-{p}" for abi in (cp, "abi3", "none") for p in platforms]
tags += [f"cp{major}{m}-abi3-{p}" for m in range(minor - 1, 1, -1) for p in platforms]
tags += [f"{py}-none-{p}" for py in pys for p in platforms]
tags += [f"{cp}-none-any"] + [f"{py}-none-any" for py in pys]
full = f"{major}.{minor}.0"
json.dump({"marker_environment": {
    "implementation_name": "cpython", "implementation_version": full, "os_name": "posix",
    "platform_machine": "x86_64", "platform_python_implementation": "CPython",
    "platform_system": "Linux", "python_full_version": full, "python_version": f"{major}.{minor}",
    "sys_platform": "linux"}, "compatible_tags": tags}, sys.stdout)
PLATFORM
  echo "building backupbench-$tag.pex"
  "$pex" --no-pypi --find-links "$stage/wheels" -r "$pins" "backupbench==$version" -c backupbench \
    --complete-platform "$work/$tag.json" --python-shebang "/usr/bin/env python$version_wanted" \
    -o "$stage/backupbench-$tag.pex" > /dev/null
done

echo "building the static S3 load generator"
(cd native/s3load && "$go" build -trimpath -ldflags='-s -w' -o "$stage/bin/backupbench-s3load" .)
if [ "$with_minio" = 1 ]; then
  # The same pinned MinIO as scripts/install-minio.sh, whose line is the one source of the pin.
  pin=$(sed -n 's/^PINNED_MINIO=//p' scripts/install-minio.sh)
  echo "building MinIO ${MINIO_VERSION:-$pin} (static; a few minutes the first time)"
  GOBIN="$stage/bin" "$go" install -trimpath -ldflags='-s -w' "github.com/minio/minio@${MINIO_VERSION:-$pin}"
  "$go" version -m "$stage/bin/minio" | awk '$1 == "mod" { print $3; exit }' > "$stage/bin/minio.version"
fi

cp scripts/offline-install.sh "$stage/install.sh"
chmod 755 "$stage/install.sh"
(cd "$stage" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum > SHA256SUMS)
mkdir -p "$out"
tar -C "$work" -czf "$out/$name.tar.gz.tmp" "$name"
mv -f "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
echo "$out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1)): copy it over, unpack, run $name/install.sh"
