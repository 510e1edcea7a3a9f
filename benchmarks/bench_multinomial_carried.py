"""L1LogisticOBA(multiclass="multinomial") on dense tables: its formed Hessian carried between iterates.

``L1LogisticOBA(multiclass="multinomial")`` at C = 1 (an unpenalized intercept, tol 1e-8,
its default) on ``make_classification`` tables (seed 0; n_informative min(20, d − 4),
n_redundant 2 as scikit-learn's default, or 0; cast to the dtype) and on scikit-learn's
digits (standardized), every product on one BLAS thread: wall seconds of one fit (median
of 3 where a fit takes under 5 s), its iterations, and the Grams formed over every row
(the others carried: rows refreshed, entries joined); beside it in the same run, the
same objective by scikit-learn's saga (``LogisticRegression(l1_ratio=1, solver="saga")``,
tol 1e-4, max_iter 100: the only other multinomial ℓ1 solver) and the ℓ2 model by
lbfgs (``LogisticRegression()``, a speed reference for another objective); saga's
objective as a relative gap to OBA's, and OBA's to the earlier commit's (negative: lower).

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the
same script run on an earlier commit's build) beside this run's. Writes section
"multinomial_carried" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_carried.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import statistics
import sys
import warnings

import numpy as np
from sklearn.datasets import load_digits, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import L1LogisticOBA  # noqa: E402
from sparsekit.losses import _multinomial_datafit  # noqa: E402

#: (rows, columns, classes, redundant columns, dtype)
TABLES = [(300_000, 50, 5, 2, "float32"), (100_000, 50, 5, 0, "float32"),
          (100_000, 100, 3, 2, "float64"), (20_000, 30, 4, 2, "float64")]


def tables():
    for n, d, k, red, dtype in TABLES:
        X, y = make_classification(n, d, n_informative=min(20, d - 4), n_redundant=red,
                                   n_classes=k, random_state=0)
        yield f"{n} x {d} {dtype}, {k} classes, {red} redundant", X.astype(dtype), y
    digits = load_digits()
    yield "digits (1797 x 64, 10 classes)", StandardScaler().fit_transform(digits.data), \
        digits.target


def objective(X, y, model):
    """C Σ softmax loss + ‖W‖₁ (C = 1) of a fitted multinomial model, in float64."""
    S = X.astype(np.float64) @ model.coef_.T.astype(np.float64) + model.intercept_
    loss = np.logaddexp.reduce(S, axis=1) - S[np.arange(y.size), y]
    return float(loss.sum() + np.abs(model.coef_).sum())


def counted_fit(X, y, long=5.0):
    """(wall seconds: median of 3 fits, or the first longer than ``long``; the fitted OBA;
    the Grams its last fit formed over every row) of the multinomial fit."""
    full, times = [], []
    form = _multinomial_datafit.Multinomial._gram_dense

    def spy(f, H, block=None, **kw):
        full.append("rows" not in kw)
        return form(f, H, block, **kw)
    _multinomial_datafit.Multinomial._gram_dense = spy
    try:
        while not times or (times[-1] <= long and len(times) < 3):
            full.clear()
            model, seconds = _report.fit_once(
                lambda: L1LogisticOBA(multiclass="multinomial"), X, y)
            times.append(seconds)
    finally:
        _multinomial_datafit.Multinomial._gram_dense = form
    return (statistics.median(times) if times[-1] <= long else times[-1]), model, sum(full)


def rows():
    out = []
    for name, X, y in tables():
        seconds, oba, formed = counted_fit(X, y)
        f_oba = objective(X, y, oba)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            saga, saga_s = _report.fit_once(lambda: LogisticRegression(
                l1_ratio=1.0, solver="saga", tol=1e-4, max_iter=100), X, y)
            lr_s, _, _ = _report.timed_fit(LogisticRegression(max_iter=1000), X, y)
        out.append({"data": name, "oba": seconds, "iterations": int(oba.n_iter_[0]),
                    "formed": formed, "objective": f_oba, "saga": saga_s,
                    "saga_epochs": int(saga.n_iter_[0]),
                    "saga_gap": (objective(X, y, saga) - f_oba) / abs(f_oba), "lr": lr_s})
        print(out[-1], flush=True)
    return out


def main():
    results, earlier = _report.beside_before(__doc__.split("\n\n")[0], lambda: {
        "fits": rows()})
    then = f" (commit {earlier['commit']})" if earlier else ""
    old_fits = {r["data"]: r for r in (earlier or {}).get("fits", [])}
    header = ["table", "OBA, s (iterations, Grams formed anew)", f"before{then}",
              "objective vs before", "saga, s (epochs)", "saga's objective vs OBA's",
              "OBA / saga", "LogisticRegression (lbfgs, l2), s"]
    table = []
    for r in results["fits"]:
        old = old_fits.get(r["data"])
        table.append([
            r["data"], f"{r['oba']:.2f} ({r['iterations']}, {r['formed']})",
            f"{old['oba']:.2f} ({old['iterations']}, {old['formed']})" if old else "-",
            f"{(r['objective'] - old['objective']) / abs(old['objective']):+.1e}"
            if old else "-",
            f"{r['saga']:.2f} ({r['saga_epochs']})", f"{r['saga_gap']:+.1e}",
            f"{r['oba'] / r['saga']:.2f}x", f"{r['lr']:.2f}"])
    body = ("Multinomial fits at C = 1 (wall seconds, one BLAS thread):\n\n"
            + _report.markdown_table(header, table))
    _report.write_section("multinomial_carried",
                          "Multinomial ℓ1 logistic regression on dense tables: the formed "
                          "Hessian carried between iterates", body)


if __name__ == "__main__":
    main()
