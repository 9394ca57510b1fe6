#!/usr/bin/env python3
"""Benchmark: the S3 workload from 2 and 4 agents (each in its own network namespace) against
one MinIO on tmpfs, versus the same run from this host alone with the same total streams.

Goal: the merged throughput of N agents within 10 % of the single-host figure (the work is the
same: objects and streams are split over the agents, and the server is the bottleneck), i.e.
running through agents, per-phase jobs and merging costs nothing measurable.

    .venv/bin/python bench/s3_hosts.py [--objects 3000] [--object-size 256KiB] [--concurrency 16] [--repeat 3]

The table shows the median run of each configuration; the ratio lines take N agents / one host
within each repeat (the runs next to each other) and print their median with the min-max.
Exits 0 when it measured, whether or not the goal was met.

Every figure must come from a run without a failed request (a run with any is refused): MinIO
does not free a deleted object's space at once but moves it to .minio.sys/tmp/.trash and empties
that only every few minutes (MINIO_API_DELETE_CLEANUP_INTERVAL is not honoured by the pinned
build), so 9 runs of 750 MiB filled the 4 GiB tmpfs and later PUTs failed fast with
XMinioStorageFull, which made the figures of the later runs meaningless. So the trash is
emptied between runs here, as MinIO itself would later.

Needs root (namespaces, a bridge, a tmpfs). Network: a bridge 10.231.X.1/24 made here (X from
the pid, 40-79), MinIO on 10.231.X.2 in one namespace, agents on .3-.6 in four others (over TLS,
certificates from a CA made for the run: tests/tls_support.py). Every
process, namespace, link, mount and folder made here is removed on every way out.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import select
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import ratio_line, require, require_built, spread
from backupbench.layouts.minio import HEALTH_PATH

BACKUPBENCH = str(Path(sys.executable).parent / "backupbench")
MINIO = str(Path(__file__).resolve().parents[1] / ".tools" / "bin" / "minio")
GOAL = 0.10
X = 40 + (os.getpid() + 17) % 40
NET = f"10.231.{X}"
TAG = f"bbh{os.getpid() % 100000}"
NAMESPACES = [f"{TAG}m", *(f"{TAG}{i}" for i in range(4))]
BUCKET = "hostsbench"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


def network_up() -> None:
    ip("link", "add", f"{TAG}br", "type", "bridge")
    ip("addr", "add", f"{NET}.1/24", "dev", f"{TAG}br")
    ip("link", "set", f"{TAG}br", "up")
    for i, ns in enumerate(NAMESPACES):
        ip("netns", "add", ns)
        ip("link", "add", f"{TAG}v{i}h", "type", "veth", "peer", "name", f"{TAG}v{i}n")
        ip("link", "set", f"{TAG}v{i}h", "master", f"{TAG}br")
        ip("link", "set", f"{TAG}v{i}h", "up")
        ip("link", "set", f"{TAG}v{i}n", "netns", ns)
        ip("-n", ns, "addr", "add", f"{NET}.{i + 2}/24", "dev", f"{TAG}v{i}n")
        ip("-n", ns, "link", "set", f"{TAG}v{i}n", "up")
        ip("-n", ns, "link", "set", "lo", "up")


def network_down() -> None:
    for i, ns in enumerate(NAMESPACES):
        subprocess.run(["ip", "link", "del", f"{TAG}v{i}h"], capture_output=True, timeout=20)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
    subprocess.run(["ip", "link", "del", f"{TAG}br"], capture_output=True, timeout=20)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def in_namespace(name: str) -> list[str]:
    # Its network namespace only: `ip netns exec` would also copy every mount into a mount
    # namespace of its own, keeping filesystems others unmount meanwhile in use (tests/netns_support.py).
    return ["nsenter", f"--net=/run/netns/{name}"]


def start_minio(drive: Path, user: str, password: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "MINIO_ROOT_USER": user, "MINIO_ROOT_PASSWORD": password, "MINIO_BROWSER": "off"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([*in_namespace(NAMESPACES[0]), MINIO, "server", "--quiet", "--address",
                                 f"{NET}.2:9000", str(drive)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://{NET}.2:9000{HEALTH_PATH}", timeout=2):
                return proc
        except OSError:
            time.sleep(0.3)
    stop(proc)
    raise SystemExit(f"MinIO did not start: {log.read_text()}")


def start_agent(index: int, token_file: Path, root: Path, authority) -> subprocess.Popen:
    """The agent over TLS, its certificate from the run's own CA (controllers get --agent-ca)."""
    root.mkdir()
    cert = authority.issue(f"{NET}.{index + 3}", f"agent{index}")
    proc = subprocess.Popen([*in_namespace(NAMESPACES[index + 1]), BACKUPBENCH, "agent", "--listen",
                             f"{NET}.{index + 3}:7480", "--token-file", str(token_file), "--root", str(root),
                             *cert.agent_args()],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    if not ready or "listening on" not in proc.stdout.readline().decode():
        stop(proc)
        raise SystemExit(f"agent {index} did not start")
    return proc


def run(args: argparse.Namespace, work: Path, env: dict[str, str], token_file: Path, agents: int) -> dict:
    argv = [BACKUPBENCH, "run", "--workload", "s3", "--endpoint", f"http://{NET}.2:9000", "--bucket", BUCKET,
            "--objects", str(args.objects), "--object-size", args.object_size, "--concurrency", str(args.concurrency),
            "--s3-phases", "put,get,delete", "--results", str(work / "results"), "--json", "--quiet",
            "--no-monitor"]
    if agents:
        argv += ["--agents", ",".join(f"{NET}.{i + 3}:7480" for i in range(agents)),
                 "--agent-token-file", str(token_file), "--agent-ca", str(work / "ca.pem")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    empty_trash(work / "drive")
    if done.returncode != 0:
        raise SystemExit(f"run with {agents} agents failed: {done.stderr}")
    # The versioned --json document (docs/results.md): figures are {name, value, unit} entries.
    figures = {phase["name"]: {f["name"]: f["value"] for f in phase["figures"] if "device" not in f}
               for phase in json.loads(done.stdout)["phases"]}
    failed = {name: (f["errors"], f["ops"]) for name, f in figures.items() if f["errors"]}
    if failed:
        raise SystemExit(f"run with {agents} agents had failed requests (phase: errors, ok): {failed}; "
                         "its figures would not be the server's")
    return figures


def empty_trash(drive: Path) -> None:
    """What MinIO's own delete cleanup does every few minutes: free the deleted objects' space."""
    trash = drive / ".minio.sys" / "tmp" / ".trash"
    if trash.is_dir():
        for entry in trash.iterdir():
            subprocess.run(["rm", "-rf", "--one-file-system", str(entry)], check=True, timeout=120)


def bench(args: argparse.Namespace, work: Path) -> None:
    drive = work / "drive"
    drive.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4g", "backupbench-bench", str(drive)], check=True,
                   timeout=20)
    procs: list[subprocess.Popen] = []
    try:
        network_up()
        user, password = "bb" + secrets.token_hex(6), secrets.token_hex(16)
        token_file = work / "token"
        token_file.write_text(secrets.token_hex(32))
        os.chmod(token_file, 0o600)
        procs.append(start_minio(drive, user, password, work / "minio.log"))
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from tls_support import Authority  # noqa: E402 - a test helper (openssl), as make_bucket's S3Admin
        authority = Authority(work, "ca")
        procs += [start_agent(i, token_file, work / f"root{i}", authority) for i in range(4)]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": user, "AWS_SECRET_ACCESS_KEY": password}
        make_bucket(env)
        # Interleaved (1, 2, 4, 4, 2, 1, ...) so a drift of the server over time (its caches,
        # tmpfs filling) does not favour one configuration; each figure is the median run's.
        runs: dict[int, list[dict]] = {0: [], 2: [], 4: []}
        for rep in range(args.repeat):
            for n in (0, 2, 4) if rep % 2 == 0 else (4, 2, 0):
                runs[n].append(run(args, work, env, token_file, n))
        report(args, {n: {phase: median(r, phase) for phase in r[0]} for n, r in runs.items()})
        report_ratios(runs)
    finally:
        for proc in reversed(procs):
            stop(proc)
        network_down()
        subprocess.run(["umount", str(drive)], capture_output=True, timeout=60)


def make_bucket(env: dict[str, str]) -> None:
    # The S3 test client of the test suite: the bucket is made once, emptied by every run.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from s3_fixtures import S3Admin  # noqa: E402 - a test helper, not part of the package
    S3Admin(f"http://{NET}.2:9000", env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]).create_bucket(BUCKET)


def median(runs: list[dict], phase: str) -> dict:
    ordered = sorted((r[phase] for r in runs), key=lambda figures: figures["objects_per_s"])
    return ordered[len(ordered) // 2]


def report(args: argparse.Namespace, results: dict[int, dict[str, dict]]) -> bool:
    print(f"{args.objects} objects x {args.object_size}, {args.concurrency} streams in total, MinIO on tmpfs, "
          f"median of {args.repeat} runs each")
    print(f"{'phase':<7} {'hosts':>5} {'MiB/s':>9} {'obj/s':>9} {'p99 ms':>8} {'ratio':>6}")
    ok = True
    for phase in ("put", "get", "delete"):
        single = results[0][phase]
        for n, phases in results.items():
            figures = phases[phase]
            base = single["objects_per_s"]
            ratio = figures["objects_per_s"] / base if base else 0.0
            ok &= n == 0 or abs(ratio - 1) <= GOAL
            print(f"{phase:<7} {n or 1:>5} {figures['effective_bw'] / 2**20:>9.1f} {figures['objects_per_s']:>9.1f} "
                  f"{figures['lat_p99_ns'] / 1e6:>8.1f} {ratio:>6.3f}")
    print(f"goal: every ratio within {GOAL:.0%} of 1.000: {'met' if ok else 'NOT met'}")
    return ok


def report_ratios(runs: dict[int, list[dict]]) -> None:
    """N agents / one host, objects/s, within each repeat."""
    for phase in ("put", "get", "delete"):
        for n in (2, 4):
            ratios = [many[phase]["objects_per_s"] / one[phase]["objects_per_s"]
                      for many, one in zip(runs[n], runs[0]) if one[phase]["objects_per_s"]]
            if ratios:
                verdict = "ok" if abs(spread(ratios).median - 1) <= GOAL else "OUTSIDE GOAL"
                print(ratio_line(f"{n} agents / one host, {phase} objects/s", ratios, f"1 +- {GOAL:g}", verdict,
                                 what="repeats"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=3000)
    parser.add_argument("--object-size", default="256KiB")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    require("s3_hosts", root=True, tools=("ip", "mount"), files=(MINIO,))
    require_built("s3_hosts", "backupbench-s3load")
    with tempfile.TemporaryDirectory(prefix="backupbench-s3hosts-") as tmp:
        bench(args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
