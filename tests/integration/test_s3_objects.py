"""What the s3 workload's objects are, against a real MinIO and moto's S3 server: their content (compressible,
incompressible, duplicates: read back through S3 and measured with zlib), random sizes,
multipart uploads, and the mixed phase. No timing is asserted."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import pytest
from s3_fixtures import Hooks, S3Admin, options

from backupbench.engines.s3_records import read_records
from backupbench.workloads.s3 import S3Workload
from backupbench.workloads.s3_options import object_key

pytestmark = pytest.mark.real


def written_objects(server, bucket: str, folder: Path, run_id: str, **values) -> tuple[Hooks, dict[int, bytes]]:
    """Run put (and whatever phases are given), fetch every object through S3 before cleanup."""
    workload = S3Workload(options(server, bucket, create_bucket=True, **values))
    hooks = Hooks()
    folder.mkdir()
    workload.check(None)
    try:
        workload.execute(None, folder, run_id, hooks)
        admin = S3Admin.of(server)
        written = {r.key for r in read_records(folder / "put.ops.csv.gz") if r.ok}
        objects = {key: admin.get(bucket, object_key(run_id, key)) for key in sorted(written)}
    finally:
        workload.cleanup(None, run_id, hooks)
    assert all(data is not None for data in objects.values())
    return hooks, objects  # type: ignore[return-value]


def ratio(objects: dict[int, bytes]) -> float:
    return sum(len(zlib.compress(d, 6)) for d in objects.values()) / sum(len(d) for d in objects.values())


@pytest.mark.parametrize("content, low, high", [
    ({"compress": 50}, 0.45, 0.55),
    ({}, 0.95, 1.01),
    ({"data": "pattern", "pattern": "0x55"}, 0.0, 0.01),
])
def test_content_compresses_as_asked(s3_server, tmp_path, content, low, high):
    hooks, objects = written_objects(s3_server, "content", tmp_path / "run", "c1", s3_phases="put",
                                     objects=40, object_size="256KiB", concurrency=8, **content)
    assert len(objects) == 40 and all(len(d) == 256 * 1024 for d in objects.values())
    assert low <= ratio(objects) <= high
    if not content:  # incompressible: fresh bytes in every object, not one payload reused
        assert len({d[4096:8192] for d in objects.values()}) == 40


def test_dedupe_makes_that_share_of_identical_objects(s3_server, tmp_path):
    _, objects = written_objects(s3_server, "dedupe", tmp_path / "run", "d1", s3_phases="put",
                                 objects=200, object_size="16KiB", concurrency=8, dedupe=30)
    counts: dict[str, int] = {}
    for data in objects.values():
        digest = hashlib.sha256(data).hexdigest()
        counts[digest] = counts.get(digest, 0) + 1
    duplicated = sum(n for n in counts.values() if n > 1)
    assert 0.25 <= duplicated / len(objects) <= 0.35
    assert 0.95 <= ratio({k: d for k, d in objects.items()}) <= 1.01  # dedupe alone: still random bytes


def test_random_sizes_are_moved_in_bytes(s3_server, tmp_path):
    hooks, objects = written_objects(s3_server, "sizes", tmp_path / "run", "s1", s3_phases="put,get",
                                     objects=60, object_size="10KiB-100KiB", concurrency=8)
    sizes = [len(d) for d in objects.values()]
    assert all(10 * 1024 <= s <= 100 * 1024 for s in sizes) and len(set(sizes)) > 30
    assert hooks.figures["put"]["bytes"] == hooks.figures["get"]["bytes"] == sum(sizes)
    assert hooks.figures["get"]["errors"] == 0  # GET knew every object's size


def test_large_objects_go_up_in_parts(s3_server, tmp_path):
    hooks, objects = written_objects(s3_server, "parts", tmp_path / "run", "m1", s3_phases="put,get",
                                     objects=3, object_size="11MiB", multipart_threshold="5MiB",
                                     part_size="5MiB", concurrency=3, compress=50)
    assert [len(d) for d in objects.values()] == [11 * 2**20] * 3
    assert 0.45 <= ratio(objects) <= 0.55  # parts are slices of the same content stream
    assert hooks.figures["put"]["errors"] == 0 and hooks.figures["get"]["bytes"] == 3 * 11 * 2**20


def test_multipart_etag_and_no_upload_left(s3_server, tmp_path):
    admin = S3Admin.of(s3_server)
    admin.create_bucket("etags")
    workload = S3Workload(options(s3_server, "etags", s3_phases="put", objects=2, object_size="6MiB",
                                  multipart_threshold="5MiB", part_size="5MiB", concurrency=2))
    hooks = Hooks()
    (tmp_path / "run").mkdir()
    workload.check(None)
    try:
        workload.execute(None, tmp_path / "run", "e1", hooks)
        _, _, headers = admin.exchange("HEAD", "etags", object_key("e1", 0))
        assert headers["etag"].strip('"').endswith("-2")  # two parts: a multipart ETag
    finally:
        workload.cleanup(None, "e1", hooks)
    _, body = admin.request("GET", "etags", query={"uploads": ""})
    assert b"<Upload>" not in body and admin.keys("etags") == []


def test_mixed_phase_has_figures_per_kind(s3_server, tmp_path):
    S3Admin.of(s3_server).create_bucket("mixed")
    workload = S3Workload(options(s3_server, "mixed", s3_phases="put,get,mixed,delete", objects=60,
                                  object_size="16KiB", concurrency=6, mix="put=40,get=40,list=10,delete=10"))
    hooks = Hooks()
    (tmp_path / "run").mkdir()
    workload.check(None)
    try:
        workload.execute(None, tmp_path / "run", "x1", hooks)
    finally:
        workload.cleanup(None, "x1", hooks)
    mixed = hooks.figures["mixed"]
    assert mixed["ops"] == 60 and mixed["errors"] == 0
    kinds = {kind: mixed[f"{kind}_ops"] for kind in ("put", "get", "list", "delete") if f"{kind}_ops" in mixed}
    assert set(kinds) >= {"put", "get"} and sum(kinds.values()) == mixed["ops"]
    assert mixed["get_bytes"] == mixed["get_ops"] * 16 * 1024 and mixed["put_effective_bw"] > 0
    assert mixed["get_errors"] == 0  # a mixed DELETE never takes an object a GET may ask for
    assert S3Admin.of(s3_server).keys("mixed") == []
