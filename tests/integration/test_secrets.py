"""Secrets planted in every input that can carry one appear in no output and no stored file.

Inputs: the userinfo of an endpoint URL (`run --workload s3 --endpoint`, a recipe's s3 entry),
host and agent addresses written as URLs (`--hosts`, `--agents`, a recipe's [hosts]), and S3
keys given as flags, in the environment, in a profile file and as recipe keys, against a real
MinIO. Outputs: stdout and stderr of every command (plain, --json and --debug), and everything
under the results folder afterwards: the SQLite file's bytes, every raw file of every run
(gzip'd records read inflated too), and the journals. A secret counts as shown if any
FRAGMENT_CHARS-long piece of it is (pydantic, for one, cuts long values in the middle).
"""

from __future__ import annotations

import gzip
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
from host_support import CliResult, run_cli, start_cli
from s3_fixtures import S3Admin, require_s3_tools

pytestmark = pytest.mark.real

FRAGMENT_CHARS = 10
URL_SECRET = "PLANTEDurl" + secrets.token_hex(8)


class Trail:
    """Every command run, with what it printed; and the places the test then reads."""

    def __init__(self, tmp_path: Path, env: dict[str, str] | None = None):
        self.home = tmp_path / "home"
        self.home.mkdir(exist_ok=True)
        self.results = tmp_path / "results"
        self.cwd = tmp_path
        # A home of the test's own: no profile of the machine's user is ever read.
        self.env = {"HOME": str(self.home), **(env or {})}
        self.unset = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
        self.printed: list[tuple[str, str]] = []

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> CliResult:
        done = run_cli(args, cwd=self.cwd, results=self.results, env={**self.env, **(env or {})}, unset=self.unset,
                       timeout=timeout)
        self.printed.append((" ".join(args), done.stdout + done.stderr))
        return done

    def start(self, *args: str) -> subprocess.Popen:
        return start_cli(args, cwd=self.cwd, results=self.results, env=self.env, unset=self.unset)

    def stored(self) -> list[tuple[str, bytes]]:
        """Every file under the results folder, as bytes; gzip'd ones inflated as well."""
        found = []
        for path in sorted(self.results.rglob("*")) if self.results.exists() else []:
            if not path.is_file():
                continue
            data = path.read_bytes()
            found.append((str(path), data))
            if path.suffix == ".gz":
                found.append((f"{path} (inflated)", gzip.decompress(data)))
        return found

    def assert_nowhere(self, *planted: str) -> None:
        pieces = {secret[i:i + FRAGMENT_CHARS] for secret in planted
                  for i in range(max(1, len(secret) - FRAGMENT_CHARS + 1))}
        shown = [(where, piece) for where, text in self.printed for piece in pieces if piece in text]
        kept = [(where, piece) for where, data in self.stored() for piece in pieces if piece.encode() in data]
        assert not shown, f"printed by: {shown[:3]}"
        assert not kept, f"stored in: {kept[:3]}"
        assert self.printed, "no command was run"


def _recipe(folder: Path, name: str, text: str) -> str:
    path = folder / f"{name}.toml"
    path.write_text(text)
    return str(path)


def _assert_refused_shown_hidden(done: CliResult, hidden: bool = True) -> None:
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr.split("backupbench:")[-1]
    if hidden:
        assert "***@" in done.stderr, done.stderr


URLS = [
    f"http://planted-user:{URL_SECRET}@127.0.0.1:9000",
    f"https://{URL_SECRET}@127.0.0.1:9000",
    f"http://AKIAPLANTED:{URL_SECRET}/x+y@127.0.0.1:9000",     # a secret key with '/' typed unescaped
    f"http://user:p@ss{URL_SECRET}@127.0.0.1:9000/bucket",      # '@' unescaped, and a path
]


# Ids that hold no secret: the same in every xdist worker (the secret is drawn per process).
@pytest.mark.parametrize("url", URLS, ids=["user-password", "secret-as-user", "unescaped-slash", "unescaped-at-path"])
def test_an_endpoint_with_userinfo_is_refused_without_showing_it(tmp_path, url):
    trail = Trail(tmp_path)
    base = ("run", "--workload", "s3", "--endpoint", url, "--bucket", "bucket-x")
    for extra in ((), ("--json",), ("--debug",), ("--json", "--debug")):
        done = trail.run(*base, *extra)
        _assert_refused_shown_hidden(done)
        assert "credentials" in done.stderr
    entry = f'[[workload]]\nkind = "s3"\nendpoint = "{url}"\nbucket = "bucket-x"\n'
    recipe = _recipe(tmp_path, "s3", f'name = "r"\n[[layout]]\nname = "here"\nkind = "directory"\n'
                                     f'path = "{tmp_path}"\n{entry}')
    for command in (("plan", recipe), ("plan", recipe, "--json", "--debug"), ("apply", recipe, "--yes", "--debug")):
        _assert_refused_shown_hidden(trail.run(*command))
    trail.assert_nowhere(URL_SECRET)


def test_host_and_agent_addresses_written_as_urls_are_refused_without_showing_them(tmp_path):
    trail = Trail(tmp_path)
    token = tmp_path / "token"
    token.write_text("t" * 32)
    token.chmod(0o600)
    for extra in ((), ("--json", "--debug")):
        for hosts in (f"planted:{URL_SECRET}@127.0.0.1", f"10.0.0.5,planted:{URL_SECRET[:6]},{URL_SECRET[6:]}@h"):
            done = trail.run("run", "--hosts", hosts, "/srv", *extra)
            _assert_refused_shown_hidden(done, hidden=False)
            assert "--hosts must not carry credentials" in done.stderr
        for agents in (f"http://planted:{URL_SECRET}@127.0.0.1:7480", f"planted:{URL_SECRET}@127.0.0.1:7480"):
            done = trail.run("run", "--workload", "s3", "--endpoint", "http://127.0.0.1:9000", "--bucket", "bucket-x",
                             "--objects", "4", "--agents", agents, "--agent-token-file", str(token), *extra)
            _assert_refused_shown_hidden(done, hidden=False)
            assert "--agents must not carry credentials" in done.stderr
    hosts = _recipe(tmp_path, "hosts", f'name = "r"\n[hosts]\nnames = ["planted:{URL_SECRET}@127.0.0.1"]\n'
                                       'path = "/srv"\n[[workload]]\nkind = "kb2014"\n')
    agents = _recipe(tmp_path, "agents", f'name = "r"\n[hosts]\nagents = ["http://planted:{URL_SECRET}@127.0.0.1:7480"]\n'
                                         f'agent_token_file = "{token}"\n[[workload]]\nkind = "s3"\n'
                                         'endpoint = "http://127.0.0.1:9000"\nbucket = "bucket-x"\nobjects = 4\n')
    for recipe in (hosts, agents):
        for command in (("plan", recipe), ("plan", recipe, "--json", "--debug")):
            done = trail.run(*command)
            assert done.returncode in (2, 3) and "internal error" not in done.stderr, done.stderr
    trail.assert_nowhere(URL_SECRET)


def _s3_args(server, bucket: str, *extra: str) -> tuple[str, ...]:
    return ("run", "--workload", "s3", "--endpoint", server.endpoint, "--bucket", bucket, "--create-bucket",
            "--objects", "30", "--object-size", "4KiB", "--concurrency", "4", *extra)


def test_s3_keys_from_every_source_are_never_printed_or_stored(tmp_path, minio_single):
    require_s3_tools()
    key, secret = minio_single.access_key, minio_single.secret_key
    trail = Trail(tmp_path)
    # Flags, then the environment, then a profile file: three complete runs, each with --json and --debug.
    done = trail.run(*_s3_args(minio_single, "sec-flags", "--access-key", key, "--secret-key", secret,
                               "--json", "--debug"))
    assert done.returncode == 0, done.stderr
    env = {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}
    assert trail.run(*_s3_args(minio_single, "sec-env", "--debug"), env=env).returncode == 0
    profile = tmp_path / "credentials"
    profile.write_text(f"[planted]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n")
    done = trail.run(*_s3_args(minio_single, "sec-profile", "--profile", "planted", "--json", "--debug"),
                     env={"AWS_SHARED_CREDENTIALS_FILE": str(profile)})
    assert done.returncode == 0, done.stderr
    # The keys as recipe keys, measured on a directory layout's endpoint-less neighbour: an external endpoint.
    recipe = _recipe(tmp_path, "keys", f'name = "r"\n[[layout]]\nname = "here"\nkind = "directory"\n'
                                       f'path = "{tmp_path}"\n[[workload]]\nkind = "s3"\n'
                                       f'endpoint = "{minio_single.endpoint}"\nbucket = "sec-recipe"\n'
                                       f'create_bucket = true\nobjects = 30\nobject_size = "4KiB"\nconcurrency = 4\n'
                                       f'access_key = "{key}"\nsecret_key = "{secret}"\n')
    assert trail.run("plan", recipe, "--debug").returncode == 0
    done = trail.run("apply", recipe, "--yes", "--json", "--debug")
    assert done.returncode == 0, done.stderr
    # A key refused by the server, and a key among a refused command line (a --debug traceback).
    planted = "PLANTEDsecret" + secrets.token_hex(12)
    done = trail.run(*_s3_args(minio_single, "sec-wrong", "--access-key", key, "--secret-key", planted, "--debug"))
    assert done.returncode == 2 and "SignatureDoesNotMatch" in done.stderr, done.stderr
    done = trail.run(*_s3_args(minio_single, "sec-both", "--access-key", key, "--secret-key", planted,
                               "--duration", "5s", "--json", "--debug"))
    assert done.returncode == 2 and "objects or duration" in done.stderr, done.stderr
    # What reads the store back.
    for command in (("history",), ("show", "latest", "--json"), ("show", "latest", "--csv"),
                    ("export", "--prometheus"), ("report", "--html", str(tmp_path / "report.html"))):
        assert trail.run(*command, "--debug").returncode == 0, command
    trail.printed.append(("report.html", (tmp_path / "report.html").read_text()))
    assert not any(S3Admin.of(minio_single).bucket_exists(b) for b in ("sec-flags", "sec-env", "sec-profile"))
    trail.assert_nowhere(secret, key, planted)


def test_a_killed_s3_run_and_its_cleanup_keep_the_keys_out_of_the_journal(tmp_path, minio_single):
    require_s3_tools()
    key, secret = minio_single.access_key, minio_single.secret_key
    trail = Trail(tmp_path, env={"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret})
    args = _s3_args(minio_single, "sec-killed", "--quiet")
    args = (*args[:args.index("--objects")], "--objects", "20000", *args[args.index("--objects") + 2:])
    child = trail.start(*args, "--debug")
    try:
        for _ in range(600):  # bounded: 60 s until the PUT phase's loader is running
            if list(trail.results.glob("runs/*/put.events.jsonl")):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the PUT phase never started")
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    trail.printed.append(("killed run", out + err))
    journals = list((trail.results / "journal").glob("*.open.jsonl"))
    assert journals, "a killed run leaves its journal open"
    done = trail.run("cleanup", "--debug")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list((trail.results / "journal").glob("*.open.jsonl"))
    trail.assert_nowhere(secret, key)
