"""L1LogisticOBA on features in other units: X times s at C / s, solved in units near 1.

X times s at C / s is the problem of X at C, its weights divided by s. OBA's constants
are absolute (the Hessian regularization 1e-8, the trust radius 1e3, the stopping measure
in the units of the scaled problem's gradient), set on columns whose entries are near 1:
on digits / 16 times 1e-2 at C = 1e3 the one-vs-rest fit took six times the iterations,
times 1e-4 it ran to max_iter. Since 2026-12-07 a fit in memory with the ℓ1 penalty alone
whose median column has a root mean square nonzero entry outside [1/16, 16] is solved with
X multiplied by the power of two that brings that entry near 1 (the same problem, exactly).
This script fits ``L1LogisticOBA`` at its defaults but C (tol 1e-8, max_iter 500, a free
intercept) on digits / 16 (C0 = 10, one-vs-rest and multinomial) and a9a (C0 = 1) times s
at C = C0 / s, two ways in the same build: as it is ("rescaled") and with X solved in its
own units ("as given", the fit before this change), beside LIBLINEAR (scikit-learn's
``LogisticRegression(solver="liblinear", l1_ratio=1)`` at its defaults: tol 1e-4, its bias
penalized; in a ``OneVsRestClassifier`` for digits) on the same X and C. Wall seconds (median of 3, or the first fit
over 5 s), iterations (OBA's summed over the one-vs-rest problems; LIBLINEAR's largest),
the warnings each fit gave, LIBLINEAR's time over OBA's ("rescaled"), and the objective
C Σ loss + ‖W‖₁ of the "as given" fit minus the rescaled one's, relative to it (positive:
the rescaled fit is lower). Writes section "l1_units" of doc/benchmarks.md::

    python benchmarks/bench_l1_units.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import math
import sys
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
import sparsekit.utils._rows as rows  # noqa: E402
from sparsekit import L1LogisticOBA  # noqa: E402
from sparsekit.datasets import load_libsvm  # noqa: E402

from bench_oba_stall import objective  # noqa: E402

SCALES = (1e-4, 1e-2, 1.0, 1e2, 1e4)
#: (label, the range of the median column's entry solved as given) of each way
WAYS = (("rescaled", rows.UNIT_RANGE), ("as given", (0.0, math.inf)))


def data():
    """(name, X, y, C0, models) of each data set."""
    digits = load_digits()
    yield "digits / 16", digits.data / 16.0, digits.target, 10.0, ("ovr", "multinomial")
    X, y = load_libsvm("a9a", data_home=_report.DATA_HOME)
    yield "a9a", X, y, 1.0, ("ovr",)


def said(count):
    return f"{count} warning{'s' * (count != 1)}" if count else "none"


def oba(X, y, C, multiclass, way):
    """(seconds, model, warnings) of a default fit at C, X solved the ``way`` of WAYS."""
    rows.UNIT_RANGE = way[1]
    try:
        return _report.timed_fit(L1LogisticOBA(C=C, multiclass=multiclass), X, y)
    finally:
        rows.UNIT_RANGE = WAYS[0][1]


def liblinear(X, y, C):
    """(seconds, its iterations (the largest over the classes), warnings) of LIBLINEAR's
    default ℓ1 fit at C, one-vs-rest."""
    model = LogisticRegression(solver="liblinear", l1_ratio=1.0, C=C)
    if np.unique(y).size > 2:
        model = OneVsRestClassifier(model)
    seconds, model, warned = _report.timed_fit(model, X, y)
    fitted = getattr(model, "estimators_", [model])
    return seconds, max(int(np.max(m.n_iter_)) for m in fitted), warned


def measure():
    table = []
    for name, X, y, C0, models in data():
        for multiclass in models:
            for s in SCALES:
                Xs, C = X * s, C0 / s
                runs = [oba(Xs, y, C, multiclass, way) for way in WAYS]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    peer = liblinear(Xs, y, C) if multiclass == "ovr" else None
                F = [objective(model, Xs, y) for _, model, _ in runs]
                row = [name, multiclass, f"{s:g}", f"{C:g}"]
                for seconds, model, warned in runs:
                    row += [f"{seconds:.3f}", str(int(model.n_iter_.sum())), said(warned)]
                if peer is None:
                    row += ["—", "—", "—"]
                else:
                    row += [f"{peer[0]:.3f}", str(peer[1]),
                            f"{peer[0] / runs[0][0]:.2f}x"]
                row.append(f"{(F[1] - F[0]) / abs(F[0]):.1e}")
                table.append(row)
                print(row, flush=True)
    header = ["data", "model", "s", "C"]
    for label, _ in WAYS:
        header += [f"OBA s ({label})", f"iterations ({label})", f"warnings ({label})"]
    header += ["LIBLINEAR s", "LIBLINEAR iterations", "LIBLINEAR / OBA (rescaled)",
               "F(as given) - F(rescaled), relative"]
    return _report.markdown_table(header, table)


def main():
    body = (" ".join(__doc__.split("\n\n")[1].split()).split(" Writes")[0]
            + "\n\n" + measure())
    _report.write_section("l1_units", "L1LogisticOBA on features in other units", body)


if __name__ == "__main__":
    main()
