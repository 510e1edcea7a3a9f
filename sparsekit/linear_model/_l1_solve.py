"""OBA as the ℓ1 logistic fits run it: the options :class:`~sparsekit.L1LogisticOBA` sets,
the stop it confirms by the duality gap, and the models of the solutions.

A solve minimizes F / (C n), the weighted mean logistic (or softmax) loss plus μ‖w‖₁ with
μ = 1/(C n), by :func:`sparsekit.optimize.minimize_oba` (Keskar 2017, thesis chapter 2);
with ``l1_ratio`` r < 1 the elastic net's ridge part joins the datafit (:func:`penalty`).
"""
import numpy as np

from sparsekit.losses._duality import relative_duality_gap
from sparsekit.losses._multinomial_datafit import split_parameters
from sparsekit.losses._ridge_datafit import Ridge
from sparsekit.optimize import minimize_oba


# OBA's options as L1LogisticOBA sets them; the measurements behind each choice are in
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
#: CG iterations per Newton step on a formed subspace Hessian (the datafits form it when
#: that is cheaper): its products cost O(|F|²), so CG runs to CG_RTOL_EXPLICIT.
CG_MAXITER_EXPLICIT = 1000


def fit_binary(datafit, C, tol, max_iter, w0, verbose, l1_ratio=1.0, callback=None):
    """One OBA solve of a binary problem; returns (w, b, OptimizeResult)."""
    res = _checked_solve(datafit, C, tol, max_iter, w0, verbose, l1_ratio,
                         callback=callback)
    coef, intercept = binary_model(datafit, res.x)
    return coef[0], float(intercept[0]), res


def binary_model(datafit, x):
    """(coef (1, D), intercept (1,)) of the binary parameters x = (w, b), on the columns of
    X as given where the datafit's X was centered or rescaled."""
    coef = x[None, :datafit.n_features] * getattr(datafit, "scale", 1.0)
    intercept = np.array([x[-1] if datafit.fit_intercept else 0.0])
    offsets = getattr(datafit, "offsets", None)
    return coef, intercept if offsets is None else intercept - coef @ offsets


def fit_multinomial(datafit, C, tol, max_iter, w0, verbose, l1_ratio=1.0, callback=None):
    """One OBA solve of the multinomial problem; returns (coef (K, D), intercept (K,),
    OptimizeResult)."""
    res = _checked_solve(datafit, C, tol, max_iter, w0, verbose, l1_ratio,
                         cg_maxiter=MULTINOMIAL_CG_MAXITER, callback=callback)
    return (*multinomial_model(datafit, res.x), res)


def multinomial_model(datafit, x):
    """(coef (K, D), intercept (K,)) of the multinomial parameters x = (W.ravel(), b), on
    the columns of X as given where the datafit's X was centered or rescaled."""
    n_classes = datafit.penalty_weights.size // (datafit.n_features + datafit.fit_intercept)
    W, b = split_parameters(x, datafit.n_features, n_classes, datafit.fit_intercept)
    W = W * getattr(datafit, "scale", 1.0)
    offsets = getattr(datafit, "offsets", None)
    if offsets is not None:             # the intercepts of the columns of X as given
        b = b - offsets @ W
    return W.T.copy(), b - b.mean()   # a constant added to b changes no probability


class _GapCheck:
    """``confirm`` of :func:`~sparsekit.optimize.minimize_oba` for a fit: an iterate that
    meets ``tol`` is confirmed when the relative duality gap at it is at most GAP_CONFIRM
    or its measure at most ``floor``. Keeps F at the first iterate that met ``tol``
    (``first``) and the gap last computed (``gap``, at iteration ``nit``)."""

    def __init__(self, datafit, C, l1_ratio, floor):
        self.datafit, self.C, self.floor = datafit, C, floor
        self.penalty = penalty(datafit, l1_ratio)
        self.first = self.nit = None
        self.gap = np.nan

    def __call__(self, state):
        if self.first is None:
            self.first = state.fun
        if state.optimality <= self.floor:
            return True
        self.nit = state.nit
        self.gap = relative_duality_gap(self.datafit, state.x, self.C, *self.penalty)
        return self.gap <= GAP_CONFIRM


def _checked_solve(datafit, C, tol, max_iter, x0, verbose, l1_ratio, cg_maxiter=1000,
                   callback=None):
    """:func:`oba_solve` stopped at the first iterate that meets ``tol`` with a relative
    duality gap at most GAP_CONFIRM or a measure at most ``tol_floor`` (:class:`_GapCheck`);
    its result with the gap at x as ``duality_gap``, ``tol_floor`` and ``tol_excess``, the
    share of F that the iterations after the first to meet ``tol`` removed (a lower bound
    on how far that iterate lay above the minimum, as the gap is an upper one): 0 when
    that iterate was confirmed, NaN when none was within ``max_iter`` (or the solve
    stalled). Without the gradient ``jac``, which no caller reads."""
    # at most a tenth of the penalty weight 1/(C n): below it the solve must move w (a
    # weight of 0, which oba_solve refuses, has none)
    weight = C * datafit.n_samples
    tol_floor = min(tol / 100, 0.1 / weight) if weight > 0 else tol / 100
    check = _GapCheck(datafit, C, l1_ratio, tol_floor)
    res = oba_solve(datafit, C, tol, max_iter, x0, verbose, l1_ratio, cg_maxiter, callback,
                    confirm=check)
    res.pop("jac")
    res.duality_gap = (check.gap if check.nit == res.nit
                       else relative_duality_gap(datafit, res.x, C, *check.penalty))
    res.tol_floor = tol_floor
    res.tol_excess = 0.0 if check.first is None else (check.first - res.fun) / check.first
    if check.first is not None and res.status in (1, 2):   # met tol, never confirmed
        res.tol_excess = np.nan
    return res


def oba_solve(datafit, C, tol, max_iter, x0, verbose, l1_ratio=1.0, cg_maxiter=1000,
              callback=None, confirm=None):
    """OBA on ``datafit`` + (r‖w‖₁ + (1 − r)/2 ‖w‖²)/(C n) from ``x0`` (if None: w = 0 and
    the null model's intercepts); returns the OptimizeResult.

    The datafit does not depend on C: a path reuses one (its Lipschitz bound and layout).
    """
    weight = C * datafit.n_samples     # 0 where C times tiny weights underflows
    l1, l2 = penalty(datafit, l1_ratio)
    mu = l1 / weight if weight > 0 else np.inf
    if not 0 < mu < np.inf:
        size, fault, fix = (("large", "underflows", "smaller") if not mu > 0
                            else ("small", "overflows", "larger"))
        raise ValueError(f"C times the total sample weight, {weight:.3g}, is "
                         f"too {size}: the penalty's weight 1/(C sum(s)) {fault}; use a {fix} "
                         f"C or {fix} sample weights")
    if l2 > 0.0:
        datafit = Ridge(datafit, l2 / weight)
    x0 = null_start(datafit) if x0 is None else np.asarray(x0, dtype=np.float64)
    return minimize_oba(datafit.value_grad, datafit.hessp, x0, mu,
                        penalty_weights=datafit.penalty_weights,
                        lipschitz=datafit.lipschitz, tol=tol, max_iter=max_iter,
                        tau0_max=TAU0_MAX, tau_growth=TAU_GROWTH, tau_boost=TAU_BOOST,
                        reg_decay=REG_DECAY, cg_maxiter=cg_maxiter,
                        cg_maxiter_explicit=CG_MAXITER_EXPLICIT,
                        cg_rtol_explicit=CG_RTOL_EXPLICIT,
                        shift_invariant=datafit.shift_invariant, confirm=confirm,
                        callback=callback, verbose=max(verbose - 1, 0))


def penalty(datafit, l1_ratio):
    """(a, ρ): the solver's penalty a‖v‖₁ + (ρ/2)‖v‖² for the elastic net
    r‖w‖₁ + (1 − r)/2 ‖w‖² (r = ``l1_ratio``) of the weights w of X's columns as given.
    The datafit's X is X times s (its ``scale``, else 1) and its weights v = w / s: F / s,
    the problem the solve's C (already divided by s) poses, has a = r and ρ = (1 − r) s."""
    return l1_ratio, (1.0 - l1_ratio) * getattr(datafit, "scale", 1.0)


def null_start(datafit):
    """w = 0 and, when fitted, the intercepts (the unpenalized coordinates) optimal for it."""
    x0 = np.zeros(datafit.n_params)
    if datafit.fit_intercept:
        x0[datafit.penalty_weights == 0] = datafit.null_intercept()
    return x0


def centered_start(datafit, x0, multinomial):
    """A start ``x0`` (the parameters of X's columns as given) as the parameters of the
    datafit's X, whose columns may have been centered (its ``offsets``: the intercepts
    gain the weights' product with them) and multiplied by a power of two (its ``scale``:
    the weights are divided by it)."""
    offsets, scale = getattr(datafit, "offsets", None), getattr(datafit, "scale", 1.0)
    if offsets is None and scale == 1.0:
        return x0
    x0 = np.array(x0, dtype=np.float64)
    if offsets is not None:
        if multinomial:
            W, b = split_parameters(x0, datafit.n_features,
                                    x0.size // (datafit.n_features + 1), True)
            b += offsets @ W                    # views of x0
        else:
            x0[-1] += x0[:datafit.n_features] @ offsets
    if scale != 1.0:         # the weights, ahead of the intercepts
        n_rows = datafit.penalty_weights.size // (datafit.n_features + datafit.fit_intercept)
        x0[:datafit.n_features * n_rows] /= scale
    return x0
