// Device helpers shared by the row kernels of sparsekit/gpu (included, not launched).
//
// A group of threads handles one row of K values: a whole thread block (SkBlockGroup; rows
// of any length) or one warp (SkWarpGroup; short rows, several to a block, no barrier);
// blockDim.x is a multiple of 32 (<= 1024). Accumulation is in double for float32 and
// float64 rows alike, as in the CPU kernels (sparsekit/_cython/_projections.pxd).
#ifndef SPARSEKIT_ROW_COMMON_CU
#define SPARSEKIT_ROW_COMMON_CU

#define SK_FULL_MASK 0xffffffffu
#define SK_ROW_CACHE 4096  // rows of at most this many entries are read from global memory once
#define SK_WARP_ROWS 8     // warps (rows at a time) per block of the one-warp-per-row kernels
#define SK_WARP_CACHE 256  // their cache per row: rows up to this long are read once
#define SK_MAX_PASSES 200
#define SK_NEWTON_PASSES 16

__device__ __forceinline__ double sk_inf() { return __longlong_as_double(0x7ff0000000000000LL); }

// Warp-wide sum and maximum (butterfly shuffles: every lane gets the result).
__device__ __forceinline__ double sk_warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(SK_FULL_MASK, v, offset);
    return v;
}

__device__ __forceinline__ double sk_warp_max(double v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmax(v, __shfl_xor_sync(SK_FULL_MASK, v, offset));
    return v;
}

// Block-wide sums of four values; every thread gets the totals. smem: >= 4 * 32 doubles.
__device__ void sk_block_sum4(double& a, double& b, double& c, double& d, double* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n_warps = (blockDim.x + 31) >> 5;
    a = sk_warp_sum(a); b = sk_warp_sum(b); c = sk_warp_sum(c); d = sk_warp_sum(d);
    __syncthreads();  // previous readers of smem are done
    if (lane == 0) { smem[warp] = a; smem[32 + warp] = b; smem[64 + warp] = c; smem[96 + warp] = d; }
    __syncthreads();
    if (warp == 0) {
        a = lane < n_warps ? smem[lane] : 0.0;
        b = lane < n_warps ? smem[32 + lane] : 0.0;
        c = lane < n_warps ? smem[64 + lane] : 0.0;
        d = lane < n_warps ? smem[96 + lane] : 0.0;
        a = sk_warp_sum(a); b = sk_warp_sum(b); c = sk_warp_sum(c); d = sk_warp_sum(d);
        if (lane == 0) { smem[0] = a; smem[32] = b; smem[64] = c; smem[96] = d; }
    }
    __syncthreads();
    a = smem[0]; b = smem[32]; c = smem[64]; d = smem[96];
}

// Block-wide maximum; every thread gets it. smem: >= 32 doubles.
__device__ double sk_block_max(double v, double* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n_warps = (blockDim.x + 31) >> 5;
    v = sk_warp_max(v);
    __syncthreads();
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < n_warps ? smem[lane] : -sk_inf();
        v = sk_warp_max(v);
        if (lane == 0) smem[0] = v;
    }
    __syncthreads();
    return smem[0];
}

// The threads of a block share one row: member j takes entries j, j + size(), ...; the
// reductions give every member the total. ``smem``: >= 128 doubles of shared memory.
struct SkBlockGroup {
    double* smem;
    __device__ int rank() const { return threadIdx.x; }
    __device__ int size() const { return blockDim.x; }
    __device__ long long first_row() const { return blockIdx.x; }
    __device__ long long row_stride() const { return gridDim.x; }
    __device__ void sum4(double& a, double& b, double& c, double& d) const {
        sk_block_sum4(a, b, c, d, smem);
    }
    __device__ double max(double v) const { return sk_block_max(v, smem); }
};

// The 32 threads of a warp share one row; the warps of a block take different rows. The
// reductions are shuffles: no barrier, so the warps of a block never wait for each other.
struct SkWarpGroup {
    __device__ int rank() const { return threadIdx.x & 31; }
    __device__ int size() const { return 32; }
    __device__ long long first_row() const {
        return (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    }
    __device__ long long row_stride() const { return (long long)gridDim.x * (blockDim.x >> 5); }
    __device__ void sum4(double& a, double& b, double& c, double& d) const {
        a = sk_warp_sum(a); b = sk_warp_sum(b); c = sk_warp_sum(c); d = sk_warp_sum(d);
    }
    __device__ double max(double v) const { return sk_warp_max(v); }
};

// The group of the calling thread and its row cache in shared memory (the block's, or the
// calling warp's slice of the block's). A one-warp-per-row kernel uses at most SK_WARP_ROWS
// warps of a block: the others return at once (``active``).
__device__ SkBlockGroup sk_block_group() {
    __shared__ double smem[128];
    return SkBlockGroup{smem};
}
__device__ __forceinline__ bool sk_active(const SkBlockGroup&) { return true; }
__device__ __forceinline__ bool sk_active(const SkWarpGroup&) {
    return (threadIdx.x >> 5) < SK_WARP_ROWS;
}
template <typename T> __device__ T* sk_row_cache(const SkBlockGroup&) {
    __shared__ T cache[SK_ROW_CACHE];
    return cache;
}
template <typename T> __device__ T* sk_row_cache(const SkWarpGroup&) {
    __shared__ T cache[SK_WARP_ROWS * SK_WARP_CACHE];
    return cache + (threadIdx.x >> 5) * SK_WARP_CACHE;
}
__device__ __forceinline__ long long sk_row_cache_len(const SkBlockGroup&) { return SK_ROW_CACHE; }
__device__ __forceinline__ long long sk_row_cache_len(const SkWarpGroup&) { return SK_WARP_CACHE; }

// The row ``z`` of ``k`` entries in the group's shared ``cache`` (``cache_len`` entries)
// when it fits there: the searches below pass over a row ~5-15 times, and from shared
// memory only the first read costs global bandwidth (one read of the row, one write of the
// result). Longer rows are read in place (and twice). No barrier: every loop over a row
// gives entry j to member j mod size(), so each thread reads back only the entries it
// stored (shared memory rather than registers because a thread holds up to
// SK_ROW_CACHE / 32 of them). A non-finite entry sets ``*nonfinite`` (the caller raises;
// no separate pass over Z).
template <typename T, typename G>
__device__ const T* sk_cached_row(const G& g, const T* z, long long k, T* cache,
                                  int* nonfinite) {
    const long long cache_len = sk_row_cache_len(g);
    bool bad = false;
    for (long long j = g.rank(); j < k; j += g.size()) {
        const T v = z[j];
        bad |= !isfinite((double)v);
        if (k <= cache_len) cache[j] = v;
    }
    if (bad) atomicExch(nonfinite, 1);
    return k <= cache_len ? cache : z;
}

// Next point of the safeguarded Newton search on a bracket [lo, hi] of the root of a
// piecewise-linear non-increasing g: the root ``newton`` of g's linear piece at the last
// point when it lies strictly inside the bracket, else the midpoint. After
// SK_NEWTON_PASSES passes, Newton and bisection steps alternate, so the number of passes
// stays within about twice that of bisection on adversarial rows.
__device__ __forceinline__ double sk_next_point(double newton, bool has_newton, double lo,
                                                double hi, int pass, bool& last_newton) {
    const bool use = has_newton && lo < newton && newton < hi &&
                     (pass < SK_NEWTON_PASSES || !last_newton);
    last_newton = use;
    return use ? newton : 0.5 * (lo + hi);
}

// |g| at or below this multiple of the rounding scale of its terms counts as a root.
__device__ __forceinline__ bool sk_is_root(double g, double scale) {
    return fabs(g) <= 8.0 * 2.220446049250313e-16 * scale;
}

// One pass of the simplex threshold search on the shifted row (maximum 0), from the sums
// at the point x: a = sum of the entries above x, b their count (>= 1: x < 0), inside the
// entries strictly inside (lo, hi). Returns true when the search stops (a root of
// g(x) = a - x b - radius, or nothing left inside the bracket, or the bracket exhausted in
// floating point); else moves the bracket and x. The search starts at lo = x = -radius,
// hi = 0 (g(-radius) >= 0 > g(0)); the threshold is then sk_simplex_tau.
__device__ __forceinline__ bool sk_simplex_step(double a, double b, double inside, double radius,
                                                int pass, double& lo, double& hi, double& x,
                                                bool& last_newton) {
    const double gx = a - x * b - radius;
    if (sk_is_root(gx, fabs(a) + fabs(x) * b + radius) || inside == 0.0) return true;
    if (gx > 0.0) lo = x; else hi = x;
    x = sk_next_point((a - radius) / b, true, lo, hi, pass, last_newton);
    return !(lo < x && x < hi);
}

__device__ __forceinline__ double sk_simplex_tau(double a, double b, double radius, double lo,
                                                 double hi) {
    return fmin(fmax((a - radius) / b, lo), hi);
}

template <typename T, typename G>
__device__ double sk_simplex_threshold(const G& g, const T* z, long long k, double zmax,
                                       double radius) {
    double lo = -radius, hi = 0.0, x = -radius;
    double a = 0.0, b = 1.0;
    bool last_newton = false;
    for (int pass = 0; pass < SK_MAX_PASSES; ++pass) {
        double inside = 0.0, unused = 0.0;
        a = 0.0; b = 0.0;
        for (long long j = g.rank(); j < k; j += g.size()) {
            const double v = (double)z[j] - zmax;
            if (v > x) { a += v; b += 1.0; }
            if (v > lo && v < hi) inside += 1.0;
        }
        g.sum4(a, b, inside, unused);
        if (sk_simplex_step(a, b, inside, radius, pass, lo, hi, x, last_newton)) break;
    }
    return sk_simplex_tau(a, b, radius, lo, hi);
}

#endif  // SPARSEKIT_ROW_COMMON_CU
