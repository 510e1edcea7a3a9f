"""Sparse inputs whose index arrays point outside their shape are refused with a ValueError
by every estimator, before any kernel (or SciPy conversion) reads or writes out of bounds."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier, l1_logistic_path
from sparsekit.utils._validation import check_sparse_structure

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 5))
y = np.arange(30) % 3


def _index_out_of_range(fmt, dtype=np.int32):
    M = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
    M.indices, M.indptr = M.indices.astype(dtype), M.indptr.astype(dtype)
    M.indices[7] = 10**12 if dtype == np.int64 else 100
    return M


def _negative_index():
    M = sp.csr_matrix(X)
    M.indices[3] = -1
    return M


def _indptr_past_the_entries():
    M = sp.csr_matrix(X)
    M.indptr[-1] = 10**6
    return M


def _decreasing_indptr():
    M = sp.csr_matrix(X)
    M.indptr[5] = 2
    return M


def _coo_outside():
    M = sp.coo_matrix(X)
    M.col[3] = 77
    return M


CORRUPT = {
    "csr index": lambda: _index_out_of_range("csr"),
    "csr int64 index": lambda: _index_out_of_range("csr", np.int64),
    "csc index": lambda: _index_out_of_range("csc"),
    "negative index": _negative_index,
    "indptr past the entries": _indptr_past_the_entries,
    "decreasing indptr": _decreasing_indptr,
    "coo outside": _coo_outside,
}
ESTIMATORS = {
    "sparsemax": lambda: SparsemaxClassifier(),
    "sparsemax nqn": lambda: SparsemaxClassifier(solver="nqn"),
    "l1": lambda: L1LogisticOBA(),
    "extreme": lambda: ExtremeSoftmaxSGD(n_epochs=1, random_state=0),
}


@pytest.mark.parametrize("corrupt", CORRUPT)
@pytest.mark.parametrize("make", ESTIMATORS)
def test_fit_and_predict_refuse_out_of_range_indices(make, corrupt):
    with pytest.raises(ValueError, match="indices outside|invalid indptr|coordinates outside"):
        ESTIMATORS[make]().fit(CORRUPT[corrupt](), y)
    model = ESTIMATORS[make]().fit(X, y)
    for method in ("predict", "decision_function"):
        with pytest.raises(ValueError, match="indices outside|invalid indptr|coordinates"):
            getattr(model, method)(CORRUPT[corrupt]())


def test_path_and_sparse_targets_are_checked():
    with pytest.raises(ValueError, match="X \\(CSR\\) has indices outside \\[0, 5\\)"):
        l1_logistic_path(_index_out_of_range("csr"), y % 2)
    Y = sp.csr_matrix(np.eye(3)[y])
    Y.indices[0] = 9
    with pytest.raises(ValueError, match="y \\(CSR\\) has indices outside \\[0, 3\\)"):
        SparsemaxClassifier().fit(X, Y)
    with pytest.raises(ValueError, match="y \\(CSR\\) has indices outside"):
        ExtremeSoftmaxSGD(multilabel="first").fit(X, Y)


@pytest.mark.parametrize("M", [
    sp.csr_matrix((3, 4)), sp.csc_matrix(X), sp.coo_matrix(X), sp.bsr_matrix(X[:, :4],
                                                                              blocksize=(2, 2)),
    sp.csr_matrix(X).astype(np.float32), sp.lil_matrix(X), sp.dok_matrix(X), X,
])
def test_well_formed_inputs_pass(M):
    check_sparse_structure(M)


def test_spare_capacity_after_the_entries_is_not_read():
    """SciPy allows index and data arrays longer than indptr[-1]: the tail is unused."""
    M = sp.csr_matrix(X)
    M = sp.csr_matrix((np.r_[M.data, 1.0], np.r_[M.indices, 99], M.indptr), shape=M.shape)
    check_sparse_structure(M)
