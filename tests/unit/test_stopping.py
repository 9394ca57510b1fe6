"""The stop-signal latch: the first signal stops, none is lost, held sections are not cut."""

import os
import signal

import pytest

from backupbench import stopping


@pytest.fixture
def latch():
    previous = {sig: signal.getsignal(sig) for sig in stopping.WATCHED}
    stopping.reset()
    stopping.install()
    yield
    stopping.reset()
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def test_the_first_signal_raises_once_and_is_remembered(latch):
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0.5)  # let the handler run
    assert stopping.requested() == signal.SIGTERM
    os.kill(os.getpid(), signal.SIGINT)  # later ones are recorded, not raised: cleanups run on
    assert stopping.requested() == signal.SIGTERM


def test_a_held_section_finishes_then_the_signal_acts(latch):
    done = []
    with pytest.raises(KeyboardInterrupt):
        with stopping.held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the teardown finished")
    assert done == ["the teardown finished"]


def test_a_swallowed_interrupt_is_still_known(latch):
    try:
        os.kill(os.getpid(), signal.SIGHUP)
    except KeyboardInterrupt:
        pass  # as a cleanup loop might
    assert stopping.requested() == signal.SIGHUP
    stopping.acknowledge()
    with stopping.held():
        pass  # acknowledged: nothing raised again


def _entry_with_app_main(monkeypatch, app_main) -> int:
    """Run the entry point with a stand-in for the CLI module; the exit code it leaves with."""
    import sys
    import types

    from backupbench.cli import entry

    fake = types.ModuleType("backupbench.cli.app")
    fake.main = app_main
    monkeypatch.setitem(sys.modules, "backupbench.cli.app", fake)
    left = []
    monkeypatch.setattr(entry, "_leave", left.append)
    entry.main()
    return left[0]


def test_a_stop_an_import_turned_into_another_error_still_exits_130(latch, monkeypatch, capsys):
    def app_main():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0.5)
        except KeyboardInterrupt as exc:
            # What pydantic_core does when the interrupt lands while it builds a validator.
            raise RuntimeError('SchemaError: Error building "literal" validator: KeyboardInterrupt') from exc

    assert _entry_with_app_main(monkeypatch, app_main) == stopping.EXIT_CODE
    assert capsys.readouterr().err == "backupbench: interrupted\n"


def test_an_import_failing_without_a_stop_is_one_line_and_exit_70(latch, monkeypatch, capsys):
    def app_main():
        raise ImportError("cannot import name 'x'")

    assert _entry_with_app_main(monkeypatch, app_main) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error while starting" in err and "Traceback" not in err
