"""Every S3 error code a run may meet gets one line naming the problem and the fix (pure): over
the error bodies MinIO and moto really answered (tests/fixtures/s3-errors/<server>-<Code>.xml,
recorded from the servers the S3 tests start), the codes only other servers or other moments
produce (SlowDown, AccessDenied's fix), and the warning said after a phase with failed or
retried requests."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from backupbench.engines.s3_errors import Asking, error_for
from backupbench.engines.s3_hints import HINTS, hint_for, phase_lines, said
from backupbench.errors import EngineError, InputError, RefusedError, S3Error

RECORDED = sorted((Path(__file__).parents[1] / "fixtures" / "s3-errors").glob("*.xml"))
ASKING = Asking("http://127.0.0.1:9000", "backups", "removing bucket backups", "environment", 3.0, 8.0)


def event_of(path: Path) -> dict:
    """The loader's error event for a recorded answer: its code as kind, its message."""
    root = ElementTree.fromstring(path.read_bytes())
    return {"event": "error", "kind": root.findtext("Code"), "status": 400, "message": root.findtext("Message")}


def test_both_servers_answers_are_recorded():
    servers = {path.name.split("-", 1)[0] for path in RECORDED}
    assert servers == {"minio", "moto"} and len(RECORDED) >= 15


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_every_recorded_answer_reads_as_one_line_with_a_fix(path):
    event = event_of(path)
    assert path.stem.endswith("-" + event["kind"])
    error = error_for(event, ASKING)
    assert isinstance(error, S3Error) and error.code == event["kind"]
    line = error.one_line()
    assert "\n" not in line and event["kind"] in line
    assert error.fix, f"{event['kind']} has no fix: {line}"
    assert "S3 error while" not in line  # the generic line of a code nobody explained


@pytest.mark.parametrize("path, category", [
    ("moto-MissingUploadObjectWithObjectLockHeaders", EngineError),
    ("moto-NoSuchBucket", RefusedError),
    ("minio-NoSuchBucket", RefusedError),
    ("minio-InvalidBucketState", RefusedError),
    ("moto-InvalidBucketState", RefusedError),
    ("minio-AccessDenied", RefusedError),
    ("minio-InvalidAccessKeyId", InputError),
    ("moto-EntityTooSmall", InputError),
])
def test_the_class_of_an_answer_keeps_its_exit_code(path, category):
    error = error_for(event_of(RECORDED[[p.stem for p in RECORDED].index(path)]), ASKING)
    assert isinstance(error, category)


def test_lock_headers_missing_says_which_headers_and_how_to_get_them():
    line = error_for(event_of(next(p for p in RECORDED if "MissingUpload" in p.name)), ASKING).one_line()
    assert "Content-MD5 or a checksum header" in line and "--object-lock" in line and "--retention" in line


@pytest.mark.parametrize("server", ["minio", "moto"])
def test_locked_headers_on_a_bucket_without_lock_say_so(server):
    """Both servers answer InvalidRequest, a code with many meanings: the message says which."""
    line = error_for(event_of(next(p for p in RECORDED if p.stem == f"{server}-InvalidRequest")), ASKING).one_line()
    assert "no Object Lock configuration" in line and "--create-bucket" in line


def test_aws_wording_of_a_locked_put_without_checksum_is_understood():
    # AWS answers InvalidRequest with this sentence where moto has its own code.
    message = ("Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock "
               "parameters")
    assert said("InvalidRequest", message) is hint_for("MissingUploadObjectWithObjectLockHeaders")
    assert said("InvalidRequest", "Invalid storage class") is None


@pytest.mark.parametrize("code, words", [
    ("SlowDown", ["throttling", "--concurrency", "--max-attempts"]),
    ("ServiceUnavailable", ["throttling"]),
    ("InternalError", ["server's log"]),
    ("AccessDenied", ["denied", "grant these credentials", "backups/backupbench/*"]),
    ("ObjectLockConfigurationNotFoundError", ["no Object Lock configuration"]),
    ("BucketNotEmpty", ["not this run's", "yourself"]),
    ("NotImplemented", ["does not implement", "--object-lock"]),
    ("XMinioStorageFull", ["full", "--objects"]),
])
def test_codes_not_recorded_here_have_their_line_too(code, words):
    line = error_for({"event": "error", "kind": code, "status": 503, "message": "said"}, ASKING).one_line()
    assert "\n" not in line
    for word in words:
        assert word in line


def test_every_hint_names_a_problem_and_a_fix():
    for code, hint in HINTS.items():
        assert hint.problem and hint.fix and hint.kind in ("input", "refused", "engine"), code
        assert "\n" not in hint.problem + hint.fix


def test_a_phases_failed_and_retried_requests_are_said_with_their_meaning():
    lines = phase_lines("put", {"SlowDown": 3, "weird": 1}, {"SlowDown": 12}, 200)
    assert lines[0].startswith("put: 3 of 200 requests failed with SlowDown: the server is throttling")
    assert lines[1] == "put: 1 of 200 requests failed with weird"
    assert "12 of 200 requests were retried after SlowDown" in lines[2] and "include the waits" in lines[2]
    assert phase_lines("get", {}, {}, 10) == []
