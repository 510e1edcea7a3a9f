"""The compiled kernels' package: a copy of sparsekit whose kernels were never built (a
source checkout in front of the installed package on sys.path) says so and what to do,
instead of failing on the first kernel's name."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sparsekit

SOURCE = Path(sparsekit.__file__).parent


def _unbuilt_copy(root, checkout):
    """sparsekit's Python sources under ``root`` without its compiled kernels; with
    ``checkout``, beside a pyproject.toml, as in a clone."""
    shutil.copytree(SOURCE, root / "sparsekit",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__"))
    if checkout:
        (root / "pyproject.toml").write_text("[project]\nname = 'sparsekit'\n")
    return root


def _run(code, cwd):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("checkout, advice", [
    (True, "Run Python from another directory, or build the checkout in place: "
           "pip install -e ."),
    (False, "pip install --force-reinstall . in the sparsekit checkout")])
def test_a_copy_without_its_kernels_says_it_was_not_built(tmp_path, checkout, advice):
    root = _unbuilt_copy(tmp_path, checkout)
    lazy = _run("import sparsekit; print(sparsekit.__file__)", root)
    assert lazy.returncode == 0 and lazy.stdout.startswith(str(root))   # the copy is used
    for code in ("from sparsekit import L1LogisticOBA", "import sparsekit.projections"):
        failed = _run(code, root)
        assert failed.returncode == 1
        last = failed.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: sparsekit's compiled kernels are missing from "
                               f"{root / 'sparsekit' / '_cython'}: this copy of sparsekit "
                               "was not built.")
        assert last.endswith(advice)
        assert "ModuleNotFoundError" not in failed.stderr


def test_the_built_package_imports_its_kernels():
    built = _run("from sparsekit import L1LogisticOBA; import sparsekit._cython as k; "
                 "print(k._projections.__file__)", Path(__file__).parent)
    assert built.returncode == 0, built.stderr
