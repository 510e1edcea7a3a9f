"""The memory a fit takes beyond its data: sparsekit's estimators at their defaults against
LIBLINEAR and scikit-learn's LogisticRegression, on the same X.

Each (data set, model) pair is fit in a process of its own: the data are loaded (and
converted) first, then the kernel's high-water mark of the process's resident memory is
reset (``/proc/self/clear_refs``) and the model fit; the table gives the peak over the
resident memory before the fit, in MiB and as a multiple of X's own size (data, indices
and pointers of a sparse X; a dense X's array). Data: MNIST's training images (pixels /
255) as CSR with two classes (digits 0-4 against 5-9) and ten, and as a dense C-ordered
array with two; the Debian package descriptions (TF-IDF of words and word pairs seen twice,
the 58 archive sections), CSR. Models at their defaults (``random_state=0``), but for
the multinomial ℓ1 model, which is given C = 0.05 on MNIST (about 18 times the smallest C
with a nonzero weight, as in the tables before; at the default C = 1 the fit took 76 s
here on 2026-12-03, 41 iterations, against 28 s), and for ``L1LogisticOBACV``, given 4
values of C and 3 folds (its paths and the refit on all the rows; on MNIST only, for
time). LIBLINEAR is
liblinear-official ``train(problem(y, X), "-s 6 -q")`` (its ℓ1 logistic regression,
one-vs-rest on more classes; the problem built inside the measured span, as its Python
interface requires); scikit-learn's ``LogisticRegression()`` (lbfgs, ℓ2) and, on two
classes, ``LogisticRegression(l1_ratio=1, solver="liblinear")``. Fit seconds are wall
seconds of that one fit (one BLAS thread), for orientation only: the table is about memory.
Writes section "fit_memory" of doc/benchmarks.md (``--before FILE``: an earlier commit's
results, saved by the same script with ``--save``, shown beside)::

    python benchmarks/bench_fit_memory.py [--save FILE] [--before FILE]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import gc
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed

DATA = ("mnist", "mnist-10", "mnist-dense", "debian")
MODELS = ("L1LogisticOBA", "L1LogisticOBA multinomial", "L1LogisticOBACV",
          "SparsemaxClassifier", "ExtremeSoftmaxSGD", "LIBLINEAR -s 6", "LogisticRegression",
          "LogisticRegression l1 liblinear")
#: the Debian TF-IDF matrix, made once for the processes of a run
DEBIAN_CACHE = _report.RESULTS / "fit_memory_debian.npz"


def applies(data, model):
    """Whether ``model`` is fit on ``data``: the multinomial model on many classes (MNIST's
    ten: Debian's 58 at C = 0.05 are left out for time), the cross-validation on MNIST,
    scikit-learn's liblinear on two classes."""
    two = data in ("mnist", "mnist-dense")
    if model == "L1LogisticOBA multinomial":
        return data == "mnist-10"
    if model == "L1LogisticOBACV":
        return data != "debian"
    return two or model != "LogisticRegression l1 liblinear"


def load(data):
    """(X, y) of ``data``."""
    from sparsekit.datasets import load_debian, load_mnist

    if data.startswith("mnist"):
        X, digits = load_mnist("train", data_home=_report.DATA_HOME)
        X = X.astype(np.float64) / 255.0
        y = digits if data == "mnist-10" else (digits <= 4).astype(np.int64)
        return (X if data == "mnist-dense" else sp.csr_matrix(X)), y
    if not DEBIAN_CACHE.exists():
        from sklearn.feature_extraction.text import TfidfVectorizer

        corpus = load_debian(data_home=_report.DATA_HOME)
        X = TfidfVectorizer(ngram_range=(1, 2), min_df=2).fit_transform(corpus.text).tocsr()
        codes = np.unique(corpus.section, return_inverse=True)[1]
        DEBIAN_CACHE.parent.mkdir(parents=True, exist_ok=True)
        np.savez(DEBIAN_CACHE, data=X.data, indices=X.indices, indptr=X.indptr,
                 shape=X.shape, y=codes)
    saved = np.load(DEBIAN_CACHE)
    X = sp.csr_matrix((saved["data"], saved["indices"], saved["indptr"]),
                      shape=tuple(saved["shape"]))
    return X, saved["y"]


def fitter(model):
    """``fit(X, y)`` of ``model`` at its defaults."""
    from sklearn.linear_model import LogisticRegression

    from sparsekit.linear_model import (ExtremeSoftmaxSGD, L1LogisticOBA, L1LogisticOBACV,
                                        SparsemaxClassifier)

    if model == "LIBLINEAR -s 6":
        from liblinear import liblinearutil

        def fit(X, y):
            return liblinearutil.train(liblinearutil.problem(y.astype(np.float64),
                                                             sp.csr_matrix(X)), "-s 6 -q")
        return fit
    make = {"L1LogisticOBA": lambda: L1LogisticOBA(),
            "L1LogisticOBA multinomial": lambda: L1LogisticOBA(C=0.05,
                                                               multiclass="multinomial"),
            "L1LogisticOBACV": lambda: L1LogisticOBACV(Cs=4, cv=3),
            "SparsemaxClassifier": lambda: SparsemaxClassifier(random_state=0),
            "ExtremeSoftmaxSGD": lambda: ExtremeSoftmaxSGD(random_state=0),
            "LogisticRegression": lambda: LogisticRegression(),
            "LogisticRegression l1 liblinear": lambda: LogisticRegression(
                l1_ratio=1, solver="liblinear")}[model]
    return lambda X, y: make().fit(X, y)


def _status_mib(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no {key} in /proc/self/status")


def measure_case(data, model):
    """This process's measurement of one fit (printed as JSON by ``--case``)."""
    X, y = load(data)
    fit = fitter(model)
    size = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X)
            else X.nbytes) / 2**20
    gc.collect()
    with open("/proc/self/clear_refs", "w") as fh:     # resets VmHWM, the peak, to VmRSS
        fh.write("5")
    before = _status_mib("VmRSS")
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(X, y)
    seconds = time.perf_counter() - start
    return {"x_mib": size, "extra_mib": _status_mib("VmHWM") - before, "seconds": seconds,
            "shape": list(X.shape), "classes": int(np.unique(y).size)}


def measure():
    results = {}
    for data in DATA:
        for model in MODELS:
            if not applies(data, model):
                continue
            print(f"  {data}: {model}", flush=True)
            done = subprocess.run([sys.executable, __file__, "--case", data, model],
                                  capture_output=True, text=True, env=dict(os.environ))
            if done.returncode != 0:
                raise SystemExit(f"{data} {model} failed:\n{done.stderr[-2000:]}")
            results[f"{data} | {model}"] = json.loads(done.stdout.strip().splitlines()[-1])
    return {"cases": results}


def main():
    results, before = _report.beside_before(__doc__.split("\n")[0], measure)
    header = ["data", "X", "model", "extra peak (MiB)", "/ X's size", "fit (s)"]
    if before:
        header += [f"extra peak at {before['commit']} (MiB)", "/ X's size"]
    rows = []
    for key, case in results["cases"].items():
        data, model = key.split(" | ")
        n, d = case["shape"]
        row = [data, f"{n} x {d}, {case['classes']} classes, {case['x_mib']:.0f} MiB", model,
               f"{case['extra_mib']:.0f}", f"{case['extra_mib'] / case['x_mib']:.2f}",
               f"{case['seconds']:.1f}"]
        if before:
            old = before["cases"].get(key)
            row += (["—", "—"] if old is None else
                    [f"{old['extra_mib']:.0f}", f"{old['extra_mib'] / old['x_mib']:.2f}"])
        rows.append(row)
    body = (__doc__.split("\n\n", 1)[1].split("Writes section")[0].strip() + "\n\n"
            + _report.markdown_table(header, rows))
    _report.write_section("fit_memory", "The memory a fit takes beyond its data", body,
                          packages=("numpy", "scipy", "scikit-learn", "liblinear-official"))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--case":
        print(json.dumps(measure_case(sys.argv[2], sys.argv[3])))
    else:
        main()
