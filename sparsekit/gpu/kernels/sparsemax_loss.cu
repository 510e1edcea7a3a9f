// Fused sparsemax loss: per row, p = sparsemax(z), the loss and its gradient G = p - q
// (sparsekit.gpu.losses.sparsemax_loss_and_grad).
//
// With z' = z - max(z) (shift invariance) and sum_j q_j = 1 (checked by the caller):
//   L(z; q) = 1/2 sum_j p_j (2 z'_j - p_j) + 1/2 ||q||^2 - q . z'
// (Madsen et al. 2016, eq. 9, shifted), which is the Fenchel-Young loss of the
// simplex, 1/2 ||q - z||^2 - 1/2 ||p - z||^2. One thread block per row, or one warp per
// row (``*_warp_*``, for short rows; see projections.cu).
#include "row_common.cu"

template <typename T, typename G>
__device__ void sk_sparsemax_loss_grad(const G& g, const T* Z, const T* Q, T* Gr,
                                       double* loss, long long n, long long k, int* nonfinite) {
    if (!sk_active(g)) return;
    T* cache = sk_row_cache<T>(g);
    for (long long row = g.first_row(); row < n; row += g.row_stride()) {
        const T* z = sk_cached_row<T>(g, Z + row * k, k, cache, nonfinite);
        const T* q = Q + row * k;
        double m = -sk_inf();
        for (long long j = g.rank(); j < k; j += g.size()) m = fmax(m, (double)z[j]);
        const double zmax = g.max(m);
        const double t = sk_simplex_threshold<T>(g, z, k, zmax, 1.0);
        double acc = 0.0, unused = 0.0, unused2 = 0.0, unused3 = 0.0;
        for (long long j = g.rank(); j < k; j += g.size()) {
            const double v = (double)z[j] - zmax, qj = (double)q[j];
            const double pj = fmax(v - t, 0.0);
            // (q - p)(q + p - 2v) / 2, with v kept finite so that a zero term stays 0
            acc += (pj - qj) * fmax(v, -1.7976931348623157e308) + 0.5 * (qj * qj - pj * pj);
            Gr[row * k + j] = (T)(pj - qj);
        }
        g.sum4(acc, unused, unused2, unused3);
        if (g.rank() == 0) loss[row] = acc;
    }
}

extern "C" {

__global__ void sparsemax_loss_grad_f32(const float* Z, const float* Q, float* G, double* loss,
                                        long long n, long long k, int* nonfinite) {
    sk_sparsemax_loss_grad<float>(sk_block_group(), Z, Q, G, loss, n, k, nonfinite);
}
__global__ void sparsemax_loss_grad_warp_f32(const float* Z, const float* Q, float* G,
                                             double* loss, long long n, long long k,
                                             int* nonfinite) {
    sk_sparsemax_loss_grad<float>(SkWarpGroup(), Z, Q, G, loss, n, k, nonfinite);
}
__global__ void sparsemax_loss_grad_f64(const double* Z, const double* Q, double* G,
                                        double* loss, long long n, long long k,
                                        int* nonfinite) {
    sk_sparsemax_loss_grad<double>(sk_block_group(), Z, Q, G, loss, n, k, nonfinite);
}
__global__ void sparsemax_loss_grad_warp_f64(const double* Z, const double* Q, double* G,
                                             double* loss, long long n, long long k,
                                             int* nonfinite) {
    sk_sparsemax_loss_grad<double>(SkWarpGroup(), Z, Q, G, loss, n, k, nonfinite);
}

}  // extern "C"
