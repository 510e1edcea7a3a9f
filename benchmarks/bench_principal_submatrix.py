"""Formed Hessians cut down to some of their coordinates: NumPy's ``G[np.ix_(idx, idx)]`` or
the compiled gather ``principal_submatrix``.

OBA's corrective cycles and pinned passes solve the Newton system again on a subset of the
free coordinates; where the subspace Hessian is formed (the binary fit's Grams, the
multinomial fit on a dense X), that operator is its principal sub-matrix, cut once per
re-solve; the Gram updates cut the previous Gram to the coordinates that stay. First table:
one cut of a random symmetric matrix to a random sorted subset of about three quarters of
its rows, milliseconds (the median of 20). Second table: ``L1LogisticOBA`` fits from w = 0,
both ways in one process, alternated (wall seconds, one thread, the median of 3), the
number of cuts and the objective's relative difference between the two ways; multinomial on
Mulan scene (first label) and digits (pixels / 16) at a multiple of the smallest C with a
nonzero weight, binary on a9a.

Writes section "principal_submatrix" of doc/benchmarks.md::

    python benchmarks/bench_principal_submatrix.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import time

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_l1_multinomial import load, objective, smallest_C, warm_up  # noqa: E402

import sparsekit.losses._logistic_datafit as logistic_module  # noqa: E402
import sparsekit.losses._multinomial_gram as multinomial_gram_module  # noqa: E402
import sparsekit.losses._panel_gram as panel_gram_module  # noqa: E402
from sparsekit._cython import _gram_kernels as GK  # noqa: E402
from sparsekit.datasets import load_a9a  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402

SIZES = ((130, 100), (400, 300), (1300, 1000), (2700, 2000))
#: (data set, multiclass, C: a multiple of the smallest active C, or C itself for a9a)
FITS = [("scene", "multinomial", 100), ("scene", "multinomial", 1000),
        ("digits", "multinomial", 1000), ("a9a", "ovr", 10.0)]
WAYS = ("NumPy's np.ix_", "principal_submatrix")


class _Kernels:
    """The Gram kernels, with principal_submatrix counted, or replaced by NumPy's ix_."""

    cuts = 0

    def __init__(self, numpy):
        self._numpy = numpy

    def __getattr__(self, name):
        return getattr(GK, name)

    def principal_submatrix(self, G, idx):
        _Kernels.cuts += 1
        return G[np.ix_(idx, idx)] if self._numpy else GK.principal_submatrix(G, idx)


def _use(way):
    kernels = _Kernels(numpy=way == WAYS[0])
    logistic_module.GK = panel_gram_module.GK = kernels
    multinomial_gram_module._gram_kernels = kernels


def cuts():
    """The first table's rows."""
    rng = np.random.default_rng(0)
    rows = []
    for n, m in SIZES:
        A = rng.standard_normal((n, n))
        G = A + A.T
        idx = np.sort(rng.choice(n, m, replace=False)).astype(np.intp)
        assert np.array_equal(GK.principal_submatrix(G, idx), G[np.ix_(idx, idx)])
        t_numpy, _ = _report.median_time(lambda: G[np.ix_(idx, idx)], repeat=20, warmup=2)
        t_kernel, _ = _report.median_time(lambda: GK.principal_submatrix(G, idx), repeat=20,
                                       warmup=2)
        rows.append([f"{n} -> {m}", f"{1e3 * t_numpy:.3f}", f"{1e3 * t_kernel:.3f}",
                     f"{t_numpy / t_kernel:.1f}x"])
        print(*rows[-1], flush=True)
    return rows


def fits():
    """The second table's rows."""
    rows = []
    for name, multiclass, factor in FITS:
        if name == "a9a":
            X, y = load_a9a()
            C, label = factor, f"C = {factor:g}"
        else:
            X, y = load(name)
            C = factor * smallest_C(X, y, 1.0)
            label = f"{factor} C_min = {C:.4g}"
        seconds, counts, F = {w: [] for w in WAYS}, {}, {}
        for _ in range(3):
            for way in WAYS:
                _use(way)
                _Kernels.cuts = 0
                t0 = time.perf_counter()
                model = L1LogisticOBA(C=C, tol=1e-6, multiclass=multiclass,
                                      max_iter=5000).fit(X, y)
                seconds[way].append(time.perf_counter() - t0)
                counts[way] = _Kernels.cuts
                if multiclass == "multinomial":
                    F[way] = objective(X, y, model.coef_, model.intercept_, C, 1.0)
                else:
                    margins = y * (X @ model.coef_.ravel() + model.intercept_[0])
                    F[way] = (C * float(np.logaddexp(0, -margins).sum())
                              + float(np.abs(model.coef_).sum()))
        before, after = (float(np.median(seconds[w])) for w in WAYS)
        rows.append([f"{name} ({X.shape[0]} x {X.shape[1]})", multiclass, label,
                     f"{before:.3f}", f"{after:.3f}", f"{before / after:.2f}x",
                     str(counts[WAYS[1]]), f"{abs(F[WAYS[0]] - F[WAYS[1]]) / F[WAYS[0]]:.1e}"])
        print(*rows[-1], flush=True)
    _use(WAYS[1])
    return rows


def main():
    warm_up()
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(["G -> cut", "np.ix_ ms", "principal_submatrix ms",
                                      "speed-up"], cuts())
            + "\n\nFits at tol 1e-6:\n\n"
            + _report.markdown_table(["data", "model", "C", "np.ix_ s",
                                      "principal_submatrix s", "speed-up", "cuts",
                                      "F difference"], fits()))
    _report.write_section("principal_submatrix",
                          "OBA: formed Hessians cut by a compiled gather", body)


if __name__ == "__main__":
    main()
