"""Shared plumbing for the benchmark scripts: thread pinning, timing, and doc/benchmarks.md.

Import this module *before* NumPy so the BLAS thread pins take effect::

    import _report  # noqa: F401  (pins BLAS threads)
    import numpy as np

Each script owns one section of ``doc/benchmarks.md``, delimited by HTML comments
``<!-- BEGIN name -->`` / ``<!-- END name -->``; :func:`write_section` replaces it in place
(adding it at the end the first time) and stamps it with date, machine, versions and command.
"""
import argparse
import fcntl
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from datetime import date
from importlib import metadata
from pathlib import Path

THREADS = os.environ.setdefault("SPARSEKIT_BENCH_THREADS", "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = THREADS

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "doc" / "benchmarks.md"
DATA_HOME = Path(os.environ.get("SPARSEKIT_DATA", REPO.parent / "shared" / "datasets"))
#: where the benchmarks keep the raw results of their parts (JSON), outside the repository:
#: doc/benchmarks.md is the record; the cache only lets a part be rerun on its own
RESULTS = Path(os.environ.get("SPARSEKIT_BENCH_CACHE",
                              Path.home() / ".cache" / "sparsekit" / "benchmarks"))
os.environ.setdefault("SPARSEKIT_DATA", str(DATA_HOME))   # the loaders' default folder


def median_time(fn, repeat=3, warmup=0):
    """Median wall time of ``fn()`` over ``repeat`` runs, and the last result."""
    for _ in range(warmup):
        fn()
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def cpu_time(fn, long=5.0):
    """(median process CPU seconds over 3 calls of ``fn()``, or of the first call longer
    than ``long`` seconds; its last result)."""
    times = []
    while True:
        start = time.process_time()
        out = fn()
        times.append(time.process_time() - start)
        if times[-1] > long or len(times) == 3:
            return statistics.median(times), out


def timed_fit(est, X, y, long=5.0):
    """(median wall seconds of ``est.fit(X, y)`` over 3 fits, or of the first fit that
    takes longer than ``long`` seconds; the fitted ``est``; the ConvergenceWarnings of the
    last fit)."""
    from sklearn.exceptions import ConvergenceWarning

    times = []
    while True:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            start = time.perf_counter()
            est.fit(X, y)
            times.append(time.perf_counter() - start)
        if times[-1] > long or len(times) == 3:
            warned = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
            return statistics.median(times), est, warned


def fit_once(make, X, y):
    """(``make().fit(X, y)``, its wall seconds), warnings silenced: one fit, for fits too
    long or too many to repeat."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est = make().fit(X, y)
    return est, time.perf_counter() - start


def debian_sample(n_docs, seed=0):
    """(TF-IDF rows, sections) of ``n_docs`` Debian package descriptions drawn at random:
    the text corpus of the cross-validation benchmarks (58 sections, some of a few
    documents)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    from sparsekit.datasets import load_debian

    corpus = load_debian()
    rows = np.random.default_rng(seed).permutation(len(corpus.text))[:n_docs]
    return (TfidfVectorizer().fit_transform([corpus.text[i] for i in rows]),
            np.asarray(corpus.section)[rows])


def beside_before(description, measure):
    """``(results, before)``: this run's ``measure()`` (a dict) with ``"commit"`` added, and
    an earlier commit's (None without ``--before``). The script's command line: ``--save
    FILE`` writes the results as JSON, ``--before FILE`` reads such a file, written by the
    same script run in a checkout of the earlier commit, to be shown beside."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--save", help="write this run's results to this JSON file")
    parser.add_argument("--before", help="an earlier commit's results (its --save), shown "
                                         "beside")
    args = parser.parse_args()
    results = {"commit": git_commit(), **measure()}
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results, f, indent=1)
    if args.before is None:
        return results, None
    with open(args.before) as f:
        return results, json.load(f)


def fit_cell(fit, unit="s"):
    """``iterations / accuracy / time`` of a fit's ``{"iterations", "accuracy", "seconds",
    "warned"}`` for a table cell, the time in ``unit`` ("s" or "ms"), ", warned" after a
    ConvergenceWarning."""
    time_text = (f"{fit['seconds']:.2f} s" if unit == "s"
                 else f"{fit['seconds'] * 1e3:.1f} ms")
    return (f"{fit['iterations']} / {fit['accuracy']:.4f} / {time_text}"
            + (", warned" if fit["warned"] else ""))


def machine():
    """One line describing the CPU, core count and memory of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, {platform.system()} {platform.release()}"


def versions(packages):
    """``name version`` for each installed package in ``packages`` (missing ones skipped)."""
    out = [f"Python {platform.python_version()}"]
    for name in packages:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(out)


def git_commit(tree=REPO):
    """The short commit of the checkout ``tree`` (this one by default)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True,
            text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def compare_in_tree(tree, *args):
    """(wall seconds, stdout) of ``sparsekit-compare *args`` in a fresh process with the
    sparsekit of the source tree ``tree`` (a checkout with its built extensions)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "sparsekit.benchmarks.compare",
                           *map(str, args)], env=env, capture_output=True, text=True,
                          cwd=tree)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"sparsekit-compare failed in {tree}:\n{done.stderr[-2000:]}")
    return seconds, done.stdout


def markdown_table(header, rows):
    """``rows`` (lists of cells) under ``header`` as a GitHub markdown table: the text of
    ``sparsekit-compare --markdown``, imported when called (the scripts put the source tree
    on the path after importing this module, so that an in-place build serves)."""
    from sparsekit.benchmarks._format import markdown_table as table

    return table(header, rows)


#: the peers of ``sparsekit-compare``'s tables, for a section's versions line
COMPARE_PACKAGES = ("numpy", "scipy", "scikit-learn", "pandas", "liblinear-official", "skglm",
                    "celer", "fasttext-numpy2-wheel")


def compare_tables(spec, repeat, budget, **options):
    """Markdown of ``sparsekit-compare``'s tables of the data ``spec`` (its functions: the
    console script's code path; ``options`` as ``load_dataset``'s, e.g. ``label``,
    ``drop``), each under its title, the wall seconds of them all (loading included)
    beside the first."""
    from sparsekit.benchmarks import _run
    from sparsekit.benchmarks._data import load_dataset

    start = time.perf_counter()
    data = load_dataset(spec, **options)
    announce = lambda model: print(f"  {data.name}: {model}", flush=True)  # noqa: E731
    with _run.threadpool_limits(limits=1):
        results = _run.tables(data, repeat, budget=budget, announce=announce)
    seconds = time.perf_counter() - start
    body = []
    for k, table in enumerate(results):
        wall = f" ({seconds:.0f} s for this data set's tables)" if k == 0 else ""
        body.append(f"\n**{table.title}**{wall}\n")
        body.append(markdown_table(table.header, table.rows))
    return "\n".join(body)


def write_section(name, title, body, packages=("numpy", "scipy", "scikit-learn")):
    """Replace (or append) section ``name`` of doc/benchmarks.md with ``body``."""
    command = "python " + shlex.join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])
    stamp = (f"*{date.today().isoformat()} · {machine()} · {versions(['sparsekit', *packages])}"
             f" · BLAS threads {THREADS} · commit {git_commit()}*\n\n"
             f"Reproduce: `{command}`\n")
    block = f"<!-- BEGIN {name} -->\n## {title}\n\n{stamp}\n{body.strip()}\n<!-- END {name} -->\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    with open(DOC, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        text = fh.read() or ("# Benchmarks\n\nEvery table below is written by a script in "
                             "`benchmarks/`.\n\n")
        begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->\n"
        if begin in text and end in text:
            head, rest = text.split(begin, 1)
            text = head + block + rest.split(end, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + block
        fh.seek(0)
        fh.truncate()
        fh.write(text)
    print(f"wrote section {name!r} to {DOC}")
