"""What the S3 loader does when the server says SlowDown, for real: a local S3 (tests/local_servers.py,
on 127.0.0.1) answers 503 SlowDown to its first PUTs of objects. The loader sends each such
request again as the AWS SDKs do (up to --max-attempts attempts in all) and every retry is
counted apart from the requests that succeeded and failed: in the records, the stored figures,
the table and a warning line. With --max-attempts 1 the same answers are failures."""

from __future__ import annotations

import json

import pytest
from local_servers import throttling_s3

from backupbench.engines.s3 import BINARY, find_tool
from backupbench.engines.s3_records import read_records
from backupbench.errors import ToolMissingError
from backupbench.results.document import phase_figures

pytestmark = pytest.mark.real
ENV = {"AWS_ACCESS_KEY_ID": "throttle-test-key", "AWS_SECRET_ACCESS_KEY": "throttle-test-secret"}


@pytest.fixture(autouse=True)
def loader_built():
    try:
        find_tool(BINARY, "BACKUPBENCH_S3LOAD")
    except ToolMissingError:
        pytest.skip(f"{BINARY} is not built: run scripts/install-minio.sh (make test does)")


def run(cli, endpoint: str, *extra: str):
    result = cli("run", "--workload", "s3", "--endpoint", endpoint, "--bucket", "throttled", "--objects", "12",
                 "--object-size", "4KiB", "--concurrency", "1", *extra, "--json", env=ENV)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    return document, {op["name"]: phase_figures(op) for op in document["phases"]}, result.stderr


def test_slow_down_is_retried_and_the_retries_are_counted(cli):
    with throttling_s3(slow_downs=2) as (endpoint, state):
        document, phases, stderr = run(cli, endpoint)
        puts = [path for method, path in state.requests if method == "PUT"]
    # One stream: object 0 was answered SlowDown twice, then stored on its third attempt.
    assert state.answered_503 == 2 and len(puts) == 12 + 2
    put = phases["put"]
    assert (put["ops"], put["errors"], put["retried"], put["retries"]) == (12, 0, 1, 2)
    assert phases["get"]["retried"] == 0 and phases["get"]["ops"] == 12
    records = read_records(cli.results / "runs" / document["run"]["id"] / "put.ops.csv.gz")
    assert [(r.key, r.retries, r.retry_error) for r in records if r.retries] == [(0, 2, "SlowDown")]
    detail = next(op["detail"] for op in document["phases"] if op["name"] == "put")
    assert detail["retried_by_kind"] == {"SlowDown": 1} and detail["errors_by_kind"] == {}
    assert "put: 1 of 12 requests were retried after SlowDown" in stderr


def test_the_table_shows_the_retried_count(cli):
    with throttling_s3(slow_downs=1) as (endpoint, _):
        result = cli("run", "--workload", "s3", "--endpoint", endpoint, "--bucket", "throttled", "--objects", "6",
                     "--object-size", "4KiB", "--concurrency", "1", env=ENV)
    assert result.returncode == 0, result.stderr
    assert "0 (1 retried)" in result.stdout


def test_with_one_attempt_a_slow_down_is_a_failure_with_its_hint(cli):
    with throttling_s3(slow_downs=2) as (endpoint, state):
        _, phases, stderr = run(cli, endpoint, "--max-attempts", "1")
    assert state.answered_503 == 2
    put = phases["put"]
    assert (put["ops"], put["errors"], put["retried"], put["retries"]) == (10, 2, 0, 0)
    assert phases["get"]["ops"] == 10  # GET reads what PUT stored
    assert "put: 2 of 12 requests failed with SlowDown: the server is throttling" in stderr
    assert "--concurrency" in stderr
