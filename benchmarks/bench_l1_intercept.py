"""ℓ1 logistic regression with a free intercept: L1LogisticOBA's default against LIBLINEAR.

Objective of every solver: F(w, b) = ‖w‖₁ + C Σᵢ log(1 + exp(−yᵢ (wᵀxᵢ + b))), the intercept
b unpenalized: ``L1LogisticOBA(C)`` as users call it, LIBLINEAR ``-s 6 -B 1 -R`` (bias not
regularized), skglm ``SparseLogisticRegression(fit_intercept=True)`` and scikit-learn's saga
(its intercept is not penalized; celer and scikit-learn's liblinear cannot fit this
objective). "OBA, b₀ = 0" is the same estimator started at b = 0 instead of the null model's
intercept (what it did before), to measure that start. The protocol of
``bench_l1_logistic.py``: a ladder of tolerances per solver, each refined once per ε,
F* = the best F of all runs, CPU seconds (median of 3 below 1 s). Writes section
"l1_intercept" of doc/benchmarks.md.

    python benchmarks/bench_l1_intercept.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from bench_l1_logistic import (EPSILONS, LADDERS, fmt, load, refinements, time_to,
                               timed_or_none)
from sparsekit.linear_model import L1LogisticOBA
from sparsekit.utils._sklearn import l1_penalty

DATASETS = ("a9a", "w8a", "mnist", "debian")
SOLVERS = ("OBA", "OBA, b₀ = 0", "LIBLINEAR", "skglm", "sklearn-saga")
CACHE = Path.home() / ".cache" / "sparsekit_bench_l1_intercept.json"


def objective(X, y, w, b, C):
    m = np.asarray(X @ w).ravel() + b
    return float(np.abs(w).sum() + C * np.logaddexp(0.0, -y * m).sum())


def make_runners(X, y, C):
    """solver name -> fn(tol) returning (w, b)."""
    from liblinear import liblinearutil
    from sklearn.linear_model import LogisticRegression
    from skglm import SparseLogisticRegression

    n, d = X.shape
    Xcsc = X.tocsc() if sp.issparse(X) else X
    prob = liblinearutil.problem(y, X if sp.issparse(X) else sp.csr_matrix(X))
    prob.set_bias(1)

    def oba(tol):
        est = L1LogisticOBA(C=C, tol=tol, max_iter=2000).fit(Xcsc, y)
        return est.coef_.ravel(), est.intercept_[0]

    def oba_zero_start(tol):
        est = L1LogisticOBA(C=C, tol=tol, max_iter=2000, warm_start=True)
        est.coef_, est.intercept_ = np.zeros((1, d)), np.zeros(1)
        est.fit(Xcsc, y)
        return est.coef_.ravel(), est.intercept_[0]

    def liblinear(tol):
        model = liblinearutil.train(
            prob, liblinearutil.parameter(f"-s 6 -B 1 -R -q -c {C} -e {tol}"))
        w = np.array([model.w[i] for i in range(d + 1)])
        w = w if model.get_labels()[0] == 1 else -w
        return w[:d], w[d]

    def skglm_run(tol):
        est = SparseLogisticRegression(alpha=1.0 / (C * n), tol=tol, max_iter=1000,
                                       fit_intercept=True).fit(Xcsc, y)
        return est.coef_.ravel(), float(np.ravel(est.intercept_)[0])

    def saga(tol):
        est = LogisticRegression(C=C, solver="saga", tol=tol, **l1_penalty(), max_iter=300,
                                 fit_intercept=True).fit(X, y)
        return est.coef_.ravel(), est.intercept_[0]

    return {"OBA": oba, "OBA, b₀ = 0": oba_zero_start, "LIBLINEAR": liblinear,
            "skglm": skglm_run, "sklearn-saga": saga}


def warm_up(dense):
    """One untimed fit per solver on a small problem of the same layout (numba compiles)."""
    rng = np.random.default_rng(0)
    Xs = sp.random(200, 30, density=0.3, random_state=0, format="csr")
    Xs.indices, Xs.indptr = Xs.indices.astype(np.int32), Xs.indptr.astype(np.int32)
    ys = np.where(rng.random(200) < 0.3, 1.0, -1.0)
    for run in make_runners(np.asfortranarray(Xs.toarray()) if dense else Xs, ys, 1.0).values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(1e-3)


def measured(X, y, C, runner, tol, run_limit):
    """{tol, seconds, F} of one timed run (warnings silenced), or None past ``run_limit``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = timed_or_none(runner, tol, run_limit)
    if out is None:
        return None
    seconds, _, (w, b) = out
    return {"tol": tol, "seconds": seconds, "F": objective(X, y, w, b, C)}


def run_problem(X, y, C, cap, run_limit):
    """Ladder runs of every solver after the tight references; {solver: [{tol, seconds, F}]}."""
    runners = make_runners(X, y, C)
    runs = {name + "-tight": [measured(X, y, C, runners[name], tol, None)]
            for name, tol in (("LIBLINEAR", 1e-9), ("OBA", 1e-11))}
    F_ref = min(runs["LIBLINEAR-tight"][0]["F"], runs["OBA-tight"][0]["F"])
    for name in SOLVERS:
        ladder, spent = [], 0.0
        for tol in LADDERS["OBA" if name.startswith("OBA") else name]:
            run = measured(X, y, C, runners[name], tol, run_limit)
            if run is None:
                ladder.append({"tol": tol, "seconds": run_limit, "F": float("inf")})
                break
            ladder.append(run)
            spent += run["seconds"]
            print(f"  {name:14s} tol={tol:.0e} {run['seconds']:8.3f}s F={run['F']:.12e}",
                  flush=True)
            if spent > cap or run["F"] <= F_ref * (1 + 1e-8):
                break
        for tol in refinements(ladder, F_ref):
            run = measured(X, y, C, runners[name], tol, run_limit)
            if run is not None:
                ladder.append({**run, "refined": True})
        runs[name] = ladder
    return runs


def summarize(results):
    """Table rows, and counts: OBA faster than LIBLINEAR, within 1.5× of the fastest peer,
    faster than from b₀ = 0; rows; the geometric mean of OBA / (OBA, b₀ = 0)."""
    rows, wins, close, gains, start_ratios = [], 0, 0, 0, []
    for key, runs in results.items():
        ds, C = key.split("|")
        F_star = min(r["F"] for rs in runs.values() for r in rs)
        for eps in EPSILONS:
            t = {s: time_to(runs[s] + runs.get(s + "-tight", []), F_star, eps)
                 for s in SOLVERS}
            peers = {s: v for s, v in t.items() if not s.startswith("OBA") and v is not None}
            best = min(peers, key=peers.get) if peers else None
            ratio = (lambda a, b: "—" if a is None or b is None else f"{a / b:.2f}")
            wins += bool(t["OBA"] and t["LIBLINEAR"] and t["OBA"] < t["LIBLINEAR"])
            close += bool(t["OBA"] and best and t["OBA"] <= 1.5 * peers[best])
            if t["OBA"] and t["OBA, b₀ = 0"]:
                start_ratios.append(t["OBA"] / t["OBA, b₀ = 0"])
                gains += start_ratios[-1] < 1
            rows.append([ds, C, f"{eps:.0e}"] + [fmt(t[s]) for s in SOLVERS] + [
                ratio(t["OBA"], t["OBA, b₀ = 0"]), ratio(t["OBA"], t["LIBLINEAR"]),
                "—" if best is None else f"{ratio(t['OBA'], peers[best])} ({best})"])
    return rows, (wins, close, gains, len(rows), float(np.exp(np.mean(np.log(start_ratios)))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--Cs", nargs="*", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--cap", type=float, default=20.0, help="seconds per solver ladder")
    parser.add_argument("--run-limit", type=float, default=60.0,
                        help="wall seconds after which a single ladder run is stopped")
    parser.add_argument("--report-only", action="store_true",
                        help="no new runs: rebuild the section from the results file")
    args = parser.parse_args()
    if args.report_only:  # the section names the command that measures, not the rebuild
        sys.argv = [a for a in sys.argv if a != "--report-only"]
    results = json.loads(CACHE.read_text()) if args.report_only else {}
    for ds in [] if args.report_only else args.datasets:
        X, y = load(ds)
        warm_up(dense=not sp.issparse(X))
        for C in args.Cs:
            print(f"{ds} C={C:g}", flush=True)
            results[f"{ds}|{C:g}"] = run_problem(X, y, C, args.cap, args.run_limit)
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            CACHE.write_text(json.dumps(results))
    rows, (wins, close, gains, total, start_mean) = summarize(results)
    body = f"""
The default `L1LogisticOBA(C)` fits an unpenalized intercept; this table compares it with the
solvers that minimize the same objective, ‖w‖₁ + C Σ log(1 + exp(−y (wᵀx + b))) with b free:
LIBLINEAR `-s 6 -B 1 -R` (problem built once, outside the timing), skglm
`SparseLogisticRegression(alpha=1/(C n), fit_intercept=True)` and scikit-learn's saga.
"OBA, b₀ = 0" starts the same estimator at b = 0 (warm start from zeros), the start it had
before it began at the null model's intercept (the log-odds of the share of positives, as
glmnet does); the column "OBA / b₀ = 0" is the gain from that start. Protocol, timing and
F* as in the table above (CPU seconds, BLAS pinned to 1 thread, every ladder refined once
per ε); "—" = not reached within the {args.cap:g} s cap per solver or {args.run_limit:g} s per run.
OBA is faster than LIBLINEAR on **{wins} of {total}** rows and within 1.5× of the fastest
peer on **{close} of {total}**. The null-model start is faster than b₀ = 0 on {gains} of {total}
rows (ratios below 1 before rounding), {start_mean:.2f}× the time in geometric mean. Where it is slower, e.g. Debian at C = 0.1 (a
diagnostic run at tol 1e-6: 11 iterations against 8), the first Newton steps from it are
longer (‖d‖ = 106 and 194 against 21 and 33 from b₀ = 0 over the same dozen free columns):
the second one's actual reduction is negative (ρ = −1.2), the trust radius drops to 26 and
the next iterations take shortened steps, the failure mode of the Synthetic rows above.

{_report.markdown_table(["data", "C", "ε", *SOLVERS, "OBA / b₀ = 0", "OBA / LIBLINEAR",
                         "OBA / fastest peer"], rows)}
"""
    _report.write_section("l1_intercept", "ℓ1 logistic regression with a free intercept "
                          "(the estimator's default)", body,
                          packages=["numpy", "scipy", "scikit-learn", "liblinear-official",
                                    "skglm"])


if __name__ == "__main__":
    main()
