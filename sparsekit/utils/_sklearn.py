"""scikit-learn version differences that the peers' configurations depend on."""
import sklearn


def l1_penalty():
    """``LogisticRegression`` keyword arguments for a pure ℓ1 penalty: ``l1_ratio=1.0`` from
    scikit-learn 1.8 (which deprecates ``penalty``), ``penalty="l1"`` before (where
    ``l1_ratio`` alone is ignored and the fit would be ℓ2)."""
    major, minor = (int(part) for part in sklearn.__version__.split(".")[:2])
    return {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}
