"""The duality gap of ℓ1 / elastic-net linear models, from what any datafit computes.

For F(w) = C n f(w) + a‖w‖₁ + (ρ/2)‖w‖² with f the weighted mean loss of margins
(logistic or multinomial), the dual point built from the residuals θᵢ = C sᵢ (−∂ℓ/∂mᵢ) has
Xᵀθ = −C n ∇_w f: the gradient gives the dual's constraint (ρ = 0: θ is scaled by α into
‖Xᵀθ‖_∞ ≤ a) or the elastic net's conjugate g*(Xᵀθ) = Σ (|·| − a)₊² / (2ρ), and
the datafit's ``dual_terms(x, α)`` the conjugate of the loss at θ (with the intercept b
held fixed). The gap (F − D) / F then needs one gradient and one pass over the rows: what a
datafit over partitioned data reduces as easily as its value.
"""
import numpy as np


def relative_duality_gap(datafit, x, C, l1=1.0, l2=0.0):
    """(F(x) − D(θ)) / F(x) ≥ (F(x) − min F) / F(x) over the weights (intercepts fixed).

    Parameters
    ----------
    datafit : Logistic, Multinomial or a datafit of their protocol over partitions
        Without ridge: the elastic net's ridge part is ``l2`` here.
    x : ndarray
        Parameters (weights, then intercepts).
    C : float
        C times the mean sample weight (the datafit's weights have mean 1).
    l1, l2 : float
        The penalty l1‖w‖₁ + (l2/2)‖w‖², l1 > 0 and l2 ≥ 0 (scikit-learn's elastic net of
        ``l1_ratio`` r: r and 1 − r).
    """
    f, grad = datafit.value_grad(x)
    penalized = datafit.penalty_weights > 0
    w = x[penalized]
    scale = C * datafit.n_samples
    primal = scale * f + l1 * float(np.abs(w).sum()) + 0.5 * l2 * float(w @ w)
    G = scale * np.abs(grad[penalized])
    if l2 <= 0.0:
        alpha, conjugate = 1.0 / max(1.0, float(G.max(initial=0.0)) / l1), 0.0
    else:
        alpha = 1.0
        conjugate = float((np.maximum(G - l1, 0.0) ** 2).sum()) / (2 * l2)
    dual = scale * datafit.dual_terms(x, alpha) - conjugate
    return (primal - dual) / primal
