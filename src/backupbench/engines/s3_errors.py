"""An "error" event of the load generator -> one typed error naming the cause and the fix (pure).

A timeout says what it waited for (the loader's `stage`): no connection at all is a network
matter (address, firewall, --connect-timeout); a connection made and no TLS handshake, or a
request sent and no answer, is something listening that is not the S3 service (or is hung),
and a longer --connect-timeout is not the fix. An answer without S3's error body or listing
(`not-s3`: a web page, a console, a proxy) fails the endpoint check, however the TLS went.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backupbench.errors import BackupbenchError, EngineError, InputError, RefusedError

CREDENTIAL_CODES = {
    "InvalidAccessKeyId": "the server does not know this access key",
    "SignatureDoesNotMatch": "the secret key does not match the access key",
    "InvalidToken": "the session token is not valid",
    "ExpiredToken": "the session token has expired",
    "InvalidClientTokenId": "the server does not know this access key",
}
ENDPOINT_FIX = ("check that --endpoint names the S3 service itself (host and port), not a web server, "
                "console or proxy in front of it")
SAID_CHARS = 120


@dataclass(frozen=True)
class Asking:
    """Where a request went and how long it waited: what the messages name."""

    endpoint: str
    bucket: str
    doing: str                 # e.g. "checking the endpoint"
    source: str                # where the credentials came from
    connect_s: float           # the connect (and TLS handshake) timeout
    answer_s: float            # the longest wait for an answer


def _said(event: dict[str, Any]) -> str:
    lines = str(event.get("message") or "").strip().splitlines()
    first = lines[0].strip() if lines else ""
    return f": {first[:SAID_CHARS]}{'...' if len(first) > SAID_CHARS else ''}" if first else ""


def _timeout(stage: str, at: Asking) -> InputError:
    if stage == "tls":
        return InputError(f"the S3 endpoint {at.endpoint} accepted the connection but did not complete a TLS "
                          f"handshake within {at.connect_s:g} s while {at.doing}",
                          "check --endpoint: use http:// if the service is not TLS, and its port")
    if stage == "answer":
        return InputError(f"the S3 endpoint {at.endpoint} accepted the connection but did not answer S3 within "
                          f"{at.answer_s:g} s while {at.doing}",
                          f"{ENDPOINT_FIX}, and that the server is not hung")
    return InputError(f"cannot reach the S3 endpoint {at.endpoint}: no connection within {at.connect_s:g} s "
                      f"while {at.doing}",
                      "check --endpoint (host and port), the network path and firewalls; --connect-timeout "
                      "raises the limit")


def _transport(kind: str, event: dict[str, Any], at: Asking) -> BackupbenchError | None:
    said, where = _said(event), f"{at.endpoint} (bucket {at.bucket})"
    if kind == "connection-refused":
        return InputError(f"cannot reach the S3 endpoint {at.endpoint}: connection refused",
                          "check --endpoint (host and port) and that the S3 server is running")
    if kind == "timeout":
        return _timeout(str(event.get("stage") or ""), at)
    if kind == "unreachable":
        return InputError(f"cannot reach the S3 endpoint {at.endpoint}: no route to it while {at.doing}",
                          "check --endpoint, the network path and firewalls")
    if kind == "dns":
        return InputError(f"cannot resolve the host of the S3 endpoint {at.endpoint}", "check --endpoint")
    if kind == "tls":
        return InputError(f"TLS with {at.endpoint} failed while {at.doing}{said}",
                          "use https:// only for a TLS endpoint; for a self-signed certificate give --ca-file "
                          "PEM, or --insecure-tls to skip verification")
    if kind == "not-s3":
        status = f"HTTP {event['status']}" if event.get("status") else "something"
        return InputError(f"the endpoint {at.endpoint} does not speak S3: while {at.doing} it answered {status}, "
                          f"which is no S3 answer{said}", ENDPOINT_FIX)
    if kind in ("protocol", "eof", "connection-reset"):
        hint = ("is it an S3 endpoint, and does the scheme match (http:// vs https://)?"
                if at.endpoint.startswith("http://") else "is it an S3 endpoint?")
        return InputError(f"{where} did not answer like S3 while {at.doing} ({kind}){said}", hint)
    return None


def error_for(event: dict[str, Any], at: Asking) -> BackupbenchError:
    """One typed error, one line, naming the cause and the fix, for an "error" event."""
    kind = str(event.get("kind") or "error")
    if kind in CREDENTIAL_CODES:
        return InputError(f"S3 refused the credentials while {at.doing}: {kind} - {CREDENTIAL_CODES[kind]} "
                          f"(credentials from {at.source})",
                          "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, --profile or --access-key/--secret-key"
                          + (" and --region" if kind == "SignatureDoesNotMatch" else ""))
    if kind == "RequestTimeTooSkewed":
        return InputError(f"S3 refused the request while {at.doing}: RequestTimeTooSkewed - this host's clock is off",
                          "synchronise the clock (e.g. systemctl start systemd-timesyncd)")
    if kind in ("AccessDenied", "Forbidden", "AllAccessDisabled"):
        return RefusedError(f"S3 denied access to bucket {at.bucket} while {at.doing}: {kind}",
                            f"grant these credentials ({at.source}) list, put, get and delete on "
                            f"{at.bucket}/backupbench/*")
    if kind in ("AuthorizationHeaderMalformed", "PermanentRedirect", "Redirect", "IllegalLocationConstraintException"):
        return InputError(f"S3 answered {kind} while {at.doing}{_said(event)}", "set --region to the bucket's region")
    found = _transport(kind, event, at)
    if found is not None:
        return found
    return EngineError(f"S3 error while {at.doing} at {at.endpoint} (bucket {at.bucket}): {kind}{_said(event)}")
