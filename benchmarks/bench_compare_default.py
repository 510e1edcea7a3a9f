"""``sparsekit-compare`` at its defaults (the README's first command): the wall time of the
whole command, per source tree.

Runs ``sparsekit-compare --json`` (its embedded a9a and scikit-learn's digits, ``--repeat
3``, ``--budget 10``) in a fresh process for each source tree given (``--trees``: a
checkout of an earlier commit with its built extensions, e.g. a ``git worktree``, to
measure a change of the command; default this tree), the trees taking turns for
``--rounds`` rounds. Reports each run's wall seconds, and per table row the fits timed
and their median, from the command's raw measurements. Writes section "compare_default"
of doc/benchmarks.md::

    python benchmarks/bench_compare_default.py [--trees DIR ...] [--rounds N]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import json
import statistics
from pathlib import Path


def fit_rows(report):
    """{(data, table, row): [seconds of its timed fits]} of a --json report."""
    return {(table["data"], table["title"].split(f", {table['data']}")[0], name): m["seconds"]
            for table in report for name, m in table["measurements"].items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="+", type=Path, default=[_report.REPO])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    walls = {tree: [] for tree in args.trees}
    fits = {tree: {} for tree in args.trees}
    for k in range(args.rounds):
        for tree in args.trees:
            seconds, out = _report.compare_in_tree(tree, "--json")
            report = json.loads(out)
            walls[tree].append(seconds)
            for key, times in fit_rows(report).items():
                fits[tree].setdefault(key, []).append(times)
            print(f"round {k + 1}, {_report.git_commit(tree)}: {seconds:.0f} s", flush=True)
    names = [_report.git_commit(tree) for tree in args.trees]
    runs = "\n".join(f"| {name} | {' / '.join(f'{s:.0f}' for s in walls[tree])} |"
                     for name, tree in zip(names, args.trees))
    header = " | ".join(f"{name}: fits timed, median s" for name in names)
    rows = []
    for key in fits[args.trees[0]]:
        cells = []
        for tree in args.trees:
            rounds = fits[tree].get(key, [])
            counts = "/".join(str(len(times)) for times in rounds)
            median = statistics.median(t for times in rounds for t in times) if rounds else 0
            cells.append(f"{counts}, {median:.3f}")
        rows.append(f"| {key[0]} | {key[1]} | {key[2]} | {' | '.join(cells)} |")
    body = f"""`sparsekit-compare` with no argument, as the README's first command runs it (its embedded
a9a and scikit-learn's digits; `--repeat 3`, `--budget 10`; each fit after an untimed
warm-up fit, or, where the command has `WARM_FIT`, timed from its first run when that run
takes a second or more), in a fresh process for each source tree (the commit named), the
trees taking turns for {args.rounds} rounds. Wall seconds of the whole command, each round:

| commit | wall seconds |
|---|---|
{runs}

Each row of its tables: the fits timed in each round and the median of their seconds.

| data | table | row | {header} |
|---|---|---|{'---|' * len(names)}
{chr(10).join(rows)}
"""
    _report.write_section("compare_default", "sparsekit-compare at its defaults: the "
                          "command's wall time", body,
                          packages=("numpy", "scipy", "scikit-learn", "liblinear-official",
                                    "skglm", "celer", "fasttext-numpy2-wheel"))


if __name__ == "__main__":
    main()
