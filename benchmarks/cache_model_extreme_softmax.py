"""How many weight cache lines an OVE step misses, by an LRU model of the last-level cache.

Replays the shuffled epoch of section 2 of the extreme_softmax benchmark (teacher, N = 1e5,
D = 1000, 20 draws per row, one sampled class per step, uniform over the classes present)
on an LRU cache that holds weight lines only (64 bytes, float32 rows of D entries), and
prints the distinct lines a step touches in the true and the sampled row and how many of
them miss. The misses times this machine's random-line throughput bound the extra time per
step at large K (doc/benchmarks.md, extreme_softmax section 2).

Run: ``python benchmarks/cache_model_extreme_softmax.py [--cache-mib 32]`` (about 10 s).
"""
import argparse
from collections import OrderedDict

import numpy as np

from sparsekit.datasets import make_extreme_softmax_teacher


def replay(X, y, cache_lines, seed=0):
    """Mean (lines, misses) per step for the true and the sampled row."""
    classes, y_idx = np.unique(y, return_inverse=True)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    sampled = rng.integers(0, len(classes) - 1, n)
    sampled += sampled >= y_idx[order]                 # never the true class
    lru, lines, misses = OrderedDict(), np.zeros(2), np.zeros(2)
    for t, i in enumerate(order):
        cols = X.indices[X.indptr[i]:X.indptr[i + 1]]
        for which, k in enumerate((y_idx[i], sampled[t])):
            touched = np.unique((k * d + cols) * 4 // 64).tolist()
            lines[which] += len(touched)
            for line in touched:
                if line in lru:
                    lru.move_to_end(line)
                else:
                    misses[which] += 1
                    lru[line] = None
                    if len(lru) > cache_lines:
                        lru.popitem(last=False)
    return lines / n, misses / n, len(classes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-mib", type=float, default=32.0)
    args = parser.parse_args()
    for K in (100, 100_000):
        X, y = make_extreme_softmax_teacher(100_000, 1000, K, 20, dtype=np.float32,
                                            random_state=0)
        lines, misses, rows = replay(X, y, int(args.cache_mib * 2**20) // 64)
        print(f"K={K} ({rows} rows): per step, true row {lines[0]:.1f} lines, "
              f"{misses[0]:.2f} misses; sampled row {lines[1]:.1f} lines, "
              f"{misses[1]:.2f} misses")


if __name__ == "__main__":
    main()
