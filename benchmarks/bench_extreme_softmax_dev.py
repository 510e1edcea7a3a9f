"""Choosing ExtremeSoftmaxSGD's defaults on development splits.

The training split of each set of ``bench_fasttext.py`` (Bibtex, Delicious, Debian first tag,
the K = 1e4 teacher) is split 80/20 into a fitting part and a development part (the test
splits are never read); every configuration of the grid below is fitted on the fitting part
(one thread, 20 epochs, ``lr_decay`` 0.9, as the defaults) and scored by its development
accuracy, its training NLL on 2000 fitting rows, and its fit time. The table ranks the
configurations by their mean accuracy relative to the best configuration of each set.

Writes section "extreme_softmax_dev" of doc/benchmarks.md::

    python benchmarks/bench_extreme_softmax_dev.py [--sets ...]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import json
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_extreme_softmax import _eval_rows  # noqa: E402
from bench_fasttext import SETS, load  # noqa: E402
from sparsekit.linear_model import ExtremeSoftmaxSGD  # noqa: E402

GRID = ([("implicit", m, lr) for m in (1, 5) for lr in (1.0, 3.0, 10.0, 30.0)]
        + [("sampled_softmax", m, lr) for m in (5, 20) for lr in (0.3, 1.0, 3.0)]
        + [(method, 5, lr) for method in ("ove", "umax") for lr in (0.1, 0.3, 1.0)]
        + [("nce", 5, lr) for lr in (0.3, 1.0, 3.0)])
CACHE = _report.RESULTS / "extreme_softmax_dev.json"


def development_split(name):
    """``(X_fit, y_fit, X_dev, y_dev)``: the training split of set ``name`` cut 80/20 at
    random (seed 0), the development rows those of classes the fitting part has."""
    X, y, *_ = load(name)
    perm = np.random.RandomState(0).permutation(X.shape[0])
    cut = int(0.8 * X.shape[0])
    fit, dev = perm[:cut], perm[cut:]
    seen = np.isin(y[dev], y[fit])
    return X[fit], y[fit], X[dev[seen]], y[dev[seen]]


def run(name):
    Xf, yf, Xd, yd = development_split(name)
    ev = _eval_rows(Xf.shape[0])
    rows = {}
    for method, m, lr in GRID:
        est = ExtremeSoftmaxSGD(method, n_sampled=m, learning_rate=lr, random_state=0)
        warnings.simplefilter("ignore", ConvergenceWarning)    # a diverged row says so
        t0 = time.perf_counter()
        try:
            est.fit(Xf, yf)
        except (ValueError, FloatingPointError) as exc:     # an explicit method's overflow
            rows[f"{method} m={m} lr={lr:g}"] = {"error": str(exc)[:60]}
            continue
        seconds = time.perf_counter() - t0
        logp = est.predict_log_proba(Xf[ev])
        nll = float(-np.mean(logp[np.arange(ev.size), np.searchsorted(est.classes_, yf[ev])]))
        rows[f"{method} m={m} lr={lr:g}"] = {
            "seconds": seconds, "accuracy": float(est.score(Xd, yd)), "nll": nll}
        print(f"{name}: {method} m={m} lr={lr:g}: {rows[f'{method} m={m} lr={lr:g}']}",
              flush=True)
    return {"N_fit": int(Xf.shape[0]), "N_dev": int(Xd.shape[0]), "rows": rows}


def report(cached):
    names = [n for n in SETS if n in cached]
    configs = list(next(iter(cached.values()))["rows"])
    best = {n: max(r.get("accuracy", 0) for r in cached[n]["rows"].values()) for n in names}
    relative = {c: np.mean([cached[n]["rows"][c].get("accuracy", 0) / best[n] for n in names])
                for c in configs}
    table = []
    for c in sorted(configs, key=relative.get, reverse=True):
        cells = []
        for n in names:
            r = cached[n]["rows"][c]
            cells.append("diverged" if "error" in r else
                         f"{r['accuracy']:.3f} / {r['nll']:.2f} / {r['seconds']:.2f}")
        table.append([c, f"{relative[c]:.3f}", *cells])
    sizes = ", ".join(f"{n} {cached[n]['N_fit']} / {cached[n]['N_dev']}" for n in names)
    body = (__doc__.split("\n\n")[1].replace("\n", " ") + f"\n\nRows fitted / development "
            f"rows: {sizes}. Cells: development accuracy / training NLL / fit seconds.\n\n"
            + _report.markdown_table(["configuration", "mean accuracy / best", *names], table))
    _report.write_section("extreme_softmax_dev", "ExtremeSoftmaxSGD: choosing the defaults on "
                          "development splits", body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    args = parser.parse_args()
    cached = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    for name in args.sets:
        cached[name] = run(name)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(cached, indent=1))
    report(cached)


if __name__ == "__main__":
    main()
