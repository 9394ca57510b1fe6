"""`backupbench run --workload s3` as a user types it, against a MinIO the test starts."""

from __future__ import annotations

import json

import pytest
from s3_fixtures import S3Admin

from backupbench.results.document import phase_figures

pytestmark = pytest.mark.real


def test_run_s3_from_the_command_line(cli, minio_single):
    env = {"AWS_ACCESS_KEY_ID": minio_single.access_key, "AWS_SECRET_ACCESS_KEY": minio_single.secret_key}
    args = ("run", "--workload", "s3", "--endpoint", minio_single.endpoint, "--bucket", "bb-cli",
            "--create-bucket", "--objects", "40", "--object-size", "64KiB", "--concurrency", "8")
    result = cli(*args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    run = document["run"]
    assert run["kind"] == "s3" and run["host"]["s3load"]
    phases = {op["name"]: phase_figures(op) for op in document["phases"]}
    assert list(phases) == ["put", "get", "delete"]
    assert phases["put"]["ops"] == phases["get"]["ops"] == 40 and phases["put"]["errors"] == 0
    assert phases["get"]["ttfb_p50_ns"] > 0
    assert not S3Admin.of(minio_single).bucket_exists("bb-cli")  # created by the run, removed empty
    secret = minio_single.secret_key
    folder = cli.results / "runs" / run["id"]
    assert all(secret not in p.read_text(errors="replace") for p in folder.rglob("*") if p.suffix != ".gz" and p.is_file())
    human = cli(*args, env=env)
    assert human.returncode == 0 and "objects/s" in human.stdout and "TTFB p50" in human.stdout


def test_s3_refusals_are_one_line(cli, minio_single, tmp_path):
    env = {"AWS_ACCESS_KEY_ID": minio_single.access_key, "AWS_SECRET_ACCESS_KEY": "wrong-secret"}
    result = cli("run", "--workload", "s3", "--endpoint", minio_single.endpoint, "--bucket", "bb-cli2",
                 "--create-bucket", env=env)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0 and len(lines) == 1 and "SignatureDoesNotMatch" in lines[0]
    assert "wrong-secret" not in result.stderr
    result = cli("run", str(tmp_path), "--workload", "s3", "--endpoint", minio_single.endpoint, "--bucket", "bb-x")
    assert result.returncode == 2 and "takes no PATH" in result.stderr
    assert not (cli.results / "runs").exists() or not list((cli.results / "runs").iterdir())


def test_content_block_size_and_lock_flags(cli, minio_single):
    env = {"AWS_ACCESS_KEY_ID": minio_single.access_key, "AWS_SECRET_ACCESS_KEY": minio_single.secret_key}
    result = cli("run", "--workload", "s3", "--endpoint", minio_single.endpoint, "--bucket", "bb-lockcli",
                 "--create-bucket", "--objects", "20", "--object-size", "lan", "--concurrency", "4",
                 "--compress", "50", "--object-lock", "governance", "--retention", "1d", "--json", env=env)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [op["name"] for op in document["phases"]] == ["put", "get", "lock-check", "delete"]
    settings = document["run"]["settings"]
    assert (settings["object_size"], settings["data"], settings["compress"]) == (512 * 1024, "compressible", 50)
    assert (settings["object_lock"], settings["retention"]) == ("governance", 86400.0)
    check = next(phase_figures(op) for op in document["phases"] if op["name"] == "lock-check")
    assert check["lock_delete_refused"] == check["lock_overwrite_kept"] == 1
    assert not S3Admin.of(minio_single).bucket_exists("bb-lockcli")


@pytest.mark.parametrize("flags, said", [
    (("--retention", "1d"), "retention applies to locked objects"),
    (("--compress", "50", "--pattern", "0xaa"), "do not apply to data = 'pattern'"),
    (("--object-size", "8MiB-1MiB"), "upside down"),
    (("--mix", "put=50"), "add mixed to s3_phases"),
    (("--s3-phases", "put,mixed", "--mix", "put=50,copy=5"), "copy is not one of"),
    (("--object-lock", "governance"), "needs a retention"),
])
def test_bad_input_is_one_line(cli, minio_single, flags, said):
    result = cli("run", "--workload", "s3", "--endpoint", minio_single.endpoint, "--bucket", "bb-bad", *flags)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0 and len(lines) == 1 and said in lines[0], result.stderr
