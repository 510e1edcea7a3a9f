"""SDCA's convergence test on a schedule: how often SparsemaxClassifier evaluates its objective.

SDCA tests ``max|grad| <= tol`` on the primal gradient, a pass over X that costs as much
as an epoch. Evaluated after every epoch, it doubled the fit. Three arms: every epoch; the
earlier schedule (after epochs 1-8, then after epoch ⌈9t/8⌉ when last evaluated after epoch
t); and ``minimize_sdca``'s (after epoch 1, then once the epoch's largest dual change has
fallen ``CHECK_PROGRESS`` = 4-fold since the last evaluation or after epoch t + ⌈t/2⌉,
whichever first). Both schedules evaluate after every epoch once max|grad| is within
100 x tol (``CHECK_DENSE``: it is not monotone, and the test catches its dips there). The
arms run ``SparsemaxClassifier(solver="sdca")`` at the default ``tol`` with the same seed,
hence the same epochs, in one process, in turn, ``--repeat`` times (once for fits above
10 s), one thread; of each arm the faster run: epochs, objective evaluations, the median
CPU time of an epoch and of an evaluation, CPU seconds, max|grad| of the fitted model and
its objective's excess over the lowest. Data: a9a and w8a (binary), the first label of
Mulan's Bibtex and Delicious training sets (146 and 352 classes, the many-class sets of
``sparsekit-compare``), 5000 documents of the Debian corpus (TF-IDF, 58 sections);
``alpha`` 1e-3 (``sparsekit-compare``'s) and 1e-4 (Delicious: 1e-3 only).

Writes section "sdca_checks" of doc/benchmarks.md::

    python benchmarks/bench_sdca_checks.py [--repeat 3]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402

from sparsekit.datasets import load_debian, load_libsvm, load_mulan  # noqa: E402
from sparsekit.linear_model import SparsemaxClassifier  # noqa: E402
from sparsekit.linear_model import _sparsemax_solvers  # noqa: E402
from sparsekit.losses._fenchel_young_datafit import FenchelYoungLinear  # noqa: E402
from sparsekit.optimize import _sdca  # noqa: E402
from sparsekit.optimize._sdca import dual_epoch_csr, minimize_sdca  # noqa: E402

#: (name, alphas)
SETS = [("a9a", (1e-3, 1e-4)), ("w8a", (1e-3, 1e-4)), ("bibtex", (1e-3, 1e-4)),
        ("delicious", (1e-3,)), ("debian", (1e-3, 1e-4))]
#: (CHECK_GAP, CHECK_PROGRESS) of each arm: a gap of ⌈t / 10⁹⌉ = 1 epoch is the test after
#: every epoch; an infinite progress factor never triggers a test
ARMS = {"every epoch": (10**9, np.inf), "epochs 1-8, then eighths (earlier)": (8, np.inf),
        "dual change (default)": (_sdca.CHECK_GAP, _sdca.CHECK_PROGRESS)}


def data(name):
    if name in ("a9a", "w8a"):
        return load_libsvm(name)
    if name == "debian":
        corpus = load_debian(data_home=_report.DATA_HOME)
        keep = np.random.default_rng(0).permutation(len(corpus.text))[:5000]
        X = TfidfVectorizer().fit_transform([corpus.text[i] for i in keep])
        return sp.csr_matrix(X), np.asarray(corpus.section)[keep]
    X, Y = load_mulan(name, subset="train")
    Y = sp.csr_matrix(Y)
    keep = np.flatnonzero(np.diff(Y.indptr) > 0)   # rows without a label have no class
    return sp.csr_matrix(X)[keep], Y.indices[Y.indptr[keep]]


def run(X, y, alpha, schedule):
    """(CPU seconds, solver result, median CPU seconds of an epoch and of an evaluation of
    the objective) of one fit with (CHECK_GAP, CHECK_PROGRESS) = schedule."""
    results, epochs, evaluations = [], [], []

    def solve(*args, **kwargs):
        results.append(minimize_sdca(*args, **kwargs))
        return results[-1]

    def epoch(*args):
        start = time.process_time()
        change = dual_epoch_csr(*args)
        epochs.append(time.process_time() - start)
        return change

    def value_grad(datafit, theta):
        start = time.process_time()
        out = objective(datafit, theta)
        evaluations.append(time.process_time() - start)
        return out

    default, objective = (_sdca.CHECK_GAP, _sdca.CHECK_PROGRESS), FenchelYoungLinear.value_grad
    (_sdca.CHECK_GAP, _sdca.CHECK_PROGRESS), _sdca.dual_epoch_csr = schedule, epoch
    _sparsemax_solvers.minimize_sdca = solve
    FenchelYoungLinear.value_grad = value_grad
    try:
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SparsemaxClassifier(alpha=alpha, solver="sdca", tol=1e-6,
                                random_state=0).fit(X, y)
        return (time.process_time() - start, results[-1], statistics.median(epochs),
                statistics.median(evaluations))
    finally:
        (_sdca.CHECK_GAP, _sdca.CHECK_PROGRESS), _sdca.dual_epoch_csr = default, dual_epoch_csr
        _sparsemax_solvers.minimize_sdca, FenchelYoungLinear.value_grad = minimize_sdca, objective


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for name, alphas in SETS:
        X, y = data(name)
        for alpha in alphas:
            best = {}
            for _ in range(args.repeat):
                for arm, schedule in ARMS.items():
                    seconds, res, epoch, evaluation = run(X, y, alpha, schedule)
                    if arm not in best or seconds < best[arm][0]:
                        best[arm] = (seconds, res, epoch, evaluation)
                if min(b[0] for b in best.values()) > 10:
                    break
            low = min(res.fun for _, res, _, _ in best.values())
            base = best[next(iter(ARMS))][0]
            classes = np.unique(y).size
            for arm, (seconds, res, epoch, evaluation) in best.items():
                rows.append([f"{name} {X.shape[0]} x {X.shape[1]}, {classes} classes",
                             f"{alpha:g}", arm, f"{res.nit}", f"{res.nfev}",
                             f"{1e3 * epoch:.2f}", f"{1e3 * evaluation:.2f}",
                             f"{seconds:.2f}", f"{seconds / base:.2f}",
                             f"{np.max(np.abs(res.jac)):.1e}",
                             f"{(res.fun - low) / abs(low):.0e}"])
                print(" | ".join(rows[-1]), flush=True)
    body = f"""
`SparsemaxClassifier(alpha, solver="sdca")` at `tol=1e-6` (on the largest
gradient entry), with the objective evaluated after every epoch; on the earlier schedule
(after epochs 1-8, then after epoch ⌈9t/8⌉ when last evaluated after epoch t); or on the
schedule of `minimize_sdca` (after epoch 1, then once the epoch's largest dual change has
fallen 4-fold since the last evaluation, or after epoch t + ⌈t/2⌉); both schedules after
every epoch once max|grad| is within 100 x tol. Same seed, so the same epochs up to the
stop; CPU seconds, one thread, the faster of {args.repeat} runs per
arm (one above 10 s); "ms per epoch" and "ms per evaluation": the median CPU time of the
fit's epochs and of its evaluations of the objective and gradient; "time / every epoch":
CPU seconds over the first arm's; "excess": the fitted objective's relative excess over
the lowest of the three.

{_report.markdown_table(["data", "alpha", "objective evaluated", "epochs", "evaluations",
                         "ms per epoch", "ms per evaluation", "CPU s", "time / every epoch",
                         "max|grad|", "excess"], rows)}
"""
    _report.write_section("sdca_checks", "SparsemaxClassifier (sdca): the objective on a "
                          "schedule", body)


if __name__ == "__main__":
    main()
