"""Multinomial ℓ1 logistic regression where a tolerance ladder is too long: one OBA run, traced.

bench_l1_multinomial.py runs each solver cold along a ladder of tolerances or epochs; on the
Debian corpus at 1000 times the smallest active C a single OBA fit takes minutes and saga's
epochs seconds each, so a ladder would take hours. Here OBA runs once to a tight tolerance and
its objective is recorded after every iteration (a run stopped at iteration k would have
taken the same time to get there); the last iterate's relative duality gap bounds its
distance to the optimum from above, and how far F moved over the last 100 iterations shows
whether the run still moves. OBA's time to 1e-6 is that of the first iterate within 1e-6
(relative) of the best objective either solver reached. saga then runs once, cold, for as many epochs as 10.5
times that time allows (from the time of one epoch, at most ``--saga-max`` seconds): if its
objective is still above the target, OBA was more than 10 times faster; if it reached it,
the ratio is at most its run's time over OBA's.

Writes section "l1_multinomial_long" of doc/benchmarks.md::

    python benchmarks/bench_l1_multinomial_trace.py [--sets debian] [--factor 1000]
        [--tol 1e-9] [--oba-max 3600] [--saga-max 9000] [--no-saga]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import json
import math
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_l1_multinomial import SETS, TARGET, load, objective, smallest_C  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from sparsekit.linear_model._l1_solve import (  # noqa: E402
    MULTINOMIAL_CG_MAXITER, multinomial_model, oba_solve)
from sparsekit.losses._duality import relative_duality_gap  # noqa: E402
from sparsekit.losses._multinomial_datafit import Multinomial  # noqa: E402

CACHE = _report.RESULTS / "l1_multinomial_long.json"
COMMIT = _report.git_commit()


def oba_trace(X, y, C, tol, most):
    """OBA (the estimator's solver and settings, from the estimator's start) to ``tol``:
    [(seconds, F, free entries)] after each iteration, the final relative duality gap and
    the final objective recomputed from the model. Stops after ``most`` seconds."""
    codes = np.searchsorted(np.unique(y), y)
    datafit = Multinomial(X, codes, codes.max() + 1, fit_intercept=True)
    scale = C * datafit.n_samples           # F = C n f: the solver's objective, rescaled
    trace, t0 = [], time.perf_counter()

    def record(intermediate_result):
        seconds = time.perf_counter() - t0
        trace.append((seconds, scale * float(intermediate_result.fun),
                      int(np.count_nonzero(intermediate_result.x))))
        if len(trace) % 10 == 0:
            print(f"  it. {len(trace)}: {seconds:.1f} s, F {trace[-1][1]:.12g}", flush=True)
        if seconds > most:
            raise StopIteration

    res = oba_solve(datafit, C, tol, 100_000, None, 0, 1.0, MULTINOMIAL_CG_MAXITER, record)
    coef, intercept = multinomial_model(datafit, res.x)
    return {"trace": trace, "status": int(res.status), "nit": int(res.nit),
            "gap": float(relative_duality_gap(datafit, res.x, C)),
            "F": objective(X, y, coef, intercept, C, 1.0),
            "nnz": int(np.count_nonzero(coef))}


def saga_run(X, y, C, seconds, most, epochs=None):
    """saga cold for the epochs that ``seconds`` allow (at most ``most`` seconds), from the
    times of runs of one and of three epochs (a run also pays a fixed cost: on the Debian
    corpus a one-epoch run took 37 s), or for the given ``epochs``; its epochs, time and
    objective. The first epochs cost more than the later ones (Debian at 1000 C_min: 10.3 s
    each from those runs, 5.3 s each over a 320-epoch run), so the estimate runs short."""
    def fit(epochs):
        t0 = time.perf_counter()
        est = LogisticRegression(C=C, l1_ratio=1.0, solver="saga", tol=0.0,
                                 max_iter=epochs).fit(X, y)
        return time.perf_counter() - t0, est

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        per_epoch = fixed = None
        if epochs is None:
            one, three = fit(1)[0], fit(3)[0]
            per_epoch = max((three - one) / 2, 1e-3)
            fixed = max(one - per_epoch, 0.0)
            epochs = max(1, math.ceil((min(seconds, most) - fixed) / per_epoch))
            print(f"  saga: {per_epoch:.2f} s per epoch and {fixed:.1f} s per run (1 epoch "
                  f"{one:.1f} s, 3 epochs {three:.1f} s)", flush=True)
        print(f"  saga: running {epochs} epochs", flush=True)
        elapsed, est = fit(epochs)
    F = objective(X, y, est.coef_, est.intercept_, C, 1.0)
    print(f"  saga {epochs} epochs: {elapsed:.1f} s, F {F:.12g}", flush=True)
    return {"epochs": epochs, "s": elapsed, "F": F, "per_epoch": per_epoch, "fixed": fixed,
            "nnz": int(np.count_nonzero(est.coef_))}


def first_within(trace, best):
    return next(((s, F, k + 1) for k, (s, F, _) in enumerate(trace)
                 if F <= best * (1 + TARGET)), None)


def last_moves(trace, span=100):
    """How far F moved (relative) over the last ``span`` iterations of a trace."""
    then, now = trace[max(len(trace) - 1 - span, 0)][1], trace[-1][1]
    return f"{(then - now) / now:.1e}"


def row(key, r):
    name, factor = key.split("/")
    oba, saga = r["oba"], r.get("saga")
    ended = "time limit" if oba["status"] == 99 else f"tol, status {oba['status']}"
    cells = [name, r["shape"], f"{factor} C_min = {r['C']:.4g}",
             f"{oba['nit']} it., {oba['trace'][-1][0]:.4g} s (ended by the {ended}); "
             f"F moved {last_moves(oba['trace'])} over its last 100 it.; gap {oba['gap']:.1e}"]
    best = min([oba["F"]] + ([saga["F"]] if saga else []))
    reached = first_within(oba["trace"], best)
    cells.append(f"{reached[0]:.3g} (it. {reached[2]})" if reached else "not reached")
    if saga is None:
        return cells + ["not run", "—", "—"]
    excess = (saga["F"] - best) / best
    if saga["F"] <= best * (1 + TARGET):
        ratio = f"≤ {saga['s'] / reached[0]:.1f}x" if reached else "—"
    else:
        ratio = f"> {saga['s'] / reached[0]:.1f}x" if reached else "—"
    return cells + [f"{saga['epochs']} epochs in {saga['s']:.4g} s", f"{excess:.1e}", ratio]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["debian"], choices=SETS)
    parser.add_argument("--factor", type=int, default=1000,
                        help="C as this multiple of the smallest active C")
    parser.add_argument("--tol", type=float, default=1e-9, help="OBA's tolerance")
    parser.add_argument("--oba-max", type=float, default=3600.0,
                        help="stop OBA's run after this many seconds")
    parser.add_argument("--saga-max", type=float, default=9000.0,
                        help="the longest saga run (s)")
    parser.add_argument("--no-saga", action="store_true", help="run (or keep) OBA only")
    parser.add_argument("--saga-epochs", type=int,
                        help="run saga for this many epochs (again, if the cached run had "
                             "another count) instead of estimating them")
    args = parser.parse_args()
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    for name in args.sets:
        key = f"{name}/{args.factor}"
        X, y = load(name)
        C = args.factor * smallest_C(X, y, 1.0)
        r = cache.setdefault(key, {"shape": f"{X.shape[0]} x {X.shape[1]}, "
                                            f"K = {np.unique(y).size}", "C": C})
        if "oba" not in r:
            print(f"{key}: OBA, C = {C:.4g}", flush=True)
            r["oba"] = oba_trace(X, y, C, args.tol, args.oba_max)
            r["oba_commit"] = COMMIT
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            CACHE.write_text(json.dumps(cache))
        again = args.saga_epochs and r.get("saga", {}).get("epochs") != args.saga_epochs
        if ("saga" not in r or again) and not args.no_saga:
            reached = first_within(r["oba"]["trace"], r["oba"]["F"])
            print(f"{key}: saga", flush=True)
            r["saga"] = saga_run(X, y, C, 10.5 * reached[0], args.saga_max, args.saga_epochs)
            r["saga_commit"] = COMMIT
            CACHE.write_text(json.dumps(cache))
    rows = [row(key, r) for key, r in sorted(cache.items())]
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "shape", "C", "OBA run", "OBA s to 1e-6", "saga run",
                 "saga excess", "saga / OBA"], rows)
            + "\n\nWhere the rows were measured: " + "; ".join(
                f"{key}: OBA at {r.get('oba_commit')}, saga at {r.get('saga_commit', '—')}"
                for key, r in sorted(cache.items())))
    _report.write_section("l1_multinomial_long",
                          "Multinomial ℓ1 logistic regression: one traced OBA run against "
                          "one long saga run", body)


if __name__ == "__main__":
    main()
