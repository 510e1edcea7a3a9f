// Fused sparsemax loss: per row, p = sparsemax(z), the loss and its gradient G = p - q
// (sparsekit.gpu.losses.sparsemax_loss_and_grad).
//
// With z' = z - max(z) (shift invariance) and sum_j q_j = 1 (checked by the caller):
//   L(z; q) = 1/2 sum_j p_j (2 z'_j - p_j) + 1/2 ||q||^2 - q . z'
// (Madsen et al. 2016, eq. 9, shifted), which is the Fenchel-Young loss of the
// simplex, 1/2 ||q - z||^2 - 1/2 ||p - z||^2. One thread block per row.
#include "row_common.cu"

template <typename T>
__device__ void sk_sparsemax_loss_grad(const T* Z, const T* Q, T* G, double* loss,
                                       long long n, long long k, int* nonfinite) {
    __shared__ double smem[128];
    __shared__ T cache[SK_ROW_CACHE];
    for (long long row = blockIdx.x; row < n; row += gridDim.x) {
        const T* z = sk_cached_row<T>(Z + row * k, k, cache, nonfinite);
        const T* q = Q + row * k;
        double m = -sk_inf();
        for (long long j = threadIdx.x; j < k; j += blockDim.x) m = fmax(m, (double)z[j]);
        const double zmax = sk_block_max(m, smem);
        const double t = sk_simplex_threshold<T>(z, k, zmax, 1.0, smem);
        double acc = 0.0, unused = 0.0, unused2 = 0.0, unused3 = 0.0;
        for (long long j = threadIdx.x; j < k; j += blockDim.x) {
            const double v = (double)z[j] - zmax, qj = (double)q[j];
            const double pj = fmax(v - t, 0.0);
            // (q - p)(q + p - 2v) / 2, with v kept finite so that a zero term stays 0
            acc += (pj - qj) * fmax(v, -1.7976931348623157e308) + 0.5 * (qj * qj - pj * pj);
            G[row * k + j] = (T)(pj - qj);
        }
        sk_block_sum4(acc, unused, unused2, unused3, smem);
        if (threadIdx.x == 0) loss[row] = acc;
    }
}

extern "C" {

__global__ void sparsemax_loss_grad_f32(const float* Z, const float* Q, float* G,
                                        double* loss, long long n, long long k, int* nonfinite) {
    sk_sparsemax_loss_grad<float>(Z, Q, G, loss, n, k, nonfinite);
}
__global__ void sparsemax_loss_grad_f64(const double* Z, const double* Q, double* G,
                                        double* loss, long long n, long long k, int* nonfinite) {
    sk_sparsemax_loss_grad<double>(Z, Q, G, loss, n, k, nonfinite);
}

}  // extern "C"
