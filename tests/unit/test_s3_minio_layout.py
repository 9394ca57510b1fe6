"""The MinIO layout helper's pure parts: command line, credentials, drive checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from backupbench.errors import InputError, RefusedError
from backupbench.layouts.minio import check_drives, random_credentials, server_argv


def test_command_line_listens_on_loopback_and_holds_no_credentials():
    drives = [Path("/mnt/d1"), Path("/mnt/d2"), Path("/mnt/d3"), Path("/mnt/d4")]
    argv = server_argv("/x/minio", drives, "127.0.0.1", 9100)
    assert argv == ["/x/minio", "server",
                    "--address", "127.0.0.1:9100", "/mnt/d1", "/mnt/d2", "/mnt/d3", "/mnt/d4"]
    assert server_argv("/x/minio", drives[:1], "127.0.0.1", 9100, Path("/c")) == \
        ["/x/minio", "server", "--address", "127.0.0.1:9100", "--certs-dir", "/c", "/mnt/d1"]


def test_random_credentials_are_long_and_different():
    user, password = random_credentials()
    assert len(user) == 20 and len(password) == 40 and user.isalnum() and password.isalnum()
    assert random_credentials() != (user, password)


def test_drive_checks(tmp_path):
    empty, formatted, used = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for folder in (empty, formatted, used):
        folder.mkdir()
    (formatted / ".minio.sys").mkdir()
    (used / "data.bin").write_bytes(b"x")
    assert check_drives([empty, formatted]) == [empty.resolve(), formatted.resolve()]
    with pytest.raises(RefusedError, match="not MinIO's"):
        check_drives([used])
    with pytest.raises(InputError, match="twice"):
        check_drives([empty, tmp_path / "a" / ".." / "a"])
    with pytest.raises(InputError, match="at least one"):
        check_drives([])
    with pytest.raises(InputError, match="not a folder"):
        check_drives([tmp_path / "nope"])
