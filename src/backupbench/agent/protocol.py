"""What an agent accepts, as pydantic models, and the wire form of what it answers (pure).

Every request is one JSON object POSTed to API_PATH, naming its `kind`. There are six kinds
and no others: an agent that understood more would be a remote shell in waiting.

- hello            {version}                      -> the agent's version and its host's facts
- monitor          {since}                        -> the 1 s samples with a sequence number > since,
                                                     and the feed's instance id (new at each agent
                                                     start: numbers begin again at 1)
- smallfiles-run   {run_id, subfolder, files, ...} -> {job_id}: the small-file engine under ROOT/subfolder
- s3-run           {endpoint, bucket, prefix, ops, objects, seed, ..., access_key, secret_key}
                                                  -> {job_id}: the S3 load generator, phase by phase;
                                                     keep/resume split the phases over several jobs
                                                     (so a controller can start each phase on N
                                                     agents at once), start_in delays the first
- status           {job_id}                       -> the job's state, progress and, once done, its figures
- stop             {job_id}                       -> the job is asked to stop (the engine cleans up)

Every model forbids extra keys and coerces nothing (strict): a key the agent does not know
is a mistake or a probe, and either way the answer is 400 and one line. A subfolder is
checked here for its form (relative, no '..', no hidden or odd names); that it does not
reach out of the root through a symlink is checked where the file system is, in runs.py.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from array import array
from dataclasses import asdict
from typing import Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, SecretStr, TypeAdapter, ValidationError, ValidationInfo,
                      field_validator, model_validator)

from backupbench import units
from backupbench.artefacts import TAG
from backupbench.engines.content import DEFAULT_PATTERN, DataContent, DataKind
from backupbench.engines.smallfiles_job import FLUSH_POLICIES, SmallFilesJob
from backupbench.errors import InputError
from backupbench.schema import key_error
from backupbench.workloads.content_options import ContentOptions
from backupbench.workloads.s3_options import MIN_PART

API_PATH = "/v1"
PROTOCOL_VERSION = 1
# Requests are small JSON objects; 1 MiB leaves room for any real one and bounds a hostile one.
MAX_BODY_BYTES = 1 * units.MiB
# What one monitor answer carries at most (10 minutes of samples): the rest on the next call.
MAX_SAMPLES_PER_ANSWER = 600

# Every pattern is matched against the whole value (re.fullmatch): `$` would also match before
# a final newline, and "name\n" would pass.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# One component of a subfolder: starts with a letter or digit, so never '.', '..' or hidden.
_PART = _ID
# The load generator writes and deletes only under backupbench/<run-id>/ or, for one agent of
# a run from several hosts, backupbench/<run-id>/<label>/ (native/s3load prefixRe): the run's
# own prefix then covers every agent's objects, so one journal entry can remove them all.
_PREFIX = re.compile(re.escape(TAG) + r"/[A-Za-z0-9][A-Za-z0-9._-]{0,99}/(?:[A-Za-z0-9][A-Za-z0-9._-]{0,99}/)?")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_REGION = re.compile(r"[a-z0-9-]{1,40}")
_ENDPOINT = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?/?")


def _whole(pattern: re.Pattern[str], says: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"must be {says}")
        return value
    return AfterValidator(check)


JobId = Annotated[str, _whole(_ID, "letters, digits, '.', '_', '-' (1 to 100, starting with a letter or digit)")]
Prefix = Annotated[str, _whole(_PREFIX, "backupbench/<run-id>/ or backupbench/<run-id>/<label>/")]
Bucket = Annotated[str, _whole(_BUCKET, "a bucket name (3 to 63 lower-case letters, digits, '.', '-')")]
Region = Annotated[str, _whole(_REGION, "a region name (lower-case letters, digits, '-')")]


class ProtocolError(InputError):
    """A request the agent will not take: unknown kind, extra key, bad value, bad path."""


class _Request(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, strict=True)


class Hello(_Request):
    kind: Literal["hello"]
    version: str = Field(max_length=40)


class Monitor(_Request):
    kind: Literal["monitor"]
    since: int = Field(0, ge=0)


def check_subfolder(value: str) -> str:
    """A relative path of plain names: no absolute path, no '..', no '.', no empty part."""
    if not value or len(value) > 255:
        raise ValueError("must be 1 to 255 characters")
    if value.startswith("/"):
        raise ValueError("must be relative to the agent's root, not absolute")
    for part in value.split("/"):
        if part == "..":
            raise ValueError("must not contain '..'")
        if not _PART.fullmatch(part):
            raise ValueError(f"part {part!r} is not a plain name (letters, digits, '.', '_', '-'; "
                             "not starting with '.')")
    return value


class _Content(_Request):
    """The keys of workloads/content_options.ContentOptions as a controller sends them (JSON
    numbers, nothing coerced), held to its bounds and rules: checked by making one."""

    data: DataKind = "pattern"
    compress: int = 0
    dedupe: int = 0
    # A byte always: controllers send their content's byte whatever the kind (s3_phase.ObjectPlan).
    pattern: int = Field(DEFAULT_PATTERN, ge=0, le=255)

    @model_validator(mode="after")
    def _as_content_options(self) -> "_Content":
        # The byte is ContentOptions' `pattern` only with data = "pattern"; it refuses one beside
        # another kind, which every controller sends.
        values = {"data": self.data, "compress": self.compress, "dedupe": self.dedupe,
                  "pattern": self.pattern if self.data == "pattern" else None}
        try:
            ContentOptions.model_validate(values)
        except ValidationError as exc:
            error = exc.errors(include_input=False)[0]
            key = str(error["loc"][0]) if error["loc"] else "data"
            raise key_error(key, str(error["msg"]).removeprefix("Value error, "), values.get(key)) from None
        return self

    def content(self) -> DataContent:
        return DataContent(self.data, self.compress, self.dedupe, self.pattern)


class SmallFilesRun(_Content):
    kind: Literal["smallfiles-run"]
    run_id: JobId
    subfolder: str
    files: int = Field(ge=1, le=10_000_000)
    file_size: int = Field(ge=1, le=64 * units.MiB)
    folders: int = Field(1, ge=1, le=100_000)
    patterns: tuple[Annotated[int, Field(ge=0, le=255)], ...] = Field((0xAA,), min_length=1, max_length=16)
    threads: int = Field(1, ge=1, le=64)
    flush: Literal[FLUSH_POLICIES] = "none"  # type: ignore[valid-type]
    verify: bool = False

    @field_validator("subfolder")
    @classmethod
    def _subfolder(cls, value: str) -> str:
        return check_subfolder(value)

    def job(self) -> SmallFilesJob:
        return SmallFilesJob(files=self.files, file_size=self.file_size, folders=self.folders,
                             patterns=self.patterns, threads=self.threads, flush=self.flush,
                             verify=self.verify, content=self.content())


S3Op = Literal["put", "get", "mixed", "delete"]
MixOp = Literal["put", "get", "list", "delete"]


class S3Run(_Content):
    kind: Literal["s3-run"]
    endpoint: str = Field(max_length=300)
    bucket: Bucket
    region: Region = "us-east-1"
    prefix: Prefix
    # resume: the job works on a prefix this agent kept (see keep below), so its ops need not
    # start with put; any other prefix is refused. Declared before ops, which it governs.
    resume: bool = False
    ops: tuple[S3Op, ...] = Field(("put", "get"), min_length=1, max_length=4)
    objects: int = Field(ge=1, le=1_000_000)
    object_size: int = Field(ge=1, le=5 * units.GiB)
    # Objects over the threshold go up in parts of part_size (0: never in parts).
    multipart_threshold: int = Field(0, ge=0, le=5 * units.GiB)
    part_size: int = Field(0, ge=0, le=5 * units.GiB)
    # The mixed phase's shares of requests (empty: the loader's default).
    mix: dict[MixOp, Annotated[int, Field(ge=0, le=1_000_000)]] = Field(default_factory=dict, max_length=4,
                                                                        validate_default=True)
    concurrency: int = Field(8, ge=1, le=256)
    request_timeout: float = Field(60.0, gt=0, le=600)
    connect_timeout: float = Field(3.0, gt=0, le=60)
    # The credentials stay SecretStr from here on: never in a repr, a log line or an answer.
    access_key: SecretStr = Field(min_length=1, max_length=256)
    secret_key: SecretStr = Field(min_length=1, max_length=256)
    session_token: SecretStr | None = Field(None, max_length=4096)
    data: DataKind = "incompressible"
    # The seed of the objects' bytes (workloads/s3_phase.content_seed): the controller sends one
    # per run and agent, so no two agents and no two runs write the same data.
    seed: int = Field(ge=0, le=2**63 - 1)
    # A controller running N agents starts each phase on all of them at once: every agent
    # gets the request, does its pre-flight checks, then starts at the same moment.
    start_in: float = Field(0.0, ge=0, le=60)
    # keep: the objects stay after the job (for a later job's phases), and are deleted by the
    # agent if no resume comes within keep_s.
    keep: bool = False
    keep_s: float = Field(600.0, gt=0, le=86_400)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        if not _ENDPOINT.fullmatch(value):
            raise ValueError("must be http(s)://HOST[:PORT] (no path, query or user)")
        return value.rstrip("/")

    @field_validator("ops")
    @classmethod
    def _ops(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        # Only a resumed job finds objects already there; a fresh one must write them first.
        resume = bool(info.data.get("resume"))
        if len(set(value)) != len(value) or (value[0] == "put") == resume or "put" in value[1:]:
            raise ValueError("must name each op once and start with put (a resumed job: without put)")
        if "delete" in value and value[-1] != "delete":
            raise ValueError("delete must be the last op")
        return value


    @field_validator("part_size")
    @classmethod
    def _part_size(cls, value: int, info: ValidationInfo) -> int:
        if info.data.get("multipart_threshold") and value < MIN_PART:
            raise ValueError(f"must be at least {MIN_PART:,} bytes (S3's smallest part) with a multipart_threshold")
        return value

    @field_validator("mix")
    @classmethod
    def _mix(cls, value: dict[str, int], info: ValidationInfo) -> dict[str, int]:
        if "mixed" in (info.data.get("ops") or ()) and sum(value.values()) <= 0:
            raise ValueError("must give the mixed phase's shares (put, get, list, delete), adding up to more than 0")
        return value


class Status(_Request):
    kind: Literal["status"]
    job_id: JobId


class Stop(_Request):
    kind: Literal["stop"]
    job_id: JobId


Request = Annotated[Union[Hello, Monitor, SmallFilesRun, S3Run, Status, Stop], Field(discriminator="kind")]
KINDS = ("hello", "monitor", "smallfiles-run", "s3-run", "status", "stop")
_ADAPTER: TypeAdapter = TypeAdapter(Request)


def _where(loc: tuple) -> str:
    # pydantic puts the union's tag first: ('s3-run', 'bucket') -> 'bucket'.
    parts = [str(p) for p in loc[1:]] if loc and loc[0] in KINDS else [str(p) for p in loc]
    return ".".join(parts) or "kind"


def _line(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    where = _where(tuple(error.get("loc", ())))
    if kind == "extra_forbidden":
        return f"unknown key {where!r}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"kind must be one of {', '.join(KINDS)}"
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {message}"


def parse_request(body: bytes) -> Hello | Monitor | SmallFilesRun | S3Run | Status | Stop:
    """The request in `body`, or ProtocolError with one line saying why not. The message
    never quotes a value: a value may be a secret."""
    if len(body) > MAX_BODY_BYTES:
        raise ProtocolError(f"request body is over {MAX_BODY_BYTES:,} bytes")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise ProtocolError("request body is not JSON") from None
    if not isinstance(data, dict):
        raise ProtocolError("request body must be a JSON object")
    try:
        # JSON mode: strict, yet a JSON array is a tuple.
        return _ADAPTER.validate_json(body)
    except ValidationError as exc:
        raise ProtocolError(_line(exc.errors(include_input=False)[0])) from None


# ---- answers ------------------------------------------------------------------------------------

def sample_dict(seq: int, sample: Any) -> dict[str, Any]:
    """One monitor.rates.Sample as JSON-ready data, with its sequence number."""
    return {"seq": seq, "wall": sample.wall, "elapsed_s": sample.elapsed_s, "interval_s": sample.interval_s,
            "cpu": asdict(sample.cpu) if sample.cpu is not None else None,
            "memory": asdict(sample.memory) if sample.memory is not None else None,
            "load": asdict(sample.load) if sample.load is not None else None,
            "disks": {name: asdict(rates) for name, rates in sample.disks.items()}}


def error_body(message: str) -> dict[str, str]:
    return {"error": message.splitlines()[0] if message else "error"}


def pack_sorted(values: list[int]) -> str:
    """Sorted non-negative integers (per-request latencies in ns) in a compact text form: the
    gaps between them, zlib-compressed, base64. A 100,000-request phase takes ~100 KB instead of
    ~1.2 MB of JSON, and a controller can merge the exact values of N agents (percentiles of
    the union, not averages of percentiles)."""
    gaps = array("Q", (b - a for a, b in zip([0, *values], values)))
    return base64.b64encode(zlib.compress(gaps.tobytes(), 6)).decode("ascii")


def unpack_sorted(text: str) -> list[int]:
    """pack_sorted's values again."""
    gaps = array("Q")
    gaps.frombytes(zlib.decompress(base64.b64decode(text)))
    values, total = [], 0
    for gap in gaps:
        total += gap
        values.append(total)
    return values
