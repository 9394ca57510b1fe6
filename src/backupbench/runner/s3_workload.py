"""The S3 workload: PUT, GET (and DELETE) phases of fixed-size objects against one bucket.

It has no directory target (`needs_directory = False`): the endpoint and bucket are in its
options. Order of events, each step refusing before the next touches anything:

1. check(): credentials resolved (options, --profile, environment, AWS_PROFILE/default);
   the endpoint probed within a few seconds (reachable, TLS, credentials accepted, bucket
   exists); a missing bucket refused unless create_bucket.
2. execute(): the run's prefix backupbench/<run_id>/ must be unused (else refused, and then
   nothing is ever deleted); the bucket is created if missing and allowed; then each phase
   runs through the S3Engine and reports its figures. GET reads the objects PUT wrote;
   DELETE removes every object PUT attempted.
3. cleanup() (every exit path once the prefix was found unused): every object under the
   prefix is deleted - nothing else - and a bucket this run created is removed if it is
   empty again. A bucket is never emptied.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping

from backupbench import process
from backupbench.engines.s3 import BINARY, PhaseRun, PhaseSpec, Probe, S3Engine, S3Target
from backupbench.engines.s3_credentials import DEFAULT_REGION, Credentials, resolve
from backupbench.engines.s3_records import attempted_keys, written_keys
from backupbench.errors import BackupbenchError, EngineError, RefusedError
from backupbench.runner import s3_artefacts
from backupbench.runner.workload import PhaseHooks
from backupbench.workloads.s3 import PHASE_TITLES, S3Options, run_prefix

log = logging.getLogger("backupbench.s3")


def key_set(numbers: set[int]) -> tuple[int, tuple[int, ...]]:
    """The load generator's form of a set of object numbers: a count and the gaps in 0..count-1."""
    if not numbers:
        return 0, ()
    count = max(numbers) + 1
    return count, tuple(n for n in range(count) if n not in numbers)


class S3Workload:
    kind = "s3"
    buffered = False
    needs_directory = False
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
        # The layout whose MinIO serves the endpoint ("" for a user's endpoint): the run's
        # objects then go with that layout's drives.
        self.served_by = ""

    @property
    def target_label(self) -> str:
        return f"{self.options.endpoint}/{self.options.bucket}"

    def settings(self) -> dict[str, Any]:
        """Stored with the run: the options (never the keys) and the derived amounts."""
        return {**self.options.model_dump(mode="json"), "object_count": self.options.object_count,
                "key_prefix": "backupbench/<run_id>/", "engine": BINARY}

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
                request_timeout=opts.request_timeout, connect_timeout=opts.connect_timeout)
        return self._target, self._creds

    def check(self, target: Path | None = None) -> None:
        _ = self.engine.binary  # ToolMissingError first: nothing else can work without it
        s3, creds = self.connect()
        probe = self.engine.probe(s3, creds)
        if not probe.bucket_exists and not self.options.create_bucket:
            raise RefusedError(f"bucket {s3.bucket} does not exist at {s3.endpoint}",
                               "create it, or pass --create-bucket to let backupbench create it and "
                               "remove it afterwards")
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
        probe = self.engine.probe(s3, creds, prefix)
        if probe.bucket_exists and probe.prefix_empty is False:
            raise RefusedError(f"bucket {s3.bucket} already holds objects under {prefix}; they are not this "
                               "run's and will not be touched", "use another run id")
        if not probe.bucket_exists:
            if not self.options.create_bucket:
                raise RefusedError(f"bucket {s3.bucket} does not exist at {s3.endpoint}",
                                   "create it, or pass --create-bucket")
            self._bucket_id = hooks.will_create(s3_artefacts.bucket(s3, self.options.profile, creds.source,
                                                                    self.served_by))
            self._created_bucket = self.engine.create_bucket(s3, creds)
            if not self._created_bucket:
                hooks.removed(self._bucket_id, "not ours: it was there already")
        # From here on everything under the prefix is this run's: cleanup deletes it.
        self._objects_id = hooks.will_create(s3_artefacts.objects(s3, prefix, self.options.profile, creds.source,
                                                                  self.served_by))
        self._prefix = prefix
        opts = self.options
        common = dict(prefix=prefix, object_size=opts.object_size, concurrency=opts.concurrency)
        put: PhaseRun | None = None
        commands: list[str] = []
        try:
            for op in opts.s3_phases:
                if op == "put":
                    spec = PhaseSpec("put", objects=opts.object_count or 0, duration_s=opts.duration or 0.0,
                                     **common)
                else:
                    assert put is not None  # S3Options: phases start with put
                    count, skip = key_set(written_keys(put.records) if op == "get" else attempted_keys(put.records))
                    if count == 0:
                        raise EngineError(f"no object was written, so there is nothing to {op}")
                    spec = PhaseSpec(op, objects=count, skip=skip,
                                     duration_s=(opts.duration or 0.0) if op == "get" else 0.0, **common)
                hooks.started(op, PHASE_TITLES[op], opts.pattern(op))
                commands.append(process.render(self.engine.argv(folder / f"{op}.config.json")))
                run = self.engine.run_phase(s3, creds, spec, folder,
                                            lambda fraction, detail, name=op: hooks.progress(name, fraction, detail))
                hooks.finished(op, run.figures, self._detail(run, s3, creds, probe))
                if op == "put":
                    put = run
                if run.figures["ops"] == 0 and run.errors:
                    kind, count = next(iter(run.errors.items()))
                    raise EngineError(f"every {op.upper()} request failed ({count:,} x {kind}; "
                                      f"records in {run.files['records']})")
        finally:
            (folder / "commands.txt").write_text("\n".join(commands) + "\n")

    def _detail(self, run: PhaseRun, s3: S3Target, creds: Credentials, probe: Probe) -> dict[str, Any]:
        return {"errors_by_kind": run.errors, **run.files, "endpoint": s3.endpoint, "bucket": s3.bucket,
                "region": s3.region, "prefix": self._prefix, "credentials_from": creds.source,
                "bucket_was_empty": probe.bucket_empty, "bucket_created": self._created_bucket,
                "object_size": self.options.object_size, "concurrency": self.options.concurrency}

    def cleanup(self, target: Path | None, run_id: str, hooks: PhaseHooks) -> None:
        """Delete the run's objects (its prefix only) and a bucket it created, if empty."""
        prefix, self._prefix = self._prefix, None
        if prefix is None or self._target is None or self._creds is None:
            return
        try:
            self.engine.delete_prefix(self._target, self._creds, prefix)
            hooks.removed(self._objects_id)
        except BackupbenchError as exc:
            failure = self._failure
            before = f" (after: {failure.one_line()})" if isinstance(failure, BackupbenchError) else ""
            raise EngineError(f"objects of this run may be left under {prefix} in bucket {self._target.bucket}: "
                              f"{exc.one_line()}{before}",
                              f"delete the prefix {prefix} with any S3 client; nothing else is this run's") from exc
        if self._created_bucket:
            try:
                self.engine.delete_bucket(self._target, self._creds)
                hooks.removed(self._bucket_id)
            except BackupbenchError as exc:  # e.g. BucketNotEmpty: someone else wrote to it meanwhile
                log.warning("bucket %s created by this run was kept: %s", self._target.bucket, exc.one_line())
                hooks.removed(self._bucket_id, f"kept: {exc.one_line()}")
            self._created_bucket = False


def workload(options: S3Options, engine: S3Engine | None = None) -> S3Workload:
    return S3Workload(options, engine)
