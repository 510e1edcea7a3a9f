"""Ctrl-C in sparsekit-compare: an interrupt that a peer's compiled code swallowed is raised
after its fit; Ctrl-C's handling is left alone where it is not Python's own."""
import signal
import sys
import threading

import numpy as np
import pytest

from sparsekit.benchmarks import _timing
from sparsekit.benchmarks._interrupt import noticing_interrupts


def _swallowing_fit():
    """A fit during which Ctrl-C is pressed and its compiled code drops the exception (as
    skglm's numba code clears it and LIBLINEAR's ctypes callback reports and drops it)."""
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pass
    return "model"


def test_a_ctrl_c_that_a_fit_swallowed_is_raised_after_the_fit(python_sigint):
    with noticing_interrupts():
        with pytest.raises(KeyboardInterrupt):
            _timing.timed(_swallowing_fit)
    with noticing_interrupts():
        with pytest.raises(KeyboardInterrupt):
            _timing.measure("peer", _swallowing_fit, 3, lambda model: ("", ""))
    with noticing_interrupts():
        with pytest.raises(KeyboardInterrupt):
            _timing.class_by_class(lambda k: (_swallowing_fit(), np.zeros(2))[1], 5, 1e9, [])
    # the block restores Python's handler and forgets the interrupt
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert _timing.timed(_swallowing_fit)[1] == "model"
    with noticing_interrupts():
        assert _timing.timed(lambda: "model")[1] == "model"


def test_a_ctrl_c_that_a_callback_dropped_is_not_reported(python_sigint):
    """Python reports an exception that a C library's callback cannot pass on through
    sys.unraisablehook ("Exception ignored ..."); for Ctrl-C the command's own line says it,
    other reports are left to the previous hook."""
    reported = []
    previous = sys.unraisablehook
    sys.unraisablehook = reported.append
    try:
        with noticing_interrupts():
            for error in (KeyboardInterrupt(), ValueError("a callback's bug")):
                sys.unraisablehook(type("Unraisable", (), {"exc_type": type(error),
                                                           "exc_value": error})())
        assert [r.exc_type for r in reported] == [ValueError]
    finally:
        sys.unraisablehook = previous


def test_ctrl_c_ignored_or_another_thread_is_left_as_it_is(python_sigint):
    """A shell's background job ignores Ctrl-C: the command must not start heeding it; and
    a handler can only be set from the main thread."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with noticing_interrupts():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    seen = []

    def in_a_thread():
        with noticing_interrupts():
            seen.append(signal.getsignal(signal.SIGINT))
    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]
