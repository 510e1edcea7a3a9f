"""ℓ1 logistic regression: OBA (L1LogisticOBA) against LIBLINEAR, skglm, celer, scikit-learn.

Objective of every solver: F(w) = ‖w‖₁ + C Σᵢ log(1 + exp(−yᵢ wᵀxᵢ)), no intercept
(LIBLINEAR ``-s 6 -B -1``; skglm alpha = 1/(C n)). For each data set and C, every solver runs
at a ladder of tolerances, refined by one run between the last tolerance that missed each ε and
the first that reached it; "time to ε" is the shortest run whose F ≤ F*(1 + ε), F* being the
best objective any run reached (LIBLINEAR at ``-e 1e-9`` and OBA at tol 1e-11 included). A
ladder stops after ``--cap`` seconds, or once it is within 1e-8 of the tight references.
Each run is timed once in process CPU time (the median of 3 below 1 s; every solver is
single-threaded, BLAS pinned), its wall time and the load average kept alongside; the
path comparison takes the median of 3. Writes section "l1_logistic" of
doc/benchmarks.md and the convergence figure doc/oba_convergence.png (thesis Figure 2.1
style). Runs can be split over several invocations (``--cache``, ``--merge``, ``--rerun``,
``--report-only``).

    python benchmarks/bench_l1_logistic.py            # full protocol
    python benchmarks/bench_l1_logistic.py --quick    # a9a, w8a, Synthetic-2000 at C=1
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import json
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.datasets import (load_debian, load_libsvm, load_mnist,  # noqa: E402
                                make_thesis_synthetic)
from sparsekit.linear_model import L1LogisticOBA, l1_logistic_path  # noqa: E402
from sparsekit.utils._sklearn import l1_penalty  # noqa: E402

DATASETS = ("a9a", "w8a", "mnist", "debian", "synthetic-2000", "synthetic-5000")
SOLVERS = ("OBA", "LIBLINEAR", "skglm", "celer", "sklearn-liblinear", "sklearn-saga")
LADDERS = {
    "OBA": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10],
    "LIBLINEAR": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
    "skglm": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9],
    "celer": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9],
    "sklearn-liblinear": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
    "sklearn-saga": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7],
}
EPSILONS = (1e-4, 1e-6)
CACHE = Path.home() / ".cache" / "sparsekit_bench_l1_logistic.json"
FIGURE = _report.REPO / "doc" / "oba_convergence.png"


def load(name):
    """(X, y) with y in {−1, +1}; sparse sets as CSR, Synthetic dense."""
    if name in ("a9a", "w8a"):
        X, y = load_libsvm(name, data_home=_report.DATA_HOME)
    elif name == "mnist":
        X, digits = load_mnist("train", data_home=_report.DATA_HOME)
        X = sp.csr_matrix(X.astype(np.float64) / 255.0)
        y = np.where(digits <= 4, 1.0, -1.0)
    elif name == "debian":
        from sklearn.feature_extraction.text import TfidfVectorizer

        corpus = load_debian(data_home=_report.DATA_HOME)
        X = TfidfVectorizer(ngram_range=(1, 2), min_df=2).fit_transform(corpus.text)
        y = np.where(corpus.section == "python", 1.0, -1.0)
    else:
        X, y = make_thesis_synthetic(int(name.split("-")[1]), random_state=0)
        return np.asfortranarray(X), y
    X = sp.csr_matrix(X, dtype=np.float64)
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X, np.asarray(y, dtype=np.float64)


def objective(X, y, w, C):
    m = np.asarray(X @ w).ravel()
    return float(np.abs(w).sum() + C * np.logaddexp(0.0, -y * m).sum())


def liblinear_weights(model, n_features):
    """A LIBLINEAR model's weights (no bias) for label +1, as ``n_features`` numbers: its model
    ends at the last column that stores a nonzero (MNIST's last four pixels are 0 in every
    image), the columns after it weigh 0."""
    w = np.zeros(n_features)
    nf = model.get_nr_feature()
    w[:nf] = np.ctypeslib.as_array(model.w, (nf,))
    return w if model.get_labels()[0] == 1 else -w


def make_runners(X, y, C):
    """solver name -> fn(tol) returning (w, extra dict)."""
    from liblinear import liblinearutil

    n = X.shape[0]
    Xcsc = X.tocsc() if sp.issparse(X) else X
    Xcsr = X if sp.issparse(X) else sp.csr_matrix(X)
    prob = liblinearutil.problem(y, Xcsr)

    def oba(tol):
        est = L1LogisticOBA(C=C, tol=tol, fit_intercept=False, max_iter=2000).fit(Xcsc, y)
        loops = est.corrective_loops_[0]
        return est.coef_.ravel(), {"loops": loops.tolist(), "nit": int(est.n_iter_[0]),
                                   "optimality": float(est.optimality_[0])}

    def liblinear(tol):
        model = liblinearutil.train(prob, liblinearutil.parameter(f"-s 6 -B -1 -q -c {C} -e {tol}"))
        return liblinear_weights(model, X.shape[1]), {}

    def skglm_run(tol):
        from skglm import SparseLogisticRegression

        est = SparseLogisticRegression(alpha=1.0 / (C * n), tol=tol, max_iter=1000,
                                       fit_intercept=False).fit(Xcsc, y)
        return est.coef_.ravel(), {}

    def celer_run(tol):
        from celer import LogisticRegression

        est = LogisticRegression(C=C, tol=tol, max_iter=1000, fit_intercept=False).fit(Xcsc, y)
        return est.coef_.ravel(), {}

    def sklearn_run(solver):
        from sklearn.linear_model import LogisticRegression

        max_iter = 300 if solver == "saga" else 100000  # saga: epochs, bounds a single run

        def run(tol):
            est = LogisticRegression(C=C, solver=solver, tol=tol, **l1_penalty(),
                                     fit_intercept=False, max_iter=max_iter).fit(X, y)
            return est.coef_.ravel(), {}
        return run

    return {"OBA": oba, "LIBLINEAR": liblinear, "skglm": skglm_run, "celer": celer_run,
            "sklearn-liblinear": sklearn_run("liblinear"), "sklearn-saga": sklearn_run("saga")}


def timed(fn, tol):
    """(CPU seconds, wall seconds, fn(tol)): one run, or the median of 3 when under 1 s."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(tol)
    cpu, wall = [time.process_time() - c0], [time.perf_counter() - t0]
    if cpu[0] < 1.0:  # median of 3 for short runs
        for _ in range(2):
            c0, t0 = time.process_time(), time.perf_counter()
            fn(tol)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - t0)
    return float(np.median(cpu)), float(np.median(wall)), out


def timed_or_none(fn, tol, limit):
    """:func:`timed`, or None when the run lasts more than ``limit`` wall seconds.

    The alarm interrupts Python-level solver loops (skglm's outer loop between its compiled
    epochs; numba re-raises it as a SystemError); a single long compiled call (LIBLINEAR,
    celer, saga) ends at its own max_iter.
    """
    if not limit:
        return timed(fn, tol)
    fired = []

    def alarm(signum, frame):
        fired.append(True)
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return timed(fn, tol)
    except Exception:
        if fired:
            return None
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_WARM = set()


def warm_up(solvers, dense):
    """One untimed fit of each solver on a small problem of the same layout (numba compiles
    skglm's kernels once per layout)."""
    rng = np.random.default_rng(0)
    Xs = sp.random(200, 30, density=0.3, random_state=0, format="csr")
    Xs.indices, Xs.indptr = Xs.indices.astype(np.int32), Xs.indptr.astype(np.int32)
    if dense:
        Xs = np.asfortranarray(Xs.toarray())
    ys = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    for name, run in make_runners(Xs, ys, 1.0).items():
        if name in solvers and (name, dense) not in _WARM:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run(1e-3)
            _WARM.add((name, dense))


def run_problem(X, y, C, solvers, cap, runs=None, run_limit=None, save=None,
                keep_reference=False):
    """Ladder runs of every solver; returns {solver: [{tol, seconds, F, nnz, ...}]}.

    With ``runs`` (earlier results of the same problem) only ``solvers`` are run again, and
    with ``keep_reference`` LIBLINEAR's tight reference already in ``runs`` is kept even when
    LIBLINEAR is run again (it depends on LIBLINEAR alone, and takes minutes on Debian). A
    ladder run that lasts more than ``run_limit`` seconds is recorded with F = inf and
    ends that solver's ladder. ``save(runs)`` is called after the tight references and
    after each ladder (a long part keeps what it measured if it is stopped).
    """
    save = save or (lambda runs: None)
    warm_up(solvers, dense=not sp.issparse(X))
    runners = make_runners(X, y, C)
    runs = {} if runs is None else runs
    # tight references first: LIBLINEAR -e 1e-9 and OBA tol 1e-11
    for name, tol in (("LIBLINEAR", 1e-9), ("OBA", 1e-11)):
        if name + "-tight" in runs and (name not in solvers
                                        or keep_reference and name == "LIBLINEAR"):
            continue
        seconds, wall, (w, extra) = timed(runners[name], tol)
        F = objective(X, y, w, C)
        support = np.flatnonzero(w)
        runs[name + "-tight"] = [
            {"tol": tol, "seconds": seconds, "wall": wall, "load": os.getloadavg()[0], "F": F,
             "nnz": int(np.count_nonzero(np.abs(w) > 1e-6)),
             "w_nonzero": np.flatnonzero(np.abs(w) > 1e-6).tolist(), "extra": extra,
             "w_support": support.tolist(), "w_values": w[support].tolist()}]
        print(f"  {name + '-tight':18s} tol={tol:.0e} {seconds:8.3f}s F={F:.12e}", flush=True)
    save(runs)
    F_ref = min(runs["LIBLINEAR-tight"][0]["F"], runs["OBA-tight"][0]["F"])
    for name in solvers:
        runs[name] = []
        spent = 0.0
        for tol in LADDERS[name]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = timed_or_none(runners[name], tol, run_limit)
            if out is None:
                runs[name].append({"tol": tol, "seconds": run_limit, "F": float("inf"),
                                   "timed_out": True, "extra": {}})
                print(f"  {name:18s} tol={tol:.0e} stopped after {run_limit:g} s", flush=True)
                break
            seconds, wall, (w, extra) = out
            F = objective(X, y, w, C)
            runs[name].append({"tol": tol, "seconds": seconds, "wall": wall,
                               "load": os.getloadavg()[0], "F": F,
                               "nnz": int(np.count_nonzero(np.abs(w) > 1e-6)),
                               "extra": extra})
            spent += seconds
            print(f"  {name:18s} tol={tol:.0e} {seconds:8.3f}s F={F:.12e}", flush=True)
            if spent > cap or F <= F_ref * (1 + 1e-8):  # capped, or past every ε reported
                break
        for tol in refinements(runs[name], F_ref):
            out = timed_or_none(runners[name], tol, run_limit)
            if out is not None:
                seconds, wall, (w, extra) = out
                F = objective(X, y, w, C)
                runs[name].append({"tol": tol, "seconds": seconds, "wall": wall,
                                   "load": os.getloadavg()[0], "F": F, "refined": True,
                                   "nnz": int(np.count_nonzero(np.abs(w) > 1e-6)),
                                   "extra": extra})
                print(f"  {name:18s} tol={tol:.1e} {seconds:8.3f}s F={F:.12e} (refined)",
                      flush=True)
        save(runs)
    compare_tight(X, y, C, runs)
    save(runs)
    return runs


def compare_tight(X, y, C, runs):
    """Compare OBA's and LIBLINEAR's tight solutions (stored on OBA's tight run): the largest
    margin difference, the ℓ1 difference, and the zero-pattern mismatches left once each
    group of identical columns is merged (see ``merged_mismatches``)."""
    a, b = runs["OBA-tight"][0], runs["LIBLINEAR-tight"][0]
    w_a, w_b = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    w_a[a["w_support"]] = a["w_values"]
    w_b[b["w_support"]] = b["w_values"]
    a["margin_diff"] = float(np.abs(np.asarray(X @ (w_a - w_b))).max())
    a["l1_diff"] = float(np.abs(w_a).sum() - np.abs(w_b).sum())
    a["mismatch_left"] = merged_mismatches(X, y, C, w_a, w_b)


def merged_mismatches(X, y, C, w_a, w_b, threshold=1e-6):
    """Zero-pattern mismatches (|w| > threshold) left once every group of identical columns
    (the same rows and values, e.g. bigrams that only occur together) is merged into one:
    the objective depends only on a group's sum of weights (of one sign at an optimum), so
    how a solver splits that sum is arbitrary. Returns one entry per mismatch left: the
    column, both group sums and |∂L/∂w_j| at both solutions (0 is optimal for w_j iff
    that is ≤ 1 there)."""
    mismatch = np.flatnonzero((np.abs(w_a) > threshold) != (np.abs(w_b) > threshold))
    if not mismatch.size:
        return []
    Xc = sp.csc_matrix(X)
    Xc.sort_indices()
    Xr = Xc.tocsr()

    def column(j):
        return Xc.indices[Xc.indptr[j]:Xc.indptr[j + 1]], Xc.data[Xc.indptr[j]:Xc.indptr[j + 1]]

    def loss_grad(w):
        z = y * np.asarray(X @ w)
        return -C * np.asarray(Xc.T @ (y * np.exp(-np.logaddexp(0.0, z))))

    left, seen = [], set()
    g_a, g_b = loss_grad(w_a), loss_grad(w_b)
    for j in mismatch:
        if j in seen:
            continue
        rows, vals = column(j)
        candidates = Xr.indices[Xr.indptr[rows[0]]:Xr.indptr[rows[0] + 1]] if rows.size else [j]
        group = [c for c in candidates if np.array_equal(column(c)[0], rows)
                 and np.allclose(column(c)[1], vals, rtol=1e-12, atol=0.0)]
        seen.update(group)
        s_a, s_b = w_a[group].sum(), w_b[group].sum()
        if (abs(s_a) > threshold) != (abs(s_b) > threshold):
            left.append({"column": int(j), "group": len(group), "sum_oba": float(s_a),
                         "sum_liblinear": float(s_b), "grad_oba": float(abs(g_a[j])),
                         "grad_liblinear": float(abs(g_b[j]))})
    return left


def refinements(ladder, F_ref, eps_list=EPSILONS):
    """Tolerances between the ladder's last miss and first hit of each ε (geometric mean).

    A ladder a factor 10 apart overstates the time to ε of a solver whose accuracy jumps
    past ε within one step (a superlinear Newton method more than a linearly converging
    one); one extra run per ε, the same rule for every solver, halves that step in log scale.
    """
    tols = []
    for eps in eps_list:
        hit = next((i for i, r in enumerate(ladder) if r["F"] <= F_ref * (1 + eps)), None)
        if hit:  # reached, and not by the first (loosest) run
            tol = float(np.sqrt(ladder[hit - 1]["tol"] * ladder[hit]["tol"]))
            if tol not in tols:
                tols.append(tol)
    return tols


def time_to(runs, F_star, eps):
    """Shortest time among the runs (ladder and tight reference) that reached F*(1 + ε)."""
    times = [r["seconds"] for r in runs if r["F"] <= F_star * (1 + eps)]
    return min(times) if times else None


def fmt(t):
    return "—" if t is None else f"{t:.2f}"


def summarize(results, datasets, Cs):
    speed_rows, correct_rows, loop_rows = [], [], []
    wins = total = 0
    for ds in datasets:
        for C in Cs:
            key = f"{ds}|{C:g}"
            if key not in results:
                continue
            runs = results[key]
            F_star = min(r["F"] for rs in runs.values() for r in rs)
            for eps in EPSILONS:
                t = {s: time_to(runs.get(s, []) + runs.get(s + "-tight", []), F_star, eps)
                     for s in SOLVERS}
                peers = {s: v for s, v in t.items() if s != "OBA" and v is not None}
                best_peer = min(peers, key=peers.get) if peers else None
                r_ll = (t["OBA"] / t["LIBLINEAR"]) if t["OBA"] and t["LIBLINEAR"] else None
                r_best = (t["OBA"] / peers[best_peer]) if t["OBA"] and best_peer else None
                total += 1
                wins += bool(r_ll is not None and r_ll < 1)
                speed_rows.append([ds, f"{C:g}", f"{eps:.0e}"] + [fmt(t[s]) for s in SOLVERS] + [
                    "—" if r_ll is None else f"{r_ll:.2f}",
                    "—" if r_best is None else f"{r_best:.2f} ({best_peer})"])
            oba = runs["OBA-tight"][0]
            ll = runs["LIBLINEAR-tight"][0]
            mism = len(set(oba["w_nonzero"]) ^ set(ll["w_nonzero"]))
            left = len(oba["mismatch_left"]) if "mismatch_left" in oba else "—"
            correct_rows.append([ds, f"{C:g}", f"{oba['F']:.10e}", f"{ll['F']:.10e}",
                                 f"{(oba['F'] - F_star) / F_star:.1e}",
                                 f"{(ll['F'] - F_star) / F_star:.1e}", oba["nnz"], ll["nnz"],
                                 mism, left, f"{oba['margin_diff']:.1e}",
                                 f"{oba['extra']['optimality']:.1e}"
                                 if "optimality" in oba["extra"] else "—"])
            loops = np.asarray(oba["extra"]["loops"])
            n_feat = results.get(f"{ds}|n_features")
            q = np.percentile(loops, [25, 50, 75]) if loops.size else [np.nan] * 3
            loop_rows.append([ds, f"{C:g}", f"{q[0]:g}", f"{q[1]:g}", f"{q[2]:g}",
                              int(loops.max(initial=0)),
                              f"{100 * (1 - ll['nnz'] / n_feat):.2f}",
                              f"{100 * (1 - oba['nnz'] / n_feat):.2f}"])
    return speed_rows, correct_rows, loop_rows, wins, total


def plot(results, datasets, C):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [ds for ds in datasets if f"{ds}|{C:g}" in results]
    if not keys:
        return
    cols = min(3, len(keys))
    rows = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax, ds in zip(axes.flat, keys):
        runs = results[f"{ds}|{C:g}"]
        F_star = min(r["F"] for rs in runs.values() for r in rs)
        for s in SOLVERS:
            pts = [(r["seconds"], max((r["F"] - F_star) / (1 + F_star), 1e-16))
                   for r in runs.get(s, []) if np.isfinite(r["F"])]
            if pts:
                pts.sort()
                ax.plot(*zip(*pts), marker="o", ms=3, label=s, lw=2 if s == "OBA" else 1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{ds}, C={C:g}")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("(F − F*) / (1 + F*)")
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)
    print(f"wrote {FIGURE}")


def _cpu_median(fn, repeat=3):
    """Median process CPU time of ``fn()`` over ``repeat`` runs, and its last result."""
    times = []
    for _ in range(repeat):
        c0 = time.process_time()
        out = fn()
        times.append(time.process_time() - c0)
    return float(np.median(times)), out


def path_benchmark(name, n_Cs=20):
    """20-C path with warm starts against 20 cold LIBLINEAR runs at matching accuracy."""
    from liblinear import liblinearutil

    X, y = load(name)
    Xcsc = X.tocsc() if sp.issparse(X) else X
    prob = liblinearutil.problem(y, X if sp.issparse(X) else sp.csr_matrix(X))
    c_min = 1.0 / np.abs(np.asarray(X.T @ (0.5 * y))).max()
    Cs = np.logspace(np.log10(c_min), np.log10(c_min) + 4, n_Cs)

    def oba_path():
        return l1_logistic_path(Xcsc, y, Cs, fit_intercept=False, tol=1e-6)[0]

    def liblinear_runs():
        ws = []
        for C in Cs:
            model = liblinearutil.train(
                prob, liblinearutil.parameter(f"-s 6 -B -1 -q -c {C} -e 1e-4"))
            ws.append(liblinear_weights(model, X.shape[1]))
        return ws

    t_path, coefs = _cpu_median(oba_path)
    t_ll, ws = _cpu_median(liblinear_runs)
    gap_oba = gap_ll = 0.0
    for C, c, w in zip(Cs, coefs, ws):
        Fo, Fl = objective(X, y, c, C), objective(X, y, w, C)
        best = min(Fo, Fl)
        gap_oba, gap_ll = max(gap_oba, (Fo - best) / best), max(gap_ll, (Fl - best) / best)
    return [name, n_Cs, f"{Cs[0]:.2e} – {Cs[-1]:.2e}", f"{t_path:.2f}", f"{gap_oba:.1e}",
            f"{t_ll:.2f}", f"{gap_ll:.1e}", f"{t_ll / t_path:.2f}"]


def _store(results, key, runs, cache):
    """``results[key] = runs``, written to the results file at once."""
    results[key] = runs
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a9a, w8a, Synthetic-2000, C=1")
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--Cs", nargs="*", type=float, default=None)
    parser.add_argument("--solvers", nargs="*", default=list(SOLVERS))
    parser.add_argument("--cap", type=float, default=60.0, help="seconds per solver ladder")
    parser.add_argument("--run-limit", type=float, default=None,
                        help="wall seconds after which a single ladder run is stopped")
    parser.add_argument("--resume", action="store_true", help="reuse results in --cache")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"results file ({CACHE})")
    parser.add_argument("--merge", type=Path, nargs="*", default=[],
                        help="other results files to fold in before the report")
    parser.add_argument("--no-path", action="store_true",
                        help="no path runs (path rows already in the results are reported)")
    parser.add_argument("--path-only", action="store_true",
                        help="only the path runs, saved to --cache; no section written")
    parser.add_argument("--rerun", nargs="*", default=[],
                        help="run these solvers again on the problems already in --cache")
    parser.add_argument("--keep-reference", action="store_true",
                        help="with --rerun: keep LIBLINEAR's tight reference from --cache")
    parser.add_argument("--note", default="", help="a sentence added to the section")
    parser.add_argument("--note-file", type=Path, default=None,
                        help="a file whose text is added to the section (after --note)")
    parser.add_argument("--report-only", action="store_true",
                        help="no new runs: rebuild the section from the results files")
    parser.add_argument("--compare-tight", action="store_true",
                        help="with --report-only: first redo the comparison of the tight "
                             "solutions in --cache (loads the data; nothing is timed)")
    args = parser.parse_args()
    if args.compare_tight and not args.report_only:
        parser.error("--compare-tight goes with --report-only")
    if args.compare_tight:
        results = json.loads(args.cache.read_text())
        for ds in DATASETS:
            keys = [k for k, v in results.items() if k.startswith(ds + "|")
                    and isinstance(v, dict) and "OBA-tight" in v]
            if keys:
                X, y = load(ds)
            for key in keys:
                compare_tight(X, y, float(key.split("|")[1]), results[key])
                print(key, results[key]["OBA-tight"][0]["mismatch_left"], flush=True)
        args.cache.write_text(json.dumps(results))
    if args.report_only:
        # the section names the one command that measures everything, not the merge
        sys.argv = [sys.argv[0], "--cap", f"{args.cap:g}"] + (
            ["--run-limit", f"{args.run_limit:g}"] if args.run_limit else []) + (
            ["--note-file", str(args.note_file)] if args.note_file else [])
    if args.note_file is not None:
        args.note = (args.note + "\n" + args.note_file.read_text()).strip()
    datasets = args.datasets or (["a9a", "w8a", "synthetic-2000"] if args.quick else DATASETS)
    Cs = args.Cs or ([1.0] if args.quick else [0.1, 1.0, 10.0])
    cache = args.cache
    results = (json.loads(cache.read_text())
               if (args.resume or args.report_only) and cache.exists() else {})
    if args.report_only and not results:
        parser.error(f"--report-only: no results in {cache}")
    for ds in [] if args.report_only or args.path_only or not args.rerun else datasets:
        todo = [C for C in Cs if f"{ds}|{C:g}" in results]
        if todo:
            X, y = load(ds)
        for C in todo:
            print(f"{ds} C={C:g} (rerun {args.rerun})", flush=True)
            results[f"{ds}|{C:g}"] = run_problem(X, y, C, args.rerun, args.cap,
                                                 results[f"{ds}|{C:g}"], args.run_limit,
                                                 keep_reference=args.keep_reference)
            cache.write_text(json.dumps(results))
    for ds in [] if args.report_only or args.rerun or args.path_only else datasets:
        todo = [C for C in Cs if f"{ds}|{C:g}" not in results]
        if not todo:
            continue
        X, y = load(ds)
        results[f"{ds}|n_features"] = X.shape[1]
        results[f"{ds}|shape"] = f"{X.shape[0]} × {X.shape[1]}" + (
            f", nnz {X.nnz}" if sp.issparse(X) else " dense")
        for C in todo:
            print(f"{ds} C={C:g}", flush=True)
            key = f"{ds}|{C:g}"
            run_problem(X, y, C, args.solvers, args.cap, run_limit=args.run_limit,
                        save=lambda runs, key=key: _store(results, key, runs, cache))
    for other in args.merge:
        results = {**json.loads(other.read_text()), **results}
    all_ds = [d for d in DATASETS if any(k.startswith(d + "|") for k in results)]
    if not (args.no_path or args.report_only):
        for name in ("a9a", "w8a"):
            results[f"path|{name}"] = path_benchmark(name)
            print(results[f"path|{name}"], flush=True)
        args.cache.write_text(json.dumps(results))
        if args.path_only:
            return
    path_rows = [v for k, v in results.items() if k.startswith("path|")]
    all_Cs = sorted({float(k.split("|")[1]) for k in results if not k.startswith("path|")
                     and k.split("|")[1] not in ("n_features", "shape")})
    speed, correct, loops, wins, total = summarize(results, all_ds, all_Cs)
    plot(results, all_ds, 1.0 if 1.0 in all_Cs else all_Cs[0])

    shapes = "; ".join(f"{d}: {results[d + '|shape']}" for d in all_ds)
    loads = [r["load"] for k, v in results.items() if isinstance(v, dict)
             for rs in v.values() for r in rs if "load" in r]
    load_lo, load_hi = (min(loads), max(loads)) if loads else (float("nan"),) * 2
    limit = (f", and any single run stops at {args.run_limit:g} s" if args.run_limit
             else ", and a single run may last longer")
    body = f"""
Times are **process CPU seconds** (every solver single-threaded, BLAS pinned to 1 thread):
the 2-core machine was shared with other jobs, the 1-minute load average over the runs was
{load_lo:.1f}–{load_hi:.1f} (this benchmark accounts for 1), so wall times (kept in the
results file) would mostly measure the waiting; CPU time still suffers from cache and SMT
contention, so compare ratios rather than absolute numbers.
Objective ‖w‖₁ + C Σ log(1 + exp(−y wᵀx)), no intercept, for every solver. Data: {shapes}.
OBA, skglm and celer get CSC input (their column layout); OBA = `L1LogisticOBA(fit_intercept=False)`; LIBLINEAR = liblinear-official `-s 6 -B -1`
(problem built once, outside the timing); skglm `SparseLogisticRegression(alpha=1/(C n))`;
celer `LogisticRegression`; scikit-learn `LogisticRegression(l1_ratio=1)` with liblinear / saga.
Time to ε = seconds of the fastest run (ladder, refinement or tight reference) with
F ≤ F*(1+ε), F* = best F of all runs; every ladder is refined, for each ε, by one run at the
geometric mean of the last tolerance that missed ε and the first that reached it (the same
rule for every solver); "—" = not reached: a solver's ladder starts no run after {args.cap:g} s
in total{limit}. Ratios < 1 mean OBA is faster.
OBA is faster than LIBLINEAR on **{wins} of {total}** rows.

### Time (s) to relative suboptimality ε
{_report.markdown_table(["data", "C", "ε", *SOLVERS, "OBA / LIBLINEAR", "OBA / fastest peer"], speed)}

### Correctness at tight tolerance (OBA tol 1e-11, LIBLINEAR -e 1e-9)
{_report.markdown_table(["data", "C", "F OBA", "F LIBLINEAR", "OBA rel. gap to F*",
                         "LIBLINEAR rel. gap to F*", "nnz OBA", "nnz LIBLINEAR",
                         "pattern mismatches (|w|>1e-6)", "left after merging identical columns",
                         "‖X(w_OBA − w_LL)‖∞", "OBA optimality measure"], correct)}

Identical columns (the same rows and values) enter the objective only through the sum of
their weights, so how a solver splits that sum among them is arbitrary: the mismatches are
counted again with each such group merged into one column. One left with ‖X(w_OBA − w_LL)‖∞
≈ 0 and equal F means the two solutions differ along the null space of X (e.g. a9a's complete
one-hot groups are collinear without an intercept): the ℓ1 minimizer is not unique there, and
both are optimal.

### OBA corrective-loop quantiles and % zeros (thesis Table 2.2)
{_report.markdown_table(["data", "C", "Q25", "Q50", "Q75", "Max", "% zeros LIBLINEAR",
                         "% zeros OBA"], loops)}

### Regularization path: 20 Cs, warm-started OBA vs 20 cold LIBLINEAR runs
OBA `l1_logistic_path(tol=1e-6)`; LIBLINEAR `-e 1e-4`; "max gap" = worst relative F gap to the
better of the two over the path; CPU seconds, median of 3.
{_report.markdown_table(["data", "n_Cs", "C range", "OBA path (s)", "OBA max gap",
                         "LIBLINEAR (s)", "LIBLINEAR max gap", "speed-up"], path_rows)}

Convergence figure (thesis Fig. 2.1 style, C=1): `doc/oba_convergence.png`.

{args.note}
"""
    _report.write_section("l1_logistic", "ℓ1 logistic regression: OBA vs LIBLINEAR, skglm, celer, "
                          "scikit-learn", body,
                          packages=["numpy", "scipy", "scikit-learn", "liblinear-official",
                                    "skglm", "celer"])


if __name__ == "__main__":
    main()
