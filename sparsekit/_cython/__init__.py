"""Compiled kernels (Cython). No scikit-learn logic lives here."""
