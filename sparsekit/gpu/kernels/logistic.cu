// Pointwise terms of the logistic loss at the margins m (sparsekit.gpu.datafits), one
// grid-stride pass: with s_i = sw_i and z_i = -y_i m_i,
//   term_i = s_i log(1 + exp(z_i)),  r_i = -s_i y_i sigma(z_i),  D_i = s_i sigma(z_i) sigma(-z_i)
// (the loss, its derivative and its second derivative in m_i), evaluated without overflow
// for any finite m: log(1 + e^z) = max(z, 0) + log1p(e^-|z|), sigma(z) = 1 / (1 + e^-z)
// from the side where the exponent is non-positive. The caller sums the terms.
extern "C" {

__global__ void logistic_pointwise_f64(const double* m, const double* y, const double* sw,
                                       double* terms, double* r, double* D, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double s = sw[i], yi = y[i], z = -yi * m[i];
        const double e = exp(-fabs(z));                 // in (0, 1]
        const double sig_z = z >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);   // sigma(z)
        terms[i] = s * (fmax(z, 0.0) + log1p(e));
        r[i] = -s * yi * sig_z;
        D[i] = s * e / ((1.0 + e) * (1.0 + e));        // sigma(z) sigma(-z), no cancellation
    }
}

}  // extern "C"
