"""Paths with ':', ',', spaces, newlines, unicode, a leading '-' and fio's ';' '#' '$' through
every command that takes a path: each one either works on exactly that path, or is
refused in one line; a file beside it is never touched.

The file beside is the trap: `victim.db` next to a folder `victim.db:copy` is what fio
overwrote when it split the path at the colon.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from host_support import require_tools

pytestmark = pytest.mark.real

# (folder name, the file a program could mistake it for)
WORKS = [("victim.db:copy", "victim.db"), ("a,b", "a"), ("with space", "with"), ("déjà vu", "déjà"),
         ("-lead", "lead")]
REFUSED_BY_FIO = [("x#y", "x"), ("x;y", "x"), ("x$HOME", "x")]
SMALL_RUN = ("--size", "8MiB", "--runtime", "0.5", "--ramp", "0", "--operations", "active-full,restore-random", "--quiet")
SMALL_FILES = ("--workload", "smallfiles", "--preset", "quick", "--files", "200", "--quiet")
USER_DATA = b"the user's data, not backupbench's\n"


def _trap(tmp_path: Path, folder: str, victim: str) -> tuple[Path, Path]:
    target = tmp_path / "data" / folder
    target.mkdir(parents=True)
    trap = tmp_path / "data" / victim
    trap.write_bytes(USER_DATA)
    return target, trap


def _untouched(tmp_path: Path, target: Path, trap: Path) -> None:
    assert trap.read_bytes() == USER_DATA
    assert list(target.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == sorted([target.name, trap.name])


@pytest.mark.parametrize("folder,victim", WORKS, ids=[w[0] for w in WORKS])
def test_run_and_export_work_on_exactly_that_folder(cli, tmp_path, folder, victim):
    target, trap = _trap(tmp_path, folder, victim)
    # `--` so that a folder starting with '-' is a path, as in any Unix command
    result = cli("run", *SMALL_RUN, "--json", "--", str(target))
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)["run"]
    assert run["status"] == "complete" and run["target"] == str(target)
    _untouched(tmp_path, target, trap)
    # The stored job file names the file with fio's escape, and plain fio writes exactly there.
    exported = cli("export-fio", "active-full", "--path", str(target), "--size", "8MiB", "--runtime", "0.5")
    assert exported.returncode == 0, exported.stderr
    job = tmp_path / "job.fio"
    # Kept (no unlink=1) to see where fio wrote; test_run_real checks that the suite removes it.
    assert exported.stdout.count("\nunlink=1\n") == 1
    job.write_text(exported.stdout.replace("\nunlink=1\n", "\n"))
    fio = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True, cwd=tmp_path)
    assert fio.returncode == 0, fio.stderr
    written = [p for p in target.iterdir()]
    assert len(written) == 1 and re.fullmatch(r"backupbench-export-[0-9a-f]{12}\.dat", written[0].name)
    assert trap.read_bytes() == USER_DATA
    written[0].unlink()
    files = cli("run", *SMALL_FILES, "--", str(target))
    assert files.returncode == 0, files.stderr
    _untouched(tmp_path, target, trap)


@pytest.mark.parametrize("folder,victim", REFUSED_BY_FIO, ids=[r[0] for r in REFUSED_BY_FIO])
def test_what_fio_cannot_be_told_is_refused_in_one_line_and_small_files_still_work(cli, tmp_path, folder, victim):
    target, trap = _trap(tmp_path, folder, victim)
    for args in (("run", *SMALL_RUN, str(target)), ("export-fio", "--path", str(target))):
        result = cli(*args)
        assert result.returncode == 2, result.stderr
        line = result.stderr.strip()
        assert "\n" not in line and "cannot be handed to fio" in line and repr(folder[1]) in line, line
    _untouched(tmp_path, target, trap)
    assert not (cli.results / "runs").exists() or not any((cli.results / "runs").iterdir())
    files = cli("run", *SMALL_FILES, str(target))  # no fio here: the small-file engine uses the path as it is
    assert files.returncode == 0, files.stderr
    _untouched(tmp_path, target, trap)


def test_a_newline_in_a_path_is_refused_in_one_line(cli, tmp_path):
    target, trap = _trap(tmp_path, "new\nline", "new")
    for args in (("run", *SMALL_RUN, str(target)), ("run", *SMALL_FILES, str(target)),
                 ("export-fio", "--path", str(target))):
        result = cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "control character" in result.stderr, result.stderr
    _untouched(tmp_path, target, trap)


@pytest.mark.parametrize("folder", ["res:ults", "res,ults", "rés ults", "-results"])
def test_odd_results_folders_hold_runs_reports_and_cleanup(cli, tmp_path, folder):
    results = tmp_path / folder
    target = tmp_path / "target"
    target.mkdir()
    run = cli("run", *SMALL_RUN, "--results", str(results), str(target))
    assert run.returncode == 0, run.stderr
    assert (results / "results.db").is_file() and not list(target.iterdir())
    for args in (("history",), ("show", "latest"), ("export-fio", "--run", "latest"), ("cleanup",)):
        result = cli(*args, "--results", str(results))
        assert result.returncode == 0, (args, result.stderr)
    page = tmp_path / f"{folder} report.html"
    report = cli("report", "latest", "--results", str(results), "--html", str(page))
    assert report.returncode == 0, report.stderr
    assert page.is_file() and "<html" in page.read_text()


def test_recipe_and_mount_root_paths(cli, tmp_path):
    """plan reads a recipe at an odd path; a mount root fio or mount could misread is refused."""
    folder = tmp_path / "réc ipe:s,x"
    folder.mkdir()
    target = tmp_path / "a dir"
    target.mkdir()
    recipe = folder / "plan me.toml"
    recipe.write_text(f'name = "odd"\n[[layout]]\nname = "here"\nkind = "directory"\npath = "{target}"\n'
                      '[[workload]]\nkind = "kb2014"\n')
    planned = cli("plan", str(recipe), "--mount-root", str(tmp_path / "mnt:root, x"))
    assert planned.returncode == 0, planned.stderr
    refused = cli("plan", str(recipe), "--mount-root", str(tmp_path / "bad\nroot"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "control character" in refused.stderr
    # A layout fio would be told about wrongly is refused in the plan, before anything is built.
    fio_recipe = folder / "fio.toml"
    fio_recipe.write_text('name = "odd"\ndevices = ["/dev/vdb"]\n[[layout]]\nname = "fs"\nkind = "filesystem"\n'
                          'devices = ["/dev/vdb"]\n[[workload]]\nkind = "kb2014"\n')
    planned = cli("plan", str(fio_recipe), "--mount-root", str(tmp_path / "mnt;root"))
    # The plan wraps at 80 columns, wherever the tmp path's length puts the break.
    said = " ".join(planned.stdout.split())
    assert planned.returncode == 3 and "cannot be handed to" in said and "';'" in said


def test_monitor_csv_and_directory_with_odd_names(cli, tmp_path):
    folder = tmp_path / "mon:it,or dir"
    folder.mkdir()
    csv = folder / "sam:ples.csv"
    result = cli("monitor", "--device", str(folder), "--duration", "1.2s", "--interval", "0.5", "--csv", str(csv))
    assert result.returncode == 0, result.stderr
    assert csv.read_text().startswith("timestamp,elapsed_s")


def test_devices_with_odd_paths_is_read_only_and_one_line(cli, tmp_path):
    for name in ("dev:ice", "-dash", "dé vice"):
        path = tmp_path / name
        path.write_bytes(USER_DATA)
        result = cli("devices", "--", str(path))
        assert result.returncode == 3, result.stderr  # a file is not a block device: refused
        assert path.read_bytes() == USER_DATA


def test_apply_on_a_loop_device_with_an_odd_mount_root(cli, tmp_path, loop_device):
    require_tools("mkfs.ext4", "mount", "fio")
    device = loop_device("disk:one, a", 96 * 2**20).device
    try:
        root = tmp_path / "mnt:root, é"
        recipe = tmp_path / "loop.toml"
        recipe.write_text(f'name = "odd mount root"\ndevices = ["{device}"]\n[[layout]]\nname = "plain"\n'
                          f'kind = "filesystem"\ndevices = ["{device}"]\nfilesystem = {{ type = "ext4" }}\n'
                          '[[workload]]\nkind = "kb2014"\nsize = "8MiB"\nruntime = "0.5s"\nramp = 0\n'
                          'operations = ["active-full"]\n')
        result = cli("apply", str(recipe), "--yes", "--quiet", "--json", "--mount-root", str(root))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["run"]["status"] == "complete"
        assert not list(root.iterdir())  # mount points and the run's folder are gone
        assert subprocess.run(["blkid", "-p", device], capture_output=True).returncode == 2  # wiped
    finally:
        subprocess.run(["umount", "-R", str(tmp_path / "mnt:root, é")], capture_output=True)
