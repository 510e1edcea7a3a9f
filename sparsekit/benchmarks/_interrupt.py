"""Ctrl-C in ``sparsekit-compare``, also when a peer's compiled code swallows it.

Python raises ``KeyboardInterrupt`` in whatever Python code runs next, and during a peer's
fit that is often a callback of its compiled code, which cannot pass the exception on:
LIBLINEAR's Python module prints through a ctypes callback (even with ``-q``; Python
reports the exception as "Exception ignored" and drops it) and skglm's numba code calls
back into Python for its constants (the exception is cleared). The interrupt was lost and
the command ran on to its end. :func:`noticing_interrupts` records every Ctrl-C, and
:func:`raise_if_interrupted`, called after each fit, raises it again.
"""
import contextlib
import signal
import sys
import threading

_interrupted = threading.Event()


def _record_and_raise(signum, frame):
    _interrupted.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def noticing_interrupts():
    """Within the block, Ctrl-C raises ``KeyboardInterrupt`` as Python's own handler does,
    and is recorded for :func:`raise_if_interrupted`; the "Exception ignored" report of one
    that a callback dropped is not printed (other such reports are). Where Python's handler
    is not the one in force (Ctrl-C ignored, as in a shell's background job) or outside the
    main thread, SIGINT's handling is left as it is."""
    ours = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    previous_hook = sys.unraisablehook

    def hook(unraisable):
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            previous_hook(unraisable)

    _interrupted.clear()
    if ours:
        signal.signal(signal.SIGINT, _record_and_raise)
        sys.unraisablehook = hook
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            sys.unraisablehook = previous_hook
        _interrupted.clear()


def raise_if_interrupted():
    """Raise ``KeyboardInterrupt`` if Ctrl-C was pressed since the block began: called
    after a fit, which swallowed it (or stopped on it and returned)."""
    if _interrupted.is_set():
        raise KeyboardInterrupt
