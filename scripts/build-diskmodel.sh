#!/usr/bin/env bash
# Builds the lab's seeking-disk model, an nbdkit filter (native/diskmodel: diskmodel.c, nbdkit's
# side, and disk.c, the disk and its queue), into .tools/lib/nbdkit-diskmodel-filter.so, where
# backupbench/lab/nbd.py looks for it. Needs gcc and nbdkit's filter header (Debian:
# nbdkit-plugin-dev); scripts/install-lab-deps.sh installs both and runs this. Rebuilt only when a
# source is newer than the filter. -ffp-contract=off: no fused multiply-add, so the filter's
# arithmetic stays the Python reference's to the nanosecond. -fvisibility=hidden: only nbdkit's
# entry point is exported, so the two halves' shared names cannot meet nbdkit's.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=native/diskmodel
out=.tools/lib/nbdkit-diskmodel-filter.so
if [ -f "$out" ] && [ -z "$(find "$dir" -newer "$out" -type f)" ]; then
  exit 0
fi
mkdir -p "$(dirname "$out")"
echo "building the lab's disk model into $out"
gcc -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -Werror -ffp-contract=off -fvisibility=hidden \
  -fPIC -shared -pthread -o "$out.tmp" "$dir/diskmodel.c" "$dir/disk.c" -lm
mv -f "$out.tmp" "$out"
