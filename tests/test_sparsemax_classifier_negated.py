"""SparsemaxClassifier(negated=N): fits over the negated polytope flip(M).

With flip(p)_k = 1 - p_k on N (notes/lp_sparsemap.md Prop. 7 / Cor. 7.1) the loss is
L_{flip M}(z; y) = L_M(flip z; flip y) and flip z = L z + flip(0), L = diag(+-1) (-1 on N).
Checked against an independent description (NAND = budget K - 1), the change of variables
(the un-negated fit on flipped targets), the optimality conditions of the negated
objective, a direct minimization of it (the cases where the offset flip(0) matters), the
constraints of flip(M) written out, bounds, invalid input, scikit-learn API, float32 and
the device="cuda" path (with a NumPy stand-in for CuPy, and on a real GPU when present).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from _gpu import cupy_imports_of
from sparsekit.linear_model import SparsemaxClassifier
from sparsekit.losses import fenchel_young_loss, fenchel_young_loss_and_grad
from sparsekit.projections import project

K = 4
BUDGET = 2
POLYTOPES = ["simplex", "budget", "box", "at_most_one", "at_least_one"]
MASK = np.array([True, False, True, False])
SOLVERS = ["lbfgs", "newton-cg", "nqn", "sdca"]
TIGHT = dict(alpha=0.1, tol=1e-10, max_iter=5000)


def _has_nqn():
    try:
        from sparsekit.optimize import minimize_nqn  # noqa: F401
    except ImportError:
        return False
    return True


def solvers(names=SOLVERS):
    return [pytest.param(s, marks=pytest.mark.skipif(
        s == "nqn" and not _has_nqn(), reason="minimize_nqn not available")) for s in names]


def flip(Y, mask):
    """Reference flip, written independently of the package: 1 - y on the mask."""
    return np.where(np.asarray(mask, bool), 1 - np.asarray(Y, float), Y)


def signs(mask):
    return np.where(mask, -1.0, 1.0)


def polytope_params(polytope):
    return {"budget": BUDGET} if polytope == "budget" else {}


def rows_in(polytope, n, rng):
    """n random 0/1 rows of the un-negated polytope M (K columns)."""
    if polytope == "simplex":
        return np.eye(K)[rng.integers(K, size=n)]
    ok = {"budget": lambda s: s <= BUDGET, "box": lambda s: s >= 0,
          "at_most_one": lambda s: s <= 1, "at_least_one": lambda s: s >= 1}[polytope]
    Y = (rng.random((20 * n, K)) < 0.4).astype(float)
    return Y[ok(Y.sum(axis=1))][:n]


def data(polytope="at_least_one", mask=MASK, n=150, d=5, seed=0):
    """X (with a nonzero feature mean) and targets of flip(M): Y = flip(rows of M)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + 0.5
    return X, flip(rows_in(polytope, n, rng), mask)


def objective(clf, X, Y):
    """The negated problem's objective at clf's coefficients, from the loss functions."""
    Z = X @ clf.coef_.T + clf.intercept_
    loss = fenchel_young_loss(Z, Y, clf.polytope, negated=clf.negated,
                              **polytope_params(clf.polytope))
    f = loss.mean() + 0.5 * clf.alpha_ * np.sum(clf.coef_ ** 2)
    return f + 0.5 * clf.alpha_ * np.sum(clf.intercept_ ** 2) * clf.penalize_intercept


def in_negated_polytope(P, polytope, mask, tol=1e-9):
    """Rows of P in flip(M), with M's constraints written on sum_k flip(p)_k."""
    total = P @ signs(mask) + mask.sum()  # = sum_{k not in N} p_k + sum_{k in N} (1 - p_k)
    box = np.all((P >= -tol) & (P <= 1 + tol), axis=1)
    linear = {"simplex": np.abs(total - 1) <= tol, "budget": total <= BUDGET + tol,
              "box": np.ones(len(P), bool), "at_most_one": total <= 1 + tol,
              "at_least_one": total >= 1 - tol}[polytope]
    return box & linear


def assert_stationary(clf, X, Y, atol=1e-6):
    """Optimality of the negated objective with the targets Y taken as they are: the
    gradient of L_{flip M}(z; y) in z is predict_proba - y (free intercept, no bounds)."""
    G = clf.predict_proba(X) - Y
    assert_allclose(G.T @ X / len(X) + clf.alpha_ * clf.coef_, 0, atol=atol)
    assert_allclose(G.mean(axis=0), 0, atol=atol)


# ------------------------------------------------ 1. an independent description: NAND

@pytest.mark.parametrize("solver", solvers())
def test_nand_is_the_budget_polytope_k_minus_one(solver):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6)) + 0.3
    Y = (rng.random((200, K)) < 0.6).astype(float)
    Y[Y.sum(axis=1) == K, rng.integers(K)] = 0  # NAND: never all labels
    nand = SparsemaxClassifier(polytope="at_least_one", negated=np.ones(K, bool),
                               solver=solver, **TIGHT).fit(X, Y)
    budget = SparsemaxClassifier(polytope="budget", budget=K - 1, solver=solver,
                                 **TIGHT).fit(X, Y)
    scale = abs(budget.coef_).max()
    assert_allclose(nand.coef_, budget.coef_, rtol=1e-6, atol=1e-6 * scale)
    assert_allclose(nand.intercept_, budget.intercept_, rtol=1e-6, atol=1e-7)
    assert_allclose(nand.predict_proba(X), budget.predict_proba(X), atol=1e-7)
    assert np.all(nand.predict_proba(X).sum(axis=1) <= K - 1 + 1e-12)


# ------------------------------------------------------------ 2. change of variables

@pytest.mark.parametrize("solver", solvers(["lbfgs", "newton-cg", "sdca"]))
@pytest.mark.parametrize("polytope", POLYTOPES)
def test_fit_is_the_unnegated_fit_on_flipped_targets(polytope, solver):
    X, Y = data(polytope)
    kw = dict(polytope=polytope, solver=solver, **polytope_params(polytope), **TIGHT)
    neg = SparsemaxClassifier(negated=MASK, **kw).fit(X, Y)
    plain = SparsemaxClassifier(**kw).fit(X, flip(Y, MASK))
    # scores: flip(z) = L z + flip(0), so coef columns of N are negated and the intercept
    # is flipped (on the simplex only up to t * L 1: the loss ignores a shift of flip(z))
    assert_allclose(neg.coef_, signs(MASK)[:, None] * plain.coef_, atol=1e-7)
    gap = neg.intercept_ - flip(plain.intercept_, MASK)
    if polytope == "simplex":
        gap -= (gap @ signs(MASK) / K) * signs(MASK)
    assert_allclose(gap, 0, atol=1e-7)
    assert objective(neg, X, Y) == pytest.approx(objective(plain, X, flip(Y, MASK)),
                                                 rel=1e-10)
    assert_allclose(neg.predict_proba(X), flip(plain.predict_proba(X), MASK), atol=1e-7)
    assert_stationary(neg, X, Y)


@pytest.mark.parametrize("solver", solvers())
@pytest.mark.parametrize("polytope", ["at_least_one", "budget", "simplex"])
@pytest.mark.parametrize("setting", [dict(fit_intercept=False),
                                     dict(penalize_intercept=True)])
def test_fixed_offset_cases_minimize_the_negated_objective(setting, polytope, solver):
    # no intercept, or a penalized one: the offset flip(0) cannot hide in the intercept
    X, Y = data(polytope, n=100)
    clf = SparsemaxClassifier(polytope=polytope, negated=MASK, solver=solver, **setting,
                              **polytope_params(polytope), **TIGHT).fit(X, Y)
    d, fit_b = X.shape[1], setting.get("fit_intercept", True)

    def fun(theta):  # written from the negated loss, independently of the classifier
        W, b = theta[:K * d].reshape(K, d), theta[K * d:] * fit_b
        loss, G = fenchel_young_loss_and_grad(X @ W.T + b, Y, polytope, negated=MASK,
                                              **polytope_params(polytope))
        f = loss.mean() + 0.05 * (theta @ theta)
        return f, np.r_[(G.T @ X / len(X)).ravel(), G.mean(axis=0) * fit_b] + 0.1 * theta

    ref = minimize(fun, np.zeros(K * (d + 1)), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-11, "ftol": 1e-15, "maxiter": 5000}).x
    assert_allclose(clf.coef_, ref[:K * d].reshape(K, d), atol=1e-6)
    assert_allclose(clf.intercept_, ref[K * d:] * fit_b, atol=1e-6)


@pytest.mark.parametrize("solver", solvers())
@pytest.mark.parametrize("seed", [0, 513])
def test_warm_start_restarts_at_the_solution(solver, seed):
    """sdca's epoch-wise stop can take 2-3 epochs from the solution, depending on its
    permutation (seed 513: 3 epochs against 26 for the first fit)."""
    X, Y = data()
    clf = SparsemaxClassifier(polytope="at_least_one", negated=MASK, solver=solver,
                              warm_start=True, alpha=0.1, tol=1e-8, random_state=seed).fit(X, Y)
    coef, first = clf.coef_.copy(), clf.n_iter_
    clf.fit(X, Y)
    assert clf.n_iter_ <= (3 if solver == "sdca" else 1) < first
    assert_allclose(clf.coef_, coef, atol=1e-7)


# --------------------------------------------------------------- 3. no negation

@pytest.mark.parametrize("solver", solvers())
@pytest.mark.parametrize("polytope", ["simplex", "budget"])
def test_no_negation_is_the_plain_fit_bitwise(polytope, solver):
    X, Y = data(polytope, mask=np.zeros(K, bool))
    kw = dict(polytope=polytope, solver=solver, alpha=0.1, random_state=0,
              **polytope_params(polytope))
    plain = SparsemaxClassifier(**kw).fit(X, Y)
    for negated in (None, np.zeros(K, bool), [0] * K):
        clf = SparsemaxClassifier(negated=negated, **kw).fit(X, Y)
        assert_array_equal(clf.coef_, plain.coef_)
        assert_array_equal(clf.intercept_, plain.intercept_)
        assert_array_equal(clf.predict_proba(X), plain.predict_proba(X))
    bounded = dict(kw, solver="lbfgs", positive=True)
    assert_array_equal(SparsemaxClassifier(negated=[False] * K, **bounded).fit(X, Y).coef_,
                       SparsemaxClassifier(**bounded).fit(X, Y).coef_)


# --------------------------------------------------- 4. predictions lie in flip(M)

@pytest.mark.parametrize("polytope", POLYTOPES)
def test_predict_proba_lies_in_the_negated_polytope(polytope):
    X, Y = data(polytope)
    clf = SparsemaxClassifier(polytope=polytope, negated=MASK, alpha=0.01,
                              **polytope_params(polytope)).fit(X, Y)
    X_new = np.random.default_rng(5).normal(size=(300, X.shape[1])) * 3
    P = clf.predict_proba(X_new)
    assert in_negated_polytope(P, polytope, MASK).all()
    assert_array_equal(P, project(clf.decision_function(X_new), polytope, negated=MASK,
                                  **polytope_params(polytope)))
    assert_array_equal(clf.predict(X_new), P > (0.0 if polytope == "simplex" else 0.5))
    if polytope != "box":  # flip(box) = box; elsewhere flip(M) differs from M
        assert not in_negated_polytope(P, polytope, np.zeros(K, bool)).all()


def test_box_is_its_own_negation():
    X, Y = data("box")
    neg = SparsemaxClassifier(polytope="box", negated=MASK, **TIGHT).fit(X, Y)
    plain = SparsemaxClassifier(polytope="box", **TIGHT).fit(X, Y)
    assert_allclose(neg.coef_, plain.coef_, atol=1e-8)
    assert_allclose(neg.predict_proba(X), plain.predict_proba(X), atol=1e-8)


def test_negated_simplex_takes_indicator_rows_as_they_are():
    # all negated, the simplex is {0 <= p <= 1, sum p = K - 1}: its 0/1 points have one
    # inactive label; they are targets as they are, not spread over the active labels
    mask = np.ones(K, bool)
    X, Y = data("simplex", mask=mask)
    assert_array_equal(Y.sum(axis=1), K - 1)
    clf = SparsemaxClassifier(negated=mask, **TIGHT).fit(X, Y)
    assert clf.target_type_ == "multilabel"
    assert_allclose(clf.predict_proba(X).sum(axis=1), K - 1, atol=1e-12)
    assert_stationary(clf, X, Y)
    # rows valid for the un-negated reading (spread, or dropped when empty) are rejected
    for row in ([1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]):
        Y_bad = Y.copy()
        Y_bad[3] = row
        with pytest.raises(ValueError, match=r"negated.*one active label.*rows \[3\]"):
            SparsemaxClassifier(negated=mask).fit(X, Y_bad)
    # proportions: flip(y) on the simplex
    rng = np.random.default_rng(3)
    Q = flip(rng.dirichlet(np.ones(K), size=len(X)), MASK)
    prop = SparsemaxClassifier(negated=MASK, **TIGHT).fit(X, Q)
    assert prop.target_type_ == "proportions"
    assert_stationary(prop, X, Q)


# ------------------------------------------------------------------ 5. bad input

@pytest.mark.parametrize("negated, match", [
    ([True, False, True], r"shape \(4,\)"),
    ([[True, False, True, False]], r"shape \(4,\)"),
    ([0, 2, 1, 0], "booleans"),
    ([0.0, np.nan, 1.0, 0.0], "booleans"),
    (["a", "b", "c", "d"], "booleans"),
    (sp.csr_matrix(np.array([[1, 0, 1, 0]])), "sparse"),
    (True, "negated"),
])
def test_invalid_masks_raise(negated, match):
    X, Y = data()
    with pytest.raises(ValueError, match=match):
        SparsemaxClassifier(polytope="at_least_one", negated=negated).fit(X, Y)


@pytest.mark.parametrize("polytope", ["budget", "at_most_one", "at_least_one", "simplex"])
def test_targets_outside_the_negated_polytope_raise(polytope):
    X, Y = data(polytope)
    outside = np.ones(K) if polytope in ("budget", "at_most_one") else np.zeros(K)
    Y[7] = flip(outside, MASK)  # flip(y) = outside is not in M
    with pytest.raises(ValueError, match=rf"{polytope}.*negated.*rows \[7\]"):
        SparsemaxClassifier(polytope=polytope, negated=MASK,
                            **polytope_params(polytope)).fit(X, Y)


def test_class_labels_with_negation_raise():
    X, _ = data()
    y = np.arange(len(X)) % K
    with pytest.raises(ValueError, match="2-D targets"):
        SparsemaxClassifier(negated=MASK).fit(X, y)
    SparsemaxClassifier(negated=np.zeros(K, bool)).fit(X, y)  # nothing negated: fine


# ------------------------------------------------------- 6. bounds in user coordinates

@pytest.mark.parametrize("solver", solvers(["lbfgs", "nqn"]))
def test_positive_and_bounds_hold_in_user_coordinates(solver):
    X, Y = data()
    kw = dict(polytope="at_least_one", solver=solver, **TIGHT)
    pos = SparsemaxClassifier(negated=MASK, positive=True, **kw).fit(X, Y)
    assert (pos.coef_ >= 0).all()
    assert (pos.coef_[MASK] == 0).any() and (pos.coef_[MASK] > 0).any()
    lower, upper = -0.02, 0.03
    box = SparsemaxClassifier(negated=MASK, bounds=(lower, upper), **kw).fit(X, Y)
    assert ((box.coef_ >= lower) & (box.coef_ <= upper)).all()
    assert (box.coef_[MASK] == lower).any() and (box.coef_[MASK] == upper).any()
    # the un-negated fit on flipped targets with the bounds reflected on the rows of N
    for clf, (lo, hi) in ((pos, (0.0, np.inf)), (box, (lower, upper))):
        lo_r = np.where(MASK[:, None], -hi, lo) * np.ones((K, X.shape[1]))
        hi_r = np.where(MASK[:, None], -lo, hi) * np.ones((K, X.shape[1]))
        ref = SparsemaxClassifier(bounds=(lo_r, hi_r), **kw).fit(X, flip(Y, MASK))
        assert_allclose(clf.coef_, signs(MASK)[:, None] * ref.coef_, atol=1e-7)
        assert_allclose(clf.intercept_, flip(ref.intercept_, MASK), atol=1e-7)


# ------------------------------------------------------------------ 7. scikit-learn

def test_clone_params_and_grid_search():
    X, Y = data()
    clf = SparsemaxClassifier(polytope="at_least_one", negated=MASK)
    assert clf.get_params()["negated"] is MASK
    assert_array_equal(clone(clf).negated, MASK)
    nand = np.ones(K, bool)
    Y_nand = np.where(Y.sum(axis=1, keepdims=True) == K, np.r_[0.0, 1, 1, 1], Y)
    clf.set_params(negated=nand).fit(X, Y_nand)
    P = clf.predict_proba(X)
    assert np.all(P.sum(axis=1) <= K - 1 + 1e-12)
    clf.set_params(negated=None)  # the fitted mask stays until the next fit
    assert_array_equal(clf.predict_proba(X), P)
    search = GridSearchCV(SparsemaxClassifier(polytope="at_least_one", negated=MASK),
                          {"alpha": [1e-3, 1e-1]}, cv=3).fit(X, Y)
    assert_array_equal(search.best_estimator_.negated, MASK)
    assert in_negated_polytope(search.predict_proba(X), "at_least_one", MASK).all()
    assert 0 <= search.best_score_ <= 1


# --------------------------------------------------------------------- 8. float32

@pytest.mark.parametrize("solver", solvers())
def test_float32_input(solver):
    X, Y = data()
    kw = dict(polytope="at_least_one", negated=MASK, solver=solver, alpha=0.1, tol=1e-6)
    clf32 = SparsemaxClassifier(**kw).fit(X.astype(np.float32), Y)
    clf64 = SparsemaxClassifier(**kw).fit(X, Y)
    assert_allclose(clf32.coef_, clf64.coef_, atol=1e-4)
    P = clf32.predict_proba(X.astype(np.float32))
    assert P.dtype == np.float32
    assert in_negated_polytope(P.astype(float), "at_least_one", MASK, tol=1e-6).all()


# ---------------------------------------------------------------------- device="cuda"

@pytest.mark.parametrize("solver", ["lbfgs", "newton-cg"])
@pytest.mark.parametrize("polytope", ["at_least_one", "simplex"])
def test_cuda_path_matches_the_cpu_with_negation(cupy_backend, solver, polytope):
    """device="cuda" (the negation transform around the device data term, Hessian
    products and projection) fits and predicts what the CPU does, on the CuPy stand-in
    and on a GPU."""
    X, Y = data(polytope)
    kw = dict(polytope=polytope, negated=MASK, solver=solver, **TIGHT)
    gpu = SparsemaxClassifier(device="cuda", **kw).fit(X, Y)
    cpu = SparsemaxClassifier(**kw).fit(X, Y)
    assert_allclose(gpu.coef_, cpu.coef_, atol=1e-6)
    assert_allclose(gpu.intercept_, cpu.intercept_, atol=1e-6)
    assert_allclose(gpu.predict_proba(X), cpu.predict_proba(X), atol=1e-6)


def test_cpu_fit_with_negation_never_imports_cupy(tmp_path):
    assert cupy_imports_of("""
        import numpy as np
        from sparsekit.linear_model import SparsemaxClassifier
        rng = np.random.default_rng(0)
        X, Y = rng.normal(size=(40, 3)), (rng.random((40, 3)) < 0.5).astype(float)
        Y[:, 0] = 1
        for solver in ("lbfgs", "newton-cg", "sdca"):
            clf = SparsemaxClassifier(polytope="at_least_one", negated=[False, True, True],
                                      solver=solver, alpha=0.1).fit(X, Y)
            clf.predict_proba(X)
    """, tmp_path) == "[] []"


def test_flipped_targets_stay_sparse_off_the_negated_columns():
    from sparsekit.losses._targets import flip_columns
    from sparsekit.projections._checks import reflect_columns
    Y = sp.random(50, 200, density=0.02, random_state=0, format="csr")
    Y.data[:] = 1.0
    columns = [3, 17, 150]
    out = flip_columns(Y, columns)
    assert sp.issparse(out) and out.format == "csr"
    assert_array_equal(out.toarray(), reflect_columns(Y.toarray(), columns))
    kept = Y[:, np.setdiff1d(np.arange(200), columns)].nnz
    assert out.nnz <= kept + 50 * len(columns)
