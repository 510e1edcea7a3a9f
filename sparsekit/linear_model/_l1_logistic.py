"""ℓ1-regularized logistic regression solved by OBA (Keskar 2017, thesis chapter 2).

Objective, exactly LIBLINEAR's ``-s 6`` (Yuan et al. 2012):

    F(w, b) = ‖w‖₁ + C Σᵢ sᵢ log(1 + exp(−yᵢ (wᵀxᵢ + b))),   yᵢ ∈ {−1, +1},

with the intercept b free and unpenalized. The solver minimizes F / (C n), i.e. the mean
logistic loss plus μ‖w‖₁ with μ = 1/(C n), by :func:`sparsekit.optimize.minimize_oba`.
With ``l1_ratio`` r < 1 the penalty is scikit-learn's elastic net r‖w‖₁ + (1 − r)/2 ‖w‖²
(its ridge part joins the smooth datafit); with ``multiclass="multinomial"`` the loss is the
softmax negative log-likelihood of all classes at once.
"""
import numbers
import warnings
from functools import partial
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from scipy.special import expit, log_expit
from sklearn.callback import with_callbacks
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin, SparseCoefMixin
from sklearn.utils._param_validation import (Interval, StrOptions,
                                            validate_parameter_constraints)
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from sparsekit.losses._softmax import _log_softmax
from sparsekit.optimize import minimize_oba
from sparsekit.optimize._oba import STALL_ITERATIONS
from sparsekit.optimize._result import STOPPED_BY_CALLBACK
from sparsekit.linear_model._dask_input import DaskRows, block_predictions, is_dask_collection
from sparsekit.gpu._cupy import on_current_device, require_cupy
from sparsekit.utils._scores import linear_scores
from sparsekit.linear_model._device_input import (check_device_X, device_row_sq_norms,
                                                  device_scale_sums, device_scores, fit_device,
                                                  host_targets, to_device)
from sparsekit.gpu.datafits import DeviceLogistic, DeviceMultinomial, is_device_matrix
from sparsekit.losses._duality import relative_duality_gap
from sparsekit.losses._logistic_datafit import Logistic
from sparsekit.losses._multinomial_datafit import Multinomial, split_parameters
from sparsekit.losses._ridge_datafit import Ridge
from sparsekit.linear_model._base import (SparsekitClassifier, check_labels,
                                          unchanged_on_error)
from sparsekit.utils._centering import (center_stride, column_moments, column_shifts,
                                         far_shifts)
from sparsekit.utils._columns import UsedColumns
from sparsekit.utils._rows import mostly_zeros, row_sq_norms, sparse_copy, weighted_scale_sums
from sparsekit.utils._threads import (Abandoned, abandoned_on_error, cpu_threads, jobs_at_once,
                                      one_blas_thread, openmp_call, stop_if_abandoned)
from sparsekit.utils._validation import (check_dense_size, check_entry_magnitude,
                                         check_two_classes, physical_memory, validate_input)

# OBA's options as this estimator sets them; the measurements behind each choice are in
# the package's benchmark notes (doc/benchmarks.md, "Why the defaults are what they are").
#: τ doubles after iterations whose corrective cycle dropped at most half of the newly freed
#: variables (the thesis: only after none): fewer iterations when w* has many nonzeros.
TAU_GROWTH = 0.5
#: τ quadruples after iterations without any correction: a dense w* is reached sooner.
TAU_BOOST = 2
#: the thesis' first free set, 1% of the columns, capped: wide data with a sparse w* would
#: otherwise free thousands of variables that the next iterations remove again.
TAU0_MAX = 128
#: the Hessian regularization shrinks with the optimality measure, so that it does not
#: dominate the flat directions of weakly regularized, nearly separable problems.
REG_DECAY = True
#: on a formed subspace Hessian products are cheap: solving the Newton system more exactly
#: saves outer iterations.
CG_RTOL_EXPLICIT = 0.01
#: A fit stops at the first iterate that meets ``tol`` with a duality gap at most this
#: share of F, or whose measure is at most ``tol`` / 100 (and at most a tenth of the penalty
#: weight μ = 1/(C Σ sᵢ): features scaled by 1e-10 meet tol 1e-8 at w = 0, and tol 1e-10
#: too). ``tol`` is absolute in the scaled problem, and a gap above it may be right
#: (separable data, C = 1e6: tol 1e-8 is met 6.1% above the minimum, gap 29%; the first
#: iterate of gap below 1% is 3.4e-6 above it, below 5% 5.8e-4) or loose (where ``tol``
#: exceeds μ: scikit-learn's consistency-path problem at tol 1e-5, gaps of 7-73% of F, F
#: within 2e-10 of its minimum). Both tests pass at any larger ``tol`` where they pass at
#: a smaller one, and the iterates do not depend on ``tol``: a smaller ``tol`` never
#: returns a model of larger F.
GAP_CONFIRM = 0.01
#: The fit warns when F fell by more than EXCESS_WARN of F after ``tol`` was met (a proven
#: excess of that iterate) and the gap of the model it returns is still above GAP_WARN
#: (it stopped where the measure reached ``tol`` / 100 or μ / 10).
EXCESS_WARN = 1e-3
GAP_WARN = 0.05
#: CG iterations per Newton step of the multinomial problem (OBA's default 1000 elsewhere):
#: its free-set Hessian couples classes and features, and long CG runs refine directions
#: the next iterations change anyway (doc/benchmarks.md, l1_multinomial: Hessian products
#: on Mulan scene 11,259 -> 4,409, MNIST at 100 C_min 58 s -> 36 s for tol 1e-4)
MULTINOMIAL_CG_MAXITER = 20
#: float64 arrays of the weights' size, and of rows x classes, that the multinomial fit
#: holds at its peak from its first iteration on while its free sets stay small: the
#: point, its gradient and a trial point's, the trial point (and the ISTA point where a
#: step slides back to it), the penalty weights and the solver's sets; the scores,
#: probabilities, residuals and curvature weights (doc/benchmarks.md, "L1LogisticOBA: the
#: memory of the multinomial fit": 11.1-12.8 of the weights at C = 1, 12.9-13.8 on
#: 53.6 MiB models at C = 10 and 1000). More where the free set holds many weights (the
#: subspace step's vectors have its size) and, on small models, the solver's work areas of
#: bounded size (the class blocks): the check refuses the fits that cannot fit, not every
#: fit that will not.
MULTINOMIAL_ARRAYS = {"weights": 14, "rows": 6}
#: CG iterations per Newton step on a formed subspace Hessian (the datafits form it when
#: that is cheaper): its products cost O(|F|²), so CG runs to CG_RTOL_EXPLICIT.
CG_MAXITER_EXPLICIT = 1000


def _fit_binary(datafit, C, tol, max_iter, w0, verbose, l1_ratio=1.0, callback=None):
    """One OBA solve of a binary problem; returns (w, b, OptimizeResult)."""
    res = _checked_solve(datafit, C, tol, max_iter, w0, verbose, l1_ratio,
                         callback=callback)
    coef, intercept = _binary_model(datafit, res.x)
    return coef[0], float(intercept[0]), res


def _binary_model(datafit, x):
    """(coef (1, D), intercept (1,)) of the binary parameters x = (w, b), on the columns of
    X as given where the datafit's X was centered."""
    coef = x[None, :datafit.n_features]
    intercept = np.array([x[-1] if datafit.fit_intercept else 0.0])
    offsets = getattr(datafit, "offsets", None)
    return coef, intercept if offsets is None else intercept - coef @ offsets


def _fit_multinomial(datafit, C, tol, max_iter, w0, verbose, l1_ratio=1.0, callback=None):
    """One OBA solve of the multinomial problem; returns (coef (K, D), intercept (K,),
    OptimizeResult)."""
    res = _checked_solve(datafit, C, tol, max_iter, w0, verbose, l1_ratio,
                         cg_maxiter=MULTINOMIAL_CG_MAXITER, callback=callback)
    return (*_multinomial_model(datafit, res.x), res)


def multinomial_within_memory(n_rows, n_columns, n_classes, fit_intercept, kept=0,
                              solves=1):
    """A ValueError, before the fit starts, where the arrays of ``solves`` multinomial
    solves at a time (:data:`MULTINOMIAL_ARRAYS` each), with ``kept`` solutions that the
    caller holds beside them (a path's, a cross-validation's), would not fit in this
    machine's memory: the process would otherwise be killed for memory, or swap, during
    the fit."""
    memory = physical_memory()
    weights = 8.0 * (n_columns + fit_intercept) * n_classes
    arrays = solves * MULTINOMIAL_ARRAYS["weights"] + kept
    rows = solves * MULTINOMIAL_ARRAYS["rows"]
    need = arrays * weights + rows * 8.0 * n_rows * n_classes
    if memory is not None and need > memory:
        at_once = f" ({solves} solves at a time: fewer n_jobs run fewer)" if solves > 1 else ""
        held = (f", {kept:,} of them the solutions kept (fewer C values keep fewer)," if kept
                else "")
        raise ValueError(
            f"the multinomial fit{at_once} would hold at least {need / 2**30:.1f} GiB, "
            f"about {arrays:,} arrays of its {weights / 2**20:,.0f} MiB of weights "
            f"({n_columns:,} columns x {n_classes} classes){held} and {rows} of "
            f"{n_rows:,} rows x {n_classes} classes, more than this machine's "
            f"{memory / 2**30:.1f} GiB: use multiclass='ovr', whose problems hold arrays of one "
            "class's weights (sparse_coef=True stores coef_'s nonzeros only), or hash the "
            "features to fewer columns")


def _multinomial_model(datafit, x):
    """(coef (K, D), intercept (K,)) of the multinomial parameters x = (W.ravel(), b)."""
    n_classes = datafit.penalty_weights.size // (datafit.n_features + datafit.fit_intercept)
    W, b = split_parameters(x, datafit.n_features, n_classes, datafit.fit_intercept)
    offsets = getattr(datafit, "offsets", None)
    if offsets is not None:             # the intercepts of the columns of X as given
        b = b - offsets @ W
    return W.T.copy(), b - b.mean()   # a constant added to b changes no probability


def _binary_block(pos, fit_intercept, X, codes, sample_weight, X_csr=None, offsets=None,
                  n_threads=1):
    """The binary datafit of class index ``pos`` against the rest (on the data, or on one
    row partition of it); ``X_csr`` a CSR copy of X shared by several problems, ``offsets``
    those :func:`_layouts` subtracted from X's columns, ``n_threads`` those of its
    kernels (a sparse X's)."""
    datafit = Logistic(X, np.where(codes == pos, 1.0, -1.0), sample_weight=sample_weight,
                       fit_intercept=fit_intercept, X_csr=X_csr, n_threads=n_threads)
    datafit.offsets = offsets
    return datafit


def _multinomial_block(n_classes, fit_intercept, X, codes, sample_weight, n_threads=1,
                       offsets=None, X_csr=None):
    """The multinomial datafit (on the data, or on one row partition of it); ``offsets``
    those :func:`_layouts` subtracted from X's columns, ``X_csr`` its CSR layout or None."""
    datafit = Multinomial(X, codes, n_classes, sample_weight=sample_weight,
                          n_threads=n_threads, fit_intercept=fit_intercept, X_csr=X_csr)
    datafit.offsets = offsets
    return datafit


def device_layout(X, sample_weight, fit_intercept):
    """(device X in float64, the device datafits' precision: one copy for every problem,
    and the offsets subtracted from its columns or None): with a free intercept, the dense
    columns far from 0 are centered as on the CPU
    (:mod:`~sparsekit.utils._centering`, on the device); a sparse X is solved as given."""
    X64 = X if X.dtype == np.float64 else X.astype(np.float64)
    if not fit_intercept or hasattr(X, "tocsr"):
        return X64, None
    cp = require_cupy()
    weights = cp.asarray(np.asarray(sample_weight, dtype=np.float64))
    shifts = far_shifts(column_moments(X64, weights, center_stride(X.shape[0])), X.dtype)
    if shifts is None:
        return X64, None
    if X64 is X:
        return X64 - cp.asarray(shifts), shifts
    X64 -= cp.asarray(shifts)                     # a copy already: device memory is scarce
    return X64, shifts


def _device_block(n_classes, fit_intercept, X, codes, sample_weight, shared, pos, *,
                  offsets=None):
    """The device datafit of class index ``pos`` against the rest, or (``pos`` None) the
    multinomial one, on float64 device X; ``shared`` holds what the one-vs-rest datafits of
    the same X share, ``offsets`` those :func:`device_layout` subtracted from X's
    columns."""
    if pos is None:
        datafit = DeviceMultinomial(X, codes, n_classes, sample_weight=sample_weight,
                                    fit_intercept=fit_intercept)
    else:
        datafit = DeviceLogistic(X, np.where(codes == pos, 1.0, -1.0),
                                 sample_weight=sample_weight, fit_intercept=fit_intercept,
                                 shared=shared)
    datafit.offsets = offsets
    return datafit


def _problems(names, which, shown=5, noun="classes"):
    """The problems ``which`` of ``names`` in a message: their name when there is one
    ("class 'a'"), else how many of them (of ``noun``) and the first ``shown``."""
    if len(names) == 1:
        return names[0]
    labels = [names[k].removeprefix("class ") for k in which]
    listed = ", ".join(labels[:shown])
    if len(labels) > shown:
        listed += f" and {len(labels) - shown} more"
    return f"{len(which)} of {len(names)} {noun} ({listed})"


def _upto(which, value, spec):
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


def large_entries(X, sample_weight=None):
    """Advice for a solve of ``X`` (as :func:`long_rows` takes it) that did not converge
    when the nonzero entries of X have a root mean square above ENTRY_RMS_CAP (weighted by
    ``sample_weight``), or None."""
    if isinstance(X, DaskRows):
        squares, counts = X.scale_sums(sample_weight)[:2]
    elif is_device_matrix(X):
        weights = (np.ones(X.shape[0]) if sample_weight is None
                   else np.asarray(sample_weight, dtype=np.float64))
        top = weights.max(initial=0.0)
        squares, counts = device_scale_sums(X, weights / top if top > 0 else weights)[:2]
    else:
        squares, counts = weighted_scale_sums(X, sample_weight)[:2]
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


def solve_advice(X, sample_weight=None):
    """:class:`SolveAdvice` for a solve of ``X`` (as :func:`long_rows` takes it)."""
    return SolveAdvice(long_rows(X, sample_weight), large_entries(X, sample_weight))


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


def _warn_not_converged(names, which, results, tol, noun="classes", advice=None):
    """ConvergenceWarnings for the solves ``which`` (of ``results``, named ``names``) that
    stopped at max_iter, and for those that stalled (status 2): how many
    (:func:`_problems`) and their largest optimality; ``advice()``, when given, is
    :func:`solve_advice` of the solves' X, whose advice then replaces the usual."""
    stalled = [k for k in which if results[k].status == 2]
    found = None if advice is None else advice()
    for part in ([k for k in which if k not in stalled], stalled):
        if not part:
            continue
        nit = max(results[k].nit for k in part)
        opt = _upto(part, max(results[k].optimality for k in part), ".2e")
        problems = _problems(names, part, noun=noun)
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


class _GapCheck:
    """``confirm`` of :func:`~sparsekit.optimize.minimize_oba` for a fit: an iterate that
    meets ``tol`` is confirmed when the relative duality gap at it is at most GAP_CONFIRM
    or its measure at most ``floor``. Keeps F at the first iterate that met ``tol``
    (``first``) and the gap last computed (``gap``, at iteration ``nit``)."""

    def __init__(self, datafit, C, l1_ratio, floor):
        self.datafit, self.C, self.l1_ratio, self.floor = datafit, C, l1_ratio, floor
        self.first = self.nit = None
        self.gap = np.nan

    def __call__(self, state):
        if self.first is None:
            self.first = state.fun
        if state.optimality <= self.floor:
            return True
        self.nit = state.nit
        self.gap = relative_duality_gap(self.datafit, state.x, self.C, self.l1_ratio)
        return self.gap <= GAP_CONFIRM


def _checked_solve(datafit, C, tol, max_iter, x0, verbose, l1_ratio, cg_maxiter=1000,
                   callback=None):
    """:func:`_solve` stopped at the first iterate that meets ``tol`` with a relative
    duality gap at most GAP_CONFIRM or a measure at most ``tol_floor`` (:class:`_GapCheck`);
    its result with the gap at x as ``duality_gap``, ``tol_floor`` and ``tol_excess``, the
    share of F that the iterations after the first to meet ``tol`` removed (a lower bound
    on how far that iterate lay above the minimum, as the gap is an upper one): 0 when
    that iterate was confirmed, NaN when none was within ``max_iter`` (or the solve
    stalled). Without the gradient ``jac``, which no caller reads."""
    # at most a tenth of the penalty weight 1/(C n): below it the solve must move w (a
    # weight of 0, which _solve refuses, has none)
    weight = C * datafit.n_samples
    tol_floor = min(tol / 100, 0.1 / weight) if weight > 0 else tol / 100
    check = _GapCheck(datafit, C, l1_ratio, tol_floor)
    res = _solve(datafit, C, tol, max_iter, x0, verbose, l1_ratio, cg_maxiter, callback,
                 confirm=check)
    res.pop("jac")
    res.duality_gap = (check.gap if check.nit == res.nit
                       else relative_duality_gap(datafit, res.x, C, l1_ratio))
    res.tol_floor = tol_floor
    res.tol_excess = 0.0 if check.first is None else (check.first - res.fun) / check.first
    if check.first is not None and res.status in (1, 2):   # met tol, never confirmed
        res.tol_excess = np.nan
    return res


def _solve(datafit, C, tol, max_iter, x0, verbose, l1_ratio=1.0, cg_maxiter=1000,
           callback=None, confirm=None):
    """OBA on ``datafit`` + (r‖w‖₁ + (1 − r)/2 ‖w‖²)/(C n) from ``x0`` (if None: w = 0 and
    the null model's intercepts); returns the OptimizeResult.

    The datafit does not depend on C: a path reuses one (its Lipschitz bound and layout).
    """
    weight = C * datafit.n_samples     # 0 where C times tiny weights underflows
    mu = l1_ratio / weight if weight > 0 else np.inf
    if not 0 < mu < np.inf:
        size, fault, fix = (("large", "underflows", "smaller") if not mu > 0
                            else ("small", "overflows", "larger"))
        raise ValueError(f"C times the total sample weight, {weight:.3g}, is "
                         f"too {size}: the penalty's weight 1/(C sum(s)) {fault}; use a {fix} "
                         f"C or {fix} sample weights")
    if l1_ratio < 1.0:
        datafit = Ridge(datafit, (1.0 - l1_ratio) / (C * datafit.n_samples))
    x0 = _null_start(datafit) if x0 is None else np.asarray(x0, dtype=np.float64)
    return minimize_oba(datafit.value_grad, datafit.hessp, x0, mu,
                        penalty_weights=datafit.penalty_weights,
                        lipschitz=datafit.lipschitz, tol=tol, max_iter=max_iter,
                        tau0_max=TAU0_MAX, tau_growth=TAU_GROWTH, tau_boost=TAU_BOOST,
                        reg_decay=REG_DECAY, cg_maxiter=cg_maxiter,
                        cg_maxiter_explicit=CG_MAXITER_EXPLICIT,
                        cg_rtol_explicit=CG_RTOL_EXPLICIT,
                        shift_invariant=datafit.shift_invariant, confirm=confirm,
                        callback=callback, verbose=max(verbose - 1, 0))


class _CoefRows:
    """The rows of a one-vs-rest ``coef_`` as the problems end: a dense array, or with
    ``sparse`` each row's nonzeros, made into a CSR matrix at the end."""

    def __init__(self, n_rows, n_columns, sparse):
        self.shape, self.sparse = (n_rows, n_columns), sparse
        self._rows = [None] * n_rows if sparse else np.empty(self.shape)

    def set(self, k, w):
        if self.sparse:
            places = np.flatnonzero(w)
            self._rows[k] = (places, w[places])
        else:
            self._rows[k] = w

    def matrix(self):
        if not self.sparse:
            return self._rows
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int64)
        np.cumsum([places.size for places, _ in self._rows], out=indptr[1:])
        indices = np.concatenate([places for places, _ in self._rows])
        data = np.concatenate([values for _, values in self._rows])
        return sp.csr_matrix((data, indices, indptr), shape=self.shape)


def _unit_mean_weights(sample_weight):
    """The weights divided by their mean, and that mean: with weights of mean 1 the solver's
    f (the weighted mean loss) and so its ``tol`` do not depend on how the weights are
    scaled; C times the mean keeps the objective."""
    top = float(np.max(sample_weight, initial=0.0))
    mean = top * float(np.mean(sample_weight / top)) if top > 0 else 0.0  # no overflow
    if not mean > 0:
        raise ValueError("every sample has weight 0 (sample_weight times class_weight)")
    return sample_weight / mean, mean


def _namespace(a):
    """The array module of ``a``: NumPy, or CuPy for a CuPy array."""
    return require_cupy() if is_device_matrix(a) else np


def _null_start(datafit):
    """w = 0 and, when fitted, the intercepts (the unpenalized coordinates) optimal for it."""
    x0 = np.zeros(datafit.n_params)
    if datafit.fit_intercept:
        x0[datafit.penalty_weights == 0] = datafit.null_intercept()
    return x0


def _layouts(X, n_problems=1, sample_weight=None, fit_intercept=False):
    """:func:`_column_layout`'s ``(X, X_csr)`` and the offsets subtracted from X's columns
    (or None): with a free intercept, those of its columns stored in every row that lie far
    from 0 against their spread (:func:`~sparsekit.utils._centering.column_shifts`)."""
    offsets = column_shifts(X, sample_weight) if fit_intercept else None
    return (*_column_layout(X, n_problems, offsets), offsets)


def _dask_layouts(data, n_problems, weights, fit_intercept):
    """(futures of every partition's :func:`_column_layout` for ``n_problems``, made once
    for them on the worker that holds it, and the offsets subtracted from X's columns or
    None) of dask rows ``data``, as :func:`_layouts` makes them in memory (the shifts from
    the partitions' moments, weighted by ``weights``: futures, or None for the sample
    weights)."""
    offsets = data.column_shifts(weights) if fit_intercept else None
    return data.placed(_column_layout, n_problems, offsets), offsets


def _partition_block(pos, n_classes, fit_intercept):
    """``make(layout, codes, sample_weight)``: the datafit of problem ``pos`` (None: the
    multinomial one) on one dask partition's :func:`_column_layout`."""
    if pos is None:
        return partial(_multinomial_on_layout, n_classes, fit_intercept)
    return partial(_binary_on_layout, pos, fit_intercept)


def _binary_on_layout(pos, fit_intercept, layout, codes, sample_weight):
    """:func:`_binary_block` on a partition's ``layout`` (X and its CSR copy or None)."""
    X, X_csr = layout
    return _binary_block(pos, fit_intercept, X, codes, sample_weight, X_csr)


def _multinomial_on_layout(n_classes, fit_intercept, layout, codes, sample_weight):
    """:func:`_multinomial_block` on a partition's ``layout`` (X and its CSR layout or
    None)."""
    X, X_csr = layout
    return _multinomial_block(n_classes, fit_intercept, X, codes, sample_weight, X_csr=X_csr)


def _column_layout(X, n_problems=1, shifts=None):
    """(X for the datafits less ``shifts``: CSC when sparse, Fortran-ordered when dense; a
    CSR copy or None), made once for a fit's problems (or a dask partition's): the
    datafits walk columns and form explicit Hessians from rows, so a CSR input is kept
    rather than rebuilt, a one-vs-rest fit of several problems builds one CSR copy for all
    of them unless X is too wide to walk rows, a C-ordered dense X is copied once (each
    datafit would otherwise make its own copies), and a dense X of at most
    SPARSE_COPY_DENSITY nonzero entries (after the shifts) is solved as its sparse copy, as
    a sparse X of the same layout would be (CSR when C-ordered, kept; CSC when not)."""
    if not sp.issparse(X):
        if shifts is not None:
            X = np.subtract(X, shifts.astype(X.dtype), order="F")
        if not mostly_zeros(X):
            return np.asfortranarray(X), None
        X, shifts = sparse_copy(X), None      # the shifts are subtracted already
    if shifts is not None:
        return _shifted_sparse(X, n_problems, shifts)
    if X.format == "csr" and X.has_canonical_format:
        return X.tocsc(), X
    X = X.tocsc()
    if n_problems > 1 and X.shape[1] <= Logistic.max_walk_columns:
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return X, X.tocsr()
    return X, None


def _shifted_sparse(X, n_problems, shifts):
    """:func:`_column_layout` of sparse X less ``shifts``, which are 0 but on columns that
    store an entry in every row (so that X's structure stays): copies in CSC and, for
    several problems or from CSR input, CSR."""
    shifts = shifts.astype(X.dtype)
    X_csc = X.tocsc(copy=True)
    X_csc.sum_duplicates()                      # one entry per row of a shifted column
    X_csc.data -= np.repeat(shifts, np.diff(X_csc.indptr))
    rows = X.format == "csr" or n_problems > 1 and X.shape[1] <= Logistic.max_walk_columns
    return X_csc, X_csc.tocsr() if rows else None


def _check_fit_data(estimator, X, y, sample_weight, reset=True):
    X, y = validate_input(estimator, X, y, accept_sparse=["csr", "csc"],
                         dtype=[np.float64, np.float32], reset=reset)
    check_entry_magnitude(X, np.float64)
    sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                         ensure_non_negative=True)
    return X, y, sample_weight


def _problem_count(multiclass, n_classes):
    """How many problems a fit of ``n_classes`` solves: one (multinomial, or two classes),
    or one per class (one-vs-rest)."""
    return 1 if multiclass == "multinomial" or n_classes == 2 else n_classes


class _MemoryProblems:
    """In-memory data of a fit, ready for its solves: X's used columns laid out once for
    every problem (:func:`_layouts`), the labels' codes, the weights of mean 1 (times
    ``class_weight``) and that mean (``mean_weight``, which scales C). ``n_problems``: how
    many problems the layout serves (None: the fit's, one-vs-rest or one).

    Sets the estimator's ``classes_`` (and what scikit-learn's validation sets)."""

    def __init__(self, est, X, y, sample_weight, n_problems=None):
        X, y, sample_weight = _check_fit_data(est, X, y, sample_weight)
        self.codes = est._encode_labels(y)
        self.classes = est.classes_
        self.weights, self.mean_weight = _unit_mean_weights(
            est._class_weighted(sample_weight, self.codes))
        self.columns = UsedColumns(X)
        self.n_problems = n_problems or _problem_count(est.multiclass, self.classes.size)
        self.X, self.X_csr, self.offsets = _layouts(self.columns.take(X), self.n_problems,
                                                    self.weights, est.fit_intercept)
        self.dtype, self.n_samples = self.X.dtype, self.X.shape[0]
        self.fit_intercept, self.n_threads = est.fit_intercept, cpu_threads(est.n_jobs)

    def datafit(self, pos):
        """The datafit of the binary problem of class ``pos`` (its index in the classes)
        against the others, or of the multinomial problem (None); the n_jobs threads go to
        its kernels when it is the fit's one problem (one-vs-rest problems run in threads
        of their own)."""
        if pos is None:
            return _multinomial_block(self.classes.size, self.fit_intercept, self.X,
                                      self.codes, self.weights, self.n_threads, self.offsets,
                                      self.X_csr)
        return _binary_block(pos, self.fit_intercept, self.X, self.codes, self.weights,
                             self.X_csr, self.offsets,
                             self.n_threads if self.n_problems == 1 else 1)

    def advice(self):
        """:func:`solve_advice` of the solved X."""
        return solve_advice(self.X, self.weights)


class _DaskProblems:
    """Dask arrays: X's row partitions laid out once for every problem on the workers that
    hold them (:func:`_dask_layouts`; ``n_problems`` as :class:`_MemoryProblems` takes
    it), each problem's datafit the sum of theirs.

    Sets the estimator's ``classes_`` and ``n_features_in_``."""

    def __init__(self, est, X, y, sample_weight, n_problems=None):
        self.data = data = DaskRows(X, y, sample_weight, [np.float64, np.float32])
        est.__dict__.pop("feature_names_in_", None)
        est.n_features_in_ = data.n_features
        est.classes_ = self.classes = data.classes()
        check_labels(self.classes)
        check_two_classes(self.classes)
        totals = data.class_totals(self.classes)
        cw = est._class_weights(self.classes, totals)
        self.mean_weight = float(cw @ totals) / data.n_samples
        if not self.mean_weight > 0:
            raise ValueError("every sample has weight 0 (sample_weight times class_weight)")
        self.weights = data.weights(self.classes, cw, self.mean_weight)  # of every problem
        self.columns = UsedColumns(X, keep_all=True)    # as the partitions' datafits
        self.parts, self.offsets = _dask_layouts(
            data, n_problems or _problem_count(est.multiclass, self.classes.size),
            self.weights, est.fit_intercept)
        self.dtype, self.n_samples = data.dtype, data.n_samples
        self.fit_intercept = est.fit_intercept

    def datafit(self, pos):
        """:meth:`_MemoryProblems.datafit` on the partitions."""
        return self.data.datafit(_partition_block(pos, self.classes.size, self.fit_intercept),
                                 self.classes, weights=self.weights, parts=self.parts,
                                 offsets=self.offsets)

    def advice(self):
        """:func:`solve_advice` of X's partitions."""
        return solve_advice(self.data, self.weights)


class _DeviceProblems:
    """X on the GPU (a CuPy array or cupyx sparse matrix, or host X moved there once) and
    its layout for the device datafits; the labels' codes and weights as
    :class:`_MemoryProblems` has them, on the host.

    Sets the estimator's ``classes_`` and ``n_features_in_`` (and what scikit-learn's
    validation sets for host X). ``n_problems`` changes nothing here (the layout is
    every problem's)."""

    def __init__(self, est, X, y, sample_weight, n_problems=None):
        self.X, y, sample_weight = est._device_fit_data(X, y, sample_weight)
        codes = est._encode_labels(y)
        self.classes = est.classes_
        self.weights, self.mean_weight = _unit_mean_weights(
            est._class_weighted(sample_weight, codes))
        self.columns = UsedColumns(self.X, keep_all=True)   # the device datafits see all
        X_solved, offsets = device_layout(self.X, self.weights, est.fit_intercept)
        self.datafit = partial(_device_block, self.classes.size, est.fit_intercept,
                               X_solved, codes, self.weights, {}, offsets=offsets)
        self.dtype, self.n_samples = self.X.dtype, self.X.shape[0]

    def advice(self):
        """:func:`solve_advice` of X, on the device."""
        return solve_advice(self.X, self.weights)


class L1LogisticOBA(LinearClassifierMixin, SparseCoefMixin, SparsekitClassifier):
    """Logistic regression with an ℓ1 (or elastic-net) penalty by OBA, a second-order method.

    Minimizes ‖w‖₁ + C Σᵢ sᵢ log(1 + exp(−yᵢ(wᵀxᵢ + b))) with the intercept b free and
    unpenalized: LIBLINEAR's ``-s 6 -B 1 -R`` objective, and its ``-s 6`` with
    ``fit_intercept=False`` (Keskar 2017, chapter 2). Multiclass
    problems are solved one-vs-rest, in parallel with joblib, or as one multinomial
    (softmax) problem: C Σᵢ sᵢ (log Σₖ exp(zᵢₖ) − zᵢ,yᵢ) + ‖W‖₁ with z = W xᵢ + b, solved by
    the same second-order method with the block Hessian of the softmax on the free set.
    ``l1_ratio`` < 1 makes the penalty scikit-learn's elastic net. X may be a dask array
    partitioned by rows, or a dask DataFrame: the fit then runs on the workers of the default
    ``distributed.Client`` that hold its partitions, and only parameter-sized vectors
    travel (the user guide's "Scaling out with Dask").

    Read more in the :ref:`User Guide <l1_logistic>`.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularization strength (as in LIBLINEAR and scikit-learn).
    tol : float, default=1e-8
        Stopping tolerance on the optimality measure ‖x − S_μ(x − ∇f(x))‖_∞ of the scaled
        problem f = Σᵢ sᵢ log(1 + exp(−yᵢ(wᵀxᵢ + b))) / Σᵢ sᵢ (the weighted mean loss),
        μ = 1/(C Σᵢ sᵢ) (1e-8 is the default ``optol`` of the thesis' reference code): rescaling the
        sample weights and 1/C together changes neither the solution nor the stop. The
        measure is in the units of the gradient, which a column of large entries scales: a
        solve that makes no progress for 20 iterations above ``tol`` (its gradient's rounding
        error) stops there and warns.
    max_iter : int, default=500
        Maximum number of OBA iterations per binary problem.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept. A fit without warm start begins at w = 0 with the
        intercept that is optimal for it (the log-odds of the weighted share of positives).
        The columns of X that hold an entry in every row (all of a dense X's; a numeric
        column beside one-hot ones in a sparse X) and whose mean lies beyond 10 standard
        deviations (a raw year or timestamp) are centered for the solve, in a copy (also
        in a dask array's partitions and on the GPU; not in a cupyx sparse matrix), which
        leaves the problem as it is (the intercept absorbs the shift) and its Newton
        systems well-conditioned.
    warm_start : bool, default=False
        Start from the previous solution when the shapes match.
    class_weight : dict, "balanced" or None, default=None
        Multiplies the loss terms of each class (as sample weights do); "balanced" gives
        class c the weight (total sample weight) / (n_classes × weight of class c), as
        scikit-learn does.
    n_jobs : int, default=None
        Number of threads: for the one-vs-rest problems (the kernels release the GIL),
        or for the matrix products of a fit's one problem, at most one thread per CPU and
        the same fit (on a dense float64 X, up to BLAS's rounding): a binary problem's
        (the rows of X w and of the Hessian products' X v, the columns of the gradient's
        and their Xᵀ r split among them, and a dense X's Hessians formed in float32
        panels, by panels; a sparse X's formed by scattered updates by blocks of rows
        where they make 2²⁴ updates or more, the same fit up to their rounding), the
        multinomial problem's (the rows of X V, the columns of Xᵀ R). None means 1 unless in a
        :func:`joblib.parallel_backend` context, -1 all processors. Threads of this
        process under any joblib backend (the problems share X); an interrupted fit
        (KeyboardInterrupt) ends them at their next iteration. BLAS runs one thread during
        the solves (its calls there are small; its own threads would take the cores from
        these), and is set back after the fit.
    verbose : int, default=0
        1 prints one line per binary problem, 2 also one line per OBA iteration.
    sparse_coef : bool, default=False
        Store ``coef_`` as a ``scipy.sparse.csr_matrix``; a one-vs-rest fit then keeps each
        class's nonzero weights as its problem ends and never holds the dense array (the
        multinomial solver works on the dense weights). A dense ``coef_`` larger than half
        the machine's memory (hashed features with many classes) is refused before the fit
        starts. The scores of sparse rows read only the nonzero weights either way; a dense
        ``coef_`` is scanned for them at each call, which a sparse one skips (batches of
        100 to 1,000 rows of a wide corpus score several times faster; ``sparsify()`` after the
        fit does the same).
    multiclass : {"ovr", "multinomial"}, default="ovr"
        With more than two classes: one binary problem per class against the rest (as
        LIBLINEAR), or one multinomial problem over all classes (the softmax model, as
        scikit-learn's ``LogisticRegression``, whose only ℓ1 solver for it is ``saga``);
        ``predict_proba`` then returns its softmax probabilities. A constant added to a
        feature's class weights changes no probability: of those models the multinomial
        fit with ``l1_ratio=1`` returns one where each feature's class weights hold a
        zero at their median (the least ℓ1 norm, and a zero more where two models tie on
        it). Two classes always make the binary problem. The multinomial fit holds about 14
        arrays of its dense weights' size and 6 of rows × classes (more where most weights
        are free); one whose arrays would exceed the machine's memory is refused before it
        starts, where one-vs-rest holds arrays of one class's weights.
    l1_ratio : float in (0, 1], default=1.0
        Elastic-net mixing, with scikit-learn's meaning: the penalty is
        ``l1_ratio ‖w‖₁ + (1 − l1_ratio)/2 ‖w‖²`` (the intercepts unpenalized); 1 is the
        ℓ1 penalty. For a pure ℓ2 penalty use scikit-learn's ``LogisticRegression``.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"`` fits on the current GPU with CuPy (``pip install sparsekit[gpu]``): the
        margins, the loss, the gradient and the Hessian products of OBA run on the device,
        its active-set logic on the host. X given as a CuPy array or a cupyx sparse matrix
        needs ``"cuda"``; dask arrays need ``"cpu"``. The fitted attributes are
        NumPy arrays: the model predicts NumPy input on the CPU, and CuPy input (whatever
        ``device``) on the GPU, returning CuPy arrays.

    Attributes
    ----------
    coef_ : ndarray or csr_matrix of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
        A multinomial model's intercepts sum to zero (adding a constant to all of them
        changes no probability).
    classes_ : ndarray of shape (n_classes,)
    n_iter_ : ndarray of shape (1,) or (n_classes,)
        OBA iterations of each binary problem (of the multinomial problem: shape (1,)).
    optimality_ : ndarray of shape (1,) or (n_classes,)
        Final optimality measure of each binary problem.
    duality_gap_ : ndarray of shape (1,) or (n_classes,)
        Relative duality gap of each binary problem at the returned (w, b): an upper bound
        on (F − min_w F) / F with b held fixed. ``tol`` is absolute, and where F is very
        flat it is met far from the minimum, so a solve stops at the first iterate that
        meets ``tol`` with a gap of at most 1% of F, or whose optimality is at most
        ``tol`` / 100 (and at most 0.1/(C Σ sᵢ)): where ``tol`` exceeds 1/(C Σ sᵢ) the gap
        is a loose bound that can be large however near the minimum F is. Both tests pass
        at a larger ``tol`` wherever they pass at a smaller one, so a smaller ``tol`` never
        returns a model of larger F. The fit warns when F fell by more than 0.1% after
        ``tol`` was met and the gap of the model returned is still above 5%.
    corrective_loops_ : list of ndarray
        Passes of OBA's corrective cycle per iteration, for each binary problem.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 2 (OBA, Algorithms 1 and 2).
    .. [2] Yuan, G.-X., Ho, C.-H. & Lin, C.-J. (2012). An improved GLMNET for L1-regularized
       logistic regression. JMLR 13, 1999-2030 (LIBLINEAR's ``-s 6`` objective).
    .. [3] Zou, H. & Hastie, T. (2005). Regularization and variable selection via the
       elastic net. JRSS B 67(2), 301-320 (``l1_ratio``).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekit import L1LogisticOBA
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), L1LogisticOBA(C=0.1)).fit(X, y)
    >>> round(model.score(X, y), 3)
    0.974
    >>> int((model[-1].coef_ != 0).sum())
    8

    scikit-learn's ``SelectFromModel`` keeps the features of nonzero weight (see ``penalty``):

    >>> from sklearn.feature_selection import SelectFromModel
    >>> int(SelectFromModel(model[-1], prefit=True).get_support().sum())
    8

    One multinomial model over the ten digits, with an elastic-net penalty:

    >>> from sklearn.datasets import load_digits
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = L1LogisticOBA(C=0.1, multiclass="multinomial", l1_ratio=0.8).fit(X / 16, y)
    >>> clf.coef_.shape, round(clf.score(X / 16, y), 2), int((clf.coef_ != 0).sum())
    ((10, 64), 0.94, 133)
    """

    _parameter_constraints = {
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "warm_start": ["boolean"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
        "sparse_coef": ["boolean"],
        "multiclass": [StrOptions({"ovr", "multinomial"})],
        "l1_ratio": [Interval(numbers.Real, 0, 1, closed="right")],
        "device": [StrOptions({"cpu", "cuda"})],
    }

    def __init__(self, C=1.0, *, tol=1e-8, max_iter=500, fit_intercept=True, warm_start=False,
                 class_weight=None, n_jobs=None, verbose=0, sparse_coef=False,
                 multiclass="ovr", l1_ratio=1.0, device="cpu"):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.sparse_coef = sparse_coef
        self.multiclass = multiclass
        self.l1_ratio = l1_ratio
        self.device = device

    @property
    def penalty(self):
        """The penalty's name: ``"l1"``, or ``"elasticnet"`` when ``l1_ratio`` < 1.

        Read-only, from ``l1_ratio``. scikit-learn's
        :class:`~sklearn.feature_selection.SelectFromModel` reads it, as it reads
        ``LinearSVC(penalty="l1")``'s: with ``"l1"`` its default threshold keeps the features
        of nonzero weight (above 1e-5) rather than those of above-mean weight.
        """
        return "l1" if self.l1_ratio == 1 else "elasticnet"

    @unchanged_on_error
    @with_callbacks
    def fit(self, X, y, sample_weight=None):
        """Fit the model on X and labels y.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, float32 or float64 (``coef_`` follows its dtype); a dask
            array of such row blocks, or a dask DataFrame (its partitions; ``y`` and
            ``sample_weight`` then Series of the same frame, or arrays), fit on the workers
            of the default ``distributed.Client``; or, with ``device="cuda"``, a CuPy array /
            cupyx sparse matrix. The columns of a sparse X that store no entry (hashed
            features) are left out of the solve: their weights are 0. A dense X of at
            most 30% nonzero entries (pixels, counts) is solved as a sparse copy.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows' loss terms (multiplied by ``class_weight``).

        Returns
        -------
        self : L1LogisticOBA
            The fitted estimator.
        """
        self._validate_params()
        on_device = fit_device(self.device, X)
        if on_device and is_dask_collection(X):
            raise ValueError("device='cuda' fits in-memory X; use device='cpu' for dask "
                             "arrays")
        data = (_DeviceProblems if on_device else _DaskProblems if is_dask_collection(X)
                else _MemoryProblems)(self, X, y, sample_weight)
        classes = data.classes
        multinomial = self.multiclass == "multinomial" and classes.size > 2
        problems = (["the multinomial problem"] if multinomial
                    else [classes[1]] if classes.size == 2 else list(classes))
        if multinomial:     # the solver's arrays are in this process, on a GPU too
            multinomial_within_memory(data.n_samples, data.columns.n_used, classes.size,
                                      self.fit_intercept)
        if not self.sparse_coef:
            check_dense_size("coef_", [("rows", 1 if classes.size == 2 else classes.size),
                                       ("columns", self.n_features_in_)],
                             np.dtype(data.dtype).itemsize,
                             "pass sparse_coef=True, which stores its nonzeros")
        # the callbacks are shown X, y and sample_weight as given (their scorers weigh
        # by the user's weights, not by those times class_weight)
        context = self._begin_fit_task(X, y, len(problems), sample_weight)
        coef, intercept, results = self._solve_problems(data, problems, multinomial,
                                                        context, X, y, sample_weight)
        self.coef_ = data.columns.expand(coef.astype(data.dtype, copy=False))
        self.intercept_ = intercept.astype(data.dtype)
        self._softmax = multinomial
        self.n_iter_ = np.array([r.nit for r in results], dtype=np.int32)
        self.optimality_ = np.array([r.optimality for r in results])
        self.duality_gap_ = np.array([r.duality_gap for r in results])
        self.corrective_loops_ = [r.corrective_loops for r in results]
        # 1, not np.int64(1), in the messages
        names = problems if multinomial else [f"class {np.asarray(p).tolist()!r}"
                                              for p in problems]
        for name, r, gap in zip(names, results, self.duality_gap_):
            self._say(f"{name}: {r.nit} iterations, {r.ncg} CG, optimality "
                      f"{r.optimality:.2e}, F/(C n) {r.fun:.10e}, relative duality gap "
                      f"{gap:.2e}")
            if r.success and r.tol_excess > 0 and not (r.tol_excess > EXCESS_WARN
                                                    and gap > GAP_WARN):
                self._say(f"{name}: tol {self.tol:.2e} was met with a duality gap above "
                          f"{GAP_CONFIRM:.0%} of F; the solve went on until the gap was "
                          f"below it or the optimality below {r.tol_floor:.2e}, lowering "
                          f"F by {r.tol_excess:.2e} of it")
        self._warn_unconverged(names, results, self.duality_gap_, data.advice)
        self._end_fit_task(context, X, y, sample_weight)
        return self

    def _solve_problems(self, data, problems, multinomial, context, X, y, sample_weight):
        """(coef on ``data``'s used columns, intercept, the solvers' results): every
        problem of ``data`` solved, in joblib's threads when there are several, each a
        subtask of the fit's callback ``context`` (shown ``X``, ``y`` and
        ``sample_weight``)."""
        # one subtask per problem, created here so that their ids follow the classes
        tasks = [context.subcontext(task_name="multinomial problem" if multinomial
                                    else "binary problem", max_subtasks=None)
                 for _ in problems]
        w0 = self._warm_start_point(data.classes.size if multinomial else len(problems),
                                    self.n_features_in_, multinomial, data.columns)
        C = self.C * data.mean_weight
        parameters = _multinomial_model if multinomial else _binary_model
        # several problems in joblib's threads, or one on OpenMP threads from a thread of its
        # own: solves that end at their next iteration once the caller was interrupted
        threads = cpu_threads(self.n_jobs) if len(problems) == 1 else 1
        elsewhere = (jobs_at_once(self.n_jobs, len(problems), threads=True) > 1
                     if len(problems) > 1 else threads > 1)

        def solve(k, pos):
            if abandoned.is_set():        # a job that joblib started after the interrupt
                raise Abandoned
            self._begin_task(tasks[k], X, y, sample_weight)
            problem = data.datafit(None if multinomial
                                   else int(np.searchsorted(data.classes, pos)))

            def model(x):      # a fitted estimator only when this problem is the whole model
                if len(problems) > 1:
                    return None
                coef, intercept = parameters(problem, x)
                return {"coef_": data.columns.expand(coef).astype(data.dtype),
                        "intercept_": intercept.astype(data.dtype), "_softmax": multinomial}
            callback, close = self._iteration_callback(tasks[k], X, y, sample_weight, model,
                                                       abandoned if elsewhere else None)
            start = None if w0 is None else _centered_start(problem, w0 if multinomial
                                                            else w0[k], multinomial)
            if multinomial:
                result = _fit_multinomial(problem, C, self.tol, self.max_iter, start,
                                          self.verbose, self.l1_ratio, callback)
            else:
                w, b, res = _fit_binary(problem, C, self.tol, self.max_iter, start,
                                        self.verbose, self.l1_ratio, callback)
                res.pop("x")        # w is its row of coef_
                result = (w, b, res)
            close()
            self._end_subtask(tasks[k], X, y, sample_weight)
            return result
        if isinstance(data, _DeviceProblems):      # the problems' threads on the caller's GPU
            solve = on_current_device(solve)
        # BLAS on one thread: the solves' BLAS calls are small and alternate with OBA's own
        # kernels and the other problems' threads (at BLAS's default threads, dense fits
        # took up to 3.2 times as long: doc/benchmarks.md, "blas_threads")
        with one_blas_thread(), abandoned_on_error() as abandoned:
            if len(problems) > 1:
                jobs = (delayed(solve)(k, pos) for k, pos in enumerate(problems))
                # threads of this process whatever joblib backend is in effect: the solves
                # share the data (on dask input each drives the cluster from a thread of
                # the client), which a process or a dask worker would be sent a copy of
                results = Parallel(n_jobs=self.n_jobs, require="sharedmem",
                                   return_as="generator")(jobs)
            else:   # without joblib's pool (~10 ms for one task, a small fit's whole time)
                results = [openmp_call(threads, solve, 0, problems[0])]
            if multinomial:
                coef, intercept, res = results[0]
                return (sp.csr_matrix(coef) if self.sparse_coef else coef), intercept, [res]
            # each problem's row into coef_ as it ends (joblib yields them in order): not
            # every problem's solution kept to the end, then stacked; with sparse_coef only
            # its nonzeros, never a dense coef_
            coef = _CoefRows(len(problems), data.columns.n_used, self.sparse_coef)
            intercept, kept = np.empty(len(problems)), []
            for k, (w, b, res) in enumerate(results):
                coef.set(k, w)
                intercept[k] = b
                kept.append(res)
        return coef.matrix(), intercept, kept

    def _warn_unconverged(self, names, results, gaps, advice=None):
        """One ConvergenceWarning per kind of failure, naming the problems it concerns (a
        one-vs-rest fit of many classes would otherwise print a warning per class);
        ``advice`` as :func:`_warn_not_converged` takes it."""
        unconfirmed = [k for k, r in enumerate(results) if np.isnan(r.tol_excess)]
        unconverged = [k for k, r in enumerate(results)   # a requested stop is no failure
                       if not r.success and r.status != STOPPED_BY_CALLBACK
                       and k not in unconfirmed]
        flat = [k for k, r in enumerate(results)
                if r.success and r.tol_excess > EXCESS_WARN and gaps[k] > GAP_WARN]
        if unconverged:
            _warn_not_converged(names, unconverged, results, self.tol, advice=advice)
        if unconfirmed:
            gap = _upto(unconfirmed, max(gaps[k] for k in unconfirmed), ".1%")
            floor = results[unconfirmed[0]].tol_floor     # n and C: the same for each
            warnings.warn(f"OBA met tol {self.tol:.2e} for {_problems(names, unconfirmed)}, "
                          f"but its duality gap, an upper bound on how far F lies above its "
                          f"minimum, is {gap} of F, and the iterations that followed brought "
                          f"neither the gap below {GAP_CONFIRM:.0%} nor the optimality below "
                          f"{floor:.2e} within max_iter={self.max_iter} iterations to confirm "
                          "the fit: rescale X (e.g. StandardScaler) or raise max_iter.",
                          ConvergenceWarning)
        if flat:
            excess = [results[k].tol_excess for k in flat]
            excess = (f"{excess[0]:.2%}" if len(flat) == 1
                      else f"{min(excess):.2%} to {max(excess):.2%}")
            floor = results[flat[0]].tol_floor            # n and C: the same for each
            gap = _upto(flat, max(gaps[k] for k in flat), ".1%")
            warnings.warn(f"OBA met tol {self.tol:.2e} for {_problems(names, flat)} with F at "
                          f"least {excess} above its minimum: the solve went on to an "
                          f"optimality of {floor:.2e}, which lowered F that much (the model "
                          f"returned), and the duality gap "
                          f"still bounds F's excess by {gap}: F is very flat here (large C, "
                          "(nearly) separable classes or tiny feature scales); lower tol or "
                          "rescale X.", ConvergenceWarning)

    def _device_fit_data(self, X, y, sample_weight):
        """(X on the GPU, y, sample_weight on the host), validated as on the CPU."""
        if not is_device_matrix(X):
            X, y, sample_weight = _check_fit_data(self, X, y, sample_weight)
            return to_device(X), y, sample_weight
        X = check_device_X(X)
        y, sample_weight = host_targets(X, y, sample_weight)
        self.__dict__.pop("feature_names_in_", None)
        self.n_features_in_ = X.shape[1]
        check_entry_magnitude(X, np.float64)
        return X, y, sample_weight

    def _iteration_callback(self, task, X, y, sample_weight, model, abandoned=None):
        """``(callback, close)``: OBA's callback, which makes each iteration a subtask of the
        problem's ``task`` for scikit-learn's callbacks (the model as it stands given by
        ``model(x)``, reconstruction attributes or None; a callback asking to stop ends the
        solve by ``StopIteration``) and ends the solve by :class:`Abandoned` once the Event
        ``abandoned`` is set, and ``close`` for the subtask begun after the last iteration.
        ``(None, no-op)`` without callbacks and event."""
        if not getattr(self, "_skl_callbacks", None):
            return stop_if_abandoned(abandoned), lambda: None
        current = []

        def begin():
            current.append(self._begin_subtask(task, "OBA iteration", X, y, sample_weight))

        def callback(intermediate_result):
            if abandoned is not None and abandoned.is_set():
                raise Abandoned
            x = intermediate_result.x
            stop = self._end_subtask(current[-1], X, y, sample_weight, lambda: model(x))
            begin()
            if stop:
                raise StopIteration

        begin()
        return callback, lambda: self._end_subtask(current[-1])

    def _warm_start_point(self, n_problems, n_features, multinomial, columns):
        """The previous solution as start(s) on the solvers' ``columns`` (UsedColumns):
        one row per binary problem, or the multinomial problem's (W.ravel(), b); None
        without a usable one."""
        if not (self.warm_start and hasattr(self, "coef_")) or multinomial != getattr(
                self, "_softmax", False):
            return None
        coef = self.coef_.toarray() if sp.issparse(self.coef_) else self.coef_
        if coef.shape != (n_problems, n_features):
            return None
        coef = columns.restrict(coef.astype(np.float64))
        if multinomial:
            return np.concatenate([coef.T.ravel(), self.intercept_ if self.fit_intercept
                                   else []]).astype(np.float64)
        if self.fit_intercept:
            return np.hstack([coef, self.intercept_[:, None]])
        return coef.copy()

    @block_predictions
    def decision_function(self, X):
        """Signed margins X wᵀ + b of the rows of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            The positive class' margin for two classes, one column per class otherwise;
            float32 when both X and the model are (a CuPy array for CuPy X).
        """
        check_is_fitted(self)
        if is_device_matrix(X):
            scores = device_scores(X, self.coef_, self.intercept_)
            return scores.ravel() if scores.shape[1] == 1 else scores
        X = validate_input(self, X, accept_sparse=["csr", "csc"],
                          dtype=[np.float64, np.float32], reset=False)
        dtype = np.result_type(X.dtype, self.coef_.dtype)    # float32 only if both are
        if sp.issparse(X):
            scores = linear_scores(X, self.coef_, self.intercept_,
                                   cpu_threads(self.n_jobs)).astype(dtype, copy=False)
        else:
            coef = self.coef_.astype(dtype)
            scores = safe_sparse_dot(X.astype(dtype, copy=False), coef.T, dense_output=True)
            scores = np.asarray(scores + self.intercept_.astype(dtype))
        return scores.ravel() if scores.shape[1] == 1 else scores

    @block_predictions
    def predict(self, X):
        """Predicted class of each row of X (the largest margin).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Elements of ``classes_`` (a CuPy array for CuPy X when the labels are numbers).
        """
        if not is_device_matrix(X):
            return super().predict(X)
        scores = self.decision_function(X)
        best = (scores > 0).astype(np.int64) if scores.ndim == 1 else scores.argmax(axis=1)
        if self.classes_.dtype.kind in "biuf":
            return _namespace(best).asarray(self.classes_)[best]
        return self.classes_[best.get()]

    @block_predictions
    def predict_proba(self, X):
        """Class probabilities of the rows of X.

        σ(margin) for two classes, the softmax of the scores for a multinomial model, the
        one-vs-rest σ's normalized to sum to 1 otherwise (as scikit-learn's one-vs-rest
        ``LogisticRegression``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; rows sum to 1.
        """
        scores = self.decision_function(X)
        if _namespace(scores) is np and scores.ndim == 2:
            return _probabilities(scores, getattr(self, "_softmax", False))
        return _namespace(scores).exp(self._log_proba(scores))

    @block_predictions
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed in log space.

        log σ(z) = −log(1 + e^{−z}) per class, normalized by a log-sum-exp over the
        classes: finite for any margin, where the log of a rounded probability is −inf.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        return self._log_proba(self.decision_function(X))

    def _log_proba(self, scores):
        """:meth:`predict_log_proba` of the scores (NumPy or CuPy)."""
        xp = _namespace(scores)                       # NumPy, or CuPy for CuPy X
        dtype = scores.dtype                          # float32 for a float32 model and X
        scores = scores.astype(np.float64)
        if scores.ndim == 1:
            scores = xp.stack([-scores, scores], axis=1)
            return (-xp.logaddexp(0.0, -scores)).astype(dtype)
        if not getattr(self, "_softmax", False):
            scores = -xp.logaddexp(0.0, -scores)      # log σ, then normalized
        if xp is np:
            return _log_softmax(scores).astype(dtype)
        top = scores.max(axis=1, keepdims=True)
        shifted = scores - top
        return (shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))).astype(dtype)


#: a row whose largest one-vs-rest margin is below this has every σ near or below the
#: smallest normal float64 (σ(-708) ≈ 2.2e-308): its probabilities come from their logarithms
SIGMOID_FLOOR = -700.0


def _probabilities(scores, softmax):
    """``predict_proba`` of host scores of several classes, in probability space (one pass
    of ``exp``, where the logarithms take three): the softmax, shifted by each row's largest
    score, or the σ's normalized (from their logarithms in the rows :data:`SIGMOID_FLOOR`
    sets apart)."""
    dtype = scores.dtype                              # float32 for a float32 model and X
    P = np.array(scores, dtype=np.float64)
    low = np.zeros(P.shape[0], dtype=bool)
    if softmax:
        P -= P.max(axis=1, keepdims=True)
        np.exp(P, out=P)
    else:
        low = P.max(axis=1) < SIGMOID_FLOOR
        expit(P, out=P)
        P[low] = 1.0                                  # replaced below
    P /= P.sum(axis=1, keepdims=True)
    if low.any():
        P[low] = np.exp(_log_softmax(log_expit(np.asarray(scores[low], dtype=np.float64))))
    return P.astype(dtype, copy=False)


def l1_logistic_path(X, y, Cs=10, *, pos_class=None, fit_intercept=True, tol=1e-8,
                     max_iter=500, sample_weight=None, multiclass="ovr", l1_ratio=1.0,
                     device="cpu"):
    """Regularization path of :class:`L1LogisticOBA` over ``Cs``, with warm starts.

    The problems are solved from the smallest C to the largest, each started at the
    previous solution (the path goes from sparse to dense solutions).

    Read more in the :ref:`User Guide <l1_logistic>`.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Or, with ``device="cuda"``, a CuPy array or cupyx sparse matrix; or a dask array of
        row blocks (or a dask DataFrame, ``y`` and ``sample_weight`` then of the same
        frame, or arrays), solved on the workers of the default ``distributed.Client`` as
        :class:`L1LogisticOBA` fits it.
    y : array-like of shape (n_samples,)
        Labels; with more than two classes, ``pos_class`` picks the positive one, or
        ``multiclass="multinomial"`` fits the multinomial model of all of them.
    Cs : int or array-like, default=10
        The C values, or their number (then log-spaced on [C_min, 1e4 C_min], where
        C_min = l1_ratio/‖Xᵀ∇ℓ(0)‖_∞ is the smallest C giving a nonzero w).
    pos_class : label, optional
        The positive class (default: the larger of two labels).
    fit_intercept : bool, default=True
        As in :class:`L1LogisticOBA`.
    tol : float, default=1e-8
        As in :class:`L1LogisticOBA`, for each C.
    max_iter : int, default=500
        As in :class:`L1LogisticOBA`, for each C.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the rows' loss terms.
    multiclass : {"ovr", "multinomial"}, default="ovr"
        As in :class:`L1LogisticOBA`.
    l1_ratio : float in (0, 1], default=1.0
        As in :class:`L1LogisticOBA`.
    device : {"cpu", "cuda"}, default="cpu"
        As in :class:`L1LogisticOBA`: ``"cuda"`` solves the path on the current GPU (host
        X is copied there once); the solutions are NumPy arrays.

    Returns
    -------
    coefs : ndarray of shape (n_Cs, n_features + fit_intercept) or \
            (n_Cs, n_classes, n_features + fit_intercept)
        Solutions in the order of ``Cs`` (the intercept last); one row per class for the
        multinomial model.
    Cs : ndarray of shape (n_Cs,)
        The C values, increasing.
    n_iter : ndarray of shape (n_Cs,)
        OBA iterations per C.

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 2 (OBA, Algorithms 1 and 2).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekit import l1_logistic_path
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> coefs, Cs, n_iter = l1_logistic_path(StandardScaler().fit_transform(X), y, Cs=4)
    >>> (coefs[:, :-1] != 0).sum(axis=1)
    array([ 0,  8, 16, 27])
    """
    est = L1LogisticOBA(fit_intercept=fit_intercept, tol=tol, max_iter=max_iter,
                        multiclass=multiclass, l1_ratio=l1_ratio, device=device)
    validate_parameter_constraints(est._parameter_constraints, est.get_params(deep=False),
                                   caller_name="l1_logistic_path")   # names the function
    on_device = fit_device(device, X)
    if on_device and is_dask_collection(X):
        raise ValueError("device='cuda' solves in-memory X; use device='cpu' for dask arrays")
    data = (_DeviceProblems if on_device else _DaskProblems if is_dask_collection(X)
            else _MemoryProblems)(est, X, y, sample_weight, n_problems=1)
    classes = data.classes
    multinomial = multiclass == "multinomial" and classes.size > 2
    if multinomial:
        if pos_class is not None:
            raise ValueError("pos_class is for a binary path; the multinomial model has "
                             "every class")
    elif pos_class is None:
        if classes.size != 2:
            raise ValueError("pos_class must be given when y has more than two classes")
        pos_class = classes[1]
    elif pos_class not in classes:
        raise ValueError(f"pos_class {pos_class!r} is not a label of y")
    if multinomial:     # the solver's arrays and the path's solutions (Cs checked below)
        n_Cs = Cs if isinstance(Cs, numbers.Integral) else np.size(Cs)
        multinomial_within_memory(data.n_samples, data.columns.n_used, classes.size,
                                  fit_intercept, kept=max(int(n_Cs), 0))
    datafit = data.datafit(None if multinomial else int(np.searchsorted(classes, pos_class)))
    mean_weight = data.mean_weight
    Cs = _C_values(Cs, lambda: (l1_ratio * _smallest_active_C(datafit) / mean_weight,) * 2)
    width = datafit.n_features + fit_intercept
    coefs = np.empty((Cs.size, classes.size, width) if multinomial else (Cs.size, width))
    results = _warm_path(datafit, Cs * mean_weight, tol, max_iter, l1_ratio, multinomial,
                         coefs)
    n_iter = np.array([res.nit for res in results], dtype=np.int32)
    failed = [k for k, res in enumerate(results) if not res.success]
    if failed:   # one warning for the path, not one per C
        _warn_not_converged([f"C={C:g}" for C in Cs], failed, results, tol,
                            noun="values of C", advice=data.advice)
    return data.columns.expand(coefs), Cs, n_iter


def _warm_path(datafit, Cs, tol, max_iter, l1_ratio, multinomial, out, abandoned=None):
    """OBA's solves of ``datafit`` at each C of ``Cs`` (C times the mean sample weight),
    from the smallest up, each started at the previous solution, written to ``out[k]`` as
    :func:`_path_coef` (a row per C in the order of ``Cs``); their OptimizeResults, without
    ``x`` and ``jac`` (a path keeps one solution at a time beside ``out``). A path run in
    another thread ends by :class:`Abandoned` at the first iteration after the Event
    ``abandoned`` (:func:`abandoned_on_error`) is set."""
    results, x = [None] * len(Cs), None
    with one_blas_thread():   # as L1LogisticOBA.fit's solves
        for k in np.argsort(Cs, kind="stable"):
            res = _solve(datafit, Cs[k], tol, max_iter, x, 0, l1_ratio,
                         MULTINOMIAL_CG_MAXITER if multinomial else 1000,
                         stop_if_abandoned(abandoned))
            x = res.pop("x")
            res.pop("jac")
            out[k] = _path_coef(datafit, x, multinomial)
            results[k] = res
    return results


def _path_coef(datafit, x, multinomial):
    """The solution ``x`` as a path's row: (w, b) of a binary problem, or the (K, D + 1)
    block (coef | intercept) of the multinomial one (without the intercept column when
    none is fitted); the intercepts of X's columns as given."""
    coef, intercept = (_multinomial_model if multinomial else _binary_model)(datafit, x)
    block = np.hstack([coef, intercept[:, None]]) if datafit.fit_intercept else coef
    return block if multinomial else block[0]


def _centered_start(datafit, x0, multinomial):
    """A start ``x0`` (the parameters of X's columns as given) as the parameters of the
    datafit's X, whose columns may have been centered (its ``offsets``)."""
    offsets = getattr(datafit, "offsets", None)
    if offsets is None:
        return x0
    x0 = np.array(x0, dtype=np.float64)
    if multinomial:
        W, b = split_parameters(x0, datafit.n_features, x0.size // (datafit.n_features + 1),
                                True)
        b += offsets @ W                        # views of x0
    else:
        x0[-1] += x0[:datafit.n_features] @ offsets
    return x0


def _C_values(Cs, span):
    """``Cs`` as an array of positive C values; an integer ``Cs`` is that many log-spaced on
    [lo, 10⁴ hi], ``(lo, hi) = span()`` (computed only then)."""
    if isinstance(Cs, bool) or isinstance(Cs, numbers.Integral) and Cs < 1:
        raise ValueError(f"Cs must be a number of C values (>= 1) or an array of them, got {Cs!r}")
    if isinstance(Cs, numbers.Integral):
        lo, hi = span()
        if not 0 < lo <= hi < np.finfo(np.float64).max / 1e4:
            raise ValueError(f"the smallest C that gives a nonzero w is {lo:.3g}, no start for "
                             "a grid of C values in float64: X's entries or the sample weights "
                             "are too small; rescale them (e.g. MaxAbsScaler) or pass Cs as an "
                             "array")
        Cs = np.logspace(np.log10(lo), np.log10(hi) + 4, Cs)
    given = Cs
    try:
        Cs = np.asarray(Cs, dtype=np.float64)
        Cs = Cs.reshape(1) if Cs.ndim == 0 else Cs      # one C, as a number
    except (TypeError, ValueError):
        Cs = np.array([np.nan])
    if Cs.ndim != 1 or Cs.size == 0 or np.any(~np.isfinite(Cs)) or np.any(Cs <= 0):
        raise ValueError(f"Cs must be a number of C values (>= 1) or a non-empty 1-D list of "
                         f"positive finite numbers, got {given!r}")
    return Cs


def _smallest_active_C(datafit):
    """The C below which w = 0 is optimal: ‖∇_w f‖_∞ ≤ 1/(C n) at the null start."""
    _, grad = datafit.value_grad(_null_start(datafit))
    g = np.abs(grad[datafit.penalty_weights > 0]).max() * datafit.n_samples
    if not g > 0:
        raise ValueError("w = 0 is optimal for every C (X is zero on the weighted rows, or "
                         "the null start already fits them): pass Cs as an array")
    with np.errstate(over="ignore"):  # a subnormal g: the caller says what to do of inf
        return 1.0 / g
