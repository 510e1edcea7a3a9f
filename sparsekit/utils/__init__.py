"""Shared input validation helpers."""
