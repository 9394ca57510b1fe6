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
