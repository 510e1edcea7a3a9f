"""CuPy RawKernel paths (optional: ``pip install ".[gpu]"`` in a sparsekit checkout).

Nothing here is imported by the CPU package, and importing this package does not import
CuPy: it is loaded on the first call (:func:`require_cupy` explains what is missing).
``sparsekit.projections`` dispatches CuPy inputs (or ``device="cuda"``) to
:mod:`sparsekit.gpu.projections`; :mod:`sparsekit.gpu.losses` holds the fused sparsemax
loss. Kernel sources: ``sparsekit/gpu/kernels/*.cu``.
"""
from ._cupy import is_cupy_array, require_cupy

__all__ = ["is_cupy_array", "require_cupy"]
