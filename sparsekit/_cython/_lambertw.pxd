cdef double _wexp(double t) noexcept nogil
