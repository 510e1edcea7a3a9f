"""A/B timing of ExtremeSoftmaxSGD's epoch driver: this checkout against an earlier commit.

The earlier commit is exported with ``git archive`` into a temporary folder and built there
(once; kept for later runs). Both builds then time epochs on the scale part's teacher
(``bench_extreme_softmax.py --parts scale``: N = 100000, D = 1000, float32, m = 1, b = 1
unless ``--n-sampled``, ``--batch-size`` or ``--shared-classes`` says otherwise) in
alternating subprocesses, so that machine drift hits both alike; each subprocess fits every
method (or those of ``--methods``) at each K of ``--ks`` (default 100 and 100000) in
interleaved rounds and reports the thread CPU time of each epoch. The fitted weights of the
two builds are compared bitwise. Run::

    python benchmarks/ab_extreme_softmax_driver.py 19a28fe --reps 5 --ks 100,1000,3000,100000

(alone on the machine: on a shared one, under the same ``flock`` as the other timings).
The section "ExtremeSoftmaxSGD: epoch driver A/B" of doc/benchmarks.md is rewritten; a run
with other settings (b > 1, m > 1, shared classes, fewer methods) writes a section of its own.
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = _report.REPO
METHODS = ["implicit", "umax", "ove"]

CHILD = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from sparsekit.datasets import make_extreme_softmax_teacher
from sparsekit.linear_model import ExtremeSoftmaxSGD
rounds, Ks, methods, b, n_sampled, shared = (int(sys.argv[2]), json.loads(sys.argv[3]),
                                             json.loads(sys.argv[4]), int(sys.argv[5]),
                                             int(sys.argv[6]), sys.argv[7] == "1")
options = {"shared_classes": True} if shared else {}
data = {K: make_extreme_softmax_teacher(100_000, 1000, K, 20, dtype=np.float32,
                                        random_state=0) for K in Ks}
cpu, digest = {}, {}
for _ in range(rounds):
    for K in Ks:
        for m in methods:
            est = ExtremeSoftmaxSGD(m, learning_rate=0.1, n_epochs=2, eval_every=0,
                                    eval_size=200, fit_intercept=False, random_state=0,
                                    n_sampled=n_sampled, batch_size=b,
                                    **options).fit(*data[K])
            cpu.setdefault(f"{m}/{K}", []).extend(est.epoch_cpu_times_)
            digest[f"{m}/{K}"] = hashlib.sha256(est.coef_.tobytes()).hexdigest()
print(json.dumps({"cpu": cpu, "digest": digest}))
"""


def build_commit(commit):
    """A built export of ``commit`` (kept in the temp folder between runs)."""
    sha = subprocess.run(["git", "rev-parse", "--short=12", commit], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout.strip()
    tree = Path(tempfile.gettempdir()) / f"sparsekit-ab-{sha}"
    if not (tree / ".built").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha], cwd=REPO, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-j", "2"],
                       cwd=tree, check=True, capture_output=True)
        (tree / ".built").touch()
    return sha, tree


def time_build(tree, rounds, ks, methods, batch_size, n_sampled, shared):
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(rounds), json.dumps(ks),
                          json.dumps(methods), str(batch_size), str(n_sampled),
                          str(int(shared))], check=True,
                         capture_output=True, text=True, env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("commit", help="the earlier commit (built from a git archive)")
    parser.add_argument("--reps", type=int, default=5, help="alternations of the two builds")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per subprocess")
    parser.add_argument("--ks", default="100,100000",
                        help="class counts of the teacher, comma-separated (the last column "
                             "is the last over the first)")
    parser.add_argument("--batch-size", type=int, default=1, help="examples per step")
    parser.add_argument("--n-sampled", type=int, default=1, help="classes drawn per step")
    parser.add_argument("--shared-classes", action="store_true",
                        help="one class draw per batch (ExtremeSoftmaxSGD(shared_classes=True))")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated, among " + ", ".join(METHODS))
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    # Implicit SGD is a one-datapoint step (batch_size=1 only)
    default = METHODS if args.batch_size == 1 else [m for m in METHODS if m != "implicit"]
    methods = [m for m in default if m in args.methods.split(",")]
    sha, old_tree = build_commit(args.commit)
    builds = {f"commit {sha}": old_tree, f"this checkout ({_report.git_commit()})": REPO}
    cpu = {name: {} for name in builds}
    digests = {}
    for _ in range(args.reps):
        for name, tree in builds.items():
            res = time_build(tree, args.rounds, ks, methods, args.batch_size, args.n_sampled,
                             args.shared_classes)
            for key, ts in res["cpu"].items():
                cpu[name].setdefault(key, []).extend(ts)
            digests.setdefault(name, res["digest"])
    (old, new) = builds
    rows = []
    for m in methods:
        med = {(b, K): float(np.median(cpu[b][f"{m}/{K}"])) * 1e3 for b in builds for K in ks}
        rows.append([m] + [f"{med[(old, K)]:.1f} → {med[(new, K)]:.1f} ms "
                           f"({med[(new, K)] / med[(old, K)]:.2f}x)" for K in ks]
                    + [f"{med[(old, ks[-1])] / med[(old, ks[0])]:.2f}x → "
                       f"{med[(new, ks[-1])] / med[(new, ks[0])]:.2f}x"])
    same = digests[old] == digests[new]
    n = len(next(iter(cpu[new].values())))
    body = (f"{old} → {new}: CPU ms per epoch of the driver's thread, median of {n} epochs "
            f"per cell ({args.reps} alternations of the two builds, {args.rounds} interleaved "
            f"rounds each; teacher N=100000, D=1000, float32, m={args.n_sampled}, "
            f"b={args.batch_size}"
            + (", classes drawn per batch" if args.shared_classes else "") + ").\n\n"
            + _report.markdown_table(["method"] + [f"K={K:g}" for K in ks]
                                     + [f"K={ks[-1]:g} / K={ks[0]:g}"], rows)
            + f"\n\nFitted weights of the two builds bitwise identical: {same}.\n")
    print(body)
    # one section per setting: the default (m = 1, b = 1, the three methods) and each other
    only = methods != default
    suffix = ((f"_b{args.batch_size}" if args.batch_size > 1 else "")
              + (f"_m{args.n_sampled}" if args.n_sampled > 1 else "")
              + ("_shared" if args.shared_classes else "")
              + ("_" + "_".join(methods) if only else ""))
    title = ((f", batches of {args.batch_size}" if args.batch_size > 1 else "")
             + (f", {args.n_sampled} classes drawn per step" if args.n_sampled > 1 else "")
             + (", classes drawn per batch" if args.shared_classes else "")
             + (", " + ", ".join(methods) + " only" if only else ""))
    _report.write_section("extreme_softmax_ab" + suffix,
                          "ExtremeSoftmaxSGD: epoch driver A/B" + title, body)


if __name__ == "__main__":
    main()
