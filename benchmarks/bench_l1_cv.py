"""Choosing C by cross-validation: L1LogisticOBACV against scikit-learn's LogisticRegressionCV
and a grid search over L1LogisticOBA.

On a9a and w8a (binary, sparse), scikit-learn's digits (ten classes, the multinomial
model) and 5,000 Debian package descriptions (TF-IDF, 58 sections, two of a single
document: one-vs-rest, also multinomial), every estimator cross-validates the same ten
values of C (L1LogisticOBACV's default grid, [C_min, 10⁴ C_min]) on the same five
stratified folds with the held-out log loss, then refits the chosen C on all the data, at
its own defaults otherwise (one thread): L1LogisticOBACV (a warm-started OBA path per fold;
also with n_jobs=2, two processes); GridSearchCV over L1LogisticOBA (a cold fit per fold and
C; not on the corpus, where scikit-learn's log loss scores every fold NaN: a held-out fold
lacks some of the model's classes); LogisticRegressionCV with the ℓ1 penalty and its
liblinear solver (binary only; it penalizes the intercept) and its saga solver. Reported: wall time (median
of 3 below 5 s, else one run), its ratio to L1LogisticOBACV's, the chosen C, the mean
held-out log loss there, the nonzero coefficients and the ConvergenceWarnings raised.

Writes section "l1_cv" of doc/benchmarks.md::

    python benchmarks/bench_l1_cv.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegressionCV
from sklearn.model_selection import GridSearchCV, StratifiedKFold

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.datasets import load_libsvm  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA, L1LogisticOBACV  # noqa: E402

SCORING = "neg_log_loss"


def data_sets(quick):
    for name in ("a9a", "w8a"):
        X, y = load_libsvm(name)
        yield name, "binary", (X[:3000] if quick else X), (y[:3000] if quick else y)
    X, y = load_digits(return_X_y=True)
    yield "digits", "multinomial", X / 16.0, y
    X, y = _report.debian_sample(1000 if quick else 5000)
    yield "debian docs, TF-IDF", "one-vs-rest", X, y


def peers(kind, Cs, cv):
    """name -> an unfitted estimator cross-validating ``Cs`` on ``cv``."""
    multiclass = {"multiclass": "multinomial"} if kind == "multinomial" else {}
    found = {"L1LogisticOBACV(n_jobs=2)": L1LogisticOBACV(Cs=Cs, cv=cv, n_jobs=2,
                                                          **multiclass)}
    if kind == "one-vs-rest":            # the grid search's log loss scores NaN (above)
        found["L1LogisticOBACV(multinomial)"] = L1LogisticOBACV(Cs=Cs, cv=cv,
                                                                multiclass="multinomial")
    else:
        found["GridSearchCV(L1LogisticOBA)"] = GridSearchCV(
            L1LogisticOBA(**multiclass), {"C": Cs}, cv=cv, scoring=SCORING)
    for solver in ("liblinear", "saga") if kind == "binary" else ("saga",):
        found[f"LogisticRegressionCV({solver})"] = LogisticRegressionCV(
            Cs=Cs, l1_ratios=(1.0,), cv=cv, solver=solver, scoring=SCORING,
            use_legacy_attributes=False)
    return found


def summary(est):
    """(chosen C, mean held-out log loss at it, nonzero coefficients)."""
    if isinstance(est, GridSearchCV):
        return est.best_params_["C"], -est.best_score_, int(np.count_nonzero(
            est.best_estimator_.coef_))
    scores = est.scores_.mean(axis=0).ravel()
    return float(est.C_), -float(scores.max()), int(np.count_nonzero(est.coef_))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="subsets (smoke run)")
    args = parser.parse_args()
    rows, agree = [], []
    warnings.filterwarnings("ignore", "The least populated class")   # the corpus' sections
    for name, kind, X, y in data_sets(args.quick):
        cv = StratifiedKFold(5, shuffle=True, random_state=0)
        oba = L1LogisticOBACV(cv=cv, multiclass="multinomial" if kind == "multinomial"
                              else "ovr")
        seconds, oba, warned = _report.timed_fit(oba, X, y)     # its grid is every estimator's
        results = {"L1LogisticOBACV": (seconds, oba, warned)}
        for label, est in peers(kind, oba.Cs_, cv).items():
            results[label] = _report.timed_fit(est, X, y)
        for label, (seconds, fitted, warned) in results.items():
            C, loss, nnz = summary(fitted)
            rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, {kind})", label,
                         f"{seconds:.2f}", f"{seconds / results['L1LogisticOBACV'][0]:.1f}",
                         f"{C:.4g}", f"{loss:.5f}", str(nnz), str(warned)])
            print(rows[-1], flush=True)
        if kind == "one-vs-rest":
            continue
        grid = results["GridSearchCV(L1LogisticOBA)"][1]
        split = np.stack([grid.cv_results_[f"split{f}_test_score"] for f in range(5)])
        gap = np.abs(results["L1LogisticOBACV"][1].scores_[:, 0] - split).max()
        agree.append(f"{name} {gap:.1e}")
        print(agree[-1], flush=True)
    body = f"""
Every estimator cross-validates the same 10 values of C (`L1LogisticOBACV`'s default grid,
log-spaced on [C_min, 10⁴ C_min], C_min the smallest C with a nonzero coefficient) on the
same 5 stratified folds (shuffled, seed 0), scores the held-out log loss, and refits the
chosen C on all the data, each at its own defaults otherwise, one thread: `L1LogisticOBACV`
(a warm-started OBA path per fold, `tol` 1e-8; also with `n_jobs=2`, the folds' paths on
two processes on the 2-core machine), `GridSearchCV` over `L1LogisticOBA` (a cold
fit per fold and C; not on the corpus, where scikit-learn's log loss scores every fold NaN,
each held-out fold lacking some of the model's classes), scikit-learn's `LogisticRegressionCV(l1_ratios=(1,))` with `liblinear`
(binary only; it penalizes the intercept) and `saga` (`tol` 1e-4, `max_iter` 100). Time:
wall seconds of the whole `fit` (median of 3 below 5 s); "× OBACV": its ratio to
`L1LogisticOBACV`'s time; "log loss": the mean held-out log loss at the chosen C; "warnings":
the ConvergenceWarnings of the fit (saga's stop at `max_iter`). The corpus: 5,000 Debian
package descriptions drawn at random (seed 0), TF-IDF, their 58 sections as classes, two
of them of one document (each missing from a training fold, where the models give it a
probability of about 0); `L1LogisticOBACV` one-vs-rest, also multinomial;
`LogisticRegressionCV` fits the multinomial model.

{_report.markdown_table(["data", "estimator", "time (s)", "× OBACV", "chosen C", "log loss",
                         "nonzero coef", "warnings"], rows)}

Largest difference between a held-out score of `L1LogisticOBACV` (fold, C) and the grid
search's for the same fold and C (each fit stops at `tol` 1e-8, on its own path or from
zero): {", ".join(agree)}.
"""
    if args.quick:
        print(body)
        return
    _report.write_section("l1_cv", "Choosing C by cross-validation: L1LogisticOBACV", body)


if __name__ == "__main__":
    main()
