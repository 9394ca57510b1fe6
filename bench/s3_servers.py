"""The s3 workload's loader on two S3 implementations side by side, each against the minio-go
reference client in the same run, so a regression of the loader on either server shows.

Usage: python bench/s3_servers.py [--pairs 3] [--objects 200] [--object-size 1MiB] [--streams 8]
                                  [--servers minio,moto] [--dir DIR]

Servers, both started here on 127.0.0.1 and stopped at the end: MinIO, one drive in a temporary
folder under DIR (.tools/bin/minio), and moto's S3 server (moto_server, from the test extras:
`make test` installs it; it keeps objects in memory, in one Python process). For each server
and pair, PUT then GET of the same number of objects of the same size by the same number of
streams on both sides, in the order A-put, B-put, B-get, A-get (A alternating between pairs),
with `sync` before each measured phase. The loader side is S3Engine.run_phase, exactly the
measured part of `backupbench run --workload s3`; its MiB/s is the effective_bw figure of its
per-request records. The reference is native/s3ref (minio-go, payload hashing off); its MiB/s
is bytes / wall time of the same span. A ratio near 1 says the loader moves what a plain
minio-go client moves on that server; moto being far slower than MinIO says nothing about the
loader, which is why each server has its own reference.

Every line `ratio LABEL: median (min-max, n pairs); goal >= 0.9 ok` is the loader/reference
ratio of one server and request kind (bench/_common.py). Exits 0 when it measured, 77 when this
machine lacks a server or client.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from _common import alternated_pair, cannot_run, ratio_line, require_built, spread
from pydantic import SecretStr

from backupbench import process, units
from backupbench.engines.s3 import PhaseSpec, S3Engine, S3Target, find_tool
from backupbench.engines.s3_credentials import Credentials
from backupbench.layouts.minio import MinioServer, free_port, minio_version, random_credentials

BUCKET = "bench"
REFERENCE = "backupbench-s3ref"
GOAL = 0.9  # as bench/s3.py: the loader within 10% of minio-go


@contextmanager
def moto_server(log: Path) -> Iterator[tuple[str, str, str]]:
    """moto's S3 server on 127.0.0.1: (endpoint, access key, secret key); stopped on the way out."""
    beside = Path(sys.executable).parent / "moto_server"
    binary = str(beside) if beside.is_file() else shutil.which("moto_server")
    if binary is None:
        cannot_run("s3_servers", "moto_server is not installed (pip install 'moto[server]'; make test installs it)")
    port = free_port()
    child = process.Background([binary, "-H", "127.0.0.1", "-p", str(port)], stdout_path=log)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and child.running():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit(f"moto_server did not start: {child.stderr_text()[-300:]}")
        access, secret = random_credentials()  # moto takes any
        yield f"http://127.0.0.1:{port}", access, secret
    finally:
        child.stop(5)


@contextmanager
def minio_server(work: Path) -> Iterator[tuple[str, str, str]]:
    drive = work / "minio-drive"
    drive.mkdir()
    with MinioServer([drive], log_path=work / "minio.log") as server:
        yield server.endpoint, server.access_key, server.secret_key


class Side:
    """One client on one server: the loader (engine) or the reference, under its own prefix."""

    def __init__(self, name: str, endpoint: str, creds: Credentials, args, tag: str, work: Path):
        self.name, self.endpoint, self.creds, self.args, self.work = name, endpoint, creds, args, work
        self.prefix, self.tag = f"backupbench/{tag}/", tag
        self.target = S3Target(endpoint, BUCKET)

    def measure(self, op: str) -> float:
        """Bytes per second of one phase."""
        os.sync()
        return self._engine(op) if self.name == "engine" else self._reference(op)

    def _engine(self, op: str) -> float:
        folder = self.work / f"{self.tag}-{op}"
        folder.mkdir()
        spec = PhaseSpec(op, self.prefix, self.args.object_size, self.args.streams, objects=self.args.objects)
        run = S3Engine().run_phase(self.target, self.creds, spec, folder)
        if run.figures["errors"] or run.figures["retried"]:
            raise SystemExit(f"engine {op} on {self.endpoint}: errors {run.errors}, retried {run.retried}")
        return run.figures["effective_bw"]

    def _reference(self, op: str) -> float:
        done = subprocess.run([find_tool(REFERENCE), "-endpoint", self.endpoint, "-bucket", BUCKET,
                               "-prefix", self.prefix, "-op", op, "-size", str(self.args.object_size),
                               "-concurrency", str(self.args.streams), "-objects", str(self.args.objects)],
                              env={**os.environ, **self.creds.env()}, capture_output=True, text=True, check=True,
                              timeout=1800)
        result = json.loads(done.stdout)
        if result["errors"]:
            raise SystemExit(f"reference {op} on {self.endpoint}: {result['errors']} errors, first: "
                             f"{result.get('first_error')}")
        return result["bytes"] / (result["wall_ns"] / 1e9)

    def cleanup(self) -> None:
        S3Engine().delete_prefix(self.target, self.creds, self.prefix)


def measure_server(server: str, endpoint: str, creds: Credentials, args, work: Path,
                   rates: dict[tuple[str, str, str], list[float]]) -> None:
    """Every pair on one server: rates[(server, op, side)] gets one figure per pair."""
    S3Engine().create_bucket(S3Target(endpoint, BUCKET), creds)
    for pair in range(1, args.pairs + 1):
        engine = Side("engine", endpoint, creds, args, f"{server}-e{pair}", work)
        reference = Side("reference", endpoint, creds, args, f"{server}-r{pair}", work)
        got = alternated_pair(engine, reference, pair)
        for op in ("put", "get"):
            eng, ref = got["engine", op], got["reference", op]
            rates.setdefault((server, op, "engine"), []).append(eng)
            rates.setdefault((server, op, "reference"), []).append(ref)
            print(f"{server:<7}{op.upper():<5}{pair:>5}{eng / units.MiB:>14,.1f}{ref / units.MiB:>17,.1f}"
                  f"{eng / ref:>8.3f}", flush=True)
    S3Engine().delete_bucket(S3Target(endpoint, BUCKET), creds)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--object-size", type=units.parse_size, default=units.MiB)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--servers", default="minio,moto")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    args.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    if not args.servers or set(args.servers) - {"minio", "moto"}:
        parser.error("--servers: minio, moto or both")
    return args


def main() -> int:
    args = parse_args()
    require_built("s3_servers", *(["minio"] if "minio" in args.servers else []), "backupbench-s3load", REFERENCE)
    rates: dict[tuple[str, str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bb-bench-s3-servers-", dir=args.dir) as tmp:
        work = Path(tmp)
        print(f"{args.objects} objects of {units.format_size(args.object_size)} per phase, {args.streams} streams, "
              f"{args.pairs} pairs per server; MinIO {minio_version() if 'minio' in args.servers else '-'}", flush=True)
        print(f"{'server':<7}{'op':<5}{'pair':>5}{'engine MiB/s':>14}{'reference MiB/s':>17}{'ratio':>8}", flush=True)
        for server in args.servers:
            # One server at a time: the other does not share the CPU with the one measured.
            with (minio_server(work) if server == "minio" else moto_server(work / "moto.log")) as started:
                endpoint, access, secret = started
                creds = Credentials(SecretStr(access), SecretStr(secret), None, "bench")
                measure_server(server, endpoint, creds, args, work, rates)
    print()
    for server in args.servers:
        for op in ("put", "get"):
            eng, ref = rates[server, op, "engine"], rates[server, op, "reference"]
            print(f"{server} {op.upper()}: engine {statistics.median(eng) / units.MiB:,.1f} MiB/s, reference "
                  f"{statistics.median(ref) / units.MiB:,.1f} MiB/s (medians of pairs)")
    for server in args.servers:
        for op in ("put", "get"):
            ratios = [e / r for e, r in zip(rates[server, op, "engine"], rates[server, op, "reference"])]
            verdict = "ok" if spread(ratios).median >= GOAL else "BELOW GOAL"
            print(ratio_line(f"engine/reference {op.upper()}, {server}", ratios, f">= {GOAL}", verdict, what="pairs"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
