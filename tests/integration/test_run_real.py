"""`backupbench run` with real fio on small files the test made."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from backupbench.results.document import phase_figures
from backupbench.workloads.kb2014 import OPERATION_NAMES

pytestmark = pytest.mark.real
QUICK = ["--size", "32MiB", "--runtime", "1s", "--ramp", "0"]


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(("backupbench-", ".backupbench")))


def run_json(cli, *args: str) -> dict:
    """`backupbench run ARGS --json`, which must succeed: its document."""
    result = cli("run", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def a_repo(tmp_path: Path) -> Path:
    """An empty folder to run on, beside whatever else the test keeps in tmp_path."""
    repo = tmp_path / "repo"
    repo.mkdir()
    return repo


def test_full_suite_is_measured_stored_and_cleaned(cli, tmp_path):
    repo = a_repo(tmp_path)
    data = run_json(cli, str(repo), *QUICK, "--backup-size", "10TiB")
    assert data["run"]["status"] == "complete"
    assert [op["name"] for op in data["phases"]] == list(OPERATION_NAMES)
    for op in data["phases"]:
        figures = phase_figures(op)
        assert figures["effective_bw"] > 0, op["name"]
        if op["name"] in ("active-full",):
            assert figures["write_bw"] > 0 and "read_p99_lat" not in figures
        if op["name"].startswith("restore"):
            assert figures["read_bw"] > 0 and figures["read_p99_lat"] > 0
        if op["name"] == "synthetic-full":
            assert figures["effective_bw"] == pytest.approx((figures["read_bw"] + figures["write_bw"]) / 2)
        if op["name"] == "reverse-incremental":
            assert figures["effective_bw"] == pytest.approx((figures["read_bw"] + figures["write_bw"]) / 3)
            assert figures["write_bw"] > figures["read_bw"]  # two writes for each read
    assert leftovers(repo) == []

    run_dir = cli.results / "runs" / data["run"]["id"]
    for name in OPERATION_NAMES:
        raw = json.loads((run_dir / f"{name}.json").read_text())
        assert raw["jobs"][0]["jobname"] == name
        assert f"[{name}]" in (run_dir / f"{name}.fio").read_text()
    host = json.loads((run_dir / "host.json").read_text())
    assert host["fio"].startswith("fio-") and host["kernel"] == os.uname().release
    assert host["targets"]["target"]["fs_type"] and host["targets"]["target"]["path"] == str(repo)
    assert "fio --output-format=json" in (run_dir / "commands.txt").read_text()

    with sqlite3.connect(cli.results / "results.db") as db:
        assert db.execute("SELECT status FROM runs WHERE run_id=?", (data["run"]["id"],)).fetchone() == ("complete",)
        assert db.execute("SELECT count(*) FROM operations WHERE run_id=? AND status='complete'",
                          (data["run"]["id"],)).fetchone() == (5,)
        assert db.execute("SELECT count(*) FROM figures WHERE run_id=? AND name='effective_bw' AND value>0",
                          (data["run"]["id"],)).fetchone() == (5,)


def test_default_scratch_directory_human_output_history_and_show(cli, tmp_path):
    work = tmp_path / "cwd"
    work.mkdir()
    result = cli("run", *QUICK, "--operations", "active-full,restore-sequential,restore-random",
                 "--backup-size", "1TiB", cwd=work)
    assert result.returncode == 0, result.stderr
    assert list(work.iterdir()) == []  # the scratch directory is gone
    for text in ("active-full", "effective MiB/s", "Restore range", "Backup windows for 1 TiB", "Active full"):
        assert text in result.stdout
    assert "restore-random" in result.stderr  # progress
    history = cli("history")
    assert history.returncode == 0 and "complete" in history.stdout
    shown = cli("show", "latest", "--json")
    run = json.loads(shown.stdout)
    assert [op["name"] for op in run["phases"]] == ["active-full", "restore-sequential", "restore-random"]
    again = cli("show", run["run"]["id"][:17], "--backup-size", "2TiB")
    assert again.returncode == 0 and "Backup windows for 2 TiB" in again.stdout


def test_several_jobs_each_write_their_own_region(cli, tmp_path):
    repo = a_repo(tmp_path)
    data = run_json(cli, str(repo), "--size", "32MiB", "--runtime", "1s", "--ramp", "0", "--jobs", "2",
                    "--operations", "active-full")
    run_dir = cli.results / "runs" / data["run"]["id"]
    job = (run_dir / "active-full.fio").read_text()
    assert "numjobs=2" in job and "offset_increment=16m" in job and "size=16m" in job
    raw = json.loads((run_dir / "active-full.json").read_text())
    assert raw["jobs"][0]["write"]["io_bytes"] > 0


def test_exported_job_file_runs_with_plain_fio(cli, tmp_path):
    repo = a_repo(tmp_path)
    exported = cli("export-fio", "synthetic-full", "--path", str(repo), "--size", "16MiB", "--runtime", "1s")
    assert exported.returncode == 0, exported.stderr
    job_file = tmp_path / "suite.fio"
    job_file.write_text(exported.stdout)
    done = subprocess.run(["fio", "--output-format=json", str(job_file)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    jobs = {j["jobname"]: j for j in json.loads(done.stdout)["jobs"]}
    assert set(jobs) == {"layout", "synthetic-full"}
    assert jobs["synthetic-full"]["read"]["io_bytes"] > 0 and jobs["synthetic-full"]["write"]["io_bytes"] > 0
    assert list(repo.iterdir()) == []  # the last job's unlink=1 removed the test file


def test_an_exported_suite_never_touches_a_file_that_was_there(cli, tmp_path):
    """The name the old exports used, and any other, survives the suite it runs: each export
    names a file that did not exist, and only that one is written and removed."""
    repo = a_repo(tmp_path)
    users = {name: f"{name}: the user's own\n".encode() for name in ("backupbench-export.dat", "full.vbk")}
    for name, data in users.items():
        (repo / name).write_bytes(data)
    first = cli("export-fio", "restore-sequential", "--path", str(repo), "--size", "8MiB", "--runtime", "1s")
    second = cli("export-fio", "restore-sequential", "--path", str(repo), "--size", "8MiB", "--runtime", "1s")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    named = [re.findall(r"^filename=(.*)$", out.stdout, re.M) for out in (first, second)]
    assert len(set(named[0])) == 1 and set(named[0]) != set(named[1])  # a new name each export
    assert Path(named[0][0]).parent == repo and Path(named[0][0]).name not in users
    job_file = tmp_path / "suite.fio"
    job_file.write_text(first.stdout)
    done = subprocess.run(["fio", "--output-format=json", str(job_file)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_bytes() for p in repo.iterdir()} == users


def test_export_to_a_path_that_is_a_file_is_refused(cli, tmp_path):
    backup = tmp_path / "full.vbk"
    backup.write_bytes(b"a backup")
    refused = cli("export-fio", "--path", str(backup))
    assert refused.returncode == 2 and "is not a directory" in refused.stderr, refused.stderr
    assert refused.stdout == "" and backup.read_bytes() == b"a backup"


def _fio_runtimes(job_file, *fio_args):
    done = subprocess.run(["fio", "--output-format=json", *fio_args, str(job_file)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {j["jobname"]: j["job options"].get("runtime") for j in json.loads(done.stdout)["jobs"]}


def test_the_runtime_override_the_exported_suite_documents_is_the_one_fio_honours(cli, tmp_path):
    repo = a_repo(tmp_path)
    exported = cli("export-fio", "restore-random", "--path", str(repo), "--size", "8MiB", "--runtime", "1s")
    assert exported.returncode == 0, exported.stderr
    job_file = tmp_path / "suite.fio"
    job_file.write_text(exported.stdout)
    assert "fio --runtime does not override" in exported.stdout
    # What the comment says: fio's --runtime leaves the job's runtime= as it is...
    assert _fio_runtimes(job_file, "--runtime=2")["restore-random"] == "1s"
    # ...and the sed line it gives changes it.
    sed = re.search(r"sed -i '([^']+)' suite\.fio", exported.stdout).group(1).replace("30s", "2s")
    subprocess.run(["sed", "-i", sed, str(job_file)], check=True)
    assert _fio_runtimes(job_file)["restore-random"] == "2s"
    assert list(repo.iterdir()) == []


def test_stored_run_exports_its_exact_job_files(cli, tmp_path):
    repo = a_repo(tmp_path)
    run = run_json(cli, str(repo), *QUICK, "--operations", "restore-random")
    exported = cli("export-fio", "--run", run["run"]["id"])
    assert exported.returncode == 0, exported.stderr
    stored = (cli.results / "runs" / run["run"]["id"] / "restore-random.fio").read_text()
    assert stored.rstrip("\n") in exported.stdout and "[layout]" in exported.stdout


def test_buffered_run_on_a_filesystem_without_o_direct(cli, mount_point):
    ramfs = mount_point("ramfs")
    refused = cli("run", str(ramfs), *QUICK)
    assert refused.returncode == 3
    assert "refuses O_DIRECT" in refused.stderr and "--buffered" in refused.stderr
    assert "Traceback" not in refused.stderr
    data = run_json(cli, str(ramfs), *QUICK, "--operations", "active-full", "--buffered")
    assert data["run"]["settings"]["buffered"] is True and data["phases"][0]["detail"]["buffered"] is True
    assert any("memory, not storage" in n for n in data["run"]["notes"])
    assert leftovers(ramfs) == []
    assert "direct=0" in (cli.results / "runs" / data["run"]["id"] / "active-full.fio").read_text()


def test_every_operation_is_monitored(cli, tmp_path):
    repo = a_repo(tmp_path)
    data = run_json(cli, str(repo), "--size", "32MiB", "--runtime", "2s", "--ramp", "0", "--operations", "active-full,restore-random",
                    "--monitor-interval", "0.5")
    run_dir = cli.results / "runs" / data["run"]["id"]
    stack = data["run"]["host"]["device_stacks"]["target"]
    assert stack["devices"], "the target's device stack was resolved"
    for op in data["phases"]:
        csv_lines = (run_dir / f"{op['name']}.monitor.csv").read_text().splitlines()
        assert csv_lines[0].startswith("timestamp,elapsed_s,%user,%system,%iowait")
        assert f"{stack['devices'][0]}:w/s" in csv_lines[0]
        assert len(csv_lines) >= 3  # header + samples every 0.5 s over 2 s
        assert op["detail"]["monitor"]["samples"] >= 2
        assert "members_util" in phase_figures(op)
        assert phase_figures(op)["mon.load1.avg"] >= 0
    with sqlite3.connect(cli.results / "results.db") as db:
        units = dict(db.execute("SELECT name, unit FROM figures WHERE operation='active-full' AND name LIKE 'mon.%avg'"))
    assert units["mon.cpu_iowait.avg"] == "%" and units[f"mon.{stack['devices'][0]}.w_await.avg"] == "ms"


def test_monitor_can_be_switched_off(cli, tmp_path):
    data = run_json(cli, str(tmp_path), "--size", "16MiB", "--runtime", "1s", "--ramp", "0", "--operations", "active-full",
                    "--no-monitor")
    assert "members_util" not in phase_figures(data["phases"][0])
    assert not list((cli.results / "runs" / data["run"]["id"]).glob("*.monitor.csv"))


def test_first_write_workload_and_baseline(cli, tmp_path):
    repo = a_repo(tmp_path)
    data = run_json(cli, str(repo), "--workload", "first-write", "--size", "32MiB")
    assert data["run"]["kind"] == "first-write"
    assert [op["name"] for op in data["phases"]] == ["first-write", "overwrite", "read"]
    for op in data["phases"]:
        assert phase_figures(op)["effective_bw"] > 0
    job = (cli.results / "runs" / data["run"]["id"] / "first-write.fio").read_text()
    assert "fallocate=none" in job and "bs=1m" in job and "time_based" not in job
    assert leftovers(repo) == []
    second = cli("run", str(repo), "--workload", "first-write", "--size", "32MiB", "--baseline", data["run"]["id"])
    assert second.returncode == 0, second.stderr
    assert "First-write penalty" in second.stdout and f"Against baseline {data['run']['id']}" in second.stdout
    assert re.search(r"\d\.\d\dx (faster|slower)|same \(within 2%\)", second.stdout)


def test_unknown_baseline_fails_before_measuring(cli, tmp_path):
    result = cli("run", str(tmp_path), "--baseline", "nope")
    assert result.returncode == 2 and "no run 'nope'" in result.stderr
    assert not (cli.results / "runs").exists() or not list((cli.results / "runs").iterdir())


def test_small_file_workload_phases_stored_and_compared(cli, tmp_path):
    repo = a_repo(tmp_path)
    args = (str(repo), "--workload", "smallfiles", "--files", "300", "--folders", "7", "--file-size", "8KiB",
            "--patterns", "0x00,0xff,0x55", "--threads", "2", "--verify", "--monitor-interval", "0.2")
    data = run_json(cli, *args)
    assert data["run"]["kind"] == "smallfiles"
    assert [op["name"] for op in data["phases"]] == ["create", "update-1", "update-2", "verify"]
    for op in data["phases"]:
        assert phase_figures(op)["files"] == 300 and phase_figures(op)["files_per_s"] > 0
        assert (cli.results / "runs" / data["run"]["id"] / f"{op['name']}.monitor.csv").exists()
    assert phase_figures(data["phases"][-1])["mismatches"] == 0
    assert data["run"]["settings"]["flush"] == "sync-end"
    assert list(repo.iterdir()) == []
    assert not any("test file" in note for note in data["run"]["notes"])
    second = cli("run", *args, "--baseline", data["run"]["id"])
    assert second.returncode == 0, second.stderr
    assert "files/s" in second.stdout and "Against baseline" in second.stdout and "update-1" in second.stdout


def test_a_flag_of_another_workload_is_refused(cli, tmp_path):
    result = cli("run", str(tmp_path), "--files", "10")
    assert result.returncode == 2 and "--files does not apply to --workload kb2014" in result.stderr
    result = cli("run", str(tmp_path), "--workload", "smallfiles", "--runtime", "5s")
    assert result.returncode == 2 and "--runtime does not apply to --workload smallfiles" in result.stderr


def test_keep_leaves_the_tagged_small_file_folder(cli, tmp_path):
    repo = a_repo(tmp_path)
    run_id = run_json(cli, str(repo), "--workload", "smallfiles", "--files", "20", "--folders", "2",
                      "--file-size", "4KiB", "--patterns", "0x00", "--keep", "--no-monitor")["run"]["id"]
    [kept] = list(repo.iterdir())
    assert kept.name.endswith(run_id) and len(list(kept.rglob("f*"))) == 20


def test_repeat_2_stores_two_samples_per_phase_and_shows_their_spread(cli, tmp_path):
    repo = a_repo(tmp_path)
    data = run_json(cli, str(repo), *QUICK, "--operations", "active-full,restore-random", "--repeat", "2")
    assert data["run"]["settings"]["repeat"] == 2
    assert [op["name"] for op in data["phases"]] == ["active-full", "restore-random"]
    for op in data["phases"]:
        figure = next(f for f in op["figures"] if f["name"] == "effective_bw")
        assert len(figure["samples"]) == 2 and all(value > 0 for value in figure["samples"])
        assert figure["value"] == pytest.approx(sum(figure["samples"]) / 2)  # the median of two
        assert figure["interval"]["low"] <= figure["value"] <= figure["interval"]["high"]
        assert figure["unstable"] == (figure["cv"] > 0.10)
        assert op["detail"]["monitor_csv_samples"] == [f"sample-1/{op['name']}.monitor.csv",
                                                       f"sample-2/{op['name']}.monitor.csv"]
    run_dir = cli.results / "runs" / data["run"]["id"]
    for sample in ("sample-1", "sample-2"):  # each sample's raw files
        assert json.loads((run_dir / sample / "active-full.json").read_text())["jobs"][0]["jobname"] == "active-full"
    assert leftovers(repo) == []
    with sqlite3.connect(cli.results / "results.db") as db:
        assert db.execute("SELECT count(*) FROM samples WHERE run_id=? AND name='effective_bw' AND value>0",
                          (data["run"]["id"],)).fetchone() == (4,)
    shown = cli("show", data["run"]["id"], "--csv")
    rows = [row for row in shown.stdout.splitlines() if ",effective_bw," in row]
    assert len(rows) == 2 and all(",2," in row for row in rows)
    table = cli("show", data["run"]["id"])
    assert "CV " in table.stdout and "medians" in table.stdout  # the spread column, the caption
