"""The advice of L1LogisticOBA's convergence warnings: rows of X in other units, entries
at a scale where the logistic loss is nearly piecewise linear, stalled solves."""
import warnings

import numpy as np
import scipy.sparse as sp

from sparsekit.linear_model._l1_advice import long_rows
from test_l1_logistic import _large_entries


def test_long_rows_are_found_by_their_norm_against_the_median_row():
    X = np.ones((20, 3))
    assert long_rows(X) is None
    X[4] *= 2000.0
    assert long_rows(X).startswith("X[4] is 2.0e+03 times as long as X's median row: ")
    assert long_rows(sp.csc_matrix(X)) == long_rows(X) == long_rows(sp.csr_matrix(X))
    assert "check that row, or scale X's rows (sklearn.preprocessing.Normalizer)" in long_rows(X)
    weights = np.ones(20)
    weights[4] = 0.0                                    # a row of weight 0 is not solved
    assert long_rows(X, weights) is None
    X[[1, 2, 6, 7]] *= 1e5
    X[[0, 3, 5]] = 0.0                                  # empty rows do not set the median
    assert long_rows(X).startswith("X[1], X[2], X[4] and 2 more rows are up to 1.0e+05 "
                                   "times as long as X's median row: ")
    assert "check those rows" in long_rows(X)
    assert long_rows(np.zeros((3, 2))) is None


def test_large_entries_are_found_by_their_weighted_root_mean_square():
    from sparsekit.linear_model._l1_advice import (ENTRY_RMS_CAP, STALLED, large_entries,
                                                     max_iter_advice, solve_advice,
                                                     stall_advice)
    X, y = _large_entries()
    rms = np.sqrt(np.sum(X ** 2) / np.count_nonzero(X))
    for given in (X, X.astype(np.float32), sp.csr_matrix(X), sp.csc_matrix(X)):
        assert large_entries(given).startswith(f"X's nonzero entries have a root mean square "
                                               f"of {rms:.1e}: at that scale ")
        assert large_entries(given).endswith("scale X's columns (sklearn.preprocessing."
                                             "StandardScaler, MaxAbsScaler for a sparse X; "
                                             "pixels / 255)")
    assert large_entries(X / 300.0) is None and large_entries(np.zeros((3, 2))) is None
    assert large_entries(X * (0.99 * ENTRY_RMS_CAP / rms)) is None
    assert large_entries(X * (1.01 * ENTRY_RMS_CAP / rms)) is not None
    small = X / 300.0
    small[:5] = X[:5] * 1e3 / 300.0                      # large rows, of weight 0: not counted
    weights = np.ones(len(y))
    weights[:5] = 0.0
    assert large_entries(small, weights) is None and large_entries(small) is not None
    found = solve_advice(X)                # a stall beside large entries: tol's advice
    assert found == (None, large_entries(X)) and stall_advice(found) == STALLED
    assert max_iter_advice(found).startswith("X's nonzero entries have a root mean square")
    X[7] *= 1e4                                           # a long row's advice comes first
    assert max_iter_advice(solve_advice(X)).startswith("X[7] is ")


def test_a_stalled_solve_on_long_rows_names_them_in_place_of_the_tol_advice():
    """The two kinds of failure, one solve each, with and without long rows: the rows'
    advice replaces the stall's (tol below the rounding of a column of large entries) and
    precedes max_iter's."""
    from scipy.optimize import OptimizeResult
    from sparsekit.linear_model._l1_advice import solve_advice, warn_not_converged
    results = [OptimizeResult(status=1, nit=500, optimality=0.5),
               OptimizeResult(status=2, nit=60, optimality=0.25)]
    X = np.ones((20, 2))
    X[3] *= 1e6

    def messages(rows):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn_not_converged(["C=1", "C=2"], [0, 1], results, 1e-8, noun="values of C",
                               advice=rows)
        return [str(w.message) for w in caught]
    at_max_iter, stalled = messages(lambda: solve_advice(X))
    named = "X[3] is 1.0e+06 times as long as X's median row: "
    assert at_max_iter.startswith("OBA did not converge for 1 of 2 values of C (C=1) in 500 ")
    assert ("1.00e-08); " + named) in at_max_iter
    assert at_max_iter.endswith("(sklearn.preprocessing.Normalizer), or increase max_iter "
                                "several times over (such fits take hundreds to thousands "
                                "of iterations, some never converge).")
    assert stalled.startswith("OBA stopped for 1 of 2 values of C (C=2) at iteration 60: ")
    assert ("improved: " + named) in stalled and "zip codes" not in stalled
    assert stalled.endswith("(sklearn.preprocessing.Normalizer); more iterations will not "
                            "help.")
    for rows in (None, lambda: solve_advice(np.ones((20, 2)))):
        at_max_iter, stalled = messages(rows)
        assert at_max_iter.endswith("1.00e-08); increase max_iter.")
        assert stalled.endswith("StandardScaler) or raise tol; more iterations will not help.")
