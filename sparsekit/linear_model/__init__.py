"""scikit-learn estimators."""
from ._sparsemax import SparsemaxClassifier
from ._extreme_softmax import ExtremeSoftmaxSGD
