"""Compile (once per device) and launch the RawKernels of ``sparsekit/gpu/kernels``."""
import functools
import re
from pathlib import Path

import numpy as np

from ._cupy import require_cupy

KERNEL_DIR = Path(__file__).resolve().with_name("kernels")
_MAX_THREADS = 256
_MAX_BLOCKS = 2**20  # rows beyond this are handled by the kernels' grid-stride loop
#: NVRTC options of every module (CuPy adds the device's architecture)
COMPILE_OPTIONS = ("--std=c++14",)


_INCLUDE = re.compile(r'^#include "([^"/]+)"[ \t]*$', re.MULTILINE)


@functools.lru_cache(maxsize=None)
def kernel_source(filename):
    """Text of ``kernels/<filename>`` with its local ``#include "..."`` lines inlined, so
    that CuPy's compile cache (keyed by the source text) sees every change."""
    text = (KERNEL_DIR / filename).read_text()
    return _INCLUDE.sub(lambda m: kernel_source(m.group(1)), text)


@functools.lru_cache(maxsize=None)
def _module(filename, device_id):
    cp = require_cupy()
    with cp.cuda.Device(device_id):
        return cp.RawModule(code=kernel_source(filename), options=COMPILE_OPTIONS)


def get_kernel(filename, name, dtype):
    """The ``extern "C"`` kernel ``<name>_f32`` or ``<name>_f64`` of ``kernels/<filename>``."""
    cp = require_cupy()
    suffix = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}[np.dtype(dtype)]
    return _module(filename, cp.cuda.Device().id).get_function(f"{name}_{suffix}")


#: rows of at most this many entries get a warp each (SK_WARP_CACHE of row_common.cu:
#: such a row is read from global memory once), longer ones a block
WARP_ROW_MAX = 256
_WARPS_PER_BLOCK = 8  # SK_WARP_ROWS of row_common.cu


def threads_per_row(k):
    """Block size for rows of ``k`` entries: a multiple of 32, at most 256."""
    return int(min(_MAX_THREADS, max(32, -(-int(k) // 32) * 32)))


def launch_rows(filename, name, dtype, n_rows, n_cols, args):
    """Launch the row kernel ``name`` of ``kernels/<filename>`` over ``n_rows`` rows of
    ``n_cols`` entries: its one-warp-per-row twin (``<name>_warp``, 8 rows per block) for
    rows of at most :data:`WARP_ROW_MAX` entries, else one block per row."""
    if n_rows == 0:
        return
    if n_cols <= WARP_ROW_MAX:
        kernel = get_kernel(filename, f"{name}_warp", dtype)
        blocks = -(-int(n_rows) // _WARPS_PER_BLOCK)
        kernel((min(blocks, _MAX_BLOCKS),), (32 * _WARPS_PER_BLOCK,), args)
    else:
        kernel = get_kernel(filename, name, dtype)
        kernel((min(int(n_rows), _MAX_BLOCKS),), (threads_per_row(n_cols),), args)
