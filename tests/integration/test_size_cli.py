"""`backupbench size ...` through click's test runner, and once as a real process when the
command is registered in the app."""

import json

import click
import pytest
from click.testing import CliRunner

from backupbench.cli.size_cmd import size_command
from backupbench.errors import InputError, RecipeError
from backupbench.results.model import COMPLETE, OperationRecord, RunRecord
from backupbench.results.store import Store

TB = 10**12


@click.group()
def cli() -> None:
    pass


cli.add_command(size_command)


def invoke(*args):
    return CliRunner().invoke(cli, ["size", *args])


def ok(*args):
    result = invoke(*args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_capacity_field_note_d_table_and_json():
    args = ("capacity", "--disks", "45", "--disk-size", "6TB", "--layout", "draid2", "--draid-data", "3",
            "--draid-spares", "2")
    text = ok(*args)
    # (45 - 2) x 3 / 5 x 6 TB = 154.8 TB of data area; a 128 KiB block on 3 data + 2 parity takes 11
    # rows of 5 sectors, so OpenZFS counts 297/512 of the space (test_sizing_capacity_accounting).
    assert "draid2:3d:45c:2s" in text and "149.97 TB" in text and "55.5%" in text and "154.80 TB" in text
    data = json.loads(ok(*args, "--json"))
    (layout,) = data["layouts"]
    assert layout["data_area"] == 154_800_000_000_000 and layout["raw"] == 270 * TB
    assert (layout["reported"], layout["usable"]) == (149_516_829_212_128, 149_965_333_933_976)
    assert layout["reported_by"].startswith("zfs list") and layout["failures_tolerated"] == 2


def test_capacity_compares_layouts():
    data = json.loads(ok("capacity", "--disks", "16", "--disk-size", "6TB", "--layout",
                         "raid6,raidz2,draid2,minio-ec", "--parity", "2", "--json"))
    assert [row["data_area"] for row in data["layouts"]] == [84 * TB, 84 * TB, 76_800_000_000_000, 84 * TB]
    # XFS on md, 16-wide raidz2's padding, dRAID's, MinIO's 1% and XFS on each drive.
    assert [row["usable"] for row in data["layouts"]] == [83_410_295_263_232, 78_618_571_899_088,
                                                          76_649_356_262_991, 82_544_456_158_905]


def test_rebuild_prints_both_models():
    text = ok("rebuild", "--disks", "16", "--disk-size", "6TB", "--rebuild-rate", "100MB/s", "--layout", "raid6")
    assert "16.67" in text and "9.38" in text and "draid2:8d:16c:1s" in text  # 60,000 s and 33,750 s
    data = json.loads(ok("rebuild", "--disk-size", "6TB", "--rebuild-rate", "100MB/s",
                         "--layout", "draid2:3d:45c:2s", "--json"))
    assert data["layouts"][0]["speedup"] == pytest.approx(11.0)


def test_snapshot_field_note_e():
    text = ok("snapshot", "--origin", "100GB", "--change", "10GB")
    assert "34.5 GB" in text and "50 GB" in text and "3 I/Os" in text and "100 ms" in text
    data = json.loads(ok("snapshot", "--origin", "100GB", "--change", "10%", "--snapshots", "2", "--json"))
    assert data["change"] == 10 * 10**9 and data["first_write_ios"] == 5
    assert data["high"]["size"] == 50 * 10**9 and data["high"]["total"] == 100 * 10**9


def test_window_speed_and_needed_speed():
    text = ok("window", "--backup-size", "10TiB", "--speed", "200MiB/s")
    assert "14.56" in text
    data = json.loads(ok("window", "--backup-size", "10TiB", "--speed", "200MiB/s", "--window", "8h", "--json"))
    assert data["estimate"]["full_seconds"] == pytest.approx(52_428.8)
    assert data["estimate"]["needed_full_speed"] / 2**20 == pytest.approx(364.0889, abs=1e-4)
    assert data["estimate"]["full_fits"] is False and data["measured"] == []


def test_window_from_a_stored_run(tmp_path):
    store = Store(tmp_path / "results.db")
    run = RunRecord(run_id="20261122T000000-abcd", kind="kb2014", target="/srv", settings={})
    store.create_run(run)
    store.save_operation(run.run_id, 0, OperationRecord(name="active-full", pattern="write qd1", status=COMPLETE,
                                                        figures={"effective_bw": 100.0 * 2**20}))
    args = ("window", "--backup-size", "10TiB", "--from-run", "latest", "--results", str(tmp_path),
            "--change-rate", "10%")
    data = json.loads(ok(*args, "--json"))
    (row,) = data["measured"]
    assert data["run_id"] == run.run_id and row["operation"] == "active-full"
    assert row["full_seconds"] == pytest.approx(10 * 2**40 / (100 * 2**20))
    assert row["incremental_seconds"] == pytest.approx(2**40 / (100 * 2**20))
    text = ok(*args)
    assert "Active full" in text and "29.13" in text and "forward incremental" in text


@pytest.mark.parametrize("args,error,message", [
    (("capacity", "--disks", "4", "--disk-size", "6XB", "--layout", "raid6"), RecipeError, "--disk-size: not a size"),
    (("capacity", "--disks", "4", "--disk-size", "6TB", "--layout", "raid6", "--vdevs", "2"), InputError,
     "--vdevs does not apply"),
    (("rebuild", "--disks", "4", "--disk-size", "6TB", "--layout", "raid0", "--rebuild-rate", "1MB/s"), InputError,
     "no redundancy"),
    (("snapshot", "--origin", "10GB", "--change", "20GB"), InputError, "at most the origin"),
    (("window", "--backup-size", "10TiB"), InputError, "needs --speed, --window or --from-run"),
    (("rebuild", "--disks", "4", "--disk-size", "6TB", "--layout", "raid6"), RecipeError,
     "needs --rebuild-rate or --from-run"),
    (("rebuild", "--from-run", "latest", "--rebuild-rate", "1MB/s"), RecipeError, "choose one"),
    (("rebuild", "--rebuild-rate", "1MB/s", "--layout", "raid6"), RecipeError, "needs --layout and --disk-size"),
])
def test_bad_input_is_one_typed_error(args, error, message):
    result = invoke(*args)
    assert isinstance(result.exception, error) and message in result.exception.message


def test_window_from_a_run_without_backup_operations(tmp_path):
    store = Store(tmp_path / "results.db")
    store.create_run(RunRecord(run_id="20261122T000000-abcd", kind="smallfiles", target="/srv", settings={}))
    result = invoke("window", "--backup-size", "1TiB", "--from-run", "latest", "--results", str(tmp_path))
    assert isinstance(result.exception, InputError)
    assert "no measured backup-operation speeds" in result.exception.message


def test_rebuild_from_a_run_without_a_fault(tmp_path):
    store = Store(tmp_path / "results.db")
    store.create_run(RunRecord(run_id="20261122T000000-abcd", kind="kb2014", target="/srv", settings={}))
    result = invoke("rebuild", "--from-run", "latest", "--results", str(tmp_path))
    assert isinstance(result.exception, InputError)
    assert "no finished rebuild" in result.exception.message


def test_as_a_real_process(cli):
    done = cli("size", "capacity", "--disks", "16", "--disk-size", "6TB", "--layout", "raid6", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["layouts"][0]["data_area"] == 84 * TB
    bad = cli("size", "snapshot", "--origin", "10GB", "--change", "lots")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert bad.stderr.startswith("backupbench: --change:")
