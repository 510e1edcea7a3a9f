"""Named projections onto the capped simplex, box, budget, knapsack, at-least-one and
at-most-one polytopes (Niculae & Martins 2020, appendix D; Pardalos & Kovoor 1990 for the
knapsack)."""
from ._checks import gpu_function
from ._dispatch import project


def _named(name, polytope, Z, device, **params):
    gpu = gpu_function(name, Z, device)
    if gpu is not None:
        return gpu(Z, **params)
    return project(Z, polytope, **params)


def project_capped_simplex(Z, budget, weights=None, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum_i w_i p_i = budget}.

    Pardalos-Kovoor / Prop. 5: ``p = clip(z - tau w, 0, 1)`` with the scalar tau found
    exactly by sorting the 2K breakpoints (O(K log K)).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
    budget : float with 0 <= budget <= sum(weights)
    weights : array-like of shape (n_classes,), positive, default all ones
    device : {None, "cpu", "cuda"}
    """
    return _named("project_capped_simplex", "capped_simplex", Z, device,
                  budget=budget, weights=weights)


def project_box(Z, *, device=None):
    """Projection of each row onto the box [0, 1]^K: ``clip(z, 0, 1)`` (K1)."""
    return _named("project_box", "box", Z, device)


def project_budget(Z, budget, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum p <= budget} (clip, then sifting)."""
    return _named("project_budget", "budget", Z, device, budget=budget)


def project_knapsack(Z, budget, weights=None, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum_i c_i p_i <= budget}, costs
    ``c = weights`` (positive; all ones gives :func:`project_budget`); Alg. 4 (sifting)."""
    return _named("project_knapsack", "knapsack", Z, device, budget=budget, weights=weights)


def project_at_least_one(Z, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum p >= 1} (OR factor, Alg. 3)."""
    return _named("project_at_least_one", "at_least_one", Z, device)


def project_at_most_one(Z, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum p <= 1} (AtMostOne, Eq. 83)."""
    return _named("project_at_most_one", "at_most_one", Z, device)
