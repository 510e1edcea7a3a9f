"""sparsekit: sparse and scalable probabilistic linear models with the scikit-learn API.

Estimators
----------
SparsemaxClassifier
    Sparsemax regression and its polytope family (Martins & Astudillo 2016;
    Niculae & Martins, LP-SparseMAP).
SparsemaxClassifierCV
    The same with alpha chosen by cross-validation on warm-started paths.
L1LogisticOBA
    l1-regularized logistic regression by the orthant-based active-set method
    (Keskar 2017, chapter 2).
L1LogisticOBACV
    The same with C (and the elastic-net mixing) chosen by cross-validation on
    warm-started regularization paths.
ExtremeSoftmaxSGD
    Softmax regression with very many classes: Implicit SGD, U-max, One-vs-Each.

Subpackages: ``projections``, ``losses``, ``optimize``, ``metrics``, ``datasets``, ``gpu``
(CuPy, optional).
"""

from importlib import import_module as _import_module

__version__ = "0.1.0"

_LAZY_ATTRIBUTES = {
    "SparsemaxClassifier": "sparsekit.linear_model",
    "SparsemaxClassifierCV": "sparsekit.linear_model",
    "L1LogisticOBA": "sparsekit.linear_model",
    "L1LogisticOBACV": "sparsekit.linear_model",
    "ExtremeSoftmaxSGD": "sparsekit.linear_model",
    "l1_logistic_path": "sparsekit.linear_model",
}

__all__ = sorted(_LAZY_ATTRIBUTES) + [
    "datasets",
    "losses",
    "metrics",
    "optimize",
    "projections",
]


_SUBPACKAGES = ("datasets", "gpu", "linear_model", "losses", "metrics", "optimize",
                "projections")


def __getattr__(name):
    if name in _LAZY_ATTRIBUTES:
        return getattr(_import_module(_LAZY_ATTRIBUTES[name]), name)
    if name in _SUBPACKAGES:  # sparsekit.gpu never imports CuPy by itself
        return _import_module(f"sparsekit.{name}")
    raise AttributeError(f"module 'sparsekit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_ATTRIBUTES) | set(_SUBPACKAGES))
