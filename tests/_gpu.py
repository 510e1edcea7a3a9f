"""GPU test helpers: the skip marker of the tests that need CuPy and a usable CUDA device,
and a check that CPU code never tries to import CuPy."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sparsekit
from sparsekit.gpu import require_cupy


def _gpu_available():
    try:
        require_cupy()
    except (ImportError, RuntimeError):
        return False
    return True


needs_gpu = pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")

_SPY = """
import importlib, importlib.abc, sys
attempts = []
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("cupy", "cupyx"):
            attempts.append(name)
        return None
sys.meta_path.insert(0, Spy())
"""


def cupy_imports_of(body, cwd):
    """Run ``body`` in a fresh interpreter and return the CuPy modules it loaded and tried
    to import: ``"[] []"`` when it never touches CuPy. It imports the sparsekit this test
    session uses (installed or in-place build), never an uncompiled source tree that
    happens to be the working directory."""
    code = _SPY + textwrap.dedent(body) + (
        "\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupyx')),"
        " attempts)\n")
    package_root = str(Path(sparsekit.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=cwd, env={**os.environ, "PYTHONPATH": package_root})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()
