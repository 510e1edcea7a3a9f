"""What an ℓ1 logistic fit's warnings say when its solves did not converge: which
problems (classes, or values of C), and what in X to fix (rows in other units, entries
at a scale where the loss is nearly piecewise linear) before raising max_iter."""
import warnings
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sparsekit.gpu.datafits import is_device_matrix
from sparsekit.linear_model._dask_input import DaskRows
from sparsekit.linear_model._device_input import device_row_sq_norms, device_scale_sums
from sparsekit.linear_model._l1_solve import EXCESS_WARN, GAP_CONFIRM, GAP_WARN
from sparsekit.optimize._oba import STALL_ITERATIONS
from sparsekit.optimize._result import STOPPED_BY_CALLBACK
from sparsekit.utils._rows import row_sq_norms, weighted_scale_sums


def which_problems(names, which, shown=5, noun="classes"):
    """The problems ``which`` of ``names`` in a message: their name when there is one
    ("class 'a'"), else how many of them (of ``noun``) and the first ``shown``."""
    if len(names) == 1:
        return names[0]
    labels = [names[k].removeprefix("class ") for k in which]
    listed = ", ".join(labels[:shown])
    if len(labels) > shown:
        listed += f" and {len(labels) - shown} more"
    return f"{len(which)} of {len(names)} {noun} ({listed})"


def upto(which, value, spec):
    """``value`` formatted, as a maximum ("up to ...") over several problems."""
    return f"{'up to ' if len(which) > 1 else ''}{value:{spec}}"


#: what a stalled solve (status 2) means, and what to do
STALLED = ("tol is below the rounding error of the gradient at this X's scale (a column of "
           "large entries, such as zip codes); standardize the columns (StandardScaler) or "
           "raise tol")


#: a row of X longer than this many times its median row (in Euclidean norm) is in other
#: units than the rest: the benchmark sets' rows span at most 7.3 times (delicious)
ROW_NORM_CAP = 1000.0


def long_rows(X, sample_weight=None, shown=3):
    """Advice for a solve of NumPy, SciPy sparse or device ``X``, or of the partitions of a
    :class:`DaskRows` (their rows' lengths computed where they are; ``sample_weight``
    futures of theirs, None: X's sample weights), that did not converge when rows of X (of
    nonzero ``sample_weight``) are longer than ROW_NORM_CAP times its median row with an
    entry ("X[7] is 4.2e+08 times as long as X's median row: ..."), or None when none is."""
    if isinstance(X, DaskRows):
        norms = np.sqrt(X.row_sq_norms(sample_weight))
    else:
        norms = np.sqrt(device_row_sq_norms(X) if is_device_matrix(X) else row_sq_norms(X))
        if sample_weight is not None:
            norms[np.asarray(sample_weight) == 0] = 0
    stored = norms[norms > 0]
    if not stored.size:
        return None
    median = float(np.median(stored))
    found = np.flatnonzero(norms > ROW_NORM_CAP * median)
    if not found.size:
        return None
    ratio = float(norms[found].max()) / median
    if found.size == 1:
        which, check = f"X[{found[0]}] is {ratio:.1e}", "that row"
    else:
        listed = [f"X[{i}]" for i in found[:shown]]
        if found.size > shown:
            listed.append(f"{found.size - shown} more rows")
        which = f"{', '.join(listed[:-1])} and {listed[-1]} are up to {ratio:.1e}"
        check = "those rows"
    return (f"{which} times as long as X's median row: the logistic loss of so long a row "
            "is nearly piecewise linear, where OBA's Newton steps make little headway; "
            f"check {check}, or scale X's rows (sklearn.preprocessing.Normalizer)")


#: a solve that does not converge on an X whose nonzero entries have a root mean square
#: (weighted by the rows' weights) above this is advised to scale X: the benchmark sets'
#: are at most 1 (one-hot, TF-IDF, pixels / 255), scikit-learn's digits' (0-16) 11, MNIST's
#: raw pixels' 2.0e2
ENTRY_RMS_CAP = 10.0


def large_entries(X, sample_weight=None, scale=1.0):
    """Advice for a solve of ``X`` (as :func:`long_rows` takes it; the user's X times
    ``scale``) that did not converge when the nonzero entries of the user's X have a root
    mean square above ENTRY_RMS_CAP (weighted by ``sample_weight``), or None."""
    if isinstance(X, DaskRows):
        squares, counts = X.scale_sums(sample_weight)[:2]
    elif is_device_matrix(X):
        weights = (np.ones(X.shape[0]) if sample_weight is None
                   else np.asarray(sample_weight, dtype=np.float64))
        top = weights.max(initial=0.0)
        squares, counts = device_scale_sums(X, weights / top if top > 0 else weights)[:2]
    else:
        squares, counts = weighted_scale_sums(X, sample_weight)[:2]
    squares = squares / scale**2
    if not counts > 0 or not squares > ENTRY_RMS_CAP ** 2 * counts:
        return None
    return (f"X's nonzero entries have a root mean square of {np.sqrt(squares / counts):.1e}: "
            "at that scale the logistic loss is nearly piecewise linear, where OBA's Newton "
            "steps make little headway; scale X's columns (sklearn.preprocessing."
            "StandardScaler, MaxAbsScaler for a sparse X; pixels / 255)")


class SolveAdvice(NamedTuple):
    """What the warning of a solve of X that did not converge advises in place of the
    usual: :func:`long_rows`' advice (at max_iter or stalled), :func:`large_entries`' (at
    max_iter; a stall beside a column of large entries gets :data:`STALLED`); None where X
    gives none."""
    rows: str | None
    entries: str | None


def solve_advice(X, sample_weight=None, scale=1.0):
    """:class:`SolveAdvice` for a solve of ``X`` (as :func:`long_rows` takes it; the user's
    X times ``scale``)."""
    return SolveAdvice(long_rows(X, sample_weight), large_entries(X, sample_weight, scale))


def max_iter_advice(found):
    """What a warning of a solve stopped at max_iter advises: the rows' or else the
    entries' advice of ``found`` (:class:`SolveAdvice`, or None), and a larger max_iter."""
    said = None if found is None else found.rows or found.entries
    if said is None:
        return "increase max_iter"
    return (f"{said}, or increase max_iter several times over (such fits take hundreds to "
            "thousands of iterations, some never converge)")


def stall_advice(found):
    """What a warning of a stalled solve advises: the rows' advice of ``found``
    (:class:`SolveAdvice`, or None), else :data:`STALLED`."""
    return STALLED if found is None or found.rows is None else found.rows


def warn_not_converged(names, which, results, tol, noun="classes", advice=None):
    """ConvergenceWarnings for the solves ``which`` (of ``results``, named ``names``) that
    stopped at max_iter, and for those that stalled (status 2): how many
    (:func:`which_problems`) and their largest optimality; ``advice()``, when given, is
    :func:`solve_advice` of the solves' X, whose advice then replaces the usual."""
    stalled = [k for k in which if results[k].status == 2]
    found = None if advice is None else advice()
    for part in ([k for k in which if k not in stalled], stalled):
        if not part:
            continue
        nit = max(results[k].nit for k in part)
        opt = upto(part, max(results[k].optimality for k in part), ".2e")
        problems = which_problems(names, part, noun=noun)
        if part is stalled:
            warnings.warn(f"OBA stopped for {problems} at iteration {nit}: in its last "
                          f"{STALL_ITERATIONS} iterations neither its objective nor its "
                          f"optimality ({opt} > tol {tol:.2e}) improved: "
                          f"{stall_advice(found)}; more iterations will not help.",
                          ConvergenceWarning)
        else:
            warnings.warn(f"OBA did not converge for {problems} in {nit} iterations "
                          f"(optimality {opt} > tol {tol:.2e}); {max_iter_advice(found)}.",
                          ConvergenceWarning)


def warn_fit_results(names, results, gaps, tol, max_iter, advice=None):
    """A fit's ConvergenceWarnings, one per kind of failure of its solves (``results``,
    named ``names``, their duality gaps ``gaps``, at ``tol`` and ``max_iter``), naming the
    problems it concerns (a one-vs-rest fit of many classes would otherwise print a
    warning per class); ``advice`` as :func:`warn_not_converged` takes it."""
    unconfirmed = [k for k, r in enumerate(results) if np.isnan(r.tol_excess)]
    unconverged = [k for k, r in enumerate(results)   # a requested stop is no failure
                   if not r.success and r.status != STOPPED_BY_CALLBACK
                   and k not in unconfirmed]
    flat = [k for k, r in enumerate(results)
            if r.success and r.tol_excess > EXCESS_WARN and gaps[k] > GAP_WARN]
    if unconverged:
        warn_not_converged(names, unconverged, results, tol, advice=advice)
    if unconfirmed:
        gap = upto(unconfirmed, max(gaps[k] for k in unconfirmed), ".1%")
        floor = results[unconfirmed[0]].tol_floor     # n and C: the same for each
        warnings.warn(f"OBA met tol {tol:.2e} for {which_problems(names, unconfirmed)}, "
                      f"but its duality gap, an upper bound on how far F lies above its "
                      f"minimum, is {gap} of F, and the iterations that followed brought "
                      f"neither the gap below {GAP_CONFIRM:.0%} nor the optimality below "
                      f"{floor:.2e} within max_iter={max_iter} iterations to confirm "
                      "the fit: rescale X (e.g. StandardScaler) or raise max_iter.",
                      ConvergenceWarning)
    if flat:
        excess = [results[k].tol_excess for k in flat]
        excess = (f"{excess[0]:.2%}" if len(flat) == 1
                  else f"{min(excess):.2%} to {max(excess):.2%}")
        floor = results[flat[0]].tol_floor            # n and C: the same for each
        gap = upto(flat, max(gaps[k] for k in flat), ".1%")
        warnings.warn(f"OBA met tol {tol:.2e} for {which_problems(names, flat)} with F at "
                      f"least {excess} above its minimum: the solve went on to an "
                      f"optimality of {floor:.2e}, which lowered F that much (the model "
                      f"returned), and the duality gap "
                      f"still bounds F's excess by {gap}: F is very flat here (large C, "
                      "(nearly) separable classes or tiny feature scales); lower tol or "
                      "rescale X.", ConvergenceWarning)
