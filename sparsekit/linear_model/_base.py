"""What the three estimators share: sparse input, label encoding, rollback, progress lines
and scikit-learn's callbacks."""
import functools
import inspect
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.callback import CallbackSupportMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.multiclass import check_classification_targets

from ..utils._validation import check_two_classes, raise_unchecked_nonfinite
from ._dask_input import in_memory
from ._device_input import on_host


def unchanged_on_error(fit):
    """Decorator for an estimator's ``fit(X, y, sample_weight=None, ...)`` (or
    ``partial_fit``): a call that raises leaves the estimator's attributes as they were, so
    that a refit on bad input, or a fit whose solver fails, keeps the fitted model usable
    (validation sets ``n_features_in_``, and target encoding ``classes_``, before later
    checks fail); a failure that NaN or infinite values caused under ``assume_finite=True``
    says so (:func:`~sparsekit.utils._validation.raise_unchecked_nonfinite`)."""
    signature = inspect.signature(fit)

    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        # lists (histories that a call appends to) are copied; arrays that a call updates
        # in place must be replaced by the call instead (see ExtremeSoftmaxSGD)
        state = {k: v.copy() if isinstance(v, list) else v for k, v in self.__dict__.items()}
        try:
            return fit(self, *args, **kwargs)
        except BaseException as error:
            self.__dict__.clear()
            self.__dict__.update(state)
            try:
                given = signature.bind_partial(self, *args, **kwargs).arguments
            except TypeError:                  # arguments the call itself refused
                given = {}
            raise_unchecked_nonfinite(self, {name: given[name] for name in ("X", "sample_weight")
                                             if name in given}, error)
            raise
    return guarded


def check_labels(y, many_classes=False):
    """scikit-learn's check that ``y`` holds classification labels; ``many_classes``
    silences its warning that more than half of the samples have a class of their own
    (the use case of extreme classification)."""
    with warnings.catch_warnings():
        if many_classes:
            warnings.filterwarnings("ignore", message="The number of unique classes is "
                                    "greater than 50%", category=UserWarning)
        try:
            check_classification_targets(y)
        except (TypeError, ValueError) as error:
            # np.unique's "'<' not supported between instances of 'NoneType' and 'str'"
            kinds = {type(label) for label in np.asarray(y, dtype=object).ravel()}
            if len(kinds) < 2 or all(issubclass(kind, numbers.Number) for kind in kinds):
                raise
            names = ", ".join(sorted(kind.__name__ for kind in kinds))
            raise ValueError(f"y mixes labels of types {names}: give every row a "
                             f"label of one type (None or NaN is a missing label: drop "
                             f"those rows)") from error


def _weights_of_classes(class_weight, classes):
    """The weight of each of ``classes`` in the dict ``class_weight`` (1 where it names
    none), as scikit-learn's ``compute_class_weight`` reads it (a key equal to a class
    names it), with the key or the weight that is wrong named."""
    position = {label: k for k, label in enumerate(classes.tolist())}
    unknown = [label for label in class_weight if label not in position]
    if unknown:
        known = ", ".join(map(repr, classes[:10].tolist())) + (", ..." if classes.size > 10
                                                               else "")
        raise ValueError(f"class_weight names {', '.join(map(repr, unknown[:5]))}, not a "
                         f"class of y (its classes: {known})")
    weights = np.ones(classes.size)
    for label, weight in class_weight.items():
        try:
            weights[position[label]] = weight
        except (TypeError, ValueError):
            raise ValueError(f"class_weight[{label!r}] must be a number, got "
                             f"{weight!r}") from None
    return weights


class SparsekitClassifier(CallbackSupportMixin, ClassifierMixin, BaseEstimator):
    """Base of the estimators: takes sparse input, encodes labels, prints progress, and
    reports its fit to scikit-learn's callbacks (``set_callbacks``, e.g. ``ProgressBar``):
    the fit is a task whose subtasks are the solver's iterations, epochs or binary
    problems."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _encode_labels(self, y, many_classes=False):
        """Set ``classes_`` (sorted) and return the codes of ``y`` in it.

        ``y`` must be 1-D classification labels with at least two classes
        (``many_classes``: see :func:`check_labels`).
        """
        check_labels(y, many_classes)
        # np.unique's return_inverse sorts stably: 20x the time of sorting and searching
        classes = np.unique(y)
        codes = np.searchsorted(classes, y)
        check_two_classes(classes)
        self.classes_ = classes
        return codes

    def _class_weights(self, classes, totals):
        """The weight of each class (``class_weight``; ones when None), checked; ``totals``
        are the classes' total sample weights ("balanced" divides by them)."""
        if self.class_weight is None:
            return np.ones(classes.size)
        if self.class_weight == "balanced":
            if not np.all(totals > 0):
                raise ValueError("class_weight='balanced' divides by each class's total "
                                 "sample weight, and class "
                                 f"{classes[np.argmin(totals > 0)].tolist()!r} has none")
            cw = totals.sum() / (classes.size * totals)
        else:
            cw = _weights_of_classes(self.class_weight, classes)
        if not np.all(np.isfinite(cw) & (cw >= 0)):
            raise ValueError(f"class_weight must be finite and non-negative, got {cw}")
        return cw

    def _class_weighted(self, sample_weight, codes):
        """``sample_weight`` times the ``class_weight`` of each row's class (``codes`` into
        ``classes_``; "balanced" from the classes' totals of ``sample_weight``)."""
        if self.class_weight is None:
            return sample_weight
        totals = np.bincount(codes, weights=sample_weight, minlength=self.classes_.size)
        weighted = sample_weight * self._class_weights(self.classes_, totals)[codes]
        if not weighted.max(initial=0.0) > 0:
            raise ValueError("every sample has weight 0 (sample_weight times class_weight)")
        return weighted

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict`` on the given rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test samples, in any form ``predict`` takes. With a dask array or DataFrame
            the predictions are made on the workers, a row block at a time, and come back
            with the labels (and weights) of dask collections in one computation; with a
            CuPy array or cupyx sparse matrix they are made on its device and the mean is
            taken on the host.
        y : array-like of shape (n_samples,)
            True labels (a dask array or Series, or a CuPy array, too).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in the mean (a dask array or Series, or a CuPy array,
            too).

        Returns
        -------
        score : float
            The (weighted) fraction of rows whose label is predicted.
        """
        predicted, y, sample_weight = on_host(*in_memory(self.predict(X), y, sample_weight))
        return self._scored(y, predicted, sample_weight)

    def _scored(self, y, predicted, sample_weight):
        """The score of the labels ``predicted`` against the true ``y`` (both in memory):
        accuracy."""
        return accuracy_score(y, predicted, sample_weight=sample_weight)

    def _column_name(self, j):
        """Column ``j`` of X as messages name it: its feature name (quoted) when X had
        names, else its position."""
        if hasattr(self, "feature_names_in_"):
            return repr(str(self.feature_names_in_[j]))
        return str(j)

    def _say(self, text):
        """One progress line, ``[ClassName] text``, when ``verbose`` is set."""
        if self.verbose:
            print(f"[{type(self).__name__}] {text}")

    def _begin_fit_task(self, X, y, max_subtasks, sample_weight=None):
        """The root callback context of this fit, begun (call once, early in ``fit``)."""
        context = self._init_callback_context(max_subtasks=max_subtasks)
        context.call_on_fit_task_begin(estimator=self, X=X, y=y,
                                       metadata=_metadata(sample_weight))
        return context

    def _end_fit_task(self, context, X, y, sample_weight=None):
        context.call_on_fit_task_end(estimator=self, X=X, y=y,
                                     metadata=_metadata(sample_weight),
                                     reconstruction_attributes={})

    def _begin_subtask(self, context, name, X=None, y=None, sample_weight=None):
        """A subtask of ``context``, begun: the body of an iteration, epoch or problem
        (shown ``X``, ``y`` and ``sample_weight``, those given to ``fit``, as its root)."""
        return self._begin_task(context.subcontext(task_name=name), X, y, sample_weight)

    def _begin_task(self, task, X=None, y=None, sample_weight=None):
        """Begin ``task``, a subcontext made beforehand, as :meth:`_begin_subtask` does."""
        task.call_on_fit_task_begin(estimator=self, X=X, y=y,
                                    metadata=_metadata(sample_weight))
        return task

    def _end_subtask(self, task, X=None, y=None, sample_weight=None, reconstruction=None):
        """End ``task``; True when a callback asks the fit to stop. ``reconstruction``: a
        callable returning the attributes of the model at the subtask's end (called only
        when a callback needs a fitted estimator); scikit-learn's ScoringMonitor scores that
        model on ``X`` and ``y`` weighted by ``sample_weight``."""
        return bool(task.call_on_fit_task_end(estimator=self, X=X, y=y,
                                              metadata=_metadata(sample_weight),
                                              reconstruction_attributes=reconstruction))


def _metadata(sample_weight):
    return None if sample_weight is None else {"sample_weight": sample_weight}
