"""What the three estimators share: sparse input, label encoding, rollback, progress lines."""
import functools
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from ..utils._validation import check_two_classes


def unchanged_on_error(fit):
    """Decorator for an estimator's ``fit`` (or ``partial_fit``): a call that raises leaves
    the estimator's attributes as they were, so that a refit on bad input, or a fit whose
    solver fails, keeps the fitted model usable (validation sets ``n_features_in_``, and
    target encoding ``classes_``, before later checks fail)."""
    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        # lists (histories that a call appends to) are copied; arrays that a call updates
        # in place must be replaced by the call instead (see ExtremeSoftmaxSGD)
        state = {k: v.copy() if isinstance(v, list) else v for k, v in self.__dict__.items()}
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(state)
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
        check_classification_targets(y)


class SparsekitClassifier(ClassifierMixin, BaseEstimator):
    """Base of the estimators: takes sparse input, encodes labels, prints progress."""

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
        classes, codes = np.unique(y, return_inverse=True)
        check_two_classes(classes)
        self.classes_ = classes
        return codes

    def _say(self, text):
        """One progress line, ``[ClassName] text``, when ``verbose`` is set."""
        if self.verbose:
            print(f"[{type(self).__name__}] {text}")
