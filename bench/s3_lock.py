"""What S3 Object Lock costs a backup's PUTs: the s3 engine against a local MinIO, the same
objects with and without retention headers.

Usage: python bench/s3_lock.py [--pairs 3] [--objects 1000] [--size 1MiB] [--streams 32] [--dir /dev/shm]

One MinIO single drive in a temporary folder under DIR (tmpfs by default: the disk is then
not what is measured) with two buckets: `plain` (no lock, unversioned) and `locked` (object
lock enabled, hence versioned). Variants, each the PUT phase of `backupbench run --workload
s3` exactly (S3Engine.run_phase; MiB/s is its effective_bw from the per-request records):

    plain bucket     no lock headers                      (what an ordinary bucket costs)
    locked, no lock  versioned bucket, no lock headers    (versioning alone)
    locked, crc32c   + x-amz-sdk-checksum-algorithm CRC32C and x-amz-checksum-crc32c
                                                          (the checksum a locked PUT must carry on AWS)
    locked, lock     + governance retention 1d + crc32c   (what the workload sends with --object-lock)

Each pair runs every variant once, in an order rotated between pairs, after `sync`; objects
are incompressible (fresh random bytes per object, as the workload's default). The overhead
of the lock is (locked-no-lock - locked-lock) / locked-no-lock, from the medians of the pairs;
the ratios lock/no lock, crc32c/no lock and versioned/plain are also taken within each pair
and printed as their median with the min-max.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from pydantic import SecretStr

from _common import ratio_line, require_built
from backupbench import units
from backupbench.engines.s3 import PhaseSpec, S3Engine, S3Target
from backupbench.engines.s3_credentials import Credentials
from backupbench.layouts.minio import MinioServer, minio_version
from backupbench.workloads.s3_options import S3Options

VARIANTS = {
    "plain bucket": ("plain", {}),
    "locked, no lock": ("locked", {}),
    "locked, crc32c": ("locked", {"checksum": True}),
    "locked, lock": ("locked", {"lock_mode": "GOVERNANCE", "retention_s": 86_400.0}),
}


def objects_config(size: int, seed: int) -> dict[str, object]:
    base = S3Options(endpoint="http://127.0.0.1:1", bucket="bench", object_size=size).object_plan(seed).loader_config()
    return {**base, "lock_mode": "", "retention_s": 0.0}


def put_rate(engine: S3Engine, server: MinioServer, creds: Credentials, variant: str, args, tag: str,
             work: Path) -> float:
    bucket, extra = VARIANTS[variant]
    target = S3Target(server.endpoint, bucket)
    prefix = f"backupbench/{tag}/"
    spec = PhaseSpec("put", prefix=prefix, object_size=args.size, concurrency=args.streams, objects=args.objects,
                     objects_config={**objects_config(args.size, hash(tag) & 0xFFFFFFFF), **extra})
    folder = work / tag
    folder.mkdir()
    os.sync()
    run = engine.run_phase(target, creds, spec, folder)
    if run.figures["errors"]:
        raise SystemExit(f"{variant}: {run.figures['errors']:.0f} PUTs failed: {run.errors}")
    if bucket == "locked":
        engine.delete_versions(target, creds, prefix)
    else:
        engine.delete_prefix(target, creds, prefix)
    return run.figures["effective_bw"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--size", type=units.parse_size, default=units.MiB)
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--dir", type=Path, default=Path("/dev/shm"))
    args = parser.parse_args()
    require_built("s3_lock", "minio", "backupbench-s3load")
    engine = S3Engine()
    rates: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bb-s3lock-", dir=args.dir) as tmp:
        work, drive = Path(tmp), Path(tmp) / "drive"
        drive.mkdir()
        with MinioServer([drive], log_path=work / "minio.log") as server:
            creds = Credentials(SecretStr(server.access_key), SecretStr(server.secret_key), None, "bench")
            engine.create_bucket(S3Target(server.endpoint, "plain"), creds)
            engine.create_bucket(S3Target(server.endpoint, "locked"), creds, object_lock=True)
            print(f"MinIO {minio_version()} on {args.dir}, {engine.version()}; {args.objects:,} x "
                  f"{units.format_size(args.size)} objects, {args.streams} streams, {args.pairs} pairs")
            names = list(VARIANTS)
            for pair in range(args.pairs):
                order = names[pair % len(names):] + names[:pair % len(names)]
                for name in order:
                    rates[name].append(put_rate(engine, server, creds, name, args, f"p{pair}-{names.index(name)}",
                                                work))
                print(f"pair {pair + 1}: " + ", ".join(f"{n} {rates[n][-1] / units.MiB:,.0f}" for n in names)
                      + " MiB/s")
    median = {name: statistics.median(values) for name, values in rates.items()}
    print()
    for name in names:
        print(f"  {name:<16} PUT {median[name] / units.MiB:8,.1f} MiB/s (median; "
              + ", ".join(f"{v / units.MiB:,.0f}" for v in rates[name]) + ")")
    base, locked = median["locked, no lock"], median["locked, lock"]
    print(f"\nwith lock / without: {locked / base:.3f}  -> lock overhead {100 * (base - locked) / base:+.1f}% "
          f"(of which the crc32c checksum {100 * (base - median['locked, crc32c']) / base:+.1f}%); "
          f"versioned bucket vs plain: {100 * (median['plain bucket'] - base) / median['plain bucket']:+.1f}%")
    for label, over, under in (("PUT MiB/s with lock / without", "locked, lock", "locked, no lock"),
                               ("PUT MiB/s with crc32c / without", "locked, crc32c", "locked, no lock"),
                               ("PUT MiB/s versioned bucket / plain", "locked, no lock", "plain bucket")):
        print(ratio_line(label, [a / b for a, b in zip(rates[over], rates[under])], what="pairs"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
