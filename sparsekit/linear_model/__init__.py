"""scikit-learn estimators."""
from ._extreme_softmax import ExtremeSoftmaxSGD
