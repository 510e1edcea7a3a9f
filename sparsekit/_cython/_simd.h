/* The multinomial products X W and Xᵀ R with few classes (K <= 12), in AVX2 and FMA, for a
 * dense X and for a sparse X by columns (CSC).
 *
 * Dense X: X W and Xᵀ R with K columns are skinny matrix products: the BLAS route copies
 * the listed columns into float64 panels, BLAS copies those again into its packed panels,
 * and its kernels are shaped for wide products. These kernels read a few columns of X in
 * place (float64 or float32, converted in registers) and keep the K numbers of a row of W
 * or R in up to three vectors of four (K padded to Kp = 4 KV): each entry of X is
 * broadcast and multiplied into them, NI rows (X W) or NJ columns (Xᵀ R) at a time, all
 * in registers. Each sum adds its terms in the order of the rows (Xᵀ R) or of the columns
 * (X W) given.
 *
 * Sparse X by columns: each stored entry x of column j adds x W[j, :] to a row of X W, or
 * x R[i, :] to column j's row of Xᵀ R. The scalar loops do that a number at a time, and
 * Xᵀ R's sums wait on each other through memory. Here the K numbers are one to three
 * vectors: W[j, :] stays in registers while X W's rows, kept for a block of rows in a
 * buffer small enough for the L2 cache, are updated in place; Xᵀ R's sums stay in
 * registers, two of them (the column's entries taken alternately, added at the end).
 *
 * sk_simd_available()   1 where this CPU runs AVX2 and FMA and the compiler built the
 *                       kernels (gcc or clang on x86-64), 0 elsewhere: the callers then
 *                       take BLAS or the scalar loops, and the kernels below are never
 *                       called.
 * sk_margins_{d,f}(xc, ch, V, KV, nb, Z)
 *                       Z[i, :] += Σ_c xc[c][i] V[c, :] for i < nb: xc[c] points at the
 *                       first of the nb rows of column c, V (ch × Kp) and Z (nb × Kp) are
 *                       row-major.
 * sk_rmatmat_{d,f}(xc, ch, R, ldr, KV, nb, out)
 *                       out[c, :] += Σ_i xc[c][i] R[i, :] for c < ch: R's rows are ldr
 *                       numbers apart and Kp of each are read (where ldr < Kp, the next
 *                       row's first: they must lie in R's buffer, and out's lanes past K
 *                       are then not the product), out (ch × Kp) is row-major.
 * The sparse kernels take the stored entries' values as double or float (vw: their width
 * in bytes, 8 or 4) and their indices as int64_t or int32_t (iw: 8 or 4).
 * sk_csc_margins(data, vw, rows, iw, pos, end, nc, V, KV, lo, hi, Zb)
 *                       for each column c < nc, its entries p from pos[c] on, before
 *                       end[c] and while rows[p] < hi (rows sorted, all at least lo):
 *                       Zb[rows[p] - lo, :] += data[p] V[c, :]; pos[c] is left at the
 *                       first entry not taken. V (nc × Kp) and Zb are row-major. Returns
 *                       0, or 1 at a row below lo (rows not sorted; the sums incomplete).
 * sk_csc_rmatmat(data, vw, rows, iw, s, e, R, ldr, tail, R_tail, KV, square, ahead, out)
 *                       out[:] = Σ_{s <= p < e} x_p R[rows[p], :] (Kp numbers), x_p =
 *                       data[p] (squared with square): R's rows are ldr numbers apart and
 *                       Kp of each are read (the next row's first where ldr < Kp: lanes
 *                       past K are then not the product); the rows from `tail` on are read
 *                       from R_tail instead (Kp numbers apart: R's rows whose Kp numbers
 *                       would run past its buffer, padded); with ahead > 0, the row of R
 *                       `ahead` entries further on is prefetched.
 * sk_csr_hessp(data, vw, cols, indptr, iw, lo, hi, nc, V, vb, P, ldp, tail, P_tail, sw,
 *              KV, out, out_b)
 *                       the multinomial Hessian product on the rows lo..hi of a CSR X of
 *                       nc columns, each row in one pass: u = vb + Σ_p x_p V[cols[p], :],
 *                       r = sw_i p_i ∘ (u − (p_i · u)), out[cols[p], :] += x_p r and
 *                       out_b += r. V and out (nc × Kp) are row-major, V's and vb's lanes
 *                       past K zero; P's rows (finite) are ldp numbers apart, Kp of each
 *                       read (lanes past K meet u's zeros in p · u; r's and out's lanes past
 *                       K are then not the product), the rows from `tail` on from P_tail (as
 *                       R_tail above). Returns 0, or 1 at the first column index outside
 *                       0..nc-1 (the rows' sums then incomplete).
 */
#ifndef SPARSEKIT_SIMD_H
#define SPARSEKIT_SIMD_H
#include <stddef.h>
#include <stdint.h>
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

/* one column block of X W for a sparse X by columns (see the top) */
#define SK_CSC_MARGINS(S, T, I, B)                                                            \
SK_INLINE int sk_csc_margins_kv_##S##B(const T* data, const I* rows, ptrdiff_t* pos,          \
                                       const ptrdiff_t* end, ptrdiff_t nc, const double* V,   \
                                       const int KV, ptrdiff_t lo, ptrdiff_t hi,              \
                                       double* Zb) {                                          \
    sk_v4d w[3];                                                                             \
    for (ptrdiff_t c = 0; c < nc; c++) {                                                     \
        ptrdiff_t p = pos[c], e = end[c];                                                    \
        for (int v = 0; v < KV; v++) w[v] = sk_load(V + c * 4 * KV + 4 * v);                \
        for (; p < e && rows[p] < hi; p++) {                                                 \
            if ((ptrdiff_t)rows[p] < lo) return 1;        /* rows not sorted */              \
            double* z = Zb + ((ptrdiff_t)rows[p] - lo) * 4 * KV;                             \
            sk_v4d x = sk_splat((double)data[p]);                                            \
            for (int v = 0; v < KV; v++) sk_store(z + 4 * v, sk_load(z + 4 * v) + x * w[v]); \
        }                                                                                    \
        pos[c] = p;                                                                          \
    }                                                                                        \
    return 0;                                                                                \
}                                                                                            \
SK_AVX2 static int sk_csc_margins_##S##B(const T* data, const I* rows, ptrdiff_t* pos,       \
                                         const ptrdiff_t* end, ptrdiff_t nc,                  \
                                         const double* V, int KV, ptrdiff_t lo,               \
                                         ptrdiff_t hi, double* Zb) {                          \
    if (KV == 1) return sk_csc_margins_kv_##S##B(data, rows, pos, end, nc, V, 1, lo, hi, Zb);\
    if (KV == 2) return sk_csc_margins_kv_##S##B(data, rows, pos, end, nc, V, 2, lo, hi, Zb);\
    return sk_csc_margins_kv_##S##B(data, rows, pos, end, nc, V, 3, lo, hi, Zb);             \
}

/* one column of Xᵀ R for a sparse X by columns (see the top) */
#define SK_CSC_RMATMAT(S, T, I, B)                                                            \
SK_INLINE void sk_csc_rmatmat_kv_##S##B(const T* data, const I* rows, ptrdiff_t s,            \
                                        ptrdiff_t e, const double* R, ptrdiff_t ldr,          \
                                        ptrdiff_t tail, const double* R_tail, const int KV,   \
                                        int square, ptrdiff_t ahead, double* out) {           \
    sk_v4d a0[3], a1[3];                                                                     \
    for (int v = 0; v < KV; v++) a0[v] = a1[v] = sk_splat(0.0);                              \
    for (ptrdiff_t p = s; p < e; p++) {                                                      \
        ptrdiff_t i = (ptrdiff_t)rows[p];                                                    \
        const double* r = i >= tail ? R_tail + (i - tail) * 4 * KV : R + i * ldr;            \
        double x = (double)data[p];                                                          \
        if (ahead && p + ahead < e) __builtin_prefetch(R + (ptrdiff_t)rows[p + ahead] * ldr); \
        if (square) x *= x;                                                                  \
        sk_v4d xs = sk_splat(x);                                                             \
        if ((p - s) & 1)                                                                     \
            for (int v = 0; v < KV; v++) a1[v] += xs * sk_load(r + 4 * v);                   \
        else                                                                                 \
            for (int v = 0; v < KV; v++) a0[v] += xs * sk_load(r + 4 * v);                   \
    }                                                                                        \
    for (int v = 0; v < KV; v++) sk_store(out + 4 * v, a0[v] + a1[v]);                       \
}                                                                                            \
SK_AVX2 static int sk_csc_rmatmat_##S##B(const T* data, const I* rows, ptrdiff_t s,          \
                                          ptrdiff_t e, const double* R, ptrdiff_t ldr,        \
                                          ptrdiff_t tail, const double* R_tail, int KV,       \
                                          int square, ptrdiff_t ahead, double* out) {         \
    if (KV == 1)                                                                             \
        sk_csc_rmatmat_kv_##S##B(data, rows, s, e, R, ldr, tail, R_tail, 1, square, ahead,   \
                                 out);                                                       \
    else if (KV == 2)                                                                        \
        sk_csc_rmatmat_kv_##S##B(data, rows, s, e, R, ldr, tail, R_tail, 2, square, ahead,   \
                                 out);                                                       \
    else                                                                                     \
        sk_csc_rmatmat_kv_##S##B(data, rows, s, e, R, ldr, tail, R_tail, 3, square, ahead,   \
                                 out);                                                       \
    return 0;                                                                                \
}


/* the multinomial Hessian product on a block of rows of a CSR X (see the top) */
#define SK_CSR_HESSP(S, T, I, B)                                                              \
SK_INLINE int sk_csr_hessp_kv_##S##B(const T* data, const I* cols, const I* indptr,          \
                                     ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t nc,                \
                                     const double* V, const double* vb, const double* P,      \
                                     ptrdiff_t ldp, ptrdiff_t tail, const double* P_tail,     \
                                     const double* sw, const int KV, double* out,             \
                                     double* out_b) {                                         \
    sk_v4d u0[3], u1[3], pv[3], r[3], ob[3];                                                 \
    for (int v = 0; v < KV; v++) ob[v] = sk_load(out_b + 4 * v);                             \
    for (ptrdiff_t i = lo; i < hi; i++) {                                                    \
        ptrdiff_t p = (ptrdiff_t)indptr[i], e = (ptrdiff_t)indptr[i + 1];                    \
        for (int v = 0; v < KV; v++) { u0[v] = sk_load(vb + 4 * v); u1[v] = sk_splat(0.0); } \
        for (; p + 1 < e; p += 2) {                                                          \
            if ((size_t)cols[p] >= (size_t)nc || (size_t)cols[p + 1] >= (size_t)nc)          \
                return 1;                                                                    \
            const double* w0 = V + (ptrdiff_t)cols[p] * 4 * KV;                              \
            const double* w1 = V + (ptrdiff_t)cols[p + 1] * 4 * KV;                          \
            sk_v4d x0 = sk_splat((double)data[p]), x1 = sk_splat((double)data[p + 1]);       \
            for (int v = 0; v < KV; v++) {                                                   \
                u0[v] += x0 * sk_load(w0 + 4 * v);                                           \
                u1[v] += x1 * sk_load(w1 + 4 * v);                                           \
            }                                                                                \
        }                                                                                    \
        if (p < e) {                                                                         \
            if ((size_t)cols[p] >= (size_t)nc) return 1;                                     \
            const double* w0 = V + (ptrdiff_t)cols[p] * 4 * KV;                              \
            sk_v4d x0 = sk_splat((double)data[p]);                                           \
            for (int v = 0; v < KV; v++) u0[v] += x0 * sk_load(w0 + 4 * v);                  \
        }                                                                                    \
        const double* pr = i >= tail ? P_tail + (i - tail) * 4 * KV : P + i * ldp;           \
        sk_v4d dot = sk_splat(0.0);                                                          \
        for (int v = 0; v < KV; v++) {                                                       \
            u0[v] += u1[v];                                                                  \
            pv[v] = sk_load(pr + 4 * v);                                                     \
            dot += pv[v] * u0[v];                                                            \
        }                                                                                    \
        sk_v4d mean = sk_splat((dot[0] + dot[1]) + (dot[2] + dot[3]));                       \
        sk_v4d s = sk_splat(sw[i]);                                                          \
        for (int v = 0; v < KV; v++) {                                                       \
            r[v] = s * (pv[v] * (u0[v] - mean));                                             \
            ob[v] += r[v];                                                                   \
        }                                                                                    \
        for (p = (ptrdiff_t)indptr[i]; p < e; p++) {                                         \
            double* o = out + (ptrdiff_t)cols[p] * 4 * KV;                                   \
            sk_v4d x = sk_splat((double)data[p]);                                            \
            for (int v = 0; v < KV; v++) sk_store(o + 4 * v, sk_load(o + 4 * v) + x * r[v]); \
        }                                                                                    \
    }                                                                                        \
    for (int v = 0; v < KV; v++) sk_store(out_b + 4 * v, ob[v]);                             \
    return 0;                                                                                \
}                                                                                            \
SK_AVX2 static int sk_csr_hessp_##S##B(const T* data, const I* cols, const I* indptr,        \
                                       ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t nc,              \
                                       const double* V, const double* vb, const double* P,    \
                                       ptrdiff_t ldp, ptrdiff_t tail, const double* P_tail,   \
                                       const double* sw, int KV, double* out,                 \
                                       double* out_b) {                                       \
    if (KV == 1)                                                                             \
        return sk_csr_hessp_kv_##S##B(data, cols, indptr, lo, hi, nc, V, vb, P, ldp, tail,   \
                                      P_tail, sw, 1, out, out_b);                            \
    if (KV == 2)                                                                             \
        return sk_csr_hessp_kv_##S##B(data, cols, indptr, lo, hi, nc, V, vb, P, ldp, tail,   \
                                      P_tail, sw, 2, out, out_b);                            \
    return sk_csr_hessp_kv_##S##B(data, cols, indptr, lo, hi, nc, V, vb, P, ldp, tail,       \
                                  P_tail, sw, 3, out, out_b);                                \
}

#define SK_SPARSE_KERNELS(S, T, I, B)                                                         \
    SK_CSC_MARGINS(S, T, I, B) SK_CSC_RMATMAT(S, T, I, B) SK_CSR_HESSP(S, T, I, B)
SK_SPARSE_KERNELS(d, double, int32_t, 32)
SK_SPARSE_KERNELS(d, double, int64_t, 64)
SK_SPARSE_KERNELS(f, float, int32_t, 32)
SK_SPARSE_KERNELS(f, float, int64_t, 64)

/* the callers' entry points: the variant picked by the values' and the indices' widths in
 * bytes (vw: 8 for double, 4 for float; iw: 8 for int64_t, 4 for int32_t) */
#define SK_PICK(F, ...)                                                                      \
    if (vw == 8 && iw == 4) return F##_d32(__VA_ARGS__);                                     \
    if (vw == 8) return F##_d64(__VA_ARGS__);                                                \
    if (iw == 4) return F##_f32(__VA_ARGS__);                                                \
    return F##_f64(__VA_ARGS__);

static int sk_csc_margins(const void* data, int vw, const void* rows, int iw, ptrdiff_t* pos,
                          const ptrdiff_t* end, ptrdiff_t nc, const double* V, int KV,
                          ptrdiff_t lo, ptrdiff_t hi, double* Zb) {
    SK_PICK(sk_csc_margins, data, rows, pos, end, nc, V, KV, lo, hi, Zb)
}
static int sk_csc_rmatmat(const void* data, int vw, const void* rows, int iw, ptrdiff_t s,
                          ptrdiff_t e, const double* R, ptrdiff_t ldr, ptrdiff_t tail,
                          const double* R_tail, int KV, int square, ptrdiff_t ahead,
                          double* out) {
    SK_PICK(sk_csc_rmatmat, data, rows, s, e, R, ldr, tail, R_tail, KV, square, ahead, out)
}
static int sk_csr_hessp(const void* data, int vw, const void* cols, const void* indptr, int iw,
                        ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t nc, const double* V,
                        const double* vb, const double* P, ptrdiff_t ldp, ptrdiff_t tail,
                        const double* P_tail, const double* sw, int KV, double* out,
                        double* out_b) {
    SK_PICK(sk_csr_hessp, data, cols, indptr, lo, hi, nc, V, vb, P, ldp, tail, P_tail, sw,
            KV, out, out_b)
}

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

static int sk_csc_margins(const void* data, int vw, const void* rows, int iw, ptrdiff_t* pos,
                          const ptrdiff_t* end, ptrdiff_t nc, const double* V, int KV,
                          ptrdiff_t lo, ptrdiff_t hi, double* Zb) { return 1; }
static int sk_csc_rmatmat(const void* data, int vw, const void* rows, int iw, ptrdiff_t s,
                          ptrdiff_t e, const double* R, ptrdiff_t ldr, ptrdiff_t tail,
                          const double* R_tail, int KV, int square, ptrdiff_t ahead,
                          double* out) { return 1; }
static int sk_csr_hessp(const void* data, int vw, const void* cols, const void* indptr, int iw,
                        ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t nc, const double* V,
                        const double* vb, const double* P, ptrdiff_t ldp, ptrdiff_t tail,
                        const double* P_tail, const double* sw, int KV, double* out,
                        double* out_b) { return 1; }

#endif
#endif
