"""The decision threshold of label scores that maximizes micro-F1.

Micro-F1 is ``2 TP / (P + T)``: TP the (weighted) count of predicted labels that are true, P
of predicted labels, T of true labels. Only positive entries of the scores can be
predicted, so the candidates are the cuts between consecutive distinct positive values.
:func:`micro_f1_threshold` tries each of them on the entries in memory;
:func:`threshold_search` finds the same cut on entries held in parts (the row partitions of
a cluster) from summed histograms of their values, gathering only the entries of the value
ranges where the best cut can lie.
"""
from collections import namedtuple

import numpy as np
import scipy.sparse as sp

#: the scores of at most this many (row, label) pairs are formed at a time
SCORE_BLOCK = 1 << 20
#: the search splits a range of values into this many bins a round ...
BINS = 1024
#: ... and gathers a range's entries once it holds at most this many
GATHERED = 1 << 16


def row_slices(n_rows, n_labels):
    """Consecutive slices of ``n_rows`` rows whose scores over ``n_labels`` labels hold at
    most SCORE_BLOCK entries each."""
    step = max(1, SCORE_BLOCK // max(n_labels, 1))
    return [slice(start, start + step) for start in range(0, n_rows, step)]


class PositiveEntries:
    """The positive entries of label scores (of rows of positive weight), sorted by value,
    descending (ties in the order of the rows): all that micro-F1 depends on.

    Parameters
    ----------
    blocks : iterable of (proba, y_true, sample_weight)
        Row blocks: ``proba`` a nonnegative ndarray of shape (m, K), ``y_true`` its 0/1
        indicator (ndarray or sparse matrix), ``sample_weight`` an ndarray of shape (m,)
        (nonnegative row weights).

    Attributes
    ----------
    values, hits, weights : ndarray
        Each entry's value, whether its label is true, and its row's weight.
    n_true : float
        The weighted count of true labels (T), entries of zero score included.
    """

    def __init__(self, blocks):
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
        order = np.argsort(-values, kind="stable")
        self.values, self.weights = values[order], weights[order]
        self.hits = hits[order].astype(bool)
        self.n_true = n_true
        self._keys = -self.values             # ascending, for searchsorted

    def _above(self, v):
        """How many entries exceed each value of ``v``."""
        return np.searchsorted(self._keys, -np.asarray(v, dtype=np.float64), side="left")

    def histogram(self, edges):
        """``(count, weight, true_weight, smallest, largest)`` of the entries in each bin
        ``(edges[j], edges[j + 1]]`` (ascending edges); an empty bin's smallest value is
        +inf and its largest -inf."""
        above = self._above(edges)
        top, bottom = above[1:], above[:-1]          # each bin's positions: [top, bottom)
        n = edges.size - 1
        count = bottom - top
        weight, true_weight = np.zeros(n), np.zeros(n)
        smallest, largest = np.full(n, np.inf), np.full(n, -np.inf)
        for j in np.flatnonzero(count):
            a, b = top[j], bottom[j]
            w = self.weights[a:b]
            weight[j], true_weight[j] = w.sum(), w[self.hits[a:b]].sum()
            smallest[j], largest[j] = self.values[b - 1], self.values[a]
        return count, weight, true_weight, smallest, largest

    def take(self, lo, hi):
        """``(values, hits, weights)`` of the entries in ``(lo, hi]``, descending."""
        a, b = self._above([hi, lo])
        return self.values[a:b], self.hits[a:b], self.weights[a:b]


def summed_histogram(histograms):
    """The histogram of all parts from each part's :meth:`PositiveEntries.histogram` over
    the same edges."""
    return (*(sum(h[i] for h in histograms) for i in range(3)),
            np.min([h[3] for h in histograms], axis=0),
            np.max([h[4] for h in histograms], axis=0))


def merged_entries(entries):
    """The entries of all parts, descending, from each part's :meth:`PositiveEntries.take`
    of the same range."""
    values, hits, weights = (np.concatenate(a) for a in zip(*entries))
    order = np.argsort(-values, kind="stable")
    return values[order], hits[order], weights[order]


def micro_f1_threshold(blocks):
    """The threshold ``t >= 0`` whose label sets ``proba > t`` have the largest micro-F1.

    Each cut between consecutive distinct positive values is tried exactly (one sort of
    the positive entries). The threshold returned lies halfway between the last value kept
    and the next one below it, or is 0 (every positive entry: the support) when keeping
    them all is best, when no label is true or none is ever predicted right.

    Parameters
    ----------
    blocks : iterable of (proba, y_true, sample_weight)
        As for :class:`PositiveEntries`.

    Returns
    -------
    threshold : float
    """
    entries = PositiveEntries(blocks)
    return threshold_search(entries.n_true, lambda edges: [entries.histogram(e) for e in edges],
                            lambda ranges: [entries.take(*r) for r in ranges],
                            gathered=np.inf)


#: a value range of the search: the values above ``lo`` up to its largest one, its entries'
#: count, weight, true weight, smallest and largest value, and the entries themselves once
#: gathered (else None)
_Range = namedtuple("_Range", "lo count weight true_weight smallest largest entries")


def _ranges(histogram, edges):
    """The nonempty bins of a ``histogram`` over ``edges`` as :data:`_Range`, descending."""
    count, weight, true_weight, smallest, largest = histogram
    return [_Range(edges[j], count[j], weight[j], true_weight[j], smallest[j], largest[j],
                   None) for j in np.flatnonzero(count)[::-1]]


def _cuts(ranges):
    """Every cut the ranges allow, descending: ``(kept weight, kept true weight, smallest
    value kept, largest value of the stretch the cut adds)`` as arrays. A range whose
    entries are gathered is cut between each pair of its distinct values; another only
    below its smallest value."""
    kept, kept_true, last, first = [], [], [], []
    weight = true_weight = 0.0
    for r in ranges:
        if r.entries is None:
            weight, true_weight = weight + r.weight, true_weight + r.true_weight
            kept.append([weight])
            kept_true.append([true_weight])
            last.append([r.smallest])
            first.append([r.largest])
            continue
        values, hits, weights = r.entries
        cum = weight + np.cumsum(weights)
        cum_true = true_weight + np.cumsum(np.where(hits, weights, 0.0))
        # a cut keeps every entry of a tie: it ends where the next value is smaller
        ends = np.flatnonzero(np.append(values[1:] < values[:-1], True))
        kept.append(cum[ends])
        kept_true.append(cum_true[ends])
        last.append(values[ends])
        first.append(values[np.append(0, ends[:-1] + 1)])
        weight, true_weight = cum[-1], cum_true[-1]
    return tuple(np.concatenate(a) if a else np.empty(0)
                 for a in (kept, kept_true, last, first))


def threshold_search(n_true, histograms, takes, bins=None, gathered=None):
    """The threshold of :func:`micro_f1_threshold` over entries held in parts.

    The value range of the entries is split into ``bins`` bins by their summed histograms;
    the cut below each bin is exact, and the cuts inside a bin are bounded above (its true
    entries kept, none of the others). A bin whose bound reaches the best exact cut is split
    again, or its entries are gathered once it holds at most ``gathered`` of them (or no
    split separates them), until no bound does: the best cut of all is then among the
    exact ones. Each round asks the parts once for all its histograms and once for all its
    entries. The sums over the parts may round otherwise than the in-memory sums, so cuts
    whose micro-F1 agree to rounding may be chosen either way.

    Parameters
    ----------
    n_true : float
        The weighted count of true labels of all parts.
    histograms : callable
        ``histograms(edges_list)``: for each array of edges, :meth:`PositiveEntries.histogram`
        summed over the parts (counts, weights and true weights added, the smallest values'
        minimum, the largest values' maximum).
    takes : callable
        ``takes(ranges)``: for each ``(lo, hi)``, :meth:`PositiveEntries.take` of every
        part, merged (descending, ties in any order).
    bins, gathered : int, default=None
        None: BINS and GATHERED.

    Returns
    -------
    threshold : float
    """
    bins = BINS if bins is None else bins
    gathered = GATHERED if gathered is None else gathered
    if not n_true > 0:
        return 0.0
    edges = np.array([0.0, np.inf])
    ranges = _ranges(histograms([edges])[0], edges)
    while True:
        kept, kept_true, _, _ = _cuts(ranges)
        best = np.max(2.0 * kept_true / (kept + n_true), initial=0.0)
        split, weight, true_weight = {}, 0.0, 0.0
        for i, r in enumerate(ranges):
            bound = 2.0 * (true_weight + r.true_weight) / (weight + r.true_weight + n_true)
            weight, true_weight = weight + r.weight, true_weight + r.true_weight
            if r.entries is None and r.smallest < r.largest and bound >= best:
                split[i] = [r]
        if not split:
            break
        wide = [i for i in split if split[i][0].count > gathered]
        edges = [np.linspace(split[i][0].lo, split[i][0].largest, bins + 1) for i in wide]
        for i, e, counts in zip(wide, edges, histograms(edges) if wide else []):
            split[i] = _ranges(counts, e)
        # few entries, or values no bin separates: gathered
        narrow = [i for i in split if len(split[i]) == 1]
        for i, entries in zip(narrow, takes([(split[i][0].lo, split[i][0].largest)
                                             for i in narrow]) if narrow else []):
            split[i] = [split[i][0]._replace(entries=entries)]
        ranges = [q for i, r in enumerate(ranges) for q in split.get(i, [r])]
    kept, kept_true, last, first = _cuts(ranges)
    if kept.size == 0:
        return 0.0
    f1 = 2.0 * kept_true / (kept + n_true)
    best = int(np.argmax(f1))
    if best == f1.size - 1 or not f1[best] > 0:
        return 0.0
    return float((last[best] + first[best + 1]) / 2)
