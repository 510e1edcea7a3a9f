"""The skip marker of the tests that need CuPy and a usable CUDA device."""
import pytest

from sparsekit.gpu import require_cupy


def _gpu_available():
    try:
        require_cupy()
    except (ImportError, RuntimeError):
        return False
    return True


needs_gpu = pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")
