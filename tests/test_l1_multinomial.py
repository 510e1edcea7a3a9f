"""L1LogisticOBA(multiclass="multinomial") and l1_ratio (elastic net): the objectives of
scikit-learn's saga, solved by OBA."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from sparsekit.linear_model import L1LogisticOBA
from sparsekit.losses._logistic_datafit import Logistic
from sparsekit.losses._ridge_datafit import Ridge


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _objective(X, y, coef, intercept, C, l1_ratio=1.0, sample_weight=None):
    """scikit-learn's multinomial objective: C Σ sᵢ NLL + r‖W‖₁ + (1 − r)/2 ‖W‖²."""
    sw = np.ones(len(y)) if sample_weight is None else sample_weight
    Z = np.asarray(X @ coef.T) + intercept
    codes = np.searchsorted(np.unique(y), y)
    nll = logsumexp(Z, axis=1) - Z[np.arange(len(y)), codes]
    return (C * float(sw @ nll) + l1_ratio * np.abs(coef).sum()
            + 0.5 * (1 - l1_ratio) * float((coef * coef).sum()))


def _saga(X, y, C, l1_ratio=1.0, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(C=C, l1_ratio=l1_ratio, solver="saga", tol=1e-12,
                                  max_iter=50_000, **kw).fit(X, y)


@pytest.mark.parametrize("C,l1_ratio", [(0.05, 1.0), (1.0, 1.0), (0.3, 0.5)])
def test_multinomial_reaches_the_objective_of_saga(wine, C, l1_ratio):
    """Same objective as saga at tight tolerance (relative 1e-8, neither lower), with a
    duality gap that certifies it; softmax probabilities."""
    X, y = wine
    est = L1LogisticOBA(C=C, multiclass="multinomial", l1_ratio=l1_ratio, tol=1e-12).fit(X, y)
    saga = _saga(X, y, C, l1_ratio)
    ours = _objective(X, y, est.coef_, est.intercept_, C, l1_ratio)
    theirs = _objective(X, y, saga.coef_, saga.intercept_, C, l1_ratio)
    assert abs(ours - theirs) <= 1e-8 * theirs
    assert est.coef_.shape == (3, 13) and est.n_iter_.shape == (1,)
    assert -1e-12 <= est.duality_gap_[0] < 1e-8      # rounding: a few ulps below 0
    Z = X @ est.coef_.T + est.intercept_
    np.testing.assert_allclose(est.predict_proba(X), np.exp(Z - logsumexp(Z, 1, keepdims=True)),
                               rtol=1e-10)
    if l1_ratio == 1.0 and C == 0.05:
        assert (est.coef_ == 0).mean() > 0.3          # the ℓ1 penalty makes zeros


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_formed_and_matrix_free_hessians_reach_the_same_model(wine, monkeypatch, sparse,
                                                              l1_ratio):
    """Newton steps on formed subspace Hessians (every one), on matrix-free products only
    (CG preconditioned by the diagonal), and for a sparse X on matrix-free products with
    the class-block preconditioner from the first step: the same minimizer, to the
    tolerance."""
    from sparsekit.losses._multinomial_datafit import Multinomial

    X, y = wine
    X = sp.csr_matrix(X) if sparse else X
    routes = {"formed": {"formed_worth": np.inf},
              "matrix-free": {"max_explicit": 0, "block_worth": 0.0}}
    if sparse:
        routes["class blocks"] = {"max_explicit": 0, "block_after": 0,
                                  "block_worth": np.inf}
    fits = {}
    for route, settings in routes.items():
        for attribute, value in settings.items():
            monkeypatch.setattr(Multinomial, attribute, value)
        fits[route] = L1LogisticOBA(C=2.0, multiclass="multinomial", l1_ratio=l1_ratio,
                                    tol=1e-11).fit(X, y)
        monkeypatch.undo()
    a = fits["formed"]
    for b in fits.values():
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-7)
        assert _objective(X, y, a.coef_, a.intercept_, 2.0, l1_ratio) == pytest.approx(
            _objective(X, y, b.coef_, b.intercept_, 2.0, l1_ratio), rel=1e-12)


@pytest.mark.parametrize("l1_ratio", [1.0, 0.4])
def test_binary_elastic_net_reaches_the_objective_of_saga(wine, l1_ratio):
    X, y = wine
    y = (y == 1).astype(int)
    est = L1LogisticOBA(C=0.5, l1_ratio=l1_ratio, tol=1e-12).fit(X, y)
    saga = _saga(X, y, 0.5, l1_ratio)

    def F(coef, b):
        m = np.where(y == 1, 1.0, -1.0) * (X @ coef.ravel() + b)
        return (0.5 * float(np.logaddexp(0.0, -m).sum()) + l1_ratio * np.abs(coef).sum()
                + 0.5 * (1 - l1_ratio) * float((coef * coef).sum()))
    ours, theirs = F(est.coef_, est.intercept_[0]), F(saga.coef_, saga.intercept_[0])
    assert abs(ours - theirs) <= 1e-8 * theirs
    assert -1e-12 <= est.duality_gap_[0] < 1e-8      # rounding: a few ulps below 0


def test_two_classes_make_the_binary_problem_whatever_multiclass(wine):
    X, y = wine
    y = (y == 1).astype(int)
    a = L1LogisticOBA(multiclass="multinomial").fit(X, y)
    b = L1LogisticOBA().fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_multinomial_weights_sparse_float32_and_warm_start(wine):
    """Integer sample weights are repeated rows; class weights are sample weights; sparse
    and float32 input reach the same model; a warm start from the solution stays there."""
    X, y = wine
    rng = np.random.default_rng(0)
    w = rng.integers(1, 4, len(y))
    kw = dict(C=0.2, multiclass="multinomial", tol=1e-11)
    weighted = L1LogisticOBA(**kw).fit(X, y, sample_weight=w)
    repeated = L1LogisticOBA(**kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-6, atol=1e-8)
    cw = {0: 2.0, 1: 1.0, 2: 0.5}
    by_class = L1LogisticOBA(class_weight=cw, **kw).fit(X, y)
    by_sample = L1LogisticOBA(**kw).fit(X, y, sample_weight=np.vectorize(cw.get)(y))
    np.testing.assert_allclose(by_class.coef_, by_sample.coef_, rtol=1e-6, atol=1e-8)
    sparse = L1LogisticOBA(**kw).fit(sp.csr_matrix(X), y)
    dense = L1LogisticOBA(**kw).fit(X, y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-7, atol=1e-9)
    for Xs in (sp.csr_matrix(X), X):   # threads split the products, not the sums
        threaded = L1LogisticOBA(n_jobs=2, **kw).fit(Xs, y)
        np.testing.assert_array_equal(threaded.coef_, L1LogisticOBA(**kw).fit(Xs, y).coef_)
    single = L1LogisticOBA(**kw).fit(X.astype(np.float32), y)
    assert single.coef_.dtype == np.float32
    np.testing.assert_allclose(single.coef_, dense.coef_, rtol=1e-3, atol=1e-4)
    warm = L1LogisticOBA(warm_start=True, **kw).fit(X, y)
    warm.fit(X, y)
    assert warm.n_iter_[0] <= 1
    np.testing.assert_allclose(warm.coef_, dense.coef_, rtol=1e-7, atol=1e-9)


def test_ridge_adds_its_diagonal_to_every_operator_of_the_binary_datafit():
    """The elastic net's ridge on the binary datafit: the formed and the matrix-free
    Hessians, their diagonals, restrictions and quadratic forms all get λ on w only."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 6))
    y = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    plain = Logistic(X, y, fit_intercept=True)
    ridge = Ridge(Logistic(X, y, fit_intercept=True), 0.3)
    x = rng.normal(size=7)
    f0, g0 = plain.value_grad(x)
    f1, g1 = ridge.value_grad(x)
    assert f1 == pytest.approx(f0 + 0.15 * float(x[:6] @ x[:6]), rel=1e-14)
    np.testing.assert_allclose(g1, g0 + 0.3 * np.r_[x[:6], 0.0], rtol=1e-14)
    free = np.array([0, 2, 3, 6])
    d = 0.3 * np.array([1.0, 1.0, 1.0, 0.0])
    for explicit in (True, False):
        plain.max_explicit = ridge.datafit.max_explicit = 3000 if explicit else 0
        H0, H1 = plain.hessp(x, free), ridge.hessp(x, free)
        assert H1.is_explicit == H0.is_explicit == explicit
        v = rng.normal(size=4)
        np.testing.assert_allclose(H1(v), H0(v) + d * v, rtol=1e-12)
        np.testing.assert_allclose(H1.diagonal(), H0.diagonal() + d, rtol=1e-12)
        keep = np.array([True, False, True, True])
        np.testing.assert_allclose(H1.restrict(keep)(v[keep]),
                                   H0.restrict(keep)(v[keep]) + d[keep] * v[keep], rtol=1e-12)
        if explicit:
            np.testing.assert_allclose(H1.matrix, H0.matrix + np.diag(d), rtol=1e-14)
        pos = np.array([0, 3])
        assert H1.quadratic_form(pos, v[pos]) == pytest.approx(
            H0.quadratic_form(pos, v[pos]) + float(v[pos] @ (d[pos] * v[pos])), rel=1e-12)
    assert ridge.lipschitz() == pytest.approx(plain.lipschitz() + 0.3)


def test_l1_ratio_out_of_range_is_refused(wine):
    X, y = wine
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="l1_ratio"):
            L1LogisticOBA(l1_ratio=bad).fit(X, y)
    with pytest.raises(ValueError, match="multiclass"):
        L1LogisticOBA(multiclass="crammer_singer").fit(X, y)


def test_multinomial_path_is_the_fits_at_each_C(wine):
    """The path's solutions are the estimator's, its first C the smallest with a nonzero
    weight (below it W = 0), for the multinomial model and the elastic net."""
    from sparsekit.linear_model import l1_logistic_path

    X, y = wine
    coefs, Cs, n_iter = l1_logistic_path(X, y, Cs=4, multiclass="multinomial", l1_ratio=0.7,
                                         tol=1e-11)
    assert coefs.shape == (4, 3, 14) and n_iter.shape == (4,)
    assert np.count_nonzero(coefs[0, :, :-1]) <= 3 and np.count_nonzero(coefs[1, :, :-1]) > 0
    below = L1LogisticOBA(C=0.99 * Cs[0], multiclass="multinomial", l1_ratio=0.7).fit(X, y)
    assert np.count_nonzero(below.coef_) == 0
    for k in (1, 3):
        est = L1LogisticOBA(C=Cs[k], multiclass="multinomial", l1_ratio=0.7, tol=1e-11).fit(X, y)
        np.testing.assert_allclose(coefs[k, :, :-1], est.coef_, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(coefs[k, :, -1], est.intercept_, rtol=1e-5, atol=1e-6)
        assert abs(est.intercept_.sum()) < 1e-12
    with pytest.raises(ValueError, match="pos_class"):
        l1_logistic_path(X, y, multiclass="multinomial", pos_class=1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_multinomial_fit_on_csr_reads_the_callers_rows(monkeypatch, dtype):
    """The multinomial datafit walks rows (its formed Hessians, its products with many
    classes) in X's CSR layout: that of a CSR input, not a copy of the solver's CSC one
    (a whole copy of X: MNIST's fit allocated 4.5 times X's size, now 3.5), and the same
    model as from CSC input (which keeps its copy made on first use)."""
    from sparsekit.losses import _multinomial_datafit

    made = []
    init = _multinomial_datafit.Multinomial.__init__

    def recorded(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(_multinomial_datafit.Multinomial, "__init__", recorded)
    rng = np.random.default_rng(0)
    X = sp.random(300, 30, density=0.3, format="csr", random_state=0, dtype=dtype)
    y = rng.integers(0, 4, 300)
    est = L1LogisticOBA(C=5.0, multiclass="multinomial").fit(X, y)
    assert len(made) == 1 and made[0]._Xr is not None
    assert np.shares_memory(made[0]._Xr.data, X.data)
    twin = L1LogisticOBA(C=5.0, multiclass="multinomial").fit(X.tocsc(), y)
    np.testing.assert_array_equal(est.coef_, twin.coef_)


def _counted(n_rows, n_columns, n_classes, fit_intercept=True, kept=0, solves=1):
    """The bytes the check before a multinomial fit counts, with ``kept`` solutions and
    ``solves`` solves at a time."""
    from sparsekit.linear_model._l1_problems import MULTINOMIAL_ARRAYS as arrays
    return 8 * n_classes * ((solves * arrays["weights"] + kept) * (n_columns + fit_intercept)
                            + solves * arrays["rows"] * n_rows)


def _path(X, y):
    from sparsekit.linear_model import l1_logistic_path
    return l1_logistic_path(X, y, Cs=3, multiclass="multinomial")


def _cv(X, y, sparse_coef=False, n_jobs=None):
    from sparsekit.linear_model import L1LogisticOBACV
    return L1LogisticOBACV(Cs=3, cv=2, multiclass="multinomial", sparse_coef=sparse_coef,
                           n_jobs=n_jobs).fit(X, y)


@pytest.mark.parametrize("fit, kept, solves", [
    (None, 0, 1),                                           # the estimator below
    (_path, 3, 1),                                          # its 3 solutions
    (_cv, 9, 1),                     # 2 folds x 3 Cs stored, a path's 3 as they arrive
    (lambda X, y: _cv(X, y, sparse_coef=True), 3, 1),       # nonzeros stored
    (lambda X, y: _cv(X, y, n_jobs=2), 12, 2),              # two paths at a time
])
def test_a_multinomial_fit_that_would_not_fit_in_memory_is_refused_before_it_starts(
        monkeypatch, fit, kept, solves):
    """The multinomial solver holds arrays of its weights' size and of rows x classes (the
    coef_ check allows up to half the memory for one), a path and a CV its solutions beside
    them, a CV with n_jobs as many solves as it runs at a time: a fit whose arrays would
    exceed the machine's memory (the OS would kill the process during it) is refused at the
    start, by the estimator, the path and the CV estimator, naming the one-vs-rest remedy,
    which fits; the estimator stays unfitted."""
    import sparsekit.linear_model._l1_problems as l1

    rng = np.random.default_rng(0)
    X = sp.random(90, 400, density=0.02, random_state=1, format="csr")
    y = rng.integers(0, 3, 90)
    used = np.count_nonzero(X.getnnz(axis=0))      # the solve leaves the empty columns out
    counted = _counted(90, used, 3, kept=kept, solves=solves)
    monkeypatch.setattr(l1, "physical_memory", lambda: counted - 1)
    arrays = l1.MULTINOMIAL_ARRAYS
    at_once = (f" \\({solves} solves at a time: fewer n_jobs run fewer\\)" if solves > 1
               else "")
    held = (f", {kept} of them the solutions kept \\(fewer C values keep fewer\\),"
            if kept else "")
    message = (rf"the multinomial fit{at_once} would hold at least 0.0 GiB, about "
               rf"{solves * arrays['weights'] + kept} arrays of its 0 MiB of weights "
               rf"\({used:,} columns x 3 classes\){held} and {solves * arrays['rows']} of 90 "
               r"rows x 3 classes, more than this machine's 0.0 GiB: use multiclass='ovr'")
    clf = L1LogisticOBA(multiclass="multinomial")
    with pytest.raises(ValueError, match=message):
        (fit or clf.fit)(X, y)
    assert not hasattr(clf, "coef_")
    assert clf.set_params(multiclass="ovr").fit(X, y).coef_.shape == (3, 400)
    monkeypatch.setattr(l1, "physical_memory", lambda: counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        (fit or clf.set_params(multiclass="multinomial").fit)(X, y)


@pytest.mark.parametrize("n_rows, n_columns, n_classes, low", [
    (1000, 20_000, 20, 0.85),    # weights of 1.9 MiB, rows x classes of 0.15
    (5000, 12_000, 20, 0.85),    # weights of 1.8 MiB, rows x classes of 0.76
])
def test_the_multinomial_fit_holds_at_most_its_counted_arrays(n_rows, n_columns, n_classes,
                                                             low):
    """The peak a multinomial fit allocates, on models far larger than X whose free sets
    stay small, is within the arrays that the check before a fit counts, and the count is
    not far above it. A failed trial point's gradient is released before the next trial's
    is made (on the first model: 13.9 arrays of the weights when it was held, 12.8 now)."""
    from _memory import peak_allocated

    X = sp.random(n_rows, n_columns, density=20 / n_columns, format="csr", random_state=0)
    X = sp.csr_matrix(X[:, np.flatnonzero(X.getnnz(axis=0))])
    y = np.arange(n_rows) % n_classes
    clf = L1LogisticOBA(C=1.0, multiclass="multinomial", max_iter=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, peak = peak_allocated(lambda: clf.fit(X, y))
    assert clf.n_iter_[0] > 2
    assert low < peak / _counted(n_rows, X.shape[1], n_classes) < 1.0


def test_a_multinomial_path_holds_one_array_of_the_weights_per_C():
    """A path holds the solver's arrays and its solutions, one per C: each solve's point
    and gradient are released once its solution is written (they were held to the end,
    three arrays of the weights' size per C). Four more C values, at the last one (solves
    that start at their solution), hold four arrays more."""
    from _memory import peak_allocated

    from sparsekit.linear_model import l1_logistic_path

    X = sp.random(1000, 20_000, density=0.001, format="csr", random_state=0)
    X = sp.csr_matrix(X[:, np.flatnonzero(X.getnnz(axis=0))])
    y = np.arange(1000) % 20
    weights = 8 * 20 * (X.shape[1] + 1)
    peaks = []
    for Cs in ([1.0, 1.2, 1.4, 1.6], [1.0, 1.2, 1.4, 1.6] + [1.6] * 4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            (coefs, _, n_iter), peak = peak_allocated(
                lambda: l1_logistic_path(X, y, Cs=Cs, multiclass="multinomial", max_iter=15))
        assert np.all(n_iter[:4] > 2) and np.all(n_iter[4:] == 0)
        peaks.append(peak / weights)
    np.testing.assert_allclose(peaks[1] - peaks[0], 4.0, atol=0.5)
    assert peaks[0] < _counted(1000, X.shape[1], 20, kept=4) / weights
