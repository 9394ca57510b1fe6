"""Signal trials: start `backupbench run` as a user would, stop it at a random moment, and
count what it left behind.

One trial = one real run in a folder of its own: a workload (kb2014, smallfiles or s3
against a MinIO the caller started), a signal (SIGINT to the process group as a terminal's
Ctrl-C sends it, SIGTERM or SIGKILL to the process as `kill` sends it) after `delay`
seconds. For SIGKILL, `backupbench cleanup` runs afterwards, as the README tells a user to.
Then: the exit status, the stored run's state, every file left in the target, every open
journal, every live process whose command line names the trial's folder, and the S3 keys
left under backupbench/ and whether the run's bucket is still there.

Used by tests/reliability/test_signals.py (a few seeded trials) and bench/signal_trials.py
(many, as a figure).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from host_support import run_cli, start_cli

EXIT_INTERRUPTED = 130
# A killed backupbench's children get SIGKILL from the kernel at once; this is only the
# time the kernel may take to deliver it and for the children to vanish.
ORPHAN_GRACE_S = 2.0


@dataclass(frozen=True)
class Workload:
    name: str
    args: tuple[str, ...]
    needs_target: bool = True


def workloads(s3_endpoint: str | None = None) -> dict[str, Workload]:
    """The three workloads, each sized to run about 3-6 s on these machines."""
    found = {
        "kb2014": Workload("kb2014", ("--size", "128MiB", "--runtime", "1",
                                      "--operations", "active-full,synthetic-full,restore-random")),
        "smallfiles": Workload("smallfiles", ("--workload", "smallfiles", "--preset", "quick", "--files", "4000")),
    }
    if s3_endpoint:
        found["s3"] = Workload("s3", ("--workload", "s3", "--endpoint", s3_endpoint, "--objects", "1500",
                                      "--object-size", "256KiB", "--concurrency", "16", "--create-bucket"),
                               needs_target=False)
    return found


@dataclass
class Outcome:
    workload: str
    signal: str
    delay: float
    returncode: int | None
    status: str | None              # the stored run's status; None: no run was stored
    leftovers: list[str] = field(default_factory=list)
    open_journals: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    objects_left: int = 0
    bucket_left: bool = False
    stderr_tail: str = ""
    seconds_to_exit: float | None = None
    finished_first: bool = False    # the run ended before the signal was sent: not a trial
    run_folders: int = 0            # runs/<id> folders in the results
    handlers_s: float | None = None  # from the start to backupbench's handlers (after_handlers)

    def problems(self) -> list[str]:
        found = []
        killed = self.signal == "SIGKILL"
        if not killed and self.returncode != EXIT_INTERRUPTED:
            found.append(f"exit status {self.returncode}, not {EXIT_INTERRUPTED}")
        if self.status not in (None, "interrupted"):
            found.append(f"stored as {self.status!r}, not 'interrupted'")
        if self.status is None and self.run_folders:
            found.append("a run folder was made but no run stored")
        if "Traceback" in self.stderr_tail:
            found.append("printed a traceback")
        for what, items in (("left in the target", self.leftovers), ("open journals", self.open_journals),
                            ("processes left", self.orphans)):
            if items:
                found.append(f"{what}: {', '.join(items[:3])}")
        if self.objects_left:
            found.append(f"{self.objects_left} S3 objects left under backupbench/")
        if self.bucket_left:
            found.append("the bucket the run created is still there")
        return found

    def describe(self) -> str:
        problems = self.problems()
        verdict = "ok" if not problems else "; ".join(problems)
        return f"{self.workload} {self.signal} after {self.delay:.2f} s: {verdict}"


def handlers_installed(pid: int) -> bool:
    """Whether backupbench's stop handlers are in place: the kernel's SigCgt mask has SIGTERM
    (Python catches SIGINT from its own start, SIGTERM only once backupbench asks)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")), 0)
    return bool(mask & (1 << (signal.SIGTERM - 1)))


def wait_for_handlers(proc: subprocess.Popen, limit_s: float = 30.0) -> float:
    """Poll until `proc`'s handlers are in place; the seconds that took (from the call)."""
    started = time.monotonic()
    while not handlers_installed(proc.pid):
        if proc.poll() is not None or time.monotonic() - started > limit_s:
            raise RuntimeError(f"backupbench ended or never installed its handlers (exit {proc.returncode})")
        time.sleep(0.0005)
    return time.monotonic() - started


def _live_processes_naming(text: str, exclude: set[int]) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in exclude:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state = stat[stat.rfind(")") + 2:][:1]
        if text in cmdline and state != "Z":
            found.append(f"{entry} {cmdline[:80]}")
    return found


def _stored_status(results: Path) -> str | None:
    db = results / "results.db"
    if not db.exists():
        return None
    with closing(sqlite3.connect(db)) as conn:  # a stop while the store was made leaves no tables
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
            return None
        row = conn.execute("SELECT status FROM runs").fetchone()
    return row[0] if row else None


def run_trial(workload: Workload, sig: signal.Signals, delay: float, folder: Path,
              env: dict[str, str] | None = None, bucket: str | None = None, admin=None,
              after_handlers: bool = False) -> Outcome:
    """One trial in `folder` (made empty by the caller). For s3, `bucket` (not existing yet)
    and `admin` (tests' S3Admin) to count what is left. after_handlers: `delay` counts from the
    moment backupbench's handlers are in place, not from the start."""
    target = folder / "target"
    results = folder / "results"
    target.mkdir()
    args = ["run", *([str(target)] if workload.needs_target else []), *workload.args,
            *(("--bucket", bucket) if bucket else ()), "--quiet", "--results", str(results)]
    # A session of its own: a SIGINT goes to its whole group, as a terminal's Ctrl-C does.
    proc = start_cli(args, env=env, start_new_session=True, cwd=folder)
    handlers_s = wait_for_handlers(proc) if after_handlers else None
    time.sleep(delay)
    outcome = Outcome(workload.name, sig.name, delay, None, None, handlers_s=handlers_s)
    if proc.poll() is not None:
        outcome.finished_first = True
    elif sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C: the whole foreground group
    else:
        os.kill(proc.pid, sig)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=300)
    outcome.seconds_to_exit = time.monotonic() - sent
    outcome.returncode = proc.returncode
    outcome.stderr_tail = "\n".join(err.strip().splitlines()[-3:])
    mine = {os.getpid()}
    if sig == signal.SIGKILL:
        deadline = time.monotonic() + ORPHAN_GRACE_S
        while _live_processes_naming(str(folder), mine) and time.monotonic() < deadline:
            time.sleep(0.05)
        outcome.orphans = _live_processes_naming(str(folder), mine)
        cleanup = run_cli(["cleanup", "--results", str(results)], env=env)
        if cleanup.returncode != 0:
            outcome.stderr_tail += f"\ncleanup exit {cleanup.returncode}: {cleanup.stdout[-300:]}{cleanup.stderr[-300:]}"
    else:
        outcome.orphans = _live_processes_naming(str(folder), mine)
    outcome.status = _stored_status(results)
    outcome.run_folders = len(list((results / "runs").glob("*"))) if (results / "runs").is_dir() else 0
    outcome.leftovers = sorted(str(p.relative_to(target)) for p in target.rglob("*"))
    outcome.open_journals = sorted(p.name for p in (results / "journal").glob("*.open.jsonl"))
    if admin is not None and bucket is not None:
        outcome.bucket_left = admin.bucket_exists(bucket)
        if outcome.bucket_left:
            outcome.objects_left = len(admin.keys(bucket, "backupbench/"))
    return outcome


def uninterrupted_seconds(workload: Workload, folder: Path, env: dict[str, str] | None = None,
                          bucket: str | None = None) -> float:
    """How long the workload runs when nobody stops it (the window signals are sent in)."""
    target = folder / "target"
    target.mkdir(parents=True)
    args = ["run", *([str(target)] if workload.needs_target else []), *workload.args,
            *(("--bucket", bucket) if bucket else ()), "--quiet", "--results", str(folder / "results")]
    started = time.monotonic()
    done = run_cli(args, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the uninterrupted {workload.name} run failed: {done.stderr[-500:]}")
    return time.monotonic() - started
