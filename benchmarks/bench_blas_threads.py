"""L1LogisticOBA on dense tables at BLAS's default threads: its solves hold BLAS to one thread.

A user's process runs BLAS (OpenBLAS here) on every core unless told otherwise; every other
script of this folder pins it to one thread. This one leaves it at the machine's default
(``SPARSEKIT_BENCH_THREADS``, default: the CPU count) and fits ``L1LogisticOBA`` at C = 1
(intercept, tol 1e-8: its defaults but C) on ``make_classification`` tables (seed 0,
n_informative half the columns, cast to float64): one-vs-rest and multinomial, with
``n_jobs`` None and 2. Wall seconds of a fit (median of 3 where one takes under 5 s) and its
iterations (summed over the one-vs-rest problems). The peer in the same run: scikit-learn's
``LogisticRegression(l1_ratio=1, solver="liblinear")`` (LIBLINEAR, its default tol 1e-4;
for more classes in ``OneVsRestClassifier``; LIBLINEAR calls no BLAS), one fit.

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the same
script run on an earlier commit's build) beside this run's. Writes section "blas_threads"
of doc/benchmarks.md::

    python benchmarks/bench_blas_threads.py [--save F] [--before F]
"""
import os

os.environ.setdefault("SPARSEKIT_BENCH_THREADS", str(os.cpu_count() or 1))
import _report  # noqa: E402  (sets the BLAS threads before NumPy)

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.multiclass import OneVsRestClassifier  # noqa: E402
from threadpoolctl import threadpool_info  # noqa: E402

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import L1LogisticOBA  # noqa: E402

#: (rows, columns, classes)
TABLES = [(40_000, 200, 8), (100_000, 50, 5), (1_000_000, 50, 2)]


def fits(k):
    """(label, estimator) of each OBA fit of a table of ``k`` classes."""
    for multiclass in ("ovr", "multinomial") if k > 2 else ("ovr",):
        for n_jobs in (None, 2):
            yield (f"{multiclass}, n_jobs={n_jobs}",
                   L1LogisticOBA(C=1.0, multiclass=multiclass, n_jobs=n_jobs))


def rows():
    out = []
    for n, d, k in TABLES:
        X, y = make_classification(n, d, n_informative=d // 2, n_classes=k, random_state=0)
        table = f"{n:,} x {d}, {k} classes"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            liblinear = LogisticRegression(l1_ratio=1, solver="liblinear")
            start = time.perf_counter()
            (OneVsRestClassifier(liblinear) if k > 2 else liblinear).fit(X, y)
            peer = time.perf_counter() - start
        for label, est in fits(k):
            seconds, fitted, _ = _report.timed_fit(est, X, y)
            out.append({"table": table, "fit": label, "seconds": seconds,
                        "iterations": int(np.sum(fitted.n_iter_)), "liblinear": peer})
            print(out[-1], flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", help="write the rows as JSON to this file")
    parser.add_argument("--before", help="rows of an earlier commit's run (--save)")
    args = parser.parse_args()
    threads = sorted({lib["num_threads"] for lib in threadpool_info()
                      if lib["user_api"] == "blas"})
    print(f"BLAS threads: {threads}", flush=True)
    now = rows()
    if args.save:
        with open(args.save, "w") as f:
            json.dump(now, f)
    before = {}
    if args.before:
        with open(args.before) as f:
            before = {(r["table"], r["fit"]): r for r in json.load(f)}
    table = []
    for r in now:
        b = before.get((r["table"], r["fit"]))
        table.append([r["table"], f"L1LogisticOBA({r['fit']})",
                      f"{b['seconds']:.2f}" if b else "", f"{r['seconds']:.2f}",
                      f"{r['seconds'] / b['seconds']:.2f}" if b else "",
                      f"{b['iterations']} / {r['iterations']}" if b else str(r["iterations"]),
                      f"{r['liblinear']:.2f}", f"{r['seconds'] / r['liblinear']:.2f}"])
    body = f"""
`L1LogisticOBA` (C = 1, an unpenalized intercept, tol 1e-8) on `make_classification`
tables (seed 0, half the columns informative, float64) with BLAS at the machine's default
threads ({", ".join(map(str, threads))} in each BLAS library loaded), as a user's process
runs it: every other section pins BLAS to one thread. "before": the same script on a build
of the commit before the solves held BLAS to one thread; "now": this commit. Wall seconds
of a fit (median of 3 where one takes under 5 s); iterations summed over the one-vs-rest
problems. The peer in the same run: scikit-learn's `LogisticRegression(l1_ratio=1,
solver="liblinear")` (LIBLINEAR at its default tol 1e-4, which calls no BLAS; with more
than two classes in `OneVsRestClassifier`), one fit; "now / LIBLINEAR" is OBA's time over
it (another tolerance: a reference for the machine, not a race).

{_report.markdown_table(["table", "fit", "before (s)", "now (s)", "now / before",
                         "iterations before / now", "LIBLINEAR (s)", "now / LIBLINEAR"],
                        table)}
"""
    if args.save and not args.before:   # a run on the earlier build: rows only
        print(body)
        return
    _report.write_section("blas_threads", "L1LogisticOBA at BLAS's default threads", body)


if __name__ == "__main__":
    main()
