"""steihaug_cg, the CG of OBA and Newton-CG (OBA's trust-region cases are in test_oba.py)."""
import numpy as np

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
