#!/usr/bin/env bash
# Builds the S3 tools backupbench uses into the project's .tools/bin, from source:
#   minio                 the S3 server of the minio-single / minio-ec layouts and the S3 tests
#                         (go install github.com/minio/minio@$MINIO_VERSION; ~4 min cold)
#   backupbench-s3load    the s3 workload's load generator (native/s3load: the standard library and
#                         aws-sdk-go-v2's SigV4 signer, from the module proxy like minio-go)
#   backupbench-s3ref     the reference load generator of bench/s3.py (native/s3ref, minio-go)
# Safe to run again: MinIO is built only when absent (MINIO_REBUILD=1 forces it); the other
# two are rebuilt only when a file of theirs is newer than the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=$root/.tools/bin
mkdir -p "$bin"

go=${GO:-$(command -v go || true)}
[ -n "$go" ] || go=/usr/local/go/bin/go
if [ ! -x "$go" ]; then
  echo "Go is needed to build MinIO and the S3 load generator (https://go.dev/dl, or set GO=/path/to/go)" >&2
  exit 1
fi
# Build with the Go that is installed; never download another toolchain.
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
# Pinned so every machine builds the same server; MINIO_VERSION=latest (or another) overrides.
PINNED_MINIO=v0.0.0-20260212201848-7aac2a2c5b7c

if [ ! -x "$bin/minio" ] || [ "${MINIO_REBUILD:-0}" = 1 ]; then
  echo "building MinIO ${MINIO_VERSION:-$PINNED_MINIO} into .tools/bin (a few minutes the first time)"
  GOBIN="$bin" "$go" install "github.com/minio/minio@${MINIO_VERSION:-$PINNED_MINIO}"
  rm -f "$bin/minio.version"
fi
# The module version (the binary itself says DEVELOPMENT.GOGET): recorded with every run.
if [ ! -s "$bin/minio.version" ]; then
  "$go" version -m "$bin/minio" | awk '$1 == "mod" { print $3; exit }' > "$bin/minio.version"
fi

# build DIR NAME: go build native/DIR into .tools/bin/NAME when its sources changed.
build() {
  local dir=native/$1 out=$bin/$2
  if [ -x "$out" ] && [ -z "$(find "$dir" -type f -newer "$out" -print -quit)" ]; then
    return 0
  fi
  echo "building $2 from $dir"
  (cd "$dir" && "$go" build -trimpath -o "$out.tmp" . && mv -f "$out.tmp" "$out")
}
build s3load backupbench-s3load
# Only bench/s3.py needs the reference (and it needs minio-go from the module proxy).
build s3ref backupbench-s3ref || echo "warning: backupbench-s3ref not built; bench/s3.py needs it" >&2
