// Row-wise Euclidean projections onto the sparsemax family (sparsekit.gpu.projections).
//
// A non-finite entry of Z sets ``*nonfinite`` (then the results are not to be used).
// Launch: one thread block per row (grid-stride over rows), blockDim.x a multiple of 32,
// dynamic shared memory none (static: 128 doubles, and a row of up to SK_ROW_CACHE entries,
// which the searches then read from shared memory: one read of the row from global
// memory); the ``*_warp_*`` kernels: one warp per row, up to SK_WARP_ROWS rows per block
// (blockDim.x <= 32 SK_WARP_ROWS), a row cache of SK_WARP_CACHE entries per warp, for
// short rows (a block per row would leave most of its threads idle). Each kernel writes the projection P and
// the threshold tau of every row, with P = clip(Z - tau * w, 0, upper) as in the CPU kernels
// (sparsekit/_cython/_projections.pxd): upper = +inf for the simplex, 1 otherwise; w = W
// when ``weighted`` is non-zero, else 1 (W is then never read: any valid pointer does);
// tau = 0 when an inequality constraint is inactive.
// Equations: Martins & Astudillo 2016 (simplex), Niculae & Martins 2020 (capped simplex,
// Pardalos-Kovoor Prop. 5; budget, knapsack, at-least-one, at-most-one polytopes).
#include "row_common.cu"

// Sum constraint of the capped problems {0 <= p <= 1, sum_j w_j p_j (mode) budget}.
#define SK_MODE_EQ 0  // capped simplex
#define SK_MODE_LE 1  // knapsack, budget, at-most-one
#define SK_MODE_GE 2  // at-least-one
#define SK_MODE_BOX 3 // no sum constraint

// Simplex {p >= 0, sum p = radius}: shift by the row maximum (exact shift invariance).
template <typename T, typename G>
__device__ void sk_project_simplex(const G& g, const T* Z, T* P, double* tau, long long n,
                                   long long k, double radius, int* nonfinite) {
    if (!sk_active(g)) return;
    T* cache = sk_row_cache<T>(g);
    for (long long row = g.first_row(); row < n; row += g.row_stride()) {
        const T* z = sk_cached_row<T>(g, Z + row * k, k, cache, nonfinite);
        T* p = P + row * k;
        double m = -sk_inf();
        for (long long j = g.rank(); j < k; j += g.size()) m = fmax(m, (double)z[j]);
        const double zmax = g.max(m);
        const double t = sk_simplex_threshold<T>(g, z, k, zmax, radius);
        for (long long j = g.rank(); j < k; j += g.size())
            p[j] = (T)fmax((double)z[j] - zmax - t, 0.0);
        if (g.rank() == 0) tau[row] = t + zmax;
    }
}

// Capped problems: g(t) = sum_j w_j clip(z_j - t w_j, 0, 1) - budget is continuous,
// piecewise linear and non-increasing, with breakpoints z_j / w_j and (z_j - 1) / w_j.
// The search runs on the scores shifted by r, z'_j = z_j - r w_j (t = r + t'), first with
// r = max z_j / w_j, which keeps the top scores exact: unshifted, z_j - 1 rounds to z_j past
// 2^53 and the [0, 1] resolution is lost. Coordinates far below r lose the bits of
// w_j |t'| in the shift; when the root lies that far below the top (huge scores capped at
// 1, tiny weights), the search is redone with r moved to the root found, ~ulp(r) off, until
// r stops moving (as sparsekit/_cython/_projections.pyx, _capped_project, does).
// Safeguarded Newton search from the lower end of the bracket, as in sk_simplex_threshold;
// when no breakpoint is left inside the bracket,
// t = (sum_F w z + sum_U w - budget) / sum_F w^2 is exact (F: 0 < p < 1, U: p = 1).
template <typename T, typename G>
__device__ double sk_capped_root(const G& g, const T* z, const T* W, int weighted,
                                 long long k, double budget, int mode, double r) {
    double neg_lo = -sk_inf(), top = -sk_inf();
    for (long long j = g.rank(); j < k; j += g.size()) {
        const double w = weighted ? (double)W[j] : 1.0, v = (double)z[j] - r * w;
        neg_lo = fmax(neg_lo, weighted ? (1.0 - v) / w : 1.0 - v);  // no division by 1
        top = fmax(top, weighted ? v / w : v);
    }
    double lo = -g.max(neg_lo), hi = fmax(g.max(top), 0.0);
    if (mode == SK_MODE_LE) lo = fmax(lo, -r);  // g(0) > 0: root in (0, hi]
    if (mode == SK_MODE_GE) hi = fmin(hi, -r);  // g(0) < 0: root in [lo, 0)
    double x = lo, a = 0.0, b = 0.0, c = 0.0;  // g(lo) >= 0
    bool last_newton = false, at_root = false;
    for (int pass = 0; pass < SK_MAX_PASSES; ++pass) {
        double inside = 0.0;
        a = 0.0; b = 0.0; c = 0.0;
        for (long long j = g.rank(); j < k; j += g.size()) {
            const double w = weighted ? (double)W[j] : 1.0;
            const double v = (double)z[j] - r * w;
            const double y = v - x * w;
            if (y >= 1.0) c += w;
            else if (y > 0.0) { a += w * v; b += w * w; }
            const double t0 = weighted ? v / w : v, t1 = weighted ? (v - 1.0) / w : v - 1.0;
            inside += (double)(t0 > lo && t0 < hi) + (double)(t1 > lo && t1 < hi);
        }
        g.sum4(a, b, c, inside);
        const double gx = a - x * b + c - budget;
        if (sk_is_root(gx, fabs(a) + fabs(x) * b + c + budget)) {
            at_root = true;  // x itself: the sets read at x may sit on a breakpoint (a
            break;           // coordinate at p = 1 or 0 exactly) and leave b ~ 0
        }
        if (inside == 0.0) {
            // g is linear on the bracket: read its piece at an interior point
            // (at x = lo, coordinates with p = 1 exactly there are free inside)
            if (lo < x && x < hi) break;
            x = 0.5 * (lo + hi);
            continue;
        }
        if (gx > 0.0) lo = x; else hi = x;
        const double newton = b > 0.0 ? (a + c - budget) / b : 0.0;
        x = sk_next_point(newton, b > 0.0, lo, hi, pass, last_newton);
        // across many magnitudes (huge scores, a moved r) halve the exponent, not the
        // interval: ~10 passes, not ~1000; a bracket around 0 is split there first
        if (!last_newton) {
            if (lo < 0.0 && hi > 0.0) x = 0.0;
            else if (hi <= 0.0 && hi - lo > 1e3 * fmax(1.0, -hi))
                x = -sqrt(-lo) * sqrt(fmax(1.0, -hi));  // two roots: no overflow at 1e300
            else if (lo >= 0.0 && hi - lo > 1e3 * fmax(1.0, lo))
                x = sqrt(hi) * sqrt(fmax(1.0, lo));
        }
        if (!(lo < x && x < hi)) break;
    }
    const double t = (b > 0.0 && !at_root) ? (a + c - budget) / b : x;
    return fmin(fmax(t, lo), hi);
}

template <typename T, typename G>
__device__ void sk_project_capped(const G& g, const T* Z, const T* W, int weighted, T* P,
                                  double* tau, long long n, long long k, double budget,
                                  int mode, int* nonfinite) {
    if (!sk_active(g)) return;
    T* cache = sk_row_cache<T>(g);
    // max w |t'| above which the shift lost bits that matter (float32: ties of its keys
    // in the CPU kernel; here the same limits, so that both kernels agree)
    const double limit = sizeof(T) == 4 ? 16.0 : 4096.0;
    for (long long row = g.first_row(); row < n; row += g.row_stride()) {
        const T* z = sk_cached_row<T>(g, Z + row * k, k, cache, nonfinite);
        T* p = P + row * k;
        double t = 0.0, r = 0.0;
        bool active = false;
        if (mode != SK_MODE_BOX) {
            // g(0), the shift r and the largest weight in one pass
            double s0 = 0.0, r_part = -sk_inf(), w_part = 0.0, unused = 0.0;
            for (long long j = g.rank(); j < k; j += g.size()) {
                const double w = weighted ? (double)W[j] : 1.0, v = (double)z[j];
                s0 += w * fmin(fmax(v, 0.0), 1.0);
                r_part = fmax(r_part, v / w);
                w_part = fmax(w_part, w);
            }
            r = g.max(r_part);
            const double wmax = g.max(w_part);
            g.sum4(s0, unused, unused, unused);
            const bool inactive = (mode == SK_MODE_LE && s0 <= budget) ||
                                  (mode == SK_MODE_GE && s0 >= budget);
            if (!inactive) {
                active = true;
                t = sk_capped_root(g, z, W, weighted, k, budget, mode, r);
                // each redo moves r to within ~ulp(r) of the answer, ~16 decimal orders
                // per redo (as many as ~20 from 1e300); stop once r no longer moves
                for (int redo = 0; redo < 64 && fabs(t) * wmax > limit && r + t != r; ++redo) {
                    r += t;
                    t = sk_capped_root(g, z, W, weighted, k, budget, mode, r);
                }
            } else {
                r = 0.0;  // inactive: t = 0 in the caller's frame
            }
        }
        for (long long j = g.rank(); j < k; j += g.size()) {
            const double w = weighted ? (double)W[j] : 1.0;
            const double q = ((double)z[j] - r * w) - t * w;
            p[j] = (T)(q != q ? q : fmin(fmax(q, 0.0), 1.0));  // NaN (overflow) stays NaN
        }
        if (g.rank() == 0) {
            // an active inequality has t > 0 (LE) or t < 0 (GE) even where r + t' rounds to 0
            double t_out = r + t;
            if (active && mode == SK_MODE_LE) t_out = fmax(t_out, 1.1754943508222875e-38);
            if (active && mode == SK_MODE_GE) t_out = fmin(t_out, -1.1754943508222875e-38);
            tau[row] = t_out;
        }
    }
}

// Jacobian-vector product at a projection P with threshold tau (Niculae & Martins 2020,
// Prop. 6): on the free set I, out_I = v_I - w_I (w_I . v_I) / (w_I . w_I) when the sum
// constraint is active, else v_I; out = 0 off I. Free set: p > 0 (simplex), 0 < p < 1.
// An equality constraint (``equality``: simplex, capped simplex) is always active, an
// inequality one where tau != 0.
template <typename T, typename G>
__device__ void sk_projection_jvp(const G& g, const T* P, const double* tau, const T* V,
                                  const T* W, int weighted, T* OUT, long long n, long long k,
                                  int simplex, int equality) {
    if (!sk_active(g)) return;
    for (long long row = g.first_row(); row < n; row += g.row_stride()) {
        const T* p = P + row * k;
        const T* v = V + row * k;
        T* out = OUT + row * k;
        const bool active = equality || tau[row] != 0.0;
        double wv = 0.0, ww = 0.0, unused = 0.0, unused2 = 0.0;
        for (long long j = g.rank(); j < k; j += g.size()) {
            const double pj = (double)p[j], w = weighted ? (double)W[j] : 1.0;
            if (pj > 0.0 && (simplex || pj < 1.0)) { wv += w * (double)v[j]; ww += w * w; }
        }
        g.sum4(wv, ww, unused, unused2);
        const double coef = (active && ww > 0.0) ? wv / ww : 0.0;
        for (long long j = g.rank(); j < k; j += g.size()) {
            const double pj = (double)p[j], w = weighted ? (double)W[j] : 1.0;
            const bool free_j = pj > 0.0 && (simplex || pj < 1.0);
            out[j] = (T)(free_j ? (double)v[j] - w * coef : 0.0);
        }
    }
}

// Rows too long for one block and too few to fill the device (sparsekit.gpu.projections:
// ``split_rows``): row r is cut into chunks of ``chunk`` entries, one block per (row, chunk)
// pair (pairs p = r * n_chunks + c, grid-stride), and the search of sk_simplex_threshold
// runs pass by pass across launches: ``simplex_split_max`` takes the chunks' maxima and
// checks the entries, ``simplex_split_start`` sets each row's state, then each pass is
// ``simplex_split_sums`` (the chunks' partial sums at the row's point) and
// ``simplex_split_step`` (one thread per row: the sums in chunk order, the same for any
// grid, and the next point of the search), until no row is pending; ``simplex_split_write``
// writes P and tau. Row state (SK_SPLIT_STATE doubles): the shifted maximum, the bracket
// lo and hi, the point x, the sums a and b at it, done, and the last step's kind.
#define SK_SPLIT_STATE 8

// The (row, chunk) pair p = row * n_chunks + c of rows of k entries: its row and its
// entries [lo, hi).
struct SkChunk {
    long long row, lo, hi;
};
__device__ __forceinline__ long long sk_n_chunks(long long k, long long chunk) {
    return (k + chunk - 1) / chunk;
}
__device__ __forceinline__ SkChunk sk_chunk(long long p, long long k, long long chunk) {
    const long long n_chunks = sk_n_chunks(k, chunk), lo = (p % n_chunks) * chunk;
    return SkChunk{p / n_chunks, lo, lo + chunk < k ? lo + chunk : k};
}

template <typename T>
__device__ void sk_split_max(const T* Z, long long n, long long k, long long chunk,
                             double* partial, int* nonfinite) {
    __shared__ double smem[128];
    for (long long p = blockIdx.x; p < n * sk_n_chunks(k, chunk); p += gridDim.x) {
        const SkChunk c = sk_chunk(p, k, chunk);
        const T* z = Z + c.row * k;
        double m = -sk_inf();
        bool bad = false;
        for (long long j = c.lo + threadIdx.x; j < c.hi; j += blockDim.x) {
            const double v = (double)z[j];
            bad |= !isfinite(v);
            m = fmax(m, v);
        }
        if (bad) atomicExch(nonfinite, 1);
        m = sk_block_max(m, smem);
        if (threadIdx.x == 0) partial[p] = m;
    }
}

template <typename T>
__device__ void sk_split_sums(const T* Z, long long n, long long k, long long chunk,
                              const double* state, double* partial) {
    __shared__ double smem[128];
    for (long long p = blockIdx.x; p < n * sk_n_chunks(k, chunk); p += gridDim.x) {
        const SkChunk c = sk_chunk(p, k, chunk);
        const double* s = state + c.row * SK_SPLIT_STATE;
        if (s[6] != 0.0) continue;  // the row is done (the same for the whole block)
        const T* z = Z + c.row * k;
        const double zmax = s[0], blo = s[1], bhi = s[2], x = s[3];
        double a = 0.0, b = 0.0, inside = 0.0, unused = 0.0;
        for (long long j = c.lo + threadIdx.x; j < c.hi; j += blockDim.x) {
            const double v = (double)z[j] - zmax;
            if (v > x) { a += v; b += 1.0; }
            if (v > blo && v < bhi) inside += 1.0;
        }
        sk_block_sum4(a, b, inside, unused, smem);
        if (threadIdx.x == 0) {
            partial[3 * p] = a;
            partial[3 * p + 1] = b;
            partial[3 * p + 2] = inside;
        }
    }
}

template <typename T>
__device__ void sk_split_write(const T* Z, T* P, double* tau, long long n, long long k,
                               long long chunk, double radius, const double* state) {
    for (long long p = blockIdx.x; p < n * sk_n_chunks(k, chunk); p += gridDim.x) {
        const SkChunk c = sk_chunk(p, k, chunk);
        const double* s = state + c.row * SK_SPLIT_STATE;
        const double t = sk_simplex_tau(s[4], s[5], radius, s[1], s[2]);
        for (long long j = c.lo + threadIdx.x; j < c.hi; j += blockDim.x)
            P[c.row * k + j] = (T)fmax((double)Z[c.row * k + j] - s[0] - t, 0.0);
        if (c.lo == 0 && threadIdx.x == 0) tau[c.row] = t + s[0];
    }
}

extern "C" {
__global__ void project_simplex_f32(const float* Z, float* P, double* tau, long long n,
                                    long long k, double radius, int* nonfinite) {
    sk_project_simplex<float>(sk_block_group(), Z, P, tau, n, k, radius, nonfinite);
}
__global__ void project_simplex_warp_f32(const float* Z, float* P, double* tau, long long n,
                                         long long k, double radius, int* nonfinite) {
    sk_project_simplex<float>(SkWarpGroup(), Z, P, tau, n, k, radius, nonfinite);
}
__global__ void project_simplex_f64(const double* Z, double* P, double* tau, long long n,
                                    long long k, double radius, int* nonfinite) {
    sk_project_simplex<double>(sk_block_group(), Z, P, tau, n, k, radius, nonfinite);
}
__global__ void project_simplex_warp_f64(const double* Z, double* P, double* tau, long long n,
                                         long long k, double radius, int* nonfinite) {
    sk_project_simplex<double>(SkWarpGroup(), Z, P, tau, n, k, radius, nonfinite);
}
__global__ void project_capped_f32(const float* Z, const float* W, int weighted, float* P,
                                   double* tau, long long n, long long k, double budget,
                                   int mode, int* nonfinite) {
    sk_project_capped<float>(sk_block_group(), Z, W, weighted, P, tau, n, k, budget, mode, nonfinite);
}
__global__ void project_capped_warp_f32(const float* Z, const float* W, int weighted, float* P,
                                        double* tau, long long n, long long k, double budget,
                                        int mode, int* nonfinite) {
    sk_project_capped<float>(SkWarpGroup(), Z, W, weighted, P, tau, n, k, budget, mode, nonfinite);
}
__global__ void project_capped_f64(const double* Z, const double* W, int weighted, double* P,
                                   double* tau, long long n, long long k, double budget,
                                   int mode, int* nonfinite) {
    sk_project_capped<double>(sk_block_group(), Z, W, weighted, P, tau, n, k, budget, mode, nonfinite);
}
__global__ void project_capped_warp_f64(const double* Z, const double* W, int weighted,
                                        double* P, double* tau, long long n, long long k,
                                        double budget, int mode, int* nonfinite) {
    sk_project_capped<double>(SkWarpGroup(), Z, W, weighted, P, tau, n, k, budget, mode, nonfinite);
}
__global__ void projection_jvp_f32(const float* P, const double* tau, const float* V,
                                   const float* W, int weighted, float* OUT, long long n,
                                   long long k, int simplex, int equality) {
    sk_projection_jvp<float>(sk_block_group(), P, tau, V, W, weighted, OUT, n, k, simplex, equality);
}
__global__ void projection_jvp_warp_f32(const float* P, const double* tau, const float* V,
                                        const float* W, int weighted, float* OUT, long long n,
                                        long long k, int simplex, int equality) {
    sk_projection_jvp<float>(SkWarpGroup(), P, tau, V, W, weighted, OUT, n, k, simplex, equality);
}
__global__ void projection_jvp_f64(const double* P, const double* tau, const double* V,
                                   const double* W, int weighted, double* OUT, long long n,
                                   long long k, int simplex, int equality) {
    sk_projection_jvp<double>(sk_block_group(), P, tau, V, W, weighted, OUT, n, k, simplex, equality);
}
__global__ void projection_jvp_warp_f64(const double* P, const double* tau, const double* V,
                                        const double* W, int weighted, double* OUT, long long n,
                                        long long k, int simplex, int equality) {
    sk_projection_jvp<double>(SkWarpGroup(), P, tau, V, W, weighted, OUT, n, k, simplex, equality);
}

__global__ void simplex_split_max_f32(const float* Z, long long n, long long k,
                                      long long chunk, double* partial, int* nonfinite) {
    sk_split_max<float>(Z, n, k, chunk, partial, nonfinite);
}
__global__ void simplex_split_max_f64(const double* Z, long long n, long long k,
                                      long long chunk, double* partial, int* nonfinite) {
    sk_split_max<double>(Z, n, k, chunk, partial, nonfinite);
}
// One thread per row: the row's maximum from its chunks' and the search's first state.
__global__ void simplex_split_start_f64(const double* partial, long long n, long long n_chunks,
                                        double radius, double* state) {
    for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < n;
         row += (long long)gridDim.x * blockDim.x) {
        double m = -sk_inf();
        for (long long c = 0; c < n_chunks; ++c) m = fmax(m, partial[row * n_chunks + c]);
        double* s = state + row * SK_SPLIT_STATE;
        s[0] = m;        // the shift
        s[1] = -radius;  // lo: g(-radius) >= 0
        s[2] = 0.0;      // hi: g(0) < 0
        s[3] = -radius;  // x
        s[4] = 0.0;      // a
        s[5] = 1.0;      // b
        s[6] = 0.0;      // done
        s[7] = 0.0;      // the last step was Newton's
    }
}
__global__ void simplex_split_sums_f32(const float* Z, long long n, long long k,
                                       long long chunk, const double* state, double* partial) {
    sk_split_sums<float>(Z, n, k, chunk, state, partial);
}
__global__ void simplex_split_sums_f64(const double* Z, long long n, long long k,
                                       long long chunk, const double* state, double* partial) {
    sk_split_sums<double>(Z, n, k, chunk, state, partial);
}
// One thread per row: one pass of sk_simplex_threshold from the chunks' sums (in chunk
// order); sets ``*pending`` while a row is not done.
__global__ void simplex_split_step_f64(const double* partial, long long n, long long n_chunks,
                                       double radius, int pass, double* state, int* pending) {
    for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < n;
         row += (long long)gridDim.x * blockDim.x) {
        double* s = state + row * SK_SPLIT_STATE;
        if (s[6] != 0.0) continue;
        double a = 0.0, b = 0.0, inside = 0.0;
        for (long long c = 0; c < n_chunks; ++c) {
            const double* q = partial + 3 * (row * n_chunks + c);
            a += q[0];
            b += q[1];
            inside += q[2];
        }
        double lo = s[1], hi = s[2], x = s[3];
        bool last_newton = s[7] != 0.0;
        const bool stop = sk_simplex_step(a, b, inside, radius, pass, lo, hi, x, last_newton)
                          || pass + 1 >= SK_MAX_PASSES;
        s[1] = lo;
        s[2] = hi;
        s[3] = x;
        s[4] = a;
        s[5] = b;
        s[7] = last_newton ? 1.0 : 0.0;
        if (stop) s[6] = 1.0;
        else atomicExch(pending, 1);
    }
}
__global__ void simplex_split_write_f32(const float* Z, float* P, double* tau, long long n,
                                        long long k, long long chunk, double radius,
                                        const double* state) {
    sk_split_write<float>(Z, P, tau, n, k, chunk, radius, state);
}
__global__ void simplex_split_write_f64(const double* Z, double* P, double* tau, long long n,
                                        long long k, long long chunk, double radius,
                                        const double* state) {
    sk_split_write<double>(Z, P, tau, n, k, chunk, radius, state);
}
}  // extern "C"
