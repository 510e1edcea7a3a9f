"""scikit-learn estimators."""
