"""Latency pictures of real runs (issue 42, item 1): a short kb2014 run with fio and an S3 run
against the MinIO the tests start, each reported: every phase with latencies has its
histogram and its course over time in the page and in `--json`, and (with headless Chromium)
the page draws them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from browser_support import CHROMIUM, WIDTH, chromium, report

from backupbench.results.document import phase_figures

pytestmark = pytest.mark.real


def _latency(document: dict) -> dict[str, dict]:
    return {phase["name"]: phase["latency"] for phase in document["phases"] if "latency" in phase}


def _check_kind(kind: dict, figures: dict[str, float], p99_figure: str) -> None:
    assert sum(count for _, count in kind["histogram"]) == kind["count"] > 0
    assert len(kind["histogram"]) <= 64
    assert kind["p50"] <= kind["p90"] <= kind["p99"] <= kind["p99_9"]
    # One host, one sample: the picture's p99 is the table's, exactly.
    assert kind["p99"] == figures[p99_figure]
    assert kind["over_time"] and kind["over_time"][0]["seconds"], "no course over time"


def _report(cli, run_id: str, folder: Path) -> str:
    done = report(cli, run_id, "--html", str(folder / f"{run_id}.html"), cwd=folder)
    assert done.returncode == 0, done.stderr
    return (folder / f"{run_id}.html").read_text()


def _drawn(tmp_path: Path, page: str, name: str) -> None:
    """Chromium draws the page's latency figures: the section's SVG paths are in its DOM, and a
    screenshot of the section alone is not blank and shows the bars' colour."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs it: apt-get install chromium)")
    pytest.importorskip("matplotlib")
    section = re.search(r'<section id="latency">.*?</section>', page, re.S)
    assert section, "no latency section"
    alone = tmp_path / f"{name}.html"
    head = page[:page.index("<body")]
    alone.write_text(f"{head}<body>{section.group(0)}</body></html>")
    dom = chromium(tmp_path, alone.as_uri(), "--dump-dom", name=f"{name}-dom").stdout
    assert dom.count('aria-label="Latency of') >= 1 and re.search(r"<path[^>]+d=\"M ", dom)
    shot = tmp_path / f"{name}.png"
    chromium(tmp_path, alone.as_uri(), f"--screenshot={shot}", f"--window-size={WIDTH},1400", name=f"{name}-shot")
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[:, :, :3]
    assert (pixels > 0.97).all(axis=2).mean() < 0.97, "the latency section is (almost) blank"
    assert (pixels < 0.3).all(axis=2).sum() > 2_000, "no text or markers drawn"


def test_kb2014_run_has_latency_pictures(cli, tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (make test installs it)")
    target = tmp_path / "repo"
    target.mkdir()
    run = cli("run", str(target), "--size", "32MiB", "--runtime", "3s", "--ramp", "1s",
              "--operations", "synthetic-full,restore-random", "--json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    latency = _latency(document)
    assert set(latency) == {"synthetic-full", "restore-random"}
    figures = {phase["name"]: phase_figures(phase) for phase in document["phases"]}
    kinds = {name: {k["kind"]: k for k in found["kinds"]} for name, found in latency.items()}
    assert set(kinds["synthetic-full"]) == {"read", "write"} and set(kinds["restore-random"]) == {"read"}
    for name, by_kind in kinds.items():
        for direction, kind in by_kind.items():
            _check_kind(kind, figures[name], f"{direction}_p99_lat")
    assert latency["restore-random"]["source"] == "fio"
    # The 1 s latency logs fio wrote beside its JSON are the course's source.
    folder = cli.results / "runs" / document["run"]["id"]
    assert (folder / "restore-random_lat.1.log").is_file()
    shown = json.loads(cli("show", document["run"]["id"], "--json").stdout)
    assert _latency(shown) == latency

    page = _report(cli, document["run"]["id"], tmp_path)
    assert page.count('aria-label="Latency of') == 2
    assert "restore-random (randread qd1): fio&#x27;s total latency" in page or "restore-random (randread" in page
    _drawn(tmp_path, page, "kb2014")


def test_s3_run_has_latency_pictures_per_request_kind(cli, minio_single, tmp_path):
    env = {"AWS_ACCESS_KEY_ID": minio_single.access_key, "AWS_SECRET_ACCESS_KEY": minio_single.secret_key}
    run = cli("run", "--workload", "s3", "--endpoint", minio_single.endpoint, "--bucket", "bb-latency",
              "--create-bucket", "--objects", "200", "--object-size", "16KiB", "--concurrency", "8",
              "--s3-phases", "put,mixed,delete", "--json", env=env)
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    latency = _latency(document)
    assert set(latency) == {"put", "mixed", "delete"}
    figures = {phase["name"]: phase_figures(phase) for phase in document["phases"]}
    put = latency["put"]["kinds"]
    assert [k["kind"] for k in put] == ["put"] and latency["put"]["source"] == "s3"
    _check_kind(put[0], figures["put"], "lat_p99_ns")
    assert put[0]["p50"] == figures["put"]["lat_p50_ns"] and put[0]["p90"] == figures["put"]["lat_p90_ns"]
    mixed = {k["kind"]: k for k in latency["mixed"]["kinds"]}
    assert {"put", "get"} <= set(mixed)
    for name, kind in mixed.items():
        _check_kind(kind, figures["mixed"], f"{name}_lat_p99_ns")
        seconds = kind["over_time"][0]["seconds"]
        assert sum(count for _, count, *_ in seconds) == kind["count"]
        assert all(p50 <= p99 for _, _, _, p50, p99 in seconds)

    page = _report(cli, document["run"]["id"], tmp_path)
    assert page.count('aria-label="Latency of') == 3
    _drawn(tmp_path, page, "s3")
