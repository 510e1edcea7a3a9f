"""Build the Cython kernels: every ``sparsekit/_cython/*.pyx`` becomes one extension."""
import glob
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

#: -O3; ``SPARSEKIT_BUILD_OPT=-O1`` for a sanitizer's build (.ci/asan) and CI's installs on
#: other releases (.ci/run), which compile in a third of the time
OPT = os.environ.get("SPARSEKIT_BUILD_OPT", "-O3")
COMPILE_ARGS = [OPT, "-fno-math-errno", "-Wno-unused-function", "-Wno-unreachable-code"]
#: modules with OpenMP loops (``prange``): ExtremeSoftmaxSGD's ``n_jobs`` and the threads of
#: L1LogisticOBA's multinomial products and formed Hessians. With gcc or clang on Linux;
#: elsewhere they build without it and run those loops on one thread
OPENMP = {"_softmax_sgd", "_oba_kernels", "_gram_kernels"}
OPENMP_ARGS = ["-fopenmp"] if sys.platform.startswith("linux") else []
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
}


def extensions():
    """One Extension per .pyx; ``SPARSEKIT_BUILD_ONLY=_a,_b`` limits a developer's build."""
    only = {m for m in os.environ.get("SPARSEKIT_BUILD_ONLY", "").split(",") if m}
    exts = []
    for path in sorted(glob.glob(os.path.join("sparsekit", "_cython", "*.pyx"))):
        if only and os.path.basename(path)[:-4] not in only:
            continue
        name = path[:-4].replace(os.sep, ".")
        openmp = OPENMP_ARGS if name.rsplit(".", 1)[1] in OPENMP else []
        exts.append(
            Extension(
                name,
                [path],
                include_dirs=[np.get_include()],
                extra_compile_args=COMPILE_ARGS + openmp,
                extra_link_args=openmp,
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            )
        )
    return cythonize(exts, compiler_directives=DIRECTIVES, nthreads=os.cpu_count() or 1)


# the extensions compile in parallel, one per CPU (``build_ext --parallel`` overrides it):
# on two cores ``pip install .`` builds in about half the time
setup(ext_modules=extensions(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
