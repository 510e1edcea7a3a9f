"""``sparsekit-compare`` on a user's CSV file, beside the same rows in LIBSVM's encoding.

Runs the command's tables (its functions, the same code path as the console script) on a
CSV file as a user passes it, e.g. UCI Adult's training file with a header line (6 numeric
and 8 text columns, labels ``<=50K``/``>50K``), on a9a, the LIBSVM data page's encoding of
the same 32,561 rows (every column binary), and on ``--debian N`` documents of the Debian
corpus of the data home written as a CSV file of two columns, ``description,section`` (free
text, 58 classes: fastText joins). Writes section "compare_csv" of doc/benchmarks.md, with
the file's SHA-256 and the source given::

    python benchmarks/bench_compare_csv.py adult.csv --label class \\
        --source "UCI Adult training file with a header line, ..." --debian 20000
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import hashlib
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.benchmarks._timing import FIT_BUDGETS  # noqa: E402
from sparsekit.datasets import load_debian  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="the CSV (or TSV) file")
    parser.add_argument("--label", help="its label column (default: the last)")
    parser.add_argument("--source", required=True, help="where the file comes from")
    parser.add_argument("--beside", default="a9a", help="a data set to run beside it")
    parser.add_argument("--debian", type=int, default=0, metavar="N",
                        help="also N documents of the Debian corpus as a CSV file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=10.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")
    digest = hashlib.sha256(args.path.read_bytes()).hexdigest()
    body = [f"The tables of `sparsekit-compare {args.path.name}"
            + (f" --label {args.label}" if args.label else "")
            + f"` (every solver on one thread, median of {args.repeat} fits after a warm-up "
            f"fit, iterative fits capped at about {FIT_BUDGETS} x {args.budget:g} s) "
            f"and of `sparsekit-compare {args.beside}`. File: {args.source}; SHA-256 "
            f"{digest}. Wall time of each data set's tables (loading included) beside its "
            "title."]
    runs = [(str(args.path), args.label), (args.beside, None)]
    workdir = tempfile.TemporaryDirectory()
    if args.debian:
        corpus = load_debian()
        rows = np.random.default_rng(0).permutation(len(corpus.text))[:args.debian]
        path = Path(workdir.name) / "debian.csv"
        pd.DataFrame({"description": [corpus.text[i] for i in rows],
                      "section": np.asarray(corpus.section)[rows]}).to_csv(path, index=False)
        runs.append((str(path), None))
        body[0] += (f" Then `sparsekit-compare debian.csv`: {len(rows)} documents of the "
                    "Debian corpus (a random sample, seed 0) written as a CSV file with the "
                    "columns description and section.")
    for spec, label in runs:
        body.append(_report.compare_tables(spec, args.repeat, args.budget, label=label))
    workdir.cleanup()
    _report.write_section("compare_csv", "sparsekit-compare on a user's CSV file",
                          "\n".join(body), packages=_report.COMPARE_PACKAGES)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
