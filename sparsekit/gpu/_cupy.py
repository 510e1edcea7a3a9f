"""Lazy access to CuPy; nothing in the CPU package imports this module at import time."""


def is_cupy_array(x):
    """True when ``x`` is a CuPy array (checked by type, without importing CuPy; not
    cupyx's sparse matrices).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.gpu import is_cupy_array
    >>> is_cupy_array(np.zeros(3))
    False
    """
    return type(x).__module__.split(".")[0] == "cupy"


def require_cupy():
    """Return the ``cupy`` module, or raise a clear error.

    Raises
    ------
    ImportError
        CuPy is not installed (``pip install ".[gpu]"`` in a sparsekit checkout installs
        ``cupy-cuda12x``).
    RuntimeError
        CuPy is installed but no CUDA device can be used (no GPU, no driver, or a CUDA
        runtime error while counting devices).

    Examples
    --------
    >>> from sparsekit.gpu import require_cupy
    >>> cp = require_cupy()  # doctest: +SKIP
    >>> cp.cuda.runtime.getDeviceCount() >= 1  # doctest: +SKIP
    True
    """
    try:
        import cupy
    except ImportError as exc:
        raise ImportError(
            "the GPU paths of sparsekit (device='cuda' or CuPy inputs) need CuPy: "
            "pip install '.[gpu]' in the sparsekit checkout (or the cupy-cudaXXx wheel "
            "matching your CUDA)"
        ) from exc
    try:
        n_devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError, or a driver/library load failure
        raise RuntimeError(f"CuPy is installed but no CUDA device is usable: {exc}") from exc
    if n_devices == 0:
        raise RuntimeError("CuPy is installed but no CUDA device was found")
    return cupy
