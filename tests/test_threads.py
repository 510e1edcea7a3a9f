"""Kernels on OpenMP threads called from a thread of their own (``utils._threads``)."""
import threading

import pytest

import os

from sparsekit.utils._threads import openmp_call, threads_for


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


def test_threads_follow_joblibs_n_jobs_within_the_cpus_and_the_parts():
    cpus = os.cpu_count()
    assert threads_for(None, 10**6) == threads_for(1, 10**6) == 1
    assert threads_for(-1, 10**6) == cpus
    assert threads_for(2, 10**6) == min(2, cpus)
    assert threads_for(64, 10**6) == cpus
    assert threads_for(-1, 1) == threads_for(-1, 0) == 1
