"""S3 Object Lock against a real MinIO and moto's S3 server (which, as AWS does, refuses a locked
PUT without Content-MD5 or x-amz-sdk-checksum-algorithm): locked PUTs, the immutability check,
what cleanup may and may not remove (governance bypassed; compliance left, listed, and said
so), and the refusal of a bucket that cannot lock."""

from __future__ import annotations

import logging
import re
import time

import pytest
from s3_fixtures import Hooks, MotoServer, S3Admin, options

from backupbench.errors import RefusedError
from backupbench.workloads.s3 import S3Workload, remove_bucket, remove_objects
from backupbench.workloads.s3_options import object_key

pytestmark = pytest.mark.real


def versions(admin: S3Admin, bucket: str, markers: bool = True) -> list[tuple[str, str]]:
    """(key, version id) of every version (and delete marker) in the bucket."""
    _, body = admin.request("GET", bucket, query={"versions": ""})
    kinds = "Version|DeleteMarker" if markers else "Version"
    found = []
    for block in re.findall(rf"<(?:{kinds})>(.*?)</(?:{kinds})>", body.decode()):
        key, version = re.search(r"<Key>([^<]*)</Key>", block), re.search(r"<VersionId>([^<]*)</VersionId>", block)
        found.append((key.group(1), version.group(1)))
    return found


def run(workload: S3Workload, folder, run_id: str, hooks: Hooks | None = None, between=None) -> Hooks:
    hooks = hooks or Hooks()
    folder.mkdir()
    workload.check(None)
    try:
        workload.execute(None, folder, run_id, hooks)
        if between:
            between()
    finally:
        workload.cleanup(None, run_id, hooks)
    return hooks


def test_governance_lock_is_checked_then_bypassed_by_cleanup(s3_server, tmp_path):
    admin = S3Admin.of(s3_server)
    seen = {}

    def look():  # while the run's objects are there (behind the delete phase's markers): locked
        version = next(v for key, v in versions(admin, "govern", markers=False) if key == object_key("g1", 3))
        _, _, seen["head"] = admin.exchange("HEAD", "govern", object_key("g1", 3), query={"versionId": version})
        _, seen["lock"] = admin.request("GET", "govern", query={"object-lock": ""})

    workload = S3Workload(options(s3_server, "govern", create_bucket=True, object_lock="governance",
                                  retention="1d", objects=30, object_size="8KiB", concurrency=4))
    hooks = run(workload, tmp_path / "run", "g1", between=look)
    assert hooks.started_ == ["put", "get", "lock-check", "delete"]
    check = hooks.figures["lock-check"]
    assert (check["lock_delete_refused"], check["lock_overwrite_kept"], check["lock_applied"]) == (1, 1, 1)
    assert check["objects_checked"] == 5 and check["errors"] == 0
    assert hooks.figures["put"]["ops"] == 30 and hooks.details["put"]["object_lock"] == "governance"
    assert seen["head"]["x-amz-object-lock-mode"] == "GOVERNANCE" and b"Enabled" in seen["lock"]
    # Every version went (governance bypassed), then the bucket this run created.
    assert not admin.bucket_exists("govern")
    assert all(how == "removed" for how in hooks.removed_ids.values())


def test_multipart_under_a_lock(s3_server, tmp_path, caplog):
    workload = S3Workload(options(s3_server, "lockparts", create_bucket=True, object_lock="governance",
                                  retention="1h", objects=2, object_size="7MiB", multipart_threshold="5MiB",
                                  part_size="5MiB", concurrency=2))
    hooks = run(workload, tmp_path / "run", "lp1")
    assert hooks.figures["put"]["errors"] == 0 and hooks.figures["get"]["bytes"] == 2 * 7 * 2**20
    check = hooks.figures["lock-check"]
    if isinstance(s3_server, MotoServer):
        # moto (5.x) ignores the lock headers of CreateMultipartUpload: the objects it completes
        # carry no lock. The check says so, as it must of any server that does not lock them.
        assert (check["lock_applied"], check["lock_delete_refused"]) == (0, 0)
        assert "no GOVERNANCE lock on the object" in caplog.text and "immutability FAIL" in caplog.text
    else:
        assert (check["lock_applied"], check["lock_delete_refused"], check["lock_overwrite_kept"]) == (1, 1, 1)
    assert not S3Admin.of(s3_server).bucket_exists("lockparts")


def test_compliance_objects_are_left_listed_and_said(s3_server, tmp_path, caplog):
    admin = S3Admin.of(s3_server)
    workload = S3Workload(options(s3_server, "comply", create_bucket=True, object_lock="compliance",
                                  retention="4s", objects=6, object_size="4KiB", concurrency=2,
                                  s3_phases="put,lock-check"))
    caplog.set_level(logging.WARNING, logger="backupbench.s3")
    hooks = run(workload, tmp_path / "run", "k1")
    warnings = [r.getMessage() for r in caplog.records]
    assert "nobody can delete" in warnings[0]  # said before anything was written
    assert any("compliance retention until" in w and "bucket is left" in w for w in warnings)
    assert hooks.figures["lock-check"]["lock_delete_refused"] == 1
    kinds = {a["kind"]: i for i, a in hooks.artefacts.items()}
    assert hooks.removed_ids[kinds["s3-objects"]].startswith("kept: ")
    assert hooks.removed_ids[kinds["s3-bucket"]].startswith("kept: ")
    listed = (tmp_path / "run" / "retained.csv").read_text().splitlines()
    assert listed[0] == "key,version,retain_until" and len(listed) - 1 == len(versions(admin, "comply"))
    assert admin.bucket_exists("comply")
    # After the retention, `backupbench cleanup`'s removers take what is left.
    artefact = hooks.artefacts[kinds["s3-objects"]]
    env = {"AWS_ACCESS_KEY_ID": s3_server.access_key, "AWS_SECRET_ACCESS_KEY": s3_server.secret_key}
    early = remove_objects({**artefact, "credentials_from": "environment"}, "k1", environ=env, home=tmp_path)
    assert early.result == "failed" and "compliance retention until" in early.text
    time.sleep(5)
    late = remove_objects({**artefact, "credentials_from": "environment"}, "k1", environ=env, home=tmp_path)
    assert late.result == "removed", late.text
    gone = remove_bucket({**hooks.artefacts[kinds["s3-bucket"]], "credentials_from": "environment"}, "k1",
                         environ=env, home=tmp_path)
    assert gone.result == "removed" and not admin.bucket_exists("comply")


def test_a_bucket_without_lock_is_refused_before_writing(s3_server, tmp_path):
    admin = S3Admin.of(s3_server)
    admin.create_bucket("nolock")
    workload = S3Workload(options(s3_server, "nolock", object_lock="governance", retention="1d",
                                  create_bucket=True))
    with pytest.raises(RefusedError) as caught:
        workload.check(None)
    assert "has no object lock" in caught.value.one_line() and "\n" not in caught.value.one_line()
    assert admin.keys("nolock") == []


def test_delete_phase_on_a_locked_bucket_leaves_markers_that_cleanup_removes(s3_server, tmp_path):
    admin = S3Admin.of(s3_server)
    admin.exchange("PUT", "lockedkept", headers={"x-amz-bucket-object-lock-enabled": "true"})
    admin.put("lockedkept", "their/object")
    workload = S3Workload(options(s3_server, "lockedkept", object_lock="governance", retention="1d",
                                  objects=10, object_size="4KiB", concurrency=2))
    hooks = run(workload, tmp_path / "run", "dm1")
    assert hooks.figures["delete"]["ops"] == 10  # a DELETE on a versioned bucket: a delete marker
    assert [key for key, _ in versions(admin, "lockedkept")] == ["their/object"]  # theirs only, one version
