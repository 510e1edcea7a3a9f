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
  three ``--budget``s of time (saga by its epochs, OBA by a callback that stops it), and
  the objective column shows how far that left them. In both tables a solver that ended
  more than 1e-6 above the best objective has that said beside its time ratio: its time
  is where it stopped, not its time to the answer.
- every data set: class probabilities on a stratified 70/30 split (the rows of a class seen
  once go to training): SparsemaxClassifier (and ExtremeSoftmaxSGD for more than two
  classes) vs multinomial LogisticRegression, SGDClassifier(log_loss) and LIBLINEAR
  ``-s 0 -B 1`` (every model with an intercept, at its defaults), and fastText from 20
  classes on; time, test accuracy, mean support of ``predict_proba``. Each fit but
  LIBLINEAR's and fastText's is capped at about three ``--budget``s of time (sparsekit's by
  a callback that stops it, scikit-learn's by their iterations or epochs) and its row says
  "stopped by the budget" when the cap ended it. A scikit-learn model of which one
  iteration (epoch) takes longer than the cap is not run; its row says so. fastText reads one
  token per nonzero feature (repeated for whole counts) and runs its tutorial's recipe for
  small data (25 epochs, learning rate 1, halved while it diverges), on one thread from
  explicit U(-1/dim, 1/dim) word vectors: fastText 0.9.x initializes only a tenth of them
  per thread.
- multi-label files (comma-separated label sets, ``0,4 1:0.64 ...``, as the LIBSVM data
  page's multi-label sets): label sets on a 70/30 split: SparsemaxClassifier on the simplex
  (its shares of the labels) and on the box (a marginal per label), each cut at the training
  rows' best micro-F1 (its ``threshold_``), vs scikit-learn's
  ``OneVsRestClassifier(LogisticRegression())``, LIBLINEAR ``-s 0 -B 1`` trained label by
  label on one copy of the data, and fastText's one-vs-all loss from 20 labels on; time,
  test micro-F1, precision@1, labels predicted per row. LIBLINEAR's per-label fits stop
  between labels at the cap below (the first always fit), the labels left never predicted.

DATA is a LIBSVM/svmlight file (any path; ``.xz``, ``.gz`` and ``.bz2`` are read
compressed; ``--zero-based`` for files numbered from 0; the columns that store no entry
(most of them in hashed features) are left out for every model, as each model's weight on
such a column is 0 and would only cost it time and memory, and the titles say so),
an Extreme Classification Repository file (first line ``N D L``, as Bibtex_train.txt),
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
names the model being timed. Every fit is preceded by one untimed warm-up fit (and skglm,
which compiles with numba on first use, by an untimed fit on a few rows); a model whose
warm-up takes more than ``--budget`` seconds is timed by that fit alone, and one whose
``--repeat`` fits would take longer than ``--budget`` by as many as fit in it (at least
one). Times
are wall-clock medians with their min-max range, every solver on one thread. A peer that is
not installed or fails is listed with its reason, and the other rows are still measured.
``--plot DIR`` also runs each l1 solver along a ladder of tolerances and writes
``<data>-l1.png`` (relative suboptimality against time) and ``<data>-proba.png`` (test
accuracy against time); ``--json`` prints the tables with their raw measurements.

Usage::

    sparsekit-compare                       # a9a and digits
    sparsekit-compare my_data.svm.xz --C 0.5 --repeat 5
    sparsekit-compare w8a --json            # machine-readable tables
    sparsekit-compare a9a --test a9a.t      # the published split: train, then test
    sparsekit-compare adult.csv --label income
    sparsekit-compare iris.arff             # Weka's ARFF, the class attribute last
    sparsekit-compare sales.xlsx --sheet 2024 --label churned
    sparsekit-compare book.xlsx --sheet train --test book.xlsx --test-sheet test
    sparsekit-compare --plot figures/       # and PNG figures
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import warnings
from pathlib import Path
from urllib.parse import urljoin

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from sparsekit.benchmarks._class_tables import compare_multiclass, compare_multilabel
from sparsekit.benchmarks._csv import is_workbook, reads_as_table
from sparsekit.benchmarks._data import load_dataset, mulan_labels_name
from sparsekit.benchmarks._download import is_url, local_copy, path_segments
from sparsekit.benchmarks._l1_tables import (compare_l1_logistic, compare_l1_multinomial,
                                             compare_l1_ovr, l1_traces)


def tables(data, repeat, C=1.0, budget=np.inf, announce=None):
    """The tables of one data set: the l1 table (binary; for more than two classes the
    one-vs-rest and the multinomial tables), then the probabilities."""
    if data.multilabel:
        return [compare_multilabel(repeat, data, budget, announce)]
    out = []
    if data.classes.size == 2:
        out.append(compare_l1_logistic(repeat, C, data, budget, announce))
    else:
        out.append(compare_l1_ovr(repeat, C, data, budget, announce))
        out.append(compare_l1_multinomial(repeat, C, data, budget, announce))
    out.append(compare_multiclass(repeat, data, budget, announce))
    return out


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


def _file_stem(name):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def plot(data, results, traces, directory):
    """Write the figures of one data set to ``directory``; return their paths:
    ``<name>-l1.png`` (relative suboptimality (F - F*)/F* against fit time along each
    solver's tolerance ladder, F* the lowest objective of every fit) when ``traces`` is
    given, and ``<name>-proba.png`` (test accuracy, or a multi-label set's micro-F1,
    against fit time)."""
    import matplotlib.pyplot as plt

    paths = []
    stem = directory / _file_stem(data.name)
    if traces:
        table = next(t for t in results if t.title.startswith("l1-logistic"))
        best = min([f for points in traces.values() for _, f in points]
                   + [m["objective"] for m in table.measurements.values()])
        floor = 1e-16    # a fit at the best objective is drawn at the floor
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, points in traces.items():
            seconds = [t for t, _ in points]
            gaps = [max((f - best) / abs(best), floor) for _, f in points]
            ax.plot(seconds, gaps, "o-", label=name)
        ax.set(xscale="log", yscale="log", xlabel="fit time (s)",
               ylabel="relative suboptimality (F - F*) / F*",
               title=f"l1-logistic, {data.name}: tolerance ladders")
        paths.append(_save(fig, ax, stem, "-l1.png"))
    table = results[-1]                  # the probabilities (label sets) come last
    metric, label, kind = (("micro_f1", "test micro-F1", "label sets") if data.multilabel
                           else ("test_accuracy", "test accuracy", "class probabilities"))
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, m in table.measurements.items():
        ax.plot(statistics.median(m["seconds"]), m[metric], "o", label=name)
    ax.set(xscale="log", xlabel="fit time (s, median)", ylabel=label,
           title=f"{kind}, {data.name}")
    paths.append(_save(fig, ax, stem, "-proba.png"))
    return paths


def _save(fig, ax, stem, suffix):
    """Legend, layout and ``<stem><suffix>`` for one figure; its path."""
    import matplotlib.pyplot as plt

    ax.legend(fontsize="small")
    fig.tight_layout()
    path = stem.with_name(stem.name + suffix)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def format_table(title, header, rows):
    """Plain-text table with aligned columns."""
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = [title, line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[:1]]
    out += [line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[1:]]
    return "\n".join(out + [line])


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


@contextlib.contextmanager
def _progress():
    """``status(text)``: a transient spinner line on a terminal's stderr naming the model
    being timed (rich, when installed), nothing elsewhere (logs, pipes, tests)."""
    try:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    except ImportError:
        Console = None
    if Console is None or not sys.stderr.isatty():
        yield lambda text: None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("starting", total=None)
        yield lambda text: progress.update(task, description=text)


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def main(argv=None):
    """The ``sparsekit-compare`` console script: warnings print as one line each,
    ``sparsekit-compare: warning: ...``, not with the line of code that raised them; a
    reader that stops early (``| head``) ends it quietly with status 1, and Ctrl-C with a
    line and status 130, as other commands do."""
    with warnings.catch_warnings():
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


def _local_copies(specs):
    """``specs`` with each URL replaced by the path of its downloaded file (and a Mulan
    ARFF file's label XML downloaded beside it, when the server has it there)."""
    local = []
    for spec in specs:
        if is_url(spec):
            segments = path_segments(spec)
            xml = mulan_labels_name(segments[-1]) if segments else None
            if xml is not None:
                with contextlib.suppress(ValueError):    # none there: read as a table
                    local_copy(urljoin(spec, xml), report=_say)
            spec = str(local_copy(spec, report=_say))
        local.append(spec)
    return local


def _say(text):
    print(f"sparsekit-compare: {text}", file=sys.stderr, flush=True)


def _print_warning(message, *_):     # warnings.showwarning's other arguments: unused
    print(f"sparsekit-compare: warning: {message}", file=sys.stderr)


def _main(argv):
    parser = argparse.ArgumentParser(prog="sparsekit-compare",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="*",
                        help="LIBSVM files (class labels or comma-separated label sets), "
                             "Extreme Classification Repository files, CSV, TSV, ARFF, "
                             "Parquet or JSON files (.csv, .tsv, .arff, .parquet, .json, "
                             ".jsonl; a Mulan ARFF file beside its label XML: label sets), "
                             "spreadsheet workbooks (.xlsx, .xlsm, .xlsb, .xls, .ods), "
                             "their URLs (downloaded once into the data home), or data set "
                             "names (default: a9a digits)")
    parser.add_argument("--repeat", type=_positive_int, default=3,
                        help="fits per model (median), fewer where they would take more "
                             "than --budget")
    parser.add_argument("--C", type=_positive_float, default=1.0,
                        help="inverse l1 strength of the l1 table")
    parser.add_argument("--budget", type=_positive_float, default=10.0,
                        help="seconds: a slower warm-up fit is timed alone, --repeat "
                             "fits that would take longer are cut to as many as fit in it, "
                             "and the iterative fits are capped at about 3 times this")
    parser.add_argument("--json", action="store_true", help="print JSON, not tables")
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
    named, args.data = bool(args.data), args.data or ["a9a", "digits"]
    try:                                       # files named by URL: downloaded once
        args.data = _local_copies(args.data)
        if args.test is not None:
            args.test = _local_copies(args.test)
    except ValueError as exc:
        parser.error(str(exc))
    if args.plot is not None:
        try:
            import matplotlib
        except ImportError:
            parser.error("--plot needs matplotlib (pip install matplotlib)")
        matplotlib.use("Agg")
        try:
            args.plot.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            parser.error(f"--plot: cannot create {str(args.plot)!r}: {exc.strerror}")
    if (args.label is not None or args.drop) and not any(map(reads_as_table, args.data)):
        option = "--label" if args.label is not None else "--drop"
        parser.error(f"{option} applies to CSV, TSV, ARFF, Parquet, JSON and spreadsheet "
                     "files (.csv, .tsv, .arff, .parquet, .json, .jsonl, .xlsx, ..., or "
                     "delimited lines under another name, as UCI's .data files); LIBSVM "
                     "files carry their labels first on each line")
    if args.sheet is not None and not any(map(is_workbook, args.data + (args.test or []))):
        parser.error("--sheet applies to spreadsheet workbooks (.xlsx, .xlsm, .xlsb, .xls, "
                     ".ods)")
    if args.test_sheet is not None and not any(map(is_workbook, args.test or [])):
        parser.error("--test-sheet applies to --test spreadsheet workbooks (.xlsx, .xlsm, "
                     ".xlsb, .xls, .ods)")
    tests = [None] * len(args.data)
    if args.test is not None:
        if len(args.test) != len(args.data) or not named:
            parser.error(f"--test takes one test file per data file, in the same order, "
                         f"after them (sparsekit-compare a9a --test a9a.t); got "
                         f"{len(args.test)} test file(s) for the data "
                         f"{' '.join(args.data)}")
        tests = args.test
    datasets = []
    for spec, test in zip(args.data, tests):
        try:
            datasets.append(load_dataset(spec, args.zero_based, args.label, test,
                                         args.drop, args.sheet, args.test_sheet))
        except ValueError as exc:
            parser.error(str(exc))
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")  # numba, in skglm
    report = []
    for data in datasets:
        # the spinner runs while a data set is measured and is gone before its tables print
        with threadpool_limits(limits=1), _progress() as status:   # BLAS on one thread too
            announce = lambda name, data=data: status(f"{data.name}: {name}")  # noqa: E731
            results = tables(data, args.repeat, args.C, args.budget, announce)
            traces = (l1_traces(data, args.C, args.budget, announce) if args.plot is not None
                      and not data.multilabel and data.classes.size == 2 else None)
        for table in results:
            if args.json:
                report.append({"data": data.name,
                               "test": None if data.test is None else data.test.name,
                               "title": table.title,
                               "rows": [dict(zip(table.header, map(str, r)))
                                        for r in table.rows],
                               "measurements": table.measurements})
            else:
                print(format_table(table.title, table.header, table.rows), end="\n\n",
                      flush=True)
        if args.plot is not None:
            for path in plot(data, results, traces, args.plot):
                print(f"wrote {path}", file=sys.stderr)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
