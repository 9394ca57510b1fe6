"""Stop signals (SIGINT, SIGTERM, SIGHUP): remembered always, acted on once, never lost.

A stop request is latched the moment it arrives. The first one raises KeyboardInterrupt in
the main thread (unless signals are held, see `held()`), so a run stops where it is;
later ones are only recorded, so they cannot cut a cleanup short. Whatever swallows that
KeyboardInterrupt on the way out, `requested()` still says a stop was asked for: the run is
stored `interrupted` and the command exits 130, not 0.

`held()` marks a section that must not be cut (a teardown, closing a run): a signal that
arrives inside it is recorded, and raised when the section ends.
"""

from __future__ import annotations

# _signal, not signal: the entry point installs the handlers before anything else it imports,
# and `signal` pulls in enum (several ms at start, a window in which Python's own
# KeyboardInterrupt traceback is what a Ctrl-C gets). threading is imported where it is used.
import _signal

WATCHED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
EXIT_CODE = 130


class _State:
    def __init__(self) -> None:
        self.received: int | None = None  # the first stop signal
        self.raised = False               # KeyboardInterrupt was raised for it
        self.holds = 0
        self.installed = False
        # Unarmed, a signal is only recorded: the entry point installs the handlers before it
        # is inside the try that turns KeyboardInterrupt into one line and exit 130.
        self.armed = True


_state = _State()


def _on_signal(signum: int, _frame: object) -> None:
    if _state.received is None:
        _state.received = signum
    if _state.armed and not _state.raised and _state.holds == 0:
        _state.raised = True
        raise KeyboardInterrupt


def install(armed: bool = True) -> None:
    """Route SIGINT, SIGTERM and SIGHUP here (the CLI calls this first thing). armed=False:
    signals are recorded and raised only by `arm()`."""
    _state.armed = armed
    for sig in WATCHED:
        _signal.signal(sig, _on_signal)
    _state.installed = True


def arm() -> None:
    """From here on the first signal raises KeyboardInterrupt; one recorded before is raised now."""
    _state.armed = True
    if _state.holds == 0:
        check()


def requested() -> int | None:
    """The stop signal received so far, if any."""
    return _state.received


def signal_name(signum: int) -> str:
    import signal

    return signal.Signals(signum).name


def check() -> None:
    """Raise KeyboardInterrupt if a stop was requested and not yet acted on."""
    if _state.received is not None and not _state.raised:
        _state.raised = True
        raise KeyboardInterrupt


class held:
    """`with held():` signals arriving inside are recorded, and acted on when the section ends."""

    def __enter__(self) -> None:
        import threading

        self._counted = threading.current_thread() is threading.main_thread()
        if self._counted:
            _state.holds += 1

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._counted:
            return
        _state.holds -= 1
        if _state.holds == 0 and exc is None:
            check()


def acknowledge() -> None:
    """The stop request has been acted on: a later signal changes nothing any more."""
    _state.raised = True


def reset() -> None:
    """Forget any stop request (tests run several commands in one process)."""
    _state.received = None
    _state.raised = False
    _state.holds = 0
