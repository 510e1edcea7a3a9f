"""``sparsekit-compare`` on the shipped default and on real many-class sets, with its figures.

Runs the command's tables (its functions, the same code path as the console script) on a9a
(shipped), scikit-learn's digits, and the first label of Mulan's Bibtex (159 labels, 146
occurring first) and Delicious (983 labels) training sets from the data home, where fastText
joins the probability table; and on the label sets of Mulan's scene, Bibtex and Delicious
training sets (``scene-sets`` ...), written as LIBSVM multi-label files and read by the
command's own loader. Writes the tables and the ``--plot`` figures (doc/compare/) to section
"compare" of doc/benchmarks.md::

    python benchmarks/bench_compare.py [--repeat 3] [--sets a9a digits bibtex delicious
                                                    scene-sets bibtex-sets delicious-sets]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.benchmarks import compare  # noqa: E402
from sparsekit.datasets import load_mulan  # noqa: E402
from sparsekit.linear_model import first_label  # noqa: E402

FIGURES = _report.DOC.parent / "compare"


def load(name):
    if name in ("a9a", "digits", "breast_cancer"):
        return compare.load_dataset(name)
    if name.endswith("-sets"):             # through a LIBSVM multi-label file, as a user's
        name = name[:-len("-sets")]
        X, Y = load_mulan(name, subset="train")
        with tempfile.TemporaryDirectory() as workdir:
            path = Path(workdir) / f"{name}.svm"
            dump_svmlight_file(sp.csr_matrix(X), sp.csr_matrix(Y), str(path),
                               multilabel=True, zero_based=False)
            data = compare.load_dataset(str(path))
        data.name = f"{name} (label sets)"
        return data
    X, Y = load_mulan(name, subset="train")
    Y = sp.csr_matrix(Y)
    keep = np.diff(Y.indptr) > 0                    # rows without a label have no class
    return compare.Dataset(f"{name} (first label)", sp.csr_matrix(X)[keep],
                           first_label(Y[keep]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=10.0)
    parser.add_argument("--sets", nargs="+", default=["a9a", "digits", "bibtex", "delicious",
                                                      "scene-sets", "bibtex-sets",
                                                      "delicious-sets"])
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")
    FIGURES.mkdir(exist_ok=True)
    body = ["The tables of `sparsekit-compare` (see its `--help`; every solver on one thread, "
            f"median of {args.repeat} fits after a warm-up fit, a model whose warm-up exceeds "
            f"{args.budget:g} s timed by that fit alone) on the shipped a9a, scikit-learn's "
            "digits and the first label of Mulan's Bibtex and Delicious training sets "
            "(binary features; rows without a label dropped), then the label sets of Mulan's "
            "scene, Bibtex and Delicious training sets, each written as a LIBSVM multi-label "
            "file and read as the command reads a user's. fastText joins from 20 classes or "
            "labels on (tokens = nonzero features; 25 epochs, learning rate 1; explicit "
            "U(-1/dim, 1/dim) word vectors, as fastText 0.9.x initializes only a tenth of "
            "them per thread). Figures: the `--plot` output."]
    for name in args.sets:
        data = load(name)
        announce = lambda model, data=data: print(f"  {data.name}: {model}", flush=True)  # noqa: E731
        with compare.threadpool_limits(limits=1):
            results = compare.tables(data, args.repeat, budget=args.budget, announce=announce)
            traces = (compare.l1_traces(data, budget=args.budget, announce=announce)
                      if not data.multilabel and data.classes.size == 2 else None)
        for table in results:
            body.append(f"\n**{table.title}**\n")
            body.append(_report.markdown_table(table.header, table.rows))
        paths = compare.plot(data, results, traces, FIGURES)
        body.append("\n" + " ".join(f"![{p.stem}](compare/{p.name})" for p in paths))
    _report.write_section("compare", "sparsekit-compare on the default and on many-class sets",
                          "\n".join(body), packages=("numpy", "scipy", "scikit-learn",
                                                     "liblinear-official", "skglm", "celer",
                                                     "fasttext-numpy2-wheel"))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
