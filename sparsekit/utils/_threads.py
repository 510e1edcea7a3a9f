"""Calls of compiled kernels that run OpenMP threads, and how many they run."""
import os
import threading

from joblib import effective_n_jobs


def openmp_call(n_threads, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, whose compiled kernels run ``n_threads`` OpenMP threads:
    called here on one thread, else from a short-lived thread of its own (its result, or
    its exception, comes back here).

    GNU OpenMP keeps the threads of a parallel region in a pool owned by the thread that
    started it, and a process forked later inherits the pool's records but not its threads:
    the child's next parallel region waits for them forever. Started from a thread that
    ends with the call, the pool ends with it, and a forked child of the process can still
    fit (multiprocessing's default start method on Linux).
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


def threads_for(n_jobs, n_tasks):
    """OpenMP threads for ``n_tasks`` independent parts of a kernel's work: ``n_jobs`` in
    joblib's convention (None and 1 one thread, -1 every CPU), at most the CPUs and the
    parts."""
    if n_jobs in (None, 1):
        return 1
    return int(max(1, min(effective_n_jobs(n_jobs), os.cpu_count() or 1, n_tasks)))
