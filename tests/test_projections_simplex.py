"""Sparsemax / simplex projection: notes/sparsemax_report.md section 4 checks, adversarial
rows, pivot (Condat) against sort (Algorithm 1) and against exact references."""
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

import _projection_reference as ref
from sparsekit.projections import project_simplex, sparsemax

METHODS = ["pivot", "sort"]


def uniform_rows(rng, n=100, k=10):
    return rng.uniform(-3, 3, size=(n, k))


@pytest.mark.parametrize("method", METHODS)
def test_zero_input_gives_uniform(method):  # 4.1 item 1
    assert_array_equal(sparsemax(np.zeros((1, 10)), method=method), np.full((1, 10), 0.1))


@pytest.mark.parametrize("method", METHODS)
def test_large_scale_gives_one_hot(method):  # 4.1 item 2
    z = uniform_rows(np.random.default_rng(0))
    s = -np.sort(-z, axis=1)
    eps = 0.99 * (s[:, 0] - s[:, 1])
    p = sparsemax(z / eps[:, None], method=method)
    assert_allclose(p, np.eye(10)[z.argmax(axis=1)], atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_shift_invariance(method):  # 4.1 item 3
    rng = np.random.default_rng(1)
    z = uniform_rows(rng)
    c = rng.uniform(-3, 3, size=(100, 1))
    assert_allclose(sparsemax(z + c, method=method), sparsemax(z, method=method), atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
def test_permutation_equivariance(method):  # 4.1 item 4
    rng = np.random.default_rng(2)
    z = uniform_rows(rng)
    for _ in range(5):
        perm = rng.permutation(10)
        assert_allclose(sparsemax(z[:, perm], method=method),
                        sparsemax(z, method=method)[:, perm], rtol=0, atol=1e-15)


@pytest.mark.parametrize("method", METHODS)
def test_monotone_differences(method):  # 4.1 item 5
    z = uniform_rows(np.random.default_rng(3))
    p = sparsemax(z, method=method)
    for i in range(10):
        for j in range(10):
            le = z[:, i] <= z[:, j]
            dp, dz = (p[:, j] - p[:, i])[le], (z[:, j] - z[:, i])[le]
            assert (dp >= -1e-9).all() and (dp <= dz + 1e-9).all()


@pytest.mark.parametrize("method", METHODS)
def test_two_dimensions(method):  # 4.1 item 6
    t = np.linspace(-2, 2, 100)
    p = sparsemax(np.c_[t, np.zeros_like(t)], method=method)
    expected = np.where(t < -1, 0.0, np.where(t > 1, 1.0, (t + 1) / 2))
    assert_allclose(p[:, 0], expected, atol=1e-15)
    assert_allclose(p[:, 1], 1 - expected, atol=1e-15)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("z, expected", [
    ([5, 3, 0], [1, 0, 0]),                                    # 4.1 item 8
    ([2, 2.7, 0], [0.15, 0.85, 0]),
    ([1, 1, 1, 0], [1 / 3, 1 / 3, 1 / 3, 0]),                  # 4.2 ties
    ([0, 0, 0, 0], [0.25, 0.25, 0.25, 0.25]),
    ([7.0], [1.0]),                                            # K = 1
    ([-1e300], [1.0]),
])
def test_worked_examples(method, z, expected):
    p = sparsemax(np.array(z, dtype=float), method=method)
    assert p.shape == (len(z),)
    assert_allclose(p, expected, atol=1e-15)
    assert_array_equal(p[np.asarray(expected) == 0], 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offset", [1e6, -1e6, 3e7])
@pytest.mark.parametrize("method", METHODS)
def test_huge_offsets_are_harmless(dtype, offset, method):
    # notes 2.3 / 4.3: float32 rows offset by 1e6 summed to 1.0625 without the shift
    rng = np.random.default_rng(4)
    z = rng.uniform(-3, 3, size=(200, 10)).astype(dtype)
    zo = (z.astype(np.float64) + offset).astype(dtype)
    p = sparsemax(zo, method=method)
    assert p.dtype == dtype
    assert_allclose(p.sum(axis=1), 1.0, atol=5e-7 if dtype == np.float32 else 1e-13)
    # exact answer for the rounded float input
    assert_allclose(p, ref.numpy_sparsemax(zo.astype(np.float64)), atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_tiny_and_wide_logits(method):
    z = np.array([[1e-30, 2e-30, 0.0], [1e6, -1e6, 0.0], [1e-300, 0.0, -1e-300],
                  [1e300, -1e300, 1e300]])
    p = sparsemax(z, method=method)
    assert_allclose(p, [[1 / 3] * 3, [1, 0, 0], [1 / 3] * 3, [0.5, 0, 0.5]], atol=1e-15)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_against_brute_force(k):
    rng = np.random.default_rng(k)
    rows = [rng.normal(size=k) * s for s in (0.1, 1, 10) for _ in range(5)]
    rows += [rng.integers(-2, 3, size=k).astype(float) for _ in range(8)]   # ties
    for z in rows:
        expected = ref.brute_force(z, "simplex")
        for method in METHODS:
            assert_allclose(sparsemax(z, method=method), expected, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 5, 10, 100, 1000, 5000])
def test_pivot_matches_sort_and_numpy(dtype, k):
    rng = np.random.default_rng(k)
    n = max(2, 20000 // k)
    z = rng.normal(size=(n, k)) * rng.choice([0.01, 1, 100], size=(n, 1))
    z[: n // 4] = np.round(z[: n // 4])                 # many ties
    z = z.astype(dtype)
    pivot, sort = sparsemax(z), sparsemax(z, method="sort")
    tol = 1e-6 if dtype == np.float32 else 1e-13
    assert_allclose(pivot, sort, atol=tol)
    assert_allclose(pivot, ref.numpy_sparsemax(z), atol=tol)
    assert_allclose(pivot.sum(axis=1), 1, atol=tol * 10)
    # exact zeros outside the support, the same ones for both kernels
    assert (pivot >= 0).all()
    assert_array_equal(pivot == 0, sort == 0)

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 7, 16, 17, 33])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 9])
def test_row_blocks_and_tails(dtype, k, n):
    # short rows go four (float32) or two at a time through vector lanes, the rest one
    # at a time: every split of n must agree with the sort kernel, on offset and tied rows
    rng = np.random.default_rng(100 * k + n)
    z = rng.normal(size=(n, k)) + rng.choice([0.0, 1e6, -3e5], size=(n, 1))
    z[::2, : k // 2] = z[::2, :1]                          # ties with the maximum
    z = z.astype(dtype)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    p = sparsemax(z)
    assert_allclose(p, sparsemax(z, method="sort"), atol=tol)
    # z - max(z) is exact in either precision (Sterbenz), so the float64 reference applies
    shifted = (z - z.max(axis=1, keepdims=True)).astype(np.float64)
    assert_allclose(p, ref.numpy_sparsemax(shifted), atol=tol)



def test_support_has_exact_zeros_and_tau_consistency():
    z = np.random.default_rng(5).normal(size=(50, 30))
    p = sparsemax(z)
    ps = ref.numpy_sparsemax(z)
    assert_array_equal(p == 0, ps == 0)


def test_radius():
    z = np.random.default_rng(6).normal(size=(20, 6))
    for r in (0.5, 2.5):
        p = project_simplex(z, radius=r)
        assert_allclose(p.sum(axis=1), r, atol=1e-13)
        for zi, pi in zip(z[:4], p[:4]):
            assert_allclose(pi, ref.brute_force(zi, "simplex", radius=r), atol=1e-12)
    assert_allclose(project_simplex(z), sparsemax(z))


def test_dtypes_and_layouts():
    z = np.random.default_rng(7).normal(size=(8, 5))
    assert sparsemax(z.astype(np.float32)).dtype == np.float32
    assert sparsemax(np.arange(6).reshape(2, 3)).dtype == np.float64
    assert_allclose(sparsemax(np.asfortranarray(z)), sparsemax(z))
    assert_allclose(sparsemax(z[:, ::2]), sparsemax(np.ascontiguousarray(z[:, ::2])))
    assert_allclose(sparsemax(z.tolist()), sparsemax(z))
    assert sparsemax(np.zeros((0, 4))).shape == (0, 4)


@pytest.mark.parametrize("bad, err", [
    (np.array([[1.0, np.nan]]), ValueError),
    (np.array([[np.inf, 0.0]]), ValueError),
    (np.zeros((2, 0)), ValueError),
    (np.zeros((2, 2, 2)), ValueError),
    (np.float64(3.0), ValueError),
    (sp.csr_matrix(np.eye(3)), TypeError),
    (np.array([[1.0 + 2.0j, 0.0]]), TypeError),  # not a silent drop of the imaginary part
])
def test_bad_input(bad, err):
    with pytest.raises(err):
        sparsemax(bad)


def test_bad_method_and_device():
    with pytest.raises(ValueError, match="method"):
        sparsemax([1.0, 2.0], method="bisect")
    with pytest.raises(ValueError, match="device"):
        sparsemax([1.0, 2.0], device="tpu")
    with pytest.raises(ValueError):
        project_simplex([1.0, 2.0], radius=0)


class _FakeCupyArray:
    """Stands in for a cupy.ndarray: only the module name is looked at."""
    __module__ = "cupy._core.core"


def test_cupy_arrays_go_to_gpu_module(monkeypatch):
    calls = []
    fake = types.ModuleType("sparsekit.gpu.projections")
    fake.sparsemax = lambda Z, **kw: calls.append(("sparsemax", kw)) or "gpu"
    fake.project = lambda Z, polytope, **kw: calls.append(("project", polytope, kw)) or "gpu"
    monkeypatch.setitem(sys.modules, "sparsekit.gpu.projections", fake)
    from sparsekit.projections import project
    z = _FakeCupyArray()
    assert sparsemax(z, method="sort") == "gpu"
    assert project(z, "budget", budget=2) == "gpu"
    assert calls == [("sparsemax", {"method": "sort"}), ("project", "budget", {"budget": 2})]
    with pytest.raises(TypeError, match="CuPy"):
        sparsemax(z, device="cpu")
    assert sparsemax(np.zeros(2), device="cuda") == "gpu"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_slowly_converging_rows_use_the_condat_fallback(dtype):
    # z_i = -(i/K)^0.2: Michelot's iteration needs 14 rounds here (> _MICHELOT_ITERS), so
    # Condat's algorithm finishes the candidate list
    k = 100_000
    z = np.stack([-(np.arange(k) / k) ** 0.2, -0.3 * (np.arange(k) / k) ** 0.1])
    z = np.ascontiguousarray(z[:, ::-1]).astype(dtype)
    p = sparsemax(z)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    assert_allclose(p, sparsemax(z, method="sort"), atol=tol)
    assert_allclose(p, ref.numpy_sparsemax(z), atol=tol)


@pytest.mark.parametrize("k", [2, 3, 7, 16, 17])
def test_batched_short_rows_match_row_by_row(k):
    # rows of <= 16 entries are projected two at a time by a vector kernel; odd row counts
    # leave one row for the scalar kernel
    rng = np.random.default_rng(k)
    z = np.concatenate([rng.normal(size=(40, k)) * rng.choice([1e-3, 1, 50], (40, 1)),
                        rng.integers(-2, 3, size=(41, k)).astype(float),      # ties
                        np.full((2, k), 3.0), rng.normal(size=(2, k)) + 1e6])
    for dtype in (np.float64, np.float32):
        zd = z.astype(dtype)
        rows = np.array([sparsemax(zi) for zi in zd])
        tol = 1e-6 if dtype == np.float32 else 1e-13
        assert_allclose(sparsemax(zd), rows, atol=tol)
        assert_allclose(sparsemax(zd), sparsemax(zd, method="sort"), atol=tol)
        assert_allclose(project_simplex(zd, radius=2.5),
                        [project_simplex(zi, radius=2.5) for zi in zd], atol=tol * 3)
    if k <= 7:
        for zi, pi in zip(z[::10], sparsemax(z[::10])):
            assert_allclose(pi, ref.brute_force(zi, "simplex"), atol=1e-12)


def _median_of_three_killer(n):
    """Musser's sequence: median-of-three quicksort takes quadratic time on it."""
    a, half = np.zeros(n), n // 2
    for i in range(1, half + 1):
        if i % 2:
            a[i - 1], a[i] = i, half + i
        a[half + i - 1] = 2 * i
    return a / n


def test_sort_method_is_n_log_n_on_a_median_of_three_killer():
    import time
    z = _median_of_three_killer(200_000)
    start = time.perf_counter()
    p = sparsemax(z, method="sort")
    elapsed = time.perf_counter() - start            # 4.3 s before introsort, ~0.03 s now
    assert_allclose(p, sparsemax(z), atol=1e-12)
    assert elapsed < 1.0


@pytest.mark.parametrize("dtype, big", [(np.float32, 2e38), (np.float64, 1e307)])
def test_batched_rows_near_the_largest_value_match_one_row_at_a_time(dtype, big):
    """The two- and four-row kernels sum in the rows' type; where those sums overflow the
    rows are redone one at a time, so batching never turns a finite answer into inf (it
    may round differently by an ulp)."""
    z = np.array([0.0, -big, -big, -big], dtype=dtype)
    radius = 1.5 * big
    single = project_simplex(z[None, :], radius=radius)
    assert np.isfinite(single).all()
    for n in (2, 3, 4, 5, 8):
        assert_allclose(project_simplex(np.tile(z, (n, 1)), radius=radius),
                        np.tile(single, (n, 1)), rtol=4 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("radius", [1.0, 2.5])
def test_two_entries_in_closed_form_match_algorithm_1(dtype, radius):
    """A single row of two entries (binary labels: the losses, SDCA's block steps) takes
    a closed form: the projection and threshold of the sort-based Algorithm 1 on ties, gaps
    of exactly the radius or an ulp off it, offsets of 1e6, -inf and huge entries."""
    from sparsekit._cython._projections import project_rows, sparsemax_rows

    big = np.finfo(dtype).max / 4
    eps = np.finfo(dtype).eps
    rows = [[0, 0], [3, 3], [radius, 0], [0, radius], [radius * (1 + eps), 0],
            [radius * (1 - eps), 0], [0.3, -0.2], [1e6 + 0.5, 1e6], [-np.inf, 0],
            [5, -np.inf], [big, -big], [-big, 1.0], [1e-30, 0], [-7.25, -7.0]]
    for z in rows:
        Z = np.array([z], dtype=dtype)
        P, tau = np.empty_like(Z), np.empty(1, dtype=dtype)
        project_rows(0, Z, P, tau, radius, np.ones(1, dtype=dtype), False)  # one row: scalar
        assert P.sum() == pytest.approx(radius) and (P >= 0).all(), z
        top = int(np.argmax(z))           # the larger gets (radius + gap) / 2, at most all
        gap = float(Z[0, top]) - float(Z[0, 1 - top])
        expected = np.empty(2)
        expected[top] = radius if gap >= radius else (radius + gap) / 2
        expected[1 - top] = radius - expected[top]
        assert_allclose(P[0], expected, atol=4 * eps * radius, err_msg=str(z))
        if radius == 1.0:
            P_sort, tau_sort = np.empty_like(Z), np.empty(1, dtype=dtype)
            sparsemax_rows(Z, P_sort, tau_sort, sort=True)
            assert_array_equal(P, P_sort, err_msg=str(z))
            assert_allclose(tau, tau_sort, rtol=4 * eps, err_msg=str(z))
