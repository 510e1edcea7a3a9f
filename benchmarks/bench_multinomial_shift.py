"""Multinomial ℓ1 logistic regression: the class weights' median shift, with and without.

A feature's K class weights shifted together leave every row's probabilities unchanged, so
the Newton steps of OBA cannot see that direction, and their rounding let the weights drift
off the sparsest solution. Since 2026-12-01 every point the solver evaluates is first
shifted by a median of each feature's class weights, the weight nearest 0 among those that
are one (``minimize_oba``'s ``shift_invariant``): it lowers the ℓ1 norm as far as any
shift can, exactly, and where the norm is flat (as many positive as negative weights, K
even) it leaves a zero at the same objective. This script fits
``L1LogisticOBA(multiclass="multinomial")`` at tol 1e-8 (the default) on the data sets of
section *l1_multinomial* (digits / 16, Mulan scene's first label, MNIST / 255, the Debian
descriptions' TF-IDF of words and word pairs, 58 sections) at C = 10, 100 and 1000 times
the smallest C with a nonzero weight (MNIST at 10 and 100, Debian at 10), and on Mulan's
Bibtex and Delicious (first label: 146 and 352 classes; C = 0.05 and 1, as in section
*oba_pinned*), with the shift and without it (``shift_invariant=None``), in the order
with, without, without, with (an untimed fit of each data set first: a process's first fit
of a size pays for fresh memory). Wall seconds (the faster of the two rounds, each the
median of 3 where a fit takes under a second),
iterations, the objective C Σ loss + ‖W‖₁ of the fit without the shift minus the one with
it, relative (positive: the shifted fit is lower), nonzero weights of each, the features
whose class weights do not have 0 as a median (drifted) and those with a nonzero weight but
no zero one (none with the shift).
Writes section "multinomial_shift" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_shift.py [--sets digits scene ... delicious]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
import sparsekit.linear_model._l1_solve as l1_solve  # noqa: E402
from bench_l1_multinomial import objective, warm_up  # noqa: E402
from bench_multinomial_route import multinomial_problem  # noqa: E402
from sparsekit import L1LogisticOBA  # noqa: E402

#: the factors of C: times the smallest C with a nonzero weight, or (Bibtex, Delicious) C
SETS = {"digits": (10, 100, 1000), "scene": (10, 100, 1000), "mnist": (10, 100),
        "debian": (10,), "bibtex": (0.05, 1.0), "delicious": (0.05, 1.0)}
ABSOLUTE = ("bibtex", "delicious")
SOLVER = l1_solve.minimize_oba


def _without_shift(*args, **kwargs):
    """``minimize_oba`` blind to the multinomial model's invariant shifts."""
    return SOLVER(*args, **{**kwargs, "shift_invariant": None})


def fit(X, y, C, shift):
    """(seconds, model, warning) of the default multinomial fit at ``C`` (the median of
    three fits where they take under a second)."""
    l1_solve.minimize_oba = SOLVER if shift else _without_shift
    times = []
    try:
        while len(times) < 3 and sum(times) < 1.0:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                start = time.perf_counter()
                model = L1LogisticOBA(C=C, multiclass="multinomial").fit(X, y)
                times.append(time.perf_counter() - start)
    finally:
        l1_solve.minimize_oba = SOLVER
    said = next((str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)),
                "")
    said = ("stalled" if said.startswith("OBA stopped") else
            "max_iter" if "did not converge" in said else said[:40] or "none")
    return float(np.median(times)), model, said


def drifted(coef):
    """Features whose class weights do not have 0 as a median (more than half of them of
    one sign)."""
    half = coef.shape[0] / 2
    return int(np.count_nonzero(((coef > 0).sum(axis=0) > half)
                                | ((coef < 0).sum(axis=0) > half)))


def without_zero(coef):
    """Features with a nonzero class weight and no zero one."""
    return int(np.count_nonzero(coef.any(axis=0) & (coef != 0).all(axis=0)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    args = parser.parse_args()
    warm_up()
    rows = []
    for name in args.sets:
        X, y, base = multinomial_problem(name, name not in ABSOLUTE)
        for factor in SETS[name]:
            C = factor * base
            if factor == SETS[name][0]:
                fit(X, y, C, True)                      # untimed: fresh memory
            runs = {}
            for shift in (True, False, False, True):    # the faster of two rounds each
                run = fit(X, y, C, shift)
                if shift not in runs or run[0] < runs[shift][0]:
                    runs[shift] = run
            F = {shift: objective(X, y, m.coef_, m.intercept_, C, 1.0)
                 for shift, (_, m, _) in runs.items()}
            row = [name, f"{X.shape[0]} x {X.shape[1]}, K = {np.unique(y).size}",
                   f"{C:g}" if name in ABSOLUTE else f"{factor} C_min = {C:.4g}"]
            for shift in (True, False):
                seconds, model, said = runs[shift]
                row += [f"{seconds:.3f}", str(int(model.n_iter_[0])), said,
                        str(np.count_nonzero(model.coef_)), str(drifted(model.coef_)),
                        str(without_zero(model.coef_))]
            row += [f"{(F[False] - F[True]) / abs(F[True]):.1e}",
                    f"{runs[False][0] / runs[True][0]:.2f}x"]
            rows.append(row)
            print(row, flush=True)
    header = ["data", "shape", "C"]
    for label in ("shift", "no shift"):
        header += [f"s ({label})", f"iterations ({label})", f"warning ({label})",
                   f"nonzeros ({label})", f"drifted features ({label})",
                   f"features without a zero ({label})"]
    header += ["F(no shift) - F(shift), relative", "time without / with"]
    body = (" ".join(__doc__.split("\n\n")[1].split()).split(" Writes")[0]
            + "\n\n" + _report.markdown_table(header, rows))
    _report.write_section("multinomial_shift", "Multinomial ℓ1 logistic regression: the class "
                          "weights' median shift", body)


if __name__ == "__main__":
    main()
