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
