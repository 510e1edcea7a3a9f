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

With ``--test-files``, the command's ``--test`` on the published train/test pairs of the
data home, each file read as a user's (``a9a --test a9a.t``; Mulan's scene and emotions
ARFF files beside their label XML; the Extreme Classification Repository's Bibtex and
Delicious files), to section "compare_test_files" (figures in doc/compare/test_files/)::

    python benchmarks/bench_compare.py --test-files [--sets a9a scene emotions bibtex
                                                           delicious]
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
from sparsekit.benchmarks import _run  # noqa: E402
from sparsekit.benchmarks._data import Dataset, load_dataset  # noqa: E402
from sparsekit.datasets import get_data_home, load_mulan  # noqa: E402
from sparsekit.linear_model import first_label  # noqa: E402

FIGURES = _report.DOC.parent / "compare"

#: the published train/test pairs of the data home (paths under it; a9a is shipped)
PAIRS = {"a9a": ("a9a", "libsvm/a9a.t.xz"),
         "scene": ("mulan/scene-train.arff.xz", "mulan/scene-test.arff.xz"),
         "emotions": ("mulan/emotions-train.arff.xz", "mulan/emotions-test.arff.xz"),
         "bibtex": ("xmlrepo/Bibtex_train.txt.xz", "xmlrepo/Bibtex_test.txt.xz"),
         "delicious": ("xmlrepo/Delicious_train.txt.xz", "xmlrepo/Delicious_test.txt.xz")}


def load_pair(name):
    """The :class:`Dataset` of a published pair, as ``DATA --test FILE`` reads it."""
    home = get_data_home()
    train, test = (spec if spec == "a9a" else str(home / spec) for spec in PAIRS[name])
    return load_dataset(train, test=test)


def load(name):
    if name in ("a9a", "digits", "breast_cancer"):
        return load_dataset(name)
    if name.endswith("-sets"):             # through a LIBSVM multi-label file, as a user's
        name = name[:-len("-sets")]
        X, Y = load_mulan(name, subset="train")
        with tempfile.TemporaryDirectory() as workdir:
            path = Path(workdir) / f"{name}.svm"
            dump_svmlight_file(sp.csr_matrix(X), sp.csr_matrix(Y), str(path),
                               multilabel=True, zero_based=False)
            data = load_dataset(str(path))
        data.name = f"{name} (label sets)"
        return data
    X, Y = load_mulan(name, subset="train")
    Y = sp.csr_matrix(Y)
    keep = np.diff(Y.indptr) > 0                    # rows without a label have no class
    return Dataset(f"{name} (first label)", sp.csr_matrix(X)[keep],
                           first_label(Y[keep]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=10.0)
    parser.add_argument("--test-files", action="store_true",
                        help="the published train/test pairs, by the command's --test")
    parser.add_argument("--sets", nargs="+")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")
    common = ("The tables of `sparsekit-compare` (see its `--help`; every solver on one "
              f"thread, median of {args.repeat} fits after a warm-up fit, a model whose warm-up "
              f"exceeds {args.budget:g} s timed by that fit alone)")
    fasttext = ("fastText joins from 20 classes or labels on (tokens = nonzero features; 25 "
                "epochs, learning rate 1; explicit U(-1/dim, 1/dim) word vectors, as fastText "
                "0.9.x initializes only a tenth of them per thread). Figures: the `--plot` "
                "output.")
    if args.test_files:
        sets, loader, figures = args.sets or list(PAIRS), load_pair, FIGURES / "test_files"
        section = ("compare_test_files",
                   "sparsekit-compare on published train/test pairs (--test)")
        intro = (f"{common} with `--test` on the published train/test pairs of the data "
                 "home, each file read as the command reads a user's: `a9a --test a9a.t` "
                 "(LIBSVM's), Mulan's `scene-train.arff --test scene-test.arff` and emotions' "
                 "(beside their label XML: label sets), the Extreme Classification "
                 "Repository's `Bibtex_train.txt --test Bibtex_test.txt` and Delicious'. "
                 "The probability and label-set tables train on every row of the training "
                 "file and score on the test file's. " + fasttext)
    else:
        sets = args.sets or ["a9a", "digits", "bibtex", "delicious", "scene-sets",
                             "bibtex-sets", "delicious-sets"]
        loader, figures = load, FIGURES
        section = ("compare", "sparsekit-compare on the default and on many-class sets")
        intro = (f"{common} on the shipped a9a, scikit-learn's digits and the first label of "
                 "Mulan's Bibtex and Delicious training sets (binary features; rows without a "
                 "label dropped), then the label sets of Mulan's scene, Bibtex and Delicious "
                 "training sets, each written as a LIBSVM multi-label file and read as the "
                 "command reads a user's. " + fasttext)
    figures.mkdir(parents=True, exist_ok=True)
    body = [intro]
    for name in sets:
        data = loader(name)
        announce = lambda model, data=data: print(f"  {data.name}: {model}", flush=True)  # noqa: E731
        with _run.threadpool_limits(limits=1):
            results = _run.tables(data, args.repeat, budget=args.budget, announce=announce)
            traces = (_run.l1_traces(data, budget=args.budget, announce=announce)
                      if not data.multilabel and data.classes.size == 2 else None)
        for table in results:
            body.append(f"\n**{table.title}**\n")
            body.append(_report.markdown_table(table.header, table.rows))
        paths = _run.plot(data, results, traces, figures)
        folder = figures.relative_to(_report.DOC.parent).as_posix()
        body.append("\n" + " ".join(f"![{p.stem}]({folder}/{p.name})" for p in paths))
    _report.write_section(*section, "\n".join(body),
                          packages=("numpy", "scipy", "scikit-learn", "liblinear-official",
                                    "skglm", "celer", "fasttext-numpy2-wheel"))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
