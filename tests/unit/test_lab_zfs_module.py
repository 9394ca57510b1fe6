"""The pure parts of building the lab guest's ZFS module: versions, package names, the cache."""

from pathlib import Path

import pytest

from backupbench.errors import BackupbenchError
from backupbench.lab import zfs_module
from backupbench.lab.zfs_module import find_built, header_names, release_of, upstream_version, userspace_version

# `apt-cache depends linux-headers-6.1.0-56-amd64` on the development machine (bookworm).
APT_CACHE_DEPENDS = """linux-headers-6.1.0-56-amd64
  Depends: linux-headers-6.1.0-56-common
  Depends: linux-kbuild-6.1
  Depends: linux-compiler-gcc-12-x86
"""


@pytest.mark.parametrize("debian, upstream", [
    ("2.3.2-2~bpo12+2", "2.3.2"), ("2.1.11-1+deb12u1", "2.1.11"), ("1:2.3.2-1", "2.3.2"), ("2.3.2", "2.3.2"),
])
def test_the_version_dkms_knows_the_source_by(debian, upstream):
    assert upstream_version(debian) == upstream


def test_release_of_a_kernel_package():
    assert release_of("linux-image-6.1.0-56-amd64") == "6.1.0-56-amd64"
    with pytest.raises(BackupbenchError, match="not a linux-image package"):
        release_of("linux-headers-6.1.0-56-amd64")


def test_headers_and_the_kernel_packages_they_need_but_not_the_compiler():
    assert header_names(APT_CACHE_DEPENDS, "6.1.0-56-amd64") == [
        "linux-headers-6.1.0-56-amd64", "linux-headers-6.1.0-56-common", "linux-kbuild-6.1"]


@pytest.mark.parametrize("answer, version", [
    ("install ok installed|2.3.2-2~bpo12+2", "2.3.2-2~bpo12+2"),
    ("deinstall ok config-files|2.1.11-1", None),  # removed, its configuration left
    ("", None),  # dpkg-query knows no such package
])
def test_userspace_version_only_of_an_installed_package(answer, version):
    asked = []

    def query(argv):
        asked.append(argv)
        return answer

    assert userspace_version(query) == version
    assert asked[0][-1] == "zfsutils-linux"


def _built(root: Path, release: str, version: str, files=("spl.ko", "zfs.ko", "module.json")) -> Path:
    folder = root / release / f"zfs-{version}"
    folder.mkdir(parents=True)
    for name in files:
        (folder / name).write_text(name)
    return folder


def test_a_module_is_found_only_for_its_kernel_and_version_and_only_whole(tmp_path):
    folder = _built(tmp_path, "6.1.0-56-amd64", "2.3.2-2~bpo12+2")
    found = find_built(tmp_path, "6.1.0-56-amd64", "2.3.2-2~bpo12+2")
    assert found is not None and found.files == (folder / "spl.ko", folder / "zfs.ko")
    assert found.fingerprint() == "module.json"
    assert find_built(tmp_path, "6.1.0-57-amd64", "2.3.2-2~bpo12+2") is None
    assert find_built(tmp_path, "6.1.0-56-amd64", "2.1.11-1") is None  # userspace and module must match
    assert find_built(tmp_path, "6.1.0-56-amd64", None) is None  # no zfsutils-linux on the host
    _built(tmp_path, "6.1.0-56-amd64", "2.2.0-1", files=("spl.ko", "module.json"))  # a build cut short
    assert find_built(tmp_path, "6.1.0-56-amd64", "2.2.0-1") is None


def test_the_cache_is_the_environments_then_the_checkouts(tmp_path, monkeypatch):
    monkeypatch.setenv(zfs_module.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert zfs_module.default_cache_root() == tmp_path / "elsewhere"
    monkeypatch.delenv(zfs_module.CACHE_ENV)
    root = zfs_module.default_cache_root()
    # Running from this checkout: the project's .tools, where `make clean` removes it.
    assert root.parts[-2:] == (".tools", "zfs") and (root.parent.parent / "pyproject.toml").is_file()
