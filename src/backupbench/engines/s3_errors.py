"""An "error" event of the load generator -> one typed error naming the cause and the fix (pure).

A timeout says what it waited for (the loader's `stage`): no connection at all is a network
matter (address, firewall, --connect-timeout); a connection made and no TLS handshake, or a
request sent and no answer, is something listening that is not the S3 service (or is hung),
and a longer --connect-timeout is not the fix. An answer without S3's error body or listing
(`not-s3`: a web page, a console, a proxy) fails the endpoint check, however the TLS went.
Every error carries the code it is for (errors.S3Error.code): callers decide by it, never by
the message. An S3 error code not named here gets its hint from s3_hints.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backupbench.engines.s3_hints import said as hint_said
from backupbench.errors import S3EngineError, S3Error, S3InputError, S3RefusedError

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


def _timeout(stage: str, at: Asking) -> S3InputError:
    if stage == "tls":
        return S3InputError(f"the S3 endpoint {at.endpoint} accepted the connection but did not complete a TLS "
                            f"handshake within {at.connect_s:g} s while {at.doing}",
                            "check --endpoint: use http:// if the service is not TLS, and its port")
    if stage == "answer":
        return S3InputError(f"the S3 endpoint {at.endpoint} accepted the connection but did not answer S3 within "
                            f"{at.answer_s:g} s while {at.doing}",
                            f"{ENDPOINT_FIX}, and that the server is not hung")
    return S3InputError(f"cannot reach the S3 endpoint {at.endpoint}: no connection within {at.connect_s:g} s "
                        f"while {at.doing}",
                        "check --endpoint (host and port), the network path and firewalls; --connect-timeout "
                        "raises the limit")


def _transport(kind: str, event: dict[str, Any], at: Asking) -> S3Error | None:
    said, where = _said(event), f"{at.endpoint} (bucket {at.bucket})"
    if kind == "connection-refused":
        return S3InputError(f"cannot reach the S3 endpoint {at.endpoint}: connection refused",
                            "check --endpoint (host and port) and that the S3 server is running")
    if kind == "timeout":
        return _timeout(str(event.get("stage") or ""), at)
    if kind == "unreachable":
        return S3InputError(f"cannot reach the S3 endpoint {at.endpoint}: no route to it while {at.doing}",
                            "check --endpoint, the network path and firewalls")
    if kind == "dns":
        return S3InputError(f"cannot resolve the host of the S3 endpoint {at.endpoint}", "check --endpoint")
    if kind == "tls":
        return S3InputError(f"TLS with {at.endpoint} failed while {at.doing}{said}",
                            "use https:// only for a TLS endpoint; for a self-signed certificate give --ca-file "
                            "PEM, or --insecure-tls to skip verification")
    if kind == "not-s3":
        status = f"HTTP {event['status']}" if event.get("status") else "something"
        return S3InputError(f"the endpoint {at.endpoint} does not speak S3: while {at.doing} it answered {status}, "
                            f"which is no S3 answer{said}", ENDPOINT_FIX)
    if kind in ("protocol", "eof", "connection-reset"):
        hint = ("is it an S3 endpoint, and does the scheme match (http:// vs https://)?"
                if at.endpoint.startswith("http://") else "is it an S3 endpoint?")
        return S3InputError(f"{where} did not answer like S3 while {at.doing} ({kind}){said}", hint)
    return None


HINTED = {"input": S3InputError, "refused": S3RefusedError, "engine": S3EngineError}


def error_for(event: dict[str, Any], at: Asking) -> S3Error:
    """One typed error, one line, naming the cause and the fix, for an "error" event; its code
    is the event's kind."""
    kind = str(event.get("kind") or "error")
    error = _error(kind, event, at)
    error.code = kind
    return error


def _error(kind: str, event: dict[str, Any], at: Asking) -> S3Error:
    if kind in CREDENTIAL_CODES:
        return S3InputError(f"S3 refused the credentials while {at.doing}: {kind} - {CREDENTIAL_CODES[kind]} "
                            f"(credentials from {at.source})",
                            "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, --profile or --access-key/--secret-key"
                            + (" and --region" if kind == "SignatureDoesNotMatch" else ""))
    if kind == "RequestTimeTooSkewed":
        return S3InputError(f"S3 refused the request while {at.doing}: RequestTimeTooSkewed - this host's clock is "
                            "off", "synchronise the clock (e.g. systemctl start systemd-timesyncd)")
    if kind in ("AccessDenied", "Forbidden", "AllAccessDisabled"):
        return S3RefusedError(f"S3 denied access to bucket {at.bucket} while {at.doing}: {kind}",
                              f"grant these credentials ({at.source}) list, put, get and delete on "
                              f"{at.bucket}/backupbench/*")
    if kind in ("AuthorizationHeaderMalformed", "PermanentRedirect", "Redirect", "IllegalLocationConstraintException"):
        return S3InputError(f"S3 answered {kind} while {at.doing}{_said(event)}", "set --region to the bucket's region")
    found = _transport(kind, event, at)
    if found is not None:
        return found
    hint = hint_said(kind, str(event.get("message") or ""))
    where = f"at {at.endpoint} (bucket {at.bucket})"
    if hint is not None:
        return HINTED[hint.kind](f"S3 answered {kind} while {at.doing} {where}: {hint.problem}{_said(event)}",
                                 hint.fix)
    return S3EngineError(f"S3 error while {at.doing} {where}: {kind}{_said(event)}")
