"""L1LogisticOBACV's folds: their rows laid out once for all their problems, the folds'
solutions gathered path by path (dense or sparse, on the used columns), and the check
that every training fold weighs two classes."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparsekit.linear_model._l1_folds as folds_module
from sparsekit.linear_model import L1LogisticOBACV
from sparsekit.linear_model._l1_folds import FoldPaths, check_fold
from sparsekit.utils._columns import UsedColumns
from test_l1_logistic_cv import _data


@pytest.mark.parametrize("sparse", [False, True])
def test_a_folds_problems_share_its_rows_laid_out_once(monkeypatch, sparse):
    """One-vs-rest: each training fold's rows are copied for the column kernels once for
    all its classes, as a fit copies X once (not once per fold and class); so are all
    the rows, for the grid of C."""
    laid_out = []

    def counted(X, n_problems=1, *args, **kwargs):
        laid_out.append((X.shape[0], n_problems))
        return layouts(X, n_problems, *args, **kwargs)

    layouts = folds_module.layouts
    monkeypatch.setattr(folds_module, "layouts", counted)
    X, y = _data(4, seed=8, sparse=sparse)
    est = L1LogisticOBACV(Cs=3, cv=3).fit(X, y)
    assert laid_out == [(120, 4)] + [(80, 4)] * 3
    reference = L1LogisticOBACV(Cs=3, cv=3, n_jobs=2).fit(X, y)    # chunks in processes
    np.testing.assert_array_equal(est.coefs_paths_, reference.coefs_paths_)


@pytest.mark.parametrize("span, n_problems", [(1, 3), (3, 1)])   # one-vs-rest, multinomial
def test_fold_paths_dense_and_sparse_hold_the_same_solutions(span, n_problems):
    """Paths added fold-major then problem by problem: each block (fold, l1_ratio, C) is
    the problems' rows side by side, the same from the dense array and from the CSR rows,
    and on X's columns after ``expand`` (zeros on the columns no row stores)."""
    rng = np.random.default_rng(0)
    n_folds, n_ratios, n_Cs, n_dof = 3, 2, 4, 5
    shape = (n_folds, n_ratios, n_Cs, span * n_problems, n_dof)
    paths = {(f, i): rng.standard_normal((n_ratios, n_Cs, span, n_dof))
             * (rng.random((n_ratios, n_Cs, span, n_dof)) < 0.5)
             for f in range(n_folds) for i in range(n_problems)}
    X = sp.csr_matrix(np.hstack([np.ones((6, 2)), np.zeros((6, 3)), np.ones((6, 2))]))
    columns = UsedColumns(X)
    assert columns.n_used == n_dof - 1
    stores = {}
    for sparse in (False, True):
        solutions = FoldPaths(shape, span, sparse)
        for (f, i), coefs in paths.items():
            solutions.add(f, i, coefs)
        solutions.close()
        stores[sparse] = solutions
    for f in range(n_folds):
        for r in range(n_ratios):
            for c in range(n_Cs):
                expected = np.vstack([paths[f, i][r, c] for i in range(n_problems)])
                for solutions in stores.values():
                    np.testing.assert_array_equal(solutions.block(f, r, c), expected)
    assert sp.issparse(stores[True].stored) and not sp.issparse(stores[False].stored)
    for solutions in stores.values():       # 4 used columns of 7, the intercept last
        solutions.expand(columns)
        block = solutions.block(1, 1, 2)
        assert block.shape == (span * n_problems, 8)
        expected = np.vstack([paths[1, i][1, 2] for i in range(n_problems)])
        np.testing.assert_array_equal(block[:, [0, 1, 5, 6, 7]], expected)
        assert not block[:, 2:5].any()


def test_a_training_fold_must_weigh_two_classes():
    classes = np.array(["a", "b", "c"])
    check_fold(classes, np.array([0, 1, 1]), np.ones(3), 0)
    with pytest.raises(ValueError, match=r"training fold 2 weighs only the class 'b': every "
                                         r"training fold needs two classes"):
        check_fold(classes, np.array([0, 1, 1]), np.array([0.0, 1.0, 1.0]), 2)
    with pytest.raises(ValueError, match="training fold 0 weighs no sample"):
        check_fold(classes, np.array([0, 1]), np.zeros(2), 0)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_the_folds_data_is_freed_before_the_refit_lays_x_out(monkeypatch, multiclass):
    """The refit lays X out for its own fit: the folds' data (their copy of X's rows) is
    gone by then, so that the two copies are never held at once."""
    import gc
    import weakref

    from sparsekit.linear_model import L1LogisticOBA, _l1_logistic_cv

    made, alive = [], []

    class Recorded(folds_module.MemoryFolds):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(weakref.ref(self))

    def fit(est, *args, **kwargs):
        alive.append(made[-1]() is not None)
        return fit_once(est, *args, **kwargs)

    fit_once = L1LogisticOBA.fit
    monkeypatch.setattr(_l1_logistic_cv, "MemoryFolds", Recorded)
    monkeypatch.setattr(L1LogisticOBA, "fit", fit)
    X, y = _data(3, seed=8, sparse=True)
    gc.disable()                                        # freed as its last reference goes
    try:
        L1LogisticOBACV(Cs=3, cv=3, multiclass=multiclass).fit(X.tocsc(), y)
    finally:
        gc.enable()
    assert alive == [False]


@pytest.mark.parametrize("sparse", [False, True])
def test_host_x_cross_validated_on_the_gpu_is_one_copy_there(cupy_backend, monkeypatch,
                                                             sparse):
    """Host float64 X, centered (a dense column far from 0) and scaled (in units of 1e-4)
    for the device: the folds lay out the copy that moved it there, in place, score the
    held-out rows from it (the model's weights over the scale, the offsets' margins in its
    intercepts), and the refit moves host X again once the folds' copy is gone; the
    scores and the model are the CPU's."""
    import weakref

    from sparsekit.linear_model import _l1_logistic
    from test_gpu_datafits import far_and_tiny

    X_host, X, y = far_and_tiny(sparse)
    moved, alive, datafit_X = [], [], []

    def to_device(X):
        alive.append([ref() is not None for ref in moved])
        X_device = move(X)
        moved.append(weakref.ref(X_device))
        return X_device

    def device_block(*args, **kwargs):
        datafit_X.append(args[3])
        return block(*args, **kwargs)

    move, block = _l1_logistic.to_device, folds_module.device_block
    monkeypatch.setattr(_l1_logistic, "to_device", to_device)
    monkeypatch.setattr(folds_module, "device_block", device_block)
    cv = dict(Cs=[1e3, 1e4, 1e5], cv=3, tol=1e-10)
    gpu = L1LogisticOBACV(device="cuda", **cv).fit(X_host, y)
    assert alive == [[], [False]]                  # the folds' copy, then the refit's
    assert datafit_X and all(Xd is datafit_X[0] for Xd in datafit_X)
    cpu = L1LogisticOBACV(**cv).fit(X_host, y)
    np.testing.assert_allclose(gpu.scores_, cpu.scores_, rtol=1e-6)
    np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=2e-5, atol=1e-2)
    np.testing.assert_array_equal(X_host.toarray() if sparse else X_host, X)   # untouched
