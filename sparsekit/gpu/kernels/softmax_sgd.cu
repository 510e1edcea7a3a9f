// Mini-batch steps of ExtremeSoftmaxSGD's explicit methods (sparsekit.gpu.softmax_sgd),
// with the semantics of the CPU epoch driver (sparsekit/_cython/_softmax_sgd.pyx,
// ``_explicit_coefficients``, ``_umax_reset``, ``_step``): every example of a batch takes
// its coefficients from the weights at the batch's start, then all of them update.
//
// Launch: one warp per example of the batch (grid-stride over warps), blockDim.x a multiple
// of 32, at most SK_SGD_WARPS warps per block. Weights R: (K, stride) row-major, the
// intercept in column D when ``bias``. Rows: CSR (``data``, ``indices``, ``indptr``,
// int32 as cupyx stores them) or, when ``dense``, an (N, D) row-major array in ``data``.
// ``classes`` holds each example's class then its m sampled classes, ``rows`` its row.

#define SK_SGD_WARPS 8
#define SK_SGD_MAX_CLASSES 65  // m <= 64

#define SK_UMAX 1
#define SK_OVE 2
#define SK_SGD 3
#define SK_SAMPLED_SOFTMAX 4
#define SK_NCE 5

__device__ __forceinline__ double sk_sgd_warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ double sk_sigmoid(double z) {
    if (z >= 0.0) return 1.0 / (1.0 + exp(-z));
    const double e = exp(z);
    return e / (1.0 + e);
}

// x . w (+ w[D] with the intercept), summed over the warp; every lane gets it.
template <typename T>
__device__ double sk_sgd_dot(const T* w, const T* data, const int* indices, long long lo,
                             long long hi, int dense, long long D, int bias) {
    double acc = 0.0;
    for (long long q = lo + (threadIdx.x & 31); q < hi; q += 32)
        acc += (double)data[q] * (double)w[dense ? q - lo : (long long)indices[q]];
    acc = sk_sgd_warp_sum(acc);
    return bias ? acc + (double)w[D] : acc;
}

// The coefficients of one example (lane 0): coef[0..m] and its u (CPU ``_step``).
// Returns 1 on a non-finite value.
__device__ int sk_sgd_step(int method, int m, const double* z, double* u, double eta,
                           double logc, double delta, double bound_u, double* coef) {
    const double c = exp(logc);
    double tot = 0.0, du = 0.0;
    if (method == SK_UMAX) {  // u <- the log-sum over the sampled set when u is below it
        double mx = 0.0;
        for (int k = 1; k <= m; ++k) mx = fmax(mx, z[k] - z[0]);
        double acc = exp(-mx);
        for (int k = 1; k <= m; ++k) acc += exp(z[k] - z[0] - mx);
        const double bound = mx + log(acc);
        if (*u < bound - delta) *u = bound;
    }
    if (method == SK_UMAX || method == SK_SGD) {
        for (int k = 1; k <= m; ++k) {
            const double g = c * exp(z[k] - z[0] - *u);
            coef[k] = -eta * g;
            tot += g;
        }
        coef[0] = eta * tot;
        du = -eta * (1.0 - exp(-*u) - tot);
    } else if (method == SK_OVE) {
        for (int k = 1; k <= m; ++k) {
            const double g = c * sk_sigmoid(z[k] - z[0]);
            coef[k] = -eta * g;
            tot += g;
        }
        coef[0] = eta * tot;
    } else if (method == SK_SAMPLED_SOFTMAX) {
        double mx = z[0];
        for (int k = 1; k <= m; ++k) mx = fmax(mx, z[k] + logc);
        double acc = exp(z[0] - mx);
        for (int k = 1; k <= m; ++k) acc += exp(z[k] + logc - mx);
        coef[0] = eta * (1.0 - exp(z[0] - mx) / acc);
        for (int k = 1; k <= m; ++k) coef[k] = -eta * exp(z[k] + logc - mx) / acc;
    } else {  // NCE
        coef[0] = eta * sk_sigmoid(-(z[0] + logc));
        for (int k = 1; k <= m; ++k) coef[k] = -eta * sk_sigmoid(z[k] + logc);
    }
    int bad = !isfinite(du);
    for (int k = 0; k <= m; ++k) bad |= !isfinite(coef[k]);
    if (method == SK_UMAX || method == SK_SGD) {
        const double unew = *u + du;
        *u = unew < 0.0 ? 0.0 : (unew > bound_u ? bound_u : unew);
    }
    return bad;
}

// Phase 1: each example's scores on its classes and its coefficients (eta_e = eta sw / nb).
template <typename T>
__device__ void sk_sgd_coefficients(const T* data, const int* indices, const int* indptr,
                                    int dense, long long D, int bias, const long long* rows,
                                    const long long* classes, const double* sw, const T* R,
                                    long long stride, double* u, double* coef, long long nb,
                                    int m, int method, double eta, double logc, double delta,
                                    double bound_u, int* status) {
    __shared__ double z[SK_SGD_WARPS][SK_SGD_MAX_CLASSES];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long n_warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long e = (long long)blockIdx.x * (blockDim.x >> 5) + warp; e < nb; e += n_warps) {
        const long long i = rows[e];
        const long long lo = dense ? i * D : (long long)indptr[i];
        const long long hi = dense ? lo + D : (long long)indptr[i + 1];
        for (int j = 0; j <= m; ++j) {
            const double s = sk_sgd_dot<T>(R + classes[e * (m + 1) + j] * stride, data, indices,
                                           lo, hi, dense, D, bias);
            if (lane == 0) z[warp][j] = s;
        }
        __syncwarp();
        if (lane == 0) {
            double ui = u[i];
            if (sk_sgd_step(method, m, z[warp], &ui, eta * sw[i] / (double)nb, logc, delta,
                            bound_u, coef + e * (m + 1)))
                atomicExch(status, 1);
            u[i] = ui;
        }
        __syncwarp();  // z[warp] is the next example's
    }
}

// Phase 2: r_k += coef x for every example's classes (atomics: classes repeat in a batch).
template <typename T>
__device__ void sk_sgd_update(const T* data, const int* indices, const int* indptr, int dense,
                              long long D, int bias, const long long* rows,
                              const long long* classes, const double* coef, T* R,
                              long long stride, long long nb, int m, double tiny) {
    const int lane = threadIdx.x & 31;
    const long long n_warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long e = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); e < nb;
         e += n_warps) {
        const long long i = rows[e];
        const long long lo = dense ? i * D : (long long)indptr[i];
        const long long hi = dense ? lo + D : (long long)indptr[i + 1];
        for (int j = 0; j <= m; ++j) {
            const double a = coef[e * (m + 1) + j];
            if (fabs(a) < tiny) continue;  // 0 or subnormal in R's type, as on the CPU
            const T af = (T)a;
            T* w = R + classes[e * (m + 1) + j] * stride;
            for (long long q = lo + lane; q < hi; q += 32)
                atomicAdd(w + (dense ? q - lo : (long long)indices[q]), af * data[q]);
            if (bias && lane == 0) atomicAdd(w + D, af);
        }
    }
}

extern "C" {

__global__ void sgd_coefficients_f32(const float* data, const int* indices, const int* indptr,
                                     int dense, long long D, int bias, const long long* rows,
                                     const long long* classes, const double* sw, const float* R,
                                     long long stride, double* u, double* coef, long long nb,
                                     int m, int method, double eta, double logc, double delta,
                                     double bound_u, int* status) {
    sk_sgd_coefficients<float>(data, indices, indptr, dense, D, bias, rows, classes, sw, R,
                               stride, u, coef, nb, m, method, eta, logc, delta, bound_u,
                               status);
}
__global__ void sgd_coefficients_f64(const double* data, const int* indices, const int* indptr,
                                     int dense, long long D, int bias, const long long* rows,
                                     const long long* classes, const double* sw,
                                     const double* R, long long stride, double* u, double* coef,
                                     long long nb, int m, int method, double eta, double logc,
                                     double delta, double bound_u, int* status) {
    sk_sgd_coefficients<double>(data, indices, indptr, dense, D, bias, rows, classes, sw, R,
                                stride, u, coef, nb, m, method, eta, logc, delta, bound_u,
                                status);
}
__global__ void sgd_update_f32(const float* data, const int* indices, const int* indptr,
                               int dense, long long D, int bias, const long long* rows,
                               const long long* classes, const double* coef, float* R,
                               long long stride, long long nb, int m) {
    sk_sgd_update<float>(data, indices, indptr, dense, D, bias, rows, classes, coef, R, stride,
                         nb, m, 1.1754943508222875e-38);
}
__global__ void sgd_update_f64(const double* data, const int* indices, const int* indptr,
                               int dense, long long D, int bias, const long long* rows,
                               const long long* classes, const double* coef, double* R,
                               long long stride, long long nb, int m) {
    sk_sgd_update<double>(data, indices, indptr, dense, D, bias, rows, classes, coef, R, stride,
                          nb, m, 2.2250738585072014e-308);
}

}  // extern "C"
