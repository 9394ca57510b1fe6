"""The s3 workload against real MinIO servers the tests start (one drive, and four drives with
erasure coding): counts, records, safety of other people's objects, bad input, secrets.
Small objects keep it quick; no timing is asserted except the bounds on failing fast."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import SecretStr
from s3_fixtures import Hooks, S3Admin, files_text, options, require_s3_tools

from backupbench.cli.progress import QuietReporter
from backupbench.engines.s3 import S3Engine
from backupbench.engines.s3_records import read_records
from backupbench.errors import EngineError, InputError, RefusedError
from backupbench.layouts.minio import MinioServer, free_port
from backupbench.process import running
from backupbench.monitor.options import MonitorOptions
from backupbench.runner.pipeline import RunRequest, execute
from backupbench.workloads.s3 import S3Workload
from backupbench.workloads.s3_options import S3Options, object_key

pytestmark = pytest.mark.real
FOREIGN = "their-backups/chain-0001.vbk"


def run_workload(workload: S3Workload, folder: Path, run_id: str, hooks: Hooks | None = None) -> Hooks:
    hooks = hooks or Hooks()
    folder.mkdir(exist_ok=True)
    workload.check(None)
    try:
        workload.execute(None, folder, run_id, hooks)
    finally:
        workload.cleanup(None, run_id, hooks)
    return hooks


class LoadGeneratorSpy:
    """The load generator behind a shell wrapper that records the argv and environment it is
    given, then execs the real binary with both unchanged. (Reading the child's
    /proc/<pid>/environ while it ran lost the race with a phase that ended first: the delete
    of 120 small objects, on a busy machine.)"""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir()
        self.binary = folder / "backupbench-s3load"   # the name commands.txt is checked for
        real = S3Engine().binary
        self.binary.write_text(f'''#!/bin/sh
call=$(mktemp "{folder}/call.XXXXXX")
printf '%s\\0' "$@" > "$call.argv"
cat /proc/$$/environ > "$call.env"
exec "{real}" "$@"
''')
        self.binary.chmod(0o755)

    def phases(self) -> list[tuple[list[bytes], bytes]]:
        """(argv after the binary, environment) of each measured phase's load generator."""
        calls = [(path.read_bytes().split(b"\0")[:-1], path.with_suffix(".env").read_bytes())
                 for path in sorted(self.folder.glob("call.*.argv"))]
        return [(argv, env) for argv, env in calls if argv and argv[0].endswith(b".config.json")]


# ---- runs ----------------------------------------------------------------------------------

def test_single_drive_run_through_the_pipeline(minio_single, tmp_path):
    admin = S3Admin.of(minio_single)
    admin.create_bucket("single")
    admin.put("single", FOREIGN)
    admin.put("single", "backupbench/other-run/obj-00000000")  # another run's object: not ours either
    spy = LoadGeneratorSpy(tmp_path / "spy")
    workload = S3Workload(options(minio_single, "single"), engine=S3Engine(binary=spy.binary))
    results = tmp_path / "results"
    record = execute(RunRequest(workload=workload, results=results, monitor=MonitorOptions()),
                     QuietReporter())

    assert record.status == "complete", record.error
    assert [op.name for op in record.operations] == ["put", "get", "delete"]
    run_dir = results / "runs" / record.run_id
    for op in record.operations:
        f = op.figures
        assert (f["ops"], f["errors"]) == (120, 0), op.name
        assert f["objects_per_s"] > 0 and f["lat_p50_ns"] <= f["lat_p90_ns"] <= f["lat_p99_ns"]
        records = read_records(run_dir / f"{op.name}.ops.csv.gz")
        assert sorted(r.key for r in records) == list(range(120))
        assert op.detail["records"] == f"{op.name}.ops.csv.gz" and op.detail["errors_by_kind"] == {}
    put, get, delete = (op.figures for op in record.operations)
    assert put["bytes"] == get["bytes"] == 120 * 64 * 1024
    assert get["effective_bw"] > 0 and 0 < get["ttfb_p50_ns"] <= get["ttfb_p99_ns"]
    assert delete["bytes"] == 0

    # Only the run's own objects went; the others are intact.
    assert admin.keys("single") == ["backupbench/other-run/obj-00000000", FOREIGN]
    assert admin.get("single", FOREIGN) == b"not backupbench's"
    fmt = json.loads((minio_single.drives[0] / ".minio.sys" / "format.json").read_text())
    assert fmt["format"] == "xl-single"

    # Credentials: not in the child's argv (but in its environment), not in any stored file.
    phases = spy.phases()
    assert len(phases) == 3  # one load generator per phase
    secret, key = minio_single.secret_key.encode(), minio_single.access_key.encode()
    for argv, env in phases:
        assert len(argv) == 1 and all(secret not in arg and key not in arg for arg in argv)
        assert b"AWS_SECRET_ACCESS_KEY=" + secret in env.split(b"\0")
    stored = files_text(run_dir) + "\n" + (results / "results.db").read_bytes().decode(errors="replace")
    assert minio_single.secret_key not in stored and minio_single.access_key not in stored
    settings = json.loads((run_dir / "settings.json").read_text())
    assert settings["bucket"] == "single" and "secret_key" not in settings and "access_key" not in settings
    assert "backupbench-s3load" in (run_dir / "commands.txt").read_text()


def test_erasure_coded_four_drives_without_a_delete_phase(minio_ec4, tmp_path):
    admin = S3Admin.of(minio_ec4)
    admin.create_bucket("ecbucket")
    admin.put("ecbucket", FOREIGN)
    workload = S3Workload(options(minio_ec4, "ecbucket", s3_phases="put,get", object_size="256KiB"))
    hooks = run_workload(workload, tmp_path / "run", "ec1")
    assert hooks.started_ == ["put", "get"]
    assert hooks.figures["put"]["ops"] == hooks.figures["get"]["ops"] == 120
    assert hooks.figures["get"]["bytes"] == 120 * 256 * 1024
    # One erasure set over the four drives (format "xl"; a single drive is "xl-single").
    for drive in minio_ec4.drives:
        fmt = json.loads((drive / ".minio.sys" / "format.json").read_text())
        assert fmt["format"] == "xl" and [len(s) for s in fmt["xl"]["sets"]] == [4]
        assert (drive / "ecbucket" / FOREIGN).is_dir()  # every drive holds a shard of every object
    # No delete phase measured, but cleanup removed the run's objects, and only those.
    assert admin.keys("ecbucket") == [FOREIGN]


def test_timed_run_reads_what_it_wrote(minio_single, tmp_path):
    S3Admin.of(minio_single).create_bucket("timed")
    workload = S3Workload(options(minio_single, "timed", objects=None, duration="1s", concurrency=8))
    hooks = run_workload(workload, tmp_path / "run", "t1")
    put, get, delete = (hooks.figures[p] for p in ("put", "get", "delete"))
    assert put["ops"] > 0 and put["runtime"] >= 1.0
    assert get["ops"] > 0 and get["runtime"] >= 1.0 and get["errors"] == 0
    assert delete["ops"] == put["ops"] + put["errors"]
    assert S3Admin.of(minio_single).keys("timed") == []


def test_create_bucket_makes_and_removes_only_its_own_bucket(minio_single, tmp_path):
    admin = S3Admin.of(minio_single)
    assert not admin.bucket_exists("fresh")
    hooks = run_workload(S3Workload(options(minio_single, "fresh", create_bucket=True, objects=20)),
                         tmp_path / "run", "c1")
    assert hooks.details["put"]["bucket_created"] is True
    assert not admin.bucket_exists("fresh")
    # The bucket and the prefix were written down before they were made, and marked gone after.
    kinds = {a["kind"]: i for i, a in hooks.artefacts.items()}
    assert hooks.artefacts[kinds["s3-objects"]]["prefix"] == "backupbench/c1/"
    assert hooks.artefacts[kinds["s3-bucket"]]["bucket"] == "fresh"
    assert all(secret not in str(hooks.artefacts) for secret in (minio_single.access_key, minio_single.secret_key))
    assert hooks.removed_ids == {kinds["s3-objects"]: "removed", kinds["s3-bucket"]: "removed"}
    # An existing bucket is used, not created, and kept.
    admin.create_bucket("kept")
    run_workload(S3Workload(options(minio_single, "kept", create_bucket=True, objects=20)), tmp_path / "run2", "c2")
    assert admin.bucket_exists("kept") and admin.keys("kept") == []


def test_interrupt_mid_put_stops_the_generator_and_cleans_up(minio_single, tmp_path):
    S3Admin.of(minio_single).create_bucket("intr")
    started = []

    def interrupt(name, fraction):
        if name == "put" and fraction > 0.05:
            raise KeyboardInterrupt

    engine = S3Engine(poll_seconds=0.05, on_start=lambda child: started.append(child))
    workload = S3Workload(options(minio_single, "intr", objects=3000, concurrency=4), engine=engine)
    with pytest.raises(KeyboardInterrupt):
        run_workload(workload, tmp_path / "run", "i1", Hooks(on_progress=interrupt))
    assert len(started) == 1 and not started[0].running()
    assert S3Admin.of(minio_single).keys("intr") == []


# ---- safety ---------------------------------------------------------------------------------

def test_a_prefix_already_in_use_is_refused_and_left_alone(minio_single, tmp_path):
    admin = S3Admin.of(minio_single)
    admin.create_bucket("busy")
    theirs = object_key("taken", 7)
    admin.put("busy", theirs)
    workload = S3Workload(options(minio_single, "busy"))
    with pytest.raises(RefusedError, match="already holds objects under backupbench/taken/"):
        run_workload(workload, tmp_path / "run", "taken")
    assert admin.keys("busy") == [theirs]


def test_missing_bucket_is_refused_without_create_bucket(minio_single):
    workload = S3Workload(options(minio_single, "no-such-bucket"))
    with pytest.raises(RefusedError) as caught:
        workload.check(None)
    assert "does not exist" in caught.value.message and "--create-bucket" in caught.value.fix
    assert not S3Admin.of(minio_single).bucket_exists("no-such-bucket")


def test_removing_a_prefix_from_a_bucket_that_is_not_there_removes_nothing(minio_single, monkeypatch):
    from backupbench.engines import s3 as s3_engine

    monkeypatch.setattr(s3_engine, "NO_SUCH_BUCKET_PAUSE_S", 0.0)
    workload = S3Workload(options(minio_single, "no-such-bucket"))
    target, creds = workload.connect()
    assert workload.engine.delete_prefix(target, creds, "backupbench/20261124T000000-abcd1234/") == 0
    assert not S3Admin.of(minio_single).bucket_exists("no-such-bucket")


# ---- bad input: fails fast, one line, no secret ------------------------------------------------

def failure(workload: S3Workload) -> tuple[Exception, float]:
    began = time.monotonic()
    with pytest.raises((InputError, RefusedError, EngineError)) as caught:
        workload.check(None)
    return caught.value, time.monotonic() - began


def test_dead_port_fails_within_seconds(minio_single):
    port = free_port()
    o = S3Options(endpoint=f"http://127.0.0.1:{port}", bucket="x-bucket", access_key=SecretStr("k" * 20),
                  secret_key=SecretStr("s" * 40))
    error, seconds = failure(S3Workload(o))
    assert isinstance(error, InputError) and "connection refused" in error.message
    assert seconds < 60  # does not hang: the bound is connect_timeout, not a speed


def test_silent_endpoint_times_out_within_the_bound(tmp_path):
    require_s3_tools()
    # Accepts connections (the kernel completes them), never answers.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        o = S3Options(endpoint=f"http://127.0.0.1:{port}", bucket="x-bucket", access_key=SecretStr("k" * 20),
                      secret_key=SecretStr("s" * 40), connect_timeout="1s")
        error, seconds = failure(S3Workload(o))
    assert isinstance(error, InputError) and "accepted the connection but did not answer S3" in error.message
    assert "--connect-timeout" not in error.one_line()  # the connection was made: its timeout is no fix
    assert seconds < 60  # does not hang


@pytest.mark.parametrize("wrong, code", [("access", "InvalidAccessKeyId"), ("secret", "SignatureDoesNotMatch")])
def test_wrong_credentials_name_the_code_and_the_fix(minio_single, wrong, code):
    S3Admin.of(minio_single).request("PUT", "creds")
    bad = "WRONG" + "x" * 30
    keys = {"access_key": SecretStr(bad if wrong == "access" else minio_single.access_key),
            "secret_key": SecretStr(bad if wrong == "secret" else minio_single.secret_key)}
    o = S3Options(endpoint=minio_single.endpoint, bucket="creds", **keys)
    error, seconds = failure(S3Workload(o))
    line = error.one_line()
    assert isinstance(error, InputError) and code in line and "AWS_ACCESS_KEY_ID" in line
    assert bad not in line and minio_single.secret_key not in line
    assert seconds < 60  # does not hang


def test_https_to_a_plain_http_server_is_a_tls_error(minio_single):
    o = S3Options(endpoint=minio_single.endpoint.replace("http://", "https://"), bucket="x-bucket",
                  access_key=SecretStr(minio_single.access_key), secret_key=SecretStr(minio_single.secret_key))
    error, _ = failure(S3Workload(o))
    assert isinstance(error, InputError) and "TLS" in error.message and "--insecure-tls" in error.fix


def test_credentials_from_the_environment(minio_single, tmp_path):
    S3Admin.of(minio_single).create_bucket("envcreds")
    env = {"AWS_ACCESS_KEY_ID": minio_single.access_key, "AWS_SECRET_ACCESS_KEY": minio_single.secret_key}
    o = S3Options(endpoint=minio_single.endpoint, bucket="envcreds", objects=10, concurrency=2,
                  object_size="4KiB", s3_phases="put")
    workload = S3Workload(o, environ=env, home=tmp_path)
    hooks = run_workload(workload, tmp_path / "run", "env1")
    assert hooks.details["put"]["credentials_from"] == "environment"
    assert hooks.figures["put"]["ops"] == 10


# ---- the MinIO helper ----------------------------------------------------------------------

def test_minio_server_lifecycle(tmp_path):
    require_s3_tools()
    drive = tmp_path / "d"
    drive.mkdir()
    server = MinioServer([drive])
    with server:
        pid = server._child.proc.pid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert server.secret_key.encode() not in cmdline and server.access_key.encode() not in cmdline
        assert server.endpoint.startswith("http://127.0.0.1:")
        assert server.secret_key not in repr(server) and server.secret_key not in repr(server.connection())
        port = server.port
    assert not server.running()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_minio_refuses_folders_with_foreign_files(tmp_path):
    require_s3_tools()
    drive = tmp_path / "d"
    drive.mkdir()
    (drive / "precious.txt").write_text("keep")
    with pytest.raises(RefusedError, match="not MinIO's"):
        MinioServer([drive])
    with pytest.raises(InputError, match="not a folder"):
        MinioServer([tmp_path / "missing"])


def test_minio_dies_with_a_killed_backupbench(tmp_path):
    """Even SIGKILL of the process that started it (no atexit, no finally) ends the server."""
    require_s3_tools()
    drive = tmp_path / "d"
    drive.mkdir()
    script = ("import sys, time; from pathlib import Path; from backupbench.layouts.minio import MinioServer\n"
              f"s = MinioServer([Path({str(drive)!r})], log_path=Path({str(tmp_path / 'minio.log')!r})).start()\n"
              "print(s._child.proc.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        assert Path(f"/proc/{pid}").exists()
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and running(pid):
        time.sleep(0.05)
    assert not running(pid), "minio outlived the process that started it"


def test_tls_endpoint_with_a_self_signed_certificate(tmp_path):
    """Unverifiable certificate -> a TLS error naming the fixes; each fix then works."""
    require_s3_tools()
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (needed to make a test certificate)")
    certs, drive = tmp_path / "certs", tmp_path / "d"
    certs.mkdir()
    drive.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(certs / "private.key"), "-out", str(certs / "public.crt"),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    with MinioServer([drive], certs_dir=certs) as server:
        assert server.endpoint.startswith("https://")
        o = dict(object_size="4KiB", objects=10, concurrency=2, s3_phases="put", create_bucket=True)
        error, seconds = failure(S3Workload(options(server, "tlsbucket", **o)))
        assert isinstance(error, InputError) and "TLS" in error.message and "--ca-file" in error.fix
        assert "certificate" in error.message and seconds < 60
        hooks = run_workload(S3Workload(options(server, "tlsbucket", insecure_tls=True, **o)), tmp_path / "r1", "tls1")
        assert hooks.figures["put"]["ops"] == 10
        hooks = run_workload(S3Workload(options(server, "tlsbucket", ca_file=str(certs / "public.crt"), **o)),
                             tmp_path / "r2", "tls2")
        assert hooks.figures["put"]["ops"] == 10
