"""Ranking metrics of extreme classification."""
import numpy as np

from ..utils._labels import _label_kinds, _label_sets


def top_k(S, k):
    """The column indices of the ``k`` largest scores of each row of ``S``, best first,
    ties broken toward the lower index (as ``argmax``)."""
    part = np.argpartition(-S, k - 1, axis=1)[:, :k]
    kth = np.take_along_axis(S, part, axis=1).min(axis=1)[:, None]
    left_out = (np.count_nonzero(S == kth, axis=1)
                > np.count_nonzero(np.take_along_axis(S, part, axis=1) == kth, axis=1))
    for r in np.flatnonzero(left_out):   # a class tied with the k-th was dropped
        above = np.flatnonzero(S[r] > kth[r])
        part[r] = np.r_[above, np.flatnonzero(S[r] == kth[r])[:k - above.size]]
    order = np.lexsort((part, -np.take_along_axis(S, part, axis=1)), axis=1)
    return np.take_along_axis(part, order, axis=1)


def precision_at_k(y_true, top_labels):
    """Mean precision@k: the fraction of the k predicted labels that are true labels.

    Parameters
    ----------
    y_true : array-like of shape (n,) or (n, 1), sequence of label sequences, or indicator
        One label per example (also as a column), a set of labels per example, or an
        (n, L) indicator matrix whose column j is label j (L > 1, or sparse).
    top_labels : ndarray of shape (n, k)
        Predicted labels, best first (e.g. ``ExtremeSoftmaxSGD.predict_topk``).

    Returns
    -------
    precision : float

    Examples
    --------
    >>> from sparsekit.metrics import precision_at_k
    >>> precision_at_k([{1, 2}, {0}], [[2, 0], [1, 3]])
    0.25
    """
    hits, _, top_labels = _hits(y_true, top_labels)
    return hits / top_labels.size


def recall_at_k(y_true, top_labels):
    """Recall@k: the fraction of all the true labels found among the k predicted ones.

    The ratio of the totals over the examples, as fastText's ``test`` reports R@k (an
    example with many labels weighs more than one with a single label).

    Parameters
    ----------
    y_true : array-like of shape (n,) or (n, 1), sequence of label sequences, or indicator
        As in :func:`precision_at_k`; at least one example must hold a label.
    top_labels : ndarray of shape (n, k)
        Predicted labels, best first (e.g. ``ExtremeSoftmaxSGD.predict_topk``).

    Returns
    -------
    recall : float

    References
    ----------
    .. [1] Joulin, A., Grave, E., Bojanowski, P. & Mikolov, T. (2017). Bag of tricks for
       efficient text classification. EACL (precision and recall at k of its
       multi-label evaluation).

    Examples
    --------
    >>> from sparsekit.metrics import recall_at_k
    >>> recall_at_k([{1, 2}, {0}], [[2, 0], [1, 3]])
    0.3333333333333333
    """
    hits, sets, _ = _hits(y_true, top_labels)
    total = sum(map(len, sets))
    if total == 0:
        raise ValueError("y_true holds no label: recall@k is undefined")
    return hits / total


def _hits(y_true, top_labels):
    """(how many of the predicted labels are true, summed over the examples; the label
    set of each example; ``top_labels`` as an (n, k) array), the two checked against each
    other."""
    top_labels = np.asarray(top_labels)
    if top_labels.ndim != 2 or 0 in top_labels.shape:
        raise ValueError("top_labels must have shape (n, k) with n, k >= 1, got "
                         f"{top_labels.shape}")
    n = top_labels.shape[0]
    sets = _label_sets(y_true)
    if len(sets) != n:
        raise ValueError(f"y_true has {len(sets)} examples, top_labels has {n}")
    true_kinds = _label_kinds(set().union(*sets), "y_true")
    top_kinds = _label_kinds(top_labels.ravel().tolist(), "top_labels")
    if len(true_kinds) == len(top_kinds) == 1 and true_kinds != top_kinds:
        raise ValueError(f"y_true holds {true_kinds.pop()} labels but top_labels "
                         f"{top_kinds.pop()} labels")
    hits = sum(len(sets[i].intersection(top_labels[i].tolist())) for i in range(n))
    return hits, sets, top_labels
