"""Ranking metrics: precision@k and recall@k against a count over the examples."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.metrics import precision_at_k, recall_at_k


def _counted(label_sets, top):
    """(precision@k, recall@k) counted example by example, label by label."""
    found = sum(sum(label in labels for label in set(row)) for labels, row in
                zip(label_sets, top))
    return found / (len(top) * len(top[0])), found / sum(len(labels) for labels in label_sets)


@pytest.mark.parametrize("seed", range(5))
def test_recall_at_k_is_the_share_of_all_true_labels_found(seed):
    """Random label sets (some empty, some larger than k) in every form y_true takes: the
    ratio of the totals, as fastText's R@k, and precision@k beside it."""
    rng = np.random.default_rng(seed)
    n, L, k = 40, 9, 3
    Y = (rng.random((n, L)) < rng.uniform(0.05, 0.6)).astype(int)
    Y[0] = 0                                                  # a row without a label
    label_sets = [set(np.flatnonzero(row).tolist()) for row in Y]
    top = np.array([rng.permutation(L)[:k] for _ in range(n)])
    precision, recall = _counted(label_sets, top.tolist())
    for y_true in (Y, sp.csr_matrix(Y), [list(s) for s in label_sets],
                   [tuple(sorted(s)) for s in label_sets]):
        assert recall_at_k(y_true, top) == pytest.approx(recall)
        assert precision_at_k(y_true, top) == pytest.approx(precision)


def test_one_label_per_row_recall_is_k_times_precision():
    rng = np.random.default_rng(0)
    y = rng.choice(np.array(["a", "b", "c", "d"]), 30)
    top = np.array([rng.permutation(["a", "b", "c", "d"])[:2] for _ in range(30)])
    assert recall_at_k(y, top) == pytest.approx(2 * precision_at_k(y, top))
    assert recall_at_k(y, top) == np.mean([label in row for label, row in zip(y, top)])


def test_recall_at_k_refuses_what_it_cannot_count():
    with pytest.raises(ValueError, match="y_true holds no label: recall@k is undefined"):
        recall_at_k([[], ()], [[1], [2]])
    with pytest.raises(ValueError, match="top_labels must have shape"):
        recall_at_k([1, 2], [1, 2])
    with pytest.raises(ValueError, match="y_true has 3 examples, top_labels has 2"):
        recall_at_k([1, 2, 3], [[1], [2]])
    with pytest.raises(ValueError, match="y_true holds string labels but top_labels numeric"):
        recall_at_k(["a", "b"], [[1], [2]])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 3, 6])
def test_top_k_is_a_stable_sort_of_the_scores_best_first(seed, k):
    """The k best columns of each row, ties toward the lower index: what a stable sort of
    the negated scores gives, on rows of many ties (scores drawn from a few values)."""
    from sparsekit.metrics._ranking import top_k

    rng = np.random.default_rng(seed)
    for values in (rng.integers(0, 3, (50, 6)), rng.standard_normal((50, 6)),
                   np.zeros((3, 6)), np.full((2, 6), -np.inf)):
        S = np.asarray(values, dtype=np.float64)
        expected = np.argsort(-S, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(top_k(S, k), expected)
        assert np.array_equal(top_k(S, 1)[:, 0], np.argmax(S, axis=1))
