"""What ExtremeSoftmaxSGD says when its steps were too large: the overflow's error, the
divergence's warning and its advice, and the columns in other units."""
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from sparsekit.linear_model._softmax_advice import (SIMILAR_ROWS, column_scales,
                                                    divergence_hint, overflow_error,
                                                    scale_hint, warn_if_diverged)


def test_scale_hint_blames_a_given_rate_only_on_short_similar_rows():
    unit = np.ones(10)                       # squared norms 1, no intercept
    assert scale_hint(unit, 5.0, False).startswith(
        "The rows of X have squared norms of at most 1, so rescaling them would not shrink "
        "the steps: lower learning_rate (5 here)")
    assert scale_hint(unit + 1.0, 5.0, True).startswith(       # the intercept's 1 counted
        "The rows of X have squared norms of at most 1,")
    for xsq, rate in ((unit, "auto"), (unit * 3.0, 5.0),       # "auto", or long rows
                      (np.r_[np.full(9, 0.01), 1.0], 5.0)):      # one row 100x the median
        assert scale_hint(xsq, rate, False) == (
            f"The steps grow with the squared norms of the rows of X, up to {xsq.max():.3g} "
            "here: rescale X (e.g. sklearn.preprocessing.Normalizer) or lower learning_rate")
    assert scale_hint(np.empty(0), "auto", False).endswith("up to 0 here: rescale X (e.g. "
                                                           "sklearn.preprocessing.Normalizer)"
                                                           " or lower learning_rate")


def test_overflow_error_names_the_step_and_the_stable_way_out():
    xsq = np.full(4, 50.0)
    said = str(overflow_error("sgd", 12.5, xsq, "auto", False))
    assert said.startswith("Floating-point overflow in method='sgd' with learning rate 12.5; "
                           "the estimator is left as it was before this call. The steps grow")
    assert said.endswith("(vanilla 'sgd' on the double sum is unstable) or use "
                         "method='implicit'.")
    said = str(overflow_error("implicit", 1e4, xsq, "auto", False))
    assert said.endswith("or use batch_size=1 (one proximal step at a time stays finite).")
    assert isinstance(overflow_error("ove", 1.0, xsq, 1.0, True), ValueError)


def test_divergence_hint_names_the_columns_units_then_xs_scale_then_the_step():
    similar = np.r_[np.ones(19), 2.0]
    assert divergence_hint(similar, "auto", 3.0, False, "'income'").startswith(
        "The passes ran on X as given, whose column 'income' is in other units")
    said = divergence_hint(similar, "auto", 3.0, False)
    assert said.startswith("learning_rate='auto' scaled the step to the rows, whose squared "
                           "norms are at most 2 times their median")
    assert "(this fit's learning_rate_ is 3)" in said
    long = np.r_[np.ones(19), 2.0 * SIMILAR_ROWS]               # a row past SIMILAR_ROWS
    for xsq, rate in ((long, "auto"), (similar, 0.5), (np.zeros(5), "auto")):
        assert divergence_hint(xsq, rate, 3.0, False) == scale_hint(xsq, rate, False)


def test_warn_if_diverged_tells_a_small_rise_from_a_divergence():
    asked = []

    def hint():
        asked.append(1)
        return "Lower it"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_diverged("implicit", 1.0, 1.0, hint)              # no rise: no warning
        warn_if_diverged("implicit", 1.0, 0.5, hint)
    assert not asked                                              # nor any advice computed
    with pytest.warns(ConvergenceWarning) as record:
        warn_if_diverged("sgd", 2.0, 2.1, hint)
        warn_if_diverged("sgd", 2.0, 3.0, hint, shrink=0.5)
        warn_if_diverged("sgd", 2.0, 3.0, hint, shrink=0.25, returned=1.5)
    said = [str(r.message) for r in record]
    assert said[0] == ("ExtremeSoftmaxSGD(method='sgd') ended its epochs above the training "
                       "NLL it started from, 2 to 2.1. Lower it.")
    assert said[1] == ("ExtremeSoftmaxSGD(method='sgd') diverged: its training NLL rose from "
                       "2 to 3 (the weights fit returns are scaled by shrink_=0.5). Lower it.")
    assert "(the weights fit returns are scaled by shrink_=0.25: NLL 1.5)" in said[2]
    assert len(asked) == 3


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_column_scales_divide_the_columns_in_other_units(sparse, dtype):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6)).astype(dtype)
    weights = np.ones(200)
    given = sp.csr_matrix(X) if sparse else X
    names = str
    assert column_scales(given, weights, 0.0, False, names) == (None, None)
    X[:, 2] *= 1e4
    given = sp.csr_matrix(X) if sparse else X
    scales, kept = column_scales(given, weights, 0.0, False, names)
    assert kept is None and scales.dtype == dtype and scales.shape == (6,)
    assert scales[2] == pytest.approx(1e4, rel=0.3) and np.all(scales >= 1.0)
    assert np.count_nonzero(scales > 10) == 1
    for alpha, hashed, why in ((0.1, False, "With alpha > 0"),
                               (0.0, True, "With n_weights (hashed weights)")):
        with pytest.warns(UserWarning, match=r"column 'c2''s nonzero entries have a root mean "
                                             r"square .* " + re.escape(why)
                                             + " the passes run on X as given"):
            assert column_scales(given, weights, alpha, hashed,
                                 lambda j: f"'c{j}'") == (None, "'c2'")
    assert column_scales(given, np.zeros(200), 0.0, False, names) == (None, None)
