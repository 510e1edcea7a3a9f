"""A SparsemaxClassifier fit's data as its solvers take it: X's weighted sums and the scales
they set (``alpha="scale"``, the solver variable's), the :class:`Problem` that the fits at
each alpha share, the model of a solver's point, and the coefficients' bounds on that
point."""
import numpy as np
from scipy.optimize import Bounds

from ..gpu.datafits import is_device_matrix
from ..losses._fenchel_young_datafit import by_rows
from ..losses._targets import label_set_matrix
from ..optimize._bounds import parse_bounds
from ..projections._checks import reflect_columns
from ..utils._rows import mostly_zeros, sparse_copy, unit_factors, weighted_scale_sums
from ._device_input import _host, device_scale_sums

#: ``alpha="scale"`` is this times the (sample-weighted) mean squared norm of X's rows
ALPHA_SCALE = 5e-5


def scale_sums(X, sw):
    """:func:`~sparsekit.utils._rows.weighted_scale_sums` of X, ``[Σ sᵢ ‖xᵢ‖², Σ sᵢ nnz(xᵢ),
    Σ sᵢ, squares..., counts...]``, with the weights ``sw`` divided by their largest (huge
    weights would overflow the sums); X is a NumPy or CuPy array or a SciPy or cupyx
    sparse matrix."""
    sw = np.asarray(_host(sw), dtype=np.float64)
    sw = sw / sw.max()
    return device_scale_sums(X, sw) if is_device_matrix(X) else weighted_scale_sums(X, sw)


def data_scales(sums, alpha):
    """``(alpha, scale, factors)`` for the estimator's ``alpha`` from X's weighted sums
    ``[Σ sᵢ ‖xᵢ‖², Σ sᵢ nnz(xᵢ), Σ sᵢ, squares..., counts...]`` (:func:`scale_sums`), each
    column's squares divided by its :func:`~sparsekit.utils._rows.unit_factors` squared:
    ``alpha`` as a number (for ``"scale"``, ``ALPHA_SCALE`` times the mean ‖xᵢ‖²;
    ``ALPHA_SCALE`` when X is 0), the root-mean-square of X's nonzero entries (1 when X is
    0) and the columns' factors (None: all 1). The solvers' variable holds the weights
    times ``scale * factors``."""
    if sums[1] > 0 and not sums[0] >= np.finfo(np.float64).tiny * sums[1]:
        raise ValueError("X's nonzero entries are so small (~1e-154 or less) that their "
                         "squares underflow float64; rescale the features (e.g. "
                         "MaxAbsScaler)")
    column_squares, column_counts = np.split(np.asarray(sums[3:]), 2)
    factors = unit_factors(column_squares, column_counts)
    squares = sums[0] if factors is None else float(np.sum(column_squares / factors ** 2))
    squares, nonzero, weight = (squares, *sums[1:3]) if squares > 0 else (1.0, 1.0, 1.0)
    alpha = ALPHA_SCALE * squares / weight if alpha == "scale" else float(alpha)
    return alpha, float(np.sqrt(squares / nonzero)), factors


def target_summary(y):
    """Of a partition's 2-D targets: whether they are label sets (every nonzero entry 1),
    and how many rows have no label."""
    Y, binary = label_set_matrix(y)
    return binary, int(np.sum(np.diff(Y.indptr) == 0))


#: the score offset of the two-class simplex fit as one box output (``_two_classes``)
TWO_CLASS_OFFSET = 0.5


def solution_model(datafit, x, columns, used):
    """``coef_`` and ``intercept_`` of the solver's point ``x``, in X's dtype (the solvers
    iterate in float64), the negated ``columns`` reflected back and the weights of the
    columns ``used`` left out set to 0; ``coef_`` Fortran-ordered: its transpose is the
    feature-major layout that the scores of CSR rows read. A datafit of one output is a
    two-class fit (``SparsemaxClassifier._two_classes``): the model ``[w, -w]``,
    ``[c, -c]``."""
    W, b = datafit.from_solver(x)
    if datafit.n_classes == 1:
        W, b = np.hstack([W, -W]), np.concatenate([b, -b])
    return {"coef_": used.expand(np.asfortranarray(reflect_columns(W, columns, 0).T,
                                                   dtype=datafit.dtype)),
            "intercept_": reflect_columns(b, columns, 0).astype(datafit.dtype)}


class Problem:
    """A fit's data as
    :meth:`~sparsekit.linear_model._sparsemax.SparsemaxClassifier._problem` validated and
    encoded it: the solvers' ``X`` and ``X_rows`` (its used columns), ``targets`` (CSR) on
    ``polytope`` with the score ``offset``, the negated ``columns``, the rows' weights
    ``sw`` (their largest 1), the :class:`~sparsekit.utils._columns.UsedColumns` ``used``,
    X's weighted ``sums``
    (:func:`scale_sums`), ``budget``; what the callbacks are shown, ``shown`` = (X, y,
    sample_weight); and ``Y``, the targets before the polytope's. Its datafits are made on
    first use and kept for the fits at other alphas: one for SDCA, one for the others
    (which center the intercept's column and scale each column by its own factor)."""

    def __init__(self, X, X_rows, targets, sw, polytope, offset, columns, used, sums, budget,
                 shown, Y):
        self.X, self.X_rows, self.targets, self.sw = X, X_rows, targets, sw
        self.polytope, self.offset, self.columns, self.used = polytope, offset, columns, used
        self.sums, self.budget, self.shown, self.Y = sums, budget, shown, Y
        self._datafits, self._sdca_rows = {}, None

    def sdca_rows(self):
        """X as SDCA walks it: its row updates read the rows' nonzero entries, so a dense X
        of mostly zeros (:func:`~sparsekit.utils._rows.mostly_zeros`) is its CSR copy
        (made on first use), whatever the data term of the other solvers reads."""
        if self._sdca_rows is None:
            X = self.X
            self._sdca_rows = (sparse_copy(X) if isinstance(X, np.ndarray) and mostly_zeros(X)
                               else X)
        return self._sdca_rows

    def datafit(self, sdca, make):
        """The datafit for SDCA (``sdca``) or the other solvers: ``make()`` on first use."""
        if sdca not in self._datafits:
            self._datafits[sdca] = make()
        return self._datafits[sdca]


def coefficient_bounds(bounds, positive, n_features, n_classes, columns=(), weight_scale=1.0):
    """The estimator's ``positive``/``bounds`` as a ``Bounds`` on the solver variable (the
    weights times ``weight_scale``, one factor or one per column), or None."""
    if bounds is None and not positive:
        return None
    if bounds is not None and positive:
        raise ValueError("Give either positive=True or bounds, not both.")
    if positive:
        lower, upper = 0.0, None
    else:
        if len(bounds) != 2:
            raise ValueError("bounds must be a pair (lower, upper).")
        lower, upper = bounds
    shape = (n_classes, n_features)
    try:
        lo = np.broadcast_to(-np.inf if lower is None else np.asarray(lower, float), shape)
        hi = np.broadcast_to(np.inf if upper is None else np.asarray(upper, float), shape)
    except ValueError:
        raise ValueError(f"bounds: each of lower and upper must be None, a scalar or "
                         f"broadcastable to (n_classes, n_features) = {shape}.") from None
    if columns:  # the solver's coefficient rows of N are -coef_: [-upper, -lower]
        lo, hi = np.array(lo), np.array(hi)
        lo[columns], hi[columns] = -hi[columns], -lo[columns]
    free = np.full(n_classes, np.inf)
    solver_bounds = Bounds(np.concatenate([(lo.T * by_rows(weight_scale)).ravel(), -free]),
                           np.concatenate([(hi.T * by_rows(weight_scale)).ravel(), free]))
    parse_bounds(solver_bounds, solver_bounds.lb.size)  # NQN's checks: NaN, lower > upper...
    return solver_bounds
