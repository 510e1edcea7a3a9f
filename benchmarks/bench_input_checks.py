"""What the input checks cost: the share of a call spent validating a sparse X.

Every estimator entry point checks the structure of a sparse X before scikit-learn's
conversion (which trusts it) and again on the CSR/CSC matrix the kernels receive
(``sparsekit.utils._validation.validate_input``). This times that validation alone against
the whole call, on a9a (32561 x 123, CSR as loaded) and on its LIL copy (whose pre-check
walks Python lists), for ``predict_proba`` on 1, 100 and all rows and for ``fit``, with
each estimator at its defaults (L1LogisticOBA at C = 1, ExtremeSoftmaxSGD without its
NLL history). Medians of 7 runs (3 for fits).

Run: ``python benchmarks/bench_input_checks.py``.
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier  # noqa: E402
from sparsekit.datasets import load_libsvm  # noqa: E402
from sparsekit.utils._validation import validate_input  # noqa: E402

ESTIMATORS = {
    "SparsemaxClassifier": lambda: SparsemaxClassifier(),
    "L1LogisticOBA": lambda: L1LogisticOBA(C=1.0),
    "ExtremeSoftmaxSGD": lambda: ExtremeSoftmaxSGD(eval_every=0, random_state=0),
}


def _check_time(est, X, y=None, repeat=7):
    kwargs = {"accept_sparse": ["csr", "csc"], "dtype": [np.float64, np.float32]}
    if y is None:
        return _report.median_time(lambda: validate_input(est, X, reset=False, **kwargs),
                                   repeat=repeat)[0]
    return _report.median_time(lambda: validate_input(est, X, y, **kwargs), repeat=repeat)[0]


def main():
    X, y = load_libsvm("a9a")
    rows = []
    for name, make in ESTIMATORS.items():
        model = make().fit(X, y)
        for fmt in ("csr", "lil"):
            for n in (1, 100, X.shape[0]):
                Xq = X[:n].asformat(fmt)
                call = _report.median_time(lambda: model.predict_proba(Xq), repeat=7)[0]
                check = _check_time(model, Xq)
                rows.append([name, "predict_proba", fmt, n, f"{1e3 * call:.3f}",
                             f"{1e3 * check:.3f}", f"{check / call:.1%}"])
        for fmt in ("csr", "lil"):
            Xf = X.asformat(fmt)
            call = _report.median_time(lambda: make().fit(Xf, y), repeat=3)[0]
            check = _check_time(make(), Xf, y, repeat=3)
            rows.append([name, "fit", fmt, X.shape[0], f"{1e3 * call:.1f}",
                         f"{1e3 * check:.3f}", f"{check / call:.1%}"])
        print(*rows[-1], flush=True)
    body = (
        "Share of a call spent validating its sparse input (structure checked before and "
        "after scikit-learn's conversion, index arrays made int32/int64), on a9a "
        "(32561 x 123). Milliseconds, medians of 7 runs (3 for fits).\n\n"
        + _report.markdown_table(["estimator", "call", "X format", "rows", "call ms",
                                  "validation ms", "share"], rows)
        + "\n\nA LIL matrix is checked in Python, list by list, before its conversion (SciPy "
        "converts LIL without checking, and a column index past the shape corrupted the heap)."
    )
    _report.write_section("input_checks", "What the input checks cost", body,
                          packages=["numpy", "scipy", "scikit-learn"])


if __name__ == "__main__":
    main()
