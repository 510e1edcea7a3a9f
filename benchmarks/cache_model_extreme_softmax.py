"""How many cache lines an OVE step misses, by an LRU model of the last-level cache.

Replays two shuffled epochs of section 2 of the extreme_softmax benchmark (teacher, N = 1e5,
D = 1000, 20 draws per row, one sampled class per step, uniform over the classes present)
on an LRU cache of 64-byte lines, and prints for the second (warm) epoch, per step, the
distinct lines touched and missed
in the true and the sampled weight rows (float32 rows of D entries) and in the example's
own data: its CSR row (int32 indices, float32 values, two indptr entries) and its per-example
scalars (label, ||x||^2, sample weight, u: 8 bytes each, in separate arrays). The misses at
K = 1e5 beyond those at K = 1e2, times this machine's random-line throughput, bound the
extra time per step (doc/benchmarks.md, extreme_softmax section 2).

Run: ``python benchmarks/cache_model_extreme_softmax.py [--cache-mib 32]`` (about 30 s).
"""
import argparse
from collections import OrderedDict

import numpy as np

from sparsekit.datasets import make_extreme_softmax_teacher

PARTS = ("true row", "sampled row", "x row", "scalars")


def replay(X, y, cache_lines, seed=0):
    """Mean lines touched and missed per step of the second epoch, for each of ``PARTS``."""
    classes, y_idx = np.unique(y, return_inverse=True)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    # byte offsets of the arrays in one address space (gaps keep them apart)
    gap = 1 << 40
    base = {"W": 0, "indices": gap, "data": 2 * gap, "indptr": 3 * gap}
    scalar_bases = [(4 + j) * gap for j in range(4)]
    lru = OrderedDict()
    touched, missed = np.zeros(len(PARTS)), np.zeros(len(PARTS))

    def visit(part, lines):
        touched[part] += len(lines)
        for line in lines:
            if line in lru:
                lru.move_to_end(line)
            else:
                missed[part] += 1
                lru[line] = None
                if len(lru) > cache_lines:
                    lru.popitem(last=False)

    for epoch in range(2):
        touched[:], missed[:] = 0, 0                     # count the last epoch only
        order = rng.permutation(n)
        sampled = rng.integers(0, len(classes) - 1, n)
        sampled += sampled >= y_idx[order]             # never the true class
        for t, i in enumerate(order):
            _step(visit, X, d, base, scalar_bases, i, y_idx[i], sampled[t])
    return touched / n, missed / n, len(classes)


def _step(visit, X, d, base, scalar_bases, i, true_class, sampled_class):
    """The lines one step touches, part by part, in the driver's order."""
    i = int(i)
    lo, hi = int(X.indptr[i]), int(X.indptr[i + 1])
    row = {(base["indptr"] + 4 * i) // 64, (base["indptr"] + 4 * i + 4) // 64}
    for name in ("indices", "data"):                    # 4 bytes per nonzero each
        row.update(range((base[name] + 4 * lo) // 64, (base[name] + 4 * hi - 1) // 64 + 1))
    visit(2, sorted(row))
    visit(3, [(b + 8 * i) // 64 for b in scalar_bases])
    cols = X.indices[lo:hi].astype(np.int64)
    for part, k in enumerate((true_class, sampled_class)):
        visit(part, np.unique((int(k) * d + cols) * 4 // 64).tolist())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-mib", type=float, default=32.0)
    args = parser.parse_args()
    missed_by_k = {}
    for K in (100, 100_000):
        X, y = make_extreme_softmax_teacher(100_000, 1000, K, 20, dtype=np.float32,
                                            random_state=0)
        touched, missed, rows = replay(X, y, int(args.cache_mib * 2**20) // 64)
        missed_by_k[K] = missed
        print(f"K={K} ({rows} rows), per step: " + "; ".join(
            f"{p} {a:.1f} lines, {b:.2f} missed" for p, a, b in zip(PARTS, touched, missed)))
    extra = missed_by_k[100_000].sum() - missed_by_k[100].sum()
    print(f"extra misses per step at K=1e5 over K=1e2: {extra:.1f} lines")


if __name__ == "__main__":
    main()
