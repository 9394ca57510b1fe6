"""A run's folder and its row in the store appear together (runner/pipeline.RunSession): a stop
between them (CI: a SIGINT 0.49 s in) left a folder of a run the store never had."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from backupbench import stopping
from backupbench.cli.progress import QuietReporter
from backupbench.errors import RunKept, StoreError
from backupbench.monitor.options import MonitorOptions
from backupbench.results.location import run_folder, store_file
from backupbench.results.model import INTERRUPTED
from backupbench.results.store import Store
from backupbench.runner import pipeline
from backupbench.runner.pipeline import RunSession, journalled, open_journal
from backupbench.runner.placement import NewRun

RUN_ID = "20261128T000000-bbbbbbbb"


@pytest.fixture
def latch():
    previous = {sig: signal.getsignal(sig) for sig in stopping.WATCHED}
    hook = sys.unraisablehook
    stopping.reset()
    stopping.install()
    yield
    stopping.reset()
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    sys.unraisablehook = hook


def _open(results):
    with journalled(open_journal(results, RUN_ID)) as journal:
        with RunSession(NewRun(RUN_ID, "opening-test", "nowhere", {}, {}), results=results,
                        reporter=QuietReporter(), monitor=MonitorOptions(no_monitor=True), journal=journal):
            pytest.fail("the stop should have ended the run before its body")


def test_a_stop_while_the_folder_is_written_is_acted_on_once_the_store_holds_the_run(latch, tmp_path, monkeypatch):
    written = []
    real_write = pipeline.write_json

    def write_then_stop(path, data):
        real_write(path, data)
        written.append(path.name)
        if len(written) == 1:
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0.2)  # the handler has run: held, so only recorded

    monkeypatch.setattr(pipeline, "write_json", write_then_stop)
    results = tmp_path / "results"
    # KeyboardInterrupt caught too: one escaping would end the whole pytest session.
    with pytest.raises((RunKept, KeyboardInterrupt)) as stopped:
        _open(results)
    assert stopped.type is RunKept, "the stop cut the opening between the folder and the store"
    assert written[:2] == ["settings.json", "host.json"]  # the stop waited for the opening to end
    assert Store(store_file(results)).load_run(RUN_ID).status == INTERRUPTED
    assert run_folder(results, RUN_ID).is_dir()


def test_an_opening_the_store_refuses_takes_its_folder_back(latch, tmp_path, monkeypatch):
    def refuse(self, run):
        raise StoreError("the store is read only", "pass --results DIR naming a writable folder")

    monkeypatch.setattr(Store, "create_run", refuse)
    results = tmp_path / "results"
    with pytest.raises(StoreError):
        _open(results)
    assert not run_folder(results, RUN_ID).exists()
    assert (results / "runs").is_dir()  # only the run's own folder is taken back
