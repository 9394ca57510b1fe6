"""Where credentials come from, that they never show, and how S3 errors read (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from backupbench.engines.s3 import PhaseSpec, S3Engine, S3Target
from backupbench.engines.s3_errors import Asking, error_for
from backupbench.engines.s3_credentials import Credentials, resolve
from backupbench.redaction import redact
from backupbench.errors import EngineError, InputError, RefusedError, S3EngineError, S3InputError, S3RefusedError

ENV_KEY, ENV_SECRET = "AKIAENVIRONMENT00001", "env-secret-value-0001"
FILE_KEY, FILE_SECRET = "AKIAPROFILEFILE00002", "file-secret-value-0002"


def home_with(tmp_path: Path, credentials: str = "", config: str = "") -> Path:
    aws = tmp_path / ".aws"
    aws.mkdir()
    if credentials:
        (aws / "credentials").write_text(credentials)
    if config:
        (aws / "config").write_text(config)
    return tmp_path


PROFILES = f"""[default]
aws_access_key_id = {FILE_KEY}
aws_secret_access_key = {FILE_SECRET}

[lab]
aws_access_key_id = AKIALAB
aws_secret_access_key = lab-secret
aws_session_token = lab-token
"""


def test_options_win_over_everything(tmp_path):
    home = home_with(tmp_path, PROFILES)
    creds, _ = resolve(SecretStr("k"), SecretStr("s"), "lab", {"AWS_ACCESS_KEY_ID": ENV_KEY,
                                                               "AWS_SECRET_ACCESS_KEY": ENV_SECRET}, home)
    assert creds.source == "options" and creds.access_key.get_secret_value() == "k"


def test_named_profile_wins_over_the_environment(tmp_path):
    home = home_with(tmp_path, PROFILES)
    creds, _ = resolve(None, None, "lab", {"AWS_ACCESS_KEY_ID": ENV_KEY, "AWS_SECRET_ACCESS_KEY": ENV_SECRET}, home)
    assert creds.access_key.get_secret_value() == "AKIALAB"
    assert creds.session_token.get_secret_value() == "lab-token"
    assert creds.source == "profile 'lab' in ~/.aws/credentials"


def test_environment_then_aws_profile_then_default(tmp_path):
    home = home_with(tmp_path, PROFILES)
    env = {"AWS_ACCESS_KEY_ID": ENV_KEY, "AWS_SECRET_ACCESS_KEY": ENV_SECRET, "AWS_REGION": "eu-west-1"}
    creds, region = resolve(None, None, None, env, home)
    assert (creds.source, region) == ("environment", "eu-west-1")
    creds, _ = resolve(None, None, None, {"AWS_PROFILE": "lab"}, home)
    assert creds.access_key.get_secret_value() == "AKIALAB"
    creds, _ = resolve(None, None, None, {}, home)
    assert creds.access_key.get_secret_value() == FILE_KEY


def test_config_file_profile_and_region(tmp_path):
    home = home_with(tmp_path, config=f"[profile ceph]\nregion = default-placement\naws_access_key_id = {FILE_KEY}\n"
                                      f"aws_secret_access_key = {FILE_SECRET}\n")
    creds, region = resolve(None, None, "ceph", {}, home)
    assert creds.source == "profile 'ceph' in ~/.aws/config" and region == "default-placement"


def test_shared_credentials_file_variable(tmp_path):
    other = tmp_path / "elsewhere.ini"
    other.write_text(PROFILES)
    creds, _ = resolve(None, None, None, {"AWS_SHARED_CREDENTIALS_FILE": str(other)}, tmp_path)
    assert creds.access_key.get_secret_value() == FILE_KEY and creds.source.endswith("elsewhere.ini")


def test_missing_credentials_say_where_they_looked(tmp_path):
    with pytest.raises(InputError, match="no S3 credentials found") as caught:
        resolve(None, None, None, {"AWS_ACCESS_KEY_ID": ENV_KEY}, tmp_path)
    assert "only one of" in caught.value.message and ENV_KEY not in caught.value.one_line()
    with pytest.raises(InputError, match="profile 'nope' does not exist"):
        resolve(None, None, "nope", {}, home_with(tmp_path, PROFILES))


def test_broken_credentials_file_is_not_quoted(tmp_path):
    home = home_with(tmp_path, f"[default]\naws_secret_access_key = {FILE_SECRET}\n[default]\n")
    with pytest.raises(InputError) as caught:
        resolve(None, None, None, {}, home)
    assert FILE_SECRET not in caught.value.one_line()


def test_credentials_hide_themselves():
    creds = Credentials(SecretStr(ENV_KEY), SecretStr(ENV_SECRET), SecretStr("tok"), "environment")
    assert ENV_SECRET not in repr(creds) and ENV_KEY not in repr(creds)
    assert creds.env() == {"AWS_ACCESS_KEY_ID": ENV_KEY, "AWS_SECRET_ACCESS_KEY": ENV_SECRET,
                           "AWS_SESSION_TOKEN": "tok"}
    assert redact(f"failed with {ENV_SECRET} and {ENV_KEY}", creds.secrets()) == "failed with **** and ****"


def test_load_generator_argv_holds_no_credentials(tmp_path):
    engine = S3Engine(binary="/opt/backupbench-s3load")
    assert engine.argv(tmp_path / "put.config.json") == ["/opt/backupbench-s3load", str(tmp_path / "put.config.json")]


ASKING = Asking("http://127.0.0.1:9000", "backups", "checking the endpoint", "environment", 3.0, 8.0)


@pytest.mark.parametrize("kind, error_type, words", [
    ("InvalidAccessKeyId", S3InputError, ["InvalidAccessKeyId", "access key", "AWS_ACCESS_KEY_ID"]),
    ("SignatureDoesNotMatch", S3InputError, ["SignatureDoesNotMatch", "secret key", "--region"]),
    ("AccessDenied", S3RefusedError, ["denied", "backups/backupbench/*"]),
    ("connection-refused", S3InputError, ["connection refused", "--endpoint"]),
    ("timeout", S3InputError, ["no connection within 3 s", "--connect-timeout"]),
    ("tls", S3InputError, ["TLS", "--insecure-tls", "--ca-file"]),
    ("RequestTimeTooSkewed", S3InputError, ["clock"]),
    ("protocol", S3InputError, ["did not answer like S3"]),
    ("InternalError", S3EngineError, ["InternalError", "server's log"]),
    ("SomethingNew", S3EngineError, ["SomethingNew", "detail"]),
])
def test_errors_read_as_one_line_with_a_fix(kind, error_type, words):
    error = error_for({"event": "error", "kind": kind, "status": 403, "message": "detail\nmore"}, ASKING)
    assert type(error) is error_type and error.code == kind
    # The exit code stays the category's: bad input 2, a refusal 3, an engine failure 1.
    assert isinstance(error, {S3InputError: InputError, S3RefusedError: RefusedError,
                              S3EngineError: EngineError}[error_type])
    line = error.one_line()
    assert "\n" not in line
    for word in words:
        assert word in line


@pytest.mark.parametrize("stage, said, never", [
    # Connected, no answer: the connection did not fail, so a longer connect timeout is no fix.
    ("answer", ["accepted the connection but did not answer S3 within 8 s", "names the S3 service"],
     "--connect-timeout"),
    ("tls", ["accepted the connection but did not complete a TLS handshake within 3 s", "http://"],
     "--connect-timeout"),
    ("connect", ["no connection within 3 s", "--connect-timeout raises the limit"], "accepted"),
])
def test_a_timeout_says_what_it_waited_for(stage, said, never):
    line = error_for({"event": "error", "kind": "timeout", "stage": stage, "message": "x"}, ASKING).one_line()
    for words in said:
        assert words in line
    assert never not in line


def test_an_answer_that_is_not_s3_fails_the_check_in_one_line():
    event = {"event": "error", "kind": "not-s3", "status": 404, "not_s3": True,
             "message": "<html><body>Not here</body></html>\n<p>more</p>"}
    error = error_for(event, ASKING)
    assert type(error) is S3InputError and error.code == "not-s3"
    line = error.one_line()
    assert "\n" not in line and "does not speak S3" in line and "HTTP 404" in line
    assert "not a web server, console or proxy" in line


def test_progress_events_are_read_whole_and_reported(tmp_path):
    from backupbench.engines.s3 import PhaseSpec, _EventReader

    path = tmp_path / "put.events.jsonl"
    path.write_text('{"event":"progress","elapsed_s":1,"ops":10,"bytes":10485760,"errors":0}\n{"event":"prog')
    reader = _EventReader(path)
    events = reader.new()
    assert [e["ops"] for e in events] == [10]
    with path.open("a") as handle:
        handle.write('ress","elapsed_s":2,"ops":30,"bytes":31457280,"errors":2}\n')
    events += reader.new()
    assert [e["ops"] for e in events] == [10, 30]

    calls = []
    spec = PhaseSpec("put", "backupbench/r/", 2**20, 4, objects=100)
    last = S3Engine._report(events[0], spec, None, lambda f, d: calls.append((f, d)))
    S3Engine._report(events[1], spec, last, lambda f, d: calls.append((f, d)))
    assert calls[0] == (0.10, "10.0 MiB/s, 10 objects/s")
    assert calls[1] == (0.32, "20.0 MiB/s, 20 objects/s, 2 errors")
    timed = PhaseSpec("get", "backupbench/r/", 2**20, 4, objects=100, duration_s=4.0)
    S3Engine._report(events[1], timed, None, lambda f, d: calls.append((f, d)))
    assert calls[2][0] == 0.5


def test_progress_shows_retried_requests_only_when_there_are_some():
    calls = []
    spec = PhaseSpec("put", "backupbench/r/", 2**20, 4, objects=100)
    event = {"event": "progress", "elapsed_s": 1, "ops": 10, "bytes": 10485760, "errors": 1, "retried": 7}
    S3Engine._report(event, spec, None, lambda f, d: calls.append(d))
    S3Engine._report({**event, "retried": 0}, spec, None, lambda f, d: calls.append(d))
    assert calls == ["10.0 MiB/s, 10 objects/s, 1 errors, 7 retried", "10.0 MiB/s, 10 objects/s, 1 errors"]


def test_a_target_tells_the_loader_how_often_to_retry():
    config = S3Target("http://127.0.0.1:9000", "b", max_attempts=1).config()
    assert config["max_attempts"] == 1 and config["retry_base_s"] == 1.0
    assert S3Target("http://127.0.0.1:9000", "b").config()["max_attempts"] == 3  # the AWS SDKs' default
