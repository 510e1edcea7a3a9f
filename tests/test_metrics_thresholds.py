"""micro_f1_threshold against a brute-force search over every cut."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score

from sparsekit.metrics._thresholds import micro_f1_threshold


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
