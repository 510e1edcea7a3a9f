"""L1LogisticOBACV one-vs-rest: a training fold's rows laid out once for all its classes.

A one-vs-rest cross-validation solves each class's path on each training fold. Until
2026-12-01 each (fold, class) job sliced the fold's rows and copied them for the column
kernels (CSC, or Fortran order) and read them for the centering of columns far from 0, as
many times as there are classes; now each fold is laid out once for its classes (with
``n_jobs``, once per fold and share of its classes in each process). This script times
``L1LogisticOBACV`` (10 values of C, 5 stratified folds shuffled with seed 0, its defaults
otherwise; one thread, and ``n_jobs=2``) on 5,000 and 20,000 Debian package descriptions
(TF-IDF, their 58 sections as classes) and on a tall dense table (200,000 x 40 float32, 5
classes, seed 0), wall seconds (one fit: each takes over 5 s), beside the same script run on
an earlier commit's build (``--save`` there, ``--before`` here); the chosen C and the best
mean held-out log loss say that both fit the same models. Writes section "l1_cv_folds" of
doc/benchmarks.md::

    python benchmarks/bench_l1_cv_folds.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import warnings

import numpy as np
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.linear_model import L1LogisticOBACV  # noqa: E402


def tables():
    for n_docs in (5000, 20000):
        X, y = _report.debian_sample(n_docs)
        yield f"{n_docs} Debian descriptions, TF-IDF ({X.shape[1]} columns, 58 classes)", X, y
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200_000, 40)).astype(np.float32)
    y = np.argmax(X[:, :5] + rng.standard_normal((200_000, 5)), axis=1)
    yield "200,000 x 40 float32, 5 classes", X, y


def measure():
    rows = []
    warnings.filterwarnings("ignore", "The least populated class")   # the corpus' sections
    for name, X, y in tables():
        for n_jobs in (None, 2):
            cv = StratifiedKFold(5, shuffle=True, random_state=0)
            est, seconds = _report.fit_once(lambda: L1LogisticOBACV(cv=cv, n_jobs=n_jobs),
                                            X, y)
            rows.append({"data": name, "n_jobs": n_jobs, "seconds": seconds,
                         "C": float(est.C_), "score": float(est.scores_.mean(axis=0).max())})
            print(rows[-1], flush=True)
    return {"rows": rows}


def main():
    results, earlier = _report.beside_before(__doc__.split("\n\n")[0], measure)
    then = f"before (commit {earlier['commit']}), s" if earlier else "before, s"
    old = {(r["data"], r["n_jobs"]): r for r in (earlier or {}).get("rows", [])}
    table = []
    for r in results["rows"]:
        o = old.get((r["data"], r["n_jobs"]))
        table.append([r["data"], str(r["n_jobs"]), f"{r['seconds']:.2f}",
                      f"{o['seconds']:.2f}" if o else "-",
                      f"{r['seconds'] / o['seconds']:.2f}" if o else "-",
                      f"{r['C']:.4g} / {o['C']:.4g}" if o else f"{r['C']:.4g}",
                      f"{-r['score']:.6f} / {-o['score']:.6f}" if o else f"{-r['score']:.6f}"])
    body = ("`L1LogisticOBACV` one-vs-rest at its defaults (10 values of C, 5 stratified folds "
            "shuffled with seed 0), wall seconds of one fit, this commit's build beside the "
            "earlier one's (same script, same session, one after the other); chosen C and "
            "best mean held-out log loss, now / before:\n\n"
            + _report.markdown_table(["data", "n_jobs", "now, s", then, "now / before",
                                      "chosen C", "log loss"], table))
    _report.write_section("l1_cv_folds", "L1LogisticOBACV one-vs-rest: a fold laid out once "
                          "for its classes", body)


if __name__ == "__main__":
    main()
