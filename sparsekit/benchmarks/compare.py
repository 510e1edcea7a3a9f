"""Side-by-side comparison of sparsekit's estimators with their usual peers, on your data.

``sparsekit-compare [DATA ...]`` prints one table per task for each data set:

- binary labels: l1-logistic regression, objective of LIBLINEAR ``-s 6``:
  ``||w||_1 + C sum log(1+exp(-y w.x))`` (no intercept, as ``-B -1``): L1LogisticOBA vs
  LIBLINEAR, skglm, celer and scikit-learn's ``saga``; time, objective, suboptimality,
  zeros. sparsekit, LIBLINEAR, skglm and celer run at tol 1e-8, each in its own measure,
  which leaves them within ~1e-12 of the best objective (saga at 1e-6 stops ~1e-7 away;
  its epochs are capped to about three ``--budget``s of time, and the objective column
  shows how far that left it; it is not run when one epoch takes longer).
  LIBLINEAR's own copy of the data (``problem``) is built once, outside the timing, as the
  other solvers take the arrays as they are.
- more than two classes: one-vs-rest l1-logistic regression, LIBLINEAR ``-s 6``'s
  objective for each class against the others (no intercept), summed over the classes:
  L1LogisticOBA (its default ``multiclass="ovr"``) vs LIBLINEAR (its copy of the data
  built once and relabelled for each class), skglm and celer fit class by class, at tol
  1e-8 in its own measure (saga is in the multinomial table); time, objective,
  suboptimality, zeros. Each fit is capped at about
  three ``--budget``s (OBA by a callback, after which each class left gets one iteration;
  the peers between classes, the classes left at zero weights), and a capped row says how
  many classes it solved.
- more than two classes: multinomial l1-logistic regression, scikit-learn's objective
  ``||W||_1 + C sum NLL_softmax(W x + b)`` (intercepts free): L1LogisticOBA
  (``multiclass="multinomial"``, tol 1e-8) vs scikit-learn's ``saga`` (tol 1e-6), its only
  solver (LIBLINEAR, skglm and celer are one-vs-rest only); both fits are capped at about
  three ``--budget``s of time (saga by its epochs, OBA by a callback that stops it), a
  row the cap ended says "stopped by the budget" (saga's, in the binary table too; one that
  ran all of its own epochs or iterations, "not converged in 20000 epochs"), and the
  objective column shows how far that left them. In both tables a solver that ended
  more than 1e-6 above the best objective has that said beside its time ratio: its time
  is where it stopped, not its time to the answer.
- every data set: class probabilities on a stratified 70/30 split (the rows of a class
  seen once go to training): SparsemaxClassifier (and ExtremeSoftmaxSGD for more than
  two classes) vs multinomial LogisticRegression, SGDClassifier(log_loss) and LIBLINEAR
  ``-s 0 -B 1`` (every model with an intercept, at its defaults), and fastText from 20
  classes on, or on free text whatever the classes; time, test accuracy, mean support of
  ``predict_proba``. Each fit but LIBLINEAR's and fastText's is capped at about three
  ``--budget``s of time (sparsekit's by a callback that stops it, scikit-learn's by
  their iterations or epochs, LogisticRegression's also by a callback where its later
  iterations outlast the sizing) and its row says "stopped by the budget" when the cap
  ended it, or "not converged in 2000 iterations" when a model ran all of its own
  (LogisticRegression's lbfgs, 2000; SparsemaxClassifier's, 500). A scikit-learn model
  of which one iteration (epoch) takes longer than the cap is not run; its row says so.
  fastText reads one token per nonzero feature (repeated for whole counts) and runs its
  tutorial's recipe for small data (25 epochs, learning rate 1, halved while it
  diverges), on one thread from explicit U(-1/dim, 1/dim) word vectors: fastText 0.9.x
  initializes only a tenth of them per thread.
- multi-label files (comma-separated label sets, ``0,4 1:0.64 ...``, as the LIBSVM data
  page's multi-label sets): label sets on a 70/30 split: SparsemaxClassifier on the simplex
  (its shares of the labels) and on the box (a marginal per label), each cut at the training
  rows' best micro-F1 (its ``threshold_``), vs scikit-learn's
  ``OneVsRestClassifier(LogisticRegression())``, LIBLINEAR ``-s 0 -B 1`` trained label by
  label on one copy of the data, and fastText's one-vs-all loss from 20 labels on (on free
  text, whatever the labels); time, test micro-F1, precision@1, labels predicted per row.
  LIBLINEAR's per-label fits stop between labels at the cap below (the first always fit),
  the labels left never predicted.

DATA is a LIBSVM/svmlight file (any path; ``.xz``, ``.gz`` and ``.bz2`` are read
compressed; ``--zero-based`` for files numbered from 0; the columns that store no entry
(most of them in hashed features) are left out for every model, as each model's weight on
such a column is 0 and would only cost it time and memory, and the titles say so),
an Extreme Classification Repository file (first line ``N D L``, as Bibtex_train.txt),
a fastText training file (any name; one of its first ten lines holds a ``__label__``
token: the ``__label__`` tokens of a line are its label, or its label set where it holds
several, and its other words a free-text column),
a Mulan multi-label ARFF file beside its label XML (``scene-train.arff`` and ``scene.xml``),
a CSV, TSV or ARFF file (``.csv``, ``.tsv``, ``.arff``, also compressed, or comma-, tab- or
;-separated lines under another name, as UCI's ``.data`` files), a Parquet file
(``.parquet``, or a directory of them as dask writes a table; read through pyarrow) or a
JSON file of records (``.jsonl`` or ``.ndjson``: one per line; ``.json``: an array;
lists and nested records left out) or a sheet of a spreadsheet workbook (``.xlsx``,
``.xlsm``, ``.xlsb``, ``.xls``, ``.ods``: the first or ``--sheet``'s; read through
python-calamine; rows above its table, a title, left out): its label column is the last
one or ``--label``'s;
for every model numeric columns are standardized, free text becomes TF-IDF and other text
columns are one-hot encoded, by encoders fit on the training rows for the probability
table and on every row for the l1 table),
any of these files by its URL (http, https or ftp: downloaded once into the data home's
``downloads`` folder, under the URL's host and path, and read from there in later runs),
``a9a`` (shipped inside sparsekit), a set of the data home (``a9a.t``, ``w8a``: see
:func:`sparsekit.datasets.get_data_home`) or one of scikit-learn's ``breast_cancer`` and
``digits`` (dense, standardized for the l1 table). Without DATA it runs on a9a and digits.
``--test`` names a test file for each DATA, of the same kind (LIBLINEAR's ``train`` and
``predict`` files: ``a9a --test a9a.t``; Mulan's ``-train`` and ``-test`` ARFF files; a CSV,
Parquet or JSON file or a workbook of the same columns, or of as many without a header;
the same workbook's sheet ``--test-sheet``: ``book.xlsx --sheet train --test book.xlsx
--test-sheet test``):
the probability and label-set tables then train on every row of DATA and score on the test
file's rows, the l1 tables solve on DATA's rows, and a table file's encoders are fit on
DATA's rows. The test file's
columns past DATA's count nothing (no model has a weight there), a label it holds that
DATA does not is said in a warning (those rows count as errors), and a test file without
any of DATA's labels is refused.

On a terminal (with ``rich``, installed by the ``compare`` extra) a spinner line on stderr
names the model being timed, or the untimed work before its fits (LIBLINEAR's copy of the
data, skglm's numba compilation, the fits that size a capped fit, fastText's input file).
Every fit is preceded by one untimed warm-up fit, except a fit of a second or more, whose
first run counts as its first timed fit (what a warm-up absorbs takes milliseconds); skglm,
which compiles with numba on first use, first fits a few rows untimed. A model whose first
fit takes more than ``--budget`` seconds is timed by that fit alone, and one whose
``--repeat`` fits would take longer than ``--budget`` by as many as fit in it (at least
one). Times
are wall-clock medians with their min-max range, every solver on one thread. A peer that is
not installed, fails to import or fails is listed with its reason, and the other rows are
still measured.
``--plot DIR`` also runs each l1 solver along a ladder of tolerances and writes
``<data>-l1.png`` (relative suboptimality against time) and ``<data>-proba.png`` (test
accuracy against time); ``--json`` prints the tables with their raw measurements,
``--markdown`` as GitHub markdown.

Usage::

    sparsekit-compare                       # a9a and digits
    sparsekit-compare my_data.svm.xz --C 0.5 --repeat 5
    sparsekit-compare w8a --json            # machine-readable tables
    sparsekit-compare w8a --markdown        # tables for a report or an issue
    sparsekit-compare a9a --test a9a.t      # the published split: train, then test
    sparsekit-compare adult.csv --label income
    sparsekit-compare iris.arff             # Weka's ARFF, the class attribute last
    sparsekit-compare sales.xlsx --sheet 2024 --label churned
    sparsekit-compare book.xlsx --sheet train --test book.xlsx --test-sheet test
    sparsekit-compare --plot figures/       # and PNG figures
"""
import argparse
import contextlib
import os
import sys
import warnings
from pathlib import Path

from sparsekit.benchmarks._interrupt import abandoned_calls, noticing_interrupts


#: the distributions the tables measure or stand on, as ``--version`` lists them
DISTRIBUTIONS = {"peers": ("liblinear-official", "skglm", "celer", "fasttext-numpy2-wheel"),
                 "libraries": ("scikit-learn", "numpy", "scipy", "pandas", "pyarrow",
                               "python-calamine")}


def versions():
    """One line per kind: sparsekit's version and Python's, then each of DISTRIBUTIONS'
    versions ("not installed" where it is not)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import sparsekit

    def found(name):
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            return f"{name} not installed"
    lines = [f"sparsekit-compare (sparsekit {sparsekit.__version__}, Python "
             f"{platform.python_version()})"]
    lines += [f"{kind}: " + ", ".join(map(found, names))
              for kind, names in DISTRIBUTIONS.items()]
    return "\n".join(lines)


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _positive_finite(text):
    value = _positive_float(text)
    if value == float("inf"):   # C = inf: every solver's objective inf, the tables garbage
        raise argparse.ArgumentTypeError(f"must be a finite positive number, got {text}")
    return value


def main(argv=None):
    """What the ``sparsekit-compare`` command runs (:func:`console_main`), for ``argv``
    (None: the command line's arguments): warnings print as one line each,
    ``sparsekit-compare: warning: ...``, not with the line of code that raised them; a
    reader that stops early (``| head``) ends it quietly with status 1, and Ctrl-C with a
    line and status 130, as other commands do (at once during LIBLINEAR's and fastText's
    fits, which run in a thread of their own; after the fit that runs when another
    peer's compiled code swallowed it)."""
    with warnings.catch_warnings(), noticing_interrupts():
        warnings.showwarning = _print_warning
        try:
            _main(argv)
        except BrokenPipeError:
            # the tables' reader is gone: nothing more can be shown, nor flushed at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except KeyboardInterrupt:
            print("\nsparsekit-compare: interrupted", file=sys.stderr)
            sys.exit(130)


def console_main():
    """The ``sparsekit-compare`` command: :func:`main`, whose process ends without the
    interpreter's shutdown, its output flushed, where Ctrl-C left a peer's fit running in
    compiled code (see :func:`~sparsekit.benchmarks._interrupt.interruptible`)."""
    try:
        main()
    except SystemExit as end:
        if not abandoned_calls():
            raise
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):   # a reader gone, a stream closed
                stream.flush()
        os._exit(0 if end.code is None else end.code if isinstance(end.code, int) else 1)


def _print_warning(message, *_):     # warnings.showwarning's other arguments: unused
    print(f"sparsekit-compare: warning: {message}", file=sys.stderr)


def _main(argv):
    parser = argparse.ArgumentParser(
        prog="sparsekit-compare", description=__doc__.split("\n\n")[0],
        epilog="examples:\n" + __doc__.split("Usage::\n\n")[1].rstrip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="*",
                        help="LIBSVM files (class labels or comma-separated label sets), "
                             "Extreme Classification Repository files, fastText files "
                             "(__label__ tokens), CSV, TSV, ARFF, "
                             "Parquet or JSON files (.csv, .tsv, .arff, .parquet, .json, "
                             ".jsonl; a Mulan ARFF file beside its label XML: label sets), "
                             "spreadsheet workbooks (.xlsx, .xlsm, .xlsb, .xls, .ods), "
                             "their URLs (downloaded once into the data home), or data set "
                             "names (default: a9a digits)")
    parser.add_argument("--repeat", type=_positive_int, default=3,
                        help="fits per model (median), fewer where they would take more "
                             "than --budget")
    parser.add_argument("--C", type=_positive_finite, default=1.0,
                        help="inverse l1 strength of the l1 table")
    parser.add_argument("--budget", type=_positive_float, default=10.0,
                        help="seconds: a slower first fit is timed alone, --repeat "
                             "fits that would take longer are cut to as many as fit in it, "
                             "and the iterative fits are capped at about 3 times this "
                             "(each table's title says which)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true",
                        help="print JSON (the tables and their raw measurements), not tables")
    output.add_argument("--markdown", action="store_true",
                        help="print the tables as GitHub markdown, each under its title in "
                             "bold, for a report or an issue")
    parser.add_argument("--zero-based", action="store_true",
                        help="the files number their columns from 0 (scikit-learn's "
                             "dump_svmlight_file), not from 1 as LIBSVM does")
    parser.add_argument("--label", metavar="COLUMN",
                        help="the label column of CSV, TSV, ARFF, Parquet, JSON and "
                             "spreadsheet files, by "
                             "header or position from 0 (default: the last column); the "
                             "others are features: numbers standardized (a missing one set "
                             "to the column's median and marked), free text as TF-IDF, "
                             "other text one-hot encoded (fit on the training rows for the "
                             "test accuracy); label sets: several 0/1 (yes/no) columns "
                             "separated by commas, a JSON or Parquet column of lists, or "
                             "a column of lists written as text (['a', 'b']) or of labels "
                             "separated by | (Comedy|Drama)")
    parser.add_argument("--drop", metavar="COLUMNS", action="extend", default=[],
                        type=lambda text: [c for c in text.split(",") if c],
                        help="comma-separated columns of CSV, TSV, ARFF, Parquet, JSON and "
                             "spreadsheet files to leave out of the features (identifiers, "
                             "leaks), by header or position from 0; repeatable")
    parser.add_argument("--sheet", metavar="NAME",
                        help="the sheet of spreadsheet workbooks to read (data and --test "
                             "files), by name or position from 0 among the sheets shown "
                             "(default: the first shown)")
    parser.add_argument("--test-sheet", metavar="NAME",
                        help="the sheet of the --test workbooks, as --sheet (default: "
                             "--sheet's): train and test as two sheets of one workbook, "
                             "book.xlsx --sheet train --test book.xlsx --test-sheet test")
    parser.add_argument("--test", metavar="FILE", nargs="+",
                        help="test files, one per data file in the same order (LIBLINEAR's "
                             "train/predict: a9a --test a9a.t): the probability and label-set "
                             "tables train on every row of the data file and score on these "
                             "instead of a 70/30 split")
    parser.add_argument("--plot", metavar="DIR", type=Path,
                        help="write PNG figures to DIR: time vs suboptimality of the l1 "
                             "solvers (a ladder of tolerances), accuracy vs time")
    parser.add_argument("--version", action="store_true",
                        help="print the versions of sparsekit, the peers and the libraries "
                             "under them, and exit")
    args = parser.parse_args(argv)
    if args.version:
        print(versions())
        return
    from sparsekit.benchmarks._run import run   # the tables' imports: not for --help

    run(args, parser.error)

if __name__ == "__main__":
    console_main()
