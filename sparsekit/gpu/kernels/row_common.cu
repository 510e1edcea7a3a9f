// Device helpers shared by the row kernels of sparsekit/gpu (included, not launched).
//
// One thread block handles one row of K values; blockDim.x is a multiple of 32 (<= 1024).
// Accumulation is in double for float32 and float64 rows alike, as in the CPU kernels
// (sparsekit/_cython/_projections.pxd).
#ifndef SPARSEKIT_ROW_COMMON_CU
#define SPARSEKIT_ROW_COMMON_CU

#define SK_FULL_MASK 0xffffffffu
#define SK_ROW_CACHE 4096  // rows of at most this many entries are read from global memory once
#define SK_MAX_PASSES 200
#define SK_NEWTON_PASSES 16

__device__ __forceinline__ double sk_inf() { return __longlong_as_double(0x7ff0000000000000LL); }

__device__ __forceinline__ double sk_warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(SK_FULL_MASK, v, offset);
    return v;
}

__device__ __forceinline__ double sk_warp_max(double v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmax(v, __shfl_down_sync(SK_FULL_MASK, v, offset));
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

// The row ``z`` of ``k`` entries in the block's shared ``cache`` when it fits there: the
// searches below pass over a row ~5-15 times, and from shared memory only the first read
// costs global bandwidth (one read of the row, one write of the result). Longer rows are
// read in place (and twice). No barrier: every loop over a row gives entry j to thread
// j mod blockDim.x, so each thread reads back only the entries it stored (shared memory
// rather than registers because a thread holds up to SK_ROW_CACHE / 32 of them).
// A non-finite entry sets ``*nonfinite`` (the caller raises; no separate pass over Z).
template <typename T>
__device__ const T* sk_cached_row(const T* z, long long k, T* cache, int* nonfinite) {
    bool bad = false;
    for (long long j = threadIdx.x; j < k; j += blockDim.x) {
        const T v = z[j];
        bad |= !isfinite((double)v);
        if (k <= SK_ROW_CACHE) cache[j] = v;
    }
    if (bad) atomicExch(nonfinite, 1);
    return k <= SK_ROW_CACHE ? cache : z;
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

template <typename T>
__device__ double sk_simplex_threshold(const T* z, long long k, double zmax, double radius,
                                       double* smem) {
    double lo = -radius, hi = 0.0, x = -radius;  // g(-radius) >= 0 > g(0)
    double a = 0.0, b = 1.0;
    bool last_newton = false;
    for (int pass = 0; pass < SK_MAX_PASSES; ++pass) {
        double inside = 0.0, unused = 0.0;
        a = 0.0; b = 0.0;
        for (long long j = threadIdx.x; j < k; j += blockDim.x) {
            const double v = (double)z[j] - zmax;
            if (v > x) { a += v; b += 1.0; }
            if (v > lo && v < hi) inside += 1.0;
        }
        sk_block_sum4(a, b, inside, unused, smem);
        const double g = a - x * b - radius;  // b >= 1: x < 0 = the shifted maximum
        if (sk_is_root(g, fabs(a) + fabs(x) * b + radius) || inside == 0.0) break;
        if (g > 0.0) lo = x; else hi = x;
        x = sk_next_point((a - radius) / b, true, lo, hi, pass, last_newton);
        if (!(lo < x && x < hi)) break;  // bracket exhausted in floating point
    }
    return fmin(fmax((a - radius) / b, lo), hi);
}

#endif  // SPARSEKIT_ROW_COMMON_CU
