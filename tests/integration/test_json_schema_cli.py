"""Every command's --json, from real runs of small workloads in the test's own directory,
validated against the JSON Schema shipped for it; CSV and Prometheus exports of the same
runs read back; errors as JSON documents with their exit codes; the validation command
docs/results.md gives, run as written."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from backupbench.results import document
from backupbench.results.model import known_unit, stored_name
from host_support import require_tools, run_cli
from schema_support import validated

pytestmark = pytest.mark.real
EXAMPLES = Path(__file__).parents[2] / "examples"
RESULTS_DOC = Path(__file__).parents[2] / "docs" / "results.md"
KB2014 = ["--size", "16MiB", "--runtime", "1s", "--ramp", "0", "--operations", "active-full,restore-sequential,restore-random",
          "--monitor-interval", "0.2", "--quiet"]
TiB = 2**40


def ok(result, kind: str) -> dict:
    assert result.returncode == 0, result.stderr
    return validated(result.stdout, kind)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Two kb2014 runs (the second against the first) and a small-file run, in one store."""
    base = tmp_path_factory.mktemp("json-schema")
    repo, results = base / "repo", base / "results"
    repo.mkdir()

    def cli(*args: str):
        return run_cli(list(args), cwd=base, results=results)

    first = ok(cli("run", str(repo), *KB2014, "--backup-size", "1TiB", "--label", "before, \"tuned\"", "--json"),
               "run")
    second = ok(cli("run", str(repo), *KB2014, "--baseline", first["run"]["id"], "--json"), "run")
    files = ok(cli("run", str(repo), "--workload", "smallfiles", "--files", "40", "--folders", "2", "--file-size",
                   "4KiB", "--patterns", "0x00", "--label", "small files", "--json", "--quiet"), "run")
    assert list(repo.iterdir()) == []
    return cli, results, {"first": first, "second": second, "files": files}


def test_run_documents_name_every_unit_and_label_devices(stored):
    _, _, runs = stored
    first, second, files = runs["first"], runs["second"], runs["files"]
    assert first["run"]["label"] == 'before, "tuned"' and second["run"]["label"] == ""
    assert [p["name"] for p in first["phases"]] == ["active-full", "restore-sequential", "restore-random"]
    assert first["windows"]["backup_size"] == TiB  # the size the run recorded
    assert [w["phase"] for w in first["windows"]["items"]] == ["active-full", "restore-sequential",
                                                               "restore-random"]
    (restore,) = first["restore_ranges"]
    assert restore["low"] <= restore["high"] and restore["unit"] == "B/s"
    assert second["baseline"]["run"]["id"] == first["run"]["id"]
    sampled = 0
    for data in runs.values():
        for phase in data["phases"]:
            figures = phase["figures"]
            # kb2014's and the small-file engine's figures all have a unit of their own
            assert all(f["unit"] != document.DIMENSIONLESS for f in figures), phase["name"]
            devices = {f["device"] for f in figures if "device" in f}
            if phase["detail"]["monitor"]["samples"]:  # a phase shorter than one interval has none
                sampled += 1
                assert devices == set(phase["detail"]["monitor"]["devices"]), phase["name"]
            assert not any(f"mon.{device}." in f["name"] for f in figures for device in devices)
    assert sampled >= 3  # the kb2014 phases each ran a second, sampled every 0.2 s
    speed = {f["name"]: f for f in first["phases"][0]["figures"]}["effective_bw"]
    assert speed["unit"] == "B/s" and speed["value"] > 0
    assert {f["name"]: f["unit"] for f in files["phases"][0]["figures"]}["files_per_s"] == "files/s"


def test_show_and_history_documents(stored):
    cli, _, runs = stored
    first = runs["first"]["run"]["id"]
    shown = ok(cli("show", runs["second"]["run"]["id"], "--json", "--backup-size", "2TiB", "--baseline", first),
               "run")
    assert shown["baseline"]["run"]["label"] == 'before, "tuned"'
    assert shown["windows"]["backup_size"] == 2 * TiB and len(shown["windows"]["items"]) == 3
    files = ok(cli("show", runs["files"]["run"]["id"], "--json", "--backup-size", "2TiB"), "run")
    assert files["run"]["label"] == "small files" and files["baseline"] is None
    assert files["windows"] == {"backup_size": 2 * TiB, "size_unit": "B", "items": []}  # no kb2014 phases
    again = ok(cli("show", first, "--json"), "run")
    assert again["phases"] == runs["first"]["phases"]  # read back from the store, the same document
    history = ok(cli("history", "--json"), "history")
    assert [r["run"]["label"] for r in history["runs"]] == ["small files", "", 'before, "tuned"']
    table = cli("history")
    assert table.returncode == 0 and "small files" in table.stdout and "label" in table.stdout
    labelled = cli("show", first)
    heading = " ".join(labelled.stdout.split())  # unwrapped: the table title may break at 80 columns
    assert labelled.returncode == 0 and f'Run {first} (before, "tuned")' in heading


def test_history_csv_round_trip_against_the_store(stored):
    cli, results, _ = stored
    done = cli("history", "--csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    read_back = {(r["run_id"], r["phase"], stored_name(r["figure"], r["device"] or None)): (float(r["value"]), r["unit"])
                 for r in rows}
    with closing(sqlite3.connect(results / "results.db")) as db:
        in_store = {(run_id, op, name): (value, unit or known_unit(name) or document.DIMENSIONLESS)
                    for run_id, op, name, value, unit in db.execute("SELECT run_id, operation, name, value, unit "
                                                                    "FROM figures")}
    assert len(rows) == len(read_back) == len(in_store) > 100
    assert read_back == in_store
    assert {r["label"] for r in rows} == {"small files", "", 'before, "tuned"'}


def test_prometheus_export_of_stored_runs(stored):
    cli, _, runs = stored
    ids = [data["run"]["id"] for data in runs.values()]
    done = cli("export", "--prometheus", *ids)
    assert done.returncode == 0, done.stderr
    samples = [s for family in text_string_to_metric_families(done.stdout) for s in family.samples]
    assert {s.labels["run_id"] for s in samples} == set(ids)
    speeds = {(s.labels["run_id"], s.labels["phase"]): s.value for s in samples
              if s.name == "backupbench_effective_bw_bytes_per_second"}
    first = runs["first"]
    stored_speed = {f["name"]: f["value"] for f in first["phases"][0]["figures"]}["effective_bw"]
    assert speeds[(first["run"]["id"], "active-full")] == stored_speed
    assert any("device" in s.labels for s in samples if s.name.startswith("backupbench_mon_util"))


def test_the_other_commands_json_documents(stored):
    cli, _, runs = stored
    ok(cli("devices", "--json"), "devices")
    ok(cli("size", "capacity", "--disks", "6", "--disk-size", "6TB", "--layout", "raid6,raidz2", "--json"),
       "size.capacity")
    ok(cli("size", "rebuild", "--disks", "8", "--disk-size", "6TB", "--rebuild-rate", "100MB/s", "--layout",
           "raid6", "--json"), "size.rebuild")
    ok(cli("size", "snapshot", "--origin", "100GB", "--change", "10%", "--json"), "size.snapshot")
    window = ok(cli("size", "window", "--backup-size", "10TiB", "--from-run", runs["first"]["run"]["id"], "--json"),
                "size.window")
    assert window["run_id"] == runs["first"]["run"]["id"] and window["measured"]
    # A plain run of a directory, pinned to the candidate it stands for: its active full is measured.
    repository = ok(cli("size", "repository", "--protected", "1TB", "--change-rate", "5%", "--method", "forward-active",
                        "--window", "24h", "--layout", "raidz2", "--disks", "8", "--disk-size", "4TB",
                        "--disk-speed", "200MB/s", "--from-run", f"raidz2={runs['first']['run']['id']}", "--json"),
                    "size.repository")
    measured = {f["name"]: f["value"] for f in runs["first"]["phases"][0]["figures"]}["effective_bw"]
    speed = repository["candidates"][0]["speeds"]["active-full"]
    assert (speed["source"], speed["value"], speed["samples"]) == ("measured", measured, 1)
    plan = cli("plan", str(EXAMPLES / "field-note-c-kb2014.toml"), "--json")
    planned = validated(plan.stdout, "plan")
    assert plan.returncode == (3 if planned["refusals"] else 0), plan.stderr
    # A command that printed its document and then failed adds no error document after it.
    hosts = cli("hosts", "check", "127.0.0.1:1", "--json")
    assert hosts.returncode == 3 and "not usable" in hosts.stderr
    assert validated(hosts.stdout, "hosts.check")["hosts"][0]["reachable"] is False


@pytest.mark.parametrize("args, code, words", [
    (["show", "nope", "--json"], 2, "no run 'nope'"),
    (["history", "--json", "--limit", "0"], 2, "--limit"),
    (["run", "--label", "a\tb", "--json"], 2, "--label"),
    (["export", "--json"], 2, "No such option"),
    (["size", "window", "--backup-size", "1TiB", "--json"], 2, "needs --speed"),
    (["size", "repository", "--protected", "1TB", "--change-rate", "5%", "--layout", "raidz2", "--disks", "8",
      "--disk-size", "4TB", "--json"], 2, "needs --disk-speed"),
])
def test_errors_are_json_documents_with_their_exit_codes(cli, args, code, words):
    result = cli(*args)
    assert result.returncode == code, result.stderr
    data = validated(result.stdout, "error")
    assert data["exit_code"] == code and words in data["error"]
    assert result.stderr.startswith("backupbench: ") and result.stderr.count("\n") == 1


def test_refused_and_missing_tool_exit_codes(cli, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    refused = cli("run", str(a_file), "--json", "--quiet")
    assert refused.returncode == 3 and validated(refused.stdout, "error")["exit_code"] == 3
    no_fio = cli("run", str(tmp_path), *KB2014, "--json", env={"PATH": str(tmp_path / "no-such-bin")})
    data = validated(no_fio.stdout, "error")
    assert no_fio.returncode == 4 == data["exit_code"] and "fio" in data["error"] and data["fix"]
    plain = cli("show", "nope")
    assert plain.returncode == 2 and plain.stdout == ""  # without --json, stdout stays empty


def test_apply_stores_its_label_and_prints_a_run_document(cli, tmp_path, loop_device):
    require_tools("mkfs.ext4", "mount", "umount")
    device = loop_device("disk0", 128 * 2**20).device
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(f'name = "labelled"\ndevices = ["{device}"]\n'
                      f'[[layout]]\nname = "plain"\nkind = "filesystem"\ndevices = ["{device}"]\n'
                      'filesystem = { type = "ext4" }\n'
                      '[[workload]]\nkind = "kb2014"\nsize = "8MiB"\nruntime = "0.5s"\nramp = 0\noperations = ["active-full"]\n')
    done = cli("apply", str(recipe), "--yes", "--quiet", "--json", "--label", "ext4 on one disk",
               "--mount-root", str(tmp_path / "mnt"))
    data = ok(done, "run")
    assert (data["run"]["kind"], data["run"]["label"]) == ("recipe", "ext4 on one disk")
    assert [p["name"] for p in data["phases"]] == ["plain/active-full"]
    history = ok(cli("history", "--json"), "history")
    assert history["runs"][0]["run"]["label"] == "ext4 on one disk"


def _documented_commands() -> str:
    """The shell block of docs/results.md that validates a document."""
    blocks = re.findall(r"```sh\n(.*?)```", RESULTS_DOC.read_text(), flags=re.S)
    (block,) = [b for b in blocks if "jsonschema" in b]
    return block


def test_the_documented_validation_command_works_as_written(tmp_path):
    block = _documented_commands()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euc", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "capacity.json").read_text())
    assert data["kind"] == "backupbench.size.capacity"
    # The same command refuses a document that breaks the schema, saying where.
    data["layouts"][0]["usable"] = "lots"
    (tmp_path / "capacity.json").write_text(json.dumps(data))
    check = block.strip().splitlines()[1:]  # the schema folder and the check, not the command that wrote it
    refused = subprocess.run(["bash", "-euc", "\n".join(check)], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode != 0 and "'lots' is not of type 'integer'" in refused.stdout + refused.stderr
