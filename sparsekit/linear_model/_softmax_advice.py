"""What an ExtremeSoftmaxSGD fit says when its steps were too large: an overflow's error, a
divergence's warning, and the columns in other units that set the steps; each names what
to change (X's scale, its columns' units, or the step)."""
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sparsekit.utils._rows import entry_scales, weighted_column_stats

#: an end of the epochs above the starting training NLL by at most this share of it is
#: told as such, not as a divergence: on labels that X barely predicts (300 Gaussian rows of
#: 10 columns, random binary labels) 8 of 20 default fits ended 0.2-2.5% above it, and a
#: column in other units that sets every step 0.5%, while the steps measured too large for
#: signal-rich data end 30% above it and more
SMALL_RISE = 0.1

#: a diverged fit at ``learning_rate="auto"`` blames the step rather than X's scale when
#: no row's squared norm exceeds this many times the median row's
SIMILAR_ROWS = 10


def scale_hint(xsq, learning_rate, intercept):
    """What to do about a step too large for the data: the cause is usually the scale of X,
    unless a given ``learning_rate`` is too large for rows of squared norms up to 1
    (``xsq`` counts the intercept's constant feature when ``intercept``)."""
    top = xsq.max(initial=0.0)
    if (learning_rate != "auto" and top <= 1.0 + intercept
            and top <= SIMILAR_ROWS * (float(np.median(xsq)) if xsq.size else 0.0)):
        return (f"The rows of X have squared norms of at most {top - intercept:.3g}, so "
                "rescaling them would not shrink the steps: lower learning_rate "
                f"({learning_rate:g} here) or leave it to 'auto', which scales the step to "
                "the rows")
    return ("The steps grow with the squared norms of the rows of X, up to "
            f"{top:.3g} here: rescale X (e.g. "
            "sklearn.preprocessing.Normalizer) or lower learning_rate")


def overflow_error(method, eta, xsq, learning_rate, intercept):
    """The ValueError of a pass of ``method`` at step ``eta`` that overflowed."""
    return ValueError(
        f"Floating-point overflow in method={method!r} with learning rate "
        f"{eta:.3g}; the estimator is left as it was before this call. "
        + scale_hint(xsq, learning_rate, intercept) + (
            " (vanilla 'sgd' on the double sum is unstable) or use "
            "method='implicit'." if method != "implicit"
            else " or use batch_size=1 (one proximal step at a time stays finite)."))


def divergence_hint(xsq, learning_rate, learning_rate_, intercept, units_column=None):
    """What to change after a divergence: the columns' units where a column in other
    units set the steps (``units_column``, its name: the passes ran on X as given); X's
    scale where the steps follow it (a given ``learning_rate``, or rows much longer than
    the median row, whose steps "auto" leaves large); else the step itself, which "auto"
    already scaled to the rows (to ``learning_rate_``)."""
    if units_column is not None:
        return (f"The passes ran on X as given, whose column {units_column} is in "
                "other units and sets every step: standardize the columns "
                "(StandardScaler, or MaxAbsScaler for sparse X)")
    median = float(np.median(xsq)) if xsq.size else 0.0
    if (learning_rate != "auto" or not median > 0
            or xsq.max() > SIMILAR_ROWS * median):
        return scale_hint(xsq, learning_rate, intercept)
    return (f"learning_rate='auto' scaled the step to the rows, whose squared norms are "
            f"at most {xsq.max() / median:.3g} times their median, so rescaling X would "
            f"not change it: the first epochs' steps overshoot on these rows. Lower "
            f"learning_rate (this fit's learning_rate_ is {learning_rate_:.3g}) or "
            f"give more epochs (the step shrinks by lr_decay each epoch)")


def warn_if_diverged(method, first, last, hint, shrink=1.0, returned=None):
    """ConvergenceWarning, ending with ``hint()``, when the epochs' training NLL ``last``
    ended above where it started (a divergence if by more than SMALL_RISE of it), naming
    the ``shrink`` that followed (and ``returned``, the NLL it left)."""
    if not last > first:
        return
    shrunk = ""
    if shrink < 1.0:
        shrunk = (f" (the weights fit returns are scaled by shrink_={shrink:.3g}"
                  + (f": NLL {returned:.4g})" if returned is not None else ")"))
    name = f"ExtremeSoftmaxSGD(method={method!r})"
    said = (f"{name} diverged: its training NLL rose from {first:.4g} to "
            f"{last:.4g}{shrunk}. " if not last <= (1 + SMALL_RISE) * first else
            f"{name} ended its epochs above the training NLL it started from, "
            f"{first:.4g} to {last:.4g}{shrunk}. ")
    warnings.warn(said + hint() + ".", ConvergenceWarning)


def column_scales(X, sample_weight, alpha, hashed, column_name):
    """The divisors of X's columns that the passes run on, or None, and the name of the
    column in other units that the passes keep (None when there is none, or when it is
    divided).

    Where X's columns are in other units (:func:`~sparsekit.utils._rows.entry_scales`:
    some column's nonzero entries have a mean square over 1000 times the median column's,
    weighted as the rows), the steps, which follow the rows' norms, would follow that
    column, and the others would barely move: the passes then run on X with each column
    of larger entries than the median column's divided by their root mean square over the
    median's (capped to X's dtype), and their weights are the coefficients times those
    divisors. The objective does not change with alpha = 0; with ``alpha > 0`` (whose
    ridge is on the coefficients) or ``hashed`` weights (shared by columns) the passes run
    on X as given and a UserWarning names the column (``column_name(j)``)."""
    top = sample_weight.max(initial=0.0)
    scales = entry_scales(*weighted_column_stats(X, sample_weight / top)) if top > 0 else None
    if scales is None:
        return None, None
    if alpha > 0 or hashed:
        column = int(np.argmax(scales))
        name = column_name(column)
        why = "alpha > 0" if alpha > 0 else "n_weights (hashed weights)"
        warnings.warn(
            f"X's columns are in different units: column {name}'s nonzero entries have "
            f"a root mean square {scales[column]:.3g} times the median column's. The "
            "steps follow the rows' norms, which such a column sets, and the other "
            f"columns' weights learn that many times more slowly. With {why} the passes "
            "run on X as given: standardize the columns (StandardScaler, or "
            "MaxAbsScaler for sparse X).", UserWarning)
        return None, name
    return np.minimum(scales, np.finfo(X.dtype).max).astype(X.dtype), None
