"""scikit-learn estimators (and the multi-label helpers of ExtremeSoftmaxSGD)."""
from ..metrics import precision_at_k
from ..utils._labels import first_label
from ._sparsemax import SparsemaxClassifier
from ._sparsemax_cv import SparsemaxClassifierCV
from ._extreme_softmax import ExtremeSoftmaxSGD
from ._l1_logistic import L1LogisticOBA
from ._l1_path import l1_logistic_path
from ._l1_logistic_cv import L1LogisticOBACV

__all__ = ["SparsemaxClassifier", "SparsemaxClassifierCV", "ExtremeSoftmaxSGD", "first_label",
           "precision_at_k", "L1LogisticOBA", "L1LogisticOBACV", "l1_logistic_path"]
