"""S3 artefacts of a run: its objects (one prefix) and a bucket it created.

The journal never holds a secret. It records where the credentials came from (the
environment, a profile name); `backupbench cleanup` takes them from there again. Keys given
as options cannot be found again: cleanup then says to export them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from backupbench.engines.s3 import S3Engine, S3Target
from backupbench.engines.s3_credentials import resolve
from backupbench.errors import BackupbenchError, EngineError
from backupbench.artefacts import FAILED, GONE, NOT_OURS, REMOVED, Artefact, Outcome


def _where(target: S3Target, profile: str | None, source: str, layout: str) -> Artefact:
    return {"endpoint": target.endpoint, "bucket": target.bucket, "region": target.region,
            "insecure_tls": target.insecure_tls, "ca_file": target.ca_file, "profile": profile,
            "credentials_from": source, "layout": layout}


def objects(target: S3Target, prefix: str, profile: str | None, source: str, layout: str = "") -> Artefact:
    """layout: the layout whose MinIO holds them; they go with its drives."""
    return {"kind": "s3-objects", "prefix": prefix, **_where(target, profile, source, layout)}


def bucket(target: S3Target, profile: str | None, source: str, layout: str = "") -> Artefact:
    return {"kind": "s3-bucket", **_where(target, profile, source, layout)}


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


def remove_objects(artefact: Artefact, environ: Mapping[str, str] | None, home: Path | None) -> Outcome:
    if artefact.get("layout"):
        return Outcome(GONE, f"they went with layout {artefact['layout']}'s MinIO and its drives")
    prefix = str(artefact.get("prefix", ""))
    if not prefix.startswith("backupbench/") or not prefix.endswith("/"):
        return Outcome(NOT_OURS, f"{prefix!r} is not a run's prefix")
    try:
        target, creds = _connect(artefact, environ, home)
        deleted = S3Engine().delete_prefix(target, creds, prefix)
    except BackupbenchError as exc:
        return Outcome(FAILED, f"{exc.one_line()} (credentials were taken from {artefact.get('credentials_from')}; "
                               "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY and run backupbench cleanup again)")
    return Outcome(REMOVED, f"{deleted:,} object(s) deleted")


def remove_bucket(artefact: Artefact, environ: Mapping[str, str] | None, home: Path | None) -> Outcome:
    if artefact.get("layout"):
        return Outcome(GONE, f"it went with layout {artefact['layout']}'s MinIO and its drives")
    try:
        target, creds = _connect(artefact, environ, home)
        S3Engine().delete_bucket(target, creds)
    except EngineError as exc:
        if "NoSuchBucket" in exc.message:
            return Outcome(GONE, "already gone")
        if "BucketNotEmpty" in exc.message:
            return Outcome(NOT_OURS, "it holds objects that are not this run's, so it is kept")
        return Outcome(FAILED, exc.one_line())
    except BackupbenchError as exc:
        return Outcome(FAILED, exc.one_line())
    return Outcome(REMOVED, "removed")
