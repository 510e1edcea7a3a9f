"""Crafted invalid sparse inputs, fed to public entry points in one process.

``python _crafted_inputs.py ENTRY [ENTRY ...]`` calls each entry point ENTRY (a key of
``ENTRIES``) in turn on every crafted input of ``CASES`` and prints one line per case as
soon as it ends: ``entry<TAB>case<TAB>outcome<TAB>message``, the outcome being the
exception's type name or ``returned``. A segfault or an abort kills this process, not the
test that started it: the test reads the case started last from
``start<TAB>entry<TAB>case`` lines, and runs the entries after it in a new process.
"""
import sys
import warnings

import numpy as np
import scipy.sparse as sp

rng = np.random.default_rng(0)
X = rng.random((24, 6))
X[X < 0.4] = 0.0
X[:, 0] = 1.0                      # every row and column holds entries
y = np.arange(24) % 3
Y = np.eye(3)[y]                   # the same labels as an indicator matrix


def _compressed(fmt, base=X):
    return {"csr": sp.csr_matrix, "csc": sp.csc_matrix,
            "bsr": lambda A: sp.bsr_matrix(A, blocksize=(2, 1))}[fmt](base)


def _with(M, **arrays):
    for name, value in arrays.items():
        setattr(M, name, value)
    return M


def _set(array, position, value):
    array = np.array(array)
    array[position] = value
    return array


def _lil(base, row=None, data=None):
    M = sp.lil_matrix(base)
    if row is not None:
        M.rows[0] = row
        M.data[0] = [1.0] * len(row)
    if data is not None:
        M.data[1] = data
    return M


def _dok(base, key):
    M = sp.dok_matrix(base)
    # its storage, where M[key] = 1.0 would refuse the key: a dict attribute since SciPy
    # 1.13, the matrix itself (a dict subclass) before
    dict.__setitem__(getattr(M, "_dict", M), key, 1.0)
    return M


OUTSIDE, INDPTR = r"outside \[0, \d+\)", "invalid indptr"


def _cases(base, name):
    """name -> (function making one crafted invalid matrix shaped like ``base``, regex of
    the message that names its defect)."""
    n, d = base.shape
    cases = {}
    for fmt in ("csr", "csc", "bsr"):
        minor = {"csr": d, "csc": n, "bsr": d}[fmt]
        cases.update({
            f"{fmt} index 10**7": lambda f=fmt: _with(
                M := _compressed(f, base), indices=_set(M.indices, 0, 10**7)),
            f"{fmt} index at the dimension": lambda f=fmt, m=minor: _with(
                M := _compressed(f, base), indices=_set(M.indices, -1, m)),
            f"{fmt} negative index": lambda f=fmt: _with(
                M := _compressed(f, base), indices=_set(M.indices, 2, -1)),
            f"{fmt} decreasing indptr": lambda f=fmt: _with(
                M := _compressed(f, base), indptr=_set(M.indptr, 2, M.indptr[3] + 1)),
            f"{fmt} indptr past the entries": lambda f=fmt: _with(
                M := _compressed(f, base), indptr=_set(M.indptr, -1, M.indptr[-1] + 9)),
            f"{fmt} short indptr": lambda f=fmt: _with(
                M := _compressed(f, base), indptr=M.indptr[:-2]),
            f"{fmt} short data": lambda f=fmt: _with(
                M := _compressed(f, base), data=M.data[:-1]),
            f"{fmt} float indices": lambda f=fmt: _with(
                M := _compressed(f, base), indices=M.indices.astype(np.float64)),
        })
    cases.update({
        "csr uint64 index past int64": lambda: _with(
            M := sp.csr_matrix(base), indices=_set(M.indices.astype(np.uint64), 0, 2**63 + 1),
            indptr=M.indptr.astype(np.uint64)),
        "coo column 10**7": lambda: _with(
            M := sp.coo_matrix(base), col=_set(M.col, 0, 10**7)),
        "coo negative row": lambda: _with(M := sp.coo_matrix(base), row=_set(M.row, 1, -1)),
        "coo short data": lambda: _with(M := sp.coo_matrix(base), data=M.data[:-1]),
        "lil column 10**7": lambda: _lil(base, row=[10**7]),
        "lil column at the dimension": lambda: _lil(base, row=[d]),
        "lil negative column": lambda: _lil(base, row=[-1]),
        "lil float column": lambda: _lil(base, row=[1.5]),
        "lil short value list": lambda: _lil(base, data=[]),
        "dok key outside": lambda: _dok(base, (0, 10**7)),
        "dok negative key": lambda: _dok(base, (-1, 0)),
        "dia data rows not one per offset": lambda: _with(
            M := sp.dia_matrix(base), data=M.data[:1]),
    })
    patterns = {"index": OUTSIDE, "column": OUTSIDE, "row": OUTSIDE, "key": OUTSIDE,
                "indptr": INDPTR, "short data": INDPTR, "float": "must hold integers",
                "value list": "differ in length", "offset": "one data row per offset"}
    patterns = {**patterns, "coo short data": "different lengths"}
    named = {}
    for case, make in cases.items():
        pattern = [p for key, p in patterns.items() if key in case][-1]
        named[f"{name}: {case}"] = (make, pattern)
    return named


CASES = _cases(X, "X")
TARGET_CASES = _cases(Y, "y")


def _fitted(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().fit(X, y)


def _entries():
    from sparsekit import (ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier,
                           SparsemaxClassifierCV)
    from sparsekit import l1_logistic_path, losses, projections
    from sparsekit.linear_model import first_label, precision_at_k
    from sparsekit.optimize import minimize_oba

    def sgd():
        return ExtremeSoftmaxSGD(n_epochs=1, eval_every=0, random_state=0)

    entries = {}
    for label, make in {"SparsemaxClassifier": SparsemaxClassifier,
                        "SparsemaxClassifier(sdca)": lambda: SparsemaxClassifier(
                            solver="sdca"),
                        "SparsemaxClassifierCV": lambda: SparsemaxClassifierCV(alphas=2, cv=2),
                        "L1LogisticOBA": L1LogisticOBA, "ExtremeSoftmaxSGD": sgd}.items():
        entries[f"{label}.fit"] = (CASES, lambda M, make=make: make().fit(M, y))
    entries["ExtremeSoftmaxSGD.partial_fit"] = (
        CASES, lambda M: sgd().partial_fit(M, y, classes=[0, 1, 2]))
    methods = {
        "SparsemaxClassifier": ("predict", "predict_proba", "predict_log_proba",
                                "decision_function", "score"),
        "L1LogisticOBA": ("predict", "predict_proba", "predict_log_proba", "decision_function",
                        "score"),
        "ExtremeSoftmaxSGD": ("predict", "predict_proba", "predict_log_proba", "decision_function",
              "predict_topk", "score"),
    }
    makers = {"SparsemaxClassifier": SparsemaxClassifier, "L1LogisticOBA": L1LogisticOBA,
              "ExtremeSoftmaxSGD": sgd}
    for name, names in methods.items():
        make = makers[name]
        for method in names:
            label = f"{name}.{method}"
            args = {"score": (y,), "predict_topk": (2,)}.get(method, ())
            entries[label] = (CASES, lambda M, make=make, m=method, a=args:
                              getattr(_fitted(make), m)(M, *a))
    # sparse targets: label-indicator matrices
    entries["SparsemaxClassifier.fit(y)"] = (
        TARGET_CASES, lambda M: SparsemaxClassifier().fit(X, M))
    entries["SparsemaxClassifierCV.fit(y)"] = (
        TARGET_CASES, lambda M: SparsemaxClassifierCV(alphas=2, cv=2).fit(X, M))
    entries["SparsemaxClassifier.score(y)"] = (
        TARGET_CASES, lambda M: SparsemaxClassifier().fit(X, Y).score(X, M))
    entries["ExtremeSoftmaxSGD.fit(y)"] = (
        TARGET_CASES, lambda M: ExtremeSoftmaxSGD(multilabel="first", n_epochs=1).fit(X, M))
    entries["first_label"] = (TARGET_CASES, first_label)
    entries["precision_at_k"] = (TARGET_CASES, lambda M: precision_at_k(M, y[:, None]))
    entries["l1_logistic_path"] = (CASES, lambda M: l1_logistic_path(M, y % 2, Cs=[1.0]))
    coef, u = np.ones((3, X.shape[1])), np.zeros(X.shape[0])
    for name, args in {"softmax_scores": (coef,), "softmax_nll": (y, coef),
                       "optimal_u": (y, coef), "double_sum_objective": (y, coef, u),
                       "double_sum_gradient": (y, coef, u), "ove_objective": (y, coef),
                       "ove_gradient": (y, coef)}.items():
        entries[f"losses.{name}"] = (CASES, lambda M, f=getattr(losses, name), a=args:
                                     f(M, *a))
    entries["losses.sparsemax_loss"] = (CASES, lambda M: losses.sparsemax_loss(M, Y))
    entries["projections.project"] = (CASES, lambda M: projections.project(M, "simplex"))
    entries["projections.jvp"] = (CASES, lambda M: projections.jvp(M, M, "simplex"))
    entries["minimize_oba"] = (CASES, lambda M: minimize_oba(
        lambda x: (0.5 * x @ x, x), lambda x, free: (lambda v: v), M, 1.0))
    return entries


def main(names):
    entries = _entries()
    for entry in names:
        cases, call = entries[entry]
        for case, (make, _) in cases.items():
            print(f"start\t{entry}\t{case}", flush=True)
            M = make()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    call(M)
                outcome, message = "returned", ""
            except Exception as exc:      # the test judges the type and the message
                outcome, message = type(exc).__name__, str(exc).replace("\n", " ")
            print(f"{entry}\t{case}\t{outcome}\t{message}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
