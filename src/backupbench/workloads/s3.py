"""The S3 object workload of field note D, whole: PUT then GET (then DELETE) of many objects
by many streams through the native load generator, its figures, its artefacts, and the
adapter to the pipeline. The options and naming rules are in s3_options.py.

It has no directory target (`needs_directory = False`): the endpoint and bucket are in its
options. Order of events, each step refusing before the next touches anything:

1. check(): credentials resolved (options, --profile, environment, AWS_PROFILE/default);
   the endpoint probed within a few seconds (reachable, TLS, credentials accepted, bucket
   exists, and has object lock when the run locks); a missing bucket refused unless
   create_bucket; a compliance run says what it will leave behind.
2. execute(): the run's prefix backupbench/<run_id>/ must be unused (else refused, and then
   nothing is ever deleted); the bucket is created if missing and allowed; then each phase
   runs through the S3Engine and reports its figures. GET reads the objects PUT wrote;
   DELETE removes every object PUT attempted.
3. cleanup() (every exit path once the prefix was found unused): every object under the
   prefix is deleted - nothing else; with a lock every version of them, governance
   bypassed - and a bucket this run created is removed if it is empty again. A bucket is
   never emptied. Versions under compliance retention stay, and with them the bucket (s3_lock.py).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import Field, SecretStr, field_validator

from backupbench import process
from backupbench.artefacts import FAILED, GONE, NOT_OURS, REMOVED, Artefact, Outcome
from backupbench.engines.s3 import BINARY, PhaseRun, Probe, Removal, S3Engine, S3Target
from backupbench.engines.s3_credentials import DEFAULT_REGION, Credentials, resolve
from backupbench.engines.s3_hints import hint_for, phase_lines
from backupbench.errors import BackupbenchError, EngineError, RefusedError, S3Error
from backupbench.workloads.base import Definition, RepeatKey, PhaseHooks, ServedBy, narrowed
from backupbench.workloads import s3_lock
from backupbench.workloads.capabilities import Capabilities
from backupbench.workloads.phase_kinds import S3, PhaseKinds
from backupbench.workloads.s3_options import PHASE_TITLES, S3Options, normalise_endpoint, run_prefix
from backupbench.workloads.s3_phase import PutKeys, content_seed, phase_spec

log = logging.getLogger("backupbench.s3")


class S3Workload:
    kind = "s3"
    needs_directory = False  # the target is an endpoint and a bucket
    buffered = False
    test_file_cautions = False
    space_fix = ""

    def __init__(self, options: S3Options, engine: S3Engine | None = None,
                 environ: Mapping[str, str] | None = None, home: Path | None = None):
        self.options = options
        self.engine = engine or S3Engine()
        self._environ = environ if environ is not None else os.environ
        self._home = home if home is not None else Path.home()
        self._creds: Credentials | None = None
        self._target: S3Target | None = None
        self._probe: Probe | None = None
        self._prefix: str | None = None  # set once the prefix is known to be ours
        self._created_bucket = False
        self._failure: BaseException | None = None
        self._bucket_id: int | None = None
        self._objects_id: int | None = None
        self._folder: Path | None = None
        # The layout whose MinIO serves the endpoint ("" for a user's endpoint): the run's
        # objects then go with that layout's drives.
        self.served_by = ""

    def target_label(self, target: Path | None) -> str:
        return f"{self.options.endpoint}/{self.options.bucket}"

    def engine_versions(self) -> dict[str, str]:
        return {"s3load": self.engine.version()}

    def phases(self) -> tuple[str, ...]:
        return self.options.s3_phases

    def settings(self) -> dict[str, Any]:
        """Stored with the run: the options (never the keys) and the derived amounts."""
        return {**self.options.model_dump(mode="json"), "object_count": self.options.object_count,
                "key_prefix": "backupbench/<run_id>/", "engine": BINARY}

    @property
    def locked(self) -> bool:
        return self.options.object_lock is not None

    def space_needed(self) -> int:
        return self.options.data_bytes or 0

    # ---- refusal -----------------------------------------------------------------------
    def connect(self) -> tuple[S3Target, Credentials]:
        """Resolve credentials and region (no network)."""
        if self._target is None or self._creds is None:
            opts = self.options
            creds, suggested_region = resolve(opts.access_key, opts.secret_key, opts.profile, self._environ,
                                              self._home)
            self._creds = creds
            self._target = S3Target(
                endpoint=opts.endpoint, bucket=opts.bucket,
                region=opts.region or suggested_region or DEFAULT_REGION,
                insecure_tls=opts.insecure_tls, ca_file=opts.ca_file,
                request_timeout=opts.request_timeout, connect_timeout=opts.connect_timeout,
                max_attempts=opts.max_attempts)
        return self._target, self._creds

    def check(self, target: Path | None = None) -> None:
        _ = self.engine.binary  # ToolMissingError first: nothing else can work without it
        s3, creds = self.connect()
        probe = self.engine.probe(s3, creds, object_lock=self.locked)
        if not probe.bucket_exists and not self.options.create_bucket:
            raise RefusedError(f"bucket {s3.bucket} does not exist at {s3.endpoint}",
                               "create it, or pass --create-bucket to let backupbench create it and "
                               "remove it afterwards")
        if self.locked and probe.bucket_exists and not probe.object_lock:
            raise s3_lock.refuse_unlocked_bucket(s3.bucket, s3.endpoint)
        s3_lock.warn_before(self.options, s3.bucket)
        self._probe = probe

    # ---- the run ------------------------------------------------------------------------
    def execute(self, target: Path | None, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        try:
            self._execute(folder, run_id, hooks)
        except BaseException as exc:
            self._failure = exc
            raise

    def _execute(self, folder: Path, run_id: str, hooks: PhaseHooks) -> None:
        s3, creds = self.connect()
        prefix = run_prefix(run_id)
        probe = self._claim(s3, creds, prefix, run_id, hooks)
        self._folder = folder
        opts = self.options
        objects = opts.object_plan(content_seed(run_id))
        put = PutKeys()
        commands: list[str] = []
        try:
            for op in opts.s3_phases:
                if op == "lock-check":  # S3Options: phases start with put
                    self._lock_check(s3, creds, prefix, set(put.written), objects.seed, hooks)
                    continue
                spec = phase_spec(op, prefix, objects, opts.concurrency, opts.object_count or 0, opts.duration or 0.0,
                                  put)
                hooks.started(op, PHASE_TITLES[op], opts.describe(op))
                commands.append(process.render(self.engine.argv(folder / f"{op}.config.json")))
                run = self.engine.run_phase(s3, creds, spec, folder,
                                            lambda fraction, detail, name=op: hooks.progress(name, fraction, detail))
                refused = run.figures["ops"] == 0 and bool(run.errors)
                hooks.finished(op, run.figures, self._detail(run, s3, creds, probe), failed=refused)
                if op == "put":
                    put = PutKeys.of(run)
                if refused:
                    kind, count = next(iter(run.errors.items()))
                    hint = hint_for(kind)
                    raise EngineError(f"every {op.upper()} request failed ({count:,} x {kind}"
                                      f"{': ' + hint.problem if hint else ''}; records in {run.files['records']})",
                                      hint.fix if hint else None)
                for line in phase_lines(op, run.errors, run.retried, len(run.records)):
                    log.warning("%s", line)
        finally:
            (folder / "commands.txt").write_text("\n".join(commands) + "\n")

    def _claim(self, s3: S3Target, creds: Credentials, prefix: str, run_id: str, hooks: PhaseHooks) -> Probe:
        """Refuse a prefix in use or a bucket that cannot lock; create the bucket if allowed;
        from the journal entry on, everything under the prefix is this run's."""
        probe = self.engine.probe(s3, creds, prefix, object_lock=self.locked)
        if probe.bucket_exists and probe.prefix_empty is False:
            raise RefusedError(f"bucket {s3.bucket} already holds objects under {prefix}; they are not this "
                               "run's and will not be touched", "use another run id")
        if probe.bucket_exists and self.locked and not probe.object_lock:
            raise s3_lock.refuse_unlocked_bucket(s3.bucket, s3.endpoint)
        if not probe.bucket_exists:
            if not self.options.create_bucket:
                raise RefusedError(f"bucket {s3.bucket} does not exist at {s3.endpoint}",
                                   "create it, or pass --create-bucket")
            self._bucket_id = hooks.will_create(bucket_artefact(s3, run_id, self.options.profile, creds.source,
                                                                self.served_by))
            self._created_bucket = self.engine.create_bucket(s3, creds, object_lock=self.locked)
            if not self._created_bucket:
                hooks.removed(self._bucket_id, "not ours: it was there already")
                if self.locked and not self.engine.probe(s3, creds, object_lock=True).object_lock:
                    raise s3_lock.refuse_unlocked_bucket(s3.bucket, s3.endpoint)
        self._objects_id = hooks.will_create(objects_artefact(s3, prefix, self.options.profile, creds.source,
                                                                  self.served_by, versions=self.locked))
        self._prefix = prefix
        return probe

    def _lock_check(self, s3: S3Target, creds: Credentials, prefix: str, written: set[int], seed: int,
                    hooks: PhaseHooks) -> None:
        keys = s3_lock.checked_keys(written)
        if not keys:
            raise EngineError("no object was written, so there is no lock to check")
        hooks.started("lock-check", PHASE_TITLES["lock-check"], self.options.describe("lock-check", len(keys)))
        began = time.monotonic()
        event = self.engine.lock_check(s3, creds, prefix, keys, self.options.object_lock or "", seed)
        figures = s3_lock.check_figures(event, time.monotonic() - began)
        hooks.progress("lock-check", 1.0, s3_lock.verdict(figures, list(event.get("notes") or [])))
        hooks.finished("lock-check", figures, {"objects": [int(k) for k in keys], "notes": event.get("notes") or [],
                                               "lock_mode": self.options.object_lock})

    def _detail(self, run: PhaseRun, s3: S3Target, creds: Credentials, probe: Probe) -> dict[str, Any]:
        return {"errors_by_kind": run.errors, "retried_by_kind": run.retried, **run.files, "endpoint": s3.endpoint,
                "bucket": s3.bucket, "region": s3.region, "prefix": self._prefix, "credentials_from": creds.source,
                "bucket_was_empty": probe.bucket_empty, "bucket_created": self._created_bucket,
                "object_size": self.options.object_size.as_value(), "concurrency": self.options.concurrency,
                "data": self.options.content().label, "object_lock": self.options.object_lock,
                "retention_s": self.options.retention}

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        """Delete the run's objects (its prefix only) and a bucket it created, if empty."""
        prefix, self._prefix = self._prefix, None
        if prefix is None or self._target is None or self._creds is None:
            return
        try:
            if self.locked:
                removal = self.engine.delete_versions(self._target, self._creds, prefix)
            else:
                removal = Removal(self.engine.delete_prefix(self._target, self._creds, prefix))
        except BackupbenchError as exc:
            failure = self._failure
            before = f" (after: {failure.one_line()})" if isinstance(failure, BackupbenchError) else ""
            raise EngineError(f"objects of this run may be left under {prefix} in bucket {self._target.bucket}: "
                              f"{exc.one_line()}{before}",
                              f"delete the prefix {prefix} with any S3 client; nothing else is this run's") from exc
        if removal.retained:
            line = s3_lock.left_behind(removal, self._target.bucket, prefix, self._folder)
            hooks.removed(self._objects_id, f"kept: {line}")
            if self._created_bucket:
                hooks.removed(self._bucket_id, "kept: it holds objects under compliance retention")
                self._created_bucket = False
            return
        hooks.removed(self._objects_id)
        if self._created_bucket:
            try:
                self.engine.delete_bucket(self._target, self._creds)
                hooks.removed(self._bucket_id)
            except BackupbenchError as exc:  # e.g. BucketNotEmpty: someone else wrote to it meanwhile
                log.warning("bucket %s created by this run was kept: %s", self._target.bucket, exc.one_line())
                hooks.removed(self._bucket_id, f"kept: {exc.one_line()}")
            self._created_bucket = False


def workload(options: S3Options, served: ServedBy | None = None) -> S3Workload:
    """A recipe entry without endpoint is served by its layout's own MinIO (`served`)."""
    on_layout_server = options.endpoint is None
    if on_layout_server:
        if served is None:
            raise RefusedError("an s3 workload without endpoint runs only on a layout served by MinIO")
        values = {name: getattr(options, name) for name in S3Options.model_fields}
        values.update(endpoint=served.endpoint, create_bucket=True, access_key=SecretStr(served.access_key),
                      secret_key=SecretStr(served.secret_key))
        options = S3Options.model_validate(values)
    found = S3Workload(narrowed(S3Options, options))
    # Only objects on the layout's own MinIO go with its drives; a named endpoint is the user's.
    found.served_by = served.layout if served is not None and on_layout_server else ""
    return found


# ---- artefacts: the journal never holds a secret. It records where the credentials came
# from (the environment, a profile name); `backupbench cleanup` takes them from there again.
# Keys given as options cannot be found again: cleanup then says to export them.

def _where(target: S3Target, profile: str | None, source: str, layout: str) -> Artefact:
    return {"endpoint": target.endpoint, "bucket": target.bucket, "region": target.region,
            "insecure_tls": target.insecure_tls, "ca_file": target.ca_file, "profile": profile,
            "credentials_from": source, "layout": layout}


def objects_artefact(target: S3Target, prefix: str, profile: str | None, source: str, layout: str = "",
                     versions: bool = False) -> Artefact:
    """layout: the layout whose MinIO holds them; they go with its drives. versions: a locked
    (versioned) bucket, where every version must go."""
    return {"kind": "s3-objects", "prefix": prefix, "versions": versions, **_where(target, profile, source, layout)}


def bucket_artefact(target: S3Target, run_id: str, profile: str | None, source: str, layout: str = "") -> Artefact:
    return {"kind": "s3-bucket", "tag": run_id, **_where(target, profile, source, layout)}


def _connect(artefact: Artefact, environ: Mapping[str, str] | None, home: Path | None):
    target = S3Target(endpoint=str(artefact["endpoint"]), bucket=str(artefact["bucket"]),
                      region=str(artefact.get("region") or "us-east-1"),
                      insecure_tls=bool(artefact.get("insecure_tls")), ca_file=artefact.get("ca_file"))
    if artefact.get("credentials_from") == "options":
        # Keys given as options were never written anywhere: look where the user can put them.
        profile = None
    else:
        profile = artefact.get("profile")
    creds, _ = resolve(None, None, profile, environ if environ is not None else os.environ,
                       home if home is not None else Path.home())
    return target, creds


def remove_objects(artefact: Artefact, run_id: str, environ: Mapping[str, str] | None = None,
                   home: Path | None = None) -> Outcome:
    if artefact.get("layout"):
        return Outcome(GONE, f"they went with layout {artefact['layout']}'s MinIO and its drives")
    prefix = str(artefact.get("prefix", ""))
    if prefix != run_prefix(run_id):
        return Outcome(NOT_OURS, f"{prefix!r} is not the prefix of run {run_id}")
    try:
        target, creds = _connect(artefact, environ, home)
        engine = S3Engine()
        removal = (engine.delete_versions(target, creds, prefix) if artefact.get("versions")
                   else Removal(engine.delete_prefix(target, creds, prefix)))
    except BackupbenchError as exc:
        return Outcome(FAILED, f"{exc.one_line()} (credentials were taken from {artefact.get('credentials_from')}; "
                               "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY and run backupbench cleanup again)")
    if removal.retained:
        # Left pending on purpose: a cleanup after the retain-until date removes them.
        return Outcome(FAILED, f"{len(removal.retained):,} object version(s) are under compliance retention until "
                               f"{removal.retained_until}; run backupbench cleanup after that")
    return Outcome(REMOVED, f"{removal.deleted:,} object(s) deleted")


def remove_bucket(artefact: Artefact, run_id: str, environ: Mapping[str, str] | None = None,
                  home: Path | None = None) -> Outcome:
    if artefact.get("layout"):
        return Outcome(GONE, f"it went with layout {artefact['layout']}'s MinIO and its drives")
    if artefact.get("tag") != run_id:
        return Outcome(NOT_OURS, f"it was not made by run {run_id}")
    try:
        target, creds = _connect(artefact, environ, home)
        S3Engine().delete_bucket(target, creds)
    except S3Error as exc:
        if exc.code == "NoSuchBucket":
            return Outcome(GONE, "already gone")
        if exc.code == "BucketNotEmpty":
            return Outcome(NOT_OURS, "it holds objects that are not this run's, so it is kept")
        return Outcome(FAILED, exc.one_line())
    except BackupbenchError as exc:
        return Outcome(FAILED, exc.one_line())
    return Outcome(REMOVED, "removed")


class S3Entry(S3Options, RepeatKey):
    """A recipe's `[[workload]] kind = "s3"` entry; without endpoint, the layout's MinIO."""

    kind: Literal["s3"]
    endpoint: str | None = Field(None, description="S3 endpoint; unset: the MinIO that the layout serves.")
    bucket: str = Field("backupbench", description="Bucket; created (and removed when empty) for a layout's MinIO.")

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else normalise_endpoint(value)


DEFINITION = Definition(
    name="s3",
    description="objects PUT then GET (then DELETE; or a mixed phase; with object lock, a lock check) by many "
                "streams against an S3 endpoint (field note D); needs --endpoint and --bucket, no PATH",
    options=S3Options, recipe_entry=S3Entry, build=workload, needs_directory=False,
    phases=lambda options: tuple(options.s3_phases), capabilities=Capabilities(agents=True), phase_kinds=PhaseKinds(S3),
    removers={"s3-objects": remove_objects, "s3-bucket": remove_bucket},
    served_by_layout=lambda entry: entry.endpoint is None, parallelism=("concurrency",),
)
