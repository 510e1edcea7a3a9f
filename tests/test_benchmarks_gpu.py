"""benchmarks/bench_gpu.py runs end to end on the CuPy stand-in (tiny sizes), so that the
script is ready for a machine with a GPU; its figures come only from a real device."""
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench_gpu(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_gpu

    return bench_gpu


def test_bench_gpu_projection_rows_on_the_stand_in(cupy_backend, bench_gpu):
    rows = bench_gpu.projection_rows(cupy_backend, megabytes=0, repeat=1, ks=(8, 40))
    assert len(rows) == 2 * 2 * len(bench_gpu.POLYTOPES)
    for dtype, k, n, polytope, ms, gbs, copy, share in rows:
        assert n == 1 and polytope in bench_gpu.POLYTOPES and float(ms) >= 0


def test_bench_gpu_long_row_rows_on_the_stand_in(cupy_backend, bench_gpu, monkeypatch):
    """Both layouts timed (the split thresholds lowered to the stand-in's sizes), and the
    one-block run leaves the split rule as it was."""
    from sparsekit.gpu import projections as gp

    monkeypatch.setattr(gp, "SPLIT_MIN_COLS", 100)
    monkeypatch.setattr(gp, "SPLIT_CHUNK", 64)
    rows = bench_gpu.long_row_rows(cupy_backend, repeat=1, ks=(300,), n=2)
    assert [r[3] for r in rows] == ["several blocks", "one block"] * 2
    assert gp.SPLIT_MAX_ROWS == 128 and gp.split_rows(2, 300)


def test_bench_gpu_fit_rows_on_the_stand_in(cupy_backend, bench_gpu, monkeypatch):
    """The fit part on a small problem (the loaders replaced): both fits reach the same
    objective."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=60) > 0, 1.0, -1.0)
    monkeypatch.setattr(bench_gpu, "load_libsvm", lambda name, data_home=None: (X, y))
    rows = bench_gpu.fit_rows(cupy_backend, ["tiny"])
    assert rows[0][0] == "L1LogisticOBA, tiny"
    assert float(rows[0][4]) < 1e-8


def test_bench_gpu_multinomial_row_on_the_stand_in(cupy_backend, bench_gpu):
    """The multinomial row on a tiny ten-class problem: both fits reach the same
    objective."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 6))
    digits = np.argmax(X[:, :5] @ rng.normal(size=(5, 10)), axis=1)
    row = bench_gpu.multinomial_row(cupy_backend, X, digits, C=1.0)
    assert row[0].startswith("L1LogisticOBA multinomial") and float(row[4]) < 1e-8


def test_bench_gpu_cv_rows_on_the_stand_in(cupy_backend, bench_gpu):
    """The cross-validation part on a small problem: both estimators, the same scores and
    choices on both devices."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=50) > 0, 1.0, -1.0)
    rows = bench_gpu.cv_rows(cupy_backend, X, y, Cs=3, alphas=2, cv=2)
    assert [r[0].split("(")[0] for r in rows] == ["L1LogisticOBACV", "SparsemaxClassifierCV"]
    for row in rows:
        assert float(row[4]) < 1e-6
        cpu, gpu = row[5].split(" / ")
        assert cpu == gpu


def test_bench_gpu_without_a_device_writes_nothing(bench_gpu, monkeypatch, capsys):
    def no_device():
        raise RuntimeError("no CUDA device was found")

    written = []
    monkeypatch.setattr(bench_gpu, "require_cupy", no_device)
    monkeypatch.setattr(bench_gpu._report, "write_section", lambda *a, **k: written.append(a))
    monkeypatch.setattr(sys, "argv", ["bench_gpu.py", "--quick"])
    bench_gpu.main()
    assert not written and "not run, no usable CUDA device" in capsys.readouterr().out


def test_bench_gpu_softmax_rows_on_the_stand_in(cupy_backend, bench_gpu, monkeypatch):
    from sparsekit.datasets import make_extreme_softmax_teacher

    monkeypatch.setattr("sparsekit.datasets.make_extreme_softmax_teacher",
                        lambda n, d, k, nnz, **kw: make_extreme_softmax_teacher(
                            n, 30, 12, 5, **kw))
    rows = bench_gpu.softmax_rows(cupy_backend, 200)
    assert [r[:2] for r in rows] == [["sampled_softmax", "cpu"], ["sampled_softmax", "cuda"],
                                     ["implicit", "cpu"], ["implicit", "cuda"]]
    assert rows[0][3] == rows[1][3] and rows[2][3] == rows[3][3]   # the same models
