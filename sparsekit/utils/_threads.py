"""Calls of compiled kernels that run OpenMP threads, how many they run, and BLAS's threads
around them."""
import os
import threading
from contextlib import contextmanager

from joblib import Parallel, effective_n_jobs, parallel_config
from threadpoolctl import ThreadpoolController


def openmp_call(n_threads, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, whose compiled kernels run ``n_threads`` OpenMP threads:
    called here on one thread, else from a short-lived thread of its own (its result, or
    its exception, comes back here).

    GNU OpenMP keeps the threads of a parallel region in a pool owned by the thread that
    started it, and a process forked later inherits the pool's records but not its threads:
    the child's next parallel region waits for them forever. Started from a thread that
    ends with the call, the pool ends with it, and a forked child of the process can still
    fit (multiprocessing's default start method on Linux).

    A KeyboardInterrupt ends the wait at once; the thread runs on until ``fn`` returns or
    sees that it was abandoned (:func:`abandoned_on_error`).
    """
    if n_threads <= 1:
        return fn(*args, **kwargs)
    outcome = {}

    def run():
        try:
            outcome["result"] = fn(*args, **kwargs)
        except BaseException as error:   # re-raised in the calling thread
            outcome["error"] = error
    thread = threading.Thread(target=run, name="sparsekit-openmp")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


class Abandoned(Exception):
    """Raised by work running in another thread, at a check of its
    :func:`abandoned_on_error` event, once its caller has stopped waiting for it."""


@contextmanager
def abandoned_on_error():
    """``with abandoned_on_error() as abandoned:`` a :class:`threading.Event`, set when the
    body raises (a KeyboardInterrupt in the calling thread, or an error another thread's
    job sent back), for the work that the body started in other threads (joblib's,
    :func:`openmp_call`'s) to check between its steps and end there by :class:`Abandoned`:
    a thread cannot be stopped from outside, and one that does not check runs on to its
    own end, at full speed, after its caller has given up on it (an interrupted fit in a
    notebook would hold the CPUs for as long as it had left)."""
    abandoned = threading.Event()
    try:
        yield abandoned
    except BaseException:
        abandoned.set()
        raise


def stop_if_abandoned(abandoned):
    """A solver's callback (SciPy's ``callback(xk)`` form) that ends the solve by
    :class:`Abandoned` once the :func:`abandoned_on_error` event ``abandoned`` is set (None
    without one): the check of solves that run in other threads."""
    if abandoned is None:
        return None

    def check(x):
        if abandoned.is_set():
            raise Abandoned
    return check


def cpu_threads(n_jobs):
    """Threads for ``n_jobs`` in joblib's convention (None: 1 unless in a
    :func:`joblib.parallel_backend` context; -1 every CPU), at most the CPUs: OpenMP
    starts as many threads as it is asked for (``n_jobs=10**6`` once hung a fit)."""
    return int(max(1, min(effective_n_jobs(n_jobs), os.cpu_count() or 1)))


def jobs_at_once(n_jobs, n_jobs_total, threads=False):
    """How many of ``n_jobs_total`` jobs joblib's ``Parallel(n_jobs)`` runs at a time: in
    the joblib backend in effect, or (``threads``) in threads of this process, as
    ``Parallel(backend="threading")`` does whatever backend is in effect (joblib's dask
    backend counts its cluster's threads for any n_jobs)."""
    if threads:
        with parallel_config(backend="threading"):
            return min(effective_n_jobs(n_jobs), n_jobs_total)
    return min(effective_n_jobs(n_jobs), n_jobs_total)


def as_they_end(jobs, n_jobs):
    """``Parallel(n_jobs, return_as="generator")(jobs)``: the results, in the jobs' order,
    each as soon as it and those before it have ended; all at the end under a joblib
    backend that cannot hand them back sooner (multiprocessing's)."""
    try:
        parallel = Parallel(n_jobs=n_jobs, return_as="generator")
    except ValueError:         # "Backend ... does not support return_as=generator"
        parallel = Parallel(n_jobs=n_jobs)
    return parallel(jobs)


def threads_for(n_jobs, n_tasks):
    """OpenMP threads for ``n_tasks`` independent parts of a kernel's work: ``n_jobs`` in
    joblib's convention (None and 1 one thread, -1 every CPU), at most the CPUs and the
    parts."""
    if n_jobs in (None, 1):
        return 1
    return int(max(1, min(cpu_threads(n_jobs), n_tasks)))


_blas = {"controller": None, "limiter": None}


@contextmanager
def one_blas_thread():
    """Inside, when entered from the main thread: the BLAS libraries of the process run one
    thread each (threadpoolctl), in every thread, until it leaves and their former counts
    come back; a nested entry leaves that to the outer one. From another thread it does
    nothing: OpenBLAS (0.3.31) ignores a count set from a thread other than the main one
    once the main one has set one, so such a thread could neither set the count nor give
    it back. The controller is made at the first entry (3-4 ms, a small fit's whole time;
    a later entry costs ~0.03 ms): a BLAS library loaded after it is not held."""
    if threading.current_thread() is not threading.main_thread() or _blas["limiter"]:
        yield
        return
    if _blas["controller"] is None:
        _blas["controller"] = ThreadpoolController()
    _blas["limiter"] = _blas["controller"].limit(limits=1, user_api="blas")
    try:
        yield
    finally:
        _blas["limiter"].restore_original_limits()
        _blas["limiter"] = None
