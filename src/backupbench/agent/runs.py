"""What the agent's jobs run: the small-file engine under its root, the S3 load generator.

Paths: a subfolder arrives as plain names (protocol.check_subfolder); here it is resolved
with every symlink followed and must still be inside the root, then the missing folders are
made one by one, each checked again after it is made, and removed again at the end if the
agent made them (and they are empty). The engine itself works only in its own tagged folder
inside that, and removes it whatever happens.

S3: the agent claims its prefix only if the bucket exists and nothing is under it yet
(someone else's objects are never touched), runs the phases in order, and at the end deletes
every object under the prefix, also after a failure or a stop. Each phase is specified as the
run from one host specifies it (workloads/s3_phase.py), the objects' bytes from the seed the
controller sent for this agent and run. A job asked to `keep` them
(a controller splitting the phases over jobs, to start each phase on N agents at once)
leaves them only if it succeeded, and only for `keep_s`: a `resume` job for that prefix
takes them over, else a timer deletes them, so a controller that vanished leaves nothing.
Each phase's result carries its exact per-request latencies (protocol.pack_sorted).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backupbench.agent.jobs import Control
from backupbench.agent.protocol import S3Run, SmallFilesRun, pack_sorted
from backupbench.engines.s3 import PhaseRun, S3Engine, S3Target
from backupbench.engines.s3_credentials import Credentials
from backupbench.engines.s3_records import OpRecord
from backupbench.engines.smallfiles import SmallFilesEngine
from backupbench.results.latency import second_ended
from backupbench.errors import BackupbenchError, RefusedError
from backupbench.workloads.s3_phase import ObjectPlan, PutKeys, phase_spec


def _inside(root: Path, path: str) -> bool:
    return os.path.commonpath([str(root), path]) == str(root)


def check_inside(root: Path, subfolder: str) -> None:
    """Refuse a subfolder that resolves (symlinks followed) outside the root."""
    if not _inside(root, os.path.realpath(root / subfolder)):
        raise RefusedError(f"subfolder {subfolder!r} leads outside the agent's root (a symlink)",
                           "name a folder inside the root")


def place(root: Path, subfolder: str) -> tuple[Path, list[Path]]:
    """ROOT/subfolder, made if missing; refused if it resolves outside the root. Returns the
    folder and the folders made here (innermost last)."""
    check_inside(root, subfolder)
    made: list[Path] = []
    current = root
    try:
        for part in subfolder.split("/"):
            current = current / part
            if not os.path.lexists(current):
                os.mkdir(current, 0o755)
                made.append(current)
            # Checked after each step: a folder swapped for a symlink meanwhile is caught here.
            if not os.path.isdir(current) or not _inside(root, os.path.realpath(current)):
                raise RefusedError(f"subfolder {subfolder!r} leads outside the agent's root or is not a folder",
                                   "name a folder inside the root")
    except BaseException:
        unplace(made)
        raise
    return current, made


def unplace(made: list[Path]) -> None:
    for folder in reversed(made):
        try:
            os.rmdir(folder)   # only if empty: never a tree the agent did not fill itself
        except OSError:
            pass


def run_smallfiles(request: SmallFilesRun, root: Path, control: Control) -> dict[str, Any]:
    parent, made = place(root, request.subfolder)
    try:
        results = SmallFilesEngine().run(request.job(), parent, request.run_id, control.progress)
    finally:
        unplace(made)
    return {"phases": [r.as_dict() for r in results]}


def _credentials(request: S3Run) -> Credentials:
    return Credentials(request.access_key, request.secret_key, request.session_token, "the controller's request")


@dataclass
class _Kept:
    keys: PutKeys
    timer: threading.Timer


# Prefixes a job kept for a later job of the same controller, with what the PUT wrote.
_KEPT: dict[str, _Kept] = {}
_KEPT_LOCK = threading.Lock()


def _keep(request: S3Run, engine: S3Engine, target: S3Target, creds: Credentials, keys: PutKeys) -> None:
    def expire() -> None:
        with _KEPT_LOCK:
            if _KEPT.get(request.prefix) is not kept:
                return   # resumed meanwhile
            del _KEPT[request.prefix]
        try:
            engine.delete_prefix(target, creds, request.prefix, timeout=600.0)
        except BackupbenchError:
            pass   # the controller journalled the prefix: its cleanup can still remove them
    kept = _Kept(keys, threading.Timer(request.keep_s, expire))
    kept.timer.daemon = True
    with _KEPT_LOCK:
        _KEPT[request.prefix] = kept
    kept.timer.start()


def _resume(request: S3Run) -> PutKeys:
    with _KEPT_LOCK:
        kept = _KEPT.pop(request.prefix, None)
    if kept is None:
        raise RefusedError(f"no objects kept under {request.prefix} by an earlier job of this agent",
                           "resume only a prefix a job with keep left (within its keep_s)")
    kept.timer.cancel()
    return kept.keys


def _claim(request: S3Run, engine: S3Engine, target: S3Target, creds: Credentials) -> PutKeys:
    """The object numbers already under the prefix (a resumed job's PUT), after refusing
    a missing bucket or a prefix someone else uses."""
    probe = engine.probe(target, creds, request.prefix)
    if not probe.bucket_exists:
        raise RefusedError(f"bucket {request.bucket} does not exist at {request.endpoint}", "create it first")
    if request.resume:
        return _resume(request)
    if probe.prefix_empty is False:
        raise RefusedError(f"bucket {request.bucket} already holds objects under {request.prefix}; they are not "
                           "this job's and will not be touched", "use another run id in the prefix")
    return PutKeys()


def _wait_start(began: float, request: S3Run, control: Control) -> None:
    # In slices, through control.progress: a stop takes effect while waiting too.
    while (left := began + request.start_in - time.monotonic()) > 0:
        control.progress(request.ops[0], 0.0, f"starting in {left:.1f} s")
        time.sleep(min(left, 0.05))


def _latencies(records: list[OpRecord], op: str) -> dict[str, Any]:
    """The exact latencies of the successful requests (and a GET's times to first byte), packed,
    and again split by the second each request ended in ([t_s, packed]: t_s 1 is the first
    second of the loader's time), which the controller's latency over time is merged from."""
    ok = [r for r in records if r.ok]
    packed: dict[str, Any] = {"lat_ns": pack_sorted(sorted(r.end_ns - r.start_ns for r in ok))}
    seconds: dict[int, list[int]] = {}
    for r in ok:
        seconds.setdefault(second_ended(r.end_ns), []).append(r.end_ns - r.start_ns)
    packed["seconds"] = [[t, pack_sorted(sorted(values))] for t, values in sorted(seconds.items())]
    if op == "get":
        packed["ttfb_ns"] = pack_sorted(sorted(r.first_byte_ns - r.start_ns for r in ok if r.first_byte_ns >= 0))
    return packed


def _phase_result(op: str, run: PhaseRun, launched: float) -> dict[str, Any]:
    """started_wall is the phase's time 0, from which its records and runtime count: the
    loader's own start, not `launched` (before its process started), which is used only from
    a loader that does not say. So the controller lines up N agents' phases by the moment each
    began timing, and a slower process start on one agent is not counted as phase time.
    A mixed phase carries each request kind's latencies too ("kinds"), so the controller
    merges each kind's percentiles as exactly as the phase's."""
    started = run.started_wall if run.started_wall is not None else launched
    result = {"op": op, "figures": run.figures, "errors": run.errors, "started_wall": started,
              "launch_s": max(0.0, started - launched), **_latencies(run.records, op)}
    if op == "mixed":
        result["kinds"] = {kind: _latencies([r for r in run.records if r.op == kind], kind)
                           for kind in sorted({r.op for r in run.records})}
    return result


def run_s3(request: S3Run, control: Control, engine: S3Engine | None = None) -> dict[str, Any]:
    began = time.monotonic()
    engine = engine or S3Engine()
    target = S3Target(request.endpoint, request.bucket, request.region,
                      request_timeout=request.request_timeout, connect_timeout=request.connect_timeout)
    creds = _credentials(request)
    keys = _claim(request, engine, target, creds)
    phases: list[dict[str, Any]] = []
    removed: int | str = 0
    kept = False
    try:
        _wait_start(began, request, control)
        with tempfile.TemporaryDirectory(prefix="backupbench-agent-s3-") as tmp:
            objects = ObjectPlan.for_agent(request)
            for op in request.ops:
                # The same spec as the run from one host (workloads/s3_phase.py), with this agent's seed.
                spec = phase_spec(op, request.prefix, objects, request.concurrency, request.objects, put=keys)
                launched = time.time()
                run = engine.run_phase(target, creds, spec, Path(tmp),
                                       lambda fraction, detail, name=op: control.progress(name, fraction, detail))
                if op == "put":
                    keys = PutKeys.of(run)
                phases.append(_phase_result(op, run, launched))
        if request.keep:
            _keep(request, engine, target, creds, keys)
            kept = True
    finally:
        # Unless kept for a later job: the objects under the prefix go, they are this job's alone.
        if not kept:
            try:
                removed = engine.delete_prefix(target, creds, request.prefix, timeout=600.0)
            except BackupbenchError as exc:
                removed = f"not removed: {exc.one_line()}"
    return {"phases": phases, "removed": "kept" if kept else removed, "prefix": request.prefix}
