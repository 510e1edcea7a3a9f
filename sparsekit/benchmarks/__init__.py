"""Runnable comparisons (``python -m sparsekit.benchmarks.compare``)."""
