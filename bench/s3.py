"""The s3 workload's engine against a reference minio-go load generator, alternating.

Usage: python bench/s3.py [--pairs 3] [--objects 2000] [--streams 32,100] [--dir DIR]

Same server (a MinIO single drive in a temporary folder under DIR, started here), same
object size (1 MiB), same number of objects, same streams. Each pair measures, per stream
count, PUT then GET on both sides in the order A-put, B-put, B-get, A-get (A alternating
between pairs), with `sync` before each measured phase, so that drift and the page cache's
write-back debt do not favour one side. The engine side is S3Engine.run_phase, exactly the
measured part of `backupbench run --workload s3` (the rest - probe, bucket, cleanup - is
outside the measured span); its MiB/s is the effective_bw figure from its per-request records.
The reference is native/s3ref (minio-go, payload hashing off); its MiB/s is bytes / wall time
of the same span (first request to last answer). Both are built by scripts/install-minio.sh.
Goal: engine/reference >= 0.9 in every cell (median of the pairs' ratios, printed with their
min-max). Client CPU seconds per GiB (user + sys of the load generator) are printed too: on a
shared host every client cycle is taken from the server. Exits 0 when it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import SecretStr

from _common import alternated_pair, ratio_line, require_built, spread
from backupbench import units
from backupbench.engines.s3 import PhaseSpec, S3Engine, S3Target, find_tool
from backupbench.engines.s3_credentials import Credentials
from backupbench.layouts.minio import MinioServer, minio_version

GOAL = 0.9
BUCKET = "bench"
OBJECT_SIZE = units.MiB


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Side:
    def __init__(self, server: MinioServer, work: Path, streams: int, objects: int, tag: str):
        self.server, self.work, self.streams, self.objects = server, work, streams, objects
        self.prefix = f"backupbench/{tag}/"
        self.tag = tag
        self.creds = Credentials(SecretStr(server.access_key), SecretStr(server.secret_key), None, "bench")
        self.target = S3Target(server.endpoint, BUCKET)

    def measure(self, op: str) -> tuple[float, float]:
        """(bytes/s, client CPU seconds) of one phase."""
        os.sync()
        before = children_cpu()
        rate = self._run(op)
        return rate, children_cpu() - before

    def cleanup(self) -> None:
        S3Engine().delete_prefix(self.target, self.creds, self.prefix)


class EngineSide(Side):
    name = "engine"

    def _run(self, op: str) -> float:
        folder = self.work / f"{self.tag}-{op}"
        folder.mkdir()
        spec = PhaseSpec(op, self.prefix, OBJECT_SIZE, self.streams, objects=self.objects)
        run = S3Engine().run_phase(self.target, self.creds, spec, folder)
        if run.figures["errors"]:
            raise SystemExit(f"engine {op}: errors {run.errors}")
        return run.figures["effective_bw"]


class ReferenceSide(Side):
    name = "reference"

    def _run(self, op: str) -> float:
        env = {**os.environ, **self.creds.env()}
        done = subprocess.run([find_tool("backupbench-s3ref"), "-endpoint", self.server.endpoint, "-bucket", BUCKET,
                               "-prefix", self.prefix, "-op", op, "-size", str(OBJECT_SIZE),
                               "-concurrency", str(self.streams), "-objects", str(self.objects)],
                              env=env, capture_output=True, text=True, check=True, timeout=1800)
        result = json.loads(done.stdout)
        if result["errors"]:
            raise SystemExit(f"reference {op}: {result['errors']} errors, first: {result.get('first_error')}")
        return result["bytes"] / (result["wall_ns"] / 1e9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--streams", default="32,100")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    require_built("s3", "minio", "backupbench-s3load", "backupbench-s3ref")
    streams_list = [int(s) for s in args.streams.split(",")]
    with tempfile.TemporaryDirectory(prefix="bb-bench-s3-", dir=args.dir) as tmp:
        work = Path(tmp)
        drive = work / "drive"
        drive.mkdir()
        with MinioServer([drive], log_path=work / "minio.log") as server:
            creds = Credentials(SecretStr(server.access_key), SecretStr(server.secret_key), None, "bench")
            S3Engine().create_bucket(S3Target(server.endpoint, BUCKET), creds)
            print(f"MinIO {minio_version()} single drive in {drive}; {args.objects} objects of 1 MiB per run; "
                  f"{args.pairs} pairs per cell", flush=True)
            print(f"{'cell':<12}{'pair':>5}{'engine MiB/s':>14}{'reference MiB/s':>17}{'ratio':>8}"
                  f"{'eng CPU s/GiB':>15}{'ref CPU s/GiB':>15}", flush=True)
            ratios: dict[str, list[float]] = {}
            rates: dict[str, tuple[list[float], list[float]]] = {}
            cpu: dict[str, tuple[list[float], list[float]]] = {}
            gib = args.objects * OBJECT_SIZE / units.GiB
            run = 0
            for streams in streams_list:
                for pair in range(1, args.pairs + 1):
                    run += 1
                    engine = EngineSide(server, work, streams, args.objects, f"e{run}")
                    reference = ReferenceSide(server, work, streams, args.objects, f"r{run}")
                    got = alternated_pair(engine, reference, pair)
                    for op in ("put", "get"):
                        cell = f"{op.upper()} x{streams}"
                        (eng, eng_cpu), (ref, ref_cpu) = got["engine", op], got["reference", op]
                        ratios.setdefault(cell, []).append(eng / ref)
                        rates.setdefault(cell, ([], []))
                        rates[cell][0].append(eng)
                        rates[cell][1].append(ref)
                        cpu.setdefault(cell, ([], []))
                        cpu[cell][0].append(eng_cpu / gib)
                        cpu[cell][1].append(ref_cpu / gib)
                        print(f"{cell:<12}{pair:>5}{eng / units.MiB:>14,.1f}{ref / units.MiB:>17,.1f}"
                              f"{eng / ref:>8.3f}{eng_cpu / gib:>15.2f}{ref_cpu / gib:>15.2f}", flush=True)
            print()
            print(f"{'cell':<12}{'engine MiB/s':>14}{'reference MiB/s':>17}{'ratio':>8}{'eng CPU s/GiB':>15}"
                  f"{'ref CPU s/GiB':>15}  (medians of pairs)")
            for cell, values in ratios.items():
                eng, ref = (statistics.median(v) for v in rates[cell])
                eng_cpu, ref_cpu = (statistics.median(v) for v in cpu[cell])
                print(f"{cell:<12}{eng / units.MiB:>14,.1f}{ref / units.MiB:>17,.1f}{statistics.median(values):>8.3f}"
                      f"{eng_cpu:>15.2f}{ref_cpu:>15.2f}")
            print()
            for cell, values in ratios.items():
                verdict = "ok" if spread(values).median >= GOAL else "BELOW GOAL"
                print(ratio_line(f"engine/reference {cell}", values, f">= {GOAL}", verdict, what="pairs"))
            return 0


if __name__ == "__main__":
    sys.exit(main())
