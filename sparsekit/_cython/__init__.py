"""Compiled kernels (Cython). No scikit-learn logic lives here."""
from importlib import import_module as _import_module
from pathlib import Path as _Path


def _not_built(package):
    """The ImportError of a copy of sparsekit whose kernels were never compiled, most often
    a source checkout that the current directory put first on ``sys.path``, in front of the
    installed package."""
    checkout = package.parent.parent      # the directory that holds sparsekit/
    if (checkout / "pyproject.toml").is_file():
        how = (f"Python imported sparsekit from the source checkout {checkout}, not "
               "from the installed package: the current directory (or PYTHONPATH) comes "
               "first on sys.path. Run Python from another directory, or build the "
               "checkout in place: pip install -e .")
    else:
        how = ("Install it again from its source, which compiles them (a C compiler is "
               "needed): pip install --force-reinstall . in the sparsekit checkout")
    return ImportError(f"sparsekit's compiled kernels are missing from {package}: this copy "
                       f"of sparsekit was not built. {how}")


try:    # one kernel stands for all: every estimator imports it
    _import_module(f"{__name__}._projections")
except ModuleNotFoundError as exc:
    if exc.name != f"{__name__}._projections":
        raise
    raise _not_built(_Path(__file__).resolve().parent) from None
