"""--results, as a class of input, through every command that takes it: a folder that is not
there, a file, a path with a control character. A command that only reads never makes a
store; a command that writes refuses a path it could not use before it opens a run; every
refusal is one line, exit 2."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.real

# Commands that only read the store (what they print needs no run; an empty store is fine).
READERS = [("history",), ("show", "latest"), ("report", "latest"), ("export", "--prometheus", "latest"),
           ("export-fio", "--run", "latest"), ("size", "rebuild", "--from-run", "latest", "--disk-size", "4TB")]
QUICK_RUN = ("--size", "8MiB", "--runtime", "0.5", "--ramp", "0", "--operations", "active-full", "--quiet")


def _one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", READERS, ids=[" ".join(c[:2]) for c in READERS])
def test_a_reading_command_never_makes_a_results_folder_or_store(cli, tmp_path, command):
    results = tmp_path / "not-yet"
    result = cli(*command, "--results", str(results))
    assert result.returncode in (0, 2), result.stderr
    if result.returncode:
        assert "no runs stored" in _one_line(result)
    assert not results.exists(), f"{command[0]} made {results}"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("command", [*READERS, ("cleanup",), ("run", "TARGET", *QUICK_RUN)],
                         ids=[" ".join(c[:2]) for c in READERS] + ["cleanup", "run"])
@pytest.mark.parametrize("bad", ["a file", "a control character"])
def test_a_results_path_no_command_can_use_is_refused_in_one_line_before_anything(cli, tmp_path, command, bad):
    target = tmp_path / "target"
    target.mkdir()
    if bad == "a file":
        results = tmp_path / "passwd"
        results.write_text("root:x:0:0\n")
    else:
        results = tmp_path / "r\nx"
    argv = [str(target) if arg == "TARGET" else arg for arg in command]
    result = cli(*argv, "--results", str(results))
    assert result.returncode == 2, (result.returncode, result.stderr)
    line = _one_line(result)
    assert "results folder (--results)" in line and ("is a file" in line if bad == "a file" else "control" in line)
    assert list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["target", results.name] if bad == "a file"
                                                                  else ["target"])
    if bad == "a file":
        assert results.read_text() == "root:x:0:0\n"
