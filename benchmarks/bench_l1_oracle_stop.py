"""ℓ1 logistic regression: the rows of the ℓ1 table that LIBLINEAR wins, against the least time any stopping rule could give OBA.

The rows of section "l1_logistic" where OBA is behind LIBLINEAR (the same problems: F(w) =
‖w‖₁ + C Σᵢ log(1 + exp(−yᵢ wᵀxᵢ)), no intercept, OBA given CSC input, LIBLINEAR ``-s 6 -B
-1`` its problem built untimed). OBA's iterates do not depend on ``tol`` (the estimator's
stop only chooses where along them to end), so the process CPU time from the start of a fit
to its first iterate with F ≤ F*(1 + ε) is the least time in which any stopping rule could
end an L1LogisticOBA fit within ε: it is measured on a fit at tol 1e-10 whose every
iterate is recorded (the recording's own time left out; median over ``--repeat`` fits), F*
being OBA's objective at tol 1e-11 (in the ℓ1 table's tight comparison equal to
LIBLINEAR's at ``-e 1e-9`` or below it on these problems). Beside it, in the same run:
OBA's and LIBLINEAR's time to ε by the ℓ1 table's protocol (each solver's ladder of
tolerances, refined once between its last miss and first hit; the CPU median of 3 runs
below 1 s), and how far above F* LIBLINEAR's fastest run to ε ended. Where the oracle's
time is above LIBLINEAR's, no stopping rule wins the row: OBA's iterations up to ε cost more
than LIBLINEAR's whole run.

Writes section "l1_oracle_stop" of doc/benchmarks.md::

    python benchmarks/bench_l1_oracle_stop.py [--repeat 5]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import sys
import time
import warnings

from bench_l1_logistic import LADDERS, load, make_runners, objective, refinements, timed

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
import sparsekit.linear_model._l1_solve as l1_solve  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402

#: (data, C, ε): the rows of the ℓ1 table (commit 2450c3e) where LIBLINEAR was ahead
PROBLEMS = (("w8a", 0.1, 1e-4), ("w8a", 0.1, 1e-6), ("w8a", 1.0, 1e-4), ("w8a", 10.0, 1e-4),
            ("debian", 10.0, 1e-4))


def recorded_fit(X, y, C, tol, target=None):
    """(iterates, estimator): an L1LogisticOBA fit with, for each iterate, the CPU seconds
    since the fit began (less the recording's own) and the solver's objective (F / (C n)),
    stopped at the first iterate of objective at most ``target`` if given (through the
    callback's StopIteration: the iterates before it are the unstopped fit's)."""
    solve, iterates, spent = l1_solve.minimize_oba, [], [0.0]

    def recording(*args, callback=None, **kwargs):
        assert callback is None, "the fit has callbacks of its own"

        def record(intermediate_result):
            now = time.process_time()
            iterates.append((now - start - spent[0], intermediate_result.fun))
            spent[0] += time.process_time() - now
            if target is not None and intermediate_result.fun <= target:
                raise StopIteration
        return solve(*args, callback=record, **kwargs)

    l1_solve.minimize_oba = recording
    try:
        start = time.process_time()
        est = L1LogisticOBA(C=C, tol=tol, fit_intercept=False, max_iter=2000).fit(X, y)
    finally:
        l1_solve.minimize_oba = solve
    return iterates, est


def oracle(X, y, C, eps, repeat, F_star):
    """(iterations, CPU seconds) to OBA's first iterate within ε of ``F_star``, the least
    objective of a fit at tol 1e-11 (both in the solver's units)."""
    target = F_star * (1 + eps)
    times, first = [], None
    for _ in range(repeat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the fit's warning that it was stopped early
            iterates, _ = recorded_fit(X, y, C, 1e-10, target)
        first = len(iterates) - 1
        if iterates[first][1] > target:
            raise RuntimeError(f"no iterate within {eps:g} of the tight objective")
        times.append(iterates[first][0])
    return first + 1, statistics.median(times)


def ladder_time(run, objective_of, tols, F_star, eps):
    """(CPU seconds, F / F* − 1, iterations or None) of the fastest run of the ladder
    ``tols``, refined once, within ε of F*: the ℓ1 table's rule (the objective computed
    outside the timing)."""
    runs = []

    def measure(tol):
        cpu, _, (w, extra) = timed(run, tol)
        runs.append({"tol": tol, "seconds": cpu, "F": objective_of(w), "nit": extra.get("nit")})
        return runs[-1]["F"] <= F_star * (1 + eps)
    for tol in tols:
        if measure(tol):
            break
    for tol in refinements(runs, F_star, (eps,)):
        measure(tol)
    hit = min((r for r in runs if r["F"] <= F_star * (1 + eps)), key=lambda r: r["seconds"])
    return hit["seconds"], hit["F"] / F_star - 1, hit["nit"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", nargs="*", help="only these data sets (not written)")
    args = parser.parse_args()
    rows, data = [], {}
    for name, C, eps in PROBLEMS:
        if args.data and name not in args.data:
            continue
        if name not in data:
            X, y = load(name)
            data[name] = (X, X.tocsc(), y)
        X, Xc, y = data[name]
        runners = make_runners(X, y, C)

        def objective_of(w):
            return objective(X, y, w, C)
        tight, est = recorded_fit(Xc, y, C, 1e-11)
        F_star = objective(X, y, est.coef_.ravel(), C)
        nit, t_oracle = oracle(Xc, y, C, eps, args.repeat, min(F for _, F in tight))
        t_oba, _, nit_oba = ladder_time(runners["OBA"], objective_of, LADDERS["OBA"], F_star, eps)
        t_ll, above, _ = ladder_time(runners["LIBLINEAR"], objective_of,
                                     LADDERS["LIBLINEAR"], F_star, eps)
        rows.append([name, f"{C:g}", f"{eps:.0e}", f"{t_oba:.3f}", str(nit_oba), str(nit),
                     f"{t_oracle:.3f}", f"{t_ll:.3f}", f"{above:.1e}",
                     f"{t_oba / t_ll:.2f}", f"{t_oracle / t_ll:.2f}"])
        print(rows[-1], flush=True)
    if args.data:
        return
    bounded = [f"{r[0]} at C = {r[1]}, ε = {r[2]}" for r in rows if float(r[-1]) > 1]
    body = (__doc__.split("\n\n")[1].replace("\n", " ") + "\n\n" + _report.markdown_table(
        ["data", "C", "ε", "OBA, table's protocol (s)", "its iterations",
         "OBA's iterations to ε", "OBA, oracle stop (s)", "LIBLINEAR (s)",
         "LIBLINEAR's run: F / F* − 1", "OBA / LIBLINEAR", "oracle / LIBLINEAR"], rows)
            + "\n\nRows where no stopping rule would put OBA ahead (oracle / LIBLINEAR > 1): "
            + ("; ".join(bounded) if bounded else "none") + ".")
    _report.write_section("l1_oracle_stop", "ℓ1 logistic regression: the rows LIBLINEAR wins, "
                          "and OBA's least time to ε", body, packages=(
                              "numpy", "scipy", "scikit-learn", "liblinear-official"))


if __name__ == "__main__":
    main()
