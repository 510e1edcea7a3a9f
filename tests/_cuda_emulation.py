"""CUDA kernels run on the CPU, for the tests of a machine without a GPU.

The ``.cu`` source is compiled by the host C++ compiler after a prelude that defines the
CUDA built-ins the kernels use: one OS thread (or one fiber) per CUDA thread, the block's
threads together, the blocks one after the other; ``__syncthreads`` a barrier of the
block, warp shuffles and votes a barrier of the warp around an exchange buffer, atomics
``std::atomic_ref``, ``__shared__`` memory one array per kernel shared by the block's
threads. A missing barrier is then a real data race: :func:`build` with ``sanitize=True``
compiles with ThreadSanitizer, which reports it (the library must then be loaded by a
process started with ``LD_PRELOAD`` of the sanitizer runtime, see :func:`tsan_runtime`).

Every ``extern "C" __global__`` kernel of the source gets a launcher taking CUDA's launch
arguments (grid, block, and ``void** args``, each entry pointing at one argument's value, as
``cuLaunchKernel`` takes them); :meth:`EmulatedModule.launch` checks the argument count and
each argument's type against the kernel's signature before launching.
"""
import concurrent.futures
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PRELUDE = r"""
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <memory>
#include <thread>
#include <ucontext.h>
#include <vector>

// Two ways to run a block's CUDA threads. "threads": one OS thread each (real
// concurrency: what ThreadSanitizer checks). "fibers": one fiber each, switched
// round-robin by one OS thread at every barrier (the same interleavings at barriers, no
// preemption in between: what the CuPy stand-in uses).
static int sk_use_threads = 0;
extern "C" void sk_set_threads(int on) { sk_use_threads = on; }

// A fiber's context and the switch between two. On x86-64 the switch saves the callee-saved
// registers on the stack it leaves and pops them from the one it enters (System V ABI: the
// fibers never change MXCSR or the x87 control word); glibc's swapcontext, elsewhere or
// with SK_UCONTEXT defined, also makes a system call per switch (the signal mask) and was
// ~90% of a launch's time: a warp kernel on 30 rows switches ~10^5 times.
#if defined(__x86_64__) && !defined(SK_UCONTEXT)
extern "C" void sk_switch_stack(void** save_sp, void* load_sp);
asm(R"(
    .text
    .p2align 4
    .globl sk_switch_stack
    .hidden sk_switch_stack
    .type sk_switch_stack, @function
sk_switch_stack:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size sk_switch_stack, .-sk_switch_stack
)");
struct sk_context { void* sp = nullptr; };
// a fresh stack whose first switch "returns" into entry, as if entry had been called
static void sk_context_make(sk_context& c, char* stack, size_t size, void (*entry)()) {
    auto top = ((uintptr_t)(stack + size) & ~(uintptr_t)15) - 16;   // entry's return slot
    auto* slot = reinterpret_cast<void**>(top);
    slot[0] = reinterpret_cast<void*>(entry);
    for (int r = 1; r <= 6; ++r) slot[-r] = nullptr;             // rbp, rbx, r12-r15
    c.sp = slot - 6;
}
static inline void sk_context_switch(sk_context& from, sk_context& to) {
    sk_switch_stack(&from.sp, to.sp);
}
#else
struct sk_context { ucontext_t uc; };
static void sk_context_make(sk_context& c, char* stack, size_t size, void (*entry)()) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = size;
    c.uc.uc_link = nullptr;                          // the fibers never return
    makecontext(&c.uc, entry, 0);
}
static inline void sk_context_switch(sk_context& from, sk_context& to) {
    swapcontext(&from.uc, &to.uc);
}
#endif

static thread_local sk_context* sk_fiber_self;
static sk_context sk_scheduler;
static int sk_fiber_finished = 0;
static const void* sk_fiber_run = nullptr;          // the launch's sk_block_run
static inline void sk_fiber_yield() { sk_context_switch(*sk_fiber_self, sk_scheduler); }

// A barrier of ``n`` CUDA threads: the last to arrive starts the next generation, the
// others wait for it (threads: asleep on the generation; fibers: switching to the next
// fiber). The counter's release
// sequence and the generation's release/acquire order every write before the barrier
// before every read after it, for the program and for ThreadSanitizer.
struct sk_barrier {
    explicit sk_barrier(int n) : n(n) {}
    void arrive_and_wait() {
        const unsigned gen = generation.load(std::memory_order_acquire);
        if (count.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
            count.store(0, std::memory_order_relaxed);
            generation.fetch_add(1, std::memory_order_acq_rel);
            if (sk_use_threads) generation.notify_all();
            return;
        }
        while (generation.load(std::memory_order_acquire) == gen) {
            if (sk_use_threads) generation.wait(gen, std::memory_order_acquire);
            else sk_fiber_yield();
        }
    }
    const int n;
    std::atomic<int> count{0};
    std::atomic<unsigned> generation{0};
};

struct sk_index3 { unsigned int x, y, z; };
static thread_local sk_index3 threadIdx, blockIdx;
static sk_index3 blockDim, gridDim;
static sk_barrier* sk_block_barrier;
static sk_barrier* sk_warp_barrier[32];
static unsigned long long sk_exchange[32][32];

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict

static inline void __syncthreads() { sk_block_barrier->arrive_and_wait(); }
static inline void sk_check_mask(unsigned mask) {
    if (mask != 0xffffffffu) std::abort();  // the kernels use whole warps only
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    sk_check_mask(mask);
    sk_warp_barrier[threadIdx.x >> 5]->arrive_and_wait();
}

// Every lane publishes ``v``, the warp meets, each lane reads lane ``src(lane)``'s value
// (its own when out of range), the warp meets again before the buffer is reused.
template <class T, class Src> static inline T sk_exchange_values(unsigned mask, T v, Src src) {
    static_assert(sizeof(T) <= 8, "32-bit or 64-bit values");
    sk_check_mask(mask);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    sk_exchange[warp][lane] = bits;
    sk_warp_barrier[warp]->arrive_and_wait();
    const int from = src(lane);
    if (from >= 0 && from < 32) std::memcpy(&v, &sk_exchange[warp][from], sizeof(T));
    sk_warp_barrier[warp]->arrive_and_wait();
    return v;
}
template <class T> static inline T __shfl_down_sync(unsigned m, T v, int d) {
    return sk_exchange_values(m, v, [d](int lane) { return lane + d; });
}
template <class T> static inline T __shfl_up_sync(unsigned m, T v, int d) {
    return sk_exchange_values(m, v, [d](int lane) { return lane - d; });
}
template <class T> static inline T __shfl_xor_sync(unsigned m, T v, int x) {
    return sk_exchange_values(m, v, [x](int lane) { return lane ^ x; });
}
template <class T> static inline T __shfl_sync(unsigned m, T v, int src) {
    return sk_exchange_values(m, v, [src](int) { return src & 31; });
}
static inline unsigned __ballot_sync(unsigned m, int p) {
    unsigned bits = 0;
    for (int l = 0; l < 32; ++l)
        bits |= (unsigned)(sk_exchange_values(m, p != 0, [l](int) { return l; })) << l;
    return bits;
}
static inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0u; }
static inline int __all_sync(unsigned m, int p) { return __ballot_sync(m, p) == 0xffffffffu; }

template <class T> static inline T atomicAdd(T* p, T v) {
    return std::atomic_ref<T>(*p).fetch_add(v);
}
template <class T> static inline T atomicMax(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class T> static inline T atomicExch(T* p, T v) {
    return std::atomic_ref<T>(*p).exchange(v);
}

template <class To, class From> static inline To sk_bits(From v) {
    To out;
    std::memcpy(&out, &v, sizeof out);
    return out;
}
static inline double __longlong_as_double(long long b) { return sk_bits<double>(b); }
static inline long long __double_as_longlong(double d) { return sk_bits<long long>(d); }
static inline float __int_as_float(int b) { return sk_bits<float>(b); }
static inline int __float_as_int(float f) { return sk_bits<int>(f); }
template <class T> static inline T __ldg(const T* p) { return *p; }

// The block's CUDA threads are created once and run the blocks of the grid in turn; a
// barrier ends each block (its shared memory is then the next block's).
template <class F> struct sk_block_run {
    F* kernel; long long grid; sk_barrier* block_barrier;
    void operator()(int t) const {
        threadIdx = {(unsigned)t, 0, 0};
        for (long long b = 0; b < grid; ++b) {
            blockIdx = {(unsigned)b, 0, 0};
            (*kernel)();
            block_barrier->arrive_and_wait();
        }
    }
};

// a fiber's life: its CUDA thread (threadIdx.x, set by the scheduler before the first
// switch) over the grid, then back to the scheduler for good
template <class F> static void sk_fiber_entry() {
    (*static_cast<const sk_block_run<F>*>(sk_fiber_run))((int)threadIdx.x);
    sk_fiber_finished = 1;
    sk_fiber_yield();
    std::abort();                                    // a finished fiber is never resumed
}

template <class F> static void sk_emulate(long long grid, int block, F kernel) {
    if (block <= 0 || block > 1024 || block % 32 != 0) std::abort();
    gridDim = {(unsigned)grid, 1, 1};
    blockDim = {(unsigned)block, 1, 1};
    sk_barrier block_barrier(block);
    sk_block_barrier = &block_barrier;
    std::vector<std::unique_ptr<sk_barrier>> warps;
    for (int w = 0; w < block / 32; ++w) {
        warps.emplace_back(new sk_barrier(32));
        sk_warp_barrier[w] = warps.back().get();
    }
    const sk_block_run<F> run{&kernel, grid, &block_barrier};
    if (sk_use_threads) {
        std::vector<std::thread> threads;
        for (int t = 0; t < block; ++t) threads.emplace_back([t, &run] { run(t); });
        for (auto& th : threads) th.join();
        return;
    }
    const size_t stack = 1 << 16;
    std::vector<sk_context> fibers(block);
    std::vector<std::unique_ptr<char[]>> stacks;
    sk_fiber_run = &run;
    for (int t = 0; t < block; ++t) {
        stacks.emplace_back(new char[stack]);
        sk_context_make(fibers[t], stacks.back().get(), stack, sk_fiber_entry<F>);
    }
    // the fibers share the OS thread's threadIdx and blockIdx: each fiber's own are put
    // back before it resumes
    std::vector<char> done(block, 0);
    std::vector<sk_index3> block_of(block, sk_index3{0, 0, 0});
    for (int finished = 0; finished < block;) {
        for (int t = 0; t < block; ++t) {
            if (done[t]) continue;
            sk_fiber_self = &fibers[t];
            threadIdx = {(unsigned)t, 0, 0};
            blockIdx = block_of[t];
            sk_context_switch(sk_scheduler, fibers[t]);
            block_of[t] = blockIdx;  // at a barrier, or at the fiber's end
            if (sk_fiber_finished) { done[t] = 1; ++finished; sk_fiber_finished = 0; }
        }
    }
}
#line 1 "kernel.cu"
"""

_KERNEL = re.compile(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)")
_SCALARS = {"int": np.int32, "long long": np.int64, "unsigned int": np.uint32,
            "unsigned long long": np.uint64, "float": np.float32, "double": np.float64}
_CTYPES = {np.int32: ctypes.c_int32, np.int64: ctypes.c_int64, np.uint32: ctypes.c_uint32,
           np.uint64: ctypes.c_uint64, np.float32: ctypes.c_float, np.float64: ctypes.c_double}


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ``dtype`` of the value, or of the pointed-to elements."""
    name: str
    dtype: type
    pointer: bool
    const: bool
    declaration: str


def _param(text):
    text = " ".join(text.replace("*", " * ").split())
    declaration, name = text.rsplit(" ", 1)
    pointer = declaration.endswith("*")
    words = [w for w in declaration.replace("*", " ").replace("__restrict__", " ").split()
             if w != "const"]
    base = " ".join(words)
    if base not in _SCALARS:
        raise ValueError(f"kernel parameter {text!r}: type {base!r} is not emulated")
    return Param(name, _SCALARS[base], pointer, "const" in declaration.split(), declaration)


def kernel_signatures(code):
    """``{kernel name: [Param, ...]}`` of the ``__global__`` kernels in ``code``."""
    return {m.group(1): [_param(p) for p in m.group(2).split(",") if p.strip()]
            for m in _KERNEL.finditer(code)}


def _launchers(signatures):
    out = []
    for name, params in signatures.items():
        values = "".join(f"    {p.declaration} a{i} = *static_cast<{p.declaration}*>(args[{i}]);\n"
                         for i, p in enumerate(params))
        call = ", ".join(f"a{i}" for i in range(len(params)))
        out.append(f'extern "C" void sk_launch_{name}(long long grid, int block, void** args) {{\n'
                   f"{values}    sk_emulate(grid, block, [=] {{ {name}({call}); }});\n}}\n")
    return "\n".join(out)


def compiler():
    """The host C++ compiler (``g++`` or ``clang++``), or None."""
    return shutil.which("g++") or shutil.which("clang++")


def tsan_runtime():
    """Path of the compiler's ThreadSanitizer runtime (to ``LD_PRELOAD``), or None."""
    cxx = compiler()
    if cxx is None:
        return None
    out = subprocess.run([cxx, "-print-file-name=libtsan.so"], capture_output=True, text=True)
    path = Path(out.stdout.strip())
    return path if path.is_absolute() and path.exists() else None


class EmulatedModule:
    """The kernels of one source, compiled for the CPU (see :func:`build`)."""

    #: one launch at a time in the process (ctypes releases the GIL; the emulation's
    #: block state is global)
    _lock = threading.Lock()

    def __init__(self, library, signatures):
        self._lib = ctypes.CDLL(str(library))
        self.signatures = signatures

    def symbol(self, name):
        """The library's C function ``name`` (ctypes), e.g. a setter a source defines."""
        return getattr(self._lib, name)

    def check_args(self, name, args):
        """Raise TypeError unless ``args`` fit kernel ``name``'s parameters: a C-contiguous
        writable-or-const NumPy array of the pointed-to dtype for each pointer, a NumPy
        scalar of exactly the parameter's type for each value (CUDA reads the bytes as
        declared: a Python int or a float64 for an ``int`` parameter is garbage)."""
        params = self.signatures[name]
        if len(args) != len(params):
            raise TypeError(f"kernel {name} takes {len(params)} arguments, got {len(args)}")
        for p, a in zip(params, args):
            if p.pointer:
                if not isinstance(a, np.ndarray):
                    raise TypeError(f"{name}: argument {p.name} ({p.declaration}) must be a "
                                    f"device array, got {type(a).__name__}")
                if a.dtype != p.dtype:
                    raise TypeError(f"{name}: argument {p.name} ({p.declaration}) got an "
                                    f"array of {a.dtype}")
                if not a.flags.c_contiguous and a.size > 1:
                    raise TypeError(f"{name}: argument {p.name} is not C-contiguous")
                if not p.const and not a.flags.writeable:
                    raise TypeError(f"{name}: argument {p.name} is written but read-only")
            elif not (isinstance(a, np.generic) and a.dtype == p.dtype):
                raise TypeError(f"{name}: argument {p.name} ({p.declaration}) must be a "
                                f"NumPy {np.dtype(p.dtype).name} scalar, got {a!r} "
                                f"({type(a).__name__})")

    def launch(self, name, grid, block, args, threads=False):
        """Run kernel ``name`` on ``grid`` blocks of ``block`` threads (1-D): as fibers, or
        with ``threads`` as OS threads."""
        if name not in self.signatures:
            raise AttributeError(f"no kernel {name!r}; kernels: {sorted(self.signatures)}")
        self.check_args(name, args)
        values = []
        for p, a in zip(self.signatures[name], args):
            values.append(ctypes.c_void_p(a.ctypes.data) if p.pointer
                          else _CTYPES[p.dtype](a.item()))
        argv = (ctypes.c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        with self._lock:
            self._lib.sk_set_threads(ctypes.c_int(bool(threads)))
            getattr(self._lib, f"sk_launch_{name}")(ctypes.c_longlong(int(grid)),
                                                    ctypes.c_int(int(block)), argv)


def _compile(code, workdir, *, sanitize=False, include_dirs=(), defines=()):
    """Compile ``code`` (a ``.cu`` source) with the emulation prelude into ``workdir``
    (cached by content): (the library's path, the kernels' signatures). ``defines``: macro
    names (``SK_UCONTEXT``: the fibers switch by glibc's swapcontext, as on a machine other
    than x86-64). Raises RuntimeError with the compiler's output when the source does not
    compile."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++ or clang++) for the CUDA emulation")
    signatures = kernel_signatures(code)
    source = PRELUDE + code + "\n" + _launchers(signatures)
    flags = ["-std=c++20", "-O2", "-g", "-shared", "-fPIC", "-pthread",
             "-Wall", "-Wno-unused-function", "-Wno-unused-variable"]
    flags += ["-fsanitize=thread"] if sanitize else []
    flags += [f"-I{d}" for d in include_dirs] + [f"-D{name}" for name in defines]
    key = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:16]
    workdir = Path(workdir)
    library = workdir / f"emu_{key}.so"
    if not library.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        cpp = workdir / f"emu_{key}.cpp"
        cpp.write_text(source)
        out = subprocess.run([cxx, *flags, "-x", "c++", str(cpp), "-o", str(library) + ".tmp"],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"the CUDA emulation of the source does not compile:\n"
                               f"{out.stderr[-4000:]}")
        Path(str(library) + ".tmp").rename(library)
    return library, signatures


def build(code, workdir, **options):
    """Compile ``code`` (a ``.cu`` source) as :func:`_compile` does (``options``:
    ``sanitize``, ``include_dirs``, ``defines``) and load it."""
    return EmulatedModule(*_compile(code, workdir, **options))


def build_many(codes, workdir, **options):
    """:func:`build` of each of ``codes``, the compiles run side by side (one per CPU)."""
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        compiled = list(pool.map(lambda code: _compile(code, workdir, **options), codes))
    return [EmulatedModule(*built) for built in compiled]
