"""PanelGram: the dense-panel subspace Gram carried between OBA iterates."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit._cython import _gram_kernels as GK
from sparsekit.losses._panel_gram import PanelGram


def _gram(R, cols, D, intercept):
    A = (R.toarray() if sp.issparse(R) else R)[:, cols].astype(np.float64)
    if intercept:
        A = np.hstack([A, np.ones((A.shape[0], 1))])
    return A.T @ (D[:, None] * A)


def _setting(seed=0, n=3000, d=400, layout="csr"):
    """A float32 design matrix with an empty row, as CSR or Fortran-ordered dense."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, d, density=0.4, random_state=rng, format="lil", dtype=np.float32)
    R[7, :] = 0.0
    R = R.tocsr() if layout == "csr" else np.asfortranarray(R.toarray())
    return rng, R, rng.uniform(0.01, 0.25, n)


@pytest.mark.parametrize("layout", ["csr", "dense"])
@pytest.mark.parametrize("intercept", [False, True])
def test_update_is_the_gram_of_the_lagged_weights(intercept, layout, monkeypatch):
    """After a small move (2% of the rows far, the others within rtol; two columns out, three
    in) the update route is taken, and the result is exactly the Gram of the weights D̃ that
    take the new value on the far rows and keep the old one elsewhere; its spectrum lies
    within rtol of the exact Gram's."""
    rng, R, D0 = _setting(layout=layout)
    rtol = 0.05
    gram = PanelGram(R, rtol)
    cols0 = np.arange(0, 340, dtype=np.int64)
    np.testing.assert_allclose(gram(cols0, D0, intercept), _gram(R, cols0, D0, intercept),
                               rtol=0, atol=1e-6 * D0.sum())

    far = rng.choice(R.shape[0], 60, replace=False)
    D1 = D0 * rng.uniform(1 - 0.9 * rtol, 1 + 0.9 * rtol, D0.size)
    D1[far] = D0[far] * rng.choice([0.2, 3.0], far.size)
    D1[far[0]] = 0.0  # a weight that vanished
    cols1 = np.r_[np.arange(2, 340), [350, 371, 399]].astype(np.int64)
    calls = []
    name = "gram_csr_syrk" if layout == "csr" else "gram_dense_syrk"
    syrk = getattr(GK, name)
    monkeypatch.setattr(GK, name, lambda *a, **kw: calls.append(kw["accumulate"])
                        or syrk(*a, **kw))
    G1 = gram(cols1, D1, intercept)
    assert calls == [True, True], "the update route was not taken"

    lagged = D0.copy()
    lagged[far] = D1[far]
    np.testing.assert_allclose(G1, _gram(R, cols1, lagged, intercept), rtol=0,
                               atol=2e-6 * D0.sum())
    np.testing.assert_array_equal(G1, G1.T)
    exact = _gram(R, cols1, D1, intercept)
    Linv = np.linalg.inv(np.linalg.cholesky(exact))
    ratios = np.linalg.eigvalsh(Linv @ G1 @ Linv.T)
    assert 1 - rtol - 1e-4 <= ratios.min() and ratios.max() <= 1 + rtol + 1e-4


@pytest.mark.parametrize("layout", ["csr", "dense"])
def test_rtol_zero_refreshes_every_changed_weight(layout):
    """rtol = 0: a few changed weights are refreshed by the update (same as a new Gram)."""
    _, R, D0 = _setting(1, layout=layout)
    gram = PanelGram(R, 0.0)
    cols = np.arange(10, 110, dtype=np.int64)
    gram(cols, D0, False)
    D1 = D0.copy()
    D1[:30] *= 1.01
    np.testing.assert_allclose(gram(cols, D1, False), _gram(R, cols, D1, False), rtol=0,
                               atol=1e-6 * D0.sum())


@pytest.mark.parametrize("layout", ["csr", "dense"])
def test_large_move_forms_a_new_gram(layout, monkeypatch):
    """When most weights moved (or the intercept flag changed) the Gram is formed afresh."""
    _, R, D0 = _setting(2, layout=layout)
    gram = PanelGram(R, 0.05)
    cols = np.arange(0, 100, dtype=np.int64)
    gram(cols, D0, False)
    calls = []
    name = "gram_csr_syrk" if layout == "csr" else "gram_dense_syrk"
    syrk = getattr(GK, name)
    monkeypatch.setattr(GK, name, lambda *a, **kw: calls.append(kw["accumulate"])
                        or syrk(*a, **kw))
    D1 = 2.0 * D0
    np.testing.assert_allclose(gram(cols, D1, False), _gram(R, cols, D1, False), rtol=0,
                               atol=1e-6 * D1.sum())
    np.testing.assert_allclose(gram(cols, D1, True), _gram(R, cols, D1, True), rtol=0,
                               atol=1e-6 * D1.sum())
    assert calls == [False, False]
