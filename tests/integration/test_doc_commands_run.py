"""The commands README.md and docs/*.md show, run for real (tests/doc_commands_support.py lists
them, each with what the test changes: the path for a folder of its own, sizes and counts for
small ones, the S3 endpoint for a MinIO it starts). tests/unit/test_doc_commands.py makes sure
every command a page shows is here, run by another named test, or marked `# lab` / `# hosts`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from doc_commands_support import ROOT, RUN_HERE, RUN_ON_MINIO, RUN_ON_XFS, Real
from host_support import require_tools, run_cli

from backupbench import units

pytestmark = pytest.mark.real


def _run_all(reals: tuple[Real, ...], places: dict[str, str], cwd: Path, results: Path,
             env: dict[str, str] | None = None) -> list[str]:
    """Each command in turn; what went wrong with each that did (all are run)."""
    failures = []
    for real in reals:
        argv = real.argv(places)
        done = run_cli(argv, cwd=cwd, results=results, env=env, timeout=600)
        if done.returncode not in real.exit_codes:
            failures.append(f"{real.command}\n  ran as: backupbench {' '.join(argv)}\n  exit {done.returncode}, "
                            f"expected {real.exit_codes}: {done.stderr.strip()[-800:]}")
    return failures


def _workdir(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(where the commands run, the folder a page's /srv/... becomes, the results folder); the
    pages name examples/ relative to a checkout."""
    cwd, target = tmp_path / "cwd", tmp_path / "backups"
    cwd.mkdir()
    target.mkdir()
    (cwd / "examples").symlink_to(ROOT / "examples")
    return cwd, target, tmp_path / "results"


def test_the_local_commands_run(tmp_path):
    cwd, target, results = _workdir(tmp_path)
    failures = _run_all(RUN_HERE, {"dir": str(target)}, cwd, results)
    assert failures == [], "\n".join(failures)
    assert not [p for p in target.iterdir()], "a run left something in its target"
    assert (cwd / "report.html").is_file() and (cwd / "compare.html").is_file()


def test_the_s3_commands_run_against_minio(tmp_path, minio_single):
    cwd, _, results = _workdir(tmp_path)
    env = {"AWS_ACCESS_KEY_ID": minio_single.access_key, "AWS_SECRET_ACCESS_KEY": minio_single.secret_key}
    failures = _run_all(RUN_ON_MINIO, {"endpoint": minio_single.endpoint}, cwd, results, env)
    assert failures == [], "\n".join(failures)


def test_the_block_clone_command_runs_on_xfs(tmp_path, loop_device):
    require_tools("mkfs.xfs", "mount", "umount")
    loop = loop_device("doc-xfs", 512 * units.MiB)
    subprocess.run(["mkfs.xfs", "-q", "-f", "-m", "reflink=1", loop.device], check=True, capture_output=True)
    repo = tmp_path / "xfs-repo"
    repo.mkdir()
    subprocess.run(["mount", loop.device, str(repo)], check=True, capture_output=True)  # loop_device unmounts it
    cwd, _, results = _workdir(tmp_path)
    failures = _run_all(RUN_ON_XFS, {"xfs": str(repo)}, cwd, results)
    assert failures == [], "\n".join(failures)
