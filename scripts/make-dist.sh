#!/usr/bin/env bash
# Builds the offline bundle for servers that reach no package index (`make dist`):
#   dist/backupbench-<version>-offline.tar.gz, unpacking to backupbench-<version>-offline/ with
#     wheels/      backupbench's wheel and every dependency's, for each CPython asked for, on
#                  x86_64 Linux with glibc >= 2.17 .. 2.34 (RHEL 9 has 2.34, Ubuntu 22.04 2.35)
#     bin/         backupbench-s3load, built static (CGO_ENABLED=0): no libc version to match;
#                  with --with-minio also MinIO (~110 MB, so only when asked), static too
#     install.sh   scripts/offline-install.sh: a venv, `pip install --no-index`, the binaries
#     requirements-3.X.txt  the exact versions resolved for each CPython (install.sh holds pip to them)
#     PYTHONS      the CPython versions the wheels are for; SHA256SUMS of everything
# Wheels rather than a zipapp or pex: numpy, matplotlib and pydantic-core are compiled
# extensions, which a zipapp cannot import from inside itself and a pex unpacks into the
# user's home on first run; a wheel folder installs into an ordinary venv with pip alone.
#
#   scripts/make-dist.sh [--pythons "3.10 3.11 3.12"] [--with-minio] [--out DIR]
# --pythons (or $BACKUPBENCH_DIST_PYTHONS) narrows the versions, as the bundle test does.
# Needs PyPI (the wheels, and uv, installed into the build venv when missing) and Go (the
# loader); the result needs neither.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

pythons=${BACKUPBENCH_DIST_PYTHONS:-"3.10 3.11 3.12"}
with_minio=0
out=$root/dist
while [ $# -gt 0 ]; do
  case $1 in
    --pythons) pythons=$2; shift 2 ;;
    --with-minio) with_minio=1; shift ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: $0 [--pythons \"3.10 3.11 3.12\"] [--with-minio] [--out DIR]" >&2; exit 2 ;;
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
uv=${UV:-$(command -v uv || true)}
[ -n "$uv" ] || uv=$(dirname "$python")/uv
if [ ! -x "$uv" ]; then
  if ! "$python" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
    echo "uv is needed to resolve for other Pythons: pip install uv, or set UV=/path/to/uv" >&2
    exit 1
  fi
  echo "installing uv into $(dirname "$(dirname "$python")")"
  "$python" -m pip install -q "uv>=0.5"
fi
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
