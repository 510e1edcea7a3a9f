"""Input checks shared by the estimators (sparse structures: test_sparse_input_structure)."""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from sparsekit import (ExtremeSoftmaxSGD, L1LogisticOBA, L1LogisticOBACV, SparsemaxClassifier,
                       SparsemaxClassifierCV)
from sparsekit.utils._validation import check_column_kinds

ESTIMATORS = [L1LogisticOBA, SparsemaxClassifier, ExtremeSoftmaxSGD,
              lambda: L1LogisticOBACV(Cs=2, cv=2), lambda: SparsemaxClassifierCV(alphas=2, cv=2)]


def _table(column):
    return pd.DataFrame({"a": np.arange(8.0), "b": np.arange(8.0) % 3, "when": column})


@pytest.mark.parametrize("column, says", [
    (pd.date_range("2020", periods=8), r"column 'when' holds dates \(datetime64"),
    (pd.date_range("2020", periods=8, tz="UTC"), r"holds dates \(datetime64\[.*, UTC\]\)"),
    (pd.to_timedelta(np.arange(8), unit="s"), r"holds durations \(timedelta64.*total_seconds"),
])
@pytest.mark.parametrize("make", ESTIMATORS)
def test_dates_and_durations_are_named_at_fit_and_predict(make, column, says):
    """A DataFrame column of dates or durations is refused naming the column and what to
    do (scikit-learn's conversion reports NumPy's "DType could not be promoted")."""
    y = np.arange(8) % 2
    warnings.simplefilter("ignore", ConvergenceWarning)     # 8 rows, random labels
    with pytest.raises(ValueError, match=says) as refused:
        make().fit(_table(column), y)
    assert "takes numbers: convert it first" in str(refused.value)
    model = make().fit(_table(np.arange(8.0)), y)
    with pytest.raises(ValueError, match=says):
        model.predict(_table(column))


def test_time_arrays_and_arrow_timestamps_are_named():
    dates = np.array(pd.date_range("2020", periods=4)).reshape(-1, 1)
    with pytest.raises(ValueError, match=r"^X holds dates .* convert them first"):
        check_column_kinds(dates, "L1LogisticOBA")
    for fine in (np.zeros((3, 2)), _table(np.arange(8.0)), [[1, 2]], None):
        check_column_kinds(fine, "L1LogisticOBA")
    pytest.importorskip("pyarrow")
    arrow = _table(pd.date_range("2020", periods=8)).astype({"when": "timestamp[ns][pyarrow]"})
    with pytest.raises(ValueError, match=r"column 'when' holds dates \(timestamp\[ns\]"):
        check_column_kinds(arrow, "L1LogisticOBA")


@pytest.mark.parametrize("column", [["Oslo", "Rome"] * 4,
                                    pd.Categorical(["Oslo", "Rome"] * 4),
                                    pd.array(["1", "2", "3", "Oslo"] * 2, dtype="string")])
@pytest.mark.parametrize("make", ESTIMATORS)
def test_text_columns_are_named(make, column):
    """A DataFrame's text column is refused naming it, its first value that is not a
    number and the encoders (scikit-learn's conversion said "could not convert string to
    float: 'Oslo'"); numbers written as text, categories of numbers and gaps pass as they
    do in scikit-learn."""
    y = np.arange(8) % 2
    with pytest.raises(ValueError, match=r"X's column 'when' holds text \('Oslo'\); .* "
                                         r"takes numbers: encode it first \(OneHotEncoder"):
        make().fit(_table(column), y)
    for numbers in (["1", "2.5"] * 4, pd.Categorical([1, 2] * 4), [True, False] * 4):
        check_column_kinds(_table(pd.Series(numbers, dtype=object)), "L1LogisticOBA")
    check_column_kinds(_table(["1", None] * 4), "L1LogisticOBA")


@pytest.mark.parametrize("make", ESTIMATORS)
def test_polars_frames_fit_as_pandas_frames_and_their_text_is_named(make):
    """A polars DataFrame fits and predicts as the pandas frame of its values (scikit-learn
    converts it; its column names kept); a text or categorical column is refused naming
    it, numbers written as text pass."""
    pl = pytest.importorskip("polars")
    table = _table(np.arange(8.0) * 1.5)
    y = np.arange(8) % 2
    warnings.simplefilter("ignore", ConvergenceWarning)
    def seeded():
        est = make()
        return est.set_params(random_state=0) if "random_state" in est.get_params() else est
    fitted = seeded().fit(pl.from_pandas(table), y)
    expected = seeded().fit(table, y)
    assert list(fitted.feature_names_in_) == ["a", "b", "when"]
    np.testing.assert_allclose(fitted.predict_proba(pl.from_pandas(table)),
                               expected.predict_proba(table), rtol=1e-12, atol=1e-12)
    for text in (pl.Series(["Oslo", "Rome"] * 4),
                 pl.Series(["1", "2", "Oslo", None] * 2, dtype=pl.Categorical)):
        with pytest.raises(ValueError, match=r"column 'when' holds text \('Oslo'\)"):
            make().fit(pl.from_pandas(table).with_columns(when=text), y)
    check_column_kinds(pl.from_pandas(table).with_columns(when=pl.Series(["1", "2.5"] * 4)))


@pytest.mark.parametrize("make", [L1LogisticOBA, SparsemaxClassifier])
def test_dates_in_a_dask_dataframe_are_named(make):
    """Refused from the frame's column types, before any partition is computed (the
    partitions' conversion raised NumPy's promotion error)."""
    dd = pytest.importorskip("dask.dataframe")
    X = dd.from_pandas(_table(pd.date_range("2020", periods=8)), npartitions=2)
    y = dd.from_pandas(pd.Series(np.arange(8) % 2), npartitions=2)
    with pytest.raises(ValueError, match="column 'when' holds dates"):
        make().fit(X, y)


@pytest.mark.parametrize("make", ESTIMATORS + [
    lambda: SparsemaxClassifier(solver="sdca"), lambda: L1LogisticOBA(multiclass="multinomial"),
    lambda: ExtremeSoftmaxSGD(method="implicit")])
@pytest.mark.parametrize("layout", ["dense", "csr", "float32", "frame"])
@pytest.mark.parametrize("value, says", [(np.nan, "contains NaN"), (np.inf, "contains infinity")])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NumPy's, on the way to the error
def test_nan_or_inf_under_assume_finite_is_named_when_a_fit_fails(make, layout, value, says):
    """``sklearn.set_config(assume_finite=True)`` skips scikit-learn's check of NaN and
    infinite values; a fit on such X then failed with the solver's view of it ("X's nonzero
    entries are so small that their squares underflow", "f_grad(x0) is not finite", "w = 0
    is optimal for every C", a learning rate that overflows). It now says what it is."""
    import scipy.sparse as sp
    from sklearn import config_context
    from sklearn.datasets import load_iris

    def laid_out(X):
        return {"dense": X, "csr": sp.csr_matrix(X), "float32": X.astype(np.float32),
                "frame": pd.DataFrame(X, columns=list("abcd"))}[layout]

    clean, y = load_iris(return_X_y=True)
    X = clean.copy()
    X[5, 2] = value
    X = laid_out(X)
    name = type(make()).__name__
    with config_context(assume_finite=True):
        with pytest.raises(ValueError, match=rf"^Input X {says}[^\n]* \(assume_finite=True"
                                             " skipped scikit-learn's check") as info:
            make().fit(X, y)
    assert info.value.__cause__ is not None          # the solver's own error, chained
    assert name in str(info.value) or value == np.inf   # scikit-learn's NaN advice
    weights = np.ones(len(y))
    weights[3] = value
    with config_context(assume_finite=True):
        with pytest.raises(ValueError, match=rf"^Input sample_weight {says}"):
            make().fit(laid_out(clean), y, sample_weight=list(weights))


def test_other_fit_errors_under_assume_finite_are_unchanged():
    """Only a failure on NaN or infinite input is renamed: finite X whose squares overflow
    keeps its own error, and so does an error raised before the fit (a bad argument)."""
    from sklearn import config_context

    X = np.array([[1e200, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.5]])
    y = np.array([0, 1, 0, 1])
    with config_context(assume_finite=True):
        for make in ESTIMATORS:
            try:
                make().fit(X, y)
            except ValueError as error:
                assert "assume_finite" not in str(error)
        with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
            L1LogisticOBA().fit(X, y, bogus=1)
