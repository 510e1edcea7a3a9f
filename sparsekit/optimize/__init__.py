"""Solvers: OBA for smooth + l1 problems, NQN for bound-constrained nonsmooth problems."""
from ._oba import minimize_oba  # noqa: F401
from ._nqn import fmin_nqn, minimize_nqn  # noqa: F401
