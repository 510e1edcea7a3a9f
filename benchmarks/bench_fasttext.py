"""ExtremeSoftmaxSGD against fastText on the same data, one thread each.

For Bibtex and Delicious (XMLRepository; first label, unit rows, as in the paper's
protocol), the Debian package descriptions (first tag; ExtremeSoftmaxSGD on TF-IDF 1-2
grams, fastText on the words with ``wordNgrams=2``, the same tokens), "pydoc" (below) and
the synthetic teacher with K = 1e4, it fits:

- ExtremeSoftmaxSGD at its defaults (sampled softmax, m = 5, ``learning_rate="auto"``),
  Implicit SGD with m = 5 (its "auto" rate), the defaults before 2026-11-24 (Implicit SGD,
  m = 1, learning rate 1), and sampled softmax with m = 20;
- fastText's supervised classifier at its defaults (softmax, lr 0.1, 5 epochs), with its
  tutorial's recipe for small data (lr 1, 25 epochs), and with hierarchical softmax
  (lr 0.5, 5 epochs), each on one thread with explicit U(-1/dim, 1/dim) word vectors;
  and hierarchical softmax once more *as shipped*, without them: fastText 0.9.x fills one
  tenth of its input matrix per training thread (fastText issue #1061), so on one thread
  90% of the word vectors are whatever the allocator returned (zeros on fresh pages).

"pydoc" is a corpus with thousands of classes built from this machine's Python: every
documented function, method and class of the standard library (/usr/lib/python3.11) and of
the benchmark environment's site-packages, its docstring and its name's words as the
document, its module as the class, keeping the modules with at least 5 documented
definitions (how many follows the packages installed: about 2,500 classes in 48,000
documents in the benchmark environment of 2026-11-24); split 80/20 at random, test rows
of classes seen in training. Features as for Debian, limited to the 2^17 most frequent 1-2
grams (min_df 2), float32.

It reports fit time (the second of two fits, wall clock, the input files written untimed:
the first pays the page faults of fresh weight arrays), test accuracy
(first label), precision@1 and @5 against the test rows' label sets, and the training NLL
on a fixed 2000-row subsample. Writes section "extreme_softmax_fasttext" of
doc/benchmarks.md and doc/fasttext_accuracy_time.png::

    python benchmarks/bench_fasttext.py [--sets bibtex delicious debian pydoc teacher]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_extreme_softmax import (_eval_rows, _labels_to_index, debian_documents,  # noqa: E402
                                   load_debian_split, load_set)
from sparsekit.benchmarks._fasttext import (FASTTEXT_DIM, feature_words,  # noqa: E402
                                            initial_vectors, tokens)
from sparsekit.datasets import make_extreme_softmax_teacher  # noqa: E402
from sparsekit.linear_model import ExtremeSoftmaxSGD, precision_at_k  # noqa: E402

SETS = ["bibtex", "delicious", "debian", "pydoc", "teacher"]
OURS = {
    "ExtremeSoftmaxSGD defaults (sampled_softmax, m=5, learning_rate auto)": {},
    "ExtremeSoftmaxSGD implicit (m=5, auto)": {"method": "implicit"},
    "ExtremeSoftmaxSGD before 2026-11-24 (implicit, m=1, lr 1)": {
        "method": "implicit", "n_sampled": 1, "learning_rate": 1.0},
    "ExtremeSoftmaxSGD sampled_softmax (m=20, auto)": {"method": "sampled_softmax",
                                                       "n_sampled": 20},
}
FASTTEXT = {
    "fastText defaults (softmax, lr 0.1, 5 epochs)": ({}, True),
    "fastText small-data recipe (softmax, lr 1, 25 epochs)": ({"lr": 1.0, "epoch": 25}, True),
    "fastText hs (lr 0.5, 5 epochs)": ({"loss": "hs", "lr": 0.5}, True),
    "fastText hs (lr 0.5, 5 epochs), as shipped: no explicit init": (
        {"loss": "hs", "lr": 0.5}, False),
}
SOFTMAX_MAX_K = 5000   # fastText's full softmax beyond this: hours of one thread
WORD = re.compile(r"(?u)\b\w\w+\b")   # scikit-learn's token pattern, lowercased text


PYDOC_ROOTS = ("/usr/lib/python3.11", sys.prefix + "/lib/python3.11/site-packages")
PYDOC_MIN_DEFINITIONS = 5


def pydoc_corpus():
    """(documents, modules): every documented definition under PYDOC_ROOTS (cached)."""
    import ast
    import collections
    import json
    import os

    cache = _report.RESULTS / "pydoc_corpus.json"
    if cache.exists():
        return tuple(json.loads(cache.read_text()))
    docs, labels = [], []
    for root in PYDOC_ROOTS:
        for dirpath, dirnames, files in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "site-packages"
                                 and not d.startswith("__pycache__"))
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(dirpath, name)
                module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                try:
                    tree = ast.parse(open(path, encoding="utf-8", errors="ignore").read())
                except (SyntaxError, ValueError):
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                         ast.ClassDef)):
                        doc = ast.get_docstring(node)
                        if doc and len(doc) > 20:
                            words = re.sub(r"([a-z])([A-Z])", r"\1 \2", node.name)
                            docs.append(f"{words.replace('_', ' ')} {doc[:1000]}")
                            labels.append(module)
    counts = collections.Counter(labels)
    keep = [i for i, m in enumerate(labels) if counts[m] >= PYDOC_MIN_DEFINITIONS]
    corpus = ([docs[i] for i in keep], [labels[i] for i in keep])
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(corpus))
    return corpus


def load(name):
    """(X_train, y_train, X_test, y_test, label sets of the test rows, text or None)."""
    text = None
    if name == "pydoc":
        from sklearn.feature_extraction.text import TfidfVectorizer
        docs, modules = pydoc_corpus()
        modules = np.array(modules, dtype=object)
        perm = np.random.RandomState(0).permutation(len(docs))
        tr, te = perm[: int(0.8 * len(docs))], perm[int(0.8 * len(docs)):]
        classes = np.unique(modules[tr])
        te = te[np.isin(modules[te], classes)]
        vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=2**17,
                              sublinear_tf=True, dtype=np.float32)
        Xtr = vec.fit_transform([docs[i] for i in tr])
        Xte = vec.transform([docs[i] for i in te])
        ytr_raw, yte_raw = modules[tr], modules[te]
        sets = [[int(c)] for c in _labels_to_index(yte_raw, classes)]
        words = lambda i: " ".join(WORD.findall(docs[i].lower()))  # noqa: E731
        text = ([words(i) for i in tr], [words(i) for i in te])
    elif name in ("bibtex", "delicious"):
        Xtr, ytr_raw, _ = load_set(name, "train")
        Xte, yte_raw, Yte = load_set(name, "test")
        classes = np.unique(ytr_raw)
        ok = np.isin(yte_raw, classes)
        Xte, yte_raw, Yte = Xte[ok], yte_raw[ok], sp.csr_matrix(Yte[ok])
        index = {int(c): i for i, c in enumerate(classes)}
        sets = [[index[j] for j in Yte.indices[Yte.indptr[i]:Yte.indptr[i + 1]] if j in index]
                for i in range(Yte.shape[0])]
    elif name == "debian":
        Xtr, ytr_raw, Xte, yte_raw, tags_te, _ = load_debian_split()
        classes = np.unique(ytr_raw)
        index = {c: i for i, c in enumerate(classes)}
        sets = [[index[t] for t in tags if t in index] for tags in tags_te]
        d, idx, tr, te = debian_documents()
        first = np.array([d.tags[idx[i]][0] for i in te], dtype=object)
        words = lambda i: " ".join(WORD.findall(d.text[idx[i]].lower()))  # noqa: E731
        text = ([words(i) for i in tr], [words(i) for i, f in zip(te, first)
                                          if f in index])
    else:
        X, y = make_extreme_softmax_teacher(55_000, 12_000, 10_000, 20,
                                            power_law_exponent=0.5, random_state=1)
        Xtr, ytr_raw, Xte, yte_raw = X[:50_000], y[:50_000], X[50_000:], y[50_000:]
        classes = np.unique(ytr_raw)
        ok = np.isin(yte_raw, classes)
        Xte, yte_raw = Xte[ok], yte_raw[ok]
        sets = [[int(c)] for c in _labels_to_index(yte_raw, classes)]
    ytr, yte = _labels_to_index(ytr_raw, classes), _labels_to_index(yte_raw, classes)
    return sp.csr_matrix(Xtr), ytr, sp.csr_matrix(Xte), yte, sets, text


def scores(top, y_test, sets, nll):
    return {"accuracy": float(np.mean(top[:, 0] == y_test)),
            "p1": precision_at_k(sets, top[:, :1]), "p5": precision_at_k(sets, top[:, :5]),
            "nll": nll}


def run_ours(params, Xtr, ytr, Xte, yte, sets, ev):
    ExtremeSoftmaxSGD(random_state=0, **params).fit(Xtr, ytr)     # warm-up: the pages
    est = ExtremeSoftmaxSGD(random_state=0, **params)
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    seconds = time.perf_counter() - t0
    logp = est.predict_log_proba(Xtr[ev])
    nll = float(-np.mean(logp[np.arange(ev.size), np.searchsorted(est.classes_, ytr[ev])]))
    top = est.classes_[est.predict_topk(Xte, k=5)]
    return seconds, scores(top, yte, sets, nll)


def run_fasttext(params, explicit_init, train_lines, ytr, test_lines, yte, sets, ev, words,
                 bigrams):
    import fasttext

    # a word that starts with fastText's label prefix would be read as a label
    train_lines = [line.replace("__label__", "label") for line in train_lines]
    test_lines = [line.replace("__label__", "label") for line in test_lines]
    words = [w.replace("__label__", "label") for w in words]
    with tempfile.TemporaryDirectory() as workdir:
        path, init = Path(workdir) / "train.txt", Path(workdir) / "init.vec"
        path.write_text("".join(f"__label__{c} {line}\n" for c, line in zip(ytr, train_lines)))
        options = dict(input=str(path), thread=1, seed=0, verbose=0, dim=FASTTEXT_DIM,
                       wordNgrams=2 if bigrams else 1, **params)
        if explicit_init:
            initial_vectors(init, words)
            options["pretrainedVectors"] = str(init)
        try:
            fasttext.train_supervised(**options)            # warm-up, as for ours
            t0 = time.perf_counter()
            model = fasttext.train_supervised(**options)
        except RuntimeError as exc:             # "Encountered NaN."
            return float("nan"), {"error": str(exc)}
        seconds = time.perf_counter() - t0

    def ranked(lines, k):
        labels, proba = model.predict(lines, k=k, threshold=0.0)
        return ([[int(label[len("__label__"):]) for label in row] for row in labels], proba)

    labels, proba = ranked([train_lines[i] for i in ev], -1)
    p_true = [p[row.index(c)] if c in row else 0.0
              for row, p, c in zip(labels, proba, ytr[ev])]
    nll = float(-np.mean(np.log(np.maximum(p_true, 1e-300))))
    top, _ = ranked(test_lines, 5)
    top = np.array([row + [-1] * (5 - len(row)) for row in top])
    return seconds, scores(top, yte, sets, nll)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    args = parser.parse_args()
    results = {}
    for name in args.sets:
        Xtr, ytr, Xte, yte, sets, text = load(name)
        ev = _eval_rows(Xtr.shape[0])
        if text is None:        # one token per nonzero feature (values dropped)
            train_lines, test_lines, words = tokens(Xtr), tokens(Xte), feature_words(Xtr)
        else:                   # the words themselves; fastText adds the bigrams
            train_lines, test_lines = text
            words = sorted({w for line in train_lines for w in line.split()})
        facts = {"N": Xtr.shape[0], "D": Xtr.shape[1], "K": int(ytr.max()) + 1,
                 "n_test": Xte.shape[0]}
        rows = {}
        for label, params in OURS.items():
            rows[label] = run_ours(params, Xtr, ytr, Xte, yte, sets, ev)
            print(f"{name}: {label}: {rows[label]}", flush=True)
        for label, (params, explicit) in FASTTEXT.items():
            if facts["K"] > SOFTMAX_MAX_K and params.get("loss", "softmax") == "softmax":
                rows[label] = (float("nan"), {"error": f"not run: a full softmax costs "
                                              f"O(K dim) per example at K = {facts['K']}"})
                continue
            rows[label] = run_fasttext(params, explicit, train_lines, ytr, test_lines, yte,
                                       sets, ev, words, bigrams=text is not None)
            print(f"{name}: {label}: {rows[label]}", flush=True)
        results[name] = (facts, rows)
    report(results)


CACHE = _report.RESULTS / "fasttext.json"
FIGURE = _report.DOC.parent / "fasttext_accuracy_time.png"


def report(results):
    """Merge ``results`` into the cached ones of other sets; write the section and figure."""
    import json

    CACHE.parent.mkdir(parents=True, exist_ok=True)
    cached = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    cached.update({name: {"facts": facts, "rows": rows} for name, (facts, rows) in
                   results.items()})
    CACHE.write_text(json.dumps(cached, indent=1))
    intro, systems, pydoc, measures = __doc__.split("\n\n")[1:5]
    items = ("\n" + systems).split("\n- ")[1:]
    body = ["\n\n".join([" ".join(intro.split()),
                          "\n".join("- " + " ".join(item.split()) for item in items),
                          " ".join(pydoc.split()),
                          " ".join(measures.split(" Writes")[0].split())]) + "\n\n"
            "Every system on one thread, deterministic at a fixed seed; \"/ ours\" is the "
            "fit time over ExtremeSoftmaxSGD's at its defaults. "
            "The teacher: N = 50,000 training and 5,000 test rows, D = 12,000, K = 1e4 "
            "(Zipf exponent 0.5), 20 nonzeros a row."]
    base = next(iter(OURS))
    for name in [n for n in SETS if n in cached]:
        facts, rows = cached[name]["facts"], cached[name]["rows"]
        body.append(f"\n**{name}**: N = {facts['N']}, D = {facts['D']}, K = {facts['K']}, "
                    f"{facts['n_test']} test rows\n")
        table = []
        for label, (seconds, m) in rows.items():
            if "error" in m:
                table.append([label, "" if seconds != seconds else f"{seconds:.2f}", "",
                              m["error"], "", "", ""])
                continue
            table.append([label, f"{seconds:.2f}", f"{seconds / rows[base][0]:.2f}x",
                          f"{m['accuracy']:.4f}", f"{m['p1']:.4f}", f"{m['p5']:.4f}",
                          f"{m['nll']:.3f}"])
        body.append(_report.markdown_table(
            ["system", "fit s", "/ ours", "test accuracy", "P@1", "P@5", "training NLL"],
            table))
    plot(cached)
    body.append(f"\n![accuracy against fit time]({FIGURE.name})")
    _report.write_section("extreme_softmax_fasttext", "ExtremeSoftmaxSGD vs fastText",
                          "\n".join(body), packages=("numpy", "scipy", "scikit-learn",
                                                      "fasttext-numpy2-wheel"))


def plot(cached):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in SETS if n in cached]
    labels = list(OURS) + list(FASTTEXT)          # one colour and marker per system
    style = {label: (f"C{k}", "o" if label.startswith("Extreme") else "s")
             for k, label in enumerate(labels)}
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        for label, (seconds, m) in cached[name]["rows"].items():
            if "error" not in m and label in style:
                ax.plot(seconds, m["accuracy"], style[label][1], color=style[label][0])
        ax.set(xscale="log", xlabel="fit time (s, one thread)", title=name)
    axes[0][0].set_ylabel("test accuracy")
    handles = [plt.Line2D([], [], color=c, marker=mk, linestyle="") for c, mk in
               (style[label] for label in labels)]
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize="small")
    fig.tight_layout(rect=(0, 0.22, 1, 1))
    fig.savefig(FIGURE, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
