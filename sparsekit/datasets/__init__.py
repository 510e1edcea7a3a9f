"""Loaders for the benchmark files in ../shared/datasets and synthetic generators."""
