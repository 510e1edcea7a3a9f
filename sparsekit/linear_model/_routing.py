"""What the cross-validating estimators share: the extra arguments of ``fit`` routed to the
splitter and to the scorer, as scikit-learn's ``LogisticRegressionCV`` routes them."""
import inspect
import warnings

import numpy as np
from sklearn.metrics import check_scoring, get_scorer
from sklearn.model_selection import check_cv
from sklearn.utils.metadata_routing import (MetadataRouter, MethodMapping,
                                            _raise_for_params, _routing_enabled,
                                            process_routing)
from sklearn.utils.validation import _check_method_params, check_is_fitted

from sparsekit.linear_model._dask_input import in_memory, with_known_lengths
from sparsekit.linear_model._device_input import on_host


class CVRoutingMixin:
    """``fit(X, y, sample_weight=None, **params)`` of a cross-validating estimator whose
    ``cv`` makes the folds and whose ``scoring`` scores the held-out rows.

    With scikit-learn's metadata routing enabled, ``params`` (``groups`` for a group
    splitter, say) and ``sample_weight`` go where they are requested: to ``cv.split`` and to
    the scorer. Without it, ``params`` are refused and ``sample_weight`` weighs the
    held-out rows' scores when the scorer takes it (scikit-learn's scorers do; a warning
    says when it does not), as scikit-learn's ``GridSearchCV`` weighs them. ``score`` scores
    with ``scoring`` too, as ``LogisticRegressionCV.score`` does.
    """

    def get_metadata_routing(self):
        """The metadata routing of this estimator: ``fit`` consumes ``sample_weight`` and
        passes metadata to ``cv.split`` and to the scorer's ``score``; ``score`` passes
        them to the scorer's ``score``.

        Returns
        -------
        routing : MetadataRouter
            See scikit-learn's user guide on metadata routing.
        """
        return (MetadataRouter(owner=self)
                .add_self_request(self)
                .add(splitter=self.cv,       # not check_cv's: it would consume a generator
                     method_mapping=MethodMapping().add(caller="fit", callee="split"))
                .add(scorer=get_scorer("accuracy" if self.scoring is None else self.scoring),
                     method_mapping=MethodMapping().add(caller="fit", callee="score")
                                                   .add(caller="score", callee="score")))

    def score(self, X, y, sample_weight=None, **params):
        """The score of ``scoring`` on the given rows, the score the grid point was chosen
        by (as scikit-learn's ``LogisticRegressionCV.score``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test samples, or a dask array or DataFrame: predicted on the workers, a row
            block at a time (where its partitions' lengths are unknown, as a DataFrame's
            are, a pass over them learns them first, for the scorer's metric). A CuPy array
            or cupyx sparse matrix is copied to the host, where the scorer's metric runs.
        y : array-like
            True labels for X, of the kind the model was fit on (a dask collection is
            computed, a CuPy array copied to the host).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows, given to the scorer (a dask collection is computed, a CuPy
            array copied to the host).
            Under scikit-learn's metadata routing (``enable_metadata_routing=True``) the
            scorer must request it.
        **params : dict
            Further metadata for the scorer; only under metadata routing.

        Returns
        -------
        score : float
            The scorer's value: larger is better (``neg_log_loss`` is the negative mean
            log loss). With ``scoring=None``, the classifier's accuracy.
        """
        check_is_fitted(self)
        _raise_for_params(params, self, "score")
        if _routing_enabled():
            if sample_weight is not None:
                params["sample_weight"] = sample_weight
            params = process_routing(self, "score", **params).scorer.score
        else:
            params = {} if sample_weight is None else {"sample_weight": sample_weight}
        if self.scoring is None:                 # the estimator's own: accuracy
            return super().score(X, y, **params)
        X, y, *values = on_host(with_known_lengths(X), *in_memory(y, *params.values()))
        return check_scoring(self, scoring=self.scoring)(self, X, y,
                                                         **dict(zip(params, values)))

    def _routed_folds(self, X, y, sample_weight, params, scorer):
        """(the folds of ``cv`` on X and y, the scorer's arguments for each held-out fold);
        ``scorer`` is the callable that will score the folds."""
        _raise_for_params(params, self, "fit")
        if _routing_enabled():
            routed = process_routing(self, "fit", sample_weight=sample_weight, **params)
            split, score = routed.splitter.split, routed.scorer.score
        else:
            split, score = {}, {}
            if sample_weight is not None and _takes_sample_weight(scorer):
                score = {"sample_weight": sample_weight}
            elif sample_weight is not None:      # as scikit-learn's grid search warns
                warnings.warn(f"The scoring {scorer} does not take sample_weight: the "
                              "held-out rows are scored unweighted.", UserWarning,
                              stacklevel=4)
        folds = list(check_cv(self.cv, y, classifier=True).split(X, y, **split))
        if not folds:
            raise ValueError(f"cv={self.cv!r} gave no (train, test) folds")
        for k, (_, test) in enumerate(folds):
            if len(test) == 0:
                raise ValueError(f"held-out fold {k} holds no sample: nothing to score")
        held_out = [_check_method_params(X, score, indices=test) for _, test in folds]
        for k, fold in enumerate(held_out):
            weights = fold.get("sample_weight")
            if weights is not None and not np.sum(weights) > 0:
                raise ValueError(f"held-out fold {k} weighs 0 in sample_weight: its score "
                                 "is undefined; use other folds (cv)")
        return folds, held_out


def _takes_sample_weight(scorer):
    """Whether ``scorer(estimator, X, y, sample_weight=...)`` weighs the rows."""
    if hasattr(scorer, "_accept_sample_weight"):     # scikit-learn's scorers say it
        return scorer._accept_sample_weight()
    try:
        return "sample_weight" in inspect.signature(scorer).parameters
    except (TypeError, ValueError):
        return False
