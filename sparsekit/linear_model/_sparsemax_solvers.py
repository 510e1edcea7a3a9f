"""SparsemaxClassifier's solvers: the one ``solver="auto"`` runs, whether a solver's arrays
fit in this machine's memory, the solve itself, and what to change when SDCA does not
converge."""
import contextlib
import contextvars

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.utils import check_random_state

from ..optimize import minimize_newton_cg, minimize_nqn
from ..optimize._sdca import minimize_sdca
from ..utils._rows import entry_scales
from ..utils._validation import physical_memory

#: ``solver="auto"`` takes SDCA for sparse X when the dual's condition number, the mean squared
#: row norm over ``alpha * n_samples``, is at most this: SDCA's epochs grow with it, while
#: L-BFGS's iterations grow with the primal's conditioning and each costs about an epoch or,
#: with many classes and features, more (the benchmark notes, "SparsemaxClassifier: which
#: solver")
AUTO_SDCA_MAX_CONDITION = 20.0

#: how many float64 arrays of the solver variable's size each solver's fit holds at its
#: peak (coef_ included), rounded up from a measurement on models far larger than X (the
#: benchmark notes, "SparsemaxClassifier: the memory of each solver"): L-BFGS-B's history
#: of 10 pairs and its work arrays, NQN's, the Newton-CG's vectors, SDCA's weights, iterate
#: and gradient
SOLVER_ARRAYS = {"sdca": 5, "newton-cg": 14, "lbfgs": 41, "nqn": 50}

#: SciPy's L-BFGS-B held about ten more arrays before release 1.12
OLD_LBFGSB = tuple(map(int, scipy.__version__.split(".")[:2])) < (1, 12)
if OLD_LBFGSB:
    SOLVER_ARRAYS["lbfgs"] = 51


def auto_solver(sdca_rows, alpha, bounded=False, device="cpu", intercept_scale=0.0):
    """The solver of ``solver="auto"``: exact dual coordinate ascent for sparse X, where
    each row update touches only the row's nonzeros, when the dual is well conditioned
    (mean ‖xᵢ‖² / (``alpha`` n) ≤ ``AUTO_SDCA_MAX_CONDITION``: TF-IDF rows of norm 1 down
    to ``alpha`` = 1/(20 n)); L-BFGS for dense X and wherever SDCA does not apply or would
    crawl (a small ``alpha`` for the rows' scale, bounds, a GPU). ``sdca_rows()`` returns X
    as SDCA walks it (:meth:`~sparsekit.linear_model._sparsemax_problem.Problem.sdca_rows`:
    a dense X of mostly zeros as its CSR copy), called only where SDCA may apply. The rows'
    norms count SDCA's constant feature of a free intercept, ``intercept_scale`` (0: none):
    on an X with few stored entries it alone sets the condition."""
    if bounded or device != "cpu" or not alpha > 0:
        return "lbfgs"
    X = sdca_rows()
    if not sp.issparse(X):
        return "lbfgs"
    data = X.data.astype(np.float64, copy=False)
    mean_sq = float(data @ data) / max(X.shape[0], 1) + intercept_scale ** 2
    return ("sdca" if sdca_condition(mean_sq, alpha, X.shape[0]) <= AUTO_SDCA_MAX_CONDITION
            else "lbfgs")


def sdca_condition(mean_sq, alpha, n_samples):
    """The conditioning of SDCA's dual that sets its epochs: the rows' mean squared norm
    ``mean_sq`` (SDCA's constant feature of a free intercept counted) over
    ``alpha * n_samples``."""
    return mean_sq / (alpha * max(n_samples, 1))


#: how many fits share this machine's memory at a time: SparsemaxClassifierCV's fold
#: paths running in parallel (processes, or threads on dask) set it for their fits
_FITS_AT_ONCE = contextvars.ContextVar("fits_at_once", default=1)


@contextlib.contextmanager
def fits_at_once(n):
    """Within it, :func:`solver_within_memory` gives each fit 1/n of the memory."""
    token = _FITS_AT_ONCE.set(n)
    try:
        yield
    finally:
        _FITS_AT_ONCE.reset(token)


def solver_within_memory(solver, size, auto, alternatives):
    """``solver``, or for ``solver="auto"`` Newton-CG (if among ``alternatives``, the solvers
    this fit may run instead) in place of a solver whose arrays of ``size`` float64 numbers
    (:data:`SOLVER_ARRAYS`) would not fit in this machine's memory (its share of it, where
    :func:`fits_at_once` says that others run beside it); a ValueError, before the fit
    starts, where neither fits (the process would otherwise be killed for memory, or swap,
    during the fit), naming the alternatives that fit."""
    memory = physical_memory()
    at_once = _FITS_AT_ONCE.get()

    def need(name):
        return SOLVER_ARRAYS[name] * 8.0 * size * at_once

    if memory is None or need(solver) <= memory:
        return solver
    if auto and "newton-cg" in alternatives and need("newton-cg") <= memory:
        return "newton-cg"
    remedy = ["fewer n_jobs"] if at_once > 1 else []
    remedy += [f"solver={name!r} (about {SOLVER_ARRAYS[name]} such arrays)"
               for name in alternatives if name != solver and need(name) <= memory]
    where = (f"in the {at_once} fits that run at a time (n_jobs: the folds' paths in "
             "parallel)" if at_once > 1 else "during the fit")
    raise ValueError(
        f"SparsemaxClassifier with solver={solver!r} would hold about "
        f"{need(solver) / 2**30:.1f} GiB {where}, about {SOLVER_ARRAYS[solver]} arrays "
        f"of its {8.0 * size / 2**20:,.0f} MiB of weights{' each' if at_once > 1 else ''}, "
        f"more than this machine's {memory / 2**30:.1f} GiB: "
        + (f"use {' or '.join(remedy)}, or " if remedy else "")
        + "hash the features to fewer columns (HashingVectorizer's n_features)")


def _minimize_lbfgsb(value_grad, theta0, **kwargs):
    """:func:`scipy.optimize.minimize` with L-BFGS-B on ``value_grad`` (``jac=True``).
    SciPy before 1.14 leaves the objective in a reference cycle of its own once it returns:
    what ``value_grad`` holds (the datafit, its buffers, a converted copy of X) would stay
    allocated until Python's cyclic garbage collector next ran, so SciPy is handed a
    function that lets go of it on return."""
    held = [value_grad]
    try:
        return minimize(lambda theta: held[0](theta), theta0, method="L-BFGS-B", jac=True,
                        **kwargs)
    finally:
        held.clear()


def solve(solver, datafit, theta0, bounds, tol, max_iter, random_state, callback=None):
    """Run ``solver`` on ``datafit`` from ``theta0`` (``bounds``: a ``Bounds`` on the
    solver variable, or None) to ``tol`` within ``max_iter`` iterations: an
    ``OptimizeResult``. ``random_state`` seeds SDCA's order of the rows."""
    if solver in ("newton-cg", "sdca") and bounds is not None:
        raise ValueError(f"solver={solver!r} does not support positive or bounds; "
                         "use solver='lbfgs' or 'nqn'.")
    if solver == "sdca":
        rng = np.random.default_rng(check_random_state(random_state).randint(2**31))
        return minimize_sdca(datafit, theta0, tol=tol, max_iter=max_iter,
                             rng=rng, callback=callback)
    if solver == "newton-cg":
        fun, hessp_at = datafit.newton_operators()
        return minimize_newton_cg(fun, theta0, hessp_at, tol=tol,
                                  max_iter=max_iter, callback=callback)
    options = {"maxiter": max_iter, "gtol": tol,
               "ftol": 64 * np.finfo(float).eps, "maxls": 50}
    if solver == "nqn":
        # tol alone decides convergence, as for lbfgs: no stall stop
        res = minimize_nqn(datafit.value_grad, theta0, jac=True, bounds=bounds,
                           callback=callback, options={**options, "stall_tol": 0.0})
        if res.status == 4 and datafit.dtype == np.float32:
            # no decrease of an objective computed in float32: its rounding floor, which
            # L-BFGS-B reports as a success ("relative reduction of f <= factr*epsmch")
            res.success = True
        return res
    return _minimize_lbfgsb(datafit.value_grad, theta0, bounds=bounds,
                            callback=callback, options=options)


def sdca_hint(sums, n_samples, intercept_scale, alpha, column_name):
    """What to do when SDCA does not converge at ``alpha``: :func:`units_hint` where X's
    columns are in different units (``column_name(j)`` names column j); else L-BFGS or a
    larger alpha where the dual's :func:`sdca_condition` (from X's weighted sums, with the
    constant feature ``intercept_scale`` of a free intercept) exceeds :func:`auto_solver`'s
    bound; else None."""
    hint = units_hint(sums, column_name)
    if hint is not None:
        return hint
    condition = sdca_condition(sums[0] / sums[2] + intercept_scale ** 2, alpha,
                               n_samples)
    if not condition > AUTO_SDCA_MAX_CONDITION:
        return None
    return (f"the rows' mean squared norm is {condition:.3g} times alpha_ * n_samples "
            f"(alpha_ = {alpha:.3g}, {n_samples} rows), where SDCA's epochs move "
            f"the weights by little (solver='auto' runs it up to "
            f"{AUTO_SDCA_MAX_CONDITION:g} times): use solver='lbfgs' or 'auto', or a "
            "larger alpha")

def units_hint(sums, column_name):
    """What to do when SDCA does not converge on X whose columns are in different units
    (None when they are not): from X's weighted sums
    (:func:`~sparsekit.linear_model._sparsemax_problem.scale_sums`); ``column_name(j)``
    names column j."""
    scales = entry_scales(*np.split(np.asarray(sums[3:]), 2))
    if scales is None:
        return None
    j = int(np.argmax(scales))
    return (f"the nonzero entries of column {column_name(j)} have a root mean square "
            f"{scales[j]:.3g} times the median column's: SDCA's steps follow the rows' "
            "norms, which such a column sets, and more epochs barely move the other "
            "columns' weights; "
            "standardize the columns (StandardScaler, or MaxAbsScaler for sparse X) or "
            "use solver='lbfgs', which solves with such a column rescaled")
