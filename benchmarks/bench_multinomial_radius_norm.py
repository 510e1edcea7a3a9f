"""OBA's trust radius on the multinomial problem: Euclidean or in the Hessian diagonal's norm.

L1LogisticOBA's multinomial fit runs OBA with a Euclidean trust radius (at most 1e3, as
in the thesis) on a Jacobi-preconditioned CG. Where a few weights have a tiny curvature
(words that occur in a few documents of one class), the CG's first step runs along them
alone and meets the radius, so each Newton step moves a handful of coordinates. With
``radius_norm="diagonal"`` the radius is measured in ‖d‖_D = (Σᵢ Dᵢ dᵢ²)^½, D the
diagonal of the subspace Hessian (in units of √f; here at most ``--radius``), a norm
that rescaling the features leaves alone. Each row is one fit to tol 1e-6 from w = 0 by
each rule (at most the estimator's 500 iterations: "cap" where a fit stopped there),
one after the other in one process (CPU seconds, iterations, the objective
F = C Σ NLL + ‖W‖₁ and its excess over the lower of the two): the Debian package
descriptions as ``sparsekit-compare`` reads the JSON-lines file (``--label section --drop
package``: TF-IDF of the words, 58 classes) at C = 1 and 10, and the sets and C of the
multinomial table (digits, Mulan scene, MNIST, the Debian corpus of words and pairs, at
10, 100 and 1000 times the smallest C with a nonzero weight).

Writes section "l1_multinomial_radius" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_radius_norm.py [--sets debjson digits scene mnist
        debian] [--factors 10 100 1000] [--json-Cs 1 10] [--debian-factors 10 100]
        [--radius 1]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import functools
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_l1_multinomial import load, objective, smallest_C  # noqa: E402

from sparsekit import L1LogisticOBA  # noqa: E402
from sparsekit.linear_model import _l1_solve  # noqa: E402


def load_json():
    """(X, codes) of the Debian JSON-lines file as the command reads it."""
    from sparsekit.benchmarks._data import load_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_dataset(str(_report.DATA_HOME / "debian" / "debian_packages.jsonl.xz"),
                            label="section", drop=("package",))
    return data.X_l1, np.searchsorted(data.classes, data.y)


def fit(X, y, C, rule, radius):
    """(CPU seconds, iterations, F) of one multinomial fit to tol 1e-6 (at most the
    estimator's 500 iterations) with the trust radius ``rule`` ("euclidean": the
    estimator's; "diagonal": at most ``radius``)."""
    given = _l1_solve.minimize_oba
    if rule == "diagonal":
        _l1_solve.minimize_oba = functools.partial(given, radius_norm="diagonal",
                                                   cg_radius=radius)
    try:
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = L1LogisticOBA(C=C, tol=1e-6, multiclass="multinomial").fit(X, y)
        seconds = time.process_time() - start
    finally:
        _l1_solve.minimize_oba = given
    return seconds, int(est.n_iter_[0]), objective(X, y, est.coef_, est.intercept_, C, 1.0)


def _cell(seconds, iterations):
    return f"{seconds:.2f} ({iterations} it.{', cap' if iterations >= 500 else ''})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+",
                        default=["debjson", "digits", "scene", "mnist", "debian"])
    parser.add_argument("--factors", nargs="+", type=float, default=[10, 100, 1000])
    parser.add_argument("--json-Cs", nargs="+", type=float, default=[1, 10])
    parser.add_argument("--debian-factors", nargs="+", type=float, default=None,
                        help="the Debian corpus' factors (default --factors)")
    parser.add_argument("--radius", type=float, default=1.0)
    args = parser.parse_args()
    rows = []
    for name in args.sets:
        X, y = load_json() if name == "debjson" else load(name)
        if name == "debjson":
            Cs = [(C, f"{C:g}") for C in args.json_Cs]
        else:
            base = smallest_C(X, y, 1.0)
            factors = (args.debian_factors if name == "debian" and args.debian_factors
                       else args.factors)
            Cs = [(f * base, f"{f:g} C_min = {f * base:.4g}") for f in factors]
        label = "debian JSON-lines" if name == "debjson" else name
        for C, cell in Cs:
            runs = {rule: fit(X, y, C, rule, args.radius) for rule in ("euclidean", "diagonal")}
            best = min(F for _, _, F in runs.values())
            (s_e, it_e, F_e), (s_d, it_d, F_d) = runs["euclidean"], runs["diagonal"]
            print(label, cell, runs, flush=True)
            rows.append([label, f"{X.shape[0]} x {X.shape[1]}, K = {np.unique(y).size}", cell,
                         _cell(s_e, it_e), _cell(s_d, it_d),
                         f"{s_d / s_e:.2f}x", f"{(F_e - best) / best:.1e}",
                         f"{(F_d - best) / best:.1e}"])
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "shape", "C", "Euclidean, s", f"diagonal (radius {args.radius:g}), s",
                 "diagonal / Euclidean", "excess, Euclidean", "excess, diagonal"], rows))
    _report.write_section("l1_multinomial_radius", "OBA's multinomial trust radius: "
                          "Euclidean or in the Hessian diagonal's norm", body)


if __name__ == "__main__":
    main()
