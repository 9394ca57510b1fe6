"""Gates and comparisons through the command line, as a user or a CI job runs them: exit codes
of --expect (0 met, 5 missed, 2 a name the run lacks, checked before `run` or `apply` measures
anything), a void run that meets nothing, `show --baseline` on two real runs with different
--jobs, and a baseline with no phase in common refused."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from backupbench.results.model import COMPLETE, VOID, OperationRecord, RunRecord
from backupbench.results.store import Store
from report_support import stored
from schema_support import validated

MiB = 2**20
QUICK = ("--size", "16MiB", "--runtime", "1s", "--ramp", "0", "--operations", "active-full,restore-random", "--quiet")


def kb_run(run_id: str) -> RunRecord:
    run = RunRecord(run_id, "kb2014", "/srv/backups", {"jobs": 1}, status=COMPLETE,
                    started_at="2026-11-24T00:00:00+00:00", finished_at="2026-11-24T00:01:00+00:00")
    run.operations = [
        OperationRecord("active-full", "write qd1", COMPLETE, figures={"effective_bw": 500 * MiB, "write_p99_lat": 40e6}),
        OperationRecord("restore-random", "randread qd1", COMPLETE, figures={"effective_bw": 205 * MiB,
                                                                           "read_p99_lat": 3e6}),
    ]
    return run


def files_run(run_id: str) -> RunRecord:
    run = RunRecord(run_id, "smallfiles", "/srv/backups", {"files": 100}, status=COMPLETE,
                    started_at="2026-11-24T01:00:00+00:00", finished_at="2026-11-24T01:01:00+00:00")
    run.operations = [OperationRecord("create", "create none", COMPLETE, figures={"files_per_s": 900.0})]
    return run


def test_show_expect_exits_0_when_met_and_5_when_missed(cli):
    stored(cli.results, kb_run("20261124T000000-aaaa"))
    met = cli("show", "20261124T000000-aaaa", "--expect", "restore-random>=200MiB/s",
              "--expect", "active-full.p99<=50ms", env={"COLUMNS": "160"})
    assert met.returncode == 0, met.stderr
    assert "Expectations" in met.stdout and met.stdout.index("Run 20261124T000000-aaaa") < met.stdout.index("Expectations")
    assert re.search(r"restore-random>=200MiB/s\s+│\s+205.0 MiB/s │ met", met.stdout)
    assert re.search(r"active-full.p99<=50ms\s+│\s+40.00 ms \(write p99\) │ met", met.stdout)

    missed = cli("show", "20261124T000000-aaaa", "--expect", "restore-random>=300MiB/s",
                 "--expect", "active-full.p99<=50ms", env={"COLUMNS": "160"})
    assert missed.returncode == 5, missed.stderr
    assert re.search(r"restore-random>=300MiB/s\s+│\s+205.0 MiB/s │ MISSED", missed.stdout)
    assert "backupbench: 1 of 2 expectation checks missed: restore-random>=300MiB/s: 205.0 MiB/s" in missed.stderr

    as_json = cli("show", "20261124T000000-aaaa", "--json", "--expect", "restore-random>=300MiB/s")
    assert as_json.returncode == 5
    assert [(e["expectation"], e["met"]) for e in json.loads(as_json.stdout)["expectations"]] == \
        [("restore-random>=300MiB/s", False)]


@pytest.mark.parametrize("expectation, code, message", [
    ("restor-random>=300MiB/s", 2, "has no phase 'restor-random' (did you mean restore-random?)"),
    ("restore-random.p98<=5ms", 2, "restore-random has no figure 'p98' (did you mean p99?)"),
    ("restore-random>=300MiB/h", 2, "unknown unit 'MiB/h'"),
])
def test_show_expect_with_a_bad_name_or_unit_exits_2_with_one_line(cli, expectation, code, message):
    stored(cli.results, kb_run("20261124T000000-aaaa"))
    done = cli("show", "20261124T000000-aaaa", "--expect", expectation)
    assert done.returncode == code and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_show_baseline_with_no_phase_in_common_is_an_error(cli):
    stored(cli.results, kb_run("20261124T000000-aaaa"), files_run("20261124T010000-bbbb"))
    done = cli("show", "20261124T010000-bbbb", "--baseline", "20261124T000000-aaaa")
    assert done.returncode == 2 and done.stdout == ""
    assert ("run 20261124T010000-bbbb and baseline 20261124T000000-aaaa have no phase in common "
            "(run 20261124T010000-bbbb: create; 20261124T000000-aaaa: active-full, restore-random)") in done.stderr


@pytest.mark.real
def test_two_real_runs_with_different_jobs_compared(cli, tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (make test installs it)")
    repo = tmp_path / "repo"
    repo.mkdir()
    first = cli("run", str(repo), *QUICK, "--json", "--expect", "restore-random>=1B/s")
    assert first.returncode == 0, first.stderr
    first_doc = json.loads(first.stdout)
    first_id = first_doc.get("run_id") or first_doc["run"]["id"]
    assert [e["met"] for e in first_doc["expectations"]] == [True]

    second = cli("run", str(repo), *QUICK, "--jobs", "2", "--baseline", first_id,
                 "--expect", "restore-random>=1TiB/s", env={"COLUMNS": "160"})
    # The miss exits 5 after the whole output; the run itself is complete and stored.
    assert second.returncode == 5, second.stderr
    assert "expectation checks missed: restore-random>=1TiB/s" in second.stderr
    out = second.stdout
    assert out.index("Settings differ") < out.index(f"Against baseline {first_id}") < out.index("Expectations")
    assert re.search(r"jobs \(fio numjobs\)\s+│ 1\s+│ 2", out)
    rows = re.findall(r"(active-full|restore-random)\s+│[^│]+│[^│]+│\s+(\d+\.\d\dx (?:faster|slower))", out)
    assert [name for name, _ in rows] == ["active-full", "restore-random"], out
    # Each run measured once: the verdict names no noise it does not know, and asks for repeats.
    flat = re.sub(r"[\s│]+", " ", out)
    assert "on one sample (each side): noise unknown, measure with --repeat 3" in flat, out
    assert "slowdown" not in out

    history = cli("history", "--limit", "1", "--json")
    latest = json.loads(history.stdout)
    latest_run = latest["runs"][0]["run"] if isinstance(latest, dict) else latest[0]
    assert latest_run["status"] == "complete"


def test_run_refuses_a_bad_expectation_or_baseline_before_measuring(cli, tmp_path):
    stored(cli.results, files_run("20261124T010000-bbbb"))
    repo = tmp_path / "repo"
    repo.mkdir()
    typo = cli("run", str(repo), *QUICK, "--expect", "restore-randon>=300MiB/s")
    assert typo.returncode == 2
    assert "--workload kb2014 has no phase 'restore-randon' (did you mean restore-random?)" in typo.stderr
    unlike = cli("run", str(repo), *QUICK, "--baseline", "20261124T010000-bbbb")
    assert unlike.returncode == 2 and "have no phase in common" in unlike.stderr
    assert list(repo.iterdir()) == []
    assert [run.run_id for run in Store(cli.results / "results.db").list_runs(10)] == ["20261124T010000-bbbb"]


def test_run_refuses_an_expectation_without_figure_or_unit_before_measuring(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    bare = cli("run", str(repo), *QUICK, "--expect", "restore-random>=300")
    assert bare.returncode == 2, bare.stderr
    assert "--expect 'restore-random>=300': give a unit or name the figure" in bare.stderr
    wrong = cli("run", str(repo), *QUICK, "--expect", "active-full.p99<=50MiB/s")
    assert wrong.returncode == 2 and "p99 is a time (ns), the value given is a rate" in wrong.stderr
    assert list(repo.iterdir()) == []
    assert not (cli.results / "results.db").exists() or Store(cli.results / "results.db").list_runs(10) == []


def directory_recipe(tmp_path) -> tuple:
    """A recipe whose one layout is an existing directory: nothing to format, no --yes."""
    folder = tmp_path / "backups"
    folder.mkdir()
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(f'name = "dir-test"\n\n[[layout]]\nname = "dir"\nkind = "directory"\npath = "{folder}"\n'
                      '\n[[workload]]\nkind = "kb2014"\noperations = ["active-full", "restore-random"]\n'
                      'size = "16MiB"\nruntime = "1s"\nramp = 0\n')
    return recipe, folder


@pytest.mark.parametrize("expectation, message", [
    ("nosuchphase>=1MiB/s", r"recipe 'dir-test' has no phase 'nosuchphase'; its phases: .*dir/active-full, "
                            r"dir/restore-random$"),
    ("dir/restore-randon>=1MiB/s", r"has no phase 'dir/restore-randon' \(did you mean dir/restore-random or "
                                   r"restore-random\?\)"),
    ("restore-random>=300", r"'restore-random>=300': give a unit or name the figure"),
])
def test_apply_refuses_a_bad_expectation_before_measuring(cli, tmp_path, expectation, message):
    recipe, folder = directory_recipe(tmp_path)
    done = cli("apply", str(recipe), "--quiet", "--expect", "active-full>=1B/s", "--expect", expectation)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and re.search(message, done.stderr.strip()), done.stderr
    assert list(folder.iterdir()) == []
    assert not (cli.results / "runs").exists() or list((cli.results / "runs").iterdir()) == []


@pytest.mark.real
def test_apply_checks_each_layouts_phase_and_says_it_in_json(cli, tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (make test installs it)")
    recipe, folder = directory_recipe(tmp_path)
    done = cli("apply", str(recipe), "--quiet", "--json", "--expect", "restore-random>=1B/s",
               "--expect", "dir/active-full.p99<=1h")
    assert done.returncode == 0, done.stderr
    found = validated(done.stdout, "run")["expectations"]
    assert [(e["operation"], e["figure"], e["unit"], e["met"]) for e in found] == \
        [("dir/restore-random", "effective_bw", "B/s", True), ("dir/active-full", "write_p99_lat", "ns", True)]
    assert found[0]["threshold"] == 1.0 and found[1]["threshold"] == 3600e9 and found[0]["measured"] > 1
    assert list(folder.iterdir()) == []


def void_run(run_id: str) -> RunRecord:
    run = kb_run(run_id)
    run.status = VOID
    run.notes = ["snapshot snap1 of lin overflowed and is Invalid: the figures of this run are void; "
                 "give the snapshots more space"]
    run.operations[0].figures["mon.vda.w_await.p95"] = 12.5
    run.operations[0].units["mon.vda.w_await.p95"] = "ms"
    return run


def test_show_expect_on_a_void_run_is_missed_with_the_reason(cli):
    stored(cli.results, void_run("20261124T000000-cccc"))
    done = cli("show", "20261124T000000-cccc", "--json", "--expect", "restore-random>=1MiB/s",
               "--expect", "active-full.mon.w_await.p95[vda]<=20ms")
    assert done.returncode == 5, done.stderr
    assert "2 of 2 expectation checks missed: restore-random>=1MiB/s: run is void: snapshot snap1" in done.stderr
    speed, latency = validated(done.stdout, "run")["expectations"]
    assert (speed["met"], speed["measured"], speed["unit"]) == (False, 205 * MiB, "B/s")
    assert speed["measured_text"].startswith("run is void: snapshot snap1 of lin overflowed")
    assert {k: latency[k] for k in ("figure", "device", "measured", "threshold", "unit", "met")} == \
        {"figure": "mon.w_await.p95", "device": "vda", "measured": 12.5, "threshold": 20.0, "unit": "ms", "met": False}
