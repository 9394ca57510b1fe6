"""The run journal and the sweep: what was written down is removed, and only that."""

from __future__ import annotations

import ast
import importlib
import json
import os
import signal
import subprocess
import sys

from pathlib import Path

import pytest

from backupbench import process
from backupbench.journal import Journal, JournalBusy, JournalGone, open_journals, read
from backupbench.layouts.actions import Action, Guard
from backupbench.process import Result
from backupbench import artefacts
from backupbench.runner.cleanup import OWN_NAMES, clean_journals, finish, sweep

RUN = "20261123T000000-ab12cd34"
OTHER = "20261123T000000-99999999"


class Host:
    """Commands for layout undos: recorded, answered from a table (passed in, not patched)."""

    def __init__(self, answers=None, fail=()):
        self.calls, self.answers, self.fail = [], answers or {}, fail

    def __call__(self, argv, timeout=0, check=True):
        from backupbench.errors import ProcessError
        self.calls.append(argv)
        if argv[0] in self.fail:
            raise ProcessError(argv, 1, f"{argv[0]}: failed")
        return Result(argv, 0, self.answers.get(argv[0], ""), "")


def test_entries_are_written_before_and_pending_until_removed(tmp_path):
    journal = Journal(tmp_path / "j", RUN, header={"run_id": RUN, "store": "/r/results.db"})
    first = journal.will_create(artefacts.file(tmp_path / f"backupbench-{RUN}.dat", RUN, "test file"))
    second = journal.will_create(artefacts.folder(tmp_path / f"bb-scratch-{RUN}", RUN, "scratch"))
    journal.record("done", Action("mount", (("mount", "a", "b"),), (("umount", "b"),)), "lay")
    contents = read(journal.path)
    assert contents.run_id == RUN and contents.store == "/r/results.db"
    # Newest first: the order to remove in.
    assert [p.action["description"] if p.action else p.artefact["what"] for p in contents.pending] == [
        "mount", "scratch", "test file"]
    journal.removed(first)
    journal.record("undone", Action("mount", (("mount", "a", "b"),), (("umount", "b"),)), "lay")
    assert [p.artefact_id for p in read(journal.path).pending] == [second]


def test_a_held_journal_is_not_taken_by_cleanup(tmp_path):
    live = Journal(tmp_path, RUN)
    with pytest.raises(JournalBusy):
        Journal.at(live.path)
    result = clean_journals(tmp_path)
    assert result[0].busy and live.path.exists()
    live.release()
    assert Journal.at(live.path).label == RUN


def test_only_what_backupbench_named_for_this_run_is_removed(tmp_path):
    ours = tmp_path / f"backupbench-{RUN}.dat"
    ours.write_bytes(b"x")
    theirs = tmp_path / "victim.db"
    theirs.write_bytes(b"user data")
    link = tmp_path / f"backupbench-{OTHER}.dat"
    link.symlink_to(theirs)
    tree = tmp_path / f"backupbench-smallfiles-{RUN}"
    (tree / "d0").mkdir(parents=True)
    (tree / "d0" / "f0").write_bytes(b"x")
    (tree / "escape").symlink_to(tmp_path)  # rmtree removes the link, never what it points at
    # Told no names, the removers take nothing for ours.
    assert artefacts.remove(artefacts.file(ours, RUN, "test file"), RUN, artefacts.removers()).result == "not ours"
    table = artefacts.removers(names=OWN_NAMES)
    assert artefacts.remove(artefacts.file(ours, RUN, "test file"), RUN, table).result == "removed"
    assert artefacts.remove(artefacts.tree(tree, RUN, "small files"), RUN, table).result == "removed"
    assert artefacts.remove(artefacts.file(ours, RUN, "test file"), RUN, table).result == "gone"
    # A journal cannot point the removers anywhere else: not at a file whose name merely
    # contains the tag, not with a tag that is not the journal's run, not through a symlink.
    forged = [artefacts.file(theirs, "v", "test file"), artefacts.file(theirs, RUN, "test file"),
              {"kind": "file", "path": str(theirs), "tag": RUN}, artefacts.tree(tmp_path, RUN, "x"),
              artefacts.file(link, OTHER, "test file"), artefacts.file(link, RUN, "test file")]
    for entry in forged:
        assert artefacts.remove(entry, RUN, table).result == "not ours", entry
    assert artefacts.remove(artefacts.file(link, OTHER, "test file"), OTHER, table).result == "not ours"  # a link
    assert theirs.read_bytes() == b"user data" and link.is_symlink() and tmp_path.is_dir()
    folder = tmp_path / f"bb-scratch-{RUN}"
    folder.mkdir()
    (folder / "someone-elses").write_text("keep")
    outcome = artefacts.remove(artefacts.folder(folder, RUN, "scratch"), RUN, table)
    assert outcome.result == "failed" and "not empty" in outcome.text
    assert (folder / "someone-elses").read_text() == "keep"


def test_the_sweep_knows_every_name_backupbench_gives_what_it_creates():
    """Each creator declares its ArtefactName beside the code that makes it; one missing from
    the sweep's OWN_NAMES would be left behind as "not ours"."""
    src = Path(artefacts.__file__).parent
    declared = []
    for path in sorted(src.rglob("*.py")):
        module = ".".join(("backupbench", *path.relative_to(src).with_suffix("").parts)).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name) and node.value.func.id == "ArtefactName"):
                declared += [getattr(importlib.import_module(module), target.id) for target in node.targets]
    assert len(declared) >= 8
    assert [name for name in declared if name not in OWN_NAMES] == []


def test_a_process_is_stopped_only_if_it_is_still_the_same_one_started_for_the_run():
    env = {**os.environ, process.RUN_TAG_ENV: RUN}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True, env=env)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        ident = process.identity(child.pid)
        boot, pid, ticks = ident.split()
        table = artefacts.removers()
        reused = {"kind": "process", "identity": f"{boot} {pid} {int(ticks) + 1}", "name": "python"}
        assert artefacts.remove(reused, RUN, table).result == "gone"  # a pid taken by someone else
        named = {"kind": "process", "identity": process.identity(stranger.pid), "name": "python"}
        assert artefacts.remove(named, RUN, table).result == "not ours"  # alive, but not started for this run
        assert child.poll() is None and stranger.poll() is None
        outcome = artefacts.remove({"kind": "process", "identity": ident, "name": "python"}, RUN, table)
        assert outcome.result == "removed"
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        for proc in (child, stranger):
            if proc.poll() is None:
                proc.kill()


def test_cleanup_runs_only_the_programs_layouts_undo_with(tmp_path):
    journal = Journal(tmp_path / "j", RUN)
    harmless = tmp_path / "pwned"
    journal.record("done", Action("evil", (("true",),), (("touch", str(harmless)),)), "lay")
    journal.record("done", Action("sly guard", (("true",),), (("umount", "/m"),), Guard(("sh", "-c", "true"), "")), "lay")
    journal.release()
    host = Host()
    cleaned = clean_journals(tmp_path / "j", run=host)
    failed = cleaned[0].report.failed
    assert host.calls == [] and not harmless.exists()
    assert any("touch" in line and "refused" in line for line in failed)
    assert any("sh" in line and "refused" in line for line in failed)


def test_a_journal_closed_after_it_was_listed_is_no_failure(tmp_path):
    """cleanup during a run's normal end: the run closes its journal between cleanup's
    listing and its opening. That journal is gone with everything in it, not 'FAILED'."""
    live = Journal(tmp_path, RUN)
    listed = list(open_journals(tmp_path))
    live.close()  # the run ends normally: renamed .closed, lock let go
    with pytest.raises(JournalGone):
        Journal.at(listed[0])
    assert clean_journals(tmp_path, journals=listed) == []
    vanished = tmp_path / f"{OTHER}.open.jsonl"  # listed, then removed by hand
    assert clean_journals(tmp_path, journals=[vanished]) == []


def test_cleanup_acts_only_on_the_users_own_well_formed_journals(tmp_path):
    folder = tmp_path / "j"
    Journal(folder, RUN).release()
    (folder / "20261123T000000-deadbeef.open.jsonl").write_text('{"event": "done"}\n')  # no header
    (folder / f"{OTHER}.open.jsonl").write_text(json.dumps({"event": "run", "run_id": RUN}) + "\n")  # wrong run
    world = folder / "20261123T000001-cafe.open.jsonl"
    world.write_text(json.dumps({"event": "run", "run_id": "20261123T000001-cafe"}) + "\n")
    world.chmod(0o666)
    results = {item.label: item for item in clean_journals(folder, run=Host())}
    assert results[RUN].refused is None
    assert all(results[label].refused for label in results if label != RUN), results
    assert folder.stat().st_mode & 0o077 == 0  # the journal folder is the user's alone


def test_sweep_undoes_actions_and_artefacts_newest_first_and_closes(tmp_path):
    journal = Journal(tmp_path / "j", RUN)
    file = tmp_path / f"backupbench-{RUN}.dat"
    journal.will_create(artefacts.file(file, RUN, "test file"))
    file.write_bytes(b"x")
    mount = Action("mount /dev/x", (("mount", "/dev/x", "/m"),), (("umount", "/m"),), Guard(("findmnt", "/m"), "/m"))
    journal.record("done", mount, "lay")
    host = Host({"findmnt": "/m\n"})
    report = sweep(journal, run=host)
    assert report.clean and host.calls == [["findmnt", "/m"], ["umount", "/m"]]
    assert not file.exists() and read(journal.path).pending == []
    finish(journal, report)
    assert list(open_journals(tmp_path / "j")) == []


def test_a_failed_undo_leaves_the_journal_open_and_stops_destructive_undos(tmp_path):
    journal = Journal(tmp_path / "j", RUN)
    wipe = Action("mkfs", (("mkfs.ext4", "/dev/x"),), (("wipefs", "-a", "/dev/x"),), destructive=True)
    journal.record("done", wipe, "lay")
    journal.record("done", Action("mount", (("mount", "/dev/x", "/m"),), (("umount", "/m"),)), "lay")
    host = Host(fail=("umount",))
    report = sweep(journal, run=host)
    assert not report.clean and ["wipefs", "-a", "/dev/x"] not in host.calls
    finish(journal, report)
    assert list(open_journals(tmp_path / "j")) == [journal.path]
    later = Host()
    cleaned = clean_journals(tmp_path / "j", run=later)
    assert cleaned[0].report.clean and later.calls == [["umount", "/m"], ["wipefs", "-a", "/dev/x"]]
    assert list(open_journals(tmp_path / "j")) == []


def test_cleanup_marks_the_run_interrupted_in_its_store(tmp_path):
    from backupbench.results.model import RunRecord
    from backupbench.results.store import Store
    store = Store(tmp_path / "results.db", alive=lambda owner: True)
    store.create_run(RunRecord(RUN, "kb2014", "/srv", {}, owner="boot 1 2"))
    journal = Journal(tmp_path / "journal", RUN, header={"run_id": RUN, "store": str(tmp_path / "results.db")})
    journal.release()  # the process died
    cleaned = clean_journals(tmp_path / "journal")
    assert cleaned[0].marked_interrupted
    run = Store(tmp_path / "results.db", alive=lambda owner: True).load_run(RUN)
    assert run.status == "interrupted" and "backupbench cleanup" in run.notes[-1]


def test_cleanup_removes_the_folder_of_a_run_killed_before_the_store_held_it(tmp_path):
    """A SIGKILL between the run folder's first files and the store's row: the folder goes; a
    folder holding anything else, or a stored run's, stays."""
    from backupbench.results.model import RunRecord
    from backupbench.results.store import Store
    store = Store(tmp_path / "results.db", alive=lambda owner: True)
    store.create_run(RunRecord(OTHER, "kb2014", "/srv", {}, owner="boot 1 2"))   # the store exists; RUN is not in it
    cut_off = tmp_path / "runs" / RUN
    cut_off.mkdir(parents=True)
    (cut_off / "settings.json").write_text("{}")
    (cut_off / "host.json").write_text("{}")
    Journal(tmp_path / "journal", RUN, header={"run_id": RUN, "store": str(tmp_path / "results.db")}).release()
    clean_journals(tmp_path / "journal")
    assert not cut_off.exists()

    kept = tmp_path / "runs" / RUN
    kept.mkdir(parents=True)
    (kept / "settings.json").write_text("{}")
    (kept / "active-full.json").write_text("{}")   # not what a run writes before the store: not ours to judge
    Journal(tmp_path / "journal", RUN, header={"run_id": RUN, "store": str(tmp_path / "results.db")}).release()
    clean_journals(tmp_path / "journal")
    assert sorted(p.name for p in kept.iterdir()) == ["active-full.json", "settings.json"]
