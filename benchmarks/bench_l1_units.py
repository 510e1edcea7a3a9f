"""L1LogisticOBA on features in other units: X times s at C / s, solved in units near 1.

X times s at C / s is the problem of X at C, its weights divided by s. OBA's constants
are absolute (the Hessian regularization 1e-8, the trust radius 1e3, the stopping measure
in the units of the scaled problem's gradient), set on columns whose entries are near 1:
on digits / 16 times 1e-2 at C = 1e3 the one-vs-rest fit took six times the iterations,
times 1e-4 it ran to max_iter. Since 2026-12-07 a fit in memory with the ℓ1 penalty alone
whose median column has a root mean square nonzero entry outside [1/16, 16] is solved with
X multiplied by the power of two that brings that entry near 1 (the same problem, exactly),
and, later that day, an elastic-net fit too (its solver's ridge weight multiplied by that
power: X times s at C / s is then the elastic net of X at C with a ridge weight divided by
s, another problem, so its rows compare the two ways, not the scales). This script fits
``L1LogisticOBA`` at its defaults but C and l1_ratio (tol 1e-8, max_iter 500, a free
intercept) on digits / 16 (C0 = 10, one-vs-rest and multinomial, l1_ratio 1 and 0.5) and
a9a (C0 = 1, l1_ratio 1) times s at C = C0 / s, two ways in the same build: as it is
("rescaled") and with X solved in its own units ("as given", the fit before the change),
beside a peer on the same X, C and l1_ratio: LIBLINEAR (scikit-learn's
``LogisticRegression(solver="liblinear", l1_ratio=1)`` at its defaults: tol 1e-4, its bias
penalized; in a ``OneVsRestClassifier`` for digits) for the ℓ1 one-vs-rest fits, saga
(``LogisticRegression(solver="saga")`` at its defaults: tol 1e-4, max_iter 100; one-vs-rest
in a ``OneVsRestClassifier``) for the elastic net. Wall seconds (median of 3, or the first
fit over 5 s), iterations (OBA's summed over the one-vs-rest problems; the peer's largest,
"warned" where it stopped at its max_iter),
the warnings each fit gave, the peer's time over OBA's ("rescaled"), and the objective
C Σ loss + r‖W‖₁ + (1 − r)/2 ‖W‖² of the "as given" fit minus the rescaled one's,
relative to it (positive: the rescaled fit is lower). Writes section "l1_units" of
doc/benchmarks.md::

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
    """(name, X, y, C0, models: (multiclass, l1_ratio) each) of each data set."""
    digits = load_digits()
    yield "digits / 16", digits.data / 16.0, digits.target, 10.0, (
        ("ovr", 1.0), ("multinomial", 1.0), ("ovr", 0.5), ("multinomial", 0.5))
    X, y = load_libsvm("a9a", data_home=_report.DATA_HOME)
    yield "a9a", X, y, 1.0, (("ovr", 1.0),)


def said(count):
    return f"{count} warning{'s' * (count != 1)}" if count else "none"


def oba(X, y, C, multiclass, l1_ratio, way):
    """(seconds, model, warnings) of a default fit at C, X solved the ``way`` of WAYS."""
    rows.UNIT_RANGE = way[1]
    try:
        return _report.timed_fit(L1LogisticOBA(C=C, multiclass=multiclass, l1_ratio=l1_ratio),
                                 X, y)
    finally:
        rows.UNIT_RANGE = WAYS[0][1]


def peer(X, y, C, multiclass, l1_ratio):
    """(name, seconds, its iterations (the largest over the classes), warnings) of the
    peer's default fit at C: LIBLINEAR's ℓ1 one-vs-rest, saga's elastic net, or None."""
    if l1_ratio == 1.0 and multiclass == "multinomial":
        return None
    name = "LIBLINEAR" if l1_ratio == 1.0 else "saga"
    model = LogisticRegression(solver=name.lower(), l1_ratio=l1_ratio, C=C)
    if multiclass == "ovr" and np.unique(y).size > 2:
        model = OneVsRestClassifier(model)
    seconds, model, warned = _report.timed_fit(model, X, y)
    fitted = getattr(model, "estimators_", [model])
    return name, seconds, max(int(np.max(m.n_iter_)) for m in fitted), warned


def measure():
    table = []
    for name, X, y, C0, models in data():
        for multiclass, l1_ratio in models:
            for s in SCALES:
                Xs, C = X * s, C0 / s
                runs = [oba(Xs, y, C, multiclass, l1_ratio, way) for way in WAYS]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    other = peer(Xs, y, C, multiclass, l1_ratio)
                F = [objective(model, Xs, y) for _, model, _ in runs]
                row = [name, multiclass, f"{l1_ratio:g}", f"{s:g}", f"{C:g}"]
                for seconds, model, warned in runs:
                    row += [f"{seconds:.3f}", str(int(model.n_iter_.sum())), said(warned)]
                if other is None:
                    row += ["—", "—", "—", "—"]
                else:
                    row += [other[0], f"{other[1]:.3f}",
                            f"{other[2]}{' (warned)' * bool(other[3])}",
                            f"{other[1] / runs[0][0]:.2f}x"]
                row.append(f"{(F[1] - F[0]) / abs(F[0]):.1e}")
                table.append(row)
                print(row, flush=True)
    header = ["data", "model", "l1_ratio", "s", "C"]
    for label, _ in WAYS:
        header += [f"OBA s ({label})", f"iterations ({label})", f"warnings ({label})"]
    header += ["peer", "peer s", "peer iterations", "peer / OBA (rescaled)",
               "F(as given) - F(rescaled), relative"]
    return _report.markdown_table(header, table)


def main():
    body = (" ".join(__doc__.split("\n\n")[1].split()).split(" Writes")[0]
            + "\n\n" + measure())
    _report.write_section("l1_units", "L1LogisticOBA on features in other units", body)


if __name__ == "__main__":
    main()
