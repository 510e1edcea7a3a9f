"""Lazy access to CuPy; nothing in the CPU package imports this module at import time."""
import functools


def is_cupy_array(x):
    """Whether ``x`` is a CuPy array, checked by type without importing CuPy.

    Parameters
    ----------
    x : object
        Anything.

    Returns
    -------
    bool
        True for a ``cupy.ndarray`` (not for cupyx's sparse matrices).

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

    Returns
    -------
    module
        ``cupy``, with a usable CUDA device and NVRTC.

    Raises
    ------
    ImportError
        CuPy is not installed (``pip install ".[gpu]"`` in a sparsekit checkout installs
        ``cupy-cuda12x[ctk]``, ``".[gpu-cuda13]"`` ``cupy-cuda13x[ctk]``).
    RuntimeError
        CuPy is installed but no CUDA device can be used (no GPU, no driver, or a CUDA
        runtime error while counting devices), or CuPy cannot compile kernels: NVRTC,
        the CUDA runtime compiler that builds sparsekit's kernels, is missing.

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
            "pip install '.[gpu]' in the sparsekit checkout (CUDA 12; '.[gpu-cuda13]' for "
            "CUDA 13), or the cupy-cudaXXx[ctk] wheel matching your CUDA"
        ) from exc
    try:
        n_devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError, or a driver/library load failure
        raise RuntimeError(f"CuPy is installed but no CUDA device is usable: {exc}") from exc
    if n_devices == 0:
        raise RuntimeError("CuPy is installed but no CUDA device was found")
    try:
        cupy.cuda.nvrtc.getVersion()
    except Exception as exc:  # the library does not load (ImportError, OSError, ...)
        raise RuntimeError(
            "CuPy cannot compile sparsekit's CUDA kernels: NVRTC, the CUDA runtime "
            f"compiler, is missing or unusable ({exc}). Install CuPy with its CUDA "
            "toolkit: pip install '.[gpu]' in the sparsekit checkout (cupy-cuda12x[ctk]; "
            "'.[gpu-cuda13]' for CUDA 13), or a CUDA toolkit with NVRTC") from exc
    return cupy


def on_current_device(function):
    """``function`` run on the CuPy device current in the calling thread, in whichever
    thread it is called: CuPy's current device belongs to each thread, and a pool's
    threads start on device 0 (a fit inside ``with cupy.cuda.Device(1):`` must not send
    its one-vs-rest problems there)."""
    device = require_cupy().cuda.Device()

    @functools.wraps(function)
    def run(*args, **kwargs):
        with device:
            return function(*args, **kwargs)
    return run
