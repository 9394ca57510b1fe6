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
REDELIVERY_DELAY_S = 0.05   # a swallowed stop sent again: long enough for a finalizer to return


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
_default_unraisable = None   # Python's own hook, which install() wraps (sys is imported there)


def _on_signal(signum: int, _frame: object) -> None:
    if _state.received is None:
        _state.received = signum
    if _state.armed and not _state.raised and _state.holds == 0:
        _state.raised = True
        raise KeyboardInterrupt


def _unraisable(unraisable: object) -> None:
    """A stop's KeyboardInterrupt raised while Python ran a finalizer (a `__del__` the garbage
    collector called in the middle of the run) is swallowed there, and Python prints it as
    "Exception ignored in ..." with a traceback, and the run went on to its next `check()` (CI
    saw 11.8 s). The stop is sent again instead, silently, from another thread a moment later:
    a signal sent now would be handled here, inside the finalizer still (one that lands in a
    finalizer again comes back here again)."""
    if getattr(unraisable, "exc_type", None) is KeyboardInterrupt and _state.received is not None:
        import threading

        _state.raised = False
        _state.holds += 1   # the thread's start waits on a lock: no stop is raised in here
        try:
            threading.Thread(target=_send_again, args=(_state.received,), daemon=True).start()
        finally:
            _state.holds -= 1
        return
    if _default_unraisable is not None:
        _default_unraisable(unraisable)


def _send_again(signum: int) -> None:
    import os
    import time

    time.sleep(REDELIVERY_DELAY_S)
    os.kill(os.getpid(), signum)


def install(armed: bool = True) -> None:
    """Route SIGINT, SIGTERM and SIGHUP here (the CLI calls this first thing). armed=False:
    signals are recorded and raised only by `arm()`."""
    global _default_unraisable
    import sys

    _state.armed = armed
    for sig in WATCHED:
        _signal.signal(sig, _on_signal)
    if sys.unraisablehook is not _unraisable:
        _default_unraisable = sys.unraisablehook
        sys.unraisablehook = _unraisable
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
