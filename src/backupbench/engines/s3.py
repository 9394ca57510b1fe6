"""The S3 engine: drives the native load generator `backupbench-s3load` (native/s3load, Go).

Why a native load generator. One Python process tops out near one core on GET: parsing HTTP,
copying 1 MiB bodies and timing each request costs more CPU than the server spends serving
it, so a Python client measures itself. Worker processes would scale, but each costs an
interpreter, and on a host shared with the server under test (a MinIO on the same box, or
a 2-core lab VM) every cycle the client burns is taken from the server. So the hot loop is a
small Go program (net/http and its own request loop timing each first byte, aws-sdk-go-v2's
SigV4 signer with UNSIGNED-PAYLOAD, no per-object copies, records kept in memory and written
after the phase) and Python does what Python is good at here: options, credentials, safety
checks, orchestration, parsing records and computing figures. bench/s3.py checks it keeps up
with a minio-go reference client.

Contract with the binary (see native/s3load/main.go):
- argv is `[binary, CONFIG.json]` only. The config holds no secret; credentials go in the
  child's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), so they
  never appear in argv, settings, the run folder or logs.
- events are JSON lines on stdout: progress, probe, done, error {kind, status, message}.
- a transient answer (429, 500, 502, 503, 504: SlowDown, InternalError) is retried up to
  max_attempts attempts in all, with the AWS SDKs' jittered exponential backoff; each record
  says how often its request was retried and after what, and phases count retried requests
  apart from the ones that succeeded and failed (native/s3load/retry.go).
- a measured phase writes `<phase>.ops.csv.gz` (see s3_records), keeps `<phase>.config.json`
  and `<phase>.events.jsonl` beside it in the run folder.
- every op that writes or deletes objects refuses any prefix but backupbench/<run-id>/.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from backupbench import process, units
from backupbench.engines.base import ProgressCallback, no_progress
from backupbench.engines.s3_credentials import Credentials
from backupbench.engines.s3_errors import Asking, error_for
from backupbench.engines.s3_records import (OpRecord, errors_by_kind, mixed_figures, multipart_objects, phase_figures,
                                           read_records, records_file, retried_by_kind)
from backupbench.errors import EngineError, Interrupted, ProcessTimeout, S3InputError
from backupbench.redaction import redact

BINARY = "backupbench-s3load"
# src/backupbench/engines/s3.py -> the project folder, where scripts/install-minio.sh builds into .tools/bin.
POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 10.0
EXIT_INTERRUPTED = 130


def find_tool(name: str, env_var: str | None = None) -> str:
    return process.project_tool(name, env_var)


@dataclass(frozen=True)
class S3Target:
    """Where requests go and how; no secrets."""

    endpoint: str
    bucket: str
    region: str = "us-east-1"
    insecure_tls: bool = False
    ca_file: str | None = None
    request_timeout: float = 60.0
    connect_timeout: float = 3.0
    # Attempts per request when the answer is transient (SlowDown, 503, 500): the AWS SDKs' 3.
    max_attempts: int = 3
    retry_base_s: float = 1.0   # the longest wait before the first retry; it doubles, to 20 s

    def config(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "bucket": self.bucket, "region": self.region,
                "insecure_tls": self.insecure_tls, "ca_file": self.ca_file or "",
                "request_timeout_s": self.request_timeout, "connect_timeout_s": self.connect_timeout,
                "max_attempts": self.max_attempts, "retry_base_s": self.retry_base_s}

    @property
    def probe_timeout(self) -> float:
        """Bound on one pre-flight request: a connect, then an answer."""
        return min(self.request_timeout, 2 * self.connect_timeout + 2.0)


@dataclass(frozen=True)
class PhaseSpec:
    """What one measured phase does: objects 0..objects-1 minus skip, or (put/get) for duration_s."""

    op: str
    prefix: str
    object_size: int
    concurrency: int
    objects: int = 0
    duration_s: float = 0.0
    skip: tuple[int, ...] = ()
    # What the objects hold, their size range, multipart, lock, mix (native/s3load Config).
    objects_config: dict[str, Any] = field(default_factory=dict)

    def config(self) -> dict[str, Any]:
        return {**self.objects_config, "op": self.op, "prefix": self.prefix, "object_size": self.object_size,
                "concurrency": self.concurrency, "objects": self.objects, "duration_s": self.duration_s,
                "skip": list(self.skip)}


@dataclass(frozen=True)
class Removal:
    """What removing a run's objects did: versions under compliance retention are left."""

    deleted: int
    retained: list[dict[str, str]] = field(default_factory=list)  # key, version, until

    @property
    def retained_until(self) -> str:
        return max((r["until"] for r in self.retained), default="")


@dataclass(frozen=True)
class Probe:
    bucket_exists: bool
    bucket_empty: bool | None = None
    prefix_empty: bool | None = None
    seconds: float = 0.0
    object_lock: bool | None = None  # asked only when the run locks its objects


@dataclass
class PhaseRun:
    op: str
    records: list[OpRecord]
    figures: dict[str, float]
    errors: dict[str, int]
    files: dict[str, str] = field(default_factory=dict)  # role -> file name in the run folder
    interrupted: bool = False
    retried: dict[str, int] = field(default_factory=dict)  # requests retried, by the answer that made it
    # The phase's time 0 (records' start_ns are from it) by the wall clock, in seconds since the
    # epoch: the loader's own, after its process started and read its config; None: not said.
    started_wall: float | None = None


# ---- the engine --------------------------------------------------------------------------------

NO_SUCH_BUCKET_TRIES = 3
NO_SUCH_BUCKET_PAUSE_S = 2.0


class S3Engine:
    name = "s3"

    def __init__(self, binary: str | Path | None = None, poll_seconds: float = POLL_SECONDS,
                 stop_grace_seconds: float = STOP_GRACE_SECONDS,
                 on_start: Callable[[process.Background], None] | None = None):
        self._binary = str(binary) if binary is not None else None
        self.poll_seconds = poll_seconds
        self.stop_grace_seconds = stop_grace_seconds
        # Called with the load generator's process right after it starts (tests look at it).
        self.on_start = on_start

    @property
    def binary(self) -> str:
        if self._binary is None:
            self._binary = find_tool(BINARY, "BACKUPBENCH_S3LOAD")
        return self._binary

    def version(self) -> str:
        return process.run([self.binary, "--version"], timeout=10).stdout.strip()

    def argv(self, config_path: Path) -> list[str]:
        """The load generator's whole command line: no credentials, ever."""
        return [self.binary, str(config_path)]

    # ---- un-measured operations: bounded, typed errors ------------------------------------
    def _call(self, config: dict[str, Any], creds: Credentials, target: S3Target, doing: str,
              timeout: float, absent_ok: bool = False) -> dict[str, Any]:
        """The loader's last event; absent_ok: a NoSuchBucket answer is {"bucket_absent": True}."""
        with tempfile.TemporaryDirectory(prefix="backupbench-s3-") as tmp:
            config_path = Path(tmp) / "config.json"
            config_path.write_text(json.dumps(config))
            try:
                result = process.run(self.argv(config_path), timeout=timeout, check=False,
                                     env=creds.env(), secrets=creds.secrets())
            except ProcessTimeout:
                raise S3InputError(f"the S3 endpoint {target.endpoint} did not answer within {timeout:g} s "
                                   f"while {doing}", "check --endpoint and the network path", code="timeout") from None
        events = _events(result.stdout)
        if result.returncode == 0 and events:
            return events[-1]
        errors = [e for e in events if e.get("event") == "error"]
        if errors and absent_ok and errors[-1].get("kind") == "NoSuchBucket":
            return {"bucket_absent": True}
        if errors:
            event = {**errors[-1], "message": redact(str(errors[-1].get("message", "")), creds.secrets())}
            raise error_for(event, Asking(target.endpoint, target.bucket, doing, creds.source, target.connect_timeout,
                                          float(config.get("request_timeout_s") or target.request_timeout)))
        if result.returncode == EXIT_INTERRUPTED:
            raise Interrupted(f"interrupted while {doing}")
        tail = redact(result.stderr.strip(), creds.secrets()).splitlines()[-1:] or ["no error output"]
        raise EngineError(f"{BINARY} failed while {doing} (exit {result.returncode}): {tail[0]}")

    def probe(self, target: S3Target, creds: Credentials, prefix: str = "", object_lock: bool = False) -> Probe:
        """Reachable? credentials accepted? bucket there, empty, our prefix unused, (object_lock)
        locking? Bounded in time."""
        config = {**target.config(), "op": "probe", "prefix": prefix, "object_lock": object_lock,
                  "request_timeout_s": target.probe_timeout}
        event = self._call(config, creds, target, "checking the endpoint", timeout=2 * target.probe_timeout + 5)
        return Probe(bool(event.get("bucket_exists")), event.get("bucket_empty"), event.get("prefix_empty"),
                     float(event.get("seconds", 0.0)), event.get("object_lock"))

    def create_bucket(self, target: S3Target, creds: Credentials, object_lock: bool = False) -> bool:
        """Create the bucket (with object lock enabled, and so versioned); False when it already
        existed (and is ours to use)."""
        event = self._call({**target.config(), "op": "create-bucket", "object_lock": object_lock}, creds, target,
                           f"creating bucket {target.bucket}", timeout=target.request_timeout + 5)
        return bool(event.get("created"))

    def lock_check(self, target: S3Target, creds: Credentials, prefix: str, keys: list[int], mode: str,
                   seed: int = 0) -> dict[str, Any]:
        """Try DELETE of each object's version, then overwrite and DELETE it again; counts of
        what the lock refused (see native/s3load/lock.go)."""
        config = {**target.config(), "op": "lock-check", "prefix": prefix, "keys": keys, "lock_mode": mode.upper(),
                  "retention_s": 1, "seed": seed, "object_size": 1, "concurrency": 1, "records": "-"}
        return self._call(config, creds, target, f"checking the lock of {len(keys)} objects",
                          timeout=len(keys) * 6 * target.request_timeout + 5)

    def delete_versions(self, target: S3Target, creds: Credentials, prefix: str, timeout: float = 3600.0) -> Removal:
        """Every version and delete marker under `prefix` (backupbench/<run-id>/ only), governance
        bypassed; versions under compliance retention are left and listed. Raises EngineError
        if anything else is left."""
        event = self._call({**target.config(), "op": "delete-prefix", "prefix": prefix, "versions": True}, creds,
                           target, f"removing every version under {prefix}", timeout=timeout)
        if event.get("left") or event.get("failed"):
            raise EngineError(f"{event.get('failed', 0)} object versions under {prefix} in bucket {target.bucket} "
                              "could not be deleted")
        return Removal(int(event.get("deleted", 0)), list(event.get("retained") or []))

    def delete_bucket(self, target: S3Target, creds: Credentials) -> None:
        """Delete the bucket; S3 itself refuses when it holds any object (BucketNotEmpty)."""
        self._call({**target.config(), "op": "delete-bucket"}, creds, target,
                   f"removing bucket {target.bucket}", timeout=target.request_timeout + 5)

    def delete_prefix(self, target: S3Target, creds: Credentials, prefix: str, timeout: float = 3600.0) -> int:
        """Delete every object under `prefix` (backupbench/<run-id>/ only); returns how many.
        Raises EngineError if some are left. A bucket that does not exist holds nothing of ours;
        but a MinIO missing a drive has answered NoSuchBucket for a moment (seen once in a fault
        run), so that answer is believed only when it is given three times."""
        for attempt in range(NO_SUCH_BUCKET_TRIES):
            event = self._call({**target.config(), "op": "delete-prefix", "prefix": prefix}, creds, target,
                               f"removing the objects under {prefix}", timeout=timeout, absent_ok=True)
            if not event.get("bucket_absent"):
                break
            if attempt + 1 < NO_SUCH_BUCKET_TRIES:
                time.sleep(NO_SUCH_BUCKET_PAUSE_S)
        else:
            return 0
        if event.get("left") or event.get("failed"):
            raise EngineError(f"{event.get('failed', 0)} objects under {prefix} in bucket {target.bucket} "
                              "could not be deleted")
        return int(event.get("deleted", 0))

    # ---- a measured phase -----------------------------------------------------------------
    def run_phase(self, target: S3Target, creds: Credentials, spec: PhaseSpec, folder: Path,
                  on_progress: ProgressCallback = no_progress) -> PhaseRun:
        op = spec.op
        files = {"config": f"{op}.config.json", "events": f"{op}.events.jsonl", "records": records_file(op)}
        config = {**target.config(), **spec.config(), "records": str(folder / files["records"]),
                  "progress_interval_s": min(0.5, max(self.poll_seconds, 0.05))}
        (folder / files["config"]).write_text(json.dumps(config, indent=2) + "\n")
        events_path = folder / files["events"]
        reader = _EventReader(events_path)
        child = process.Background(self.argv(folder / files["config"]), stdout_path=events_path,
                                   env=creds.env(), secrets=creds.secrets())
        try:
            if self.on_start is not None:
                self.on_start(child)
            on_progress(0.0, "")
            last: tuple[float, int, int] | None = None
            events: list[dict[str, Any]] = []
            while child.running():
                time.sleep(self.poll_seconds)
                for event in reader.new():
                    events.append(event)
                    if event.get("event") == "progress":
                        last = self._report(event, spec, last, on_progress)
            result = child.wait()
        except BaseException:
            child.stop(self.stop_grace_seconds)
            raise
        events += reader.new(final=True)
        done = [e for e in events if e.get("event") == "done"]
        if result.returncode not in (0, EXIT_INTERRUPTED) or not done:
            tail = redact(result.stderr.strip(), creds.secrets()).splitlines()[-1:] or ["no error output"]
            raise EngineError(f"{BINARY} failed in phase {op} (exit {result.returncode}): {tail[0]}")
        records = read_records(folder / files["records"])
        figures = mixed_figures(records) if op == "mixed" else phase_figures(records, op)
        threshold = int(spec.objects_config.get("multipart_threshold") or 0)
        if op in ("put", "mixed") and threshold:
            figures["multipart_objects"] = float(multipart_objects(records, threshold))
        run = PhaseRun(op, records, figures, errors_by_kind(records), files,
                       interrupted=bool(done[-1].get("interrupted")), started_wall=_start_wall(done[-1]),
                       retried=retried_by_kind(records))
        if run.interrupted:
            raise Interrupted(f"interrupted during phase {op}")
        on_progress(1.0, _rate_text(run.figures["effective_bw"], run.figures["objects_per_s"],
                                    int(run.figures["errors"]), int(run.figures["retried"])))
        return run

    @staticmethod
    def _report(event: dict[str, Any], spec: PhaseSpec, last: tuple[float, int, int] | None,
                on_progress: ProgressCallback) -> tuple[float, int, int]:
        elapsed = float(event.get("elapsed_s", 0.0))
        ops, moved, errors = int(event.get("ops", 0)), int(event.get("bytes", 0)), int(event.get("errors", 0))
        total = spec.objects - len(spec.skip) if spec.duration_s <= 0 or spec.op == "delete" else 0
        fraction = (ops + errors) / total if total > 0 else elapsed / spec.duration_s if spec.duration_s else 0.0
        if last is not None and elapsed > last[0]:
            span = elapsed - last[0]
            bw, rate = (moved - last[2]) / span, (ops - last[1]) / span
        else:
            bw, rate = (moved / elapsed, ops / elapsed) if elapsed > 0 else (0.0, 0.0)
        on_progress(min(0.99, max(0.0, fraction)), _rate_text(bw, rate, errors, int(event.get("retried", 0))))
        return elapsed, ops, moved


def _start_wall(done: dict[str, Any]) -> float | None:
    value = done.get("start_unix_ns")
    return int(value) / 1e9 if isinstance(value, int) and value > 0 else None


def _rate_text(bw: float, objects_per_s: float, errors: int, retried: int = 0) -> str:
    text = f"{bw / units.MiB:,.1f} MiB/s, {objects_per_s:,.0f} objects/s"
    return text + (f", {errors:,} errors" if errors else "") + (f", {retried:,} retried" if retried else "")


def _events(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


class _EventReader:
    """Reads the JSON lines a running child appends to a file, whole lines only."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0

    def new(self, final: bool = False) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        if not final:
            cut = data.rfind(b"\n") + 1
            data = data[:cut]
        self.offset += len(data)
        return _events(data.decode(errors="replace"))
