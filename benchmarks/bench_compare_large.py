"""``sparsekit-compare`` on large files: the wall time of the whole command, peers included.

Writes two seeded LIBSVM files of the kind a user brings (binary: 400,000 x 100,000, 30
features a row drawn from a Zipf law, so that a few columns are in most rows and most are
rare; 50 classes: 300,000 x 50,000, labels the argmax of sparse linear scores plus Gumbel
noise) and runs the command on each, at its defaults (``--budget 10``), in a fresh process,
once per source tree given (``--trees``: a checkout of an earlier commit with its built
extensions, e.g. a ``git worktree``, to measure a change of the command; default this
tree). Writes the wall times and the command's tables to section "compare_large" of
doc/benchmarks.md::

    python benchmarks/bench_compare_large.py [--trees DIR ...]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

FILES = {"binary.svm": (400_000, 100_000, 2, 0), "classes50.svm": (300_000, 50_000, 50, 1)}


def write_file(path, n, d, classes, seed, per_row=30):
    """A LIBSVM file of ``n`` rows of 0/1 features over ``d`` columns (``per_row`` draws a
    row from a Zipf law of exponent 1.3, duplicates merged) and labels from sparse linear
    scores (5% of the weights nonzero): the logistic model's draw for two classes, the
    argmax with Gumbel noise for more."""
    rng = np.random.default_rng(seed)
    cols = (rng.zipf(1.3, size=(n, per_row)) % d).astype(np.int64)
    X = sp.csr_matrix((np.ones(n * per_row), cols.ravel(),
                       np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    X.sum_duplicates()
    X.data[:] = 1.0
    if classes == 2:
        w = rng.standard_normal(d) * (rng.random(d) < 0.05)
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-0.5 * (X @ w))), 1, -1)
    else:
        W = rng.standard_normal((d, classes)) * (rng.random((d, classes)) < 0.05)
        y = (np.asarray(X @ W) + rng.gumbel(size=(n, classes))).argmax(axis=1)
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return X.nnz


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="+", type=Path, default=[_report.REPO])
    args = parser.parse_args()
    rows, outputs = [], []
    with tempfile.TemporaryDirectory() as workdir:
        for name, (n, d, classes, seed) in FILES.items():
            path = Path(workdir) / name
            nnz = write_file(path, n, d, classes, seed)
            print(f"{name}: {n} x {d}, {classes} classes, {nnz} nonzeros", flush=True)
            for tree in args.trees:
                seconds, out = _report.compare_in_tree(tree, path)
                print(f"  {_report.git_commit(tree)}: {seconds:.0f} s", flush=True)
                rows.append(f"| {name} | {n:,} x {d:,}, {classes} classes, {nnz:,} nonzeros "
                            f"| {_report.git_commit(tree)} | {seconds:.0f} |")
                outputs.append(f"`sparsekit-compare {name}` at {_report.git_commit(tree)}:\n\n"
                               f"```\n{out.strip()}\n```\n")
    body = f"""The whole command as a user runs it (`sparsekit-compare FILE`, defaults: `--budget 10`,
each iterative fit capped at about 30 s, `--repeat 3`), in a fresh process, on two seeded
LIBSVM files of the size users bring (see the script: 0/1 features drawn from a Zipf law,
so that a few columns are in most rows and most columns are rare). Wall seconds of the
command, loading included, for each source tree measured (the commit named).

| file | shape | commit | wall seconds |
|---|---|---|---|
{chr(10).join(rows)}

{chr(10).join(outputs)}"""
    _report.write_section("compare_large", "sparsekit-compare on large files: the command's "
                          "wall time", body, packages=("numpy", "scipy", "scikit-learn",
                                                       "liblinear-official", "skglm", "celer",
                                                       "fasttext-numpy2-wheel"))


if __name__ == "__main__":
    main()
