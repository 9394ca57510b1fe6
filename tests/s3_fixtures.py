"""Fixtures for the S3 tests: real MinIO servers started from .tools/bin, moto's S3 server
(moto[server], a test extra: a second S3 implementation, as strict as AWS about the headers it
documents), and a tiny S3 client written here (Python, SigV4) that checks what is in a bucket
independently of the Go code.

The tests skip, saying why, only when the binaries are absent; `make test` builds them
(scripts/install-minio.sh) and installs moto (pyproject.toml's test extras).
"""

from __future__ import annotations

import datetime
import gzip
import hashlib
import hmac
import http.client
import re
import shutil
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from pydantic import SecretStr

from backupbench import process
from backupbench.engines.s3 import BINARY, find_tool
from backupbench.errors import ToolMissingError
from backupbench.layouts.minio import MinioServer, find_minio, free_port, random_credentials
from backupbench.workloads.s3_options import S3Options

# Small objects keep the S3 tests quick.
SMALL = {"object_size": "64KiB", "concurrency": 16, "objects": 120}


def require_s3_tools() -> None:
    for finder, name in ((find_minio, "minio"), (lambda: find_tool(BINARY), BINARY)):
        try:
            finder()
        except ToolMissingError:
            pytest.skip(f"{name} is not built: run scripts/install-minio.sh (make test does)")


def _start(tmp_path_factory, drives: int) -> MinioServer:
    require_s3_tools()
    base = tmp_path_factory.mktemp(f"minio{drives}")
    folders = []
    for i in range(1, drives + 1):
        folder = base / f"d{i}"
        folder.mkdir()
        folders.append(folder)
    return MinioServer(folders, log_path=base / "minio.log")


@pytest.fixture(scope="module")
def minio_single(tmp_path_factory):
    with _start(tmp_path_factory, 1) as server:
        yield server


@pytest.fixture(scope="module")
def minio_ec4(tmp_path_factory):
    with _start(tmp_path_factory, 4) as server:
        yield server


MOTO_START_S = 30.0


def find_moto_server() -> str:
    """moto's server beside this Python (the venv `make test` installs it into), else on PATH."""
    beside = Path(sys.executable).parent / "moto_server"
    found = str(beside) if beside.is_file() else shutil.which("moto_server")
    if found is None:
        pytest.skip("moto_server is not installed: pip install 'moto[server]' (make test installs the test extras)")
    return found


class MotoServer:
    """moto's S3 server on 127.0.0.1 and a free port, for one test module; use as a context
    manager. It is stopped on the way out, a test's failure included, and dies with this
    process if that is killed (process.Background). moto takes any keys: fresh random ones are
    used, so the tests that look for secrets in the run's files have one to look for."""

    def __init__(self, log_path: Path):
        self.binary = find_moto_server()
        self.log_path = log_path
        self.access_key, self.secret_key = random_credentials()
        self.port = 0
        self._child: process.Background | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "MotoServer":
        for _ in range(3):  # the free port may be taken between looking and binding
            self.port = free_port()
            self._child = process.Background([self.binary, "-H", "127.0.0.1", "-p", str(self.port)],
                                             stdout_path=self.log_path)
            if self._wait_ready():
                return self
            self._child.stop(2)
        raise RuntimeError(f"moto_server did not start: {self.log_path.read_text(errors='replace')[-500:]}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + MOTO_START_S
        while time.monotonic() < deadline and self._child is not None and self._child.running():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/")
                ready = conn.getresponse().status == 200
                conn.close()
                if ready:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def __exit__(self, *exc) -> None:
        if self._child is not None:
            self._child.stop(5)
            self._child = None


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    with MotoServer(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture(scope="module", params=["minio", "moto"])
def s3_server(request, tmp_path_factory):
    """Each S3 implementation the suite holds the loader to, in turn: MinIO, then moto."""
    if request.param == "minio":
        with _start(tmp_path_factory, 1) as server:
            yield server
    else:
        require_s3_tools()
        with MotoServer(tmp_path_factory.mktemp("moto") / "moto.log") as server:
            yield server


class S3Admin:
    """Just enough S3 to set up and inspect buckets in tests (path style, SigV4, http only)."""

    def __init__(self, endpoint: str, access_key: str, secret_key: str, region: str = "us-east-1"):
        parts = urllib.parse.urlsplit(endpoint)
        self.host, self.port = parts.hostname, parts.port
        self.netloc = parts.netloc
        self.access_key, self.secret_key, self.region = access_key, secret_key, region

    @classmethod
    def of(cls, server: MinioServer) -> "S3Admin":
        return cls(server.endpoint, server.access_key, server.secret_key)

    def _sign(self, method: str, path: str, query: str, payload: bytes,
              extra: dict[str, str] | None = None) -> dict[str, str]:
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload_hash = hashlib.sha256(payload).hexdigest()
        headers = {"host": self.netloc, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date,
                   **{k.lower(): v for k, v in (extra or {}).items()}}
        signed = ";".join(sorted(headers))
        canonical = "\n".join([method, path, query, "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)),
                               signed, payload_hash])
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = ("AWS4" + self.secret_key).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                                    f"SignedHeaders={signed}, Signature={signature}")
        return headers

    def request(self, method: str, bucket: str, key: str = "", query: dict[str, str] | None = None,
                body: bytes = b"", headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        status, data, _ = self.exchange(method, bucket, key, query, body, headers)
        return status, data

    def exchange(self, method: str, bucket: str, key: str = "", query: dict[str, str] | None = None,
                 body: bytes = b"", headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        """One request (headers signed, as S3 wants every x-amz-* header signed); the answer's
        status, body and headers (lower-case names)."""
        path = "/" + bucket + ("/" + urllib.parse.quote(key, safe="/-_.~") if key else "")
        q = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                     for k, v in sorted((query or {}).items()))
        signed = self._sign(method, path, q, body, headers)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path + ("?" + q if q else ""), body=body, headers=signed)
            response = conn.getresponse()
            return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()

    def create_bucket(self, bucket: str) -> None:
        status, body = self.request("PUT", bucket)
        assert status == 200, body

    def bucket_exists(self, bucket: str) -> bool:
        status, _ = self.request("GET", bucket, query={"list-type": "2", "max-keys": "1"})
        return status == 200

    def put(self, bucket: str, key: str, data: bytes = b"not backupbench's") -> None:
        status, body = self.request("PUT", bucket, key, body=data)
        assert status == 200, body

    def get(self, bucket: str, key: str) -> bytes | None:
        status, body = self.request("GET", bucket, key)
        return body if status == 200 else None

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        found: list[str] = []
        token = ""
        while True:
            query = {"list-type": "2", "max-keys": "1000", **({"prefix": prefix} if prefix else {}),
                     **({"continuation-token": token} if token else {})}
            status, body = self.request("GET", bucket, query=query)
            assert status == 200, body
            text = body.decode()
            found += [urllib.parse.unquote(k) for k in re.findall(r"<Key>([^<]*)</Key>", text)]
            match = re.search(r"<NextContinuationToken>([^<]*)</NextContinuationToken>", text)
            if "<IsTruncated>true</IsTruncated>" not in text or not match:
                return found
            token = match.group(1)

    def delete_bucket(self, bucket: str) -> None:
        for key in self.keys(bucket):
            self.request("DELETE", bucket, key)
        self.request("DELETE", bucket)


def files_text(folder: Path) -> str:
    """Every file under folder as text (gzip files decompressed): for 'no secret in here' checks."""
    texts = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            texts.append(data.decode(errors="replace"))
    return "\n".join(texts)


def options(server: MinioServer | MotoServer, bucket: str, **values) -> S3Options:
    return S3Options(**{"endpoint": server.endpoint, "bucket": bucket, "access_key": SecretStr(server.access_key),
                        "secret_key": SecretStr(server.secret_key), **SMALL, **values})


class Hooks:
    def __init__(self, on_progress=None):
        self.started_: list[str] = []
        self.figures: dict[str, dict[str, float]] = {}
        self.details: dict[str, dict] = {}
        self.on_progress = on_progress
        self.artefacts: dict[int, dict] = {}  # what the run said it would create, by id
        self.removed_ids: dict[int, str] = {}

    def will_create(self, artefact):
        self.artefacts[len(self.artefacts)] = artefact
        return len(self.artefacts) - 1

    def removed(self, artefact_id, how="removed"):
        self.removed_ids[artefact_id] = how

    def started(self, name, title, pattern, measured=True, warmup_s=0.0):
        self.started_.append(name)

    def progress(self, name, fraction, detail):
        if self.on_progress:
            self.on_progress(name, fraction)

    def finished(self, name, figures, detail=None, failed=False):
        self.figures[name] = figures
        self.details[name] = detail or {}
