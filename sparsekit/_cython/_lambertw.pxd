cdef double _wexp_from(double t, double w0) noexcept nogil
