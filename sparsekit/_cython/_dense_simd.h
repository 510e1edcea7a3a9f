/* The multinomial products of a dense X with few classes (K <= 12), in AVX2 and FMA.
 *
 * X W and Xᵀ R with K columns are skinny matrix products: the BLAS route copies the
 * listed columns into float64 panels, BLAS copies those again into its packed panels, and
 * its kernels are shaped for wide products. These kernels read a few columns of X in
 * place (float64 or float32, converted in registers) and keep the K numbers of a row of W
 * or R in up to three vectors of four (K padded to Kp = 4 KV): each entry of X is
 * broadcast and multiplied into them, NI rows (X W) or NJ columns (Xᵀ R) at a time, all
 * in registers. Each sum adds its terms in the order of the rows (Xᵀ R) or of the columns
 * (X W) given.
 *
 * sk_simd_available()   1 where this CPU runs AVX2 and FMA and the compiler built the
 *                       kernels (gcc or clang on x86-64), 0 elsewhere: the callers then
 *                       take BLAS, and the kernels below are never called.
 * sk_margins_{d,f}(xc, ch, V, KV, nb, Z)
 *                       Z[i, :] += Σ_c xc[c][i] V[c, :] for i < nb: xc[c] points at the
 *                       first of the nb rows of column c, V (ch × Kp) and Z (nb × Kp) are
 *                       row-major.
 * sk_rmatmat_{d,f}(xc, ch, R, ldr, KV, nb, out)
 *                       out[c, :] += Σ_i xc[c][i] R[i, :] for c < ch: R's rows are ldr
 *                       numbers apart and Kp of each are read (where ldr < Kp, the next
 *                       row's first: they must lie in R's buffer, and out's lanes past K
 *                       are then not the product), out (ch × Kp) is row-major.
 */
#ifndef SPARSEKIT_DENSE_SIMD_H
#define SPARSEKIT_DENSE_SIMD_H
#include <stddef.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)

#define SK_AVX2 __attribute__((target("avx2,fma")))
#define SK_INLINE static inline __attribute__((always_inline)) SK_AVX2

typedef double sk_v4d __attribute__((vector_size(32)));

static int sk_simd_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

SK_INLINE sk_v4d sk_load(const double* p) { sk_v4d v; memcpy(&v, p, sizeof v); return v; }
SK_INLINE void sk_store(double* p, sk_v4d v) { memcpy(p, &v, sizeof v); }
SK_INLINE sk_v4d sk_splat(double a) { return (sk_v4d){a, a, a, a}; }

/* NI rows from row i, KV vectors of classes: NI * KV <= 12 accumulators */
#define SK_MARGIN_ROWS(S, T)                                                                  \
SK_INLINE void sk_margin_rows_##S(const T* const* xc, ptrdiff_t ch, const double* V,         \
                                  const int KV, const int NI, ptrdiff_t i, double* Z) {      \
    sk_v4d acc[12], w[3];                                                                    \
    for (int r = 0; r < NI; r++)                                                             \
        for (int v = 0; v < KV; v++) acc[r * KV + v] = sk_load(Z + (i + r) * 4 * KV + 4 * v);\
    for (ptrdiff_t c = 0; c < ch; c++) {                                                     \
        const T* x = xc[c] + i;                                                              \
        for (int v = 0; v < KV; v++) w[v] = sk_load(V + c * 4 * KV + 4 * v);                \
        for (int r = 0; r < NI; r++) {                                                       \
            sk_v4d xr = sk_splat((double)x[r]);                                              \
            for (int v = 0; v < KV; v++) acc[r * KV + v] += xr * w[v];                       \
        }                                                                                    \
    }                                                                                        \
    for (int r = 0; r < NI; r++)                                                             \
        for (int v = 0; v < KV; v++) sk_store(Z + (i + r) * 4 * KV + 4 * v, acc[r * KV + v]);\
}

/* NJ columns from column j, KV vectors of classes: NJ * KV <= 12 accumulators */
#define SK_RMATMAT_COLUMNS(S, T)                                                              \
SK_INLINE void sk_rmatmat_columns_##S(const T* const* xc, ptrdiff_t j, const int NJ,         \
                                      const double* R, ptrdiff_t ldr, const int KV,          \
                                      ptrdiff_t nb, double* out) {                           \
    sk_v4d acc[12], r[3];                                                                    \
    for (int c = 0; c < NJ; c++)                                                             \
        for (int v = 0; v < KV; v++) acc[c * KV + v] = sk_load(out + (j + c) * 4 * KV + 4 * v);\
    for (ptrdiff_t i = 0; i < nb; i++) {                                                     \
        for (int v = 0; v < KV; v++) r[v] = sk_load(R + i * ldr + 4 * v);                    \
        for (int c = 0; c < NJ; c++) {                                                       \
            sk_v4d xc_i = sk_splat((double)xc[j + c][i]);                                    \
            for (int v = 0; v < KV; v++) acc[c * KV + v] += xc_i * r[v];                     \
        }                                                                                    \
    }                                                                                        \
    for (int c = 0; c < NJ; c++)                                                             \
        for (int v = 0; v < KV; v++) sk_store(out + (j + c) * 4 * KV + 4 * v, acc[c * KV + v]);\
}

/* the blocks of 8 (KV = 1) or 4 rows or columns, then one at a time; the counts are
 * constants in each call, so that the accumulators stay in registers */
#define SK_KERNELS(S, T)                                                                      \
SK_MARGIN_ROWS(S, T)                                                                         \
SK_RMATMAT_COLUMNS(S, T)                                                                     \
SK_AVX2 static void sk_margins_##S(const T* const* xc, ptrdiff_t ch, const double* V,        \
                                   int KV, ptrdiff_t nb, double* Z) {                        \
    ptrdiff_t i = 0;                                                                         \
    if (KV == 1) {                                                                           \
        for (; i + 8 <= nb; i += 8) sk_margin_rows_##S(xc, ch, V, 1, 8, i, Z);               \
        for (; i < nb; i++) sk_margin_rows_##S(xc, ch, V, 1, 1, i, Z);                       \
    } else if (KV == 2) {                                                                    \
        for (; i + 4 <= nb; i += 4) sk_margin_rows_##S(xc, ch, V, 2, 4, i, Z);               \
        for (; i < nb; i++) sk_margin_rows_##S(xc, ch, V, 2, 1, i, Z);                       \
    } else {                                                                                 \
        for (; i + 4 <= nb; i += 4) sk_margin_rows_##S(xc, ch, V, 3, 4, i, Z);               \
        for (; i < nb; i++) sk_margin_rows_##S(xc, ch, V, 3, 1, i, Z);                       \
    }                                                                                        \
}                                                                                            \
SK_AVX2 static void sk_rmatmat_##S(const T* const* xc, ptrdiff_t ch, const double* R,        \
                                   ptrdiff_t ldr, int KV, ptrdiff_t nb, double* out) {       \
    ptrdiff_t j = 0;                                                                         \
    if (KV == 1) {                                                                           \
        for (; j + 8 <= ch; j += 8) sk_rmatmat_columns_##S(xc, j, 8, R, ldr, 1, nb, out);    \
        for (; j < ch; j++) sk_rmatmat_columns_##S(xc, j, 1, R, ldr, 1, nb, out);            \
    } else if (KV == 2) {                                                                    \
        for (; j + 4 <= ch; j += 4) sk_rmatmat_columns_##S(xc, j, 4, R, ldr, 2, nb, out);    \
        for (; j < ch; j++) sk_rmatmat_columns_##S(xc, j, 1, R, ldr, 2, nb, out);            \
    } else {                                                                                 \
        for (; j + 4 <= ch; j += 4) sk_rmatmat_columns_##S(xc, j, 4, R, ldr, 3, nb, out);    \
        for (; j < ch; j++) sk_rmatmat_columns_##S(xc, j, 1, R, ldr, 3, nb, out);            \
    }                                                                                        \
}

SK_KERNELS(d, double)
SK_KERNELS(f, float)

#else   /* no AVX2 kernels here: sk_simd_available() is 0 and nothing calls them */

static int sk_simd_available(void) { return 0; }
static void sk_margins_d(const double* const* xc, ptrdiff_t ch, const double* V, int KV,
                         ptrdiff_t nb, double* Z) {}
static void sk_margins_f(const float* const* xc, ptrdiff_t ch, const double* V, int KV,
                         ptrdiff_t nb, double* Z) {}
static void sk_rmatmat_d(const double* const* xc, ptrdiff_t ch, const double* R,
                         ptrdiff_t ldr, int KV, ptrdiff_t nb, double* out) {}
static void sk_rmatmat_f(const float* const* xc, ptrdiff_t ch, const double* R,
                         ptrdiff_t ldr, int KV, ptrdiff_t nb, double* out) {}

#endif
#endif
