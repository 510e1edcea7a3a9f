"""scikit-learn estimators."""
from ._sparsemax import SparsemaxClassifier
from ._extreme_softmax import ExtremeSoftmaxSGD
from ._l1_logistic import L1LogisticOBA, l1_logistic_path
