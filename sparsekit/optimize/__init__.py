"""Solvers: OBA for smooth + l1 problems, NQN for bound-constrained nonsmooth problems,
Newton-CG for smooth or piecewise-quadratic ones.

All follow SciPy's conventions: an ``OptimizeResult`` with ``status`` and ``message``, and
``callback(intermediate_result)`` halting on ``StopIteration``.
"""
from ._oba import minimize_oba
from ._newton_cg import minimize_newton_cg
from ._nqn import fmin_nqn, minimize_nqn

__all__ = ["minimize_oba", "minimize_newton_cg", "minimize_nqn", "fmin_nqn"]
