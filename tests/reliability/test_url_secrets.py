"""Secrets in the parts of a URL other than its userinfo (issue 37): an endpoint or agent address
with a secret in its query or fragment (`?secret=S`, `#S`, a presigned URL's `X-Amz-Signature`,
`?token=`, `?password=`...) was quoted whole in the refusal. Every spelling here goes through the
command lines (`run --workload s3 --endpoint`, a recipe's s3 entry through `plan` and `apply`,
`--agents`) with and without --json and --debug, and the secret must be in no line printed, no
--json error document and no file under the results folder. Every spelling is run by the CLI's
own `main` in this process (a new interpreter per command would take minutes); a few of them
by `python -m backupbench` as a user runs it too, where --debug's log goes to stderr. Port 1 is
never listened on: a spelling that got past the checks would fail to connect, not reach anything.

A secret counts as shown if any FRAGMENT_CHARS-long piece of it is.
"""

from __future__ import annotations

import json
import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from host_support import CliResult, run_cli

pytestmark = pytest.mark.real

FRAGMENT_CHARS = 10
SECRET = "PLANTEDq" + secrets.token_hex(8)

# Each a way a secret rides in a URL's query or fragment, with and without a scheme.
ENDPOINTS = [
    f"http://127.0.0.1:1/?secret={SECRET}",
    f"http://127.0.0.1:1/#{SECRET}",
    f"http://127.0.0.1:1#{SECRET}",
    f"http://127.0.0.1:1?X-Amz-Signature={SECRET}&X-Amz-Credential=AKIAEXAMPLE%2F20260101",
    f"http://127.0.0.1:1/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Security-Token={SECRET}",
    f"http://127.0.0.1:1/?token={SECRET}",
    f"http://127.0.0.1:1/?password={SECRET}",
    f"https://127.0.0.1:1/?{SECRET}",
    f"HTTP://127.0.0.1:1/?a=1&b=2#access_token={SECRET}",
    f"http://127.0.0.1:1/bucket?uploadId={SECRET}",
    f"http://[::1]:1/?sig={SECRET}",
    f"http://127.0.0.1:1/?sig=ab'{SECRET}",            # a quote inside: repr() changes its quotes
    f"http://127.0.0.1:1/?sig=ab {SECRET}",            # a space inside: no longer one word
    f"http://127.0.0.1:1/?sig=ab\t{SECRET}",
    f"http://127.0.0.1:1/?next=http://h/?t={SECRET}",
    f"http://127.0.0.1:1/?key=%2F{SECRET}%3D",
    f"  http://127.0.0.1:1/?token={SECRET}  ",
    f"http://user:pw@127.0.0.1:1/?token={SECRET}",     # refused for its userinfo first
    f"127.0.0.1:1/?token={SECRET}",                    # no scheme
    f"127.0.0.1:1#{SECRET}",
    f"127.0.0.1:1?{SECRET}",
]
AGENTS = [
    f"127.0.0.1:7480/?token={SECRET}",
    f"127.0.0.1:7480#{SECRET}",
    f"127.0.0.1:7480?{SECRET}",
    f"http://127.0.0.1:7480/?token={SECRET}",
    f"0.0.0.0:7480#{SECRET}",
    f"[::1]:7480#{SECRET}",
    f"10.0.0.5:7480,127.0.0.1:7480/?token={SECRET}",
]
# fio servers (--hosts): no URL, but a mistyped one is quoted back the same way.
HOSTS = [f"10.0.0.5#{SECRET}", f"10.0.0.5/?token={SECRET}", f"10.0.0.5:8765?{SECRET}", f"[::1]:8765#{SECRET}",
         f"10.0.0.6,10.0.0.5:8765/?sig={SECRET}"]


def _pieces(secret: str) -> set[str]:
    return {secret[i:i + FRAGMENT_CHARS] for i in range(len(secret) - FRAGMENT_CHARS + 1)}


def _run(tmp_path: Path, *args: str) -> CliResult:
    return run_cli(args, cwd=tmp_path, results=tmp_path / "results", env={"HOME": str(tmp_path)}, timeout=120)


def _in_process(capsys, *args: str) -> CliResult:
    from backupbench.cli.app import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return CliResult(code, out, err)


def _recipe(tmp_path: Path, n: int, endpoint: str) -> str:
    path = tmp_path / f"s3-{n}.toml"
    path.write_text(f'name = "r"\n[[layout]]\nname = "here"\nkind = "directory"\npath = "{tmp_path}"\n'
                    f'[[workload]]\nkind = "s3"\nendpoint = {json.dumps(endpoint)}\nbucket = "bucket-x"\n')
    return str(path)


def _commands(tmp_path: Path, endpoints: list[str], agents: list[str], few: bool = False) -> list[tuple[str, ...]]:
    token = tmp_path / "agent-token"
    token.write_text("t" * 40 + "\n")
    token.chmod(0o600)
    found: list[tuple[str, ...]] = []
    for n, endpoint in enumerate(endpoints):
        run = ("run", "--workload", "s3", "--endpoint", endpoint, "--bucket", "bucket-x")
        recipe = _recipe(tmp_path, n, endpoint)
        found += [(*run, "--json", "--debug"), ("apply", recipe, "--yes", "--debug")]
        if not few:
            found += [run, ("plan", recipe), ("plan", recipe, "--json", "--debug")]
    for address in agents:
        found += [("run", "--workload", "s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "bucket-x",
                   "--objects", "4", "--agents", address, "--agent-token-file", str(token), *extra)
                  for extra in ((("--json", "--debug"),) if few else ((), ("--json", "--debug")))]
    for hosts in HOSTS if not few else HOSTS[:1]:
        found += [("run", str(tmp_path), "--hosts", hosts, "--json", "--debug")]
    return found


def _assert_refused_without_the_secret(command: tuple[str, ...], done: CliResult) -> None:
    where = f"{command[:2]} {'--json' if '--json' in command else ''}"
    assert done.returncode in (2, 3), (where, done.stderr)  # input error, or refused
    assert "internal error" not in done.stderr, (where, done.stderr)
    shown = [piece for piece in _pieces(SECRET) if piece in done.stdout + done.stderr]
    assert not shown, (where, done.stdout + done.stderr)
    if "--json" in command:
        document = json.loads(done.stdout)
        assert document["kind"] == "backupbench.error" and document["exit_code"] == done.returncode, document
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("backupbench: "), (where, last)
    if "--agents" not in command and "--hosts" not in command:  # the endpoint is quoted, its secret's place marked
        assert "****" in last or "***@" in last, (where, last)


def _assert_stored_nowhere(tmp_path: Path) -> None:
    stored = [path for path in (tmp_path / "results").rglob("*") if path.is_file()
              and any(piece.encode() in path.read_bytes() for piece in _pieces(SECRET))]
    assert stored == []


def test_a_secret_in_a_urls_query_or_fragment_is_shown_nowhere(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("BACKUPBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    for command in _commands(tmp_path, ENDPOINTS, AGENTS):
        _assert_refused_without_the_secret(command, _in_process(capsys, *command))
    _assert_stored_nowhere(tmp_path)


def test_a_secret_in_a_urls_query_or_fragment_is_shown_nowhere_by_the_program(tmp_path):
    # A query, a fragment, one with a space inside, one without a scheme; an agent's address.
    commands = _commands(tmp_path, [ENDPOINTS[0], ENDPOINTS[1], ENDPOINTS[12], ENDPOINTS[-2]], [AGENTS[1]],
                         few=True)
    # In parallel: every command is a fresh interpreter of about a second.
    with ThreadPoolExecutor(max(2, min(8, os.cpu_count() or 2))) as pool:
        outcomes = list(pool.map(lambda command: (command, _run(tmp_path, *command)), commands))
    for command, done in outcomes:
        _assert_refused_without_the_secret(command, done)
    _assert_stored_nowhere(tmp_path)
