"""What real S3 servers answer, and what backupbench makes of it: the strict server (moto, as
AWS) refuses an upload without a checksum to a bucket with a default retention, and the run
stops in one line saying why and what to do; the same run with --object-lock sends what AWS
documents and passes on MinIO and moto; the remover of a run's bucket decides by the S3 error
code the server answered (NoSuchBucket: gone, BucketNotEmpty: not ours), on both servers."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from s3_fixtures import S3Admin, require_s3_tools

from backupbench.results.document import phase_figures
from backupbench.workloads.s3 import remove_bucket

pytestmark = pytest.mark.real
DEFAULT_RETENTION = (b'<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                     b"<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode>"
                     b"<Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>")


def keys_of(server) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": server.access_key, "AWS_SECRET_ACCESS_KEY": server.secret_key}


def bucket_with_default_retention(admin: S3Admin, bucket: str) -> None:
    status, body, _ = admin.exchange("PUT", bucket, headers={"x-amz-bucket-object-lock-enabled": "true"})
    assert status == 200, body
    md5 = base64.b64encode(hashlib.md5(DEFAULT_RETENTION).digest()).decode()
    status, body, _ = admin.exchange("PUT", bucket, query={"object-lock": ""}, body=DEFAULT_RETENTION,
                                     headers={"content-md5": md5})
    assert status == 200, body


def test_an_upload_without_checksum_to_a_retained_bucket_stops_in_one_line(cli, moto):
    require_s3_tools()
    bucket_with_default_retention(S3Admin.of(moto), "retained")
    result = cli("run", "--workload", "s3", "--endpoint", moto.endpoint, "--bucket", "retained", "--objects", "4",
                 "--object-size", "4KiB", "--concurrency", "2", env=keys_of(moto))
    errors = [line for line in result.stderr.splitlines() if line.startswith("backupbench:")]
    assert result.returncode == 1 and len(errors) == 1, result.stderr  # after the progress lines, one error
    line = errors[0]
    assert "every PUT request failed (4 x MissingUploadObjectWithObjectLockHeaders" in line
    assert "Content-MD5 or a checksum header" in line and "--object-lock MODE --retention DURATION" in line


def test_a_locked_run_sends_what_aws_documents_to_a_retained_bucket(cli, s3_server):
    require_s3_tools()
    admin = S3Admin.of(s3_server)
    bucket_with_default_retention(admin, "retained-locked")
    result = cli("run", "--workload", "s3", "--endpoint", s3_server.endpoint, "--bucket", "retained-locked",
                 "--objects", "6", "--object-size", "64KiB", "--concurrency", "2", "--object-lock", "governance",
                 "--retention", "1h", "--json",
                 env=keys_of(s3_server))
    assert result.returncode == 0, result.stderr
    phases = {op["name"]: phase_figures(op) for op in json.loads(result.stdout)["phases"]}
    assert phases["put"]["ops"] == 6 and phases["put"]["errors"] == 0 and phases["get"]["bytes"] == 6 * 64 * 1024
    check = phases["lock-check"]
    assert (check["lock_applied"], check["lock_delete_refused"], check["lock_overwrite_kept"]) == (1, 1, 1)
    assert admin.keys("retained-locked") == []  # every version went, governance bypassed


def test_the_bucket_remover_decides_by_the_servers_error_code(s3_server, tmp_path):
    require_s3_tools()
    admin = S3Admin.of(s3_server)
    artefact = {"kind": "s3-bucket", "tag": "rb1", "endpoint": s3_server.endpoint, "region": "us-east-1",
                "insecure_tls": False, "ca_file": None, "profile": None, "credentials_from": "environment",
                "layout": ""}
    gone = remove_bucket({**artefact, "bucket": "never-made"}, "rb1", environ=keys_of(s3_server), home=tmp_path)
    assert (gone.result, gone.text) == ("gone", "already gone")  # NoSuchBucket
    admin.create_bucket("theirs-too")
    admin.put("theirs-too", "their/object")
    kept = remove_bucket({**artefact, "bucket": "theirs-too"}, "rb1", environ=keys_of(s3_server), home=tmp_path)
    assert kept.result == "not ours" and "kept" in kept.text  # BucketNotEmpty
    assert admin.get("theirs-too", "their/object") == b"not backupbench's"
