"""`backupbench export --prometheus`: the text exposition format, parsed back with the
Prometheus client library's own parser, and checked line by line."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from backupbench.cli.app import main
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.results.prometheus import exposition, metric_for
from backupbench.results.store import Store

MiB = 2**20
METRIC_LINE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*\{([a-z_]+="(?:[^"\\\n]|\\["\\n])*",?)*\} \S+$')


def _run(run_id: str = "20261122T000000-aaaa", label: str = 'say "hi" \\ there') -> RunRecord:
    run = RunRecord(run_id=run_id, kind="kb2014", target="/srv", settings={}, status=COMPLETE, label=label,
                    started_at="2026-11-22T00:00:00+00:00")
    run.operations.append(OperationRecord(
        name="raid6/active-full", pattern="write qd1", status=COMPLETE,
        figures={"effective_bw": 100.0 * MiB, "write_p99_lat": 2_500_000.0, "mon.vda.w_await.p95": 4.5,
                 "mon.vdb.w_await.p95": 3.0, "mon.cpu_iowait.avg": 12.5, "mon.mem_used_MiB.max": 900.0,
                 "files_per_s": 1000.0, "lat_p99_ns": 7_000_000.0, "extents": 12.0,
                 "snapshot.snap1.data_pct_max": 40.0},
        units={"mon.vda.w_await.p95": "ms", "mon.vdb.w_await.p95": "ms", "mon.cpu_iowait.avg": "%",
               "mon.mem_used_MiB.max": "MiB"}))
    return run


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and family.documentation
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in found
            found[key] = sample.value
            assert sample.timestamp is None  # a pushgateway refuses timestamps
    return found


@pytest.mark.parametrize("figure, unit, metric, factor", [
    ("effective_bw", "B/s", "backupbench_effective_bw_bytes_per_second", 1),
    ("read_p99_lat", "ns", "backupbench_read_p99_lat_seconds", 1e-9),
    ("lat_p99_ns", "ns", "backupbench_lat_p99_seconds", 1e-9),
    ("mon.w_await.p95", "ms", "backupbench_mon_w_await_p95_seconds", 1e-3),
    ("runtime", "s", "backupbench_runtime_seconds", 1),
    ("sync_seconds", "s", "backupbench_sync_seconds", 1),
    ("clone_s", "s", "backupbench_clone_seconds", 1),
    ("members_util", "%", "backupbench_members_util_ratio", 0.01),
    ("rebuild_percent_loaded", "%", "backupbench_rebuild_loaded_ratio", 0.01),
    ("mon.mem_used_MiB.max", "MiB", "backupbench_mon_mem_used_max_bytes", MiB),
    ("rebuild_bytes", "B", "backupbench_rebuild_bytes", 1),
    ("files_per_s", "files/s", "backupbench_files_per_second", 1),
    ("mon.r_s.avg", "IO/s", "backupbench_mon_r_avg_per_second", 1),
    ("extents", "1", "backupbench_extents", 1),
    ("clone_s_per_tib", "s/TiB", "backupbench_clone_s_per_tib", 1),
])
def test_metric_names_follow_prometheus_base_units(figure, unit, metric, factor):
    assert metric_for(figure, unit) == (metric, factor)


def test_exposition_parses_with_units_converted_and_devices_as_labels():
    text = exposition([_run()])
    samples = _samples(text)
    base = (("kind", "kb2014"), ("label", 'say "hi" \\ there'), ("phase", "raid6/active-full"),
            ("run_id", "20261122T000000-aaaa"))

    def value(metric: str, device: str | None = None) -> float:
        labels = tuple(sorted(base + ((("device", device),) if device else ())))
        return samples[(metric, labels)]

    assert value("backupbench_effective_bw_bytes_per_second") == 100.0 * MiB
    assert value("backupbench_write_p99_lat_seconds") == pytest.approx(0.0025)
    assert value("backupbench_mon_w_await_p95_seconds", "vda") == pytest.approx(0.0045)
    assert value("backupbench_mon_w_await_p95_seconds", "vdb") == pytest.approx(0.003)
    assert value("backupbench_mon_cpu_iowait_avg_ratio") == pytest.approx(0.125)
    assert value("backupbench_mon_mem_used_max_bytes") == 900.0 * MiB
    assert value("backupbench_snapshot_data_max_ratio", "snap1") == pytest.approx(0.4)
    assert value("backupbench_files_per_second") == 1000.0 and value("backupbench_extents") == 12.0
    assert len(samples) == 10


def test_every_line_is_help_type_or_a_sample_and_each_family_is_together():
    text = exposition([_run(), _run("20261123T000000-bbbb", label="")])
    assert text.endswith("\n")
    seen_types: list[str] = []
    current = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            current = line.split()[2]
            assert current not in seen_types, f"{current} split in two"
        elif line.startswith("# TYPE "):
            assert line == f"# TYPE {current} gauge"
            seen_types.append(current)
        else:
            assert METRIC_LINE.match(line), line
            assert line.startswith(current + "{")
    assert len(seen_types) == 9  # both runs' samples under the same nine families


def test_two_figures_that_convert_to_one_metric_are_not_both_sampled():
    run = _run()
    run.operations[0].figures.update({"clone_s": 1.0, "clone_seconds": 2.0})
    run.operations[0].units.update({"clone_s": "s", "clone_seconds": "s"})
    text = exposition([run])
    assert "# clone_seconds of 20261122T000000-aaaa raid6/active-full left out" in text
    assert sum(1 for line in text.splitlines() if line.startswith("backupbench_clone_seconds{")) == 1
    _samples(text)


def test_export_command_prints_the_latest_run_or_those_named(tmp_path, capsys):
    store = Store(tmp_path / "results.db")
    for run in (_run(label="a"), _run("20261123T000000-bbbb", label="b")):
        store.create_run(run)
        store.save_operation(run.run_id, 0, run.operations[0])
    assert main(["export", "--prometheus", "--results", str(tmp_path)]) == 0
    latest = _samples(capsys.readouterr().out)
    assert {dict(labels)["label"] for _, labels in latest} == {"b"}
    assert main(["export", "--prometheus", "20261122", "latest", "20261123T000000-bbbb",
                 "--results", str(tmp_path)]) == 0
    both = _samples(capsys.readouterr().out)
    assert {dict(labels)["run_id"] for _, labels in both} == {"20261122T000000-aaaa", "20261123T000000-bbbb"}
    assert main(["export", "--results", str(tmp_path)]) == 2
    assert "add --prometheus" in capsys.readouterr().err


def test_a_mixed_phases_request_kinds_are_an_op_label_not_part_of_the_metric_name():
    run = RunRecord(run_id="20261124T000000-cccc", kind="s3", target="http://127.0.0.1:9000", settings={},
                    status=COMPLETE, started_at="2026-11-24T00:00:00+00:00")
    run.operations.append(OperationRecord(
        name="mixed", pattern="mixed", status=COMPLETE,
        figures={"lat_p99_ns": 9e6, "put_lat_p99_ns": 8e6, "get_lat_p99_ns": 2e6, "ops": 100.0, "put_ops": 45.0,
                 "delete_ops": 5.0, "put_effective_bw": 10.0 * MiB, "list_errors": 1.0}))
    text = exposition([run])
    assert not re.search(r"^backupbench_(put|get|list|delete)_", text, re.M)
    samples = {(name, dict(labels).get("op")): value for (name, labels), value in _samples(text).items()}
    assert samples == {
        ("backupbench_lat_p99_seconds", None): pytest.approx(9e-3),
        ("backupbench_lat_p99_seconds", "put"): pytest.approx(8e-3),
        ("backupbench_lat_p99_seconds", "get"): pytest.approx(2e-3),
        ("backupbench_ops", None): 100.0, ("backupbench_ops", "put"): 45.0, ("backupbench_ops", "delete"): 5.0,
        ("backupbench_effective_bw_bytes_per_second", "put"): 10.0 * MiB,
        ("backupbench_errors", "list"): 1.0,
    }
