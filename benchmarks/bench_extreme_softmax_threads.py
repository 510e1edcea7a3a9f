"""ExtremeSoftmaxSGD on several threads (``n_jobs``): epoch time and accuracy.

For the K = 1e4 teacher, the Debian descriptions and Delicious (the sets of
``bench_fasttext.py``, test splits for accuracy), fits the defaults (sampled softmax,
m = 5) and Implicit SGD for 10 epochs with ``n_jobs`` 1 and 2, five times each in
alternation, and reports the median time of an epoch (the epoch driver alone,
``epoch_times_``) and the test accuracy, beside the spread of the one-thread accuracy over
three seeds (the two-thread runs differ from run to run: lock-free updates). On this 2-core
machine two threads are the most it can show.

Writes section "extreme_softmax_threads" of doc/benchmarks.md::

    python benchmarks/bench_extreme_softmax_threads.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import sys

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_fasttext import load  # noqa: E402
from sparsekit.linear_model import ExtremeSoftmaxSGD  # noqa: E402

SETS = ["teacher", "debian", "delicious"]
METHODS = {"defaults (sampled_softmax, m=5)": {}, "implicit (m=5)": {"method": "implicit"}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for name in args.sets:
        Xtr, ytr, Xte, yte, *_ = load(name)
        for label, params in METHODS.items():
            epoch, accuracy = {1: [], 2: []}, {}
            for _ in range(args.rounds):
                for jobs in (1, 2):
                    est = ExtremeSoftmaxSGD(n_epochs=10, random_state=0, n_jobs=jobs,
                                            **params).fit(Xtr, ytr)
                    epoch[jobs] += est.epoch_times_
                    accuracy.setdefault(jobs, []).append(est.score(Xte, yte))
            seeds = [ExtremeSoftmaxSGD(n_epochs=10, random_state=seed, **params).fit(
                Xtr, ytr).score(Xte, yte) for seed in (1, 2)] + accuracy[1][:1]
            t1, t2 = statistics.median(epoch[1]), statistics.median(epoch[2])
            rows.append([name, f"{Xtr.shape[0]} x {Xtr.shape[1]}, K = {int(ytr.max()) + 1}",
                         label, f"{t1 * 1e3:.1f}", f"{t2 * 1e3:.1f}", f"{t2 / t1:.2f}x",
                         f"{statistics.median(accuracy[1]):.4f}",
                         f"{min(seeds):.4f}-{max(seeds):.4f}",
                         f"{min(accuracy[2]):.4f}-{max(accuracy[2]):.4f}"])
            print(rows[-1], flush=True)
    body = (__doc__.split("\n\n")[1].replace("\n", " ") + "\n\n" + _report.markdown_table(
        ["data", "shape", "method", "epoch ms, 1 thread", "epoch ms, 2 threads",
         "2 threads / 1", "test accuracy, 1 thread", "1 thread, seeds 0-2",
         "test accuracy, 2 threads (runs)"],
        rows))
    _report.write_section("extreme_softmax_threads", "ExtremeSoftmaxSGD on two threads", body)


if __name__ == "__main__":
    main()
