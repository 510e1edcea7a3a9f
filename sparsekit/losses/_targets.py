"""Membership check of Fenchel-Young targets, shared by the CPU and the CuPy losses.

``L(z; y) >= 0`` with equality iff ``proj(z) = y`` holds only for targets inside the
polytope (Blondel et al. 2020), so every loss checks its targets first.
"""
import warnings

import numpy as np
import scipy.sparse as sp

# sum constraint on w.y per polytope: (relation, right-hand side)
_SUM_BOUNDS = {
    "simplex": ("eq", "radius"),
    "capped_simplex": ("eq", "budget"),
    "knapsack": ("le", "budget"),
    "budget": ("le", "budget"),
    "at_most_one": ("le", "one"),
    "at_least_one": ("ge", "one"),
    "box": (None, None),
}


def _first_row(xp, mask):
    bad = xp.flatnonzero(mask)
    return int(bad[0]) if bad.size else None


def check_target(Y, polytope, budget, weights, xp):
    """Raise ``ValueError`` unless every row of ``Y`` lies in the polytope.

    ``xp`` is the array module of ``Y`` (NumPy or CuPy); the tolerance is 1e-6 for float64
    targets and 1e-4 for float32.
    """
    tol = 1e-6 if Y.dtype == xp.float64 else 1e-4
    i = _first_row(xp, (Y < -tol).any(axis=1))
    if i is not None:
        raise ValueError(f"Y row {i} has negative entries: targets must lie in the "
                         f"{polytope!r} polytope (all its points are >= 0)")
    if polytope != "simplex":
        i = _first_row(xp, (Y > 1 + tol).any(axis=1))
        if i is not None:
            raise ValueError(f"Y row {i} has entries > 1: targets must lie in the "
                             f"{polytope!r} polytope (inside [0, 1]^K)")
    kind, what = _SUM_BOUNDS[polytope]
    if kind is None:
        return
    rhs = 1.0 if what == "one" else budget
    sums = Y.astype(xp.float64) @ xp.asarray(weights, dtype=xp.float64)
    slack = tol * max(1.0, rhs)
    mask, rel = {"eq": (xp.abs(sums - rhs) > slack, "!="), "le": (sums > rhs + slack, ">"),
                 "ge": (sums < rhs - slack, "<")}[kind]
    i = _first_row(xp, mask)
    if i is not None:
        hint = (" (the budget must be at least each row's label count)"
                if polytope in ("budget", "knapsack") else "")
        raise ValueError(f"Y row {i} is outside the {polytope!r} polytope: its (weighted) "
                         f"sum is {float(sums[i]):.6g} {rel} {rhs:.6g}{hint}")


def check_flipped_target(Y2, polytope, budget, weights, xp, columns):
    """:func:`check_target` on targets whose ``columns`` were flipped (``y -> 1 - y``,
    ``negated=``), with an error that names the flip."""
    try:
        check_target(Y2, polytope, budget, weights, xp)
    except ValueError as exc:
        if not columns:
            raise
        raise ValueError(
            f"targets must lie in the {polytope!r} polytope with columns {columns} negated, "
            f"i.e. Y with those columns replaced by 1 - Y must lie in {polytope!r}; "
            f"on those flipped targets: {exc}") from None


#: tolerance of the target checks of the estimator (entries in [0, 1], simplex row sums)
TARGET_TOL = 1e-6


def check_target_entries(values):
    """Raise unless every 2-D target entry is finite and in [0, 1] (up to rounding)."""
    if not np.isfinite(values).all():
        raise ValueError("y contains NaN or infinity.")
    if values.size and (values.min() < -TARGET_TOL or values.max() > 1 + TARGET_TOL):
        raise ValueError("Target entries must lie in [0, 1].")


def label_set_matrix(y):
    """2-D targets ``y`` (a label-indicator or proportion matrix, dense or sparse) as a
    float64 CSR matrix, its duplicates summed, its zeros dropped and its entries checked to
    lie in [0, 1] (clipped there: rounding noise within the tolerance), and whether they
    are label sets (every stored entry 1) rather than proportions."""
    try:
        Y = sp.csr_matrix(y, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:      # text: 'yes', 'no'
        raise ValueError(f"2-D targets are label-indicator (0/1) or proportion matrices of "
                         f"numbers ({exc}): map text such as yes/no to 1/0") from None
    Y.sum_duplicates()
    Y.eliminate_zeros()
    check_target_entries(Y.data)
    np.clip(Y.data, 0.0, 1.0, out=Y.data)
    return Y, bool(np.all(Y.data == 1))


def leaves_out_unlabelled(polytope, target_type, columns=()):
    """Whether :func:`polytope_targets` leaves the rows without an active label out of
    the fit (label sets on the simplex, none negated: their target is undefined)."""
    return polytope == "simplex" and target_type == "multilabel" and not columns


def warn_unlabelled(n_rows):
    """The warning that ``n_rows`` rows without an active label are left out of the fit."""
    warnings.warn(f"{n_rows} rows of y have no active label; they are left out of the fit "
                  "(their sparsemax target is undefined).", UserWarning)


def flip_columns(Y, columns):
    """CSR ``Y`` with ``1 - Y`` on ``columns``: only those columns become dense (n x |N|
    values), the others keep their sparsity."""
    Y = sp.csc_matrix(Y)
    flipped = sp.csc_matrix(1.0 - Y[:, columns].toarray())
    rest = np.setdiff1d(np.arange(Y.shape[1]), columns)
    order = np.argsort(np.concatenate([rest, columns]))
    out = sp.hstack([Y[:, rest], flipped], format="csc")[:, order].tocsr()
    out.eliminate_zeros()
    return out


def polytope_targets(Y, polytope, budget, target_type, columns=(), warn=True, first_row=0):
    """The fit's targets: ``flip(Y)`` (CSR), checked against the polytope, and a mask of
    the rows kept.

    On the simplex, multi-label rows become uniform over their active labels (rows with
    none are left out, with a ``UserWarning`` when ``warn``), except with negated columns,
    where 0/1 rows are points of the flipped simplex as they are. An error names the rows
    outside the polytope counting ``Y``'s first row as ``first_row`` (a partition's place
    in the data).
    """
    if columns:
        Y = flip_columns(Y, columns)

    def require(ok, message):
        if not np.all(ok):
            rows = np.flatnonzero(~np.asarray(ok)) + first_row
            where = "this polytope" if not columns else (
                f"the {polytope!r} polytope with columns {columns} negated (y with 1 - y on "
                f"those columns must lie in {polytope!r}; checked on those flipped rows)")
            raise ValueError(f"Invalid target for {where}: {message} (rows "
                             f"{rows[:5].tolist()}{'...' if rows.size > 5 else ''}).")

    sums = np.asarray(Y.sum(axis=1)).ravel()
    keep = np.ones(Y.shape[0], dtype=bool)
    if polytope == "simplex":
        if leaves_out_unlabelled(polytope, target_type, columns):
            keep = sums > 0
            if warn and not keep.all():
                warn_unlabelled(int(np.sum(~keep)))
            Y = (sp.diags(1.0 / np.where(keep, sums, 1.0)) @ Y).tocsr()
        else:
            hint = " (a 0/1 row: exactly one active label)" if columns else ""
            require(np.abs(sums - 1) <= TARGET_TOL, "proportion rows must sum to 1" + hint)
    elif polytope == "budget":
        require(sums <= budget + TARGET_TOL, f"a target row sums to more than budget={budget:g}")
    elif polytope == "at_most_one":
        require(sums <= 1 + TARGET_TOL, "a target row sums to more than 1 "
                "(polytope='at_most_one')")
    elif polytope == "at_least_one":
        require(sums >= 1 - TARGET_TOL, "a target row sums to less than 1 "
                "(polytope='at_least_one')")
    return Y, keep
