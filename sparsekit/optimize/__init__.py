"""Solvers: OBA for smooth + l1 problems, NQN for bound-constrained nonsmooth problems."""
