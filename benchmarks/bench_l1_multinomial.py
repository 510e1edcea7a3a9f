"""Multinomial ℓ1 (and elastic-net) logistic regression: L1LogisticOBA against saga.

scikit-learn's ``LogisticRegression`` solves the multinomial ℓ1 problem
C Σᵢ NLL_softmax(W xᵢ + b; yᵢ) + ‖W‖₁ with ``saga`` only; LIBLINEAR, skglm and celer are
one-vs-rest. On digits (pixels / 16), Mulan scene (first label), MNIST (pixels / 255) and
the Debian package descriptions (TF-IDF of words and word pairs seen twice; the archive
section, 58 classes), for C at 10, 100 and 1000 times the smallest C with a nonzero weight,
each solver is run cold along a ladder (OBA: tol 1e-3 ... 1e-11 until two tolerances give
the same objective, the tighter one after more iterations (when the ladder ends on runs
that stopped at the same iterate, a run one iteration further stands in for the tighter
one), or until a run takes longer than ``--cap`` seconds; saga: max_iter 1, 2,
4, ... epochs with tol 0 until it is within 1e-7 of OBA's best, or until a run takes longer
than 10.5 times OBA's time to 1e-6 (at least ``--cap``, at most ``--saga-max`` seconds), so
that a saga ladder that ends without reaching the target still decides whether OBA was 10
times faster) and the time of the first run whose objective is within 1e-6 (relative) of
the best objective any run reached is reported; saga's best relative excess tells whether
the two agree at tight tolerance.
Elastic net (l1_ratio 0.5): the same on digits and scene.

Writes section "l1_multinomial" of doc/benchmarks.md::

    python benchmarks/bench_l1_multinomial.py [--sets digits scene mnist debian] [--cap 30]
        [--saga-max 600] [--factors 10 100 1000] [--threads]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import json
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from sparsekit.datasets import load_debian, load_mnist, load_mulan  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402
from sparsekit.linear_model._l1_path import smallest_active_C  # noqa: E402
from sparsekit.losses._multinomial_datafit import Multinomial  # noqa: E402

SETS = ["digits", "scene", "mnist", "debian"]
FACTORS = [10, 100, 1000]
ELASTIC = {"sets": ["digits", "scene"], "l1_ratio": 0.5}
OBA_TOLS = [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11]
TARGET = 1e-6
CACHE = _report.RESULTS / "l1_multinomial.json"
COMMIT = _report.git_commit()


def load(name):
    """(X, y): dense float64 for digits and scene, CSR float64 for MNIST and Debian."""
    if name == "digits":
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True)
        return X / 16.0, y
    if name == "scene":
        X, Y = load_mulan("scene", data_home=_report.DATA_HOME)
        Y = sp.csr_matrix(Y)
        keep = np.diff(Y.indptr) > 0                    # rows with a label
        return np.asarray(X.toarray() if sp.issparse(X) else X)[keep], \
            Y.indices[Y.indptr[:-1][keep]]
    if name == "mnist":
        X, y = load_mnist("train", data_home=_report.DATA_HOME)
        return sp.csr_matrix(X.astype(np.float64) / 255.0), y
    from sklearn.feature_extraction.text import TfidfVectorizer
    corpus = load_debian(data_home=_report.DATA_HOME)
    X = TfidfVectorizer(ngram_range=(1, 2), min_df=2).fit_transform(corpus.text)
    return sp.csr_matrix(X, dtype=np.float64), corpus.section


def objective(X, y, coef, intercept, C, l1_ratio):
    codes = np.searchsorted(np.unique(y), y)
    Z = np.asarray(X @ coef.T) + intercept
    nll = logsumexp(Z, axis=1) - Z[np.arange(len(codes)), codes]
    return (C * float(nll.sum()) + l1_ratio * float(np.abs(coef).sum())
            + 0.5 * (1 - l1_ratio) * float((coef * coef).sum()))


def smallest_C(X, y, l1_ratio):
    codes = np.searchsorted(np.unique(y), y)
    datafit = Multinomial(X, codes, codes.max() + 1, fit_intercept=True)
    return l1_ratio * smallest_active_C(datafit)


def warm_up():
    """One untimed multinomial fit of each layout: the first fit of a process also pays for
    imports and first calls (0.1 s, more than a whole fit on digits)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 20)), rng.integers(0, 3, 200)
    for data in (X, sp.csr_matrix(X)):
        L1LogisticOBA(C=1.0, multiclass="multinomial").fit(data, y)


def oba_runs(X, y, C, l1_ratio, cap):
    """OBA cold along the tolerance ladder, until two tolerances in a row give the same
    objective (:func:`converged`) or a run takes longer than ``cap`` seconds. When the
    ladder ends on tolerances that stopped at the same iterate (its optimality measure met
    them all), one more run goes one iteration further (tol 0, ``max_iter`` one more: the
    iterates up to there are the same) to see whether the objective still moves. An untimed
    fit at the first tolerance goes first: a process's first fit of a size pays for fresh
    memory (glibc maps large buffers anew until one of their size has been freed; digits:
    25 ms, the next fits 16-18 ms, also after an untimed fit of three iterations)."""
    oba_run(X, y, C, l1_ratio, OBA_TOLS[0])
    runs = []
    for tol in OBA_TOLS:
        runs.append(oba_run(X, y, C, l1_ratio, tol))
        if runs[-1]["s"] > cap or converged(runs):
            return runs
    if runs[-1]["nit"] == runs[-2]["nit"] and same_F(*runs[-2:]):
        runs.append(oba_run(X, y, C, l1_ratio, 0.0, max_iter=runs[-1]["nit"] + 1))
    return runs


def oba_run(X, y, C, l1_ratio, tol, max_iter=5000):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # tol 0 runs to max_iter
        t0 = time.perf_counter()
        est = L1LogisticOBA(C=C, tol=tol, multiclass="multinomial", l1_ratio=l1_ratio,
                            max_iter=max_iter).fit(X, y)
        seconds = time.perf_counter() - t0
    run = {"tol": tol, "s": seconds, "nit": int(est.n_iter_[0]),
           "F": objective(X, y, est.coef_, est.intercept_, C, l1_ratio),
           "nnz": int(np.count_nonzero(est.coef_))}
    print(f"  OBA tol {tol:g}: {seconds:.2f} s, {run['nit']} it., F {run['F']:.12g}",
          flush=True)
    return run


def same_F(a, b):
    """Whether two runs reached the same objective (to 1e-10, relative)."""
    return abs(a["F"] - b["F"]) <= 1e-10 * b["F"]


def saga_runs(X, y, C, l1_ratio, cap, target_F=None, runs=()):
    """saga's ladder, continuing after ``runs`` (an earlier ladder of the same row) when
    they neither reached ``target_F`` nor ran longer than ``cap``."""
    runs = list(runs)
    if runs and (runs[-1]["s"] > cap
                 or target_F is not None and runs[-1]["F"] <= target_F):
        return runs
    epochs = 2 * runs[-1]["epochs"] if runs else 1
    with warnings.catch_warnings():          # untimed, as OBA's first fit (see oba_runs)
        warnings.simplefilter("ignore", ConvergenceWarning)
        LogisticRegression(C=C, l1_ratio=l1_ratio, solver="saga", tol=0.0,
                           max_iter=1).fit(X, y)
    while True:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            est = LogisticRegression(C=C, l1_ratio=l1_ratio, solver="saga", tol=0.0,
                                     max_iter=epochs).fit(X, y)
            seconds = time.perf_counter() - t0
        runs.append({"epochs": epochs, "s": seconds,
                     "F": objective(X, y, est.coef_, est.intercept_, C, l1_ratio)})
        print(f"  saga {epochs} epochs: {seconds:.2f} s, F {runs[-1]['F']:.12g}", flush=True)
        if seconds > cap or (target_F is not None and runs[-1]["F"] <= target_F):
            return runs
        epochs *= 2


def first_within(runs, best):
    for run in runs:
        if run["F"] <= best * (1 + TARGET):
            return run
    return None


def converged(oba):
    """Whether OBA's ladder ended on two tolerances with the same objective (to 1e-10,
    relative; a certified optimum for the time-to-1e-6 columns), not on the time cap. The
    tighter run must have iterated further: a looser run that already met the tighter tol
    gives the same point and proves nothing (MNIST at 100 C_min: tol 1e-4 and 1e-5 both
    stopped after iteration 17, 2e-6 above the minimum)."""
    return len(oba) > 1 and same_F(oba[-2], oba[-1]) and oba[-1]["nit"] > oba[-2]["nit"]


def saga_cap(oba, cap, most):
    """The length of saga run after which its ladder stops: 10.5 times OBA's time to the
    target (at least ``cap``, at most ``most`` seconds; ``cap`` without a certified optimum)."""
    if not converged(oba):
        return cap
    reached = first_within(oba, min(r["F"] for r in oba))
    return min(most, max(cap, 10.5 * reached["s"]))


def row(name, shape, C_factor, C, l1_ratio, oba, saga, cap):
    C_cell = f"{C_factor} C_min = {C:.4g}"
    last_oba, last_saga = oba[-1], saga[-1]
    if not converged(oba):    # no certified optimum: report where each solver got to
        best = min(r["F"] for r in oba + saga)
        return [name, shape, C_cell, l1_ratio,
                f"not converged: tol {last_oba['tol']:g} took {last_oba['s']:.0f} s",
                f"{last_saga['epochs']} epochs in {last_saga['s']:.0f} s",
                "— (no optimum to measure from)",
                f"{(min(r['F'] for r in oba) - best) / best:.1e}",
                f"{(min(r['F'] for r in saga) - best) / best:.1e}",
                f"{min(oba, key=lambda r: r['F'])['nnz']:,}"]
    best = min(r["F"] for r in oba + saga)
    o, s = first_within(oba, best), first_within(saga, best)
    if o is None:       # saga went lower than OBA's certified optimum: say so, no ratio
        return [name, shape, C_cell, l1_ratio,
                f"not reached: its best ({last_oba['tol']:g}) lies "
                f"{(min(r['F'] for r in oba) - best) / best:.1e} above saga's",
                f"{s['s']:.2f} ({s['epochs']} epochs)", "—", "", "", ""]
    s_cell = (f"{s['s']:.2f} ({s['epochs']} epochs)" if s else
              f"> {last_saga['s']:.0f} (not reached; {last_saga['epochs']} epochs)")
    ratio = f"{s['s'] / o['s']:.1f}x" if s else f"> {last_saga['s'] / o['s']:.1f}x"
    return [name, shape, C_cell, l1_ratio, f"{o['s']:.3f} (tol {o['tol']:g}, {o['nit']} it.)",
            s_cell, ratio, f"{(min(r['F'] for r in oba) - best) / best:.1e}",
            f"{(min(r['F'] for r in saga) - best) / best:.1e}",
            f"{min(oba, key=lambda r: r['F'])['nnz']:,}"]


def provenance(cache):
    """Which commit each row's OBA and saga runs were measured at (rows measured before the
    cache recorded it: "earlier")."""
    groups = {}
    for key, r in cache.items():
        if not key.startswith("threads/"):
            pair = (r.get("oba_commit", "earlier"), r.get("saga_commit", "earlier"))
            groups.setdefault(pair, []).append(key.replace("/1.0/", " ").replace(
                "/0.5/", " l1_ratio 0.5 ") + " C_min")
    return "\n".join(f"- OBA at {o}, saga at {s}: " + ", ".join(sorted(keys))
                     for (o, s), keys in sorted(groups.items()))


def thread_runs(X, y, C, tol=1e-6, jobs=(1, 2)):
    """L1LogisticOBA(multiclass="multinomial") at ``n_jobs`` 1 and 2: seconds, and whether
    the coefficients are identical (the threads split the products, not the sums)."""
    runs, coefs = [], []
    for n_jobs in jobs:
        t0 = time.perf_counter()
        est = L1LogisticOBA(C=C, tol=tol, multiclass="multinomial", max_iter=5000,
                            n_jobs=n_jobs).fit(X, y)
        runs.append({"n_jobs": n_jobs, "s": time.perf_counter() - t0,
                     "nit": int(est.n_iter_[0])})
        coefs.append(est.coef_)
        print(f"  n_jobs {n_jobs}: {runs[-1]['s']:.2f} s", flush=True)
    return {"tol": tol, "C": C, "runs": runs,
            "identical": all(np.array_equal(coefs[0], c) for c in coefs[1:])}


def thread_table(cache):
    rows = []
    for key, r in sorted(cache.items()):
        if not key.startswith("threads/"):
            continue
        one = r["runs"][0]["s"]
        rows.extend([key.split("/")[1], r["shape"], f"{r['C']:.4g}", f"{r['tol']:g}",
                     run["n_jobs"], f"{run['s']:.2f}", f"{one / run['s']:.2f}x",
                     "yes" if r["identical"] else "NO"] for run in r["runs"])
    if not rows:
        return ""
    return ("\n\n**Threads** (`n_jobs`, `--threads`): the same fits with the products split "
            "among threads (rows of X V, columns of Xᵀ R, the softmax terms by rows), wall "
            "seconds of one fit each; \"same model\": the coefficients are bitwise equal. "
            "A formed subspace Hessian is BLAS's work, on BLAS's own threads (pinned to 1 "
            "here): where the fit forms its Hessians (MNIST, digits, scene at this C) the "
            "threads have little left to split.\n\n"
            + _report.markdown_table(["data", "shape", "C", "tol", "n_jobs", "seconds",
                                      "speed-up", "same model"], rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    parser.add_argument("--cap", type=float, default=30.0,
                        help="stop OBA's ladder after a run longer than this (s)")
    parser.add_argument("--saga-max", type=float, default=600.0,
                        help="the longest saga run of a ladder (s)")
    parser.add_argument("--factors", nargs="+", type=int, default=FACTORS,
                        help="C as these multiples of the smallest active C")
    parser.add_argument("--fresh", action="store_true", help="ignore cached results")
    parser.add_argument("--rerun-oba", action="store_true",
                        help="run OBA's ladders (and --threads) of the selected rows again "
                             "and keep their cached saga runs (extended when OBA's new best, "
                             "time or the new caps ask for more)")
    parser.add_argument("--threads", action="store_true",
                        help="also time n_jobs=1 and 2 on each set at the first factor")
    args = parser.parse_args()
    cache = {} if args.fresh or not CACHE.exists() else json.loads(CACHE.read_text())
    warm_up()
    for name in SETS:
        if name not in args.sets:
            continue
        X, y = load(name)
        shape = f"{X.shape[0]} x {X.shape[1]}, K = {np.unique(y).size}"
        if args.threads and (f"threads/{name}" not in cache or args.rerun_oba):
            C = args.factors[0] * smallest_C(X, y, 1.0)
            print(f"threads/{name}: C = {C:.4g}", flush=True)
            cache[f"threads/{name}"] = {"shape": shape, "commit": COMMIT,
                                        **thread_runs(X, y, C)}
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            CACHE.write_text(json.dumps(cache))
        ratios = [1.0] + ([ELASTIC["l1_ratio"]] if name in ELASTIC["sets"] else [])
        for l1_ratio in ratios:
            c_min = smallest_C(X, y, l1_ratio)
            for factor in args.factors:
                key = f"{name}/{l1_ratio}/{factor}"
                old = cache.get(key, {})
                same = old.get("cap") == args.cap and old.get("saga_max") == args.saga_max
                if same and not args.rerun_oba:
                    continue
                C = factor * c_min
                print(f"{key}: C = {C:.4g}", flush=True)
                oba = oba_runs(X, y, C, l1_ratio, args.cap)
                best = min(r["F"] for r in oba)
                # saga's runs do not depend on the caps (each is a fixed number of epochs at
                # tol 0): a new cap only moves where its ladder stops
                kept = old.get("saga", []) if args.rerun_oba else []
                saga = saga_runs(X, y, C, l1_ratio, saga_cap(oba, args.cap, args.saga_max),
                                 best * (1 + 0.1 * TARGET), kept)
                cache[key] = {"shape": shape, "C": C, "factor": factor, "l1_ratio": l1_ratio,
                              "oba": oba, "saga": saga, "cap": args.cap,
                              "saga_max": args.saga_max, "oba_commit": COMMIT,
                              "saga_commit": (old.get("saga_commit", old.get("oba_commit"))
                                              if kept else COMMIT),
                              "saga_kept": len(kept)}
                CACHE.parent.mkdir(parents=True, exist_ok=True)
                CACHE.write_text(json.dumps(cache))
    rows = [row(key.split("/")[0], r["shape"], r["factor"], r["C"], r["l1_ratio"], r["oba"],
                r["saga"], r["cap"])
            for key, r in sorted(((k, v) for k, v in cache.items()
                                  if not k.startswith("threads/")),
                                 key=lambda kv: (SETS.index(kv[0].split("/")[0]),
                                                 -float(kv[0].split("/")[1]),
                                                 int(kv[0].split("/")[2])))]
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "shape", "C", "l1_ratio", "OBA s to 1e-6", "saga s to 1e-6",
                 "saga / OBA", "OBA best excess", "saga best excess", "nonzeros"], rows)
            + "\n\nsaga's ladder stops once it is within 1e-7 of OBA's best or after a run "
              "longer than 10.5 times OBA's time to 1e-6 (at least the cap of OBA's ladder, "
              "the row's `cap` in the cache, at most `--saga-max`); \"best excess\" is a "
              "solver's lowest objective relative to the best of both (0: it found the best). "
              "A row marked \"not converged\" has no certified optimum: OBA's ladder ended on "
              "the time cap before two tolerances agreed.\n\n"
              "Where the rows were measured (saga's runs are kept across OBA reruns with "
              "`--rerun-oba`; its code did not change):\n\n" + provenance(cache)
            + thread_table(cache))
    _report.write_section("l1_multinomial",
                          "Multinomial and elastic-net ℓ1 logistic regression: OBA vs saga",
                          body)


if __name__ == "__main__":
    main()
