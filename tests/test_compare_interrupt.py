"""Ctrl-C in sparsekit-compare: an interrupt that a peer's compiled code swallowed is raised
after its fit, one that comes during a compiled call run by ``interruptible`` at once;
Ctrl-C's handling is left alone where it is not Python's own."""
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

from sparsekit.benchmarks import _timing
from sparsekit.benchmarks._interrupt import interruptible, noticing_interrupts


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


def _diverging_fit():
    raise RuntimeError("Encountered NaN.")      # as fastText's train_supervised does


def test_interruptible_returns_the_calls_result_and_raises_its_errors():
    assert interruptible(lambda a, *, b: (a, b), 1, b=2) == (1, 2)
    with pytest.raises(RuntimeError, match="Encountered NaN"):
        interruptible(_diverging_fit)
    ran_in = []
    worker = threading.Thread(target=lambda: interruptible(
        lambda: ran_in.append(threading.current_thread())))
    worker.start()
    worker.join()
    assert ran_in == [worker]     # outside the main thread: in the caller's thread


def _long_compiled_call(seconds):
    """A compiled call that runs on while Ctrl-C is pressed (as LIBLINEAR's train, in C
    without the GIL): its thread blocks SIGINT for the time, so that the signal cuts no
    sleep short, and Python's handler runs after it."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        time.sleep(seconds)
    finally:       # Python's handler may raise before the next line, the mask restored
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    return "model"


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signals")
def test_ctrl_c_during_a_compiled_call_ends_the_wait_at_once(python_sigint):
    """Ctrl-C during a compiled call that releases the GIL waited for the call's end:
    Python runs its handler in the main thread, between its own instructions. Run by
    ``interruptible``, the wait ends at once; the call's thread blocks SIGINT, so that the
    process's Ctrl-C goes to the waiting thread."""
    def ctrl_c_during(call, seconds):
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.perf_counter()
        with noticing_interrupts():
            with pytest.raises(KeyboardInterrupt):
                call(_long_compiled_call, seconds)
        return time.perf_counter() - start

    assert ctrl_c_during(lambda f, *args: f(*args), 1.0) >= 1.0       # called directly
    assert ctrl_c_during(interruptible, 3.0) < 1.0


_LONG_FASTTEXT_FIT = """
import os, signal, sys, threading
import fasttext
from sparsekit.benchmarks import compare
from sparsekit.benchmarks._interrupt import interruptible

def tables(argv):                 # the command, at a long fastText fit: Ctrl-C
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    interruptible(fasttext.train_supervised, input=sys.argv[1], epoch=10**7, thread=1,
                  verbose=0)

compare._main = tables
signal.signal(signal.SIGINT, signal.default_int_handler)   # not a background job's SIG_IGN
compare.{entry}()
"""


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signals")
def test_ctrl_c_during_fasttexts_fit_ends_the_command_with_status_130(tmp_path):
    """fastText's training thread, left running at Ctrl-C, aborted the interpreter's
    shutdown now and then ("terminate called without an active exception", status 134 for
    130: 2 of 20 runs of this script here). The command's process now ends without that
    shutdown, its output flushed. Eight commands, each in a process of its own."""
    import subprocess

    pytest.importorskip("fasttext")
    data = tmp_path / "train.txt"
    data.write_text("".join(f"__label__{i % 5} w{i % 37} w{i % 11}\n" for i in range(500)))
    script = tmp_path / "command.py"
    script.write_text(_LONG_FASTTEXT_FIT.format(entry="console_main"))
    for _ in range(8):
        done = subprocess.run([sys.executable, str(script), str(data)], capture_output=True,
                              text=True, timeout=120)
        assert (done.returncode, done.stderr) == (130, "\nsparsekit-compare: interrupted\n")
