// Device helpers shared by the row kernels of sparsekit/gpu (included, not launched).
//
// One thread block handles one row of K values; blockDim.x is a multiple of 32 (<= 1024).
// Accumulation is in double for float32 and float64 rows alike, as in the CPU kernels
// (sparsekit/_cython/_projections.pxd).
#ifndef SPARSEKIT_ROW_COMMON_CU
#define SPARSEKIT_ROW_COMMON_CU

#define SK_FULL_MASK 0xffffffffu
#define SK_MAX_BISECTIONS 200

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

// Threshold of the simplex projection of one row (shifted by its maximum):
// returns tau' with sum_j max(z_j - zmax - tau', 0) = radius, tau' in [-radius, 0).
//
// Bracketing search on the piecewise-linear, decreasing g(t) = sum_j (z'_j - t)_+ - radius:
// each pass evaluates g at the midpoint and counts the breakpoints z'_j strictly inside the
// bracket; once none is left, g is linear there and its root is exact:
// tau' = (sum_{z'_j > mid} z'_j - radius) / #{z'_j > mid}. O(K) work per pass, about
// log2(K) passes for spread-out values; no sort.
template <typename T>
__device__ double sk_simplex_threshold(const T* z, long long k, double zmax, double radius,
                                       double* smem) {
    double lo = -radius, hi = 0.0, mid = 0.5 * (lo + hi);
    double sum_free = 0.0, n_free = 1.0;
    for (int it = 0; it < SK_MAX_BISECTIONS; ++it) {
        mid = 0.5 * (lo + hi);
        double a = 0.0, b = 0.0, inside = 0.0, unused = 0.0;
        for (long long j = threadIdx.x; j < k; j += blockDim.x) {
            const double v = (double)z[j] - zmax;
            if (v > mid) { a += v; b += 1.0; }
            if (v > lo && v < hi) inside += 1.0;
        }
        sk_block_sum4(a, b, inside, unused, smem);
        sum_free = a; n_free = b;
        if (inside == 0.0 || mid <= lo || mid >= hi) break;
        const double g = a - mid * b - radius;
        if (g == 0.0) return mid;
        if (g > 0.0) lo = mid; else hi = mid;
    }
    const double tau = (sum_free - radius) / n_free;  // n_free >= 1: zmax itself is free
    return fmin(fmax(tau, lo), hi);
}

#endif  // SPARSEKIT_ROW_COMMON_CU
