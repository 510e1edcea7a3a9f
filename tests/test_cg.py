"""steihaug_cg, the CG of OBA and Newton-CG (OBA's trust-region cases are in test_oba.py)."""
import numpy as np
import pytest

import sparsekit.optimize._cg as cgm
from sparsekit.losses._logistic_datafit import _ExplicitHessian
from sparsekit.optimize._cg import steihaug_cg


def test_conjugate_gradient_solves_an_spd_system():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    A = Q @ np.diag(np.logspace(0, 3, 12)) @ Q.T
    g = rng.standard_normal(12)
    x, _, n_cg = steihaug_cg(lambda v: A @ v, g, rtol=1e-10, maxiter=24)
    np.testing.assert_allclose(A @ x, -g, atol=1e-8)
    assert n_cg <= 24


def test_conjugate_gradient_stops_at_nonpositive_curvature():
    """H = 0: the first direction has no curvature and CG returns the steepest descent
    -g. H = diag(2, -1), g = (1, 1): the first step (curvature 1) lands on x = (-2, -2),
    the second direction (-6, -12) has curvature -72, and CG returns that iterate (still
    a descent direction) instead of stepping along negative curvature."""
    g = np.array([1.0, -3.0, 0.5])
    x, _, n_cg = steihaug_cg(lambda v: 0.0 * v, g, rtol=1e-12)
    np.testing.assert_array_equal(x, -g)
    assert n_cg == 1
    H = np.diag([2.0, -1.0])
    g = np.array([1.0, 1.0])
    x, _, n_cg = steihaug_cg(lambda v: H @ v, g, rtol=1e-12)
    np.testing.assert_allclose(x, [-2.0, -2.0], rtol=1e-15)
    assert n_cg == 2 and g @ x < 0


class _Operator:
    """A matrix with a diagonal and, optionally, a preconditioner (an exact inverse, or one
    that declines with None)."""

    def __init__(self, A, inverse):
        self.A, self.inverse, self.asked = A, inverse, []

    def __call__(self, v):
        return self.A @ v

    def diagonal(self):
        return np.diag(self.A).copy()

    def preconditioner(self, reg):
        self.asked.append(reg)
        if not self.inverse:
            return None
        inv = np.linalg.inv(self.A + reg * np.eye(len(self.A)))
        return lambda r: inv @ r


def test_conjugate_gradient_takes_the_operators_preconditioner_else_its_diagonal():
    """With the exact inverse (of H + reg I) as preconditioner CG solves in one product;
    an operator whose preconditioner declines gets the Jacobi one, and the same solution."""
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((10, 10)))
    A = Q @ np.diag(np.logspace(0, 4, 10)) @ Q.T
    g = rng.standard_normal(10)
    exact = _Operator(A, True)
    x, _, n_cg = steihaug_cg(exact, g, reg=1e-3, rtol=1e-10, precondition=True)
    assert n_cg == 1 and exact.asked == [1e-3]
    np.testing.assert_allclose((A + 1e-3 * np.eye(10)) @ x, -g, atol=1e-8)
    declining = _Operator(A, False)
    y, _, n_jacobi = steihaug_cg(declining, g, reg=1e-3, rtol=1e-10, precondition=True)
    assert declining.asked == [1e-3] and n_jacobi > 1
    np.testing.assert_allclose(y, x, rtol=1e-6, atol=1e-9)
    assert steihaug_cg(exact, g, reg=1e-3, rtol=1e-10)[2] > 1   # asked only to precondition


def _ill_conditioned(k, seed, decades=8):
    """An SPD matrix of k rows with eigenvalues spread over ``decades`` decades, and a
    right-hand side."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((k, k)))
    A = (Q * np.logspace(0, decades, k)) @ Q.T
    return (A + A.T) / 2, rng.standard_normal(k)


def _psi(A, b, reg, p):
    return b @ p + 0.5 * p @ (A @ p + reg * p)


def _explicit_cg(A, b, radius, maxiter=1000, reg=1e-8):
    """steihaug_cg on A formed, with OBA's options on a formed Hessian: (p, products)."""
    calls = [0]
    p, r, it = steihaug_cg(_ExplicitHessian(A, calls), b, reg, 1e-2, maxiter, radius,
                           precondition=True)
    assert calls[0] == it                        # every product recorded, the direct one too
    Ap = A @ p + reg * p
    scale = max(np.abs(b).max(), np.abs(Ap).max())
    np.testing.assert_allclose(r, b + Ap, rtol=0, atol=1e-9 * scale)
    return p, it


def test_a_formed_cg_that_runs_out_solves_by_cholesky(monkeypatch):
    """A CG on a formed matrix of DIRECT_MIN_SIZE rows or more still short of its 1% after
    DIRECT_AFTER iterations ends on the exact Newton point, where the CG alone runs hundreds
    of iterations more (here to its cap of 1,000, short of its 1%: rounding spoils its
    conjugacy at a condition number of 1e8) to a higher model; below DIRECT_MIN_SIZE rows,
    or done earlier, the CG is left as it was."""
    k = cgm.DIRECT_MIN_SIZE
    A, b = _ill_conditioned(k, 0)
    reg = 1e-8
    newton = -np.linalg.solve(A + reg * np.eye(k), b)
    p, it = _explicit_cg(A, b, radius=10 * np.linalg.norm(newton))
    assert it == cgm.DIRECT_AFTER + 1
    np.testing.assert_allclose(p, newton, rtol=1e-6, atol=1e-9 * np.abs(newton).max())
    monkeypatch.setattr(cgm, "DIRECT_AFTER", 10**9)
    p_cg, it_cg = _explicit_cg(A, b, radius=10 * np.linalg.norm(newton))
    assert it_cg > 500 and _psi(A, b, reg, p) < _psi(A, b, reg, p_cg)
    monkeypatch.undo()
    # a smaller matrix, or a CG done within DIRECT_AFTER iterations, is the CG's alone
    A_small, b_small = _ill_conditioned(k - 1, 0)
    assert _explicit_cg(A_small, b_small, 1e12)[1] > cgm.DIRECT_AFTER + 1
    A_easy, b_easy = _ill_conditioned(k, 0, decades=1)
    assert _explicit_cg(A_easy, b_easy, 1e12)[1] < cgm.DIRECT_AFTER


def test_a_direct_step_beyond_the_radius_ends_on_the_segment_from_the_cg_iterate():
    """Where the Newton point lies beyond the radius, the step is the point of the segment
    from the CG's iterate (after DIRECT_AFTER iterations) to it on the boundary: a lower
    model than the CG iterate's, on the boundary."""
    k = cgm.DIRECT_MIN_SIZE
    A, b = _ill_conditioned(k, 1)
    reg = 1e-8
    newton = -np.linalg.solve(A + reg * np.eye(k), b)
    p_cg, it_cg = _explicit_cg(A, b, radius=1e12, maxiter=cgm.DIRECT_AFTER)  # no direct step
    assert it_cg == cgm.DIRECT_AFTER and np.linalg.norm(p_cg) < 0.5 * np.linalg.norm(newton)
    radius = (np.linalg.norm(p_cg) + np.linalg.norm(newton)) / 2
    p, it = _explicit_cg(A, b, radius)
    assert it == cgm.DIRECT_AFTER + 1
    np.testing.assert_allclose(np.linalg.norm(p), radius, rtol=1e-12)
    s, t = newton - p_cg, p - p_cg
    np.testing.assert_allclose(t, (s @ t) / (s @ s) * s, atol=1e-8 * np.abs(t).max())
    assert 0 < (s @ t) / (s @ s) < 1 and _psi(A, b, reg, p) < _psi(A, b, reg, p_cg) < 0


def test_a_formed_matrix_that_cholesky_refuses_leaves_the_step_to_the_cg():
    """A direction of negative curvature that b and the CG never see (the last coordinate):
    the factorization fails and the CG goes on from its iterate, restarted, to its cap."""
    k = cgm.DIRECT_MIN_SIZE
    S, b_s = _ill_conditioned(k - 1, 2, decades=6)
    A = np.zeros((k, k))
    A[:-1, :-1], A[-1, -1] = S, -1.0
    b = np.append(b_s, 0.0)
    p, it = _explicit_cg(A, b, radius=1e12)
    assert it > cgm.DIRECT_AFTER + 1 and p[-1] == 0.0 and _psi(A, b, 1e-8, p) < 0


def test_a_multinomial_fit_takes_direct_steps_to_the_same_minimum(monkeypatch):
    """Nearly separable classes at a large C: the formed Hessians' CG runs out and the fit
    takes direct steps, to the objective the CG alone reaches (tol 1e-10)."""
    from sklearn.datasets import make_classification

    from sparsekit.linear_model import L1LogisticOBA

    X, y = make_classification(300, 60, n_informative=30, n_classes=5, n_clusters_per_class=1,
                               class_sep=2.0, random_state=0)
    steps = []
    direct_step = cgm._direct_step
    monkeypatch.setattr(cgm, "_direct_step", lambda *a: steps.append(direct_step(*a)) or steps[-1])

    def objective():
        model = L1LogisticOBA(C=1000.0, tol=1e-10, multiclass="multinomial").fit(X, y)
        nll = -np.log(model.predict_proba(X)[np.arange(y.size), y]).sum()
        return np.abs(model.coef_).sum() + 1000.0 * nll

    F = objective()
    assert len(steps) >= 2 and all(steps)
    monkeypatch.setattr(cgm, "DIRECT_AFTER", 10**9)
    steps.clear()
    F_cg = objective()
    assert not steps
    np.testing.assert_allclose(F, F_cg, rtol=1e-11)


def test_the_diagonal_radius_norm_needs_a_diagonal():
    with pytest.raises(TypeError, match="diagonal"):
        steihaug_cg(lambda v: v, np.ones(3), 0.0, 0.1, 10, 1.0, False, "diagonal")
