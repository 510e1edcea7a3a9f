"""L1LogisticOBA and SparsemaxClassifier on dask arrays, against a real
distributed.LocalCluster (two worker processes): the fits equal the in-memory ones and the
client never holds X."""
import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

if os.environ.get("CI"):        # CI installs the test extra: a missing dask is a failure there
    import dask.array as da
    import distributed
else:
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")

from sparsekit.linear_model import (L1LogisticOBA, L1LogisticOBACV,  # noqa: E402
                                    SparsemaxClassifier, SparsemaxClassifierCV,
                                    l1_logistic_path)

from _interrupting import FirstIteration  # noqa: E402


def test_dask_fit_without_a_client_says_so():
    X, y = _data(seed=5)
    try:
        distributed.default_client()
        pytest.skip("a client of another test is the default")
    except ValueError:
        pass
    with pytest.raises(ValueError, match="distributed.Client"):
        L1LogisticOBA().fit(da.from_array(X, chunks=(300, -1)), y)


def test_fits_of_numpy_data_do_not_import_dask(tmp_path):
    """Checking whether X is a dask collection does not import dask (~0.1 s of a first
    fit): none exists before dask is imported."""
    from _gpu import run_fresh

    code = ("import sys\n"
            "import numpy as np\n"
            "from sparsekit import (L1LogisticOBA, L1LogisticOBACV, SparsemaxClassifier,\n"
            "                       SparsemaxClassifierCV, ExtremeSoftmaxSGD)\n"
            "X = np.random.default_rng(0).normal(size=(60, 3)); y = np.arange(60) % 2\n"
            "for est in (L1LogisticOBA(), L1LogisticOBACV(Cs=2, cv=2), SparsemaxClassifier(),\n"
            "            SparsemaxClassifierCV(alphas=2, cv=2), ExtremeSoftmaxSGD()):\n"
            "    est.fit(X, y).predict(X)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dask'))\n")
    assert run_fresh(code, tmp_path) == "[]"


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _data(n=900, d=30, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.5] = 0.0
    W = rng.normal(size=(classes, d))
    y = np.argmax(X @ W.T + rng.gumbel(size=(n, classes)), axis=1)
    return X, y


def _sparse_dask(X, rows):
    """A dask array of CSR blocks of ``rows`` rows."""
    from dask import delayed
    blocks = [da.from_delayed(delayed(sp.csr_matrix)(X[i:i + rows]),
                              shape=(min(rows, len(X) - i), X.shape[1]), dtype=X.dtype,
                              meta=sp.csr_matrix((0, X.shape[1])))
              for i in range(0, len(X), rows)]
    return da.concatenate(blocks, axis=0)


@pytest.mark.parametrize("params", [dict(), dict(multiclass="multinomial"),
                                    dict(l1_ratio=0.5, multiclass="multinomial"),
                                    dict(class_weight="balanced")])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_dask_fit_is_the_in_memory_fit(client, params, layout):
    X, y = _data()
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    Xd = (da.from_array(X, chunks=(250, 10)) if layout == "dense"     # columns rechunked
          else _sparse_dask(X, 300))
    kw = dict(C=0.3, tol=1e-10, **params)
    local = L1LogisticOBA(**kw).fit(X, y, sample_weight=w)
    spread = L1LogisticOBA(**kw).fit(Xd, da.from_array(y, chunks=100),
                                      sample_weight=da.from_array(w, chunks=450))
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-6, atol=1e-9)
    assert np.all(np.abs(spread.duality_gap_) < 1e-7)        # both at the optimum
    np.testing.assert_array_equal(spread.classes_, local.classes_)
    assert spread.n_features_in_ == 30
    np.testing.assert_array_equal(spread.predict(X), local.predict(X))


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_dask_features_in_other_units_are_solved_as_in_memory(client, multiclass, layout,
                                                               l1_ratio):
    """X times 1e-4 at C times 1e4 (the problem of X at C; the elastic net's of X at another
    C and ratio, test_l1_logistic's unit_elastic_net): the partitions' layouts are
    multiplied on the workers by the power of two the in-memory fit uses (from their column
    sums), so that the fit is the in-memory one in as many iterations, where it crawled in
    X's own units; the cross-validation's folds likewise."""
    from test_l1_logistic import unit_elastic_net
    X, y = _data(n=600)
    X[:, 0] = 2012.0 + 5.0 * X[:, 0]                 # centered as well
    tiny = X * 1e-4
    Xd = da.from_array(tiny, chunks=(200, -1)) if layout == "dense" else _sparse_dask(tiny, 200)
    kw = dict(C=3e3, tol=1e-10, multiclass=multiclass, l1_ratio=l1_ratio)
    C_unit, r_unit = unit_elastic_net(3e3, l1_ratio, 1e-4)
    local = L1LogisticOBA(**kw).fit(tiny, y)
    unit = L1LogisticOBA(**{**kw, "C": C_unit, "l1_ratio": r_unit}).fit(X, y)
    spread = L1LogisticOBA(**kw).fit(Xd, da.from_array(y, chunks=200))
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-5, atol=1e-7)
    assert np.sum(spread.n_iter_) <= 1.5 * np.sum(unit.n_iter_) + 2
    if layout == "dense" and multiclass == "ovr":
        grid = dict(Cs=[3e3, 3e4], l1_ratios=[l1_ratio], cv=2, tol=1e-10)
        cv = L1LogisticOBACV(**grid).fit(Xd, da.from_array(y, 200))
        ref = L1LogisticOBACV(**grid).fit(tiny, y)
        np.testing.assert_allclose(cv.scores_, ref.scores_, rtol=1e-5)


def test_binary_float32_and_numpy_labels(client):
    X, y = _data(classes=2, seed=2)
    X = X.astype(np.float32)
    local = L1LogisticOBA(C=1.0, tol=1e-10).fit(X, y)
    spread = L1LogisticOBA(C=1.0, tol=1e-10).fit(da.from_array(X, chunks=(200, -1)), y)
    assert spread.coef_.dtype == np.float32 and spread.coef_.shape == (1, 30)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-5, atol=1e-7)


def _recorded_gathers(monkeypatch, entries):
    """A list to which each of the client's gathers from now on adds ``entries(results)``
    (``results``: the list of what the gather collected)."""
    recorded = []
    gather = distributed.Client.gather

    def recording(self, futures, *args, **kwargs):
        out = gather(self, futures, *args, **kwargs)
        recorded.extend(entries(out if isinstance(out, list) else [out]))
        return out
    monkeypatch.setattr(distributed.Client, "gather", recording)
    return recorded


def _nbytes(value):
    """The bytes of a gathered number or array (a tuple's summed)."""
    return sum(np.asarray(p).nbytes for p in (value if isinstance(value, tuple) else (value,))
               if isinstance(p, (np.ndarray, float, int, np.generic)))


def _gathered_sizes(monkeypatch):
    """A list that records the bytes of every object the client gathers from now on."""
    return _recorded_gathers(monkeypatch, lambda results: [_nbytes(v) for v in results])


def test_the_client_gathers_vectors_not_rows(client, monkeypatch):
    """Everything the fit gathers is parameter-sized: vectors, and the partitions'
    Hessians formed on a small free set; the largest object is smaller than one partition
    of X."""
    X, y = _data(n=6000, d=40, seed=3)
    sizes = _gathered_sizes(monkeypatch)
    Xd, yd = da.from_array(X, chunks=(1500, -1)), da.from_array(y, chunks=1500)
    L1LogisticOBA(C=0.3, multiclass="multinomial").fit(Xd, yd)
    assert sizes and max(sizes) <= 8 * (3 * 41) ** 2    # (a Hessian on 3 x 41 parameters)
    assert max(sizes) < X[:1500].nbytes / 3
    sizes.clear()
    SparsemaxClassifier(solver="newton-cg").fit(Xd, yd)
    assert sizes and max(sizes) <= 8 * (3 * 41 + 1)     # (loss, gradient (40, 3), (3,))


@pytest.mark.parametrize("model", [L1LogisticOBA(C=0.3, tol=1e-10),
                                   SparsemaxClassifier(solver="newton-cg", tol=1e-10)])
def test_small_arguments_travel_inside_the_tasks_large_ones_are_scattered(client,
                                                                          monkeypatch,
                                                                          model):
    """A fit's vectors go inside its tasks when their copies are small (a scatter is a
    blocking round trip of its own), else are scattered once to every worker: the same
    fit either way (to rounding: the workers' BLAS may round otherwise from run to run)."""
    from sparsekit.losses import _dask_datafit

    X, y = _data(n=600, d=12, seed=14)
    Xd = da.from_array(X, chunks=(200, -1))
    scattered = []
    scatter = distributed.Client.scatter

    def recording(self, data, *args, **kwargs):
        scattered.append(kwargs.get("broadcast", False))
        return scatter(self, data, *args, **kwargs)
    monkeypatch.setattr(distributed.Client, "scatter", recording)
    embedded = model.fit(Xd, y).coef_.copy()
    assert scattered == []
    monkeypatch.setattr(_dask_datafit, "EMBED_BYTES", 0)
    np.testing.assert_allclose(model.fit(Xd, y).coef_, embedded, rtol=1e-8, atol=1e-10)
    assert len(scattered) > 10 and all(scattered)


def _sent_products(monkeypatch):
    """A list that records every matrix-free Hessian product the client sends to the
    workers from now on."""
    from sparsekit.losses import _dask_datafit

    products = []
    product = _dask_datafit._DaskHessian.__call__
    monkeypatch.setattr(_dask_datafit._DaskHessian, "__call__",
                        lambda H, v: products.append(1) or product(H, v))
    return products


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_the_partitions_price_a_round_trip_into_their_hessian_route(client, monkeypatch,
                                                                    multiclass):
    """On small partitions a matrix-free Hessian product costs mostly its round trip to the
    workers: the partitions form their Hessians on the free set (the client sums them and
    makes the CG's products) where, pricing the arithmetic only as in memory, they send
    every product to the workers."""
    from sparsekit.losses import _dask_datafit

    rng = np.random.default_rng(0)
    d = 120 if multiclass == "multinomial" else 400  # wide enough that, priced without the
    # round trips, a binary fit's Hessians on 200-row partitions are not all formed
    X = rng.normal(size=(800, d)) @ rng.normal(size=(d, d)) * 0.1  # correlated columns
    y = ((X @ rng.normal(size=d) + rng.logistic(size=800) > 0).astype(int)
         if multiclass == "ovr" else
         np.argmax(X @ rng.normal(size=(120, 3)) + rng.gumbel(size=(800, 3)), axis=1))
    Xd = da.from_array(X, chunks=(200, -1))
    products = _sent_products(monkeypatch)
    priced = L1LogisticOBA(C=10.0, multiclass=multiclass).fit(Xd, y)
    assert products == []
    monkeypatch.setattr(_dask_datafit.DaskDatafit, "UNIT_SECONDS", np.inf)  # no round trip
    free = L1LogisticOBA(C=10.0, multiclass=multiclass).fit(Xd, y)
    assert len(products) > 20
    local = L1LogisticOBA(C=10.0, multiclass=multiclass).fit(X, y)

    def objective(model):
        S = model.decision_function(X)
        loss = (np.logaddexp(0.0, np.where(y == 1, -S, S)) if S.ndim == 1
                else np.logaddexp.reduce(S, axis=1) - S[np.arange(len(y)), y])
        return 10.0 * loss.sum() + np.abs(model.coef_).sum()
    for model in (priced, free):
        assert objective(model) == pytest.approx(objective(local), rel=1e-9)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_each_worker_sums_its_partitions_formed_hessians(client, monkeypatch, multiclass):
    """The client gathers one formed Hessian per worker, summed there over the worker's
    partitions: with room for two matrices (two workers) and not for eight (the
    partitions), the fit of eight partitions sends no product to the workers."""
    from sparsekit.losses import _dask_datafit

    rng = np.random.default_rng(5)
    X = rng.normal(size=(800, 30)) @ rng.normal(size=(30, 30)) * 0.3
    y = np.argmax(X @ rng.normal(size=(30, 3)) + rng.gumbel(size=(800, 3)), axis=1)
    if multiclass == "ovr":
        y = (y == 0).astype(int)
    n_params = 31 * (3 if multiclass == "multinomial" else 1)
    Xd = da.from_array(X, chunks=(100, -1))
    products = _sent_products(monkeypatch)
    monkeypatch.setattr(_dask_datafit.DaskDatafit, "GATHER_BYTES", 2 * 8 * n_params ** 2)
    spread = L1LogisticOBA(C=10.0, multiclass=multiclass, tol=1e-10).fit(Xd, y)
    assert products == []
    local = L1LogisticOBA(C=10.0, multiclass=multiclass, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-8)
    monkeypatch.setattr(_dask_datafit.DaskDatafit, "GATHER_BYTES", 8 * n_params ** 2 // 4)
    with warnings.catch_warnings():    # 8 steps tell (products from the 4th; the fit: ~1 min)
        warnings.simplefilter("ignore", ConvergenceWarning)
        L1LogisticOBA(C=10.0, multiclass=multiclass, max_iter=8).fit(Xd, y)
    assert len(products) > 0          # not even one worker's matrix: products on the cluster


def test_a_group_sums_its_partitions_results_weighted():
    """A group's total weighs each partition's result by its share (numbers, arrays, and
    tuples of them entry by entry, in float64); unweighted on request; ``each`` keeps
    the results with the same shares."""
    from sparsekit.losses._dask_datafit import PartitionGroup

    class Part:
        def __init__(self, k):
            self.k = k

        def value(self, v):
            return self.k * v

        def pair(self):
            return float(self.k), np.full(3, self.k, dtype=np.float32)

    group = PartitionGroup(np.array([0.5, 0.25]), Part(2), Part(4))
    np.testing.assert_array_equal(group.total("value", np.arange(3.0)), [0.0, 2.0, 4.0])
    f, g = group.total("pair")
    assert f == 2.0 and g.dtype == np.float64
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    assert group.total("value", 1.0, weighted=False) == 6.0
    doubled = group.each("value", 2.0)
    assert doubled.parts == (4.0, 8.0) and doubled.shares is group.shares


def _binary_datafit(client, X, y, rows):
    """The binary l1-logistic datafit of (X, y) split in partitions of ``rows`` rows, and
    the datafit of all of them in memory."""
    from functools import partial

    from sparsekit.linear_model._dask_input import DaskRows
    from sparsekit.linear_model._l1_problems import binary_block

    data = DaskRows(da.from_array(X, chunks=(rows, -1)) if isinstance(X, np.ndarray)
                    else _sparse_dask(X.toarray(), rows), y, None, [np.float64])
    datafit = data.datafit(partial(binary_block, 1, True), data.classes(), np.ones(2), 1.0)
    return datafit, binary_block(1, True, X, y, np.ones(len(y)))


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_an_evaluation_is_one_task_per_worker_thread(client, monkeypatch, layout):
    """Eight partitions on two one-thread workers: the gradient, a matrix-free Hessian
    (with its diagonal) and its products each gather two results, one per worker, and
    equal the datafit of all the rows in memory."""
    from sparsekit.losses import _dask_datafit

    X, y = _data(n=800, d=20, classes=2, seed=12)
    datafit, local = _binary_datafit(client, X if layout == "dense" else sp.csc_matrix(X),
                                     y, 100)
    x = np.random.default_rng(0).normal(size=21) * 0.1
    free = np.array([0, 3, 4, 9, 20])
    v = np.arange(5.0)
    monkeypatch.setattr(_dask_datafit.DaskDatafit, "GATHER_BYTES", 0)  # matrix-free
    counts = _recorded_gathers(monkeypatch, lambda results: [len(results)])
    f, g = datafit.value_grad(x)
    H = datafit.hessp(x, free)
    Hv = H(v)
    diagonal = H.diagonal()
    assert counts == [2, 2, 2]
    f_local, g_local = local.value_grad(x)
    H_local = local.hessp(x, free)
    assert f == pytest.approx(f_local, rel=1e-12)
    np.testing.assert_allclose(g, g_local, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(Hv, H_local(v), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(diagonal, H_local.diagonal(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(H.restrict(v > 1)(v[v > 1]),
                               H_local.restrict(v > 1)(v[v > 1]), rtol=1e-10, atol=1e-14)


def test_each_partition_prices_its_share_of_a_products_round_trip(client, monkeypatch):
    """A product's round trip is one for all the partitions: each of the eight prices an
    eighth of it into its Hessian route (none when the formed matrices would not be
    gathered)."""
    from sparsekit.losses import _dask_datafit

    X, y = _data(n=800, d=20, classes=2, seed=12)
    datafit = _binary_datafit(client, X, y, 100)[0]
    overheads = []
    submit = distributed.Client.submit

    def recording(self, func, *args, **kwargs):
        if func is _dask_datafit._hessp:
            overheads.append(args[4])
        return submit(self, func, *args, **kwargs)
    monkeypatch.setattr(distributed.Client, "submit", recording)
    x, free = np.zeros(21), np.arange(21)
    datafit.hessp(x, free)
    monkeypatch.setattr(_dask_datafit.DaskDatafit, "GATHER_BYTES", 0)
    datafit.hessp(x, free)
    share = datafit.round_trip / _dask_datafit.DaskDatafit.UNIT_SECONDS / 8
    assert overheads == [pytest.approx(share)] * 2 + [0.0] * 2


def test_a_fits_setup_is_one_task_per_worker_thread(client, monkeypatch):
    """Eight partitions on two one-thread workers: the labels' reductions, the row sums
    and the building of the partitions' datafits each gather (at most) one result per
    worker, and the reductions equal those of all the rows."""
    from functools import partial

    from sparsekit.linear_model._dask_input import DaskRows
    from sparsekit.linear_model._l1_problems import binary_block

    X, y = _data(n=800, d=20, classes=3, seed=13)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    counts = _recorded_gathers(monkeypatch, lambda results: [len(results)])
    data = DaskRows(da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100),
                    da.from_array(w, chunks=100), [np.float64])
    assert len(data.X) == 8 and len(data.layout) <= 2      # where dask put them
    assert sorted(k for _, ks in data.layout for k in ks) == list(range(8))
    classes = data.classes()
    totals = data.class_totals(classes)
    sums = data.scale_sums()
    datafit = data.datafit(partial(binary_block, 1, True), classes, np.ones(3), 1.0)
    assert max(counts) <= 2
    np.testing.assert_array_equal(classes, [0, 1, 2])
    np.testing.assert_allclose(totals, np.bincount(y, weights=w))
    np.testing.assert_allclose(sums, [w @ (X ** 2).sum(axis=1), w @ np.count_nonzero(X, axis=1),
                                      w.sum(), *(w @ X ** 2), *(w @ (X != 0))])
    local = binary_block(1, True, X, y, w)
    x = np.random.default_rng(2).normal(size=21) * 0.1
    assert datafit.value(x) == pytest.approx(local.value(x), rel=1e-12)


def test_a_products_price_is_what_the_products_take(client, monkeypatch):
    """The round trip the partitions price starts as a round trip of one task per worker
    thread, timed by the first datafit on the rows, and follows the matrix-free products'
    times less the workers' time in them (a running mean), for every datafit on the same
    rows."""
    from functools import partial
    from types import SimpleNamespace

    from sparsekit.linear_model._l1_problems import binary_block
    from sparsekit.losses import _dask_datafit

    X, y = _data(n=800, d=20, classes=2, seed=12)
    datafit = _binary_datafit(client, X, y, 100)[0]
    start = datafit.round_trip
    assert 0 < start < 10
    monkeypatch.setattr(_dask_datafit.DaskDatafit, "GATHER_BYTES", 0)  # matrix-free
    H = datafit.hessp(np.zeros(21), np.arange(21))
    clock = iter([1.0, 1.25, 2.0, 2.75])
    monkeypatch.setattr(_dask_datafit, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    H(np.ones(21))                   # 0.25 s on the client's clock, ~0.1 ms on a worker's
    first = 0.5 * (start + 0.25)
    assert first - 0.01 < datafit.round_trip < first
    second = 0.5 * (datafit.round_trip + 0.75)
    H.restrict(np.arange(21) < 5)(np.ones(5))       # a restriction's products count too
    assert second - 0.01 < datafit.round_trip < second
    other = datafit._rows.datafit(partial(binary_block, 0, True), np.array([0, 1]),
                                  np.ones(2), 1.0)
    assert other.round_trip == datafit.round_trip    # the rows' price, not timed again


@pytest.mark.filterwarnings("ignore:Port .* is already in use")   # the module's cluster's
def test_a_workers_partitions_are_grouped_by_its_threads():
    """A worker of two threads holds its five partitions in two groups, each built where
    the partitions are (no copy of them), with their shares."""
    from sparsekit.losses._dask_datafit import build_groups, thread_layout

    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as own:
        parts = [own.submit(np.full, 3, k, pure=False) for k in range(5)]
        own.gather(parts)                               # computed, on the worker
        layout = thread_layout(own, parts)
        assert [list(ks) for _, ks in layout] == [[0, 1, 2], [3, 4]]
        groups = build_groups(own, layout, np.arange(5) / 10, np.asarray, parts)
        built = own.gather(groups)
        held = [part for group in built for part in group.parts]
        assert [int(part[0]) for part in held] == [0, 1, 2, 3, 4]
        assert held[0] is own.gather(parts[0])      # the worker's object, not a copy
        np.testing.assert_array_equal(np.concatenate([b.shares for b in built]),
                                      np.arange(5) / 10)


def test_dask_input_errors_are_clear(client):
    X, y = _data(seed=4)
    bad = X.copy()
    bad[5, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        L1LogisticOBA().fit(da.from_array(bad, chunks=(300, -1)), y)
    with pytest.raises(ValueError, match="shape"):
        L1LogisticOBA().fit(da.from_array(X, chunks=(300, -1)), y[:10])
    import dask.bag as db
    with pytest.raises(TypeError, match="a dask array or DataFrame for X, got Bag"):
        L1LogisticOBA().fit(db.from_sequence(list(X), npartitions=2), y)


def test_a_frames_columns_and_labels_are_read_as_in_memory(client):
    """A dask DataFrame's nullable integer and boolean columns (as Parquet files keep
    them) are floats as scikit-learn reads a DataFrame in memory, and sparse columns a
    sparse matrix; labels in a Series of categories or nullable integers are read as in
    memory too: the same fits and predictions; a missing value is the in-memory fit's
    NaN error, text its error naming the column (not a TypeError of pandas' NA in an
    object array on the worker, nor "unknown" labels)."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(5)
    n = 240
    frame = pd.DataFrame({"x": rng.normal(size=n),
                          "count": pd.array(rng.integers(0, 9, n), dtype="Int64"),
                          "member": pd.array(rng.random(n) < 0.5, dtype="boolean")})
    y = (frame["x"] + 0.3 * frame["count"].astype(float) > 1.2).astype(int).to_numpy()
    Xd, yd = dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(y), npartitions=3)
    for model in (L1LogisticOBA(C=0.5, tol=1e-10),
                  SparsemaxClassifier(solver="newton-cg", tol=1e-10)):
        local = model.fit(frame, y)
        coef, proba = local.coef_.copy(), local.predict_proba(frame)
        model.fit(Xd, yd)
        np.testing.assert_allclose(model.coef_, coef, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(model.predict_proba(Xd).compute(), proba, rtol=1e-6,
                                   atol=1e-8)
    sparse = pd.DataFrame.sparse.from_spmatrix(sp.random(n, 5, density=0.3, random_state=0,
                                                         format="csr"))   # stays sparse
    local = L1LogisticOBA(tol=1e-10).fit(sparse, y)
    model = L1LogisticOBA(tol=1e-10).fit(dd.from_pandas(sparse, npartitions=3), yd)
    np.testing.assert_allclose(model.coef_, local.coef_, rtol=1e-6, atol=1e-8)
    words = pd.Series(np.array(["no", "yes"])[y]).astype("category")
    for labels in (words, pd.Series(y).astype("Int64")):
        local = L1LogisticOBA(tol=1e-10).fit(frame, labels)
        model = L1LogisticOBA(tol=1e-10).fit(Xd, dd.from_pandas(labels, npartitions=3))
        np.testing.assert_array_equal(model.classes_, local.classes_)
        np.testing.assert_allclose(model.coef_, local.coef_, rtol=1e-6, atol=1e-8)
    missing = pd.Series(y).astype("Int64")
    missing[100] = pd.NA
    with pytest.raises(ValueError, match="Input y contains NaN"):
        L1LogisticOBA().fit(Xd, dd.from_pandas(missing, npartitions=3))
    gap = frame.copy()
    gap.loc[200, "count"] = pd.NA
    with pytest.raises(ValueError, match="Input X contains NaN"):
        L1LogisticOBA().fit(gap, y)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        L1LogisticOBA().fit(dd.from_pandas(gap, npartitions=3), yd)
    text = frame.assign(city=pd.Categorical(rng.choice(["Oslo", "Lyon"], n)))
    named = r"X's column 'city' holds text \('(Oslo|Lyon)'\); .* takes numbers: encode it"
    with pytest.raises(ValueError, match=named):
        L1LogisticOBA().fit(text, y)
    with pytest.raises(ValueError, match=named):
        L1LogisticOBA().fit(dd.from_pandas(text, npartitions=3), yd)
    with pytest.raises(ValueError, match=named):       # text, not categories
        L1LogisticOBA().fit(dd.from_pandas(text.astype({"city": str}), npartitions=3), yd)


@pytest.mark.parametrize("fit", [
    lambda X, y, sw: L1LogisticOBA().fit(X, y, sample_weight=sw),
    lambda X, y, sw: SparsemaxClassifier().fit(X, y, sample_weight=sw),
    lambda X, y, sw: l1_logistic_path(X, y, Cs=2, pos_class=1, sample_weight=sw)])
def test_dask_sample_weights_are_checked_as_in_memory(client, fit):
    """Negative or NaN weights in one partition are the in-memory fit's errors (negative
    weights made a non-convex problem that ran to max_iter)."""
    X, y = _data(n=200, seed=4)
    Xd, yd = da.from_array(X, chunks=(50, -1)), da.from_array(y, chunks=50)
    for value, message in ((-1.0, "Negative values in data passed to `sample_weight`"),
                           (np.nan, "NaN")):
        sw = np.ones(200)
        sw[120] = value
        with pytest.raises(ValueError, match=message):
            fit(Xd, yd, da.from_array(sw, chunks=50))


def test_empty_partitions_of_a_filtered_frame_are_left_out(client):
    """A dask DataFrame filtered row-wise keeps partitions with no row (and a dask array
    may have empty chunks): the fit is the in-memory fit of the rows left; a frame with
    no row at all is a clear error."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = _data(n=400, d=8, seed=12)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"f{j}" for j in range(8)])
                           .assign(label=y, weight=w), npartitions=4)
    kept = frame.map_partitions(lambda part: part[part.index >= 250])   # two are empty
    assert [len(part) for part in kept.partitions] == [0, 0, 50, 100]
    Xf, yf, wf = kept.drop(columns=["label", "weight"]), kept["label"], kept["weight"]
    rows = slice(250, None)
    Xa = da.from_array(X, chunks=((100, 0, 150, 150), -1))
    for model in (L1LogisticOBA(C=0.3, tol=1e-10), SparsemaxClassifier(solver="newton-cg")):
        local = model.fit(X[rows], y[rows], sample_weight=w[rows]).coef_.copy()
        np.testing.assert_allclose(model.fit(Xf, yf, sample_weight=wf).coef_, local,
                                   rtol=1e-6, atol=1e-8)
        whole = model.fit(X, y).coef_.copy()
        np.testing.assert_allclose(model.fit(Xa, da.from_array(y, chunks=((100, 0, 150, 150),)
                                                                )).coef_, whole,
                                   rtol=1e-6, atol=1e-8)
    none = frame.map_partitions(lambda part: part[part.index < 0])
    with pytest.raises(ValueError, match="X has no rows"):
        L1LogisticOBA().fit(none.drop(columns=["label", "weight"]), none["label"])


def test_predictions_of_dask_collections_are_dask_arrays(client):
    """Every prediction method maps over the row blocks of a dask array or DataFrame and
    returns a dask array (X is not computed on the client), equal to the in-memory
    predictions (to float32 rounding: products of row blocks); empty partitions give empty
    blocks; float32 stays float32; a wrong width fails before anything is computed."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from sparsekit import ExtremeSoftmaxSGD

    X, y = _data(n=300, d=6, seed=13)
    Y = np.c_[y == 0, y == 1, (y == 2) | (y == 0)].astype(int)
    X32 = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    frame = dd.from_pandas(pd.DataFrame(X32), npartitions=3)
    frame = frame.map_partitions(lambda part: part[part.index >= 100])   # one empty
    models = {
        "l1": (L1LogisticOBA(C=0.5).fit(X32, y),
               ["decision_function", "predict", "predict_proba", "predict_log_proba"]),
        "sparsemax": (SparsemaxClassifier().fit(X32, y),
                      ["decision_function", "predict", "predict_proba", "predict_log_proba"]),
        "label sets": (SparsemaxClassifier().fit(X32, Y),
                       ["predict", "predict_proba", "predict_log_proba"]),
        "esgd": (ExtremeSoftmaxSGD(n_epochs=2, random_state=0).fit(X32, X32[:, :3].argmax(1)),
                 ["decision_function", "predict", "predict_proba", "predict_log_proba",
                  "predict_topk"])}
    for name, (model, methods) in models.items():
        for method in methods:
            kw = {"k": 2} if method == "predict_topk" else {}
            local = getattr(model, method)(X32, **kw)
            for Xd, rows in ((da.from_array(X32, chunks=(70, 3)), slice(None)),
                             (frame, slice(100, None))):
                out = getattr(model, method)(Xd, **kw)
                assert isinstance(out, da.Array), (name, method)
                got = out.compute()
                assert got.dtype == local.dtype and got.shape == local[rows].shape
                np.testing.assert_allclose(got, local[rows], rtol=1e-5, atol=1e-6)  # blocks
        assert model.score(da.from_array(X32, chunks=(70, -1)),
                           Y if name == "label sets" else y) == model.score(
            X32, Y if name == "label sets" else y)
    with pytest.raises(ValueError, match="features"):
        models["l1"][0].predict(da.from_array(X[:, :4], chunks=(70, -1)))
    # the model enters the graph once (a delayed object), not once per block
    import pickle
    model = models["l1"][0]
    model.payload = np.zeros(50_000)                                    # a 400 kB model
    out = model.predict_proba(da.from_array(X32, chunks=(10, -1)))     # 30 blocks
    graph = pickle.dumps(dict(out.__dask_graph__()))
    assert len(pickle.dumps(model)) < len(graph) < 2 * len(pickle.dumps(model))


def test_score_takes_the_dask_collections_fit_takes(client):
    """score on a dask DataFrame, its label Series and weight Series, partitions of unknown
    length (one empty), as fit takes them: the in-memory score, where scikit-learn's
    accuracy alone cannot take the length of the predictions' dask array; label sets as a
    dask DataFrame, an ExtremeSoftmaxSGD fit on label sets scored on them (and its
    precision@k), and the scorers of a cross-validating estimator."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from sparsekit import ExtremeSoftmaxSGD

    X, y = _data(n=300, d=6, seed=14)
    Y = np.c_[y == 0, y == 1, (y == 2) | (y == 0)].astype(int)
    w = np.random.default_rng(14).uniform(0.5, 2.0, size=300)
    table = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(
        label=y, weight=w, **{f"y{k}": Y[:, k] for k in range(3)})
    frame = dd.from_pandas(table, npartitions=3)
    frame = frame.map_partitions(lambda part: part[part.index >= 100])   # one empty
    rows = slice(100, None)
    Xf = frame[[f"x{j}" for j in range(6)]]
    assert np.isnan(Xf.to_dask_array().shape[0])                 # lengths unknown
    models = [L1LogisticOBA(C=0.5).fit(X, y), SparsemaxClassifier().fit(X, y),
              ExtremeSoftmaxSGD(n_epochs=2, random_state=0, learning_rate=0.3).fit(X, y)]
    for model in models:
        local = model.score(X[rows], y[rows], sample_weight=w[rows])
        assert 0 < local < 1
        assert model.score(Xf, frame["label"], sample_weight=frame["weight"]) == local
        assert model.score(Xf, frame["label"]) == model.score(X[rows], y[rows])
    Yf = frame[["y0", "y1", "y2"]]
    sets = SparsemaxClassifier().fit(X, Y)
    assert sets.score(Xf, Yf) == sets.score(X[rows], Y[rows])
    first = ExtremeSoftmaxSGD(multilabel="first", n_epochs=2, learning_rate=0.3,
                              random_state=0).fit(X, Y)
    assert first.score(Xf, Yf) == first.score(X[rows], Y[rows])
    assert first.precision_at_k(Xf, Yf, k=2) == first.precision_at_k(X[rows], Y[rows], k=2)
    assert models[2].precision_at_k(Xf, frame["label"], k=2) == models[2].precision_at_k(
        X[rows], y[rows], k=2)
    # a scorer's path (L1LogisticOBACV's neg_log_loss, accuracy): a dask array of
    # unknown lengths, the labels a dask array too
    Xa, ya = Xf.to_dask_array(), frame["label"].to_dask_array()
    for scoring in (None, "accuracy"):
        cv = L1LogisticOBACV(Cs=3, cv=3, **({} if scoring is None else {"scoring": scoring}))
        cv.fit(X, y)
        assert cv.score(Xa, ya) == pytest.approx(cv.score(X[rows], y[rows]), rel=1e-12)
        assert cv.score(Xf, frame["label"], sample_weight=frame["weight"]) == pytest.approx(
            cv.score(X[rows], y[rows], sample_weight=w[rows]), rel=1e-12)


def test_a_dask_dataframe_fits_as_its_array(client):
    """dd.read_csv's partitions, of unknown lengths, with the labels and weights as Series
    of the same frame: the fit of the same rows as a dask array, the lengths read off the
    computed partitions; ExtremeSoftmaxSGD, which trains in memory, computes them. Labels
    partitioned otherwise are refused."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from sparsekit import ExtremeSoftmaxSGD

    X, y = _data(seed=6)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"f{j}" for j in range(30)])
                           .assign(label=y, weight=w), npartitions=4)
    Xf, yf, wf = frame.drop(columns=["label", "weight"]), frame["label"], frame["weight"]
    assert np.isnan(Xf.to_dask_array().shape[0])              # lengths unknown
    rows = tuple(len(part) for part in frame.partitions)
    Xd = da.from_array(X, chunks=(rows, -1))
    for model in (L1LogisticOBA(C=0.3, tol=1e-10), SparsemaxClassifier(solver="newton-cg")):
        from_frame = model.fit(Xf, yf, sample_weight=wf).coef_.copy()
        from_array = model.fit(Xd, da.from_array(y, chunks=rows),
                               sample_weight=da.from_array(w, chunks=rows)).coef_
        np.testing.assert_allclose(from_frame, from_array, rtol=1e-7, atol=1e-9)  # rounding
        assert model.n_features_in_ == 30
    from_frame = ExtremeSoftmaxSGD(random_state=0).fit(Xf, yf, sample_weight=wf)
    in_memory = ExtremeSoftmaxSGD(random_state=0).fit(Xf.compute(), y, sample_weight=w)
    np.testing.assert_array_equal(from_frame.coef_, in_memory.coef_)
    with pytest.raises(ValueError, match="y has 3 partitions and X 4: pass the columns of "
                                         "one DataFrame"):
        L1LogisticOBA().fit(Xf, dd.from_pandas(pd.Series(y), npartitions=3))
    with pytest.raises(ValueError, match="y's partitions hold .* rows and X's"):
        L1LogisticOBA().fit(Xf, dd.from_pandas(pd.Series(y[::-1][:-4]), npartitions=4))


def test_grid_search_runs_on_the_cluster_through_joblib(client):
    """GridSearchCV over C on joblib's dask backend: the same search as on local
    processes."""
    import joblib
    from sklearn.model_selection import GridSearchCV

    X, y = _data(n=300, seed=6)
    grid = {"C": [0.03, 0.3, 3.0]}
    local = GridSearchCV(L1LogisticOBA(), grid, cv=3).fit(X, y)
    with joblib.parallel_backend("dask"):
        spread = GridSearchCV(L1LogisticOBA(), grid, cv=3, n_jobs=-1).fit(X, y)
    np.testing.assert_allclose(spread.cv_results_["mean_test_score"],
                               local.cv_results_["mean_test_score"])
    assert spread.best_params_ == local.best_params_


@pytest.mark.parametrize("estimator", [L1LogisticOBACV(Cs=4, cv=3, tol=1e-10),
                                       SparsemaxClassifierCV(alphas=4, cv=3, tol=1e-10)])
def test_the_cross_validated_paths_run_on_the_cluster_through_joblib(client, estimator):
    """The CV estimators' fold paths (``n_jobs``) run as tasks of the cluster on joblib's
    dask backend, with the in-memory scores and model."""
    import joblib

    X, y = _data(n=300, seed=7)
    local = estimator.fit(X, y)
    scores, coef = local.scores_.copy(), local.coef_.copy()
    with distributed.get_task_stream(client) as tasks, joblib.parallel_backend("dask"):
        spread = estimator.set_params(n_jobs=-1).fit(X, y)
    assert any("_fold_path" in task["key"] for task in tasks.data)
    np.testing.assert_array_equal(spread.scores_, scores)
    np.testing.assert_allclose(spread.coef_, coef, rtol=1e-12, atol=1e-14)


def _cv_case(case):
    """(data, its dask form, the CV's parameters, fit arguments) of a CV case."""
    if case == "binary, sparse, weights, folds with repeated rows":
        X, y = _data(n=300, classes=2, seed=8)
        w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
        rng = np.random.default_rng(3)
        folds = []
        for test in (rng.permutation(300)[:100], rng.permutation(300)[:120]):
            train = np.setdiff1d(np.arange(300), test)
            folds.append((np.concatenate([train, train[:40]]), test))  # unsorted, repeated
        return (X, _sparse_dask(X, 70), dict(Cs=3, cv=folds, tol=1e-10),
                dict(sample_weight=w), dict(sample_weight=da.from_array(w, chunks=70)))
    X, y = _data(n=240, seed=9)
    params = (dict(multiclass="multinomial", Cs=[0.05, 0.1]) if "multinomial" in case
              else dict(class_weight="balanced", n_jobs=2, Cs=[0.03, 0.3]))
    return X, da.from_array(X, chunks=(80, -1)), dict(cv=2, tol=1e-10, **params), {}, {}


@pytest.mark.parametrize("case", ["binary, sparse, weights, folds with repeated rows",
                                  "one-vs-rest, dense, balanced, n_jobs on the dask backend",
                                  "multinomial, dense"])
def test_cross_validation_of_dask_arrays_is_the_in_memory_one(client, case):
    """L1LogisticOBACV on dask arrays: the folds' paths weigh their training rows on the
    workers and the held-out margins come back; the scores, the grid and the refit equal
    the in-memory ones (the OvR refit's threads also under joblib's dask backend)."""
    import joblib

    X, Xd, params, fit_local, fit_dask = _cv_case(case)
    y = _data(n=X.shape[0], classes=2 if "binary" in case else 3,
              seed=8 if "binary" in case else 9)[1]
    local = L1LogisticOBACV(**params).fit(X, y, **fit_local)
    with joblib.parallel_backend("dask" if "dask backend" in case else "loky"):
        spread = L1LogisticOBACV(**params).fit(Xd, da.from_array(y, chunks=50), **fit_dask)
    np.testing.assert_allclose(spread.Cs_, local.Cs_, rtol=1e-12)
    np.testing.assert_allclose(spread.scores_, local.scores_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(spread.coefs_paths_, local.coefs_paths_, rtol=1e-4, atol=1e-4)
    assert spread.C_ == pytest.approx(local.C_, rel=1e-12)     # the same grid point
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-5, atol=1e-7)
    assert spread.n_features_in_ == X.shape[1] and not hasattr(spread, "feature_names_in_")
    assert spread.score(X, y) == pytest.approx(local.score(X, y), rel=1e-7)


def _far_from_zero(n=1200, seed=0):
    """Three classes on standardized columns, one of them moved to 1e6 (far from 0
    against its spread)."""
    from sklearn.datasets import make_classification
    X, y = make_classification(n, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=seed)
    X[:, 0] = 1e6 + X[:, 0]
    return X, y


def test_a_fit_of_dask_partitions_that_long_rows_hold_back_names_them(client):
    """As in memory: a solve that stops at max_iter on rows of very different lengths names
    the long rows by their index in X (their lengths computed on the workers), in a fit, a
    path and a cross-validation, of dense or CSR partitions; rows of weight 0 are not
    named."""
    from test_l1_logistic import _long_rows

    X, y = _long_rows()
    dense, csr = da.from_array(X, chunks=(70, -1)), _sparse_dask(X, 70)
    named = "; X[65], X[70] and X[131] are up to "
    for fit in (lambda: l1_logistic_path(csr, y, Cs=[0.15], max_iter=10),
                lambda: L1LogisticOBACV(Cs=[0.15], cv=2, max_iter=10).fit(dense, y)):
        with pytest.warns(ConvergenceWarning) as record:
            fit()
        assert any(named in str(w.message) for w in record)
    with pytest.warns(ConvergenceWarning) as record:
        L1LogisticOBA(C=0.15, max_iter=10).fit(X, y)
    with pytest.warns(ConvergenceWarning) as on_dask:
        L1LogisticOBA(C=0.15, max_iter=10).fit(dense, y)
    # the same advice (the optimality reached may differ: the partitions' sums round otherwise)
    advice = [str(w[0].message).split(");", 1)[1] for w in (record, on_dask)]
    assert advice[0] == advice[1] and advice[0].startswith(named[1:])
    weights = np.ones(len(y))
    weights[70] = 0.0
    with pytest.warns(ConvergenceWarning) as record:
        L1LogisticOBA(C=0.15, max_iter=10).fit(csr, y, sample_weight=da.from_array(weights,
                                                                                   chunks=70))
    assert "; X[65] and X[131] are up to " in str(record[0].message)


def test_a_fit_of_dask_partitions_on_large_entries_advises_scaling_them(client):
    """As in memory: a solve that stops at max_iter on large entries (their root mean
    square summed on the workers) advises scaling X's columns, in a fit of dense or CSR
    partitions and a cross-validation; rows of weight 0 do not count."""
    from sparsekit.linear_model._l1_advice import large_entries
    from test_l1_logistic import _large_entries

    X, y = _large_entries()
    dense, csr = da.from_array(X, chunks=(70, -1)), _sparse_dask(X, 70)
    expected = large_entries(X)
    for given in (dense, csr):
        with pytest.warns(ConvergenceWarning) as record:
            L1LogisticOBA(max_iter=2).fit(given, y)
        assert "; " + expected + ", or increase max_iter" in str(record[0].message)
    with pytest.warns(ConvergenceWarning) as record:
        L1LogisticOBACV(Cs=[1.0], cv=2, max_iter=2).fit(dense, y)
    assert any(expected in str(w.message) for w in record)
    small = X / 300.0
    small[:5] *= 1e3                                       # large rows, of weight 0
    weights = np.ones(len(y))
    weights[:5] = 0.0
    with pytest.warns(ConvergenceWarning, match=r"tol 1.00e-08\); increase max_iter\.$"):
        L1LogisticOBA(max_iter=2).fit(da.from_array(small, chunks=(70, -1)), y,
                                      sample_weight=da.from_array(weights, chunks=70))


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_dask_partitions_center_columns_far_from_zero_as_in_memory(client, multiclass,
                                                                   layout):
    """The partitions' columns far from 0 (dense, or stored in every row of CSR blocks
    beside one-hot columns) are centered on the workers by the partitions' weighted mean,
    as the in-memory fit centers X: the same model (intercepts of X as given) in a few
    dozen iterations, without a warning (before: 500 iterations that stalled or stopped
    short of the minimum); the path and the CV too."""
    X, y = _far_from_zero()
    if layout == "sparse":
        X = np.hstack([np.eye(6)[np.random.default_rng(2).integers(0, 6, y.size)], X])
    w = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    Xd, yd, wd = (da.from_array(X, chunks=(300, -1)) if layout == "dense"
                  else _sparse_dask(X, 300), da.from_array(y, chunks=300),
                  da.from_array(w, chunks=300))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        local = L1LogisticOBA(multiclass=multiclass, class_weight="balanced").fit(
            X, y, sample_weight=w)
        spread = L1LogisticOBA(multiclass=multiclass, class_weight="balanced").fit(
            Xd, yd, sample_weight=wd)
    assert spread.n_iter_.sum() < 20 * spread.n_iter_.size
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-7, atol=1e-3)
    np.testing.assert_allclose(spread.predict_proba(X), local.predict_proba(X), atol=1e-6)
    path = dict(Cs=[0.1, 1.0], multiclass=multiclass, pos_class=None if
                multiclass == "multinomial" else 2)
    np.testing.assert_allclose(l1_logistic_path(Xd, yd, **path)[0],
                               l1_logistic_path(X, y, **path)[0], rtol=1e-5, atol=1e-3)
    cv = dict(Cs=[0.5, 5.0], cv=2, multiclass=multiclass)
    by_folds = L1LogisticOBACV(**cv).fit(Xd, yd)
    np.testing.assert_allclose(by_folds.scores_, L1LogisticOBACV(**cv).fit(X, y).scores_,
                               rtol=1e-5)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_partitions_are_laid_out_once_for_all_problems(client, monkeypatch, layout):
    """Each partition is laid out for the column kernels (CSC, or Fortran order) once on
    its worker for a one-vs-rest fit's problems and a CV's folds and problems (each
    problem's datafits copied them), with the in-memory model."""
    from sparsekit.linear_model._dask_input import DaskRows

    calls = []
    placed = DaskRows.placed
    monkeypatch.setattr(DaskRows, "placed",
                        lambda self, *a: calls.append(a[1]) or placed(self, *a))
    X, y = _data(n=600, d=10, classes=3, seed=4)
    Xd = (da.from_array(X, chunks=(200, -1)) if layout == "dense" else _sparse_dask(X, 200))
    spread = L1LogisticOBA(C=0.5, tol=1e-10).fit(Xd, y)
    assert calls == [3]                               # three problems, one layout
    local = L1LogisticOBA(C=0.5, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-8)
    calls.clear()
    L1LogisticOBACV(Cs=2, cv=2, refit=False).fit(Xd, y)
    assert calls == [3]


@pytest.mark.parametrize("estimator", [L1LogisticOBACV(Cs=2, cv=2, refit=False),
                                       SparsemaxClassifierCV(alphas=2, cv=2)])
def test_cross_validation_of_dask_arrays_gathers_margins_not_rows(client, monkeypatch,
                                                                  estimator):
    """What the CV gathers is labels, weights, the held-out margins (rows x grid points)
    and what a fit gathers (vectors and small formed Hessians), never rows of X."""
    X, y = _data(n=2000, d=60, classes=2, seed=10)
    sizes = _gathered_sizes(monkeypatch)
    estimator.fit(da.from_array(X, chunks=(500, -1)), y)
    assert max(sizes) <= 8 * 61 * 61               # a Hessian on 61 parameters
    assert max(sizes) < X[:500].nbytes / 5


def test_streaming_extreme_softmax_with_incremental_and_predictions_on_dask(client):
    """dask-ml's Incremental streams the blocks of a dask array through partial_fit (the
    classes declared up front); its predictions map over the blocks and stay dask arrays,
    equal to the model's own predictions."""
    dask_ml = pytest.importorskip("dask_ml.wrappers")
    from sparsekit import ExtremeSoftmaxSGD

    X, y = _data(n=3000, d=20, classes=5, seed=7)
    Xd, yd = da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=500)
    inc = dask_ml.Incremental(ExtremeSoftmaxSGD(random_state=0, lr_decay=1.0),
                              scoring="accuracy")
    inc.fit(Xd, yd, classes=np.arange(5))
    model = inc.estimator_
    assert model.n_iter_ == 6                          # one partial_fit per block
    predicted = inc.predict(Xd)
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), model.predict(X))
    assert model.score(X, y) > 0.5
    # average=True: the model is the mean of the weights after each block's call
    averaged = dask_ml.Incremental(ExtremeSoftmaxSGD(random_state=0, lr_decay=1.0,
                                                     average=True), shuffle_blocks=False)
    averaged.fit(Xd, yd, classes=np.arange(5))
    local = ExtremeSoftmaxSGD(random_state=0, lr_decay=1.0, average=True)
    for start in range(0, 3000, 500):
        local.partial_fit(X[start:start + 500], y[start:start + 500], classes=np.arange(5))
    np.testing.assert_allclose(averaged.estimator_.coef_, local.coef_, rtol=1e-12)
    assert averaged.estimator_._n_averaged == 6
    post = dask_ml.ParallelPostFit(L1LogisticOBA(C=0.3).fit(X[:500], y[:500]))
    proba = post.predict_proba(Xd)
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), post.estimator.predict_proba(X))


def test_partial_fit_streams_the_blocks_of_a_dask_collection(client):
    """ExtremeSoftmaxSGD.partial_fit on a dask array or DataFrame makes one pass per row
    block, computing one block at a time: the model of partial_fit on each block in turn
    (labels and weights as dask arrays, NumPy arrays or Series of the frame; an empty
    partition skipped)."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from sparsekit import ExtremeSoftmaxSGD

    X, y = _data(n=600, d=10, classes=4, seed=14)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = np.random.default_rng(5).uniform(0.5, 2.0, y.size)
    params = dict(random_state=0, lr_decay=1.0)
    local = ExtremeSoftmaxSGD(**params)
    for start in range(0, 600, 150):
        local.partial_fit(X[start:start + 150], y[start:start + 150], classes=np.arange(4),
                          sample_weight=w[start:start + 150])
    Xd = da.from_array(X, chunks=(150, 5))
    for yy, ww in ((da.from_array(y, chunks=100), da.from_array(w, chunks=200)), (y, w)):
        streamed = ExtremeSoftmaxSGD(**params).partial_fit(Xd, yy, classes=np.arange(4),
                                                           sample_weight=ww)
        assert streamed.n_iter_ == 4
        np.testing.assert_array_equal(streamed.coef_, local.coef_)
    frame = dd.from_pandas(pd.DataFrame(X).assign(label=y, weight=w), npartitions=5)
    frame = frame.map_partitions(lambda part: part[part.index < 480])    # the last is empty
    streamed = ExtremeSoftmaxSGD(**params).partial_fit(
        frame.drop(columns=["label", "weight"]), frame["label"], classes=np.arange(4),
        sample_weight=frame["weight"])
    assert streamed.n_iter_ == 4
    with pytest.raises(ValueError, match="unknown lengths"):
        ExtremeSoftmaxSGD().partial_fit(frame.drop(columns=["label", "weight"]), y,
                                        classes=np.arange(4))
    with pytest.raises(ValueError, match=r"y must have shape \(600,\), got \(500,\)"):
        ExtremeSoftmaxSGD().partial_fit(Xd, y[:500], classes=np.arange(4))


def test_sparsemax_on_dask_takes_newton_cg_where_lbfgs_would_not_fit(client, monkeypatch):
    """The solver's arrays are held where the fit is driven: on dask arrays too, auto runs
    Newton-CG where L-BFGS's would not fit in memory, and a named solver is refused before
    any work on the cluster."""
    import sparsekit.linear_model._sparsemax_solvers as solvers

    X, y = _data(n=400, d=20, classes=4, seed=8)
    Xd = da.from_array(X, chunks=(100, -1))
    weights = (20 + 1) * 4 * 8
    monkeypatch.setattr(solvers, "physical_memory", lambda: 20 * weights)
    spread = SparsemaxClassifier(tol=1e-8).fit(Xd, y)
    assert spread.solver_ == "newton-cg"
    local = SparsemaxClassifier(solver="newton-cg", tol=1e-8).fit(X, y)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="solver='nqn' would hold"):
        SparsemaxClassifier(solver="nqn").fit(Xd, y)


def test_multinomial_l1_on_dask_checks_the_memory_before_any_work(client, monkeypatch):
    """The multinomial solver's arrays are held where the fit is driven: on dask arrays
    too, a fit whose arrays would not fit in memory is refused before any work on the
    cluster (the estimator, the path and the CV estimator)."""
    import sparsekit.linear_model._l1_problems as l1

    X, y = _data(n=400, d=20, classes=4, seed=8)
    Xd = da.from_array(X, chunks=(100, -1))
    arrays = l1.MULTINOMIAL_ARRAYS
    need = 8 * 4 * (arrays["weights"] * (20 + 1) + arrays["rows"] * 400)
    monkeypatch.setattr(l1, "physical_memory", lambda: need - 1)
    for fit in (lambda: L1LogisticOBA(multiclass="multinomial").fit(Xd, y),
                lambda: l1_logistic_path(Xd, y, Cs=2, multiclass="multinomial"),
                lambda: L1LogisticOBACV(Cs=2, cv=2, multiclass="multinomial").fit(Xd, y)):
        with pytest.raises(ValueError, match=r"multinomial fit would hold .* \(20 columns x 4 "
                                             r"classes\)"):
            fit()
    monkeypatch.setattr(l1, "physical_memory", lambda: need)
    assert L1LogisticOBA(multiclass="multinomial").fit(Xd, y).coef_.shape == (4, 20)


def test_multinomial_l1_cv_on_dask_counts_its_own_threads(client, monkeypatch):
    """L1LogisticOBACV's fold paths on dask arrays are threads of the client, where their
    solvers' arrays are: the memory check counts n_jobs of them (3 here), not what joblib's
    dask backend, when in effect, says of the cluster (its 2 workers' threads)."""
    import joblib

    import sparsekit.linear_model._l1_problems as l1

    X, y = _data(n=300, d=10, classes=3, seed=8)
    Xd = da.from_array(X, chunks=(100, -1))
    monkeypatch.setattr(l1, "physical_memory", lambda: 1)
    with joblib.parallel_backend("dask"), pytest.raises(
            ValueError, match=r"multinomial fit \(3 solves at a time: fewer n_jobs run fewer\)"):
        L1LogisticOBACV(Cs=2, cv=3, n_jobs=3, multiclass="multinomial").fit(Xd, y)


@pytest.mark.parametrize("solver", ["lbfgs", "nqn", "newton-cg"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("n_classes", [4, 2])
def test_sparsemax_dask_fit_is_the_in_memory_fit(client, solver, layout, n_classes,
                                                 monkeypatch):
    """The same objective summed over partitions: the same solution (the data term and its
    gradient are computed on the workers; the feature mean of the centered coordinates is
    a reduction there too), with sample weights and float32. Two classes are fit as one
    output there too."""
    from sparsekit.linear_model import _sparsemax

    outputs, made = [], []

    class Spied(_sparsemax.DaskFenchelYoung):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            outputs.append(self.n_classes)
            made.append(self)
    monkeypatch.setattr(_sparsemax, "DaskFenchelYoung", Spied)
    X, y = _data(n=800, d=20, classes=n_classes, seed=8)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    Xd = (da.from_array(X, chunks=(300, -1)) if layout == "dense" else _sparse_dask(X, 250))
    kw = dict(solver=solver, tol=1e-10, max_iter=3000)     # alpha="scale": a reduction too
    local = SparsemaxClassifier(**kw).fit(X, y, sample_weight=w)
    spread = SparsemaxClassifier(**kw).fit(Xd, da.from_array(y, chunks=200),
                                           sample_weight=da.from_array(w, chunks=400))
    assert outputs == [1 if n_classes == 2 else n_classes]
    assert spread.coef_.shape == (n_classes, 20) and spread.intercept_.shape == (n_classes,)
    assert spread.alpha_ == pytest.approx(local.alpha_, rel=1e-12)
    np.testing.assert_allclose(spread.n_iter_, local.n_iter_, atol=max(2, local.n_iter_ // 10))
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-6, atol=1e-7)
    assert spread.solver_ == solver and spread.n_features_in_ == 20
    np.testing.assert_allclose(spread.predict_proba(X), local.predict_proba(X), atol=1e-6)
    single = SparsemaxClassifier(alpha=1e-3).fit(da.from_array(X.astype(np.float32),
                                                               chunks=(300, -1)), y)
    assert single.coef_.dtype == np.float32 and single.solver_ == "lbfgs"
    if solver == "lbfgs":   # the model's weights given to the objective: the same
        datafit = made[0]
        datafit.center = None
        rng = np.random.default_rng(3)
        theta = datafit.to_solver(rng.normal(size=(20, datafit.n_classes)),
                                  rng.normal(size=datafit.n_classes))
        f, g = datafit.value_grad(theta)
        f_w, g_w = datafit.value_grad(theta, weights=datafit.from_solver(theta)[0].copy())
        assert f_w == pytest.approx(f, rel=1e-12)
        np.testing.assert_allclose(g_w, g, rtol=1e-10, atol=1e-14)



def test_sparsemax_dask_partitions_of_mostly_zeros_are_held_as_csr(client):
    """A dense partition of mostly zeros (C or Fortran order) is held as its CSR copy on
    its worker, as a fit in memory holds such an X, and a denser one as the array: the
    in-memory fit."""
    from sparsekit.losses._dask_datafit import LabelTargets, _FenchelYoungBlock

    rng = np.random.default_rng(4)
    X = rng.standard_normal((600, 12)) * (rng.random((600, 12)) < 0.1)
    y = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((600, 3)), axis=1)
    targets = LabelTargets(np.arange(3), "simplex", None)
    for given in (X, np.asfortranarray(X)):
        block = _FenchelYoungBlock(given, y, None, 1.0, targets)
        assert sp.issparse(block.X) and block.X.format == "csr"
        np.testing.assert_array_equal(block.X.toarray(), X)
    assert isinstance(_FenchelYoungBlock(X + 1.0, y, None, 1.0, targets).X, np.ndarray)
    kw = dict(solver="lbfgs", tol=1e-10, max_iter=3000)
    local = SparsemaxClassifier(**kw).fit(X, y)
    spread = SparsemaxClassifier(**kw).fit(da.from_array(X, chunks=(200, -1)), y)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("solver", ["lbfgs", "newton-cg"])
def test_sparsemax_dask_fit_of_a_column_in_other_units_is_the_in_memory_fit(client, solver):
    """A column in other units (its solver weight scaled by its own factor; the workers'
    Hessian rows divided column by column): the in-memory fit, in its few iterations."""
    X, y = _data(n=800, d=20, classes=4, seed=9)
    X[:, 3] = 1e6 * np.abs(X[:, 3]) + 5e6                  # an amount in other units
    kw = dict(solver=solver, tol=1e-8, max_iter=3000)
    local = SparsemaxClassifier(**kw).fit(X, y)
    spread = SparsemaxClassifier(**kw).fit(da.from_array(X, chunks=(300, -1)),
                                           da.from_array(y, chunks=200))
    assert spread.alpha_ == pytest.approx(local.alpha_, rel=1e-12)
    assert local.n_iter_ < 200
    np.testing.assert_allclose(spread.n_iter_, local.n_iter_, atol=max(2, local.n_iter_ // 10))
    np.testing.assert_allclose(spread.predict_proba(X), local.predict_proba(X), atol=1e-6)


def test_sparsemax_dask_class_weight_is_the_in_memory_one(client):
    """'balanced' from the partitions' class totals, applied on the workers: the in-memory
    fit (alpha="scale" follows the weighted rows on both)."""
    X, y = _data(n=600, d=10, classes=3, seed=12)
    keep = (y != 2) | (np.arange(len(y)) % 5 == 0)          # class 2 rare
    X, y = X[keep], y[keep]
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    kw = dict(solver="lbfgs", tol=1e-10, max_iter=3000, class_weight="balanced")
    local = SparsemaxClassifier(**kw).fit(X, y, sample_weight=w)
    spread = SparsemaxClassifier(**kw).fit(da.from_array(X, chunks=(150, -1)),
                                           da.from_array(y, chunks=150),
                                           sample_weight=da.from_array(w, chunks=150))
    assert spread.alpha_ == pytest.approx(local.alpha_, rel=1e-12)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-6, atol=1e-7)

def test_sparsemax_dask_refuses_what_it_cannot_run(client):
    X, y = _data(n=200, d=5, seed=9)
    Xd = da.from_array(X, chunks=(100, -1))
    for model in (SparsemaxClassifier(), SparsemaxClassifierCV(alphas=2, cv=2)):
        with pytest.raises(ValueError, match="in memory only"):
            model.set_params(solver="sdca").fit(Xd, y)
    with pytest.raises(ValueError, match="negated needs 2-D targets"):
        SparsemaxClassifierCV(alphas=2, cv=2, negated=[True, False, False]).fit(Xd, y)
    with pytest.raises(ValueError, match="class_weight weighs the classes of class labels"):
        SparsemaxClassifier(class_weight="balanced").fit(Xd, np.eye(3)[y])
    with pytest.raises(ValueError, match=r"Target entries must lie in \[0, 1\]"):
        SparsemaxClassifier().fit(Xd, np.c_[y, y])
    with pytest.raises(ValueError, match=r"y must have 200 rows as X, got shape \(150, 3\)"):
        SparsemaxClassifier().fit(Xd, np.eye(3)[y][:150])
    Y = np.eye(3)[y]
    Y[[130, 177]] = 1.0                # in the second partition: named by their rows in y
    with pytest.raises(ValueError, match=r"sums to more than budget=2 \(rows \[130, 177\]\)"):
        SparsemaxClassifier(polytope="budget", budget=2).fit(Xd, Y)


def _label_sets(n=600, d=12, k=5, seed=0):
    """X and label sets of k labels; the first 7 rows without a label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X @ rng.normal(size=(d, k)) + rng.normal(size=(n, k)) > 0.8).astype(np.int64)
    Y[:7] = 0
    return X, Y


@pytest.mark.parametrize("case", ["label sets", "box", "proportions", "newton-cg, float32",
                                  "negated", "sparse y", "y as a DataFrame"])
def test_sparsemax_dask_label_sets_are_the_in_memory_fit(client, case):
    """2-D targets on dask arrays: each partition's targets are built on its worker as in
    memory (their kind, the rows without a label, said once, and negated columns), and
    the decision threshold is searched over the partitions' label scores: the same model
    and the same threshold_ as the in-memory fit (the search's cut is the in-memory one)."""
    import dask.dataframe as dd
    import pandas as pd

    X, Y = _label_sets(seed=3)
    rng = np.random.default_rng(4)
    w = rng.uniform(0.5, 2.0, len(X))
    kw = dict(tol=1e-10, max_iter=5000)
    if case == "box":
        kw["polytope"] = "box"
    elif case == "proportions":
        Y = rng.dirichlet(np.ones(5), len(X))
    elif case == "newton-cg, float32":
        kw["solver"], X = "newton-cg", X.astype(np.float32)
    elif case == "negated":         # the first label's column fit as 1 - y
        Y = np.eye(3, dtype=np.int64)[rng.integers(0, 3, len(X))]
        kw.update(polytope="box", negated=[True, False, False])
    Yd = {"sparse y": sp.csr_matrix(Y),
          "y as a DataFrame": dd.from_pandas(pd.DataFrame(Y), npartitions=4)}.get(
              case, da.from_array(Y, chunks=(130, -1)))
    Xd = (dd.from_pandas(pd.DataFrame(X), npartitions=4) if case == "y as a DataFrame"
          else da.from_array(X, chunks=(150, -1)))
    wd = (dd.from_pandas(pd.Series(w), npartitions=4) if case == "y as a DataFrame"
          else da.from_array(w, chunks=150))
    def fit(X, Y, w):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = SparsemaxClassifier(**kw).fit(X, Y, sample_weight=w)
        return model, [str(m.message) for m in caught if "active label" in str(m.message)]
    local, local_said = fit(X, Y, w)
    spread, spread_said = fit(Xd, Yd, wd)
    on_the_simplex = local.polytope == "simplex" and local.target_type_ == "multilabel"
    unlabelled = int(np.sum(Y.sum(axis=1) == 0)) if on_the_simplex else 0
    assert spread_said == local_said == ([f"{unlabelled} rows of y have no active label; they "
                                          "are left out of the fit (their sparsemax target is "
                                          "undefined)."] if unlabelled else [])
    assert spread.target_type_ == local.target_type_
    assert spread.coef_.dtype == local.coef_.dtype
    rtol, atol = (1e-4, 1e-5) if X.dtype == np.float32 else (1e-6, 1e-8)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=rtol, atol=atol)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=rtol, atol=atol)
    assert spread.threshold_ == pytest.approx(local.threshold_, rel=rtol, abs=1e-12)
    np.testing.assert_array_equal(spread.classes_, local.classes_)
    np.testing.assert_array_equal(spread.predict(X), local.predict(X))
    if case == "label sets":
        assert local.threshold_ > 0 and spread.predict(X).dtype == Y.dtype
        predicted = spread.predict(da.from_array(X, chunks=(200, -1)))
        assert isinstance(predicted, da.Array) and predicted.shape == Y.shape
        np.testing.assert_array_equal(predicted.compute(), local.predict(X))


@pytest.mark.filterwarnings("ignore:.*no active label")
@pytest.mark.filterwarnings("ignore:.*no active label")
@pytest.mark.parametrize("layout", ["dense", "sparse y"])
def test_sparsemax_cross_validation_of_dask_label_sets_is_the_in_memory_one(client, layout):
    """SparsemaxClassifierCV on dask arrays with label sets: each fold's fits weigh its
    training rows on the workers, with the decision threshold of those rows; the held-out
    rows' scores come back and are cut at it (micro-F1): the grid, the scores, the model
    and its threshold_ are the in-memory cross-validation's."""
    X, Y = _label_sets(n=450, d=10, k=4, seed=6)
    w = np.random.default_rng(7).uniform(0.5, 2.0, len(X))
    params = dict(alphas=3, cv=3, tol=1e-10, max_iter=5000)
    local = SparsemaxClassifierCV(**params).fit(X, Y, sample_weight=w)
    Yd = sp.csr_matrix(Y) if layout == "sparse y" else da.from_array(Y, chunks=(100, -1))
    spread = SparsemaxClassifierCV(**params).fit(da.from_array(X, chunks=(150, -1)), Yd,
                                                 sample_weight=da.from_array(w, chunks=150))
    np.testing.assert_allclose(spread.alphas_, local.alphas_, rtol=1e-12)
    np.testing.assert_allclose(spread.scores_, local.scores_, rtol=1e-9, atol=1e-12)
    assert spread.alpha_ == pytest.approx(local.alpha_, rel=1e-12)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-8)
    assert spread.threshold_ == pytest.approx(local.threshold_, rel=1e-6)
    assert spread.target_type_ == "multilabel" and local.scores_.std() > 0
    np.testing.assert_array_equal(spread.predict(X), local.predict(X))


@pytest.mark.filterwarnings("ignore:.*no active label")
def test_label_set_thresholds_gather_histograms_not_rows(client, monkeypatch):
    """The decision threshold of label sets on many rows: the partitions' label scores stay
    on the workers; histograms of their values come back, and the entries of the value
    ranges where the best cut can lie (at most GATHERED of them a range)."""
    from sparsekit.metrics import _thresholds

    X, Y = _label_sets(n=8000, d=10, k=6, seed=5)
    local = SparsemaxClassifier(tol=1e-8).fit(X, Y)
    monkeypatch.setattr(_thresholds, "GATHERED", 300)
    monkeypatch.setattr(_thresholds, "BINS", 64)
    sizes = _gathered_sizes(monkeypatch)
    spread = SparsemaxClassifier(tol=1e-8).fit(da.from_array(X, chunks=(2000, -1)),
                                               da.from_array(Y, chunks=(2000, -1)))
    assert spread.threshold_ == pytest.approx(local.threshold_, rel=1e-9)
    assert max(sizes) <= 5 * 8 * 64               # one histogram of 64 bins, or vectors
    assert sum(sizes) < X[:2000].nbytes


def _sparsemax_cv_case(case):
    """(X, its dask form, y, the CV's parameters, fit arguments in memory, on dask)."""
    X, y = _data(n=450, d=20, classes=3, seed=13)
    if case.startswith("sparse"):
        w = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
        third = np.flatnonzero(y == 2)              # the first fold trains without it
        folds = []
        for test in (np.concatenate([third, np.arange(0, 450, 4)]),
                     np.arange(1, 450, 3)):
            test = np.unique(test)
            train = np.setdiff1d(np.arange(450), test)[::-1]               # unsorted
            folds.append((np.concatenate([train, train[:30]]), test))      # repeated rows
        params = dict(alphas=3, cv=folds, solver="lbfgs", tol=1e-10, max_iter=5000)
        return (X, _sparse_dask(X, 100), y, params, dict(sample_weight=w),
                dict(sample_weight=da.from_array(w, chunks=120)))
    params = dict(alphas=[0.3, 0.03, 0.003], cv=3, solver="newton-cg", tol=1e-10,
                  class_weight="balanced", scoring="f1_macro", n_jobs=2)
    return X, da.from_array(X, chunks=(100, -1)), y, params, {}, {}


@pytest.mark.parametrize("case", ["sparse, weights, folds with repeated rows, one without "
                                  "a class",
                                  "dense, balanced, f1_macro, n_jobs on the dask backend"])
def test_sparsemax_cross_validation_of_dask_arrays_is_the_in_memory_one(client, case):
    """SparsemaxClassifierCV on dask arrays: each fold's fits weigh its training rows on
    the workers (a class the fold lacks: its rows weigh 0 and the fold's model lacks it,
    as in memory) and its held-out scores come back; the grid, the scores and the refit
    equal the in-memory ones."""
    import joblib

    X, Xd, y, params, fit_local, fit_dask = _sparsemax_cv_case(case)
    local = SparsemaxClassifierCV(**params).fit(X, y, **fit_local)
    with joblib.parallel_backend("dask" if "dask backend" in case else "loky"):
        spread = SparsemaxClassifierCV(**params).fit(Xd, da.from_array(y, chunks=50),
                                                     **fit_dask)
    np.testing.assert_allclose(spread.alphas_, local.alphas_, rtol=1e-12)
    np.testing.assert_allclose(spread.scores_, local.scores_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(spread.n_iter_path_, local.n_iter_path_, atol=3)
    assert spread.alpha_ == pytest.approx(local.alpha_, rel=1e-12)
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(spread.intercept_, local.intercept_, rtol=1e-6, atol=1e-7)
    assert spread.n_features_in_ == X.shape[1] and not hasattr(spread, "feature_names_in_")
    assert spread.score(X, y) == pytest.approx(local.score(X, y), rel=1e-7)


def test_sparsemax_cross_validation_of_dask_arrays_counts_its_own_threads(client,
                                                                            monkeypatch):
    """The folds of dask arrays run in threads of the client, whose solvers share its
    memory: n_jobs of them at a time, not what joblib's dask backend, when in effect, says
    of the cluster (its 2 workers' threads): three folds with n_jobs=3 are refused naming
    n_jobs where two L-BFGS fits fit but not three, and run with n_jobs=2."""
    import joblib

    import sparsekit.linear_model._sparsemax_solvers as solvers
    X, y = _data(n=300, d=10)
    weights = (X.shape[1] + 1) * 3 * 8
    monkeypatch.setattr(solvers, "physical_memory",
                        lambda: 2.5 * solvers.SOLVER_ARRAYS["lbfgs"] * weights)
    Xd, yd = da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100)
    cv = SparsemaxClassifierCV(alphas=2, cv=3, solver="lbfgs", n_jobs=3)
    with joblib.parallel_backend("dask"):
        with pytest.raises(ValueError, match=r"in the 3 fits that run at a time .*n_jobs"):
            cv.fit(Xd, yd)
        assert cv.set_params(n_jobs=2).fit(Xd, yd).solver_ == "lbfgs"


def test_one_vs_rest_problems_and_path_chunks_on_the_dask_backend(client):
    """The one-vs-rest problems of one fit (``n_jobs``) and chunks of a regularization path
    (one ``l1_logistic_path`` per chunk of C values) run as tasks of the cluster through
    joblib's dask backend, with the in-memory results."""
    import joblib

    X, y = _data(n=400, seed=10)
    local = L1LogisticOBA(C=0.3, tol=1e-10).fit(X, y)
    with joblib.parallel_backend("dask"):
        spread = L1LogisticOBA(C=0.3, tol=1e-10, n_jobs=-1).fit(X, y)
        chunks = joblib.Parallel(n_jobs=-1)(
            joblib.delayed(l1_logistic_path)(X, y, Cs, pos_class=1, tol=1e-10)
            for Cs in ([0.1, 0.3], [1.0, 3.0]))
    np.testing.assert_allclose(spread.coef_, local.coef_, rtol=1e-12, atol=1e-14)
    whole, _, _ = l1_logistic_path(X, y, [0.1, 0.3, 1.0, 3.0], pos_class=1, tol=1e-10)
    np.testing.assert_allclose(np.vstack([c for c, _, _ in chunks]), whole, rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_regularization_path_of_a_dask_array_is_the_in_memory_one(client, multiclass):
    """l1_logistic_path on a dask array (CSR blocks, dask sample weights) solves on the
    workers: the in-memory path's grid and solutions; one path on a chunked y too."""
    X, y = _data(n=300, d=12, seed=11)
    sw = np.random.default_rng(2).uniform(0.5, 2.0, y.size)
    params = dict(Cs=4, tol=1e-10, multiclass=multiclass, l1_ratio=0.8)
    if multiclass == "ovr":
        params["pos_class"] = 2
    local = l1_logistic_path(sp.csr_matrix(X), y, sample_weight=sw, **params)
    coefs, Cs, n_iter = l1_logistic_path(_sparse_dask(X, 100), da.from_array(y, chunks=100),
                                         sample_weight=da.from_array(sw, chunks=100),
                                         **params)
    np.testing.assert_allclose(Cs, local[1], rtol=1e-10)
    np.testing.assert_allclose(coefs, local[0], rtol=1e-6, atol=1e-8)
    assert n_iter.shape == local[2].shape
    with pytest.raises(ValueError, match="pos_class must be given"):
        l1_logistic_path(da.from_array(X, chunks=(100, -1)), y)


def test_incremental_streams_a_dask_dataframe(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    dask_ml = pytest.importorskip("dask_ml.wrappers")
    from sparsekit import ExtremeSoftmaxSGD

    X, y = _data(n=2000, d=10, classes=4, seed=11)
    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"f{j}" for j in range(10)]),
                           npartitions=4)
    labels = dd.from_pandas(pd.Series(y), npartitions=4)
    inc = dask_ml.Incremental(ExtremeSoftmaxSGD(random_state=0, lr_decay=1.0))
    inc.fit(frame, labels, classes=np.arange(4))
    assert inc.estimator_.n_iter_ == 4
    assert list(inc.estimator_.feature_names_in_) == [f"f{j}" for j in range(10)]
    assert inc.estimator_.score(pd.DataFrame(X, columns=frame.columns), y) > 0.4


def test_dask_fits_leave_nothing_for_the_cyclic_garbage_collector(client):
    """The dask datafits hold futures of the partitions' blocks on the workers: one in a
    reference cycle (the sparsemax datafit's data term, a method bound to itself) kept
    them there after the fit until the client's cyclic garbage collector ran."""
    from _memory import left_for_the_collector

    X, y = _data(n=400, d=20, classes=3, seed=2)
    Xd = da.from_array(X, chunks=(100, -1))
    for fit in (lambda: SparsemaxClassifier(max_iter=20).fit(Xd, y),
                lambda: SparsemaxClassifier(solver="newton-cg", max_iter=20).fit(Xd, y),
                lambda: L1LogisticOBA().fit(Xd, y),
                lambda: L1LogisticOBA(multiclass="multinomial").fit(Xd, y)):
        assert not left_for_the_collector(fit)


@pytest.mark.parametrize("name", ["L1LogisticOBACV", "SparsemaxClassifierCV"])
def test_an_interrupted_cv_fit_ends_the_fold_paths_it_left_in_threads(client, monkeypatch,
                                                                       name):
    """An interrupt of the calling thread (a KeyboardInterrupt in a notebook; here a signal
    whose handler raises) while the fold paths on dask arrays run in threads of the client
    (``n_jobs=2``) ends their solves at the next iteration, where they would otherwise drive
    the cluster on to the end of their paths (4 solves each, to tol 1e-12); the estimator
    is left as it was."""
    from sparsekit.linear_model import _l1_path, _sparsemax

    first = FirstIteration()    # each iteration 20 ms longer; the first interrupts
    if name == "L1LogisticOBACV":
        given = _l1_path.oba_solve

        def solve(datafit, C, tol, max_iter, x0, verbose, l1_ratio=1.0, cg_maxiter=1000,
                  callback=None):
            return given(datafit, C, tol, max_iter, x0, verbose, l1_ratio, cg_maxiter,
                         first.slowed(callback))
        monkeypatch.setattr(_l1_path, "oba_solve", solve)
        est = L1LogisticOBACV(Cs=4, cv=3, tol=1e-12, n_jobs=2)
    else:
        given = _sparsemax.SparsemaxClassifier._solve

        def solve(self, solver, datafit, theta0, bounds, callback=None):
            return given(self, solver, datafit, theta0, bounds, first.slowed(callback))
        monkeypatch.setattr(_sparsemax.SparsemaxClassifier, "_solve", solve)
        est = SparsemaxClassifierCV(alphas=4, cv=3, tol=1e-12, n_jobs=2)
    X, y = _data(n=600, d=20, classes=3, seed=9)
    Xd = da.from_array(X, chunks=(200, -1))
    made, ended = first.interrupt(lambda: est.fit(Xd, y), wait=1.0)
    # the first iteration of each thread that was solving, and at most one more each
    assert made == ended <= 4
    assert not hasattr(est, "coef_")
