"""The decision threshold of label scores that maximizes micro-F1."""
import numpy as np
import scipy.sparse as sp


def micro_f1_threshold(blocks):
    """The threshold ``t >= 0`` whose label sets ``proba > t`` have the largest micro-F1.

    Micro-F1 is ``2 TP / (P + T)``: TP the (weighted) count of predicted labels that are
    true, P of predicted labels, T of true labels. Only positive entries of ``proba`` can
    be predicted, so the candidates are cuts between consecutive distinct positive values,
    each tried exactly (one sort of the positive entries). The threshold returned lies
    halfway between the last value kept and the next one below it, or is 0 (every
    positive entry: the support) when keeping them all is best, when no label is true or
    none is ever predicted right.

    Parameters
    ----------
    blocks : iterable of (proba, y_true, sample_weight)
        Row blocks: ``proba`` a nonnegative ndarray of shape (m, K), ``y_true`` its 0/1
        indicator (ndarray or sparse matrix), ``sample_weight`` an ndarray of shape (m,)
        (nonnegative row weights).

    Returns
    -------
    threshold : float
    """
    values, hits, weights = [], [], []
    n_true = 0.0
    for proba, y_true, sample_weight in blocks:
        truth = (y_true.toarray() if sp.issparse(y_true) else np.asarray(y_true)) != 0
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        n_true += float(truth.sum(axis=1) @ sample_weight)
        rows, cols = np.nonzero((proba > 0) & (sample_weight > 0)[:, None])
        values.append(np.asarray(proba[rows, cols], dtype=np.float64))
        hits.append(truth[rows, cols])
        weights.append(sample_weight[rows])
    values, hits, weights = (np.concatenate(a) if a else np.empty(0)
                             for a in (values, hits, weights))
    if values.size == 0 or n_true <= 0:
        return 0.0
    order = np.argsort(-values, kind="stable")
    values = values[order]
    predicted = np.cumsum(weights[order])
    true_positives = np.cumsum(np.where(hits[order], weights[order], 0.0))
    # a cut keeps every entry of a tie: it ends where the next value is smaller
    ends = np.flatnonzero(np.append(values[1:] < values[:-1], True))
    f1 = 2.0 * true_positives[ends] / (predicted[ends] + n_true)
    best = ends[np.argmax(f1)]
    if best == values.size - 1 or not f1.max() > 0:
        return 0.0
    return float((values[best] + values[best + 1]) / 2)
