"""`backupbench sweep` for real (issue 42 item 2): a tiny 2 x 2 grid of kb2014's restore-random
with fio on a 16 MiB file, each point stored as a run of its own (history and show find it by
its label), the table naming the best point, `report --sweep` writing a self-contained page
with its chart, and the --json document valid against its shipped schema. The analysis itself
is tests/unit/test_sweep.py."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from schema_support import validated

pytestmark = pytest.mark.real

SMALL = ("--size", "16MiB", "--runtime", "1s", "--ramp", "0", "--operations", "restore-random", "--quiet")


@pytest.fixture
def fio():
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (make test installs it)")


def _sweep_id(stdout: str) -> str:
    found = re.search(r"backupbench report --sweep (sweep-[0-9a-f]{8})", stdout)
    assert found, stdout
    return found.group(1)


def test_a_sweep_stores_each_point_as_a_run_and_reports_the_grid(cli, tmp_path, fio):
    target = tmp_path / "target"
    target.mkdir()
    # Wide enough that no table cell (a run's id) is cut, whatever COLUMNS the test runs under.
    done = cli("sweep", str(target), *SMALL, "--over", "iodepth=1,4", "--over", "jobs=1,2", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    sweep_id = _sweep_id(done.stdout)
    said = " ".join(done.stdout.split())
    points = ["iodepth=1 jobs=1", "iodepth=1 jobs=2", "iodepth=4 jobs=1", "iodepth=4 jobs=2"]
    # Progress names each point in the order they ran; the target is left as it was.
    assert [line.split(": ")[-1] for line in done.stderr.splitlines() if ": point " in line] == points
    assert not list(target.iterdir())

    # The table: its title, a row per point, the best point named and one verdict per line.
    assert f"{sweep_id}: kb2014 over iodepth 1, 4 x jobs 1, 2 (4 points, one sample each)" in said
    best = re.search(r"^best: (iodepth=\d+ jobs=\d+), [\d,.]+ MiB/s", done.stdout, re.M)
    assert best and best.group(1) in points, done.stdout
    # One sample a point: no step is called either way, on each of the four lines.
    assert said.count("cannot tell where adding") == 4 and "stops paying at" not in said

    # Each point a run of its own, labelled with the sweep and its point.
    history = validated(cli("history", "--json").stdout, "history")
    labels = {entry["run"]["label"]: entry["run"] for entry in history["runs"]}
    assert set(labels) == {f"{sweep_id} {point}" for point in points}
    assert {run["status"] for run in labels.values()} == {"complete"}
    four_two = labels[f"{sweep_id} iodepth=4 jobs=2"]
    assert (four_two["settings"]["iodepth"], four_two["settings"]["jobs"]) == (4, 2)
    assert four_two["settings"]["sweep"]["point"] == {"iodepth": "4", "jobs": "2"}
    shown = validated(cli("show", f"{sweep_id} iodepth=4 jobs=2", "--json").stdout, "run")
    assert shown["run"]["id"] == four_two["id"]
    assert [phase["name"] for phase in shown["phases"]] == ["restore-random"]
    assert four_two["id"] in done.stdout   # the table says where each point is stored

    # The page: written to the working folder, self-contained, with its chart.
    page = cli("report", "--sweep", sweep_id)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / f"report-{sweep_id}.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page loads something from the web"
    assert "<svg" in html or "<img" in html
    assert "restore-random against iodepth" in html and best.group(1) in html
    assert all(labels[f"{sweep_id} {point}"]["id"] in html for point in points)


def test_the_json_document_of_a_sweep_is_valid(cli, tmp_path, fio):
    target = tmp_path / "target"
    target.mkdir()
    done = cli("sweep", str(target), *SMALL, "--over", "jobs=1,2", "--json")
    assert done.returncode == 0, done.stderr
    data = validated(done.stdout, "sweep")
    assert data["sweep"]["grid"] == {"jobs": ["1", "2"]} and data["sweep"]["x_axis"] == "jobs"
    assert [p["status"] for p in data["points"]] == ["complete", "complete"]
    (phase,) = data["phases"]
    assert phase["phase"] == "restore-random" and phase["best"] in ({"jobs": "1"}, {"jobs": "2"})
    assert all(cell["median"] > 0 and cell["samples"] == 1 and cell["p99_ns"] > 0 for cell in phase["cells"])
    (axis,) = phase["axes"]
    assert axis["stops_at"]["outcome"] == "unknown" and "noise unknown" in axis["text"]
    stored = {p["stored_as"] for p in data["points"]}
    runs = json.loads(cli("history", "--json").stdout)["runs"]
    assert {entry["run"]["id"] for entry in runs} == stored
