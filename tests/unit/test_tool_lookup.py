"""Where a project-built tool (the S3 loader, MinIO) is found: a checkout's .tools/bin, an
installed bundle's venv, and the unpacked offline bundle, where the pex sits beside bin/."""

from __future__ import annotations

from pathlib import Path

import pytest

from backupbench.errors import ToolMissingError
from backupbench.process import ToolPlaces, project_tool

LOADER = "backupbench-s3load"


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def _bundle_places(tmp_path: Path) -> ToolPlaces:
    checkout = tmp_path / "site-packages"  # no scripts/install-minio.sh two levels up: not a checkout
    return ToolPlaces(project_tools=checkout / "a" / ".tools" / "bin", scripts=tmp_path / "venv-bin",
                      launcher=tmp_path / "backupbench-0.1.0-offline" / "backupbench-cp311.pex")


@pytest.fixture
def no_loader_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.delenv("BACKUPBENCH_S3LOAD", raising=False)


def test_the_pex_finds_the_loader_in_the_bin_folder_beside_it(tmp_path, no_loader_on_path):
    places = _bundle_places(tmp_path)
    loader = _executable(tmp_path / "backupbench-0.1.0-offline" / "bin" / LOADER)
    assert project_tool(LOADER, "BACKUPBENCH_S3LOAD", places=places) == str(loader)


def test_a_relative_launcher_is_taken_from_the_current_folder(tmp_path, no_loader_on_path, monkeypatch):
    loader = _executable(tmp_path / "bin" / LOADER)
    monkeypatch.chdir(tmp_path)
    places = ToolPlaces(tmp_path / "x" / "y" / "z", tmp_path / "venv-bin", Path("backupbench-cp311.pex"))
    assert project_tool(LOADER, places=places) == str(loader)


def test_the_checkout_and_the_environment_variable_come_first(tmp_path, no_loader_on_path, monkeypatch):
    places = _bundle_places(tmp_path)
    _executable(tmp_path / "backupbench-0.1.0-offline" / "bin" / LOADER)
    built = _executable(places.project_tools / LOADER)
    assert project_tool(LOADER, "BACKUPBENCH_S3LOAD", places=places) == str(built)
    chosen = _executable(tmp_path / "elsewhere" / LOADER)
    monkeypatch.setenv("BACKUPBENCH_S3LOAD", str(chosen))
    assert project_tool(LOADER, "BACKUPBENCH_S3LOAD", places=places) == str(chosen)


def test_a_file_that_is_not_executable_is_passed_over(tmp_path, no_loader_on_path):
    places = _bundle_places(tmp_path)
    plain = tmp_path / "backupbench-0.1.0-offline" / "bin" / LOADER
    plain.parent.mkdir(parents=True)
    plain.write_text("not a program")
    with pytest.raises(ToolMissingError):
        project_tool(LOADER, places=places)


def test_missing_in_a_bundle_says_what_to_do_in_the_bundle(tmp_path, no_loader_on_path):
    with pytest.raises(ToolMissingError) as caught:
        project_tool(LOADER, "BACKUPBENCH_S3LOAD", places=_bundle_places(tmp_path))
    text = f"{caught.value} {caught.value.fix}"
    assert "bin/backupbench-s3load" in text and "BACKUPBENCH_S3LOAD=" in text
    assert "scripts/install-minio.sh" not in text  # not in the bundle


def test_missing_in_a_checkout_says_how_to_build_it(tmp_path, no_loader_on_path):
    _executable(tmp_path / "repo" / "scripts" / "install-minio.sh")
    places = ToolPlaces(tmp_path / "repo" / ".tools" / "bin", tmp_path / "venv-bin", None)
    with pytest.raises(ToolMissingError) as caught:
        project_tool(LOADER, places=places)
    assert "scripts/install-minio.sh" in caught.value.fix
