"""CarriedGram: the multinomial datafit's formed subspace Hessian carried between iterates."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.linear_model import L1LogisticOBA
from sparsekit.losses._multinomial_datafit import Multinomial
from sparsekit.losses._multinomial_gram import CarriedGram

K = 4


def _datafit(layout, dtype, intercept, seed=0, n=1500, d=12):
    """A Multinomial at a random point (a row of weight 0, an empty row), its free set of
    every entry, and a random generator."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    X[3] = 0.0
    X = (sp.csr_matrix(X) if layout == "csr" else X).astype(dtype)
    y = rng.integers(0, K, n)
    sw = rng.uniform(0.5, 2.0, n)
    sw[5] = 0.0
    f = Multinomial(X, y, K, sw, intercept)
    f.value_grad(rng.normal(scale=0.5, size=f.n_params))
    return f, np.arange(f.n_params), rng


def _exact(f, free, P):
    """The Hessian on ``free`` at the probabilities ``P``, formed anew."""
    kept = f._P
    f._P = P
    try:
        return Multinomial._gram_dense(f, f._matrix_free(free))   # not through a spy
    finally:
        f._P = kept


def _moved(rng, P, far, scale):
    """P with each row's probabilities multiplied by exp(±scale) and renormalized, by
    exp(±1) on the rows ``far``."""
    noise = rng.uniform(-scale, scale, P.shape)
    noise[far] = rng.uniform(-1.0, 1.0, (far.size, P.shape[1]))
    Q = P * np.exp(noise)
    return Q / Q.sum(axis=1, keepdims=True)


def _spy(monkeypatch, f):
    """A list that records, for each formed Gram, whether it refreshed rows (True) or
    formed every row (False)."""
    calls = []
    form = f._gram_dense
    monkeypatch.setattr(f, "_gram_dense", lambda H, **kw: calls.append("rows" in kw)
                        or form(H, **kw))
    return calls


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("intercept", [False, True])
def test_update_is_the_hessian_at_the_lagged_probabilities(layout, dtype, intercept,
                                                           monkeypatch):
    """After a small move (3% of the rows far, the others within rtol) on a free set that
    lost entries (class 0's: the Hessian is then nonsingular), the rows far are refreshed
    and the others kept: the result is the Hessian at the probabilities that are new on
    the far rows and old elsewhere, and its spectrum lies within rtol of the exact
    Hessian's."""
    f, free, rng = _datafit(layout, dtype, intercept)
    rtol = 0.05
    gram = CarriedGram(rtol)
    P0 = f._P.copy()
    np.testing.assert_allclose(gram(f._matrix_free(free)), _exact(f, free, P0),
                               rtol=1e-12, atol=1e-15)
    far = np.sort(rng.choice(f.n_samples, 45, replace=False))
    f._P = P1 = _moved(rng, P0, far, 0.02)       # ratios within exp(±0.04): under 5%
    free1 = free[free % K != 0]
    calls = _spy(monkeypatch, f)
    G1 = gram(f._matrix_free(free1))
    assert calls == [True], "the update route was not taken"
    lagged = P0.copy()
    lagged[far] = P1[far]
    np.testing.assert_allclose(G1, _exact(f, free1, lagged), rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(G1, G1.T)
    exact = _exact(f, free1, P1)
    Linv = np.linalg.inv(np.linalg.cholesky(exact))
    ratios = np.linalg.eigvalsh(Linv @ G1 @ Linv.T)
    assert ratios.min() >= 1 - rtol - 1e-9 and ratios.max() <= 1 + rtol + 1e-9
    assert np.abs(ratios - 1).max() > 1e-4          # the kept rows did lag


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("intercept", [False, True])
def test_joined_entries_get_their_rows_at_the_carried_probabilities(layout, intercept,
                                                                    monkeypatch):
    """Entries that joined the free set (a weight of a column already free, one of a new
    column, an intercept) get their rows of the Gram at the carried probabilities, after
    the far rows' refresh: the result is the Hessian at those probabilities."""
    f, free, rng = _datafit(layout, np.float64, intercept, seed=2, d=30)
    nw = 30 * K
    joining = [5, 4 * K + 1] + ([nw + 2] if intercept else [])    # 4: a column not free
    gram = CarriedGram(0.05)
    gram(f._matrix_free(np.setdiff1d(free, np.r_[joining, 4 * K:5 * K])))
    P0 = f._P.copy()
    far = np.arange(0, f.n_samples, 50)
    f._P = P1 = _moved(rng, P0, far, 0.02)
    free1 = np.setdiff1d(free, np.r_[4 * K:5 * K][np.r_[4 * K:5 * K] != 4 * K + 1])
    calls = _spy(monkeypatch, f)
    G = gram(f._matrix_free(free1))
    assert calls == [True]                                      # the far rows only
    lagged = P0.copy()
    lagged[far] = P1[far]
    np.testing.assert_allclose(G, _exact(f, free1, lagged), rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(G, G.T)


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_many_joined_entries_many_moved_rows_or_rtol_zero_reach_the_exact_hessian(
        layout, monkeypatch):
    """A free set with more than ``join_share`` of its entries new, or with more than
    ``refresh_share`` of the rows moved, is formed anew; with rtol 0 every row that moved
    is refreshed: each is the exact Hessian."""
    f, free, rng = _datafit(layout, np.float64, True, seed=1)
    calls = _spy(monkeypatch, f)
    for rtol in (0.05, 0.0):
        gram = CarriedGram(rtol)
        gram(f._matrix_free(free[::2]))
        f._P = _moved(rng, f._P, np.arange(0), 0.01)
        np.testing.assert_array_equal(gram(f._matrix_free(free)), _exact(f, free, f._P))
        f._P = _moved(rng, f._P, np.arange(0, f.n_samples, 2), 0.01)       # half the rows
        np.testing.assert_array_equal(gram(f._matrix_free(free)), _exact(f, free, f._P))
        assert calls == [False] * 3
        calls.clear()
    f._P = f._P.copy()
    f._P[:100] = _moved(rng, f._P[:100], np.arange(0), 0.01)    # the other rows unmoved
    G = gram(f._matrix_free(free[1:]))
    assert calls == [True]
    np.testing.assert_allclose(G, _exact(f, free[1:], f._P), rtol=1e-10, atol=1e-13)


def test_a_tall_dense_fit_carries_its_gram_to_the_solution_formed_anew(monkeypatch):
    """A multinomial fit on a tall dense X (redundant columns: many late iterations with
    small moves) forms fewer than half its Grams over every row, and reaches the objective
    of the fit that forms each one anew."""
    from sklearn.datasets import make_classification

    X, y = make_classification(30000, 30, n_informative=10, n_redundant=2, n_classes=5,
                               random_state=0)
    X = X.astype(np.float32)
    full, calls = [], []
    form, carry = Multinomial._gram_dense, CarriedGram.__call__
    monkeypatch.setattr(Multinomial, "_gram_dense", lambda f, H, block=None, **kw:
                        full.append("rows" not in kw) or form(f, H, block, **kw))
    monkeypatch.setattr(CarriedGram, "__call__", lambda g, H: calls.append(1) or carry(g, H))

    def objective(model):
        S = model.decision_function(X).astype(np.float64)
        loss = np.logaddexp.reduce(S, axis=1) - S[np.arange(y.size), y]
        return loss.sum() + np.abs(model.coef_.astype(np.float64)).sum()

    carried = L1LogisticOBA(multiclass="multinomial", tol=1e-8).fit(X, y)
    assert sum(full) < len(calls) / 2, (sum(full), len(calls))
    monkeypatch.setattr(CarriedGram, "refresh_share", -1.0)        # every Gram formed anew
    full.clear(), calls.clear()
    anew = L1LogisticOBA(multiclass="multinomial", tol=1e-8).fit(X, y)
    assert sum(full) == len(calls) > 0
    assert objective(carried) == pytest.approx(objective(anew), rel=1e-9)


def test_moved_rows_are_those_with_a_probability_beyond_the_relative_tolerance():
    """``mn_moved_rows``: a row moved when any class's probability differs from the carried
    one by more than rtol times it (strictly; exact ties, zeros and NaNs do not move), as
    the NumPy formula says."""
    from sparsekit._cython._gram_kernels import mn_moved_rows
    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.ones(5), size=2000)
    carried = P * np.exp(rng.normal(scale=0.04, size=P.shape))
    P[:10] = [0.5, 0.25, 0.125, 0.0625, 0.0625]
    carried[:10] = P[:10] * 1.0625                 # exactly rtol away (exact in binary)
    P[10:20], carried[10:20] = 0.0, 0.0
    carried[20] = P[20]
    carried[20, 2] = np.nan
    want = np.flatnonzero((np.abs(P - carried) > 0.0625 * P).any(axis=1))
    got = mn_moved_rows(P, carried, 0.0625)
    np.testing.assert_array_equal(got, want)
    assert 0 < got.size < 2000 and not np.isin(np.arange(21), got).any()
    np.testing.assert_array_equal(mn_moved_rows(P, P, 0.0), [])
    with pytest.raises(ValueError, match="mn_moved_rows"):
        mn_moved_rows(P, carried[1:], 0.1)
