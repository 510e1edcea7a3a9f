"""A NumPy-backed stand-in for ``cupy`` and ``cupyx``, for the CuPy-level tests of a
machine without a GPU.

Arrays live in host memory but behave as device arrays where it matters to the code under
test: no silent mixing with NumPy (``np.asarray(x)`` and ``x + numpy_array`` raise
TypeError, as CuPy does; ``.get()`` and ``cupy.asnumpy`` copy to the host; reductions return
0-d arrays), ``cupy.asarray`` copies host data. ``RawModule`` compiles its source with the
CPU emulation of :mod:`_cuda_emulation` and launches the emulated kernels, checking the
grid, the block and every argument against the kernel's signature (count, array dtypes,
exact scalar types). ``cuda.Device`` keeps each thread's current device, as CUDA does (the
stand-in has two, sharing host memory).

:func:`install` puts the stand-in into ``sys.modules`` (through pytest's ``monkeypatch``).
"""
import functools
import operator
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import numpy as np
import scipy.sparse

import _cuda_emulation

_BUILD_DIR = Path(tempfile.gettempdir()) / "sparsekit_cuda_emulation"


def _refuse(x):
    raise TypeError(f"Unsupported type {type(x)} (the CuPy stand-in does not mix NumPy "
                    "arrays with device arrays: use cupy.asarray or .get())")


def _unwrap(x):
    """The NumPy value of a stand-in argument; NumPy arrays are refused."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):
        _refuse(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):
        return ndarray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    return x


def _binary(op, reflected=False):
    def method(self, other):
        other = _unwrap(other)
        return _wrap(op(other, self._a) if reflected else op(self._a, other))
    return method


def _inplace(op):
    def method(self, other):
        op(self._a, _unwrap(other))
        return self
    return method


class ndarray:
    """A device array of the stand-in (host memory)."""
    __array_ufunc__ = None  # NumPy operands defer to these methods, which refuse them

    def __init__(self, a):
        self._a = a

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def get(self, stream=None, order="C", out=None):
        return np.array(self._a, order=order)

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray(self._a.T))
    real = property(lambda self: ndarray(self._a.real))
    device = property(lambda self: cuda.Device(0))

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(v) for v in self._a)

    def __repr__(self):
        return f"stand-in cupy {self._a!r}"

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key)])

    def __setitem__(self, key, value):
        self._a[_unwrap(key)] = _unwrap(value)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __index__(self):
        return operator.index(self._a)

    def __bool__(self):
        return bool(self._a)

    def __complex__(self):
        return complex(self._a)

    def __getattr__(self, name):  # methods: astype, sum, max, reshape, ...
        if name.startswith("__"):     # NumPy's __array_interface__ would convert silently
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr)

        @functools.wraps(attr)
        def method(*args, **kwargs):
            return _wrap(attr(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
        return method

    def __neg__(self):
        return ndarray(-self._a)

    def __pos__(self):
        return ndarray(+self._a)

    def __abs__(self):
        return ndarray(abs(self._a))

    def __invert__(self):
        return ndarray(~self._a)


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("matmul", operator.matmul),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor)]:
    setattr(ndarray, f"__{_name}__", _binary(_op))
    setattr(ndarray, f"__r{_name}__", _binary(_op, reflected=True))
    setattr(ndarray, f"__i{_name}__", _inplace(getattr(operator, f"i{_name}")))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(ndarray, f"__{_name}__", _binary(getattr(operator, _name)))
ndarray.__module__ = "cupy"  # what sparsekit's is_cupy_array looks at


# ---------------------------------------------------------------- module-level functions
def asarray(a, dtype=None, order=None):
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == dtype else ndarray(a._a.astype(dtype))
    if isinstance(a, scipy.sparse.spmatrix | scipy.sparse.sparray):
        raise TypeError("cupy.asarray does not take sparse matrices")
    return ndarray(np.array(a, dtype=dtype, order=order or "K"))  # a copy: "device" data


def array(a, dtype=None, copy=True, order="K"):
    if isinstance(a, ndarray):
        return ndarray(np.array(a._a, dtype=dtype, copy=copy, order=order))
    return ndarray(np.array(a, dtype=dtype, order=order))


def asnumpy(a, stream=None, order="C"):
    return a.get(order=order) if isinstance(a, ndarray) else np.asarray(a, order=order)


def ascontiguousarray(a, dtype=None):
    if not isinstance(a, ndarray):
        _refuse(a)
    return ndarray(np.ascontiguousarray(a._a, dtype=dtype))


def get_array_module(*args):
    return sys.modules["cupy"] if any(isinstance(a, ndarray) for a in args) else np


def _numpy_function(name):
    fn = getattr(np, name)

    @functools.wraps(fn)
    def function(*args, **kwargs):
        return _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    return function


class RawKernel:
    """A kernel of a :class:`RawModule`, launched in the CPU emulation."""

    def __init__(self, module, name):
        self._module, self.name = module, name

    def __call__(self, grid, block, args, *, shared_mem=0):
        if not (isinstance(grid, tuple) and isinstance(block, tuple)):
            raise TypeError(f"grid and block must be tuples, got {grid!r} and {block!r}")
        grid, block = tuple(int(g) for g in grid), tuple(int(b) for b in block)
        if any(g != 1 for g in grid[1:]) or any(b != 1 for b in block[1:]):
            raise ValueError("the emulation runs 1-D grids and blocks only")
        if not 1 <= grid[0] <= 2**31 - 1 or not 1 <= block[0] <= 1024:
            raise ValueError(f"invalid launch configuration grid={grid} block={block}")
        if block[0] % 32:
            raise ValueError(f"blocks of whole warps only, got {block[0]} threads")
        if shared_mem:
            raise ValueError("dynamic shared memory is not emulated")
        values = []
        for a in args:
            if isinstance(a, np.ndarray):
                _refuse(a)
            if isinstance(a, (int, float, bool)) and not isinstance(a, np.generic):
                raise TypeError(f"{self.name}: pass NumPy scalars of the parameter's type, "
                                f"not a Python {type(a).__name__} ({a!r})")
            values.append(a._a if isinstance(a, ndarray) else a)
        self._module.launch(self.name, grid[0], block[0], values)


class RawModule:
    """CuPy's RawModule over the CPU emulation (``code`` only, no ``path``)."""

    def __init__(self, code=None, *, options=(), path=None, **kwargs):
        if code is None or path is not None:
            raise ValueError("the stand-in compiles source code only")
        if not all(isinstance(o, str) for o in options):
            raise TypeError(f"options must be strings, got {options!r}")
        self.options = tuple(options)
        self._module = _cuda_emulation.build(code, _BUILD_DIR)

    def get_function(self, name):
        if name not in self._module.signatures:
            raise AttributeError(f"no kernel {name!r} in the module")
        return RawKernel(self._module, name)


class _Event:
    """A CUDA event: the host clock (the stand-in's work is synchronous)."""

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        pass


_current_device = threading.local()   # as in CUDA, each thread has its current device


class _Device:
    """``Device()`` is the calling thread's current device (0 in a new thread), ``with
    Device(k):`` makes ``k`` current in that thread for the block."""

    def __init__(self, device=None):
        self.id = getattr(_current_device, "id", 0) if device is None else int(device)

    def __enter__(self):
        _current_device.stack = getattr(_current_device, "stack", [])
        _current_device.stack.append(getattr(_current_device, "id", 0))
        _current_device.id = self.id
        return self

    def __exit__(self, *exc):
        _current_device.id = _current_device.stack.pop()
        return False

    def synchronize(self):
        pass


cuda = types.SimpleNamespace(
    Device=_Device,
    Event=_Event,
    get_elapsed_time=lambda start, stop: 1e3 * (stop.time - start.time),
    runtime=types.SimpleNamespace(
        getDeviceCount=lambda: 2,
        getDeviceProperties=lambda device: {"name": b"CuPy stand-in (CPU emulation)"}),
    nvrtc=types.SimpleNamespace(getVersion=lambda: (12, 9)),
    Stream=types.SimpleNamespace(null=None),
)


# ---------------------------------------------------------------- cupyx.scipy.sparse
class csr_matrix:
    """cupyx.scipy.sparse.csr_matrix over a SciPy CSR matrix (host memory)."""

    def __init__(self, arg, shape=None, dtype=None):
        if isinstance(arg, csr_matrix):
            arg = arg._m
        elif isinstance(arg, ndarray):
            arg = arg._a
        elif isinstance(arg, np.ndarray):
            _refuse(arg)
        # a host matrix is copied to the "device", as CuPy copies it; a device one is shared
        host = scipy.sparse.issparse(arg)
        self._m = scipy.sparse.csr_matrix(arg, shape=shape, dtype=dtype, copy=host)

    shape = property(lambda self: self._m.shape)
    dtype = property(lambda self: self._m.dtype)
    nnz = property(lambda self: self._m.nnz)
    T = property(lambda self: _sparse(self._m.T.tocsr()))
    ndim = 2

    @property
    def data(self):
        return ndarray(self._m.data)

    @data.setter
    def data(self, values):
        self._m.data = _unwrap(values)

    def tocsr(self):
        return self

    def __getitem__(self, key):  # rows (an index array, a slice)
        return _sparse(self._m[_unwrap(key)])

    def copy(self):
        return _sparse(self._m.copy())

    def astype(self, dtype):
        return _sparse(self._m.astype(dtype))

    def __matmul__(self, other):
        if isinstance(other, csr_matrix):
            return _sparse(self._m @ other._m)
        return _wrap(np.asarray(self._m @ _unwrap(other)))

    def __rmatmul__(self, other):
        return _wrap(np.asarray(_unwrap(other) @ self._m))

    def __mul__(self, other):   # cupyx: by a scalar (its matrix product is refused here)
        if not np.isscalar(other):
            raise TypeError("the stand-in multiplies a sparse matrix by scalars only")
        return _sparse(self._m * other)

    def multiply(self, other):  # elementwise
        other = other._m if isinstance(other, csr_matrix) else _unwrap(other)
        return _sparse(self._m.multiply(other))

    def sum(self, axis=None):   # a dense (n, 1) or (1, d) array, as cupyx returns
        return _wrap(np.asarray(self._m.sum(axis=axis)))

    def get(self):
        return self._m.copy()

    def toarray(self):
        return ndarray(self._m.toarray())


csr_matrix.__module__ = "cupyx.scipy.sparse"


def _sparse(m):
    out = csr_matrix.__new__(csr_matrix)
    out._m = scipy.sparse.csr_matrix(m)
    return out


def _module(name, attrs, getattr_fn=None):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    if getattr_fn is not None:
        module.__getattr__ = getattr_fn
    return module


def modules():
    """``{name: module}`` of the stand-in: cupy, cupyx, cupyx.scipy, cupyx.scipy.sparse."""
    def cupy_getattr(name):
        value = getattr(np, name)  # AttributeError for what NumPy lacks too
        return _numpy_function(name) if callable(value) and not isinstance(value, type) \
            else value

    cupy = _module("cupy", {
        "ndarray": ndarray, "asarray": asarray, "array": array, "asnumpy": asnumpy,
        "ascontiguousarray": ascontiguousarray, "get_array_module": get_array_module,
        "RawModule": RawModule, "RawKernel": RawKernel, "cuda": cuda,
        "__version__": "stand-in", "__stand_in__": True}, cupy_getattr)
    sparse = _module("cupyx.scipy.sparse", {
        "csr_matrix": csr_matrix,
        "issparse": lambda x: isinstance(x, csr_matrix)})
    scipy_ = _module("cupyx.scipy", {"sparse": sparse})
    cupyx = _module("cupyx", {"scipy": scipy_})
    return {"cupy": cupy, "cupyx": cupyx, "cupyx.scipy": scipy_, "cupyx.scipy.sparse": sparse}


def install(monkeypatch):
    """Make ``import cupy`` (and cupyx) give the stand-in until ``monkeypatch`` undoes it;
    returns the stand-in ``cupy``."""
    for name, module in modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    return sys.modules["cupy"]
