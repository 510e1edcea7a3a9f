"""Metrics of multi-label and extreme classification."""
from ._ranking import precision_at_k, recall_at_k

__all__ = ["precision_at_k", "recall_at_k"]
