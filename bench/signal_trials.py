"""Signal trials as a figure: N runs per workload and signal, each stopped at a seeded random
moment, counting orphans, leftovers and wrong stored states (goal: 0 of N).

    python bench/signal_trials.py [--trials 20] [--seed 20261123] [--no-s3]

For each workload it first times an uninterrupted run (the reference, measured in the same
run): signals land inside 0 .. 0.9 x that time counted from the moment backupbench's stop
handlers are in place (the README's promise starts there; `--from-start` counts from the
process's start, 0.1 s on, as before, which includes the interpreter's own start when the
machine is slow), and the median time from the start to the handlers. Also prints the median time from the
signal to the process's exit, against the reference run's length, and that ratio per
workload and signal as the median of the trials with their min-max. The harness is the one
the test suite uses (tests/reliability/trials.py). SIGKILL trials run `backupbench
cleanup` afterwards, as a user would.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT / "tests"), str(ROOT / "src")]

from _common import ratio_line, require_built  # noqa: E402
from trials import run_trial, uninterrupted_seconds, workloads  # noqa: E402

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--no-s3", action="store_true", help="skip the S3 workload (needs the built MinIO)")
    parser.add_argument("--workloads", default="kb2014,smallfiles,s3")
    parser.add_argument("--from-start", action="store_true",
                        help="count each moment from the process's start (0.1 s on), not from its handlers")
    args = parser.parse_args()
    chosen = args.workloads.split(",")
    server = None
    env: dict[str, str] = {}
    admin = None
    if not args.no_s3 and "s3" in chosen:
        require_built("signal_trials", "minio", "backupbench-s3load")
        from s3_fixtures import S3Admin
        from backupbench.layouts.minio import MinioServer
        drive = Path(tempfile.mkdtemp(prefix="bb-bench-minio-"))
        server = MinioServer([drive]).start()
        env = {"AWS_ACCESS_KEY_ID": server.access_key, "AWS_SECRET_ACCESS_KEY": server.secret_key}
        admin = S3Admin.of(server)
    table = workloads(server.endpoint if server else None)
    failures = 0
    try:
        print(f"{'workload':<11} {'signal':<8} {'trials':>6} {'bad':>4} {'orphans':>8} {'leftovers':>10} "
              f"{'wrong state':>12} {'stop s (median)':>16} {'ref run s':>10} {'ratio':>6}")
        for name in chosen:
            if name not in table:
                continue
            workload = table[name]
            base = Path(tempfile.mkdtemp(prefix=f"bb-bench-{name}-"))
            reference = uninterrupted_seconds(workload, base / "ref", env, "bb-bench-ref" if name == "s3" else None)
            for sig in SIGNALS:
                rng = random.Random(f"{args.seed}/{name}/{sig.name}")
                outcomes = []
                for index in range(args.trials):
                    folder = base / f"{sig.name}-{index}"
                    folder.mkdir()
                    earliest = 0.1 if args.from_start else 0.0
                    delay = rng.uniform(earliest, max(earliest + 0.05, 0.9 * reference))
                    bucket = f"bb-bench-{sig.name.lower()}-{index}" if name == "s3" else None
                    outcomes.append(run_trial(workload, sig, delay, folder, env, bucket, admin,
                                              after_handlers=not args.from_start))
                    shutil.rmtree(folder, ignore_errors=True)
                real = [o for o in outcomes if not o.finished_first]
                bad = [o for o in real if o.problems()]
                failures += len(bad)
                orphans = sum(1 for o in real if o.orphans)
                leftovers = sum(1 for o in real if o.leftovers or o.open_journals or o.objects_left or o.bucket_left)
                wrong = sum(1 for o in real if any(p.startswith(("exit", "stored")) for p in o.problems()))
                stop = statistics.median(o.seconds_to_exit for o in real) if real else float("nan")
                print(f"{name:<11} {sig.name:<8} {len(real):>6} {len(bad):>4} {orphans:>8} {leftovers:>10} "
                      f"{wrong:>12} {stop:>16.2f} {reference:>10.2f} {stop / reference:>6.2f}")
                if real:
                    print("    " + ratio_line(f"stop time / reference run, {name} {sig.name}",
                                              [o.seconds_to_exit / reference for o in real], what="trials"))
                handlers = [o.handlers_s for o in outcomes if o.handlers_s is not None]
                if handlers:
                    print(f"    start to handlers in place: median {statistics.median(handlers) * 1000:.0f} ms "
                          f"({min(handlers) * 1000:.0f}-{max(handlers) * 1000:.0f})")
                for outcome in bad:
                    print(f"    {outcome.describe()}")
            shutil.rmtree(base, ignore_errors=True)
    finally:
        if server is not None:
            server.stop()
    print(f"goal: 0 bad trials; found {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
