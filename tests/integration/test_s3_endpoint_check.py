"""The s3 workload's endpoint check against servers that are not S3, all on 127.0.0.1, made here.

- a black hole (connections accepted, nothing ever answered), over http:// and https://: the
  message says the connection was made and no answer came, and does not send the user to
  --connect-timeout (the connection did not fail);
- a web server over TLS with a self-signed certificate (made by the test with openssl),
  answering an HTML 404 or an HTML 200 to every request, used with --insecure-tls: the check
  fails with one line saying the server does not speak S3, before any run is opened (it used
  to pass, and the run then spent a minute in PUT timeouts);
- a real MinIO over TLS passes the same check (tests/integration/test_s3_minio.py runs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from host_support import CliResult, run_cli
from local_servers import black_hole, web_server
from s3_fixtures import require_s3_tools

pytestmark = pytest.mark.real

KEYS = {"AWS_ACCESS_KEY_ID": "AKIAENDPOINTCHECK01", "AWS_SECRET_ACCESS_KEY": "endpoint-check-secret-0123456789"}


def _cli(tmp_path: Path, *args: str) -> CliResult:
    return run_cli(["run", "--workload", "s3", "--bucket", "bucket-x", "--objects", "20", "--object-size", "4KiB",
                    "--connect-timeout", "1s", *args], cwd=tmp_path, results=tmp_path / "results",
                   env={**KEYS, "HOME": str(tmp_path)})


def _no_run_stored(tmp_path: Path) -> bool:
    runs = tmp_path / "results" / "runs"
    return not runs.exists() or not any(runs.iterdir())


def _one_line(done: CliResult) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("scheme, waited", [("http", "did not answer S3 within"),
                                            ("https", "did not complete a TLS handshake within")])
def test_a_black_hole_is_said_to_have_accepted_the_connection(tmp_path, scheme, waited):
    require_s3_tools()
    with black_hole() as port:
        done = _cli(tmp_path, "--endpoint", f"{scheme}://127.0.0.1:{port}", *(("--insecure-tls",) * (scheme == "https")))
    line = _one_line(done)
    assert done.returncode == 2 and "accepted the connection" in line and waited in line
    assert "--connect-timeout" not in line  # the connection did not fail: a longer connect timeout fixes nothing
    assert _no_run_stored(tmp_path)


def test_a_closed_port_still_names_the_connection(tmp_path):
    require_s3_tools()
    with black_hole() as port:
        pass  # closed again: nothing listens there now
    done = _cli(tmp_path, "--endpoint", f"http://127.0.0.1:{port}")
    assert done.returncode == 2 and "connection refused" in _one_line(done)


@pytest.mark.parametrize("status", [404, 200])
@pytest.mark.parametrize("tls", [True, False])
def test_a_web_server_fails_the_endpoint_check_in_one_line(tmp_path, status, tls):
    require_s3_tools()
    with web_server(status, tmp_path if tls else None) as port:
        scheme = "https" if tls else "http"
        done = _cli(tmp_path, "--endpoint", f"{scheme}://127.0.0.1:{port}", "--create-bucket", "--json",
                    *(("--insecure-tls",) if tls else ()))
    line = _one_line(done)
    assert done.returncode == 2, done.stderr
    assert "does not speak S3" in line and f"HTTP {status}" in line and "names the S3 service" in line
    assert json.loads(done.stdout)["kind"] == "backupbench.error"
    assert _no_run_stored(tmp_path)  # refused in the check: no PUT was ever sent
