"""fastText as a peer of ``sparsekit-compare``: the rows of a sparse matrix as lines of
tokens, its own initialization written out (fastText 0.9.x leaves most of it undone on one
thread), and its training timed at the recipe for small data sets."""
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

from sparsekit.benchmarks._interrupt import interruptible
from sparsekit.benchmarks._timing import import_peer, measure, preparing


#: fastText joins the probability table from this many classes on: a text classifier for
#: many labels, it sees the features as tokens and is out of its ground on a few dense ones
FASTTEXT_MIN_CLASSES = 20


def fasttext_joins(data):
    """Whether fastText has a row in the tables of :class:`Dataset` ``data``: from
    :data:`FASTTEXT_MIN_CLASSES` classes (labels) on, and on free text whatever their
    number (a fastText file, a table of text and labels: its own ground)."""
    return data.words or data.classes.size >= FASTTEXT_MIN_CLASSES


def tokens(X):
    """One line of tokens per row of CSR ``X`` for fastText: feature j is the token
    ``f<j>``, repeated by its value when every value is a whole count (bag of words), once
    otherwise (values dropped)."""
    counts = X.data.size > 0 and np.all(X.data == np.round(X.data)) and X.data.min() >= 1
    lines = []
    for i in range(X.shape[0]):
        row = slice(X.indptr[i], X.indptr[i + 1])
        repeats = X.data[row].astype(np.int64) if counts else np.ones(row.stop - row.start,
                                                                      np.int64)
        lines.append(" ".join(" ".join([f"f{j}"] * r) for j, r in zip(X.indices[row],
                                                                       repeats)))
    return lines


#: fastText's recipe for small data sets (its text-classification tutorial): 25 epochs at
#: learning rate 1, halved while training diverges ("Encountered NaN", as its maintainers
#: advise); one thread and a fixed seed make each fit deterministic
FASTTEXT_EPOCHS = 25
FASTTEXT_RATES = (1.0, 0.5, 0.25, 0.1)
FASTTEXT_DIM = 100


def initial_vectors(path, words):
    """Write fastText's own initialization, U(-1/dim, 1/dim) vectors of ``words`` and of its
    end-of-line token, as a
    ``pretrainedVectors`` file. With fewer than 10 threads fastText 0.9.x leaves most of its
    input matrix uninitialized (its DenseMatrix::uniform fills one tenth of the rows per
    thread; fastText issue #1061): on one thread 90% of the word vectors are whatever the
    allocator returned, and fits diverge ("Encountered NaN") or do not learn, depending on
    what ran before in the process."""
    words = ["</s>", *words]
    vectors = np.random.default_rng(0).uniform(-1.0 / FASTTEXT_DIM, 1.0 / FASTTEXT_DIM,
                                               (len(words), FASTTEXT_DIM))
    with open(path, "w") as out:
        out.write(f"{len(words)} {FASTTEXT_DIM}\n")
        for word, vector in zip(words, vectors):
            out.write(word + " " + " ".join(f"{v:.6g}" for v in vector) + "\n")


def feature_words(X):
    """The tokens of :func:`tokens` that occur in CSR ``X``."""
    return [f"f{j}" for j in np.unique(X.indices)]


def fasttext_row(name, label_lines, X_train, describe, repeat, budget=np.inf,
                  announce=None, metrics=2, **options):
    """The table row of fastText trained on the rows of CSR ``X_train`` as tokens, each
    row's line starting with ``label_lines[i]`` (its ``__label__`` words); ``options`` go
    to ``fasttext.train_supervised``."""
    fasttext = import_peer("fasttext")
    if not isinstance(fasttext, ModuleType):
        return measure(name, fasttext, repeat, None, metrics=metrics)
    preparing(announce, name, "writing its training file")
    with tempfile.TemporaryDirectory() as workdir:    # its input files, written untimed
        path, init = Path(workdir) / "train.txt", Path(workdir) / "init.vec"
        path.write_text("".join(f"{labels} {line}\n" for labels, line in
                                zip(label_lines, tokens(X_train))))
        initial_vectors(init, feature_words(X_train))

        rate = []   # the first rate that trains, found by the warm-up fit (always untimed)

        def fit():
            for lr in rate or FASTTEXT_RATES:
                try:
                    model = interruptible(
                        fasttext.train_supervised, input=str(path), epoch=FASTTEXT_EPOCHS,
                        lr=lr, dim=FASTTEXT_DIM, pretrainedVectors=str(init), thread=1,
                        seed=0, verbose=0, **options)
                except RuntimeError:      # diverged ("Encountered NaN"): a smaller rate
                    if rate or lr == FASTTEXT_RATES[-1]:
                        raise
                    continue
                rate[:] = [lr]
                return model
        row = measure(name, fit, repeat, describe, budget, announce, metrics, warm_up=True)
        row[0] = f"{name[:-1]}, lr {rate[0]:g})" if rate else name
        return row


def label_index(word):
    """The column index ``j`` of fastText's label word ``__label__<j>``."""
    return int(word[len("__label__"):])
