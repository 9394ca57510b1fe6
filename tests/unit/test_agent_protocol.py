"""The agent's gate: which requests, keys, paths, token files and addresses it refuses."""

from __future__ import annotations

import json
import os
import threading

import pytest

from backupbench.agent.jobs import Busy, JobSlot, STOPPED
from backupbench.agent.protocol import (MAX_BODY_BYTES, Hello, ProtocolError, S3Run, SmallFilesRun, check_subfolder,
                                        parse_request)
from backupbench.agent.runs import place, unplace
from backupbench.agent.startup import check_root, load_token, parse_listen
from backupbench.errors import InputError, RefusedError

SMALL = {"kind": "smallfiles-run", "run_id": "r1", "subfolder": "jobs/a", "files": 50, "file_size": 4096}
S3 = {"kind": "s3-run", "endpoint": "http://127.0.0.1:9000", "bucket": "bench", "prefix": "backupbench/r1/",
      "objects": 10, "object_size": 1024, "access_key": "AKIAEXAMPLE", "secret_key": "very-secret-key",
      "seed": 7}


def parse(data) -> object:
    return parse_request(json.dumps(data).encode())


def refused(data) -> str:
    with pytest.raises(ProtocolError) as caught:
        parse(data)
    assert "\n" not in caught.value.message
    return caught.value.message


def test_the_documented_requests_parse():
    assert isinstance(parse({"kind": "hello", "version": "0.1.0"}), Hello)
    small = parse(SMALL)
    assert isinstance(small, SmallFilesRun) and small.job().files == 50 and small.job().patterns == (0xAA,)
    s3 = parse({**S3, "ops": ["put", "get", "delete"]})
    assert isinstance(s3, S3Run) and s3.ops == ("put", "get", "delete")
    assert parse({"kind": "monitor", "since": 7}).since == 7
    assert parse({"kind": "stop", "job_id": "abc123"}).job_id == "abc123"


@pytest.mark.parametrize("kind", ["exec", "shell", "run", "HELLO", "", 5, None])
def test_unknown_kinds_are_refused(kind):
    assert "kind must be one of" in refused({"kind": kind})


def test_a_missing_kind_and_non_objects_are_refused():
    assert "kind must be one of" in refused({"version": "1"})
    for body in (b"[]", b"\"hello\"", b"not json", b"{"):
        with pytest.raises(ProtocolError):
            parse_request(body)


@pytest.mark.parametrize("data", [{"kind": "hello", "version": "1", "cmd": "id"}, {**SMALL, "root": "/"},
                                  {**S3, "records": "/etc/passwd"}, {"kind": "status", "job_id": "a", "x": 1}])
def test_extra_keys_are_refused(data):
    assert refused(data).startswith("unknown key")


@pytest.mark.parametrize("subfolder", ["../x", "a/../../b", "..", "/etc", "/", "a//b", "./a", ".hidden", "a/.",
                                       "", "a/b/", "a\\b", "a b", "x" * 300])
def test_path_escapes_and_odd_names_are_refused(subfolder):
    assert refused({**SMALL, "subfolder": subfolder}).startswith("subfolder:")
    with pytest.raises(ValueError):
        check_subfolder(subfolder)


def test_no_value_is_coerced():
    assert refused({**SMALL, "files": "50"}).startswith("files:")
    assert refused({"kind": "monitor", "since": -1}).startswith("since:")
    assert refused({**SMALL, "files": 0}).startswith("files:")


def test_the_content_keys_are_held_to_content_options_bounds_and_rules():
    """What a run's options refuse (workloads/content_options.py), an agent refuses too, in one
    line naming the key; what every controller sends (its content's byte beside any kind) passes."""
    assert refused({**SMALL, "data": "compressible", "compress": 100}).startswith("compress:")
    assert refused({**S3, "data": "compressible", "dedupe": -1}).startswith("dedupe:")
    assert refused({**SMALL, "compress": 30}).startswith("data:")  # compress does not apply to a pattern
    assert "compressible" in refused({**S3, "data": "incompressible", "dedupe": 10})
    assert refused({**SMALL, "pattern": 256}).startswith("pattern:")
    sent = parse({**S3, "data": "compressible", "compress": 50, "dedupe": 10, "pattern": 0xAA})
    assert (sent.content().kind, sent.content().compress, sent.content().dedupe) == ("compressible", 50, 10)
    assert parse({**S3, "data": "incompressible", "pattern": 0x55}).content().kind == "incompressible"


def test_an_s3_run_carries_the_seed_of_its_objects():
    """The controller sends each agent a seed of its own (workloads/s3_phase.py); none is assumed."""
    assert parse(S3).seed == 7 and parse({**S3, "seed": 2**63 - 1}).seed == 2**63 - 1
    without = {key: value for key, value in S3.items() if key != "seed"}
    assert refused(without).startswith("seed:")
    for bad in (-1, 2**63, "7", 7.0, None):
        assert refused({**S3, "seed": bad}).startswith("seed:"), bad


@pytest.mark.parametrize("change", [{"prefix": "other/r1/"}, {"prefix": "backupbench/"}, {"prefix": "backupbench/../x/"},
                                    {"endpoint": "file:///etc/passwd"}, {"endpoint": "http://u:p@h:1"},
                                    {"endpoint": "http://h:1/path"}, {"bucket": "Bad_Bucket"}, {"ops": ["get"]},
                                    {"ops": ["put", "delete", "get"]}, {"ops": ["put", "put"]}, {"op": "list"}])
def test_s3_requests_stay_in_their_prefix_and_endpoint_form(change):
    refused({**S3, **change})


@pytest.mark.parametrize("prefix", ["backupbench/r1/", "backupbench/20260101T000000-ab12/10.0.0.5-7480/",
                                    "backupbench/r1/fd00__1-7480/", "backupbench/r1/" + "a" * 100 + "/"])
def test_an_s3_prefix_is_the_runs_or_one_label_below_it(prefix):
    assert parse({**S3, "prefix": prefix}).prefix == prefix


@pytest.mark.parametrize("prefix", ["", "/", "backupbench/", "backupbench//", "backupbench/r1", "backupbench/r1/a",
                                    "/backupbench/r1/", "other/r1/", "backupbench/a/b/c/", "backupbench/r1/a/b/",
                                    "backupbench/../", "backupbench/../x/", "backupbench/r1/../", "backupbench/r1/./",
                                    "backupbench/r1//", "backupbench/.hidden/", "backupbench/r1/-x/",
                                    "backupbench/r 1/", "backupbench/r1/" + "a" * 101 + "/", "backupbench/r1/a\n/",
                                    "backupbench/r1/\n"])
def test_any_other_s3_prefix_is_refused(prefix):
    assert refused({**S3, "prefix": prefix}).startswith("prefix:")


# Issue 23: fields checked with `$`-anchored patterns took a final newline ("nl\n" got 202).
@pytest.mark.parametrize("data", [
    {**SMALL, "subfolder": "nl\n"}, {**SMALL, "subfolder": "jobs/a\n"}, {**SMALL, "run_id": "r1\n"},
    {**S3, "endpoint": "http://127.0.0.1:19400\n"}, {**S3, "endpoint": "http://127.0.0.1:19400/\n"},
    {**S3, "bucket": "bench\n"}, {**S3, "region": "us-east-1\n"}, {**S3, "prefix": "backupbench/r1/\n"},
    {"kind": "status", "job_id": "abc123\n"}, {"kind": "stop", "job_id": "abc123\n"},
    {**SMALL, "subfolder": "nl\r"}, {**S3, "bucket": "\nbench"}])
def test_a_value_with_a_newline_before_or_after_is_refused(data):
    where = refused(data).split(":")[0]
    assert where in data and "\n" not in where


def test_no_pattern_in_the_agent_is_anchored_with_a_dollar():
    """Every pattern the agent checks a request with is matched whole (re.fullmatch): `$` also
    matches before a final newline. The same for what it calls (the small-file engine's run id,
    the S3 run prefix). pydantic's `pattern=` is not used in the agent: its meaning depends on
    pydantic's regex engine."""
    import ast
    from pathlib import Path

    src = Path(__file__).parents[2] / "src" / "backupbench"
    files = [*sorted((src / "agent").glob("*.py")), src / "engines" / "smallfiles.py", src / "workloads" / "s3_options.py"]
    found, compiled = [], 0
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("compile", "search", "fullmatch", "sub") and node.args and isinstance(node.args[0], ast.Constant):
                compiled += 1
                if str(node.args[0].value).endswith("$"):
                    found.append(f"{path.name}:{node.lineno} {node.args[0].value!r}")
            if name == "match":
                found.append(f"{path.name}:{node.lineno} .match() (use fullmatch)")
            if path.parent.name == "agent" and any(k.arg == "pattern" for k in node.keywords):
                found.append(f"{path.name}:{node.lineno} pattern= (use a fullmatch validator)")
    assert not found, found
    assert compiled >= 10   # the patterns were really seen


def test_credentials_never_show_in_a_repr_or_an_error():
    request = parse(S3)
    assert "very-secret-key" not in repr(request)
    message = refused({**S3, "secret_key": 5})
    assert "very-secret-key" not in message and "secret_key" in message


def test_an_oversized_body_is_refused():
    with pytest.raises(ProtocolError, match="over"):
        parse_request(b" " * (MAX_BODY_BYTES + 1))


# ---- the token file -------------------------------------------------------------------------

def _token(tmp_path, mode=0o600, text="0123456789abcdef0123456789abcdef\n"):
    path = tmp_path / "token"
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_a_private_token_file_is_read(tmp_path):
    assert load_token(_token(tmp_path)) == b"0123456789abcdef0123456789abcdef"
    assert load_token(_token(tmp_path, 0o400)) == b"0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o666])
def test_a_token_file_others_can_read_is_refused(tmp_path, mode):
    with pytest.raises(RefusedError, match="chmod 600|others may read"):
        load_token(_token(tmp_path, mode))


def test_a_symlinked_missing_short_or_foreign_token_file_is_refused(tmp_path):
    real = _token(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(RefusedError, match="symlink"):
        load_token(link)
    with pytest.raises(InputError, match="does not exist"):
        load_token(tmp_path / "absent")
    with pytest.raises(InputError, match="at least"):
        load_token(_token(tmp_path, text="short\n"))
    with pytest.raises(RefusedError, match="not a regular file"):
        os.mkfifo(tmp_path / "fifo", 0o600)
        load_token(tmp_path / "fifo")
    if os.geteuid() == 0:
        os.chown(real, 65534, 65534)
        with pytest.raises(RefusedError, match="belongs to uid 65534"):
            load_token(real)


# ---- the root, the address -----------------------------------------------------------------

def test_a_subfolder_through_a_symlink_out_of_the_root_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    with pytest.raises(RefusedError, match="outside"):
        place(check_root(root), "escape/x")
    assert list(outside.iterdir()) == []
    folder, made = place(check_root(root), "a/b")
    assert folder == root / "a" / "b" and folder.is_dir() and made == [root / "a", root / "a" / "b"]
    unplace(made)
    assert sorted(p.name for p in root.iterdir()) == ["escape"]


def test_the_root_must_be_a_folder_and_not_slash(tmp_path):
    with pytest.raises(InputError):
        check_root(tmp_path / "absent")
    with pytest.raises(RefusedError):
        check_root("/")
    assert check_root(str(tmp_path)) == tmp_path.resolve()


@pytest.mark.parametrize("root", ["", " ", ".", "root", "./root", "root/../root"])
def test_an_empty_or_relative_root_is_refused(tmp_path, monkeypatch, root):
    # `--root ''` served the folder the agent was started in (issue 23).
    (tmp_path / "root").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as caught:
        check_root(root)
    assert caught.value.message.startswith("--root ") and ("empty" in caught.value.message
                                                         or "relative" in caught.value.message)


@pytest.mark.parametrize("text", ["0.0.0.0:80", "[::]:80", "localhost:80", "127.0.0.1", "127.0.0.1:99999", ":80"])
def test_listen_needs_one_address_and_a_port(text):
    with pytest.raises((InputError, RefusedError)):
        parse_listen(text)


# Issue 23: '[::ffff:0.0.0.0]:P' was taken, and bound every IPv4 address.
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "[::0]", "[0::0]", "[0:0:0:0:0:0:0:0]", "[::0.0.0.0]",
                                  "[::ffff:0.0.0.0]", "[::ffff:0:0]", "[0:0:0:0:0:ffff:0:0]", "[::FFFF:0.0.0.0]",
                                  "[::%lo]", "[::ffff:0.0.0.0%1]", "::ffff:0.0.0.0"])
def test_every_spelling_of_every_address_is_refused(host):
    with pytest.raises(RefusedError, match="every address"):
        parse_listen(f"{host}:7480")


@pytest.mark.parametrize("text", ["0:7480", "0.0:7480", "127.1:7480", "0x7f000001:7480", "2130706433:7480",
                                  " 127.0.0.1:7480", "127.0.0.1 :7480", "127.0.0.1\n:7480", "127.0.0.1:7480\n",
                                  "127.0.0.1:\u0667\u0664\u0668\u0660", "127.0.0.1:+80", "127.0.0.1:-1",
                                  "127.0.0.1:080000"])
def test_what_the_socket_functions_would_read_as_an_address_is_not_taken(text):
    # inet_aton reads '0' as 0.0.0.0 and '127.1' as 127.0.0.1; only ipaddress's spellings pass.
    with pytest.raises(InputError):
        parse_listen(text)


def test_listen_takes_v4_and_v6_literals():
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen("[::1]:7480") == ("::1", 7480)
    # An IPv4-mapped address is the IPv4 address it maps (listened on as such).
    assert parse_listen("[::ffff:127.0.0.1]:7480") == ("127.0.0.1", 7480)
    assert parse_listen("[::ffff:7f00:1]:7480") == ("127.0.0.1", 7480)


# ---- the job slot -----------------------------------------------------------------------------

def test_one_job_at_a_time_and_a_stop_reaches_the_job():
    slot, started = JobSlot(), threading.Event()

    def work(control):
        started.set()
        for _ in range(1000):   # bounded: ten seconds at most
            control.progress("p", 0.5, "")
            control.stop.wait(0.01)
        return {}

    job = slot.start("smallfiles-run", work)
    assert started.wait(5)
    with pytest.raises(Busy):
        slot.start("s3-run", lambda control: {})
    slot.stop(job.id)
    assert slot.stop_all(10)
    assert slot.get(job.id).state == STOPPED
