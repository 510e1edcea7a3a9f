// Mini-batch steps of ExtremeSoftmaxSGD (sparsekit.gpu.softmax_sgd), with the semantics of
// the CPU epoch driver (sparsekit/_cython/_softmax_sgd.pyx, ``_explicit_coefficients``,
// ``_umax_reset``, ``_step``; Implicit SGD's proximal step: ``_implicit_sgd.pyx``, without
// ridge): every example of a batch takes its coefficients from the weights at the batch's
// start, then all of them update.
//
// Launch: one warp per example of the batch (grid-stride over warps), blockDim.x a multiple
// of 32, at most SK_SGD_WARPS warps per block. Weights R: (K, stride) row-major, the
// intercept in column D when ``bias``. Rows: CSR (``data``, ``indices``, ``indptr``,
// int32 as cupyx stores them) or, when ``dense``, an (N, D) row-major array in ``data``.
// ``classes`` holds each example's class then its m sampled classes, ``rows`` its row.

#define SK_SGD_WARPS 8
#define SK_SGD_MAX_CLASSES 65  // m <= 64

#define SK_IMPLICIT 0
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

__device__ __forceinline__ double sk_log1pexp(double t) {
    return t > 0.0 ? t + log1p(exp(-t)) : log1p(exp(t));
}

// W(e^t), the positive root of w + log w = t, without forming e^t for t > 0: Newton on
// w + log w - t from w0 when |f(w0)| < 1 (the previous value of a root search), else from
// an asymptotic start; stops after a step below 1e-9 w (quadratic convergence).
__device__ double sk_wexp(double t, double w0) {
    if (t != t || t > 1.7976931348623157e308) return t;  // NaN, +inf: W(e^inf) = inf
    if (t < -40.0) {
        const double x = exp(t);
        return x * (1.0 - x);
    }
    double r = 0.0, w;
    bool known = w0 > 0.0;
    if (known) {
        r = w0 + log(w0) - t;
        known = fabs(r) < 1.0;
    }
    if (known) w = w0;
    else if (t > 1.0) w = t - log(t);
    else w = log1p(exp(t));
    for (int it = 0; it < 80; ++it) {
        if (!known) r = w + log(w) - t;
        known = false;
        double f = r * (w / (1.0 + w));
        if (f >= w) f = 0.5 * w;
        w -= f;
        if (fabs(f) <= 1e-9 * w) break;
    }
    return w;
}

// Implicit SGD's step for one example without ridge (Fagan & Iyengar 2018, App. F.3 with
// n = 1): with kappa = eta ||x||^2 and s_k = z_k - z_y, lambda_k = W(kappa c e^{s_k - v}) /
// kappa and u(v) = v - kappa Lambda(v); the root of the increasing
// h(v) = eta (1 - e^{-u} - Lambda) + u - u~ gives u* and the coefficients.
struct SkImplicit {
    int m;
    const double* z;
    double kappa, logkappa, logc, eta, u0;
    double at, u;  // v and u(v) of the last evaluation
    double lam[SK_SGD_MAX_CLASSES], w[SK_SGD_MAX_CLASSES];

    // h(v); h' and h'' to d
    __device__ double h(double v, double* d) {
        double big = 0.0, dbig = 0.0, d2big = 0.0;
        for (int k = 0; k < m; ++k) {
            const double t = logc + (z[k + 1] - z[0]) - v;
            double l, dl, d2l;
            if (kappa > 0.0) {
                w[k] = sk_wexp(t + logkappa, w[k]);
                l = w[k] / kappa;
                const double r = 1.0 / (1.0 + w[k]);
                dl = l * r;
                d2l = dl * r * r;
            } else {
                l = dl = d2l = exp(t);
            }
            lam[k] = l;
            big += l;
            dbig -= dl;
            d2big += d2l;
        }
        const double uv = v - kappa * big, du = 1.0 - kappa * dbig, d2u = -kappa * d2big;
        at = v;
        u = uv;
        const double eu = exp(-uv);
        d[0] = (eta * eu + 1.0) * du - eta * dbig;
        d[1] = (eta * eu + 1.0) * d2u - eta * (eu * du * du + d2big);
        return eta * (1.0 - eu - big) + uv - u0;
    }

    // Halley's step from h and d = (h', h''), the Newton step where its factor is <= 1/2.
    __device__ static double halley(double f, const double* d) {
        const double n = f / d[0], q = 1.0 - 0.5 * n * d[1] / d[0];
        return q > 0.5 ? n / q : n;
    }

    // Root of h on [lo, hi] (h(lo) <= 0 <= h(hi)): Halley steps kept in the bracket,
    // bisection when a step leaves it, is not finite or does not halve the previous one.
    __device__ double root(double lo, double hi, double x0) {
        double x = x0, dxold = hi - lo, d[2];
        if (!(x > lo && x < hi)) x = 0.5 * (lo + hi);
        for (int it = 0; it < 400; ++it) {
            const double fx = h(x, d);
            if (fx == 0.0) return x;
            if (fx < 0.0) lo = x;
            else hi = x;
            double dx = halley(fx, d);
            if (isfinite(d[0]) && fabs(dx) <= 1e-15 * (1.0 + fabs(x))) return x;
            if (!(x - dx > lo && x - dx < hi) || fabs(2.0 * dx) > fabs(dxold))
                dx = x - 0.5 * (lo + hi);
            dxold = dx;
            x -= dx;
            if (hi - lo <= 4e-16 * (1.0 + fabs(x))) return x;
        }
        return x;
    }

    // Root above lo with a proven upper bound, widened should rounding leave h(bound) < 0.
    __device__ double root_above(double lo, double bound, double x0) {
        double x = lo, hi = bound, d[2];
        const double start = lo;
        for (int it = 0; it < 200; ++it) {
            x = root(lo, hi, x0);
            if (hi - x > 1e-9 * (1.0 + fabs(hi)) || h(hi, d) >= 0.0) return x;
            lo = hi;
            hi += 1.0 + (hi - start);
        }
        return x;
    }

    // u*; lam[0..m) holds the lambdas at it.
    __device__ double solve() {
        double d[2];
        for (int k = 0; k < m; ++k) w[k] = 0.0;
        logkappa = kappa > 0.0 ? log(kappa) : 0.0;
        const double h0 = h(u0, d);
        if (h0 == 0.0) return u;
        const double x0 = u0 - halley(h0, d);
        double v;
        if (h0 > 0.0) {
            v = root(0.0, u0, x0);
        } else {  // u* <= U = max(u~, log(1 + c sum_k e^{s_k})), so v* <= V below
            double mx = z[1] - z[0], acc = 0.0;
            for (int k = 1; k < m; ++k) mx = fmax(mx, z[k + 1] - z[0]);
            for (int k = 0; k < m; ++k) acc += exp(z[k + 1] - z[0] - mx);
            const double upper = fmax(sk_log1pexp(logc + mx + log(acc)), u0);
            v = root_above(u0, upper + kappa * (1.0 + (eta > 0.0 ? (upper - u0) / eta : 0.0)),
                           x0);
        }
        if (v != at) h(v, d);
        return u;
    }
};

// The coefficients of one example (lane 0): coef[0..m] and its u (CPU ``_step``); q is
// ||x||^2 (+1 with the intercept), read by Implicit SGD only. Returns 1 on a non-finite
// value.
__device__ int sk_sgd_step(int method, int m, const double* z, double* u, double eta,
                           double q, double logc, double delta, double bound_u, double* coef) {
    const double c = exp(logc);
    double tot = 0.0, du = 0.0;
    if (method == SK_IMPLICIT) {
        SkImplicit s;
        s.m = m;
        s.z = z;
        s.kappa = eta * q;
        s.logc = logc;
        s.eta = eta;
        s.u0 = *u;
        const double unew = s.solve();
        for (int k = 0; k < m; ++k) {
            coef[k + 1] = -eta * s.lam[k];
            tot += s.lam[k];
        }
        coef[0] = eta * tot;
        int bad = !isfinite(unew);
        for (int k = 0; k <= m; ++k) bad |= !isfinite(coef[k]);
        *u = unew;
        return bad;
    }
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
        double q = 0.0;  // ||x||^2 with the intercept's 1, for Implicit SGD
        if (method == SK_IMPLICIT) {
            for (long long p = lo + lane; p < hi; p += 32) q += (double)data[p] * (double)data[p];
            q = sk_sgd_warp_sum(q) + bias;
        }
        __syncwarp();
        if (lane == 0) {
            double ui = u[i];
            if (sk_sgd_step(method, m, z[warp], &ui, eta * sw[i] / (double)nb, q, logc, delta,
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
