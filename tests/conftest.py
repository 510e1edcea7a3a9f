"""Point the loaders at ../shared/datasets beside this checkout, wherever sparsekit is
installed (tests that need the files skip when the folder is absent)."""
import os
from pathlib import Path

_SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
if _SHARED_DATA.is_dir():
    os.environ.setdefault("SPARSEKIT_DATA", str(_SHARED_DATA))

import pytest  # noqa: E402


@pytest.fixture(params=["stand-in", "cupy"])
def cupy_backend(request, monkeypatch):
    """The ``cupy`` module a CuPy-level test runs on: the NumPy-backed stand-in, whose
    kernels run in the CPU emulation (tests/_cupy_standin.py), and real CuPy, skipped
    without a usable CUDA device. sparsekit's compiled-kernel cache is cleared around it."""
    from sparsekit.gpu import _kernels

    if request.param == "stand-in":
        import _cupy_standin

        cp = _cupy_standin.install(monkeypatch)
    else:
        from _gpu import needs_gpu

        if needs_gpu.args[0]:
            pytest.skip(needs_gpu.kwargs["reason"])
        request.applymarker(pytest.mark.gpu)
        import cupy as cp
    _kernels._module.cache_clear()
    yield cp
    _kernels._module.cache_clear()


@pytest.fixture
def python_sigint():
    """Python's own Ctrl-C handling for the test: a run started from a shell's background
    job (CI's, say) begins with SIGINT ignored, which sparsekit-compare leaves alone."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
