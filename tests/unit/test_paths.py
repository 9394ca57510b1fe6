"""paths.for_program: every path handed to a program is absolute, escaped or refused."""

import pytest

from backupbench.engines.fio_job import FioJob
from backupbench.errors import InputError
from backupbench.paths import PathRefused, Syntax, for_program


def test_fio_colons_are_escaped_so_fio_sees_one_file():
    # fio's filename= splits at ':': /srv/x/victim.db:copy was two files, victim.db one of them.
    assert for_program("/srv/x/victim.db:copy/t.dat", Syntax.FIO_JOB) == "/srv/x/victim.db\\:copy/t.dat"
    # A backslash already before a colon stays, and fio takes the escape away again.
    assert for_program("/srv/a\\:b", Syntax.FIO_JOB) == "/srv/a\\\\:b"


@pytest.mark.parametrize("char", [";", "#", "$"])
def test_what_fio_has_no_escape_for_is_refused_with_the_reason(char):
    with pytest.raises(PathRefused) as raised:
        for_program(f"/srv/a{char}b", Syntax.FIO_JOB)
    assert isinstance(raised.value, InputError)  # exit 2, one line
    assert repr(char) in raised.value.message and "fio reads as" in raised.value.message
    assert raised.value.fix
    assert for_program(f"/srv/a{char}b") == f"/srv/a{char}b"  # an argument in a list carries it fine


@pytest.mark.parametrize("syntax", list(Syntax))
@pytest.mark.parametrize("bad", ["/srv/new\nline", "/srv/tab\there", "/srv/bell\x07", "/srv/nul\x00"])
def test_control_characters_are_refused_for_every_program(syntax, bad):
    with pytest.raises(PathRefused, match="control character"):
        for_program(bad, syntax)


def test_bytes_that_are_not_utf8_are_refused():
    undecodable = b"/srv/\xff\xfe".decode("utf-8", "surrogateescape")
    with pytest.raises(PathRefused, match="not valid UTF-8"):
        for_program(undecodable)


def test_relative_paths_become_absolute_so_nothing_starts_with_a_dash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert for_program("-rf") == str(tmp_path / "-rf")
    assert for_program("déjà vu,a:b") == str(tmp_path / "déjà vu,a:b")


def test_qemu_commas_are_doubled_and_minio_ellipses_refused():
    assert for_program("/var/tmp/a,b/d0.img", Syntax.QEMU_OPTION) == "/var/tmp/a,,b/d0.img"
    assert for_program("/mnt/d{1..4}", Syntax.MINIO_DRIVE) == "/mnt/d{1..4}"
    with pytest.raises(PathRefused, match="several drives"):
        for_program("/mnt/d{1...4}", Syntax.MINIO_DRIVE)


def test_too_long_a_path_is_refused():
    with pytest.raises(PathRefused, match="at most 4,095"):
        for_program("/" + "a" * 5000)


def test_a_job_file_names_the_test_file_escaped():
    job = FioJob(name="active-full", filename="/srv/x/victim.db:copy/backupbench-r.dat", rw="write",
                 block_size=512 * 1024, region_size=2**20)
    assert "filename=/srv/x/victim.db\\:copy/backupbench-r.dat\n" in job.text()
    assert "thread=1\n" in job.text()  # one process: one SIGKILL ends every job
    with pytest.raises(PathRefused):
        FioJob(name="j", filename="/srv/x;y/t.dat", rw="write", block_size=4096, region_size=4096).text()


def test_a_name_too_long_for_any_file_system_is_refused_before_it_is_used(tmp_path):
    from backupbench.paths import check_length

    long_name = tmp_path / ("a" * 256)
    with pytest.raises(PathRefused, match="a name of 256 bytes"):
        for_program(long_name / "x")
    assert for_program(tmp_path / ("a" * 255)).endswith("a" * 255)
    with pytest.raises(InputError, match=r"^--csv has a name of 256 bytes"):
        check_length(long_name, "--csv", "give a shorter path")
    with pytest.raises(InputError, match="4,097 bytes long"):
        check_length("/" + "b/" * 2048, "--csv", "give a shorter path")
    check_length(tmp_path / "fine", "--csv", "give a shorter path")


@pytest.mark.parametrize("command", [("report",), ("cleanup",), ("history",), ("show", "latest"),
                                     ("export", "--prometheus"), ("run", "--size", "1MiB", ".")])
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_results_folder_too_long_is_one_line_not_an_internal_error(tmp_path, monkeypatch, capsys, command, how):
    from backupbench.cli.app import main

    results = tmp_path / ("r" * 400)
    monkeypatch.chdir(tmp_path)
    if how == "environment":
        monkeypatch.setenv("BACKUPBENCH_RESULTS", str(results))
        argv = list(command)
    else:
        argv = [*command, "--results", str(results)]
    assert main(argv) == 2
    said = capsys.readouterr().err.strip()
    assert "\n" not in said and "internal error" not in said
    assert "has a name of 400 bytes" in said and ("--results" if how == "flag" else "BACKUPBENCH_RESULTS") in said


def test_a_results_folder_sqlite_cannot_open_is_said_so(tmp_path, monkeypatch, capsys):
    from backupbench.cli.app import main

    deep = tmp_path / "/".join(["d" * 100] * 5)  # every name fine, the whole past SQLite's 511 bytes
    assert main(["history", "--results", str(deep)]) == 2
    said = capsys.readouterr().err
    assert "SQLite opens paths of at most 511 bytes" in said and "internal error" not in said
    assert not deep.exists()


def test_a_journal_folder_too_long_is_one_line(tmp_path, monkeypatch, capsys):
    from backupbench.cli.app import main

    monkeypatch.setenv("BACKUPBENCH_JOURNAL_DIR", str(tmp_path / ("j" * 300)))
    assert main(["cleanup", "--results", str(tmp_path / "results")]) == 2
    said = capsys.readouterr().err
    assert "BACKUPBENCH_JOURNAL_DIR" in said and "a name of 300 bytes" in said


def test_report_html_too_long_is_one_line(tmp_path, capsys):
    from backupbench.cli.app import main
    from backupbench.results.model import COMPLETE, RunRecord
    from backupbench.results.store import Store

    store = Store(tmp_path / "results" / "results.db")
    store.create_run(RunRecord(run_id="20261125T000000-ab12", kind="kb2014", target="/srv", settings={},
                               status=COMPLETE))
    assert main(["report", "--results", str(tmp_path / "results"), "--html", str(tmp_path / ("h" * 300))]) == 2
    said = capsys.readouterr().err.strip()
    assert "\n" not in said and "--html has a name of 300 bytes" in said
