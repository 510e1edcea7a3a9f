"""Small data files of the kinds ``sparsekit-compare`` reads, written for its tests, the
peers its l1 tables find installed, and a spy on what its progress display shows."""
import contextlib
import importlib

import numpy as np


def write_svm(path, n=60, classes=2, seed=0):
    """A small LIBSVM file with ``classes`` separable-ish classes."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    lines = []
    for label in y:
        features = {j: rng.normal() + (label == j % classes) for j in rng.choice(8, 4, False)}
        tokens = " ".join(f"{j + 1}:{v:.4f}" for j, v in sorted(features.items()))
        lines.append(f"{label if classes > 2 else 2 * label - 1} {tokens}")
    path.write_text("\n".join(lines) + "\n")
    return path



#: a Mulan ARFF file's header: two features, then the labels of :func:`write_mulan_toy`
MULAN_TOY_HEADER = ("@relation toy\n@attribute f1 numeric\n@attribute f2 numeric\n"
                    "@attribute sad {0,1}\n@attribute calm {0,1}\n@data\n")



def write_mulan_toy(folder):
    """``toy.xml`` (the labels sad and calm) and ``toy-train.arff`` (6 dense rows)."""
    (folder / "toy.xml").write_text(
        '<labels xmlns="http://mulan.sourceforge.net/labels">'
        '<label name="sad"></label><label name="calm"></label></labels>')
    dense = ["0.5,1,1,0", "1.5,0,0,1", "2.5,1,1,1", "0,2,0,0", "1,1,1,0", "2,0,0,1"]
    (folder / "toy-train.arff").write_text(MULAN_TOY_HEADER + "\n".join(dense) + "\n")



def write_multilabel_svm(path, n=120, labels=5, seed=0, empty_rows=3):
    """A LIBSVM multi-label file (comma-separated label sets, as the LIBSVM page's): label
    j is active where feature j exceeds 0.3; the first ``empty_rows`` rows have none."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, labels + 3))
    lines = []
    for i, x in enumerate(X):
        active = [] if i < empty_rows else [j for j in range(labels) if x[j] > 0.3]
        features = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x))
        lines.append(",".join(str(10 + j) for j in active) + " " + features)
    path.write_text("\n".join(lines) + "\n")
    return path



def write_rows(path, X, y):
    """A LIBSVM file of dense ``X`` (its nonzeros) and labels ``y``."""
    path.write_text("".join(
        f"{label} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x) if v) + "\n"
        for x, label in zip(X, y)))
    return path


def installed_l1_peers():
    """The l1 tables' peers that import, in their rows' order."""
    peers = []
    for module, name in (("liblinear", "LIBLINEAR -s 6"), ("skglm", "skglm"),
                         ("celer", "celer")):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
            peers.append(name)
    return peers


def tiny_binary(n=80, seed=0):
    """A small dense binary problem, labels in {-1, +1}."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def shown_at(monkeypatch, module, names, shown):
    """Replace ``module``'s functions ``names`` by ones that record, at each call, the
    progress display's last line (``shown``: the list the tables' ``announce`` appends
    to); returns ``{name: [that line at each call]}``."""
    seen = {name: [] for name in names}
    for name in names:
        def spy(*args, real=getattr(module, name), name=name, **kwargs):
            seen[name].append(shown[-1] if shown else None)
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, spy)
    return seen
