"""The scores of sparse rows read where the model is nonzero (``utils._scores``)
against a dense product, on both routes, and the estimators' predictions through them."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit import L1LogisticOBA
from sparsekit.utils import _scores as S


def _rows(rng, n, d, fmt, dtype, index_dtype, canonical):
    """Sparse rows with empty rows and columns; not ``canonical``: entries shuffled within
    their rows or columns and some stored twice."""
    X = sp.random(n, d, density=0.08, format="coo", random_state=rng, dtype=np.float64)
    X.data = rng.standard_normal(X.nnz)
    rows, cols = np.ones(n), np.ones(d)
    rows[3] = cols[5] = 0.0
    X = (sp.diags(rows) @ X.tocsr() @ sp.diags(cols)).asformat(fmt)
    X.eliminate_zeros()
    if not canonical:                 # each stored entry split in two, in shuffled order
        X = X.copy()
        indptr, indices, data = [0], [], []
        for lo, hi in zip(X.indptr[:-1], X.indptr[1:]):
            twice = np.concatenate([np.arange(lo, hi), np.arange(lo, hi)])
            order = rng.permutation(twice.size)
            indices.append(X.indices[twice][order])
            data.append(X.data[twice][order] / 2)
            indptr.append(indptr[-1] + twice.size)
        X = type(X)((np.concatenate(data), np.concatenate(indices), np.array(indptr)),
                    shape=X.shape)
        assert not X.has_canonical_format
    X = X.astype(dtype)
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    return X


def _model(rng, K, d):
    """A sparse model: a few features with some classes' weights, one with every class'."""
    W = np.zeros((K, d))
    for j in rng.choice(d, 6, replace=False):
        W[rng.random(K) < 0.5, j] = rng.standard_normal()
    W[:, 7] = rng.standard_normal(K)
    return W, rng.standard_normal(K)


@pytest.fixture(params=["model", "by class"])
def route(request, monkeypatch):
    """Force one route of CSR X: the model's nonzero weights or a walk per class."""
    if request.param == "model":
        for cost in ("WEIGHT_SCAN_NS", "FEATURE_NS", "MODEL_ENTRY_NS"):
            monkeypatch.setattr(S, cost, 0.0)
        monkeypatch.setattr(S, "USED_FEATURES_SHARE", 1.0)
    else:
        monkeypatch.setattr(S, "MODEL_ENTRY_NS", np.inf)
    return request.param


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("canonical", [True, False])
@pytest.mark.parametrize("K", [1, 2, 9])
@pytest.mark.parametrize("sparse_coef", [False, True])
def test_scores_equal_dense_product(route, fmt, dtype, index_dtype, canonical, K,
                                    sparse_coef):
    rng = np.random.default_rng(K + 10 * canonical)
    X = _rows(rng, 60, 40, fmt, dtype, index_dtype, canonical)
    W, b = _model(rng, K, X.shape[1])
    coef = sp.csr_matrix(W) if sparse_coef else W
    Z = S.linear_scores(X, coef, b)
    assert Z.dtype == np.float64 and Z.shape == (60, K)
    np.testing.assert_allclose(Z, X.toarray().astype(np.float64) @ W.T + b, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(Z[3], b)           # an empty row scores its intercepts


def test_a_sparse_coef_scores_hashed_columns_in_memory_of_the_entries():
    """2**40 columns: SciPy's product (coef.T made CSR) would take terabytes; the scores
    read X and coef on the columns coef stores, also none."""
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([5, 2**39, 2**40 - 1]),
                       np.array([0, 2, 2, 3])), shape=(3, 2**40))
    coef = sp.csr_matrix((np.array([0.5, -1.0]), np.array([2**39, 7]), np.array([0, 1, 2])),
                         shape=(2, 2**40))
    b = np.array([0.25, -0.25])
    np.testing.assert_array_equal(S.linear_scores(X, coef, b), [[1.25, -0.25], b, b])
    np.testing.assert_array_equal(S.linear_scores(X, sp.csr_matrix((2, 2**40)), b),
                                  np.tile(b, (3, 1)))


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_scores_same_on_any_thread_count(route, fmt):
    rng = np.random.default_rng(0)
    X = _rows(rng, 500, 60, fmt, np.float64, np.int32, True)
    W, b = _model(rng, 5, X.shape[1])
    Z = S.linear_scores(X, W, b, n_threads=1)
    np.testing.assert_array_equal(S.linear_scores(X, W, b, n_threads=3), Z)


def _threaded_scores(X, W, b, queue):
    queue.put(S.linear_scores(X, W, b, n_threads=2))


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_a_forked_child_scores_in_parallel_after_the_parent_did(route, fmt):
    # GNU OpenMP keeps a parallel region's threads in a pool owned by the thread that ran
    # it; a child forked later waits forever for them in its own next region, unless the
    # kernels ran from a thread of their own (as the fits' do)
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    rng = np.random.default_rng(0)
    X = _rows(rng, 500, 60, fmt, np.float64, np.int32, True)
    W, b = _model(rng, 5, X.shape[1])
    expected = S.linear_scores(X, W, b, n_threads=2)          # the parent's threads
    np.testing.assert_allclose(S.csr_scores(X.tocsr(), W.T, b, n_threads=2), expected,
                               rtol=1e-12, atol=1e-12)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_threaded_scores, args=(X, W, b, queue))
    child.start()
    try:
        np.testing.assert_array_equal(queue.get(timeout=60), expected)
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()


def _take_route(monkeypatch):
    """Record which route :func:`linear_scores` takes: "by class" or "model"."""
    taken = []
    by_class = S._by_class

    def recorded(*args):
        taken.append("by class")
        return by_class(*args)

    monkeypatch.setattr(S, "_by_class", recorded)
    return taken


def test_route_follows_the_costs(monkeypatch):
    """Many rows under a sparse model of many classes: one walk of CSR X over its nonzero
    weights, or over all of them for a dense model; a row or one class: a walk per class;
    CSC X: the model's features; a sparse model: SciPy's sparse product."""
    rng = np.random.default_rng(1)
    X = _rows(rng, 2000, 300, "csr", np.float64, np.int32, True)
    W, b = _model(rng, 30, X.shape[1])
    taken = _take_route(monkeypatch)
    cases = [(X, W, b, []), (X[:1], W, b, ["by class"]), (X, W[:1], b[:1], ["by class"]),
             (X, W + 1.0, b, []), (X.tocsc(), W, b, []),
             (X.tocsc(), W + 1.0, b, []), (X, sp.csr_matrix(W), b, ["by class"]),
             (X.tocsc(), sp.csr_matrix(W), b, ["by class"])]
    for rows, coef, intercept, expected in cases:
        taken.clear()
        Z = S.linear_scores(rows, coef, intercept)
        assert taken == expected
        np.testing.assert_allclose(Z, rows.toarray() @ coef.T + intercept, rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_estimator_predictions_of_sparse_rows(monkeypatch, multiclass, dtype):
    """L1LogisticOBA's scores of CSR and CSC rows take the model route on a text-like
    problem (SciPy's with sparse_coef) and equal those of the same rows dense (dtype
    kept)."""
    rng = np.random.default_rng(2)
    X = sp.random(3000, 400, density=0.02, format="csr", random_state=rng, dtype=dtype)
    y = rng.integers(0, 12, 3000)
    X = X + sp.csr_matrix((np.ones(3000, dtype), (np.arange(3000), y)), shape=X.shape)
    fits = [L1LogisticOBA(C=0.5, multiclass=multiclass, sparse_coef=s).fit(X, y)
            for s in (False, True)]
    assert 0 < np.count_nonzero(fits[0].coef_.any(axis=0)) <= 0.25 * X.shape[1]
    taken = _take_route(monkeypatch)
    dense = fits[0].decision_function(X.toarray())
    for clf in fits:
        for rows in (X, X.tocsc()):
            scores = clf.decision_function(rows)
            assert scores.dtype == dense.dtype == dtype
            np.testing.assert_allclose(scores, dense, rtol=1e-5 if dtype == np.float32
                                       else 1e-12, atol=1e-5 if dtype == np.float32 else 1e-12)
        np.testing.assert_array_equal(clf.predict(X), fits[0].classes_[dense.argmax(axis=1)])
    assert taken == ["by class"] * 3       # the sparse model's three: SciPy's product


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("canonical", [True, False])
@pytest.mark.parametrize("K", [1, 9])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_csr_scores_equal_dense_product(dtype, weight_dtype, index_dtype, canonical, K,
                                        layout):
    """Weights (n_features, K) read in place (C order) or copied (a transposed C-ordered
    coef_), float32 kept: the float64 sums of the dense product."""
    rng = np.random.default_rng(K + 10 * canonical)
    X = _rows(rng, 60, 40, "csr", dtype, index_dtype, canonical)
    Wt = np.asarray(rng.standard_normal((40, K)), dtype=weight_dtype, order=layout)
    b = rng.standard_normal(K)
    Z = S.csr_scores(X, Wt, b)
    assert Z.dtype == np.float64 and Z.shape == (60, K)
    want = X.toarray().astype(np.float64) @ Wt.astype(np.float64) + b
    np.testing.assert_allclose(Z, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(Z[3], b)
    np.testing.assert_allclose(S.csr_scores(X, Wt), want - b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 3])
def test_csr_scores_prefetch_past_the_caches(threads):
    """Weights of more than 8 MiB (their rows prefetched ahead): the same sums as without,
    whatever the thread count, on rows with repeated, unsorted and empty entries."""
    rng = np.random.default_rng(3)
    n, d, K = 300, 70_000, 16                       # 9 MB of float64 weights
    lengths = rng.integers(0, 40, n)
    lengths[5] = 0
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    X = sp.csr_matrix((rng.standard_normal(indptr[-1]), rng.integers(0, d, indptr[-1]),
                       indptr), shape=(n, d))       # unsorted rows
    X.indices[indptr[1] - 1] = X.indices[0]          # a column stored twice in row 0
    assert lengths[0] >= 2
    Wt = rng.standard_normal((d, K))
    Z = S.csr_scores(X, Wt, n_threads=threads)
    np.testing.assert_allclose(Z, X @ Wt, rtol=1e-12, atol=1e-12)
    small = S.csr_scores(X, Wt[:, :4], n_threads=threads)    # 2.2 MB: no prefetch
    np.testing.assert_allclose(small, X @ Wt[:, :4], rtol=1e-12, atol=1e-12)


def test_csr_scores_checks_what_the_kernel_receives():
    X = sp.csr_matrix(np.eye(3))
    with pytest.raises(ValueError, match="column index is out of range"):
        S.csr_scores(X, np.ones((2, 4)))
    bad = sp.csr_matrix(np.eye(3))
    bad.indptr[-1] = 7
    with pytest.raises(ValueError, match="indptr"):
        S.csr_scores(bad, np.ones((3, 4)))
    from sparsekit._cython import _oba_kernels as K
    with pytest.raises(ValueError, match="must be"):
        K.mn_margins_csr(X.data, X.indices, X.indptr, np.ones((3, 4)), np.zeros(3),
                         np.empty((3, 4)))
