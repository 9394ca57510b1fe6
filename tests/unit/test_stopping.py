"""The stop-signal latch: the first signal stops, none is lost, held sections are not cut."""

import os
import signal
import sys

import pytest

from backupbench import stopping


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


def test_a_stop_a_finalizer_swallowed_is_delivered_again_without_a_traceback(latch):
    """The garbage collector may run a `__del__` just when the signal comes: Python swallows the
    KeyboardInterrupt raised in it and prints a traceback. The stop comes again once it returns."""
    stopping.install()   # over the hook pytest sets for the test's call
    printed = []
    stopping._default_unraisable = printed.append   # what Python would have printed

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(100_000))   # the handler runs here, inside the finalizer

    reached = []
    with pytest.raises(KeyboardInterrupt):
        Finalized()   # garbage at once
        reached.append("after the finalizer")
        signal.sigtimedwait([], 0.5)
    assert reached == ["after the finalizer"] and printed == []
    assert stopping.requested() == signal.SIGTERM


def test_other_unraisable_exceptions_are_printed_as_python_prints_them(latch):
    stopping.install()
    printed = []
    stopping._default_unraisable = printed.append

    class Broken:
        def __del__(self):
            raise ValueError("a finalizer's own bug")

    Broken()
    assert [p.exc_type for p in printed] == [ValueError]


def test_a_swallowed_interrupt_is_still_known(latch):
    try:
        os.kill(os.getpid(), signal.SIGHUP)
    except KeyboardInterrupt:
        pass  # as a cleanup loop might
    assert stopping.requested() == signal.SIGHUP
    stopping.acknowledge()
    with stopping.held():
        pass  # acknowledged: nothing raised again


def _entry_importing(monkeypatch, error: Exception) -> int:
    """Run the entry point with the CLI module failing to import with `error`; the exit code."""
    import sys
    import types

    from backupbench.cli import entry

    class Broken(types.ModuleType):
        def __getattr__(self, name):
            raise error

    monkeypatch.setitem(sys.modules, "backupbench.cli.app", Broken("backupbench.cli.app"))
    monkeypatch.setattr(sys, "argv", ["backupbench"])
    monkeypatch.delenv("BACKUPBENCH_DEBUG", raising=False)
    left = []
    monkeypatch.setattr(entry, "_leave", left.append)
    entry.main()
    return left[0]


def test_a_stop_an_import_turned_into_another_error_still_exits_130(latch, monkeypatch, capsys):
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0.5)
    except KeyboardInterrupt:
        pass  # swallowed, as pydantic_core does while it builds a validator
    error = RuntimeError('SchemaError: Error building "literal" validator: KeyboardInterrupt')
    assert _entry_importing(monkeypatch, error) == stopping.EXIT_CODE
    assert capsys.readouterr().err == "backupbench: interrupted\n"


def test_an_import_failing_without_a_stop_is_one_line_and_exit_70(latch, monkeypatch, capsys):
    assert _entry_importing(monkeypatch, ImportError("cannot import name 'x'")) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error while starting" in err and "Traceback" not in err


def _command_importing(monkeypatch, error: Exception, stop_first: bool) -> int:
    """`backupbench run --help` in-process with run's module failing to import with `error`
    (after a SIGTERM the import swallowed, as pydantic_core does while it builds a validator,
    when `stop_first`); the exit code."""
    from backupbench.cli import app as cli_app, lazy_group

    def failing_import(name):
        if stop_first:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                signal.sigtimedwait([], 0.5)
            except KeyboardInterrupt:
                pass
        raise error

    monkeypatch.setattr(lazy_group, "import_module", failing_import)
    monkeypatch.delitem(cli_app.app.commands, "run", raising=False)  # imported by an earlier test
    monkeypatch.delenv("BACKUPBENCH_DEBUG", raising=False)
    return cli_app.main(["run", "--help"])


def test_a_stop_while_a_command_is_imported_exits_130(latch, monkeypatch, capsys):
    from pydantic_core import SchemaError

    error = SchemaError('Error building "literal" validator: KeyboardInterrupt')
    assert _command_importing(monkeypatch, error, stop_first=True) == stopping.EXIT_CODE
    assert capsys.readouterr().err == "backupbench: interrupted\n"


def test_a_command_failing_to_import_without_a_stop_is_one_line_and_exit_70(latch, monkeypatch, capsys):
    assert _command_importing(monkeypatch, ImportError("cannot import name 'x'"), stop_first=False) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "Traceback" not in err


def test_another_error_after_a_stop_is_still_shown(latch, monkeypatch, capsys):
    error = OSError(28, "No space left on device")
    assert _command_importing(monkeypatch, error, stop_first=True) == stopping.EXIT_CODE
    err = capsys.readouterr().err
    assert "internal error: OSError(28" in err and "interrupted (SIGTERM)" in err


def test_a_signal_before_the_entry_is_armed_is_raised_when_it_is(latch):
    stopping.install(armed=False)
    os.kill(os.getpid(), signal.SIGINT)
    signal.sigtimedwait([], 0.2)  # handled, recorded, not raised: no try is there to catch it yet
    assert stopping.requested() == signal.SIGINT
    with pytest.raises(KeyboardInterrupt):
        stopping.arm()


def test_the_entry_point_needs_no_module_python_had_not_loaded_before_its_handlers():
    """Everything imported before `stopping.install` runs is time a Ctrl-C gets Python's own
    traceback: only the package, its cli package, entry and stopping may be new (signal alone
    pulls in enum: several ms; threading more)."""
    import subprocess
    import sys

    probe = ("import sys; before = set(sys.modules); import backupbench.cli.entry; "
             "print(' '.join(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert set(done.stdout.split()) <= {"backupbench", "backupbench.cli", "backupbench.cli.entry",
                                        "backupbench.stopping", "__future__"}, done.stdout
