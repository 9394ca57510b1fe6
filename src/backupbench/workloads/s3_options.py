"""The S3 object workload of field note D: write many objects, read them back.

`concurrency` parallel streams PUT objects of `object_size` (1 MiB by default: backup tools
cut data into blocks of a few MB; a Veeam block size by name; or a range, sizes then uniform
in it), then GET them back, then (by default) DELETE them, each a measured phase whose name
("put", "get", "mixed", "lock-check", "delete") is the same in live output, records and the
store. The amount is a count of objects or, for PUT, GET and mixed, a duration. What the
bytes are is the shared content model (content_options.py: incompressible by default).
Objects over `multipart_threshold` go up in parts. With `object_lock` every PUT carries a
retention and a lock-check phase tries to delete and overwrite a few locked objects.

Safety is in the names: every object of a run is `backupbench/<run_id>/obj-<8 digits>`, and
nothing else is ever written, read or deleted; a bucket is never emptied. A missing bucket is
created only with `create_bucket`. Credentials are SecretStr fields excluded from every dump
(settings.json included).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, SecretStr, field_validator, model_validator

from backupbench import units
from backupbench.artefacts import TAG
from backupbench.redaction import redact_url, remember
from backupbench.schema import Count, Duration, Flag, Size, comma_list
from backupbench.workloads.content_options import ContentOptions
from backupbench.workloads.s3_phase import ObjectPlan
from backupbench.workloads.s3_values import DEFAULT_MIX, ObjectSize, SizeRange, check_mix, mix_text, parse_mix

Phase = Literal["put", "get", "mixed", "lock-check", "delete"]
ORDER: tuple[str, ...] = ("put", "get", "mixed", "lock-check", "delete")
PHASES: tuple[str, ...] = ("put", "get", "delete")
PHASE_TITLES = {
    "put": "PUT objects (write the backup)",
    "get": "GET objects (read it back: restore)",
    "mixed": "PUT, GET, LIST and DELETE mixed (a busy repository)",
    "lock-check": "DELETE and overwrite locked objects (must be refused)",
    "delete": "DELETE objects (retention)",
}
LockMode = Literal["governance", "compliance"]
# S3's limits: a single PUT up to 5 GiB, parts of 5 MiB to 5 GiB, at most 10,000 parts.
MAX_PUT = 5 * units.GiB
MIN_PART, MAX_PARTS = 5 * units.MiB, 10_000

# Objects written when neither `objects` nor `duration` is given: 2,000 x 1 MiB = ~2 GiB.
DEFAULT_OBJECTS = 2_000
KEY_DIGITS = 8

# Matched whole (fullmatch): `$` would also match before a final newline.
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IPV4_RE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def run_prefix(run_id: str) -> str:
    """The only key prefix a run writes, reads and deletes: 'backupbench/<run_id>/'."""
    if not RUN_ID_RE.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} cannot be part of an object key (letters, digits, '.', '_', '-')")
    return f"{TAG}/{run_id}/"


def object_key(run_id: str, number: int) -> str:
    """Key of object `number` of a run: 'backupbench/<run_id>/obj-00000042'.
    The load generator (native/s3load, keyName) names objects the same way."""
    if number < 0:
        raise ValueError("object numbers start at 0")
    return f"{run_prefix(run_id)}obj-{number:0{KEY_DIGITS}d}"


def check_bucket_name(name: str) -> str:
    """S3 bucket naming rules: 3-63 of a-z 0-9 . -, starting and ending with a letter or
    digit, no '..', not an IPv4 address."""
    if not _BUCKET_RE.fullmatch(name) or ".." in name or _IPV4_RE.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid S3 bucket name (3-63 characters: a-z, 0-9, '.', '-')")
    return name


def normalise_endpoint(url: str) -> str:
    """'http(s)://host[:port]' with no path; the scheme's default port is dropped, since the
    port must be written the same way in the request and in its signature. A URL carrying
    credentials is refused first, and no message quotes them."""
    text = url.strip()
    # Quoted without its userinfo, query or fragment, scheme or not: any may hold a secret.
    shown = repr(redact_url(text))
    if "@" in text.partition("://")[2]:
        raise ValueError(f"the endpoint must not carry credentials (got {shown}); "
                         "use the environment or --profile")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{shown} is not an S3 endpoint URL (use e.g. http://127.0.0.1:9000 or https://s3.example.com)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{shown}: the endpoint must not have a path, query or fragment; "
                         "give the bucket with --bucket")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{shown} has an invalid port") from None
    host = parts.hostname
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    default = 80 if parts.scheme == "http" else 443
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _phases(value: object) -> object:
    items = comma_list(value)
    return tuple(items) if isinstance(items, list) else items


class S3Options(ContentOptions):
    """One S3 run. Field names are the recipe keys; `--kebab-case` are the flags."""

    # Keys may be among the input: pydantic's own message (a --debug traceback) must not quote them.
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, hide_input_in_errors=True)

    endpoint: str = Field(
        description="S3 endpoint URL, e.g. http://127.0.0.1:9000 (no path; path-style requests are used).",
        json_schema_extra={"metavar": "URL"},
    )
    bucket: str = Field(
        description="Bucket to use; only keys under backupbench/<run>/ are ever written or deleted in it.",
        json_schema_extra={"metavar": "NAME"},
    )
    object_size: ObjectSize = Field(
        SizeRange(units.MiB, units.MiB),
        description="Size of each object (1MiB = 1,048,576 bytes; 1MB = 1,000,000 bytes), a Veeam block size "
        "by its storage optimization (local-16tb 4 MiB, local 1 MiB, lan 512 KiB, wan 256 KiB), or a range "
        "such as 1MiB-8MiB: sizes uniform in it, the same for the same object.",
        json_schema_extra={"metavar": "SIZE[-SIZE]", "example": "1MiB"},
    )
    multipart_threshold: Size = Field(
        64 * units.MiB, ge=MIN_PART, le=MAX_PUT,
        description="Objects larger than this go up as multipart uploads (CreateMultipartUpload, UploadPart, "
        "CompleteMultipartUpload).", json_schema_extra={"metavar": "SIZE"},
    )
    part_size: Size = Field(
        16 * units.MiB, ge=MIN_PART, le=MAX_PUT,
        description="Size of each part of a multipart upload (S3: 5 MiB to 5 GiB).", json_schema_extra={"metavar": "SIZE"},
    )
    object_lock: LockMode | None = Field(
        None, description="S3 Object Lock mode of every PUT: governance (removable with the bypass permission) "
        "or compliance (nobody can delete the objects before the retention ends: they and the bucket are left). "
        "Needs --retention and a bucket with object lock (--create-bucket makes one).",
    )
    retention: Duration | None = Field(
        None, ge=1, description="How long each locked object is retained from its PUT, e.g. 1d.",
        json_schema_extra={"metavar": "DURATION"},
    )
    mix: Annotated[dict[str, int] | None, BeforeValidator(parse_mix),
                   AfterValidator(lambda v: None if v is None else check_mix(v))] = Field(
        None, description="Shares of the mixed phase's requests [default: put=45,get=45,list=5,delete=5].",
        json_schema_extra={"metavar": "SHARES", "example": "put=45,get=45,list=5,delete=5"},
    )
    concurrency: Count = Field(
        100, ge=1, le=4096,
        description="Parallel streams (requests in flight), as s3bench's 100 in field note D.",
        json_schema_extra={"metavar": "N"},
    )
    objects: Count | None = Field(
        None, ge=1, le=10_000_000,
        description=f"Objects to PUT, then GET and DELETE once each [default: {DEFAULT_OBJECTS:,} "
        "unless --duration is given].",
        json_schema_extra={"metavar": "N"},
    )
    duration: Duration | None = Field(
        None, gt=0, le=7 * 86_400,
        description="Instead of a count: PUT new objects for this long, then GET them (cycling) for "
        "as long; DELETE removes every object written.",
        json_schema_extra={"metavar": "DURATION"},
    )
    s3_phases: Annotated[tuple[Phase, ...], BeforeValidator(_phases)] = Field(  # type: ignore[valid-type]
        PHASES, min_length=1, max_length=5,
        description="Measured phases, in order: put, then any of get, mixed, lock-check, delete [default: "
        "put,get,delete; with --object-lock put,get,lock-check,delete]. The run's objects are removed "
        "afterwards whether or not delete is measured.",
        json_schema_extra={"metavar": "LIST", "example": "put,get"},
    )
    create_bucket: Flag = Field(
        False, description="Create the bucket if it does not exist (and remove it afterwards if it is empty).",
    )
    region: str | None = Field(
        None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$",
        description="Region to sign requests for [default: AWS_REGION, the profile's region, or us-east-1].",
        json_schema_extra={"metavar": "NAME"},
    )
    profile: str | None = Field(
        None, min_length=1, max_length=128,
        description="Profile in ~/.aws/credentials (and ~/.aws/config) to take credentials from "
        "[default: AWS_PROFILE, else the environment's keys, else 'default'].",
        json_schema_extra={"metavar": "NAME"},
    )
    access_key: SecretStr | None = Field(
        None, exclude=True, repr=False,
        description="Access key ID (prefer AWS_ACCESS_KEY_ID or --profile: a flag is visible to other users "
        "in the process list). Never stored or printed.",
        json_schema_extra={"metavar": "KEY"},
    )
    secret_key: SecretStr | None = Field(
        None, exclude=True, repr=False,
        description="Secret access key (prefer AWS_SECRET_ACCESS_KEY or --profile). Never stored or printed.",
        json_schema_extra={"metavar": "SECRET"},
    )
    insecure_tls: Flag = Field(
        False, description="Do not verify the server's TLS certificate (a self-signed test server).",
    )
    ca_file: str | None = Field(
        None, min_length=1,
        description="PEM file of the CA that signed the server's certificate, instead of the system's.",
        json_schema_extra={"metavar": "PATH"},
    )
    request_timeout: Duration = Field(
        60.0, gt=0, le=3600,
        description="Longest one request may take before it counts as a 'timeout' error.",
        json_schema_extra={"metavar": "DURATION"},
    )
    connect_timeout: Duration = Field(
        3.0, gt=0, le=120,
        description="Longest a connection may take to open; an endpoint that does not answer "
        "fails the pre-flight check within about twice this.",
        json_schema_extra={"metavar": "DURATION"},
    )
    max_attempts: Count = Field(
        3, ge=1, le=10,
        description="Attempts per request when the server answers 429, 500, 502, 503 or 504 (SlowDown, "
        "InternalError), with the AWS SDKs' jittered backoff: 3 as the SDKs; 1: never retry. Retried requests "
        "are counted apart from the ones that succeeded and failed.",
        json_schema_extra={"metavar": "N"},
    )

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        return normalise_endpoint(value)

    @field_validator("access_key", "secret_key")
    @classmethod
    def _hidden_from_now_on(cls, value: SecretStr | None) -> SecretStr | None:
        # Remembered as soon as it is read: even a --debug traceback of another key's error hides it.
        if value is not None:
            remember(value.get_secret_value())
        return value

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        return check_bucket_name(value)

    @model_validator(mode="before")
    @classmethod
    def _lock_checked_by_default(cls, values: object) -> object:
        if isinstance(values, dict) and values.get("object_lock") and values.get("s3_phases") is None:
            return {**values, "s3_phases": ("put", "get", "lock-check", "delete")}
        return values

    @model_validator(mode="after")
    def _s3_consistent(self) -> "S3Options":
        if self.objects is not None and self.duration is not None:
            raise ValueError("give either objects or duration, not both")
        phases = self.s3_phases
        if len(set(phases)) != len(phases):
            raise ValueError(f"s3_phases lists a phase twice: {','.join(phases)}")
        if phases[0] != "put":
            raise ValueError("s3_phases must start with put: the other phases work on the objects the run wrote")
        if list(phases) != sorted(phases, key=ORDER.index):
            raise ValueError("s3_phases must be in the order " + ", ".join(ORDER))
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("give both access_key and secret_key, or neither")
        self._check_lock()
        self._check_sizes()
        if self.mix is not None and "mixed" not in phases:
            raise ValueError("mix gives the shares of the mixed phase: add mixed to s3_phases (--s3-phases)")
        return self

    def _check_lock(self) -> None:
        if self.retention is not None and self.object_lock is None:
            raise ValueError("retention applies to locked objects: add object_lock (--object-lock) governance or compliance")
        if self.object_lock is not None and self.retention is None:
            raise ValueError(f"object_lock {self.object_lock} needs a retention (--retention), e.g. 1d")
        if "lock-check" in self.s3_phases and self.object_lock is None:
            raise ValueError("the lock-check phase needs object_lock (--object-lock)")

    def _check_sizes(self) -> None:
        size = self.object_size
        if size.low < 1:
            raise ValueError("objects must be at least 1 byte")
        # Over 5 GiB is always over the threshold (at most 5 GiB): such objects go up in parts.
        if size.high > self.multipart_threshold and -(-size.high // self.part_size) > MAX_PARTS:
            raise ValueError(f"{units.format_size(size.high)} in parts of {units.format_size(self.part_size)} "
                             f"is more than S3's {MAX_PARTS:,} parts: raise part_size")
        if size.high > 5 * units.TiB:
            raise ValueError("S3 objects are at most 5 TiB")

    @property
    def shares(self) -> dict[str, int]:
        return self.mix if self.mix is not None else dict(DEFAULT_MIX)

    @property
    def object_count(self) -> int | None:
        """Objects to write; None when the PUT phase is timed."""
        if self.duration is not None:
            return None
        return self.objects if self.objects is not None else DEFAULT_OBJECTS

    @property
    def data_bytes(self) -> int | None:
        """Bytes one pass over every object moves, about (None when timed)."""
        count = self.object_count
        return None if count is None else count * self.object_size.mean

    def object_plan(self, seed: int) -> ObjectPlan:
        """What the run's objects are (workloads/s3_phase.py), their bytes from `seed`."""
        return ObjectPlan(self.object_size.low, self.object_size.high, self.content(), seed,
                          self.multipart_threshold, self.part_size, self.object_lock or "", self.retention or 0.0,
                          self.shares)

    def describe(self, phase: str, checked: int = 0) -> str:
        """One line saying what a phase does, as stored with the operation."""
        if phase == "lock-check":
            return f"DELETE and overwrite {checked} {self.object_lock}-locked objects: must be refused"
        amount = (f"{self.object_count:,} {'requests' if phase == 'mixed' else 'objects'}"
                  if self.object_count is not None else f"for {self.duration:g} s")
        what = f"MIXED {mix_text(self.shares)} of" if phase == "mixed" else phase.upper()
        lock = f", {self.object_lock} lock {units.format_duration(self.retention or 0)}" if self.object_lock and phase in ("put", "mixed") else ""
        return f"{what} {self.object_size} objects, {amount}, {self.concurrency} streams{lock}"
