#!/usr/bin/env bash
# Builds the lab's seeking-disk model, an nbdkit filter (native/diskmodel/diskmodel.c), into
# .tools/lib/nbdkit-diskmodel-filter.so, where backupbench/lab/nbd.py looks for it. Needs gcc and
# nbdkit's filter header (Debian: nbdkit-plugin-dev); scripts/install-lab-deps.sh installs both and
# runs this. Rebuilt only when the source is newer than the filter. -ffp-contract=off: no fused
# multiply-add, so the filter's arithmetic stays the Python reference's to the nanosecond.
set -euo pipefail
cd "$(dirname "$0")/.."
src=native/diskmodel/diskmodel.c
out=.tools/lib/nbdkit-diskmodel-filter.so
if [ -f "$out" ] && [ ! "$src" -nt "$out" ]; then
  exit 0
fi
mkdir -p "$(dirname "$out")"
echo "building the lab's disk model into $out"
gcc -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -Werror -ffp-contract=off -fPIC -shared -pthread \
  -o "$out.tmp" "$src" -lm
mv -f "$out.tmp" "$out"
