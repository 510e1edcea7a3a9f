"""Hashed features: fits on a sparse X whose columns are mostly empty.

``HashingVectorizer`` maps text to a fixed number of columns (2**20 by default) whatever
the vocabulary: on a few thousand documents most of them store nothing. The estimators
hand their solvers X restricted to the used columns (an empty column's weight is 0 at every
ℓ1, elastic-net or ridge solution) and write zeros for the others. This script measures
that on the Debian corpus (package descriptions, 58 sections as classes) hashed to 2**20
columns (unigrams, TF-IDF), the first 5000 documents of a fixed shuffle and all of them:

- "all columns": the solve on every column (``MAX_USED_SHARE = 0``, the behaviour before
  the restriction), "used columns": the estimator as shipped; their ratio;
- L1LogisticOBA(C=10) one-vs-rest against LIBLINEAR ``-s 6 -B 1 -R`` (the same 58
  objectives, the intercept unpenalized) at its default ``-e 0.01`` and at ``-e 1e-4``, on
  the same CSR (problem built outside the timing); "F gap": the summed objective of the
  58 problems relative to the lowest of the runs;
- L1LogisticOBA(C=10, multiclass="multinomial") and SparsemaxClassifier(tol=1e-6) (its default
  solver), which have no peer solving the same problem.

Process CPU seconds, one fit each (BLAS pinned to one thread). Writes section
"hashed_features" of doc/benchmarks.md::

    python benchmarks/bench_hashed_features.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
import sparsekit.utils._columns as columns  # noqa: E402
from sparsekit.datasets import load_debian  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA, SparsemaxClassifier  # noqa: E402

C = 10.0


def data_sets(sizes):
    corpus = load_debian(data_home=_report.DATA_HOME)
    order = np.random.default_rng(0).permutation(len(corpus.text))
    hasher = HashingVectorizer(n_features=2**20, alternate_sign=False)
    for n in sizes:
        keep = order[:n]
        X = hasher.transform([corpus.text[i] for i in keep])
        X = sp.csr_matrix(TfidfTransformer().fit_transform(X))
        yield f"debian, {n} documents", X, np.asarray(corpus.section)[keep]


def cpu_seconds(fn):
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def fit(make, X, y, all_columns):
    """(seconds, fitted estimator), on every column when ``all_columns``."""
    share = columns.MAX_USED_SHARE
    columns.MAX_USED_SHARE = 0.0 if all_columns else share
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return cpu_seconds(lambda: make().fit(X, y))
    finally:
        columns.MAX_USED_SHARE = share


def ovr_objective(X, y, classes, coef, intercept):
    """Σ over the one-vs-rest problems of ‖w‖₁ + C Σᵢ log(1 + exp(−yᵢ(wᵀxᵢ + b)))."""
    margins = np.asarray(X @ coef.T) + intercept
    signs = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    return float(np.abs(coef).sum() + C * np.logaddexp(0.0, -signs * margins).sum())


def liblinear(X, y, classes, tol, C=C):
    """(seconds, coef (K, D), intercept (K,)) of LIBLINEAR -s 6 -B 1 -R, one-vs-rest."""
    from liblinear import liblinearutil

    codes = np.searchsorted(classes, y).astype(np.float64)
    prob = liblinearutil.problem(codes, X)
    param = liblinearutil.parameter(f"-s 6 -B 1 -R -q -c {C} -e {tol}")
    seconds, model = cpu_seconds(lambda: liblinearutil.train(prob, param))
    labels = np.array(model.get_labels(), dtype=int)
    D = X.shape[1]
    W = np.ctypeslib.as_array(model.w, shape=((D + 1) * len(labels),)).reshape(D + 1, -1)
    coef, intercept = np.zeros((classes.size, D)), np.zeros(classes.size)
    coef[labels], intercept[labels] = W[:D].T, W[D]
    return seconds, coef, intercept


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 63436])
    args = parser.parse_args()
    rows, shapes = [], []
    for name, X, y in data_sets(args.sizes):
        classes = np.unique(y)
        used = np.unique(X.indices).size
        shapes.append(f"{name}: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}, {used} columns "
                      f"used ({used / X.shape[1]:.1%}), {classes.size} classes")
        print(shapes[-1], flush=True)
        makes = {"L1LogisticOBA one-vs-rest": lambda: L1LogisticOBA(C=C),
                 "L1LogisticOBA multinomial": lambda: L1LogisticOBA(C=C,
                                                                   multiclass="multinomial"),
                 "SparsemaxClassifier": lambda: SparsemaxClassifier(tol=1e-6, random_state=0)}
        for model, make in makes.items():
            before, full = fit(make, X, y, all_columns=True)
            after, est = fit(make, X, y, all_columns=False)
            same = float(np.abs(full.predict_proba(X) - est.predict_proba(X)).max())
            cells = [name, model, f"{before:.2f}", f"{after:.2f}", f"{before / after:.1f}x",
                     f"{same:.1e}"]
            if model.endswith("one-vs-rest"):
                runs = {"OBA": (after, est.coef_, est.intercept_)}
                for tol in (0.01, 1e-4):
                    runs[f"LIBLINEAR -e {tol:g}"] = liblinear(X, y, classes, tol)
                F = {key: ovr_objective(X, y, classes, coef, b)
                     for key, (_, coef, b) in runs.items()}
                best = min(F.values())
                peer = "; ".join(f"{key} {runs[key][0]:.2f} s ({after / runs[key][0]:.2f}x), "
                                 f"F gap {(F[key] - best) / best:.1e}"
                                 for key in runs if key != "OBA")
                cells.append(f"OBA F gap {(F['OBA'] - best) / best:.1e}; {peer}")
            else:
                cells.append("—")
            rows.append(cells)
            print(" | ".join(cells), flush=True)
    body = "\n".join([
        "Fits on the Debian corpus hashed to 2²⁰ columns (`HashingVectorizer(n_features=2**20, "
        "alternate_sign=False)`, then TF-IDF): " + "; ".join(shapes) + ". \"All columns\": "
        "the solve on every column, as before the estimators left the empty ones out "
        "(`MAX_USED_SHARE = 0` in `sparsekit.utils._columns`); \"used columns\": the "
        "estimator as shipped. Process CPU seconds, one fit each; \"max Δp\": the largest "
        "difference between the two fits' `predict_proba` on the training rows (the ℓ1 "
        "minimizer need not be unique, e.g. on columns that hold one document each, so the "
        "coefficients may differ where the model does not). One-vs-rest ℓ1 against LIBLINEAR `-s 6 -B 1 -R` on the same "
        "CSR (the same 58 objectives, C = 10, the intercept unpenalized; problem built "
        "outside the timing), \"F gap\": the summed objective of the 58 problems relative to "
        "the lowest of the three runs; the ratio is OBA's time (used columns) over "
        "LIBLINEAR's.",
        "",
        _report.markdown_table(["data", "model", "all columns (s)", "used columns (s)",
                                "speed-up", "max Δp", "against LIBLINEAR"], rows),
    ])
    _report.write_section("hashed_features", "Hashed features: the empty columns left out",
                          body, packages=("numpy", "scipy", "scikit-learn",
                                          "liblinear-official"))


if __name__ == "__main__":
    main()
