# Helpers shared by the Cython kernels (cimport them; the inline bodies live here).
#
# index_t    the index type of SciPy's CSR/CSC arrays (int32 or int64), so that kernels take
#            indices and indptr as SciPy gives them, without an int64 copy.
# log1pexp   log(1 + e^t) without overflow.
# sigmoid    1 / (1 + e^-t) without overflow.
from libc.math cimport exp, log1p
from libc.stdint cimport int32_t, int64_t

ctypedef fused index_t:
    int32_t
    int64_t


cdef inline double log1pexp(double t) noexcept nogil:
    if t > 0.0:
        return t + log1p(exp(-t))
    return log1p(exp(t))


cdef inline double sigmoid(double t) noexcept nogil:
    cdef double e
    if t >= 0.0:
        return 1.0 / (1.0 + exp(-t))
    e = exp(t)
    return e / (1.0 + e)
