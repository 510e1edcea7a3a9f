"""benchmarks/_report.py, which every benchmark script imports first: it pins BLAS's threads
before NumPy loads, and it must import without sparsekit installed (the scripts put the
source tree, with its in-place build, on the path only after importing it)."""
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.skipif(not (BENCH / "_report.py").exists(), reason="benchmarks/ is not beside "
                    "the tests")
def test_importing_it_loads_neither_numpy_nor_sparsekit():
    probe = (f"import sys\nsys.path.insert(0, {str(BENCH)!r})\nimport _report\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'sparsekit'}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True, cwd=BENCH.parent)
    assert done.stdout.splitlines()[-1] == "[]"
