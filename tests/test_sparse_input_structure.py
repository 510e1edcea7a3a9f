"""Sparse inputs whose stored structure is invalid (indices outside the shape, bad indptr,
short data, in every scipy.sparse format) are refused with a ValueError or TypeError that
names the defect by every public entry point, before any kernel (or SciPy conversion) reads
or writes out of bounds; valid index arrays of any integer type are accepted."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import _crafted_inputs as crafted
from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier
from sparsekit.losses import softmax_scores
from sparsekit.utils._validation import check_sparse_structure

X = crafted.X


ENTRIES = ["SparsemaxClassifier.fit", "SparsemaxClassifier(sdca).fit",
           "SparsemaxClassifierCV.fit", "SparsemaxClassifierCV.fit(y)", "L1LogisticOBA.fit",
           "ExtremeSoftmaxSGD.fit", "ExtremeSoftmaxSGD.partial_fit",
           *[f"SparsemaxClassifier.{m}" for m in ("predict", "predict_proba",
                                                  "predict_log_proba", "decision_function",
                                                  "score")],
           *[f"L1LogisticOBA.{m}" for m in ("predict", "predict_proba", "predict_log_proba",
                                            "decision_function", "score")],
           *[f"ExtremeSoftmaxSGD.{m}" for m in ("predict", "predict_proba",
                                                "predict_log_proba", "decision_function",
                                                "predict_topk", "score")],
           "SparsemaxClassifier.fit(y)", "SparsemaxClassifier.score(y)",
           "ExtremeSoftmaxSGD.fit(y)", "first_label", "precision_at_k", "l1_logistic_path",
           *[f"losses.{f}" for f in ("softmax_scores", "softmax_nll", "optimal_u",
                                     "double_sum_objective", "double_sum_gradient",
                                     "ove_objective", "ove_gradient")]]
#: entry points that take dense arrays only: any sparse input is refused by its type
DENSE_ONLY = ["losses.sparsemax_loss", "projections.project", "projections.jvp",
              "minimize_oba"]


@pytest.fixture(scope="module")
def outcomes(request):
    """``{entry: {case: (exception type name or 'returned', message)}}`` of the entry points
    this session's tests ask for, over every crafted input, or ``{entry: failure}`` for one
    that killed its process. One process runs them in turn (each start imports the package:
    ~2 s); a crash fails that entry's test, naming the case that was running, instead of
    killing pytest, and the entries after it run in a new process."""
    asked = [item.callspec.params["entry"] for item in request.session.items
             if item.module is request.module and "entry" in getattr(
                 getattr(item, "callspec", None), "params", {})]
    script = Path(__file__).with_name("_crafted_inputs.py")
    found, pending = {}, list(dict.fromkeys(asked))
    while pending:
        proc = subprocess.run([sys.executable, str(script), *pending], capture_output=True,
                              text=True, timeout=1200)
        running = None
        for line in proc.stdout.splitlines():
            fields = line.split("\t")
            if fields[0] == "start":
                running = fields[1:]
            else:
                found.setdefault(fields[0], {})[fields[1]] = (fields[2], fields[3])
                running = None
        if proc.returncode == 0:
            break
        # died in a case, or outside them (importing: the first entry that printed nothing)
        entry, case = running or (next((e for e in pending if e not in found), pending[-1]),
                                  "no case")
        found[entry] = (f"{entry} died (exit code {proc.returncode}) on {case}: "
                        f"{proc.stderr[-2000:]}")
        pending = pending[pending.index(entry) + 1:]
    return found


def _run(outcomes, entry):
    """``outcomes``' cases of ``entry``, failing its test if it killed its process."""
    if isinstance(outcomes.get(entry), str):
        pytest.fail(outcomes[entry])
    return outcomes.get(entry, {})


@pytest.mark.parametrize("entry", ENTRIES)
def test_crafted_sparse_input_raises_a_clear_error(outcomes, entry):
    cases = crafted.TARGET_CASES if entry.endswith("(y)") or entry in (
        "first_label", "precision_at_k") else crafted.CASES
    found = _run(outcomes, entry)
    assert set(found) == set(cases)
    for case, (outcome, message) in found.items():
        assert outcome in ("ValueError", "TypeError"), (case, outcome, message)
        assert re.search(cases[case][1], message), (case, message)


@pytest.mark.parametrize("entry", DENSE_ONLY)
def test_dense_only_entry_points_refuse_sparse_input(outcomes, entry):
    found = _run(outcomes, entry)
    assert set(found) == set(crafted.CASES)
    for case, (outcome, message) in found.items():
        assert outcome == "TypeError" and re.search("dense|sparse", message), (case, message)


@pytest.mark.filterwarnings("error:ind.* has non-integer dtype")   # SciPy's, of unsigned ones
@pytest.mark.parametrize("index_type", [np.uint32, np.int16, np.uint64, np.int8, np.uint16])
@pytest.mark.parametrize("make", [
    lambda: SparsemaxClassifier(), lambda: L1LogisticOBA(),
    lambda: ExtremeSoftmaxSGD(n_epochs=2, random_state=0)])
def test_other_integer_index_types_are_read_as_int32(make, index_type):
    """Index arrays of any integer type give the model of the same matrix on int32 indices;
    float32 data too."""
    X = crafted.X
    for fmt, dtype in (("csr", np.float64), ("csc", np.float32)):
        M = sp.csr_matrix(X, dtype=dtype) if fmt == "csr" else sp.csc_matrix(X, dtype=dtype)
        N = M.copy()
        N.indices, N.indptr = M.indices.astype(index_type), M.indptr.astype(index_type)
        reference, model = make().fit(M, crafted.y), make().fit(N, crafted.y)
        np.testing.assert_array_equal(model.coef_, reference.coef_)
        np.testing.assert_array_equal(model.predict_proba(N), reference.predict_proba(M))
        np.testing.assert_array_equal(softmax_scores(N, reference.coef_),
                                      softmax_scores(M, reference.coef_))


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
