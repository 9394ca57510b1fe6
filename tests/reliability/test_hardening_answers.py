"""The hostile trial's findings of issue 23 (secrets, S3 endpoint messages, wrong answers), each
tried the way the trial found it, more than once and in more shapes than its regression test:

- secrets of every shape ('/', '@', ':', '%', '+', unicode; seeded) in endpoint URLs, recipe
  endpoints, --hosts and --agents: refused, and found in no output and no stored byte;
- endpoints that are no S3 service (a black hole, web servers with and without TLS): one line
  each, naming what happened, before any run is opened;
- the small-file caption for several pattern lists, run for real;
- results, journal, --html and --csv paths of many lengths through every command that takes
  them: one line, never an internal error;
- cleanup racing runs' normal ends (journals closed between listing and opening): never a
  failure, in-process thousands of times and with the real commands;
- a --hosts run with a host lost for good (namespaces, real fio servers): tables shown, run
  complete, the leftover named; cleanup reports it while the host is down, removes it once back.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest
from host_support import CliResult, run_cli, start_cli
from local_servers import black_hole, web_server
from s3_fixtures import require_s3_tools

pytestmark = pytest.mark.real

SEED = int(os.environ.get("BACKUPBENCH_TRIAL_SEED", "20261123"))
TINY_SMALLFILES = ("--workload", "smallfiles", "--files", "60", "--file-size", "4KiB", "--threads", "2",
                   "--no-monitor", "--quiet")


def _bb(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> CliResult:
    """In `cwd`, its results there too, without this machine's S3 credentials unless given."""
    return run_cli(args, cwd=cwd, results=cwd / "results", env={"HOME": str(cwd), **(env or {})},
                   unset=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"), timeout=timeout)


def _one_line_not_internal(done: CliResult) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode not in (0, 70) and len(lines) == 1, done.stderr
    assert "internal error" not in lines[0] and "Traceback" not in done.stderr
    return lines[0]


# ---- secrets ----------------------------------------------------------------------------------

SECRET_ALPHABET = "abcXYZ0189/+=%:@!~-_.é"


def _secrets(count: int) -> list[str]:
    rng = random.Random(f"{SEED}/secrets")
    return ["PLANT" + "".join(rng.choice(SECRET_ALPHABET) for _ in range(rng.randint(12, 40))) for _ in range(count)]


def _fragments(secret: str, size: int = 10) -> set[str]:
    return {secret[i:i + size] for i in range(len(secret) - size + 1)}


@pytest.mark.parametrize("secret", _secrets(6))
def test_secrets_of_every_shape_are_refused_and_shown_nowhere(tmp_path, secret):
    token = tmp_path / "token"
    token.write_text("t" * 32)
    token.chmod(0o600)
    url = f"http://someone:{secret}@127.0.0.1:9000"
    toml_url = url.replace("\\", "\\\\").replace('"', '\\"')
    recipe = tmp_path / "r.toml"
    recipe.write_text(f'name = "r"\n[[layout]]\nname = "here"\nkind = "directory"\npath = "{tmp_path}"\n'
                      f'[[workload]]\nkind = "s3"\nendpoint = "{toml_url}"\nbucket = "bucket-x"\n')
    commands = [["run", "--workload", "s3", "--endpoint", url, "--bucket", "bucket-x"],
                ["run", "--hosts", f"someone:{secret}@127.0.0.1", "/srv"],
                ["run", "--workload", "s3", "--endpoint", "http://127.0.0.1:9", "--bucket", "bucket-x",
                 "--objects", "4", "--agents", url.replace(":9000", ":7480"), "--agent-token-file", str(token)],
                ["plan", str(recipe)], ["apply", str(recipe), "--yes"]]
    printed = []
    for command in commands:
        for extra in ([], ["--json", "--debug"]):
            done = _bb([*command, *extra], tmp_path)
            assert done.returncode in (2, 3) and "internal error" not in done.stderr, done.stderr
            printed.append(done.stdout + done.stderr)
    stored = [p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()] \
        if (tmp_path / "results").exists() else []
    for piece in _fragments(secret):
        assert not any(piece in text for text in printed), piece
        assert not any(piece.encode() in data for data in stored), piece


# ---- endpoints that are no S3 service -------------------------------------------------------

def _s3_check(tmp_path: Path, endpoint: str, *extra: str) -> CliResult:
    keys = {"AWS_ACCESS_KEY_ID": "AKIARELIABILITY0001", "AWS_SECRET_ACCESS_KEY": "reliability-secret-000000"}
    return _bb(["run", "--workload", "s3", "--endpoint", endpoint, "--bucket", "bucket-x", "--objects", "10",
                "--connect-timeout", "1s", "--create-bucket", *extra], tmp_path, env=keys)


def test_endpoints_that_are_no_s3_service_get_one_line_each_and_no_run(tmp_path):
    require_s3_tools()
    said = {}
    with black_hole() as port:
        for scheme in ("http", "https"):
            for _attempt in range(2):  # the same answer twice: nothing in it depends on timing
                line = _one_line_not_internal(_s3_check(tmp_path, f"{scheme}://127.0.0.1:{port}", "--insecure-tls"))
                said.setdefault(f"black hole {scheme}", set()).add(line.split(" within ")[0])
                assert "accepted the connection" in line and "--connect-timeout" not in line
    for status in (200, 301, 403, 404, 500):
        for tls in (False, True):
            with web_server(status, tmp_path if tls else None) as port:
                scheme = "https" if tls else "http"
                line = _one_line_not_internal(_s3_check(tmp_path, f"{scheme}://127.0.0.1:{port}", "--insecure-tls"))
            assert "does not speak S3" in line and f"HTTP {status}" in line, line
    assert all(len(lines) == 1 for lines in said.values()), said
    runs = tmp_path / "results" / "runs"
    assert not runs.exists() or not any(runs.iterdir())


# ---- the small-file caption ------------------------------------------------------------------

@pytest.mark.parametrize("patterns, caption", [
    ("0x00", "data: constant pattern 0x00"),
    ("0x55", "data: constant pattern 0x55"),
    ("0x00,0xff", "data: constant pattern per pass: 0x00, 0xff"),
    ("0xaa,0xaa,0xaa", "data: constant pattern 0xaa"),
])
def test_the_small_file_caption_says_what_the_passes_wrote(tmp_path, patterns, caption):
    target = tmp_path / "target"
    target.mkdir()
    done = _bb(["run", str(target), *TINY_SMALLFILES, "--data", "pattern", "--patterns", patterns], tmp_path)
    assert done.returncode == 0, done.stderr
    assert caption in " ".join(done.stdout.split())
    shown = _bb(["show", "latest"], tmp_path)
    assert caption in " ".join(shown.stdout.split())
    if "0xaa" not in patterns:
        assert "0xaa" not in done.stdout
    assert list(target.iterdir()) == []


# ---- paths too long --------------------------------------------------------------------------

def _long_paths(base: Path) -> list[Path]:
    deep = base / "/".join(["d" * 120] * 5)  # every name fine, past SQLite's 511 bytes
    return [base / ("n" * 256), base / ("n" * 400), deep, base / "/".join(["e" * 250] * 17)]


@pytest.mark.parametrize("command", [["report"], ["cleanup"], ["history"], ["show", "latest"],
                                     ["export", "--prometheus"], ["run", *TINY_SMALLFILES]])
def test_results_paths_of_every_length_are_one_line(tmp_path, command):
    for results in _long_paths(tmp_path):
        for how in ("flag", "environment", "xdg"):
            env = {"BACKUPBENCH_RESULTS": str(results)} if how == "environment" else {}
            if how == "xdg":
                env = {"BACKUPBENCH_RESULTS": "", "XDG_DATA_HOME": str(results)}
            args = [*command, *(["--results", str(results)] if how == "flag" else [])]
            if command[0] == "run":
                args.insert(1, str(tmp_path))
            line = _one_line_not_internal(_bb(args, tmp_path, env=env))
            assert "too long" in line or "bytes" in line, line
    assert not any(p.name.startswith("bb-scratch-") for p in tmp_path.iterdir())


def test_journal_html_and_csv_paths_too_long_are_one_line(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    assert _bb(["run", str(target), *TINY_SMALLFILES], tmp_path).returncode == 0
    for long in _long_paths(tmp_path)[:2] + [_long_paths(tmp_path)[3]]:
        _one_line_not_internal(_bb(["cleanup"], tmp_path, env={"BACKUPBENCH_JOURNAL_DIR": str(long)}))
        _one_line_not_internal(_bb(["report", "--html", f"{long}.html"], tmp_path))
        _one_line_not_internal(_bb(["monitor", "--duration", "1", "--csv", f"{long}.csv"], tmp_path))
        _one_line_not_internal(_bb(["run", str(long), *TINY_SMALLFILES], tmp_path))


# ---- cleanup racing runs that end normally ---------------------------------------------------

def test_cleanup_racing_journals_that_close_never_reports_a_failure(tmp_path):
    """In-process: journals opened and closed as fast as they can be while clean_journals sweeps
    the folder over and over; every close races a listing."""
    from backupbench.journal import Journal
    from backupbench.runner.cleanup import clean_journals

    folder = tmp_path / "journal"
    stop = threading.Event()
    closed = []

    def runs() -> None:
        n = 0
        while not stop.is_set() and n < 3000:
            journal = Journal(folder, f"20261125T000000-{n:08x}")
            journal.close()
            closed.append(n)
            n += 1
        stop.set()

    runner = threading.Thread(target=runs)
    runner.start()
    problems, sweeps = [], 0
    try:
        while not stop.is_set():
            for item in clean_journals(folder):
                if item.refused or item.report.failed:
                    problems.append(item.refused or item.report.failed)
            sweeps += 1
    finally:
        stop.set()
        runner.join()
    assert closed and sweeps > 10
    assert not problems, problems[:3]
    assert not list(folder.glob("*.open.jsonl"))


def test_cleanup_during_real_runs_never_says_failed(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    runs = [start_cli(["run", str(target), *TINY_SMALLFILES], cwd=tmp_path, results=tmp_path / "results",
                      stdout=subprocess.DEVNULL) for _ in range(3)]
    cleanups = []
    try:
        while any(run.poll() is None for run in runs):
            cleanups.append(_bb(["cleanup"], tmp_path))
        for run in runs:
            assert run.wait(timeout=120) == 0, run.stderr.read()
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait()
    cleanups.append(_bb(["cleanup"], tmp_path))
    for done in cleanups:
        assert done.returncode == 0 and "FAILED" not in done.stdout, done.stdout + done.stderr
    assert list(target.iterdir()) == []


# ---- a host lost for good ----------------------------------------------------------------------

@pytest.fixture
def two_hosts(netns):
    return netns.with_fio(2)


def test_a_host_lost_for_good_and_the_cleanups_after(two_hosts, tmp_path):
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    lost, kept = two_hosts.addresses[2], two_hosts.addresses[1]
    child = start_cli(["run", "--hosts", f"{kept},{lost}", str(target), "--operations", "active-full,restore-random",
                       "--size", "32MiB", "--runtime", "6s", "--quiet", "--no-monitor"], cwd=tmp_path, results=results)
    try:
        for _ in range(600):  # bounded: 60 s until the lost host's first job file is written
            if list(results.rglob(f"active-full.{lost}-*.fio")):
                break
            time.sleep(0.1)
        time.sleep(2)
        two_hosts.stop_fio(2)
        out, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 1, err
    flat = " ".join(out.split())
    assert "restore-random" in flat and f"host {lost} lost during active-full" in flat and "left behind:" in flat
    assert "left behind: test file on" in err.splitlines()[-1]
    history = _bb(["show", "latest", "--json"], tmp_path)
    assert json.loads(history.stdout)["run"]["status"] == "complete"
    # While the host is down, cleanup says what it could not remove (and keeps the journal).
    down = _bb(["cleanup"], tmp_path)
    assert down.returncode == 1 and "FAILED" in down.stdout and lost in down.stdout
    assert "cannot be opened" not in down.stdout
    two_hosts.start_fio(2)
    back = _bb(["cleanup"], tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert list(target.iterdir()) == []
    # The run stays complete: cleanup marks only runs whose process died mid-run.
    assert json.loads(_bb(["show", "latest", "--json"], tmp_path).stdout)["run"]["status"] == "complete"
