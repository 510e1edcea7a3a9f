"""ExtremeSoftmaxSGD: softmax regression with very many classes at O(nnz(x)) per step.

Methods follow Fagan & Iyengar (2018) (Implicit SGD, section 3.2; U-max, section 3.1;
vanilla SGD on the double sum, section 2.2; the sampled baselines) and Titsias (2016) (OVE).
The passes over the rows are :class:`sparsekit.optimize._softmax_passes.SoftmaxPasses`'
(around the Cython epoch drivers), the closing line search on the weights' scale is
:func:`sparsekit.optimize._softmax_shrink.best_shrink`, the weights and their scores
:class:`sparsekit.linear_model._softmax_weights.SoftmaxWeights`, what a fit says when its
steps were too large :mod:`sparsekit.linear_model._softmax_advice`; this module holds the
epochs, their history and the scikit-learn plumbing.
"""
import copy
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.callback import with_callbacks
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from sparsekit.gpu._cupy import require_cupy
from sparsekit.gpu.datafits import is_device_matrix
from sparsekit.gpu.softmax_sgd import MAX_SAMPLED as GPU_MAX_SAMPLED
from sparsekit.linear_model._dask_input import (block_predictions, in_memory, is_dask_collection,
                                                row_blocks)
from sparsekit.linear_model._device_input import (device_nll, device_outputs, device_scores,
                                                  fit_device, on_host, to_device)
from sparsekit._cython._softmax_sgd import METHODS, scale_flush
from sparsekit.losses._softmax import _log_softmax
from sparsekit.linear_model._base import (SparsekitClassifier, check_labels,
                                          unchanged_on_error)
from sparsekit.linear_model._softmax_advice import (column_scales, divergence_hint,
                                                    overflow_error, warn_if_diverged)
from sparsekit.linear_model._softmax_weights import SoftmaxWeights
from sparsekit.metrics import precision_at_k
from sparsekit.metrics._ranking import top_k
from sparsekit.optimize._softmax_passes import EpochMean, SGDRows, SoftmaxPasses, initial_rate
from sparsekit.optimize._softmax_shrink import best_shrink
from sparsekit.utils._labels import _declared_classes, _is_multilabel, first_label
from sparsekit.utils._rows import divided_columns, sample_rows
from sparsekit.utils._validation import check_entry_magnitude, validate_input

__all__ = ["ExtremeSoftmaxSGD", "EXPECTED_FAILED_CHECKS"]

#: without a history (``eval_every=0``), fit compares the training NLL before and after
#: training to tell a diverged fit, on as many rows (all, if fewer) as DIVERGENCE_SCORES class
#: scores allow, and at least DIVERGENCE_ROWS: with few classes a mean over 16 rows is too
#: noisy (a few confidently wrong rows read as a divergence), with many it would cost epochs
DIVERGENCE_SCORES = 2**15
DIVERGENCE_ROWS = 16

#: the methods whose steps read and move the auxiliary variables u_i of the double-sum
#: formulation (Fagan & Iyengar 2018); the others have none to keep
U_METHODS = ("implicit", "umax", "sgd")

#: partial_fit's state with ``average=True``: the weights it trains, their sum over the
#: calls and the number of calls summed (the model's weights are their mean)
STREAM_MEAN = ("_R_iterate", "_R_total", "_n_averaged")

#: ``average="auto"`` averages the epochs' weights with at most this many classes: on the
#: sets of 2 to 100 classes measured the default method's test accuracy rose by 0 to 0.022,
#: on those of 146 to 9434 classes averaging moved it by -0.008 to +0.014 at up to 3.9x
#: the fit's time (doc/benchmarks.md, section esgd_average)
AVERAGE_MAX_CLASSES = 100

#: ``shrink="auto"`` ends fit with the line search on the weights' scale with at most this
#: many classes: on the sets of 2 to 9,434 classes measured the factor found was below 1
#: where the sampled softmax's scores were too spread (make_classification, 100 classes:
#: test log loss 5.76 -> 3.55; Delicious, 336 classes: 6.91 -> 4.05; both worse than
#: uniform before), the log loss fell wherever it was, and the others kept their weights
#: (doc/benchmarks.md, section esgd_shrink); beyond, the 2^19 scores are few rows. The
#: search itself (its floor, and the slope's standard errors that start it) is
#: :func:`~sparsekit.optimize._softmax_shrink.best_shrink`
SHRINK_MAX_CLASSES = 10_000
#: ... on at most this many class scores' worth of training rows (all of them when fewer)
SHRINK_SCORES = 2**19

#: ``check_estimator`` checks that a stochastic solver cannot pass (as for scikit-learn's
#: SGDClassifier): weighting an example by 2 is not the same random path as repeating it.
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data":
        "stochastic passes: weights and repeated rows give different random paths",
    "check_sample_weight_equivalence_on_sparse_data":
        "stochastic passes: weights and repeated rows give different random paths",
}


def _taken(X, rows):
    """``X[rows]``, or X itself when ``rows`` is every row (``slice(None)``): SciPy copies
    a sparse matrix on ``X[:]``, a copy of the training data that the fit does not need."""
    return X if isinstance(rows, slice) and rows == slice(None) else X[rows]


class ExtremeSoftmaxSGD(SparsekitClassifier):
    """Softmax regression for very many classes with per-step work independent of K.

    Fits the mean softmax negative log-likelihood plus ``alpha/2 ||W||^2`` (divided by N,
    so ``learning_rate`` is a per-example step) by one of:

    ``sampled_softmax`` (the default)
        The softmax over the true class and ``n_sampled`` classes drawn uniformly among the
        others, their scores shifted by log((K-1)/m), the importance weight of the uniform
        draw (Bengio & Senecal 2008; Jean et al. 2015). Biased for finite m: its fixed point
        is not the maximum-likelihood fit, but it is the fastest route to accurate
        predictions.
    ``implicit``
        Implicit SGD (proximal step, section 3.2): n = m = 1 solves the monotone g(u) of
        eq. (16) inside the App. F.1 bracket with a Lambert-W of e^t that never overflows;
        m > 1 solves the (m+2)-variable strongly convex step through one monotone scalar
        equation. Robust to the learning rate.
    ``umax``
        U-max (section 3.1, Algorithm 1): SGD with the u-reset at threshold ``delta``,
        u in [0, B_u] and ||w_k|| <= B_W when ``alpha > 0``.
    ``sgd``
        Vanilla SGD on the double sum (section 2.2): unbiased but unstable; an overflow
        raises a ValueError instead of returning NaN weights.
    ``ove``
        One-vs-Each bound (Titsias 2016, eq. (15)), doubly stochastic with the unbiased
        (N/b)(K-1)/M scaling (mean form: (1/b)(K-1)/M).
    ``nce``
        Noise-contrastive estimation with the same uniform draws, biased as well.

    The unbiased methods (``implicit``, ``umax``, ``sgd``) run on the double-sum
    reformulation of Fagan & Iyengar (2018), eq. (5).

    Each step draws ``n_sampled`` distinct classes uniformly among the K-1 wrong ones and
    touches ``n_sampled + 1`` weight rows at O(nnz(x)) each; the ridge term is a proximal
    shrink of the touched rows with the unbiased weights beta_j of eq. (6), kept sparse by
    lazy scaling ``w_j = gamma_j r_j``.

    Read more in the :ref:`User Guide <extreme_softmax>`, which also gives the
    measurements behind the defaults.

    Parameters
    ----------
    method : {"sampled_softmax", "implicit", "umax", "ove", "sgd", "nce"}, \
            default="sampled_softmax"
        The training loss and its steps (above). The default, sampled softmax with
        ``n_sampled=5`` sampled classes and the ``"auto"`` rate, gives accurate predictions
        in the least time; it is biased (its
        fixed point is not the softmax model's maximum-likelihood fit). For probabilities
        that estimate the softmax model's, use ``"implicit"``: unbiased, exact steps, stable
        at any rate.
    learning_rate : float or "auto", default="auto"
        Initial per-example step eta_0; epoch e uses ``eta_0 * lr_decay**e``. ``"auto"``
        scales it to the data: c over the median squared norm of the rows of X (the
        intercept's constant feature included; without it, the empty rows, which make no
        step, left out; with sample or class weights, the
        weighted median of the rows' squared norms times their weights, so that the steps
        do not depend on the weights' common scale), with c = 6 for Implicit SGD, 4 for
        sampled softmax and NCE, 0.6 for U-max and 0.2 for One-vs-Each and plain SGD: on
        unit-norm rows with an intercept, 3, 2, 0.3 and 0.1. ``learning_rate_`` holds the
        value used. With an intercept, rows much shorter than its constant feature 1
        (median squared norm below 0.05) learn their weights that many times more slowly
        than the intercept, and the fit warns (``UserWarning``): rescale X.
        The proximal step of Implicit SGD is stable at any rate (one example per step; a
        batch's sum of steps is not, at rates far above ``"auto"``) and gains accuracy
        from large rates; the explicit steps on the
        double sum and the One-vs-Each bound diverge beyond a few tenths of
        ``eta_0 ||x||^2``.
    lr_decay : float in (0, 1], default=0.9
        Step decay per epoch of ``fit`` and per call of ``partial_fit``.
    n_epochs : int, default=20
        Passes over the data in ``fit``.
    average : bool or "auto", default="auto"
        Make ``fit``'s model the mean of the weights at the ends of its last
        ``ceil(n_epochs / 4)`` epochs (the last 5 of 20) instead of the last ones (iterate
        averaging, Polyak & Juditsky 1992, over epochs): the steps' noise averages out.
        ``"auto"`` averages with at most 100 classes and dense weights (no
        ``n_weights``): with few classes every class's weights take many steps an epoch
        and their last values scatter around the optimum, where their mean is closer to
        it; with hundreds of classes or more a class's weights take few steps an epoch and
        still improve at the last ones, and the mean of large weights costs time, so
        ``"auto"`` leaves them. It holds a second copy of the
        weights during ``fit``. An early stop (``tol``, a callback) before the averaged
        epochs leaves the last weights. In :meth:`partial_fit`, ``True`` makes the model
        the mean of the weights after each call since the first (as
        ``SGDClassifier(average=True)`` averages a stream), each call going on from the
        last weights, not from their mean; a call that declares new classes restarts the
        mean from the model's weights. The stream then keeps two more copies of the
        weights. ``"auto"`` does not average a stream.
    shrink : bool or "auto", default="auto"
        End ``fit`` with a line search along the weights on the exact objective (the mean
        NLL of the full softmax, plus the ridge), taken only to shrink them: the weights
        and intercepts are multiplied by the factor s in (0, 1] that minimizes the
        objective at s times them, measured on 2^19 / K training rows (all of them when
        fewer: 5,242 at 100 classes; on the host, also with ``device="cuda"``), the ridge
        weighed over all of them, and only where the objective's slope at s = 1 exceeds
        twice its standard error over those rows (a model at the optimum is not shrunk by
        a sample's noise). The scores keep their order, so ``predict`` and
        ``predict_topk`` are unchanged; ``predict_proba`` flattens. The sampled methods'
        fixed point is not the softmax model's, and their scores can spread too far, to a
        test log loss worse than the uniform distribution's; the shrink brings them back.
        A factor above 1 (sharper probabilities) is not taken: where the weights nearly
        separate the rows it would lower the training NLL by undoing the early stop, and
        raise the test log loss. ``"auto"`` shrinks with at
        most 10,000 classes (the search's 2^19 scores are few rows beyond). ``shrink_``
        holds the factor. :meth:`partial_fit` does not shrink.
    n_sampled : int, default=5
        Sampled wrong classes m per example (capped at K - 1): more cost more work per
        step (five about 2.5 times that of one) and make the steps less noisy, the model
        more accurate (the paper's experiments use one).
    batch_size : int, default=1
        Examples per step. The explicit methods average their gradients over the batch;
        Implicit SGD takes each example's proximal step at rate ``eta / batch_size`` from
        the weights at the batch's start and adds the steps up (the paper's one-datapoint
        step when ``batch_size=1``; larger batches need ``alpha=0``). Batches are what the
        GPU epochs run in parallel (``device``).
    delta : float, default=1.0
        U-max reset threshold.
    alpha : float, default=0.0
        Ridge strength on the weights (and the intercept, which is a constant feature).
    fit_intercept : bool, default=True
        Learn a per-class intercept, as the weight of a constant feature 1 (``alpha``
        applies to it too).
    class_weight : dict, "balanced" or None, default=None
        Multiplies each example's weight by its class's (as ``sample_weight`` does), as
        scikit-learn's ``SGDClassifier``: ``"balanced"`` gives class c the weight (total
        sample weight) / (n_classes x weight of class c) in :meth:`fit`; :meth:`partial_fit`
        takes a dict only (a chunk's class totals are not the data's).
    u_init : {"log_k", "zero", "exact"}, default="log_k"
        Initial u_i: log K (= u_i*(0), Algorithm 1), 0 (the authors' code), or the exact
        u_i*(W) of the current weights (costs one full scoring pass).
    shuffle : bool, default=True
        Random order in each epoch; otherwise the file order (as the authors' code).
    random_state : int, RandomState instance or None, default=None
        Drives the example order and the class sampler (splitmix64 in C).
    verbose : int, default=0
        Print one line per epoch (``partial_fit``: per chunk): the time spent so far in the
        epoch driver and in evaluating the NLL, and the NLL where it was evaluated.
    eval_every : int, default=0
        Record the exact training NLL in ``loss_curve_`` before training, every
        ``eval_every`` epochs and after the last one; 0 (the default) records nothing. An
        evaluation scores every class, O(K nnz) per evaluated row, against O(m nnz) per
        row for an epoch of the sampled methods: with many classes it costs many epochs,
        so the history is kept only on request (``eval_size`` bounds it).
    eval_size : int or None, default=100_000
        Evaluate on a fixed random subsample of this many training rows of nonzero weight
        (None: all of them), drawn from a random stream of its own: the monitoring never
        changes the weights.
    tol : float or None, default=None
        Stop when an evaluated NLL improves by less than ``tol``; a ConvergenceWarning is
        raised if that never happens. None runs all ``n_epochs``. Needs ``eval_every > 0``.
    warm_start : bool, default=False
        Start ``fit`` from the previous weights (and u, if the data size matches). A fit
        whose classes, number of features or ``fit_intercept`` differ from the previous
        one starts from zero.
    multilabel : {"error", "first"}, default="error"
        Multi-label targets (indicator matrix or label lists) raise a ValueError, or are
        reduced with :func:`~sparsekit.linear_model.first_label` (the papers' policy), in
        ``fit``, ``partial_fit`` and ``score``.
    sample_true_class : bool, default=False
        Draw the sampled classes among all K classes, the true one included, with the same
        weight (K-1)/m: what the Implicit SGD code published with the paper did. Biased (a draw
        of the true class moves u only); for reproducing the paper. ``method="implicit"``
        only.
    shared_classes : bool, default=False
        Draw the ``n_sampled`` classes once per batch for all its examples, as the
        TensorFlow samplers of the paper's baselines did; an example whose
        class is in the set gets a fresh class outside it in its place. Each example's
        classes stay uniform among its wrong ones, so the estimates stay unbiased (the
        examples of a batch are correlated); the batch then reads ``n_sampled`` sampled
        rows instead of up to ``batch_size * n_sampled``, which keeps those rows in cache
        when the weights do not fit there (large K). A shared row takes the batch's
        updates at once: sparse rows rarely meet on a feature, but one that every example
        has (the intercept, dense data) moves up to ``batch_size`` times as far, so the
        stable learning rate is lower, and with an intercept the fits end far above those
        of per-example draws. Meant for ``fit_intercept=False`` on sparse rows. No effect
        with ``batch_size=1``.

    n_jobs : int or None, default=None
        Threads for the epochs (OpenMP): each takes its part of the epoch's examples and
        updates the shared weights without locks (Hogwild, Recht et al. 2011), so a fit
        with more than one thread is not reproducible bit for bit; None and 1 mean one
        thread (deterministic), -1 every CPU, as in joblib. Used with ``batch_size=1``,
        ``alpha=0``, ``shared_classes=False`` and ``sample_true_class=False`` (the
        defaults); other settings run on one thread. With ``n_weights``, prediction runs on
        ``n_jobs`` threads too.
    n_weights : int or None, default=None
        Bound the memory of the weights: store ``n_weights`` numbers, shared by all
        (class, feature) pairs through a hash (Weinberger et al. 2009), instead of the
        dense (n_classes, n_features) matrix; intercepts are kept one per class. Class k's
        weight of feature j is ``a_j b_k t[(h(j) + k) mod n_weights]`` with random signs
        a_j, b_k and a random h(j), so that the K weights of a feature are consecutive
        entries and scoring reads contiguous memory. Pairs that share an entry share a
        weight: accuracy falls as the table shrinks below the dense matrix's size (4
        bytes per float32 entry) and is close to the dense model's above it. The
        memory no longer grows with n_classes x n_features: 100,000 classes on 2^20
        features, whose float32 dense matrix would take 419 GB, fit in a table of 2^30
        entries (4 GiB). There is then no ``coef_``; a class added by ``partial_fit``
        starts from the entries it shares (not from zero). Used with ``batch_size=1``,
        ``alpha=0``, ``shared_classes=False`` and ``sample_true_class=False``. Implicit
        SGD's step treats the touched classes' weights as separate: exact unless two of
        them share an entry for a feature of the row.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"`` runs the epochs on the current GPU with CuPy (``pip install
        sparsekit[gpu]``): one warp per example of a batch, the steps of a batch from the
        weights at its start, then atomic updates, with the CPU driver's class draws: the
        same model as on the CPU up to rounding. Give it a larger ``batch_size`` (e.g.
        256): a batch is two kernel launches; the training NLL is computed on the device
        too. For every method, with ``alpha=0``, ``n_sampled <= 64``, dense weights (no
        ``n_weights``) and ``shared_classes=False``. X may be a CuPy array or a cupyx
        sparse matrix; CuPy input gives CuPy predictions (whatever ``device``); the fitted
        attributes are NumPy arrays.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
        Row k holds the weights of class k. Not set with ``n_weights`` (the scores come
        from the table: ``decision_function``).
    intercept_ : ndarray of shape (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    u_ : ndarray of shape (n_samples,)
        Auxiliary variables of the last pass, for the methods that have them
        (``"implicit"``, ``"umax"`` and ``"sgd"``); not set for the others.
    loss_curve_ : list of float
        Exact mean training NLL (``sparsekit.losses.softmax_nll``) at ``loss_epochs_``.
    loss_epochs_ : list of int
        Epochs (0 = before training) at which ``loss_curve_`` was evaluated.
    epoch_times_ : list of float
        Seconds spent in the epoch driver for each epoch (evaluation excluded).
    epoch_cpu_times_ : list of float
        CPU seconds of the thread that ran the epoch driver, for each epoch: unlike
        ``epoch_times_``, it excludes time the thread waited for a CPU on a busy machine
        (with ``n_jobs`` > 1, the driver's first thread only).
    n_iter_ : int
        Epochs run (partial_fit calls count one each).
    shrink_ : float
        The factor ``fit`` multiplied the weights by (``shrink``; 1.0 when it did not, and
        after :meth:`partial_fit`).
    learning_rate_ : float
        The initial step eta_0 used (``learning_rate``, or its ``"auto"`` value; for
        ``partial_fit`` computed on the first chunk).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names.

    Notes
    -----
    Prediction scores every class (O(K nnz(x)) per example); ``predict_log_proba`` is the
    exact log-softmax of those scores, also for the biased methods. The scores are computed a
    chunk of rows at a time, at most 32 MiB of them and at most scikit-learn's
    ``working_memory`` (``sklearn.set_config(working_memory=...)``, MiB): ``predict``,
    ``predict_topk`` and ``precision_at_k`` then hold one chunk, and ``predict_proba`` one
    chunk beside its (n_samples, n_classes) output.

    Parameter names as in scikit-learn's ``SGDClassifier``, where they mean the same:
    ``alpha`` (ridge strength), ``tol``, ``shuffle``, ``random_state``, ``warm_start``,
    ``fit_intercept``, ``verbose``. Two differ: ``n_epochs`` is ``SGDClassifier``'s
    ``max_iter`` (a fixed number of passes here, with ``tol`` an optional early stop), and
    ``learning_rate`` is the initial step ``eta0`` of a geometric schedule (``lr_decay``),
    not the name of a schedule. ``alpha`` is the ridge strength in all of sparsekit
    (:class:`SparsemaxClassifier` too); :class:`L1LogisticOBA` takes LIBLINEAR's ``C``.

    The steps follow the rows' norms, so on a raw table one column in other units (an
    identifier, a timestamp, an amount in dollars beside features of unit scale) would set
    them alone, and the other columns' weights would barely move. Where some column's
    nonzero entries have a mean square over 1000 times the median column's, ``fit`` runs its
    passes on X with each column of larger entries than the median column's divided by
    their root mean square over the median's, whose weights are the coefficients times
    those divisors (X is copied; the objective is the same with ``alpha=0``, and ``coef_``
    holds the coefficients of X's own columns): a column's units then change its
    coefficient, not the fit. ``partial_fit`` divides its chunks by the divisors of its
    first chunk (or of the ``fit`` it continues). With ``alpha > 0`` (the ridge is on the
    coefficients) or ``n_weights`` (weights shared by columns) the passes run on X as given
    and a ``UserWarning`` names the column: standardize the columns there.

    A ``fit`` or ``partial_fit`` that fails (bad input, a floating-point overflow) leaves the
    estimator as it was. The explicit methods can overflow mid-pass: a ``partial_fit`` on
    existing weights has the epoch driver log the entries it writes and give them back on
    failure (a few percent of the time of an unlogged pass on sparse rows), or works on a
    copy of the weights when the log would be larger than they are (dense rows, few
    classes); a warm-started ``fit`` works on a copy. Implicit SGD's proximal steps stay
    finite on finite input, so it updates the weights in place.

    References
    ----------
    .. [1] Fagan, F. & Iyengar, G. (2018). Unbiased scalable softmax optimization.
       arXiv:1803.08577 (Implicit SGD, section 3.2; U-max, section 3.1; eq. 3).
    .. [2] Titsias, M. K. (2016). One-vs-each approximation to softmax for scalable estimation
       of probabilities. NIPS, eqs. 5-6.
    .. [3] Bengio, Y. & Senecal, J.-S. (2008). Adaptive importance sampling to accelerate
       training of a neural probabilistic language model. IEEE Trans. Neural Networks 19(4).
    .. [4] Jean, S., Cho, K., Memisevic, R. & Bengio, Y. (2015). On using very large target
       vocabulary for neural machine translation. ACL (sampled softmax).
    .. [5] Recht, B., Re, C., Wright, S. & Niu, F. (2011). Hogwild!: a lock-free approach
       to parallelizing stochastic gradient descent. NIPS (``n_jobs``).
    .. [6] Weinberger, K., Dasgupta, A., Langford, J., Smola, A. & Attenberg, J. (2009).
       Feature hashing for large scale multitask learning. ICML (``n_weights``).
    .. [7] Polyak, B. T. & Juditsky, A. B. (1992). Acceleration of stochastic
       approximation by averaging. SIAM J. Control Optim. 30(4), 838-855 (``average``).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.preprocessing import Normalizer
    >>> from sparsekit import ExtremeSoftmaxSGD
    >>> X, y = load_digits(return_X_y=True)
    >>> X = Normalizer().fit_transform(X)
    >>> clf = ExtremeSoftmaxSGD("implicit", n_epochs=10, random_state=0).fit(X, y)
    >>> round(clf.score(X, y), 2)
    0.98
    >>> clf.predict_topk(X[:2], k=3)
    array([[0, 9, 5],
           [1, 4, 8]])
    >>> clf.learning_rate_           # "auto": 6 / (1 + 1) on unit rows with an intercept
    3.0

    Weights in a table of 4,096 numbers instead of the 10 x 64 matrix (``n_weights``):

    >>> small = ExtremeSoftmaxSGD(n_weights=4096, random_state=0).fit(X, y)
    >>> small.intercept_.shape, hasattr(small, "coef_")
    ((10,), False)
    """

    _parameter_constraints = {
        "method": [StrOptions(set(METHODS))],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "lr_decay": [Interval(Real, 0, 1, closed="right")],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "average": ["boolean", StrOptions({"auto"})],
        "shrink": ["boolean", StrOptions({"auto"})],
        "n_sampled": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "delta": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "u_init": [StrOptions({"log_k", "zero", "exact"})],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "eval_every": [Interval(Integral, 0, None, closed="left")],
        "eval_size": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "warm_start": ["boolean"],
        "multilabel": [StrOptions({"error", "first"})],
        "sample_true_class": ["boolean"],
        "shared_classes": ["boolean"],
        "n_jobs": [Integral, None],
        "n_weights": [Interval(Integral, 1, None, closed="left"), None],
        "device": [StrOptions({"cpu", "cuda"})],
    }

    def __init__(self, method="sampled_softmax", *, learning_rate="auto", lr_decay=0.9, n_epochs=20,
                 average="auto", shrink="auto", n_sampled=5, batch_size=1, delta=1.0,
                 alpha=0.0, fit_intercept=True, class_weight=None, u_init="log_k", shuffle=True,
                 random_state=None, verbose=0, eval_every=0, eval_size=100_000, tol=None,
                 warm_start=False, multilabel="error",
                 sample_true_class=False, shared_classes=False, n_jobs=None, n_weights=None,
                 device="cpu"):
        self.method = method
        self.learning_rate = learning_rate
        self.lr_decay = lr_decay
        self.n_epochs = n_epochs
        self.average = average
        self.shrink = shrink
        self.n_sampled = n_sampled
        self.batch_size = batch_size
        self.delta = delta
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.u_init = u_init
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.eval_every = eval_every
        self.eval_size = eval_size
        self.tol = tol
        self.warm_start = warm_start
        self.multilabel = multilabel
        self.sample_true_class = sample_true_class
        self.shared_classes = shared_classes
        self.n_jobs = n_jobs
        self.n_weights = n_weights
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = False
        return tags

    def __sklearn_is_fitted__(self):
        return hasattr(self, "_weights")  # not merely n_features_in_, set before a call can fail

    def __getstate__(self):
        """``coef_`` and ``intercept_`` are views of the weights: pickled once, the
        views rebuilt on loading (so that ``partial_fit`` keeps updating what they show)."""
        return {key: value for key, value in super().__getstate__().items()
                if key not in ("coef_", "intercept_")}

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_weights" in state:
            self._publish()

    # ------------------------------------------------------------------ validation helpers
    def _targets(self, y):
        if y is None or not _is_multilabel(y):
            return y
        if self.multilabel == "error":
            raise ValueError("ExtremeSoftmaxSGD is a multiclass (single-label) model; pass "
                             "multilabel='first' to keep the first label of each example")
        return first_label(y)

    def _validate_input(self, X, y, sample_weight, reset):
        """X, y and sample_weight validated in host memory (sample_weight as given, for
        scikit-learn's check)."""
        if is_device_matrix(X):     # trained from host memory; the epochs move it back
            fit_device(self.device, X)
        X, y, sample_weight = on_host(X, y, sample_weight)
        # trained in memory: a dask array or DataFrame is computed (streams: Incremental)
        X, y, sample_weight = (v.compute() if is_dask_collection(v) else v
                               for v in (X, y, sample_weight))
        y = self._targets(y)
        X, y = validate_input(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C", reset=reset)
        check_entry_magnitude(X, np.float64)      # the driver's squared row norms
        return X, y, sample_weight

    def _check_method_params(self):
        if self.tol is not None and not self.eval_every:
            raise ValueError("tol needs eval_every > 0 (the stopping test uses the NLL)")
        if self.sample_true_class and self.method != "implicit":
            raise ValueError("sample_true_class reproduces the authors' Implicit SGD code; it "
                             f"needs method='implicit' (got {self.method!r})")
        if self.method == "implicit" and self.batch_size != 1 and self.alpha > 0:
            raise ValueError("method='implicit' with alpha > 0 takes one example per step "
                             f"(its proximal step shrinks the rows it touches); use "
                             f"batch_size=1 or alpha=0 (got batch_size={self.batch_size}, "
                             f"alpha={self.alpha})")
        if self.device == "cuda":
            unsupported = {"alpha": self.alpha > 0, "n_weights": self.n_weights is not None,
                           "shared_classes": self.shared_classes,
                           "n_sampled": self.n_sampled > GPU_MAX_SAMPLED}
            if any(unsupported.values()):
                raise ValueError(
                    f"device='cuda' trains with alpha=0, dense weights (n_weights=None), "
                    f"shared_classes=False and n_sampled <= {GPU_MAX_SAMPLED}; got "
                    + ", ".join(f"{k}={getattr(self, k)!r}" for k, v in unsupported.items()
                                if v))
        if self.n_weights is not None:
            unsupported = {"alpha": self.alpha > 0, "batch_size": self.batch_size != 1,
                           "shared_classes": self.shared_classes,
                           "sample_true_class": self.sample_true_class}
            if any(unsupported.values()):
                raise ValueError(
                    "hashed weights (n_weights) are trained with batch_size=1, alpha=0, "
                    "shared_classes=False and sample_true_class=False; got "
                    + ", ".join(f"{k}={getattr(self, k)!r}" for k, v in unsupported.items()
                                if v))

    # ------------------------------------------------------------------ state
    def _new_weights(self, n_classes, n_features, dtype):
        """Zero weights (:class:`~sparsekit.linear_model._softmax_weights.SoftmaxWeights`)
        for the estimator's ``fit_intercept`` and ``n_weights``."""
        self._weights = SoftmaxWeights.zeros(n_classes, n_features, dtype, self.fit_intercept,
                                             self.n_weights)
        self._publish()

    def _grow_classes(self, known):
        """Weights for the class set ``known``, a superset of ``classes_``: zero for the new
        classes."""
        self._weights = self._weights.grown(np.searchsorted(known, self.classes_), len(known))
        self.classes_ = known
        self._publish()

    def _model_now(self, scales=None):
        """The fitted attributes of the weights as they are now (for the callbacks); the
        passes' weights of columns divided by ``scales`` (:meth:`_column_scales`) divided
        by them too."""
        weights = self._weights.copy()
        if scales is not None:
            weights.scale_columns(scales, inverse=True)
        return {"_weights": weights, **weights.attributes()}

    def _publish(self):
        self.__dict__.pop("coef_", None)      # hashed weights have none
        self.__dict__.update(self._weights.attributes())

    def _scale_columns(self, scales, inverse=False):
        """Multiply (``inverse``: divide) in place the weights of X's columns by ``scales``:
        from the coefficients to the weights of the passes on X's columns divided by them
        (:meth:`_column_scales`), and back."""
        self._weights.scale_columns(scales, inverse)
        self._publish()

    def _column_scales(self, X, sample_weight):
        """The divisors of X's columns that the passes run on (fit's, and a stream's from
        its first chunk), or None
        (:func:`~sparsekit.linear_model._softmax_advice.column_scales`); the column in
        other units they run on as given, if any, is kept for a divergence's advice."""
        scales, self._units_column = column_scales(X, sample_weight, self.alpha,
                                                   self.n_weights is not None,
                                                   self._column_name)
        return scales

    def _initial_u(self, X, y_idx):
        K = len(self.classes_)
        n = X.shape[0]
        if self.u_init == "zero":
            return np.zeros(n)
        if self.u_init == "log_k" or not np.any(self._weights.R):
            return np.full(n, np.log(K))
        return self._nll(X, y_idx)

    def _keep_u(self, u):
        """Keep the pass's auxiliary variables as ``u_`` for the methods that have them (a
        float per training row, in the model and its pickles); else drop an earlier fit's."""
        if self.method in U_METHODS:
            self.u_ = u
        else:
            self.__dict__.pop("u_", None)

    def _nll(self, X, y_idx):
        """Per-row NLL of the current weights, a chunk of rows at a time (on the GPU for a
        ``device="cuda"`` fit with dense weights: :meth:`_device_nll`)."""
        if self.device == "cuda" and self._weights.n_weights is None:
            return self._device_nll(X, y_idx)
        return self._weights.nll(X, y_idx, self.n_jobs)

    def _device_nll(self, X, y_idx):
        """:meth:`_nll` on the GPU
        (:func:`~sparsekit.linear_model._device_input.device_nll`); the rows of host ``X``
        go to the device once per fit (kept in ``_gpu_eval`` while the same ``X`` is asked
        for)."""
        kept = getattr(self, "_gpu_eval", None)
        if kept is None or kept[0] is not X:
            kept = self._gpu_eval = (X, to_device(X))
        return device_nll(kept[1], self.coef_.astype(np.float64),
                          self.intercept_.astype(np.float64), y_idx)

    def _passes(self):
        """The passes of the method over rows, with the estimator's parameters and the
        weights' layout (``_new_weights``)."""
        return SoftmaxPasses(self.method, n_sampled=self.n_sampled,
                             batch_size=self.batch_size, delta=self.delta, alpha=self.alpha,
                             exclude_true=not self.sample_true_class,
                             shared_classes=self.shared_classes, n_jobs=self.n_jobs,
                             device=self.device, bias=self._weights.bias,
                             n_weights=self._weights.n_weights)

    def _initial_rate(self, xsq, sample_weight):
        """eta_0: ``learning_rate``, or for "auto" the method's rate over the rows' scale
        (:func:`~sparsekit.optimize._softmax_passes.initial_rate`)."""
        if self.learning_rate != "auto":
            return float(self.learning_rate)
        return initial_rate(self.method, xsq, sample_weight, self.fit_intercept)

    def _averages(self, n_classes):
        """Whether ``fit`` averages the epochs' weights (``average``)."""
        if isinstance(self.average, str):     # "auto"
            return n_classes <= AVERAGE_MAX_CLASSES and self.n_weights is None
        return bool(self.average)

    def _shrinks(self, n_classes):
        """Whether ``fit`` ends with the line search on the weights' scale (``shrink``)."""
        if isinstance(self.shrink, str):      # "auto"
            return n_classes <= SHRINK_MAX_CLASSES
        return bool(self.shrink)

    def _shrink(self, X, y_idx, sample_weight):
        """Scale the weights by the factor of
        :func:`~sparsekit.optimize._softmax_shrink.best_shrink` on SHRINK_SCORES class
        scores' worth of the training rows (the ridge term's weight from all of them), and
        return it."""
        rows = self._sample_rows(sample_weight, max(DIVERGENCE_ROWS,
                                                    SHRINK_SCORES // len(self.classes_)))
        weights = sample_weight[rows]
        if not weights.max(initial=0.0) > 0:
            return 1.0
        weights = weights / weights.max()        # sums near 1e308 stay finite
        # the objective over the weights' sum: mean NLL + alpha ||R||^2 / (2 sum of weights)
        R = self._weights.R
        ridge = (self.alpha * float(np.vdot(R, R)) / float(sample_weight.sum())
                 if self.alpha > 0 else 0.0)
        factor = best_shrink(self._weights.sampled_scores(X, rows, self.n_jobs), y_idx[rows],
                             weights / weights.sum(), ridge)
        if factor < 1.0:
            scale_flush(self._weights.R, factor)
            self._publish()
        return factor

    def _stream_weights(self, fresh):
        """With ``average=True``, make the weights those partial_fit trains: the stream's
        last weights (the model is their mean), or the model's own on the first call and on
        a call that declares new classes (the mean restarts there). Returns whether the
        stream averages (if not, a mean kept from earlier calls is let go)."""
        if isinstance(self.average, str) or not self.average:
            for key in STREAM_MEAN:
                self.__dict__.pop(key, None)
            return False
        if not fresh and "_R_iterate" in self.__dict__:
            self._weights = self._weights.replaced(self._R_iterate)
            self._publish()
        return True

    def _average_stream(self, fresh):
        """After a partial_fit pass on the weights: add them to the stream's sum
        (new arrays, so that a failed call leaves the old ones) and make the model their
        mean."""
        restart = fresh or "_R_iterate" not in self.__dict__
        iterate = self._weights.R
        self._R_total = iterate.copy() if restart else self._R_total + iterate
        self._n_averaged = 1 if restart else self._n_averaged + 1
        self._R_iterate = iterate
        self._weights = self._weights.replaced(self._R_total / self._n_averaged)
        self._publish()

    def _guard_weights(self, passes):
        """Run the next passes on a copy of the weights when they may fail (the explicit
        methods can overflow), so that the call's rollback finds them as they were."""
        if passes.may_overflow():
            self._weights = self._weights.replaced(self._weights.R.copy())
            self._publish()

    def _pass(self, passes, rows, y_idx, sample_weight, u, eta, order, seed, undo=False):
        """One pass of ``passes`` over ``rows`` on the weights, its times recorded; a pass
        that overflowed is a ValueError."""
        status, wall, cpu = passes.run(self._weights.R, rows, y_idx, sample_weight, u, eta, order,
                                       seed, slots=self._weights.slots, undo=undo)
        self.epoch_cpu_times_.append(cpu)
        self.epoch_times_.append(wall)
        self._publish()
        if status:
            raise overflow_error(self.method, eta, rows.xsq, self.learning_rate,
                                 self.fit_intercept)

    def _check_finite(self, eta, xsq):
        """The overflow error of the last pass (at step ``eta``, on rows of squared norms
        ``xsq``) where the model's weights are beyond their dtype's range: an entry the
        passes wrote and no later step read, or the sum of the averaged weights."""
        R = self._weights.R
        if R.size and not (np.isfinite(R.min()) and np.isfinite(R.max())):   # no copy of R
            raise overflow_error(self.method, eta, xsq, self.learning_rate, self.fit_intercept)

    def _training_nll(self, X, y_idx, sample_weight):
        """Weighted mean NLL of the current weights (NaN when every weight is 0); its time
        goes to ``_eval_seconds`` (reported by ``verbose``)."""
        if not sample_weight.max(initial=0.0) > 0:
            return np.nan
        start = time.perf_counter()
        weights = sample_weight / sample_weight.max()     # sums of weights near 1e308 stay finite
        nll = float(self._nll(X, y_idx) @ weights / weights.sum())
        self._eval_seconds = getattr(self, "_eval_seconds", 0.0) + time.perf_counter() - start
        return nll

    def _evaluation_rows(self, sample_weight):
        """Rows of ``fit``'s NLL history: all, or ``eval_size`` of them (without a history,
        those of the divergence check: ``DIVERGENCE_SCORES`` class scores' worth, at least
        ``DIVERGENCE_ROWS``; :meth:`_sample_rows`)."""
        return self._sample_rows(sample_weight, self.eval_size if self.eval_every else
                                 max(DIVERGENCE_ROWS, DIVERGENCE_SCORES // len(self.classes_)))

    def _sample_rows(self, sample_weight, size):
        """:func:`~sparsekit.utils._rows.sample_rows` seeded by ``random_state``."""
        return sample_rows(sample_weight, size, self.random_state)

    def _record(self, epoch, nll, where="training NLL"):
        self.loss_curve_.append(nll)
        self.loss_epochs_.append(epoch)
        self._progress(epoch, f"{where} {nll:.6f}, ")

    def _progress(self, epoch, text=""):
        evaluating = getattr(self, "_eval_seconds", 0.0)
        self._say(f"epoch {epoch}: {text}{sum(self.epoch_times_):.2f} s in the epoch driver"
                  + (f", {evaluating:.2f} s evaluating the NLL" if evaluating else ""))

    # ------------------------------------------------------------------ fitting
    @unchanged_on_error
    @with_callbacks
    def fit(self, X, y, sample_weight=None):
        """Run ``n_epochs`` passes of the chosen method.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, float32 or float64 (the weights follow its dtype), or a CuPy
            array / cupyx sparse matrix with ``device="cuda"``. A dense X with at most
            30% nonzero entries (e.g. MNIST) is trained on through a CSR copy, whose rows
            the passes walk by their nonzero entries. A dask array or DataFrame
            (and ``y``) is computed into memory, where the epochs run; to stream its
            partitions, use ``partial_fit`` (dask-ml's ``Incremental``).
        y : array-like of shape (n_samples,)
            Class labels (multi-label targets: see ``multilabel``).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multiplier of the data term (and of its step).

        Returns
        -------
        self : ExtremeSoftmaxSGD
            The fitted estimator.
        """
        self._validate_params()
        self._check_method_params()
        given = sample_weight           # what the callbacks are shown (not times class_weight)
        X, y, sample_weight = self._validate_input(X, y, sample_weight, reset=True)
        previous = getattr(self, "classes_", None)
        y_idx = self._encode_labels(y, many_classes=True)  # many classes: the use case
        classes = self.classes_
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                             ensure_non_negative=True)
        sample_weight = self._class_weighted(sample_weight, y_idx)
        rng = check_random_state(self.random_state)
        warm = (self.warm_start and hasattr(self, "_weights")
                and np.array_equal(previous, classes)
                and self._weights.fits(X.shape[1], self.fit_intercept, self.n_weights))
        for key in ("_stream_rng",) + STREAM_MEAN:   # a later partial_fit restarts the stream
            self.__dict__.pop(key, None)
        if not warm:
            self._new_weights(len(classes), X.shape[1], X.dtype)
        passes = self._passes()
        scales = self._scales = self._column_scales(X, sample_weight)   # partial_fit's too
        if warm and (self._weights.R.dtype != X.dtype or scales is not None):
            # warm weights follow the new data's precision; a new array, scaled in place
            self._weights = self._weights.replaced(self._weights.R.astype(X.dtype))
            self._publish()
        elif warm:
            self._guard_weights(passes)
        Xt = X
        if scales is not None:
            Xt = divided_columns(X, scales)
            self._scale_columns(scales)
        y_idx = y_idx.astype(np.intp)
        rows = SGDRows.of(Xt, self._weights.R.dtype, self._weights.bias)
        Xt = rows.matrix()     # a sparse X's entries summed and sorted, as the passes read them
        self.learning_rate_ = self._initial_rate(rows.xsq, sample_weight)
        u = (self.u_.copy() if warm and getattr(self, "u_", np.empty(0)).shape == (X.shape[0],)
             else self._initial_u(Xt, y_idx))
        ev = self._evaluation_rows(sample_weight)
        evaluation = (_taken(Xt, ev), y_idx[ev], sample_weight[ev])
        self.loss_curve_, self.loss_epochs_, self.epoch_times_ = [], [], []
        self.epoch_cpu_times_ = []
        self._eval_seconds = 0.0

        first_nll = self._training_nll(*evaluation)   # the history's start, or the check's
        if self.eval_every:
            self._record(0, first_nll)
        context = self._begin_fit_task(X, y, self.n_epochs, given)
        converged, averaged = self._epochs(context, (X, y, given), passes, rows, y_idx,
                                           sample_weight, u, rng, scales, evaluation)
        trained = self._final_model(averaged, Xt, y_idx, sample_weight, scales, evaluation,
                                    rows.xsq)
        # the epochs' NLL (before the shrink), and what the shrink made of it
        warn_if_diverged(self.method, first_nll, trained,
                         lambda: divergence_hint(rows.xsq, self.learning_rate,
                                                 self.learning_rate_, self.fit_intercept,
                                                 self._units_column),
                         self.shrink_, self.loss_curve_[-1] if self.eval_every else None)
        if self.tol is not None and not converged:
            warnings.warn(f"ExtremeSoftmaxSGD did not reach tol={self.tol} in "
                          f"{self.n_epochs} epochs; increase n_epochs", ConvergenceWarning)
        self._keep_u(u)
        self.__dict__.pop("_gpu_eval", None)
        self._end_fit_task(context, X, y, given)
        return self

    def _epochs(self, context, shown, passes, rows, y_idx, sample_weight, u, rng, scales,
                evaluation):
        """fit's epochs, each a subtask of the callbacks' ``context`` (``shown``: the X, y
        and sample_weight given to fit): (whether they converged or a callback stopped
        them, the mean of the last epochs' weights as
        :class:`~sparsekit.optimize._softmax_passes.EpochMean` keeps it). ``evaluation``:
        the rows, labels and weights of the training NLL."""
        converged = False
        self.n_iter_ = 0
        averaged = EpochMean(self.n_epochs - (self.n_epochs + 3) // 4
                             if self._averages(len(self.classes_)) else self.n_epochs)
        n = y_idx.size
        for epoch in range(self.n_epochs):
            order = (rng.permutation(n) if self.shuffle else np.arange(n)).astype(np.intp)
            seed = int(rng.randint(0, 2**62))
            eta = self.learning_rate_ * self.lr_decay**epoch
            task = self._begin_subtask(context, "epoch", *shown)
            self._pass(passes, rows, y_idx, sample_weight, u, eta, order, seed)
            stop = self._end_subtask(task, *shown, lambda: self._model_now(scales))
            averaged.add(epoch, self._weights.R)
            self.n_iter_ = epoch + 1
            last = epoch + 1 == self.n_epochs
            if self.eval_every and ((epoch + 1) % self.eval_every == 0 or last):
                previous = self.loss_curve_[-1] if self.loss_curve_ else np.inf
                self._record(epoch + 1, self._training_nll(*evaluation))
                if self.tol is not None and previous - self.loss_curve_[-1] < self.tol:
                    converged = True
                    break
            else:
                self._progress(epoch + 1)
            if stop:               # a callback asked to stop: no convergence warning
                converged = True
                break
        return converged, averaged

    def _final_model(self, averaged, Xt, y_idx, sample_weight, scales, evaluation, xsq):
        """The model fit returns after its epochs: the mean of the last epochs' weights
        (``averaged``), then the closing shrink, the history ending with its NLL. Returns
        the training NLL of the epochs' model (before the shrink). Weights beyond their
        dtype's range (an entry the passes wrote and no later step read, or the epochs'
        sum) are the passes' overflow error (``xsq``: the rows' squared norms)."""
        changes = []
        if averaged.count > 1:
            self._weights = self._weights.replaced(averaged.mean())
            self._publish()
            changes.append(f"the mean of the weights after epochs {averaged.start + 1}-"
                           f"{self.n_iter_}")
        self._check_finite(self.learning_rate_ * self.lr_decay**(self.n_iter_ - 1), xsq)
        trained = (self.loss_curve_[-1] if self.eval_every and self.loss_curve_
                   and not changes else self._training_nll(*evaluation))
        self.shrink_ = (self._shrink(Xt, y_idx, sample_weight)
                        if self._shrinks(len(self.classes_)) else 1.0)
        if scales is not None:
            self._scale_columns(scales, inverse=True)
        if self.shrink_ < 1.0:
            changes.append(f"scaled by {self.shrink_:.4g}")
        if changes:
            said = f"epoch {self.n_iter_}: the model is " + ", ".join(changes)
            if self.eval_every:      # the history ends with the model fit returns
                if self.loss_epochs_[-1] == self.n_iter_:
                    self.loss_curve_.pop()
                    self.loss_epochs_.pop()
                self.loss_curve_.append(trained if self.shrink_ == 1.0
                                        else self._training_nll(*evaluation))
                self.loss_epochs_.append(self.n_iter_)
                said += f", training NLL {self.loss_curve_[-1]:.6f}"
            self._say(said)
        return trained

    @unchanged_on_error
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass over a chunk (streaming / out of core).

        The first call must declare every class through ``classes``. A later call may
        declare a superset: the new classes get zero weight rows and ``classes_`` grows.
        Each call uses the step ``learning_rate * lr_decay**n_iter_`` and fresh u values
        for its rows (``u_init``). A call counts as an epoch for the decay: to stream one
        data set in many chunks, pass ``lr_decay=1.0`` and lower ``learning_rate`` between
        passes with ``set_params`` (at 0.9 per chunk, 100 chunks leave 3e-5 of the step).
        With ``average=True`` the model is the mean of the weights after each call, and each
        call goes on from the last weights (see ``average``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The chunk's rows (as in :meth:`fit`). A dask array or DataFrame is streamed:
            one pass per row block, each block computed in turn (only one in memory),
            ``y`` and ``sample_weight`` then dask arrays, Series of the same frame, or
            NumPy arrays.
        y : array-like of shape (n_samples,)
            The chunk's class labels, all among the declared classes.
        classes : array-like of shape (n_classes,), default=None
            Every class the model will know: required on the first call; a later call may
            declare a superset.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multiplier of the data term (and of its step).

        Returns
        -------
        self : ExtremeSoftmaxSGD
            The updated estimator.
        """
        if is_dask_collection(X):     # a pass per row block, one block in memory at a time
            for block, y_block, weights in row_blocks(X, y, sample_weight):
                if block.shape[0]:
                    self.partial_fit(block, y_block, classes=classes, sample_weight=weights)
            return self
        first = not hasattr(self, "classes_")
        X, y, known, sample_weight = self._checked_chunk(X, y, classes, sample_weight, first)
        fresh = first or not np.array_equal(known, self.classes_)  # new weight arrays
        if first:
            self._scales = self._column_scales(X, sample_weight)    # the stream's divisors
            self.classes_ = known
            self._new_weights(len(known), X.shape[1], X.dtype)
            self.n_iter_ = 0
            self.loss_curve_, self.loss_epochs_, self.epoch_times_ = [], [], []
            self.epoch_cpu_times_ = []
        elif not np.array_equal(known, self.classes_):
            self._grow_classes(known)
        streamed = self._stream_weights(fresh)
        y_idx = np.searchsorted(self.classes_, y).astype(np.intp)
        sample_weight = self._class_weighted(sample_weight, y_idx)   # a dict: checked above
        X = X.astype(self._weights.R.dtype, copy=False)
        rng = getattr(self, "_stream_rng", None)
        # the stream's generator advances on a copy: a call that fails leaves it as it was
        rng = check_random_state(self.random_state) if first or rng is None else copy.deepcopy(rng)
        self._stream_rng = rng
        n = X.shape[0]
        order = (rng.permutation(n) if self.shuffle else np.arange(n)).astype(np.intp)
        u = self._initial_u(X, y_idx)
        passes = self._passes()
        scales = getattr(self, "_scales", None)      # those of the first call, or of fit
        scales = None if scales is None else scales.astype(X.dtype)
        rows = SGDRows.of(X if scales is None else divided_columns(X, scales),
                          self._weights.R.dtype, self._weights.bias)
        if first or self.learning_rate != "auto" or not hasattr(self, "learning_rate_"):
            self.learning_rate_ = self._initial_rate(rows.xsq, sample_weight)  # first chunk
        eta = self.learning_rate_ * self.lr_decay**self.n_iter_
        if scales is not None:     # the passes' weights: a new array, which a failure drops
            undo = None
            self._weights = self._weights.replaced(self._weights.R.copy())
            self._scale_columns(scales)
        else:
            undo = None if fresh else passes.undo_is_cheaper(self._weights.R, rows,
                                                             len(self.classes_))
        if undo is False:    # the pass overwrites weights that a failure must give back
            self._guard_weights(passes)
        self._pass(passes, rows, y_idx, sample_weight, u, eta, order,
                   int(rng.randint(0, 2**62)), undo=bool(undo))
        if scales is not None:
            self._scale_columns(scales, inverse=True)
        if streamed:
            self._average_stream(fresh)
            self._check_finite(eta, rows.xsq)
        self.n_iter_ += 1
        if self.eval_every and self.n_iter_ % self.eval_every == 0:
            self._record(self.n_iter_, self._training_nll(X, y_idx, sample_weight),
                         "NLL on this chunk")
        else:
            self._progress(self.n_iter_)
        self._keep_u(u)
        self.shrink_ = 1.0         # a stream's weights are not shrunk
        self.__dict__.pop("_gpu_eval", None)
        return self

    def _checked_chunk(self, X, y, classes, sample_weight, first):
        """A :meth:`partial_fit` call's parameters and chunk, validated against the stream
        so far (its ``first`` call: none): (X, y, every class declared, sample_weight)."""
        self._validate_params()  # every call: set_params may change them between chunks
        if first and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit")
        self._check_method_params()
        X, y, sample_weight = self._validate_input(X, y, sample_weight, reset=first)
        check_labels(y, many_classes=True)
        known = self.classes_ if classes is None else _declared_classes(classes)
        if first and len(known) < 2:
            raise ValueError("partial_fit needs at least 2 declared classes")
        if not first and not np.all(np.isin(self.classes_, known)):
            raise ValueError("classes must contain every class declared before "
                             f"({len(self.classes_)} classes); got {len(known)}")
        if not first and bool(self.fit_intercept) != self._weights.bias:
            raise ValueError(f"fit_intercept={self.fit_intercept} but the streamed model "
                             f"was started with fit_intercept={self._weights.bias}; call fit "
                             "to restart")
        if not first and self.n_weights != self._weights.n_weights:
            raise ValueError(f"n_weights={self.n_weights} but the streamed model was "
                             f"started with n_weights={self._weights.n_weights}; call fit to "
                             "restart")
        unknown = ~np.isin(y, known)
        if np.any(unknown):
            raise ValueError(f"y contains labels not declared in classes: "
                             f"{np.unique(y[unknown])[:5].tolist()}")
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                             ensure_non_negative=True)
        if isinstance(self.class_weight, str):
            raise ValueError("class_weight='balanced' is not supported for partial_fit: a "
                             "chunk's class totals are not the data's; pass a dict, e.g. "
                             "from sklearn.utils.class_weight.compute_class_weight on all "
                             "the labels")
        return X, y, known, sample_weight

    # ------------------------------------------------------------------ prediction
    def _on_device(self, X, kind):
        """Predictions for CuPy X, on its device
        (:func:`~sparsekit.linear_model._device_input.device_outputs`): ``kind`` "scores",
        "log_proba", "proba", "labels" or an int k, the top k labels."""
        check_is_fitted(self)
        if self._weights.n_weights is None:
            S = device_scores(X, self.coef_.astype(np.float64),
                              self.intercept_.astype(np.float64))
        else:                  # the hashed table is scored on the host
            S = require_cupy().asarray(self._weights.scores(self._checked(X.get()),
                                                            self.n_jobs))
        return device_outputs(S, kind, self.classes_,
                              np.result_type(X.dtype, self._weights.R.dtype))

    def _checked(self, X):
        check_is_fitted(self)
        return validate_input(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                             reset=False)

    def _row_map(self, X, transform):
        """``transform(scores)`` of every row of X (:meth:`SoftmaxWeights.map_rows
        <sparsekit.linear_model._softmax_weights.SoftmaxWeights.map_rows>`)."""
        X = self._checked(X)
        return self._weights.map_rows(X, transform, self.n_jobs)

    def _row_reduce(self, X, reduce):
        """``reduce(scores)`` of the rows of X (:meth:`SoftmaxWeights.reduce_rows
        <sparsekit.linear_model._softmax_weights.SoftmaxWeights.reduce_rows>`)."""
        X = self._checked(X)
        return self._weights.reduce_rows(X, reduce, self.n_jobs)

    @block_predictions
    def decision_function(self, X):
        """Class scores ``X @ coef_.T + intercept_``; for two classes, score(1) - score(0).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            In float32 when X and the model are float32, else float64.
        """
        S = (self._on_device(X, "scores") if is_device_matrix(X)
             else self._row_map(X, lambda S: S))
        return S[:, 1] - S[:, 0] if S.shape[1] == 2 else S

    @block_predictions
    def predict_log_proba(self, X):
        """Exact log-softmax of the scores (computed in log space, in float64).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            In float32 when X and the model are float32, else float64.
        """
        if is_device_matrix(X):
            return self._on_device(X, "log_proba")
        return self._row_map(X, _log_softmax)

    @block_predictions
    def predict_proba(self, X):
        """Exact softmax probabilities (computed in log space, in float64).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            In float32 when X and the model are float32, else float64.
        """
        if is_device_matrix(X):
            return self._on_device(X, "proba")
        return self._row_map(X, lambda S: np.exp(_log_softmax(S)))

    @block_predictions
    def predict(self, X):
        """Most probable class of each example.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Elements of ``classes_`` (a CuPy array for CuPy X and numeric classes).
        """
        if is_device_matrix(X):
            return self._on_device(X, "labels")
        best = self._row_reduce(X, lambda S: np.argmax(S, axis=1))
        return self.classes_[best]

    def _scored(self, y, predicted, sample_weight):
        """Accuracy against ``y``, label sets reduced as ``fit`` reduces them: a model fit
        on label sets is scored, and cross-validated, against the labels it was trained to
        predict."""
        return super()._scored(self._targets(y), predicted, sample_weight)

    @block_predictions
    def predict_topk(self, X, k=5):
        """The ``k`` highest-scoring classes of each example, best first.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).
        k : int, default=5
            How many classes per example, at most ``n_classes``.

        Returns
        -------
        labels : ndarray of shape (n_samples, k)
            Elements of ``classes_``; ties broken toward the lower class index.
        """
        check_is_fitted(self)
        if not isinstance(k, Integral) or isinstance(k, bool) or not 1 <= k <= len(
                self.classes_):
            raise ValueError(f"k must be in [1, n_classes={len(self.classes_)}], got {k}")
        if is_device_matrix(X):
            return self._on_device(X, int(k))

        return self.classes_[self._row_reduce(X, lambda S: top_k(S, k))]

    def precision_at_k(self, X, y_true, k=5):
        """Mean precision@k of ``predict_topk(X, k)`` against single or multiple labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix, or a dask array /
            DataFrame (its row blocks predicted on the workers, the top classes brought
            back with ``y_true``'s dask collection in one computation).
        y_true : array-like of shape (n_samples,), sequence of label sets, or indicator
            The true label of each example, a set of labels per example, or an (n_samples,
            L) indicator matrix (see :func:`sparsekit.metrics.precision_at_k`); a dask
            array, Series or DataFrame too.
        k : int, default=5
            How many predicted classes per example.

        Returns
        -------
        precision : float
            The fraction of the ``k`` predicted classes that are true labels, averaged over
            the examples.
        """
        top, y_true = on_host(*in_memory(self.predict_topk(X, k), y_true))
        return precision_at_k(y_true, top)
