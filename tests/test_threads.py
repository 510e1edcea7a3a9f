"""Kernels on OpenMP threads called from a thread of their own, BLAS held to one thread
(``utils._threads``)."""
import os
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from joblib import delayed, parallel_backend, parallel_config

from sparsekit.utils._threads import (Abandoned, abandoned_on_error, as_they_end, cpu_threads,
                                     jobs_at_once, one_blas_thread, openmp_call,
                                     stop_if_abandoned, threads_for)


def _caller(*args, **kwargs):
    return threading.get_ident(), args, kwargs


def test_one_thread_runs_here_more_from_a_thread_of_their_own():
    here = threading.get_ident()
    assert openmp_call(1, _caller, 1, a=2) == (here, (1,), {"a": 2})
    ident, args, kwargs = openmp_call(2, _caller, 1, a=2)
    assert ident != here and args == (1,) and kwargs == {"a": 2}


def test_an_error_of_the_call_is_raised_in_the_caller():
    def fails():
        raise MemoryError("kernel")
    with pytest.raises(MemoryError, match="kernel"):
        openmp_call(2, fails)


def test_work_left_in_another_thread_sees_that_its_caller_gave_up():
    """The event is set when the body raises, whatever it raises, and only then: a thread
    that the body started and that checks it ends at its next check."""
    with abandoned_on_error() as abandoned:
        pass
    assert not abandoned.is_set()
    started = threading.Event()

    def work():
        started.set()
        while True:
            if abandoned.is_set():
                raise Abandoned
            abandoned.wait(0.001)
    for error in (KeyboardInterrupt, ValueError):
        outcome = {}

        def run():
            try:
                work()
            except Abandoned as ended:
                outcome["ended"] = ended
        with pytest.raises(error):
            with abandoned_on_error() as abandoned:
                thread = threading.Thread(target=run)
                thread.start()
                started.wait()
                raise error
        thread.join(timeout=10)
        assert not thread.is_alive() and isinstance(outcome["ended"], Abandoned)
        started.clear()


def test_a_solvers_check_ends_it_once_the_event_is_set():
    """The solver callback of :func:`stop_if_abandoned` passes until the event is set and
    then raises Abandoned; none without an event."""
    assert stop_if_abandoned(None) is None
    abandoned = threading.Event()
    check = stop_if_abandoned(abandoned)
    check(np.zeros(3))
    abandoned.set()
    with pytest.raises(Abandoned):
        check(np.zeros(3))


@pytest.mark.parametrize("backend", ["loky", "threading", "multiprocessing"])
def test_results_in_order_under_every_joblib_backend(backend):
    """As they end where joblib's backend can (a generator), all at the end where it cannot
    (multiprocessing's refuses ``return_as="generator"``)."""
    with parallel_config(backend=backend):
        results = as_they_end((delayed(pow)(k, 2) for k in range(6)), 2)
        assert list(results) == [0, 1, 4, 9, 16, 25]


def test_threads_follow_joblibs_n_jobs_within_the_cpus_and_the_parts():
    cpus = os.cpu_count()
    assert threads_for(None, 10**6) == threads_for(1, 10**6) == 1
    assert threads_for(-1, 10**6) == cpus
    assert threads_for(2, 10**6) == min(2, cpus)
    assert threads_for(64, 10**6) == cpus
    assert threads_for(-1, 1) == threads_for(-1, 0) == 1


def test_cpu_threads_are_joblibs_n_jobs_within_the_cpus():
    cpus = os.cpu_count()
    assert cpu_threads(None) == cpu_threads(1) == cpu_threads(-10**6) == 1
    assert cpu_threads(-1) == cpu_threads(10**6) == cpus
    with parallel_backend("threading", n_jobs=2):
        assert cpu_threads(None) == min(2, cpus)


def test_jobs_at_once_are_those_the_backend_runs_at_most_the_jobs():
    """As many as joblib's Parallel runs: in the backend in effect, or in threads whatever
    the backend in effect (that of a context, which may count other workers)."""
    cpus = os.cpu_count()
    assert jobs_at_once(None, 5) == jobs_at_once(1, 5) == 1
    assert jobs_at_once(-1, 3) == min(3, cpus)
    assert jobs_at_once(64, 3) == jobs_at_once(64, 3, threads=True) == 3
    with parallel_backend("loky", n_jobs=2):
        assert jobs_at_once(None, 5) == jobs_at_once(None, 5, threads=True) == 2


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_a_multinomial_fit_and_its_scores_with_n_jobs_beyond_the_cpus(layout):
    """n_jobs=10**6 asked OpenMP for a million threads (the fit hung); now the CPUs'
    threads, and the model of n_jobs=1."""
    import scipy.sparse as sp

    from sparsekit import L1LogisticOBA
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 6))
    y = np.digitize(X[:, 1], [-0.5, 0.5])
    X = sp.csr_matrix(X) if layout == "csr" else X
    kw = dict(multiclass="multinomial", tol=1e-10)
    many = L1LogisticOBA(n_jobs=10**6, **kw).fit(X, y)
    np.testing.assert_allclose(many.coef_, L1LogisticOBA(**kw).fit(X, y).coef_, atol=1e-9)
    np.testing.assert_allclose(many.decision_function(X),
                               L1LogisticOBA(**kw).fit(X, y).decision_function(X), atol=1e-9)


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    """BLAS set to two threads for the test (skipped where it cannot run two)."""
    np.ones(2) @ np.ones(2)   # NumPy's BLAS loaded
    with threadpool_limits(2, user_api="blas"):
        if set(_blas_threads()) != {2}:
            pytest.skip("BLAS does not run two threads here")
        yield


def test_blas_runs_one_thread_inside_and_its_count_comes_back(two_blas_threads):
    with one_blas_thread():
        assert set(_blas_threads()) == {1}
        with one_blas_thread():           # nested: the outer entry restores
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}
    assert set(_blas_threads()) == {2}
    with pytest.raises(ZeroDivisionError):
        with one_blas_thread():
            1 / 0
    assert set(_blas_threads()) == {2}


def test_from_another_thread_it_leaves_blas_as_the_main_thread_set_it(two_blas_threads):
    # OpenBLAS ignores a count set from another thread once the main thread has set one:
    # such a thread could set 1 and fail to give the count back
    def seen_in_a_worker():
        seen = []

        def worker():
            with one_blas_thread():
                seen.append(set(_blas_threads()))
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        return seen[0]

    assert seen_in_a_worker() == {2}
    with one_blas_thread():       # the main thread's count holds in the worker
        assert seen_in_a_worker() == {1}
    assert set(_blas_threads()) == {2}
