from pathlib import Path

from backupbench.engines.fio_job import FioJob, command, fio_duration
from backupbench.engines.fio_progress import last_status


def options_of(job):
    return dict(job.options())


def test_job_file_has_every_option_once():
    job = FioJob(name="synthetic-full", filename=Path("/r/t.dat"), rw="randrw", rwmixwrite=50,
                 block_size=512 * 1024, region_size=2**30, iodepth=4, runtime_s=10)
    text = job.text()
    assert "[synthetic-full]" in text
    opts = options_of(job)
    assert opts["bs"] == "512k" and opts["size"] == "1g" and opts["rwmixwrite"] == "50"
    assert opts["direct"] == "1" and opts["runtime"] == "10s" and opts["time_based"] == "1"
    assert "numjobs" not in opts
    keys = [line.split("=")[0] for line in text.splitlines() if "=" in line and not line.startswith(";")]
    assert len(keys) == len(set(keys))


def test_several_jobs_get_separate_regions():
    job = FioJob(name="active-full", filename=Path("/r/t.dat"), rw="write", block_size=512 * 1024,
                 region_size=256 * 2**20, numjobs=4)
    opts = options_of(job)
    assert opts["numjobs"] == "4"
    assert opts["offset_increment"] == opts["size"] == "256m"
    assert job.pattern == "write qd1 x4"


def test_buffered_and_durations():
    job = FioJob(name="x", filename=Path("/r/t"), rw="read", block_size=4096, region_size=8192, direct=False)
    assert options_of(job)["direct"] == "0"
    assert fio_duration(1.5) == "1500ms" and fio_duration(2) == "2s"
    argv = command(Path("/j.fio"), Path("/o.json"))
    assert argv[0] == "fio" and "--output-format=json+" in argv and argv[-1] == "/j.fio"


def test_progress_from_eta_lines():
    eta = ("Jobs: 1 (f=1)\rJobs: 1 (f=1), 0B/s-64.0MiB/s: [W(1)][75.0%][w=64.0MiB/s][w=64 IOPS][eta 00m:01s]\r\n"
           "Jobs: 1 (f=1): [W(1)][100.0%][w=64.1MiB/s][w=64 IOPS][eta 00m:00s]\r")
    status = last_status(eta)
    assert status.fraction == 1.0 and status.rates == "w=64.1MiB/s w=64 IOPS"   # the live figures (issue 42)
    assert last_status("Jobs: 1 (f=1)\r").fraction is None
    mixed = last_status("Jobs: 1 (f=1): [m(1)][50.0%][r=286MiB/s,w=280MiB/s][r=4573,w=4478 IOPS][eta 00m:02s]\r")
    assert mixed.rates == "r=286MiB/s,w=280MiB/s r=4573,w=4478 IOPS"


def test_the_last_job_of_an_exported_suite_removes_the_test_file_and_only_it(tmp_path):
    from click.testing import CliRunner

    from backupbench.cli.app import app

    out = CliRunner().invoke(app, ["export-fio", "restore-random", "restore-sequential", "--path", str(tmp_path),
                                   "--size", "8MiB"]).output
    sections = out.split("\n[")[1:]
    assert sorted(s.split("]")[0] for s in sections) == ["layout", "restore-random", "restore-sequential"]
    assert ["unlink=1" in s.splitlines() for s in sections] == [False, False, True]
    assert out.startswith("; Run: fio suite.fio") and "fio --runtime does not override" in out
