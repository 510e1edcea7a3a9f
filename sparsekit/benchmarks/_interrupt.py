"""Ctrl-C in ``sparsekit-compare``, also when a peer's compiled code swallows it.

Python raises ``KeyboardInterrupt`` in whatever Python code runs next, and during a peer's
fit that is often a callback of its compiled code, which cannot pass the exception on:
LIBLINEAR's Python module prints through a ctypes callback (even with ``-q``; Python
reports the exception as "Exception ignored" and drops it) and skglm's numba code calls
back into Python for its constants (the exception is cleared). The interrupt was lost and
the command ran on to its end. :func:`noticing_interrupts` records every Ctrl-C, and
:func:`raise_if_interrupted`, called after each fit, raises it again.

A compiled fit that releases the GIL and has no time limit (LIBLINEAR's ``train`` through
ctypes, fastText's ``train_supervised``) would still hold the interrupt until it returns,
minutes on a large data set: :func:`interruptible` runs it in a thread of its own while the
caller waits, so that Ctrl-C ends the wait at once. That thread blocks SIGINT, so no
callback of the fit sees the interrupt; the paragraph above is for the calls left in the
main thread (LIBLINEAR's ``predict``, skglm's fits).
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


#: for each call that Ctrl-C interrupted, the event its thread sets when the call returns
_abandoned = []


def abandoned_calls():
    """Whether a call that Ctrl-C interrupted still runs: compiled code that may not
    survive the interpreter's shutdown (fastText's training thread aborts the process
    there, "terminate called without an active exception")."""
    return not all(finished.is_set() for finished in _abandoned)


def interruptible(call, *args, **kwargs):
    """``call(*args, **kwargs)``, run in a daemon thread while this one waits: Ctrl-C raises
    ``KeyboardInterrupt`` here at once, where a compiled call that releases the GIL would
    hold it until the call returns (Python runs signal handlers in the main thread, between
    its own instructions); the thread blocks SIGINT, so that the system delivers Ctrl-C to
    the waiting one. The interrupted call runs on, abandoned, until the process ends; its
    result or exception is the caller's otherwise. Outside the main thread, which no signal
    interrupts, ``call`` runs in the caller's thread."""
    if threading.current_thread() is not threading.main_thread():
        return call(*args, **kwargs)
    outcome, finished = {}, threading.Event()

    def run():
        if hasattr(signal, "pthread_sigmask"):   # Ctrl-C goes to the waiting thread
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            outcome["result"] = call(*args, **kwargs)
        except BaseException as error:     # the caller's to see, as if called directly
            outcome["error"] = error
        finally:
            finished.set()

    threading.Thread(target=run, name="sparsekit-compare fit", daemon=True).start()
    try:
        # a lock's wait, which Python's signal handler interrupts (not Thread.join: on
        # Python 3.11 an interrupted join marks the thread as ended while it runs)
        finished.wait()
    except BaseException:
        _abandoned.append(finished)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
