"""An interrupt of the main thread at a solver's first iteration in another thread (a
KeyboardInterrupt in a notebook; here a signal whose handler raises), and the iterations
the solvers make after it."""
import signal
import threading
import time

import pytest


class Interrupted(Exception):
    """What the signal's handler raises in the main thread."""


class FirstIteration:
    """``slowed(check)``: a solver callback (SciPy's ``callback(xk)``) that records the
    iteration's thread, interrupts the main thread at the first iteration, sleeps 20 ms
    (the solves outlast the test's waits) and calls ``check`` (the callback it replaces,
    or None); ``interrupt(fit)`` runs ``fit()``, which must end by the interrupt, then
    waits, and returns the iterations made in all and those made by then."""

    def __init__(self):
        if threading.current_thread() is not threading.main_thread():
            pytest.skip("signal handlers are set in the main thread only")
        self.iterations = []

    def slowed(self, check):
        def callback(x):
            self.iterations.append(threading.current_thread().name)
            if len(self.iterations) == 1:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
            time.sleep(0.02)
            if check is not None:
                check(x)
        return callback

    def interrupt(self, fit, wait=0.2):
        """(iterations after ``wait`` seconds, after ``wait`` more); the main thread made
        none of them."""
        def interrupted(signum, frame):
            raise Interrupted
        previous = signal.signal(signal.SIGUSR1, interrupted)
        try:
            with pytest.raises(Interrupted):
                fit()
            time.sleep(wait)
            ended = len(self.iterations)
            time.sleep(wait)
        finally:
            signal.signal(signal.SIGUSR1, previous)
        assert threading.main_thread().name not in self.iterations
        return len(self.iterations), ended
