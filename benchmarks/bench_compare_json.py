"""``sparsekit-compare`` on a JSON-lines file as it is published: the Debian corpus.

Runs the command's tables (its functions, the same code path as the console script) on
the data home's ``debian/debian_packages.jsonl.xz`` as a user passes it:
``sparsekit-compare debian_packages.jsonl.xz --label section --drop package`` (63,436
records of a package name, a section, a list of tags and a description; the tags, a list
in each record, are left out with a warning, the package name by ``--drop``, the
description becomes TF-IDF; 58 sections). Writes section "compare_json" of
doc/benchmarks.md, with the file's SHA-256::

    python benchmarks/bench_compare_json.py [--budget 3] [--repeat 3]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import hashlib
import sys
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.benchmarks._timing import FIT_BUDGETS  # noqa: E402
from sparsekit.datasets._home import _find_file  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=3.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")
    path = _find_file("debian/debian_packages.jsonl.xz")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    body = (f"The tables of `sparsekit-compare {path.name} --label section --drop package "
            f"--budget {args.budget:g}` (every solver on one thread, median of {args.repeat} "
            f"fits after a warm-up fit, iterative fits capped at about "
            f"{FIT_BUDGETS} x {args.budget:g} s): the Debian 12 package "
            f"descriptions of the data home, SHA-256 {digest}. Wall time of the tables "
            "(loading included) beside the first title.\n"
            + _report.compare_tables(str(path), args.repeat, args.budget, label="section",
                                     drop=["package"]))
    _report.write_section("compare_json", "sparsekit-compare on a JSON-lines file", body,
                          packages=_report.COMPARE_PACKAGES)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
