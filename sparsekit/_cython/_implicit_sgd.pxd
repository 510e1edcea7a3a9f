# Implicit SGD's proximal step (sparsekit/_cython/_implicit_sgd.pyx), for the epoch driver.
#
# _implicit_coefficients(m, z, rho, u0, eta, q, logc, coef, unew, work) -> 0, or 1 when the
#     step is not finite. z: the m + 1 scores x.w~_j of the true class (index 0) and the m
#     sampled classes; rho: their ridge shrink factors; u0: the old u_i; q = ||x||^2;
#     logc = log((K-1)/m). Writes coef (m + 1 values: w_j = w~_j / rho_j + coef_j x) and
#     unew (the new u_i); work holds 5 m doubles.

cdef int _implicit_coefficients(int m, const double* z, const double* rho, double u0,
                                double eta, double q, double logc, double* coef,
                                double* unew, double* work) noexcept nogil
