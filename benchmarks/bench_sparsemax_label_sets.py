"""SparsemaxClassifier on label sets: which labels its ``predict`` returns.

On Mulan's label sets (train/test splits as published; CAL500, which has none, on a 70/30
split, seed 0): ``SparsemaxClassifier()`` on the simplex with its default decision
threshold (``threshold_``: the cut of the training rows' projections with the best
micro-F1) and with ``threshold=0`` (the support, the sparsemax rule) — one fit, two
rules —, the best cut of the test rows' projections (an oracle, for reference),
``SparsemaxClassifier(polytope="box")`` (its marginals cut at its own ``threshold_``, the
training rows' best micro-F1 cut, and at 1/2, the rule before), and scikit-learn's
``OneVsRestClassifier(LogisticRegression())`` (probabilities above 1/2, its rule, and above
the training rows' best micro-F1 cut, the same tuning as ours). Dense features
(scene, emotions, CAL500) are standardized on the training rows for every model; Bibtex's
and Delicious' binary features are used as they are. Cells: test micro-F1 / labels
predicted per test row; fit seconds (wall, one thread) below.

Writes section "sparsemax_label_sets" of doc/benchmarks.md::

    python benchmarks/bench_sparsemax_label_sets.py [--sets scene emotions cal500 bibtex
                                                     delicious]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import SparsemaxClassifier  # noqa: E402
from sparsekit.datasets import load_mulan  # noqa: E402
from sparsekit.metrics._thresholds import micro_f1_threshold  # noqa: E402

SETS = ("scene", "emotions", "cal500", "bibtex", "delicious")


def split(name):
    """(X_train, X_test, Y_train, Y_test), dense label indicators; dense X standardized."""
    if name == "cal500":
        X, Y = load_mulan(name)
        X_train, X_test, Y_train, Y_test = train_test_split(X, Y, test_size=0.3,
                                                            random_state=0)
    else:
        X_train, Y_train = load_mulan(name, subset="train")
        X_test, Y_test = load_mulan(name, subset="test")
    Y_train, Y_test = (np.asarray(sp.csr_matrix(Y).toarray(), dtype=np.int64)
                       for Y in (Y_train, Y_test))
    if not sp.issparse(X_train):
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    return X_train, X_test, Y_train, Y_test


def quiet():
    """Silence the fits' expected warnings: capped iterations, rows without a label (left
    out of the simplex fit, said in the notes), labels every training row holds."""
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*no active label", category=UserWarning)
    warnings.filterwarnings("ignore", message="Label .* present in all training",
                            category=UserWarning)


def cell(Y, predicted):
    return (f"{f1_score(Y, predicted, average='micro', zero_division=0.0):.3f} / "
            f"{predicted.sum(axis=1).mean():.2f}")


def timed(model, X, Y):
    start = time.perf_counter()
    model.fit(X, Y)
    return model, time.perf_counter() - start


def best_cut(Y, P):
    """The test rows' best micro-F1 over every cut of P (the oracle threshold)."""
    values = np.unique(P[P > 0])
    cuts = [np.nextafter(v, -np.inf) for v in values[::max(1, values.size // 400)]] + [0.0]
    scores = [f1_score(Y, P > t, average="micro", zero_division=0.0) for t in cuts]
    return cuts[int(np.argmax(scores))]


def row(name):
    X_train, X_test, Y_train, Y_test = split(name)
    simplex, simplex_s = timed(SparsemaxClassifier(), X_train, Y_train)
    P = simplex.predict_proba(X_test)
    oracle = best_cut(Y_test, P)
    box, box_s = timed(SparsemaxClassifier(polytope="box"), X_train, Y_train)
    ovr, ovr_s = timed(OneVsRestClassifier(LogisticRegression(max_iter=1000)), X_train,
                       Y_train)
    ovr_cut = micro_f1_threshold([(ovr.predict_proba(X_train), Y_train,
                                   np.ones(Y_train.shape[0]))])
    cells = [
        name, f"{X_train.shape[0]} x {X_train.shape[1]}, {Y_train.shape[1]}",
        f"{Y_train.sum(axis=1).mean():.2f} / {Y_test.sum(axis=1).mean():.2f}",
        f"{cell(Y_test, simplex.predict(X_test))} (t = {simplex.threshold_:.3g})",
        cell(Y_test, P > 0),
        f"{cell(Y_test, P > oracle)} (t = {oracle:.3g})",
        f"{cell(Y_test, box.predict(X_test))} (t = {box.threshold_:.3g})",
        cell(Y_test, box.predict_proba(X_test) > 0.5),
        cell(Y_test, ovr.predict(X_test)),
        f"{cell(Y_test, ovr.predict_proba(X_test) > ovr_cut)} (t = {ovr_cut:.3g})",
        f"{simplex_s:.2f} / {box_s:.2f} / {ovr_s:.2f}",
    ]
    print(" | ".join(cells), flush=True)
    return cells


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    args = parser.parse_args()
    quiet()
    header = ["data", "train rows x features, labels", "labels per row (train / test)",
              "simplex, default threshold_", "simplex, support (threshold=0)",
              "simplex, best cut of the test rows", "box, default threshold_", "box (0.5)",
              "OneVsRest LogisticRegression (0.5)",
              "OneVsRest LogisticRegression, training rows' best cut",
              "fit s: simplex / box / OvR LR"]
    rows = [row(name) for name in args.sets]
    body = ("Test micro-F1 / labels predicted per test row of `SparsemaxClassifier()` "
            "(simplex) with its default threshold `threshold_` (the training rows' best "
            "micro-F1 cut, its value in brackets) and with `threshold=0` (the support: one "
            "fit, two rules); the best cut of the same test projections (an oracle, for "
            "reference); `SparsemaxClassifier(polytope=\"box\")` at its default "
            "threshold (the same kind of cut, in brackets) and at 1/2; "
            "`OneVsRestClassifier(LogisticRegression(max_iter=1000))` at 1/2, its rule, and "
            "at the training rows' best micro-F1 cut of its probabilities. Mulan's "
            "train/test splits (CAL500: 70/30, seed 0); dense features standardized on the "
            "training rows; one thread.\n\n" + _report.markdown_table(header, rows))
    _report.write_section("sparsemax_label_sets",
                          "SparsemaxClassifier on label sets: the decision threshold", body)


if __name__ == "__main__":
    main()
