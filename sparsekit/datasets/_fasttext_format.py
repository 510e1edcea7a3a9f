"""fastText's text files for supervised learning: one example per line, its labels the
tokens that start with ``__label__``, its text the other tokens."""
import numpy as np

from ._home import _read_bytes, decode_text

#: the prefix that marks a label, fastText's default ``-label``
LABEL_PREFIX = "__label__"


def load_fasttext(path, multilabel=False, label_prefix=LABEL_PREFIX):
    """Load a fastText training file as its texts and labels.

    Parameters
    ----------
    path : str or path-like
        A text file in fastText's format, plain or compressed (``.xz``, ``.gz``, ``.bz2``):
        one example per line, its labels the tokens that start with ``label_prefix`` (first
        on the line, as fastText's tutorials write them, or anywhere), its text the other
        tokens. Lines without a token are skipped; UTF-8 text (UTF-16 or 32 after a
        byte-order mark).
    multilabel : bool, default=False
        Read label sets: a tuple of labels per line (an empty one for a line without a
        label). Without it every line needs exactly one label.
    label_prefix : str, default="__label__"
        The prefix of a label token, fastText's ``-label`` option.

    Returns
    -------
    texts : list of str
        The text of each line, its tokens joined by single spaces: what scikit-learn's
        :class:`~sklearn.feature_extraction.text.TfidfVectorizer` takes.
    y : ndarray of shape (n_lines,) of str, or list of tuples
        The label of each line, its prefix removed; with ``multilabel=True``, a tuple of
        labels per line in the order written (scikit-learn's convention:
        :class:`~sklearn.preprocessing.MultiLabelBinarizer` turns them into an indicator
        matrix).

    Raises
    ------
    ValueError
        For a file that cannot be read as text, and, without ``multilabel``, for a line
        with no label or several, named by its number (from 1).

    See Also
    --------
    sparsekit.ExtremeSoftmaxSGD : a softmax trained by SGD, as fastText's classifier.

    References
    ----------
    .. [1] Joulin, A., Grave, E., Bojanowski, P. & Mikolov, T. (2017). Bag of tricks for
       efficient text classification. EACL (the fastText classifier and its input
       format).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sparsekit.datasets import load_fasttext
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cooking.train"
    >>> _ = path.write_text("__label__baking Why do cakes sink?\\n"
    ...                     "__label__eggs __label__storage How long do eggs keep?\\n")
    >>> texts, y = load_fasttext(path, multilabel=True)
    >>> texts
    ['Why do cakes sink?', 'How long do eggs keep?']
    >>> y
    [('baking',), ('eggs', 'storage')]
    """
    if not isinstance(label_prefix, str) or not label_prefix or len(label_prefix.split()) != 1:
        raise ValueError(f"label_prefix must be a non-empty string without spaces, got "
                         f"{label_prefix!r}")
    numbers, texts, label_sets, _ = read_fasttext_lines(path, label_prefix)
    if multilabel:
        return texts, [tuple(labels) for labels in label_sets]
    for number, labels in zip(numbers, label_sets):
        if len(labels) != 1:
            found = "no label" if not labels else f"{len(labels)} labels"
            raise ValueError(f"{path}, line {number}: {found} ({label_prefix}...); "
                             + ("pass multilabel=True to read label sets" if labels else
                                "every line needs one, or pass multilabel=True, where a "
                                "line without a label is an empty set"))
    return texts, np.array([labels[0] for labels in label_sets], dtype=object).astype(str)


def read_fasttext_lines(path, label_prefix=LABEL_PREFIX):
    """(the number of each line that holds a token, from 1; its text; its labels, a list;
    the codec the file was decoded with) of the fastText file ``path``; a file that cannot
    be read is a ValueError naming it (a missing one a FileNotFoundError)."""
    content, encoding = decode_text(_read_bytes(path), path)
    numbers, texts, label_sets = [], [], []
    for number, line in enumerate(content.splitlines(), start=1):
        tokens = line.split()
        if tokens:
            numbers.append(number)
            texts.append(" ".join(t for t in tokens if not t.startswith(label_prefix)))
            label_sets.append([t[len(label_prefix):] for t in tokens
                               if t.startswith(label_prefix)])
    return numbers, texts, label_sets, encoding
