"""What ``sparsekit-compare`` does once its arguments are parsed: the data files read (those
named by URL downloaded once), the tables measured and printed as text, markdown or JSON,
and the figures of ``--plot``. Its imports (scikit-learn, the peers' tables, the readers) are what
the command's start waits for, so :mod:`sparsekit.benchmarks.compare` imports this module
only after its arguments are parsed: ``--help``, ``--version`` and a mistyped option
answer at once."""
import contextlib
import itertools
import json
import math
import statistics
import sys
import warnings
from urllib.parse import urljoin

from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from sparsekit.benchmarks._class_tables import compare_multiclass, compare_multilabel
from sparsekit.benchmarks._csv import is_workbook, reads_as_table
from sparsekit.benchmarks._data import load_dataset, mulan_labels_name
from sparsekit.benchmarks._format import format_table, markdown_table
from sparsekit.benchmarks._download import is_url, local_copy, path_segments
from sparsekit.benchmarks._l1_tables import (compare_l1_logistic, compare_l1_multinomial,
                                             compare_l1_ovr, l1_traces)


def tables(data, repeat, C=1.0, budget=float("inf"), announce=None):
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


def _file_stem(name):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def lowest_within(points):
    """``(seconds, lowest)`` of a solver's runs ``[(seconds, gap), ...]``: the runs' times in
    increasing order and, at each, the lowest gap of the runs that took at most that long
    (a solver's time to reach a gap is its fastest run that reaches it)."""
    runs = sorted(points)
    seconds = [t for t, _ in runs]
    # a run whose objective is NaN (a diverged peer) reached nothing, and must not stop
    # the later runs' gaps from lowering the line (min keeps a NaN met first)
    lowest = list(itertools.accumulate((g if g == g else math.inf for _, g in runs), min))
    return seconds, lowest


def plot(data, results, traces, directory):
    """Write the figures of one data set to ``directory``; return their paths:
    ``<name>-l1.png`` (relative suboptimality (F - F*)/F* against fit time: each solver's
    runs along its tolerance ladder as points, and as a step line the lowest it reached
    within each time, :func:`lowest_within`; F* the lowest objective of every fit) when
    ``traces`` is given, and ``<name>-proba.png`` (test accuracy, or a multi-label set's
    micro-F1, against fit time)."""
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
            gaps = [(t, max((f - best) / abs(best), floor)) for t, f in points]
            line, = ax.step(*lowest_within(gaps), where="post", label=name)
            ax.plot([t for t, _ in gaps], [g for _, g in gaps], "o", color=line.get_color(),
                    alpha=0.6)
        ax.set(xscale="log", yscale="log", xlabel="fit time (s)",
               ylabel="relative suboptimality (F - F*) / F*",
               title=f"l1-logistic, {data.name}: the fastest run to each suboptimality")
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


@contextlib.contextmanager
def _progress():
    """``status(text)``: a transient spinner line on a terminal's stderr naming the model
    being timed or prepared (rich, when installed), nothing elsewhere (logs, pipes,
    tests)."""
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


def local_copies(specs):
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


def run(args, error):
    """Measure and print (or plot) the tables of the parsed ``args`` of
    ``sparsekit-compare``; ``error(message)`` ends the command with its usage line
    (``argparse.ArgumentParser.error``)."""
    named, args.data = bool(args.data), args.data or ["a9a", "digits"]
    try:                                       # files named by URL: downloaded once
        args.data = local_copies(args.data)
        if args.test is not None:
            args.test = local_copies(args.test)
    except ValueError as exc:
        error(str(exc))
    if args.plot is not None:
        try:
            import matplotlib
        except ImportError:
            error("--plot needs matplotlib (pip install matplotlib)")
        matplotlib.use("Agg")
        try:
            args.plot.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            error(f"--plot: cannot create {str(args.plot)!r}: {exc.strerror}")
    if (args.label is not None or args.drop) and not any(map(reads_as_table, args.data)):
        option = "--label" if args.label is not None else "--drop"
        error(f"{option} applies to CSV, TSV, ARFF, Parquet, JSON and spreadsheet "
              "files (.csv, .tsv, .arff, .parquet, .json, .jsonl, .xlsx, ..., or "
              "delimited lines under another name, as UCI's .data files); LIBSVM "
              "files carry their labels first on each line")
    if args.sheet is not None and not any(map(is_workbook, args.data + (args.test or []))):
        error("--sheet applies to spreadsheet workbooks (.xlsx, .xlsm, .xlsb, .xls, "
              ".ods)")
    if args.test_sheet is not None and not any(map(is_workbook, args.test or [])):
        error("--test-sheet applies to --test spreadsheet workbooks (.xlsx, .xlsm, "
              ".xlsb, .xls, .ods)")
    tests = [None] * len(args.data)
    if args.test is not None:
        if len(args.test) != len(args.data) or not named:
            error(f"--test takes one test file per data file, in the same order, "
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
            error(str(exc))
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
            elif args.markdown:
                print(f"**{table.title}**\n\n{markdown_table(table.header, table.rows)}",
                      end="\n\n", flush=True)
            else:
                print(format_table(table.title, table.header, table.rows), end="\n\n",
                      flush=True)
        if args.plot is not None:
            for path in plot(data, results, traces, args.plot):
                print(f"wrote {path}", file=sys.stderr)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
