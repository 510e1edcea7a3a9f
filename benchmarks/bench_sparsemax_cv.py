"""Choosing alpha by cross-validation: SparsemaxClassifierCV against a grid search over
SparsemaxClassifier, with scikit-learn's LogisticRegressionCV measured in the same run.

On digits (pixels / 16), a9a, w8a, 5,000 Debian package descriptions (TF-IDF, the archive
section: 58 classes; SparsemaxClassifier's "auto" solver runs SDCA there) and Mulan scene
(label sets, micro-F1), SparsemaxClassifierCV cross-validates its default grid (10 alphas,
100 to 0.01 times alpha="scale") on 5 folds (stratified for class labels, shuffled, seed
0) at its defaults (one process; also n_jobs=2, the folds in two processes; random_state 0
for SDCA's row order), and
GridSearchCV refits SparsemaxClassifier cold on the same folds and alphas; both refit the
best alpha on all the data. LogisticRegressionCV (lbfgs, its 10 default Cs) on the same
folds is the scikit-learn user's cross-validated probabilistic classifier (class labels
only). Reported: wall time (median of 3 below 5 s, else one run), its ratio to
SparsemaxClassifierCV's, the chosen alpha (C), the mean held-out score there, and the
solver iterations of the folds' fits where the estimator counts them.

Writes section "sparsemax_cv" of doc/benchmarks.md::

    python benchmarks/bench_sparsemax_cv.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegressionCV
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.datasets import load_libsvm, load_mulan  # noqa: E402
from sparsekit.linear_model import SparsemaxClassifier, SparsemaxClassifierCV  # noqa: E402


def data_sets(quick):
    """(name, X, y, scoring) for each data set."""
    X, y = load_digits(return_X_y=True)
    yield "digits / 16", X / 16.0, y, None
    for name in ("a9a", "w8a"):
        X, y = load_libsvm(name)
        yield name, (X[:3000] if quick else X), (y[:3000] if quick else y), None
    X, y = _report.debian_sample(1000 if quick else 5000)
    yield f"debian {X.shape[0]} docs, TF-IDF", X, y, None
    X, Y = load_mulan("scene", subset="train")
    yield "scene (label sets)", np.asarray(X), sp.csr_matrix(Y), "f1_micro"


def summary(est):
    """(chosen alpha or C, mean held-out score at it, the folds' solver iterations)."""
    if isinstance(est, GridSearchCV):
        return est.best_params_["alpha"], est.best_score_, ""
    if isinstance(est, LogisticRegressionCV):
        return float(est.C_), float(est.scores_.mean(axis=0).max()), ""
    return est.alpha_, float(est.scores_.mean(axis=0).max()), str(est.n_iter_path_.sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="subsets (smoke run)")
    args = parser.parse_args()
    rows, agree = [], []
    for name, X, y, scoring in data_sets(args.quick):
        labels = scoring is None
        cv = (StratifiedKFold if labels else KFold)(5, shuffle=True, random_state=0)
        cv_est = SparsemaxClassifierCV(cv=cv, scoring=scoring, random_state=0)
        results = {"SparsemaxClassifierCV": _report.timed_fit(cv_est, X, y)}
        alphas = list(results["SparsemaxClassifierCV"][1].alphas_)
        peers = {"SparsemaxClassifierCV(n_jobs=2)": SparsemaxClassifierCV(
                     cv=cv, scoring=scoring, n_jobs=2, random_state=0),
                 "GridSearchCV(SparsemaxClassifier)": GridSearchCV(
                     SparsemaxClassifier(random_state=0), {"alpha": alphas}, cv=cv,
                     scoring=scoring)}
        if labels:
            peers["LogisticRegressionCV(lbfgs)"] = LogisticRegressionCV(
                cv=cv, use_legacy_attributes=False, scoring="accuracy")
        for label, est in peers.items():
            results[label] = _report.timed_fit(est, X, y)
        base = results["SparsemaxClassifierCV"][0]
        for label, (seconds, fitted, warned) in results.items():
            chosen, score, iterations = summary(fitted)
            rows.append([f"{name} ({X.shape[0]} x {X.shape[1]})", label, f"{seconds:.2f}",
                         f"{seconds / base:.2f}", f"{chosen:.4g}", f"{score:.4f}",
                         iterations, str(warned)])
            print(rows[-1], flush=True)
        grid = results["GridSearchCV(SparsemaxClassifier)"][1]
        split = np.stack([grid.cv_results_[f"split{f}_test_score"] for f in range(5)])
        ours = results["SparsemaxClassifierCV"][1]
        same = "same alpha" if ours.alpha_ == grid.best_params_["alpha"] else "another alpha"
        agree.append(f"{name} {np.abs(ours.scores_ - split).max():.1e} ({same})")
        print(agree[-1], flush=True)
    body = f"""
`SparsemaxClassifierCV` cross-validates its default grid (10 alphas, log-spaced from 100 to
0.01 times the value of `alpha="scale"`) on 5 folds (stratified for class labels; shuffled,
seed 0) at its defaults (`tol` 1e-4; `random_state=0`, SDCA's row order): on each training
fold a path from the largest alpha down, each fit started at the previous solution, then
the best alpha refit on all the data from the mean of the folds' solutions. `GridSearchCV`
fits `SparsemaxClassifier` cold for each fold and alpha of the same grid, then refits the
best. Both score accuracy on class labels and micro-F1 on scene's label sets (the model's
`threshold_` cut, chosen on each training fold). scikit-learn's `LogisticRegressionCV`
(lbfgs, its 10 default Cs, the same folds, accuracy) is the scikit-learn user's
cross-validated probabilistic classifier, measured in the same run (class labels only).
Time: wall seconds of the whole `fit` (median of 3 below 5 s); "× CV": its ratio to
`SparsemaxClassifierCV`'s; "iterations": the solver iterations of the folds' fits
(`n_iter_path_.sum()`); "warnings": ConvergenceWarnings of the fit. `n_jobs=2` runs the
folds in two processes of the 2-core machine.

{_report.markdown_table(["data", "estimator", "time (s)", "× CV", "chosen alpha (C)",
                         "mean held-out score", "iterations", "warnings"], rows)}

Largest difference between a held-out score of `SparsemaxClassifierCV` (fold, alpha) and the
grid search's for the same fold and alpha (each fit stops at `tol` 1e-4, on its path or
from zero): {", ".join(agree)}.
"""
    if args.quick:
        print(body)
        return
    _report.write_section("sparsemax_cv",
                          "Choosing alpha by cross-validation: SparsemaxClassifierCV", body)


if __name__ == "__main__":
    main()
