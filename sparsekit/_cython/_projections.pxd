# Row kernels of the sparsemax family (sparsekit/_cython/_projections.pyx), for cimport.
#
# All functions work on ONE row of K = ``k`` contiguous values, are ``noexcept nogil``, and
# are fused over ``floating`` (float32 / float64); internal scalars are float64.
# Every projection returns the threshold tau with p = clip(z - tau * w, 0, upper)
# (w = 1 when ``w`` is NULL; upper = +inf for the simplex, 1 otherwise; tau = 0 when an
# inequality constraint is inactive).
#
# sparsemax_row(z, p, k) -> tau
#     p = argmin_{p in simplex} ||p - z||^2 (Martins & Astudillo 2016), O(K) expected time
#     (one pass for max(z) and the candidates z_i >= max - 1, then Michelot's iteration with
#     Condat 2016's algorithm as fallback, on z - max(z); ``p`` is the scratch list). Shift
#     invariant in floating point: p is computed from z - max(z); tau is returned in the
#     coordinates of z. k == 1 gives p = [1]. Exact zeros outside the support.
# simplex_row(z, p, k, radius) -> tau
#     Same onto {p >= 0, sum p = radius}, radius > 0.
# simplex_rows(Z, P, tau, n, k, radius)
#     simplex_row of each of the n rows of the C-contiguous Z (n x k) into P, thresholds into
#     tau; rows of 2 to 16 entries two at a time (four in float32) in SIMD lanes, their sums
#     in the rows' own type (a row whose threshold overflows is redone alone).
# sparsemax_sort_row(z, p, k) -> tau
#     Reference O(K log K) sort-based sparsemax (Madsen et al. 2016, Algorithm 1),
#     same output; ``p`` is used as the sort buffer.
# sparsemax_loss_row(z, q, p, k) -> loss
#     Writes p = sparsemax(z) and returns the sparsemax loss
#     L(z; q) = 1/2 sum_j p_j (2 z'_j - p_j) + 1/2 ||q||^2 - q.z'  with z' = z - max(z)
#     (Madsen et al. 2016, eq. 9, shifted; requires sum(q) == 1). Gradient wrt z: p - q.
# project_row(polytope, z, p, k, budget, w, work, iwork) -> tau
#     Projection onto the polytope named by one of the POLYTOPE_* codes below:
#       SIMPLEX         {p >= 0, sum p = budget}                  (w ignored)
#       CAPPED_SIMPLEX  {0 <= p <= 1, sum w p = budget}          (Pardalos-Kovoor, Prop. 5)
#       KNAPSACK        {0 <= p <= 1, sum w p <= budget}          (clip, sifting, then K3)
#       BUDGET          {0 <= p <= 1, sum p <= budget}            (w ignored)
#       BOX             [0, 1]^K                                  (budget, w ignored)
#       AT_LEAST_ONE    {0 <= p <= 1, sum p >= 1}                 (budget, w ignored)
#       AT_MOST_ONE     {0 <= p <= 1, sum p <= 1}                 (budget, w ignored)
#     ``w``: NULL (all ones) or K positive weights. ``work``: >= 2*k floating and ``iwork``:
#     >= 2*k Py_ssize_t scratch, needed for CAPPED_SIMPLEX/KNAPSACK/BUDGET (may be NULL
#     otherwise). The caller validates parameters (0 <= budget <= sum(w) for
#     CAPPED_SIMPLEX, budget >= 0 for KNAPSACK/BUDGET, budget > 0 for SIMPLEX).
# jvp_row(polytope, p, tau, v, out, k, w)
#     out = J v, J the (symmetric, generalized) Jacobian of the projection at the point whose
#     projection is p with threshold tau (both as returned by project_row):
#     free set I = {p > 0} (SIMPLEX) or {0 < p < 1} (others); if the sum constraint is
#     active (always for SIMPLEX/CAPPED_SIMPLEX; tau != 0 for the inequality polytopes)
#     out_I = v_I - w_I (w_I.v_I)/(w_I.w_I) (Prop. 6), else out_I = v_I; out = 0 off I.
# fenchel_young_row(polytope, z, y, p, k, budget, w, work, iwork) -> loss
#     Writes p = project_row(...) and returns 1/2||y - z||^2 - 1/2||p - z||^2, computed as
#     1/2 sum (y - p)(y + p - 2 z) (on z - max(z) for SIMPLEX). Gradient wrt z: p - y.
from cython cimport floating

cdef enum:
    # longest rows simplex_rows projects two (four) at a time
    SIMPLEX_PAIR_MAX_K = 16

cdef enum:
    POLYTOPE_SIMPLEX = 0
    POLYTOPE_BUDGET = 1
    POLYTOPE_KNAPSACK = 2
    POLYTOPE_CAPPED_SIMPLEX = 3
    POLYTOPE_BOX = 4
    POLYTOPE_AT_LEAST_ONE = 5
    POLYTOPE_AT_MOST_ONE = 6

cdef floating sparsemax_row(const floating* z, floating* p, Py_ssize_t k) noexcept nogil
cdef floating simplex_row(const floating* z, floating* p, Py_ssize_t k,
                          double radius) noexcept nogil
cdef void simplex_rows(const floating* Z, floating* P, floating* tau, Py_ssize_t n,
                       Py_ssize_t k, double radius) noexcept nogil
cdef floating sparsemax_sort_row(const floating* z, floating* p, Py_ssize_t k) noexcept nogil
cdef double sparsemax_loss_row(const floating* z, const floating* q, floating* p,
                               Py_ssize_t k) noexcept nogil
cdef floating project_row(int polytope, const floating* z, floating* p, Py_ssize_t k,
                          double budget, const floating* w, floating* work,
                          Py_ssize_t* iwork) noexcept nogil
cdef void jvp_row(int polytope, const floating* p, double tau, const floating* v,
                  floating* out, Py_ssize_t k, const floating* w) noexcept nogil
cdef double fenchel_young_row(int polytope, const floating* z, const floating* y,
                              floating* p, Py_ssize_t k, double budget, const floating* w,
                              floating* work, Py_ssize_t* iwork) noexcept nogil
