"""Membership check of Fenchel-Young targets, shared by the CPU and the CuPy losses.

``L(z; y) >= 0`` with equality iff ``proj(z) = y`` holds only for targets inside the
polytope (Blondel et al. 2020), so every loss checks its targets first.
"""

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
