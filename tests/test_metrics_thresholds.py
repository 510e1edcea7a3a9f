"""micro_f1_threshold against a brute-force search over every cut, and the search over
entries held in parts (the row partitions of a cluster) against it."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score

from sparsekit.metrics._thresholds import (PositiveEntries, merged_entries, micro_f1_threshold,
                                           row_slices, summed_histogram, threshold_search)


def _micro_f1(P, Y, w, t):
    """2 TP / (predicted + true), each label counted with its row's weight."""
    predicted, true, w = P > t, np.asarray(Y) > 0, np.asarray(w)[:, None]
    denominator = np.sum(w * predicted) + np.sum(w * true)
    f1 = 2 * np.sum(w * (predicted & true)) / denominator if denominator > 0 else 0.0
    if P.shape[1] > 1:   # scikit-learn's weighted micro-F1 (it reads one column as binary)
        assert f1 == pytest.approx(f1_score(Y, predicted, average="micro", sample_weight=w[:, 0],
                                            zero_division=0.0), abs=1e-12)
    return f1


def _best_by_brute_force(P, Y, w):
    cuts = np.unique(np.append(P[(P > 0) & (w[:, None] > 0)], 0.0))
    # P > t with t just below each value: every cut a threshold can make
    return max(_micro_f1(P, Y, w, np.nextafter(v, -np.inf) if v > 0 else 0.0)
               for v in cuts)


@pytest.mark.parametrize("seed", range(12))
def test_the_threshold_reaches_the_best_micro_f1_of_any_cut(seed):
    rng = np.random.default_rng(seed)
    n, k = rng.integers(1, 40), rng.integers(1, 8)
    P = rng.random((n, k)) * (rng.random((n, k)) < 0.6)
    if seed % 3 == 0:
        P = np.round(P, 1)                 # ties between entries
    Y = (rng.random((n, k)) < 0.4).astype(int)
    w = rng.random(n) * (rng.random(n) < 0.8) if seed % 2 else np.ones(n)
    t = micro_f1_threshold([(P, Y, w)])
    assert t >= 0
    assert _micro_f1(P, Y, w, t) == pytest.approx(_best_by_brute_force(P, Y, w), abs=1e-12)


def test_the_threshold_lies_halfway_to_the_next_value():
    P = np.array([[0.6, 0.3, 0.1]])
    assert micro_f1_threshold([(P, [[1, 0, 0]], [1.0])]) == pytest.approx(0.45)
    assert micro_f1_threshold([(P, [[1, 1, 0]], [1.0])]) == pytest.approx(0.2)
    # every positive entry: the support, 0
    assert micro_f1_threshold([(P, [[1, 1, 1]], [1.0])]) == 0.0


def test_ties_are_kept_or_cut_together():
    P = np.array([[0.4, 0.4, 0.2]])
    # keeping one of the tied entries is not a threshold: both (F1 2/3) or neither (0)
    assert micro_f1_threshold([(P, [[1, 0, 0]], [1.0])]) == pytest.approx(0.3)


def test_row_blocks_give_the_threshold_of_the_whole():
    rng = np.random.default_rng(3)
    P = rng.random((50, 5)) * (rng.random((50, 5)) < 0.5)
    Y = sp.csr_matrix((rng.random((50, 5)) < 0.3).astype(np.int8))
    w = rng.random(50)
    whole = micro_f1_threshold([(P, Y, w)])
    blocks = micro_f1_threshold((P[a:a + 7], Y[a:a + 7], w[a:a + 7]) for a in range(0, 50, 7))
    assert blocks == whole


@pytest.mark.parametrize("P, Y, w", [
    (np.zeros((3, 2)), np.eye(3, 2), np.ones(3)),            # nothing is ever predicted
    (np.full((2, 2), 0.5), np.zeros((2, 2)), np.ones(2)),    # no true label
    (np.array([[0.9, 0.1]]), [[0, 1]], [0.0]),               # no weight
    (np.array([[0.9, 0.0]]), [[0, 1]], [1.0]),               # never right
])
def test_without_anything_to_gain_the_threshold_is_the_support(P, Y, w):
    assert micro_f1_threshold([(P, Y, w)]) == 0.0
    assert micro_f1_threshold([]) == 0.0


class _Parts:
    """Positive entries held in parts, searched as a cluster would search them: histograms
    summed, ranges of entries merged, each round's requests counted."""

    def __init__(self, P, Y, w, n_parts):
        cuts = np.linspace(0, len(w), n_parts + 1).astype(int)
        self.parts = [PositiveEntries([(P[a:b], Y[a:b], w[a:b])])
                      for a, b in zip(cuts[:-1], cuts[1:])]
        self.n_true = sum(p.n_true for p in self.parts)
        self.histogram_rounds, self.take_rounds, self.taken = 0, 0, 0

    def histograms(self, edges):
        self.histogram_rounds += 1
        return [summed_histogram([p.histogram(e) for p in self.parts]) for e in edges]

    def takes(self, ranges):
        self.take_rounds += 1
        out = [merged_entries([p.take(lo, hi) for p in self.parts]) for lo, hi in ranges]
        self.taken += sum(values.size for values, _, _ in out)
        return out


def _entries_case(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(20, 120)), int(rng.integers(2, 12))
    P = rng.random((n, k)) * (rng.random((n, k)) < 0.5)
    kind = seed % 4
    if kind == 1:
        P = np.round(P, 2)                          # ties between entries
    elif kind == 2:
        P[rng.random((n, k)) < 0.3] = 1.0           # one-hot predictions: many ties at 1
    elif kind == 3:                                 # values a few ulps apart: no bin splits
        P = np.where(P > 0, 0.5 + rng.integers(0, 6, (n, k)) * np.finfo(float).eps, 0.0)
    Y = (rng.random((n, k)) < np.clip(P + 0.1, 0, 1)).astype(int)
    w = rng.random(n) * (rng.random(n) < 0.9) if seed % 2 else np.ones(n)
    return P, Y, w


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("bins, gathered", [(4, 3), (16, 40), (1024, 1 << 16)])
def test_the_search_over_parts_finds_the_in_memory_cut(seed, bins, gathered):
    """Few bins and a small gathering limit force several rounds of splits; the cut found
    is the in-memory one (its micro-F1 the best of any cut), and at most the entries of
    the ranges that can hold the best cut are gathered."""
    P, Y, w = _entries_case(seed)
    parts = _Parts(P, Y, w, n_parts=3)
    t = threshold_search(parts.n_true, parts.histograms, parts.takes, bins, gathered)
    whole = micro_f1_threshold([(P, Y, w)])
    assert _micro_f1(P, Y, w, t) == pytest.approx(_micro_f1(P, Y, w, whole), abs=1e-12)
    if bins == 4:
        assert _micro_f1(P, Y, w, t) == pytest.approx(_best_by_brute_force(P, Y, w),
                                                      abs=1e-12)
    if seed % 4 == 0:          # distinct values: one best cut, the same threshold
        assert t == pytest.approx(whole, rel=1e-12)
    if bins == 4 and seed % 4 == 0:
        assert parts.histogram_rounds > 2 and parts.taken < np.count_nonzero(P)


def test_the_search_splits_a_wide_range_before_it_gathers():
    """On many entries the search gathers a small share of them, in a few rounds (each
    asking the parts once for all its histograms, once for all its entries)."""
    rng = np.random.default_rng(7)
    P = rng.random((20000, 5)) * (rng.random((20000, 5)) < 0.5)
    Y = (rng.random((20000, 5)) < P).astype(int)
    w = np.ones(20000)
    parts = _Parts(P, Y, w, n_parts=4)
    t = threshold_search(parts.n_true, parts.histograms, parts.takes, bins=64, gathered=500)
    assert t == pytest.approx(micro_f1_threshold([(P, Y, w)]), rel=1e-12)
    assert parts.taken < 0.05 * np.count_nonzero(P)
    assert parts.histogram_rounds + parts.take_rounds <= 5


@pytest.mark.parametrize("P, Y, w", [
    (np.zeros((3, 2)), np.eye(3, 2), np.ones(3)),
    (np.full((2, 2), 0.5), np.zeros((2, 2)), np.ones(2)),
    (np.array([[0.9, 0.1]]), [[0, 1]], [0.0]),
    (np.full((4, 3), 0.25), np.eye(4, 3), np.ones(4)),      # one value: the support
])
def test_the_search_without_a_cut_to_make_is_the_support(P, Y, w):
    parts = _Parts(np.asarray(P), np.asarray(Y), np.asarray(w), n_parts=2)
    assert threshold_search(parts.n_true, parts.histograms, parts.takes, 4, 1) == 0.0


def test_row_slices_bound_the_scores_formed_at_once():
    slices = row_slices(10, 1 << 19)
    assert [s.start for s in slices] == [0, 2, 4, 6, 8] and slices[-1].stop >= 10
    assert len(row_slices(5, 1 << 22)) == 5                  # one row at a time, at least
    assert row_slices(0, 3) == []
