"""MinIO's own heal state, from its admin API: `POST /minio/admin/v3/background-heal/status`
(a GET is answered 426), SigV4-signed with the root credentials. The answer lists every
drive with its state ("ok", "unformatted" for a drive MinIO cannot use, "offline", ...);
a drive being healed has `healing` and a `heal_info` with the items and bytes healed so far.

What the pinned MinIO (2026) does, as seen on loop devices: a fresh drive is found by its
drive monitor some 10-15 s after it is mounted, then healed bucket by bucket; `heal_info`
stays on the drive, `finished: true`, after the heal has ended (until the server stops), so
a heal shorter than the 1 s between samples is still seen. Its totals
(objects_total_count/size) come from the scanner's last usage snapshot, which can lag far
behind (0 on a young server, or older than the data): the percent is an estimate, kept
below 100 until MinIO says the heal finished; bytes are those of the objects healed."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from backupbench.errors import EngineError
from backupbench.monitor.rebuild import RebuildState

HEAL_STATUS_PATH = "/minio/admin/v3/background-heal/status"
REGION = "us-east-1"
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sigv4_headers(method: str, url: str, access_key: str, secret_key: str, now: float,
                  body: bytes = b"") -> dict[str, str]:
    """The headers that sign a request (AWS Signature Version 4, service s3) whose query
    is empty; `now`: epoch seconds."""
    parts = urlsplit(url)
    amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    day = amz_date[:8]
    payload = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256
    headers = {"host": parts.netloc, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    signed = ";".join(sorted(headers))
    canonical = "\n".join((method, quote(parts.path or "/", safe="/-_.~"), parts.query,
                           "".join(f"{name}:{headers[name]}\n" for name in sorted(headers)), signed, payload))
    scope = f"{day}/{REGION}/s3/aws4_request"
    to_sign = "\n".join(("AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()))
    key = b"AWS4" + secret_key.encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {"x-amz-content-sha256": payload, "x-amz-date": amz_date,
            "Authorization": f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, "
                             f"Signature={signature}"}


@dataclass(frozen=True)
class DriveHeal:
    endpoint: str
    state: str
    healing: bool        # a heal of this drive is under way
    healed: bool         # a heal of this drive has finished (since the server started)
    items_done: int
    items_total: int     # the scanner's estimate (0: none yet)
    bytes_done: int
    bytes_total: int     # likewise


def drives(status: dict) -> list[DriveHeal]:
    """Every drive of the heal status, with what its heal did so far (zero when none)."""
    found = []
    for set_info in status.get("sets") or []:
        for disk in set_info.get("disks") or []:
            info = disk.get("heal_info") or {}
            finished = bool(info.get("finished"))
            found.append(DriveHeal(
                disk.get("endpoint", ""), disk.get("state", ""), bool(disk.get("healing")) and not finished,
                bool(info) and finished,
                sum(int(info.get(k) or 0) for k in ("items_healed", "items_failed", "items_skipped")),
                int(info.get("objects_total_count") or 0),
                sum(int(info.get(k) or 0) for k in ("bytes_done", "bytes_failed", "bytes_skipped")),
                int(info.get("objects_total_size") or 0)))
    return found


def _estimate(healing: list[DriveHeal]) -> float | None:
    bytes_total = sum(d.bytes_total for d in healing)
    if bytes_total:
        done, total = sum(d.bytes_done for d in healing), bytes_total
    else:
        done, total = sum(d.items_done for d in healing), sum(d.items_total for d in healing)
    # MinIO's totals can be older than the data: never 100 % before it says it is done.
    return min(99.9, 100.0 * done / total) if total else None


def heal_state(status: dict, expected: tuple[str, ...] = ()) -> RebuildState:
    """From the parsed answer of background-heal/status. `expected`: the drives (their
    endpoints) whose heal is awaited: finished only once each has been healed, so that the
    seconds before MinIO notices a fresh drive are not taken for a finished heal."""
    found = drives(status)
    if not found:
        raise ValueError("MinIO's heal status lists no drive")
    unknown = [path for path in expected if path not in {d.endpoint for d in found}]
    if unknown:
        raise ValueError(f"MinIO's heal status does not list drive {unknown[0]}")
    healing = [d for d in found if d.healing]
    healed = [d for d in found if d.healed]
    unusable = [d for d in found if d.state != "ok"]
    done = sum(d.bytes_done for d in healing + healed) if healing or healed else None
    finished = not healing and not unusable and all(d.healed for d in found if d.endpoint in expected)
    percent = _estimate(healing) if healing else 100.0 if finished and healed else None
    return RebuildState(bool(healing), bool(healing or unusable), percent, done, None, finished=finished)


@dataclass
class MinioHealReader:
    """Asks the running server once per call; an answer other than 200 is an EngineError
    (the watch keeps its message and samples on)."""

    endpoint: str
    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    expected: tuple[str, ...] = ()   # drive folders whose heal is awaited, as MinIO names them
    timeout: float = 10.0

    def status(self) -> dict:
        url = self.endpoint.rstrip("/") + HEAL_STATUS_PATH
        headers = sigv4_headers("POST", url, self.access_key, self.secret_key, time.time())
        request = urllib.request.Request(url, data=b"", method="POST", headers=headers)
        # Our own server on loopback: no proxy in between.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=self.timeout) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise EngineError(f"MinIO's heal status answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise EngineError(f"MinIO's heal status did not answer: {exc}") from None

    def __call__(self) -> RebuildState:
        return heal_state(self.status(), self.expected)
