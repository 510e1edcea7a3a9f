"""The data sets of ``sparsekit-compare``: its files (LIBSVM, the Extreme Classification
Repository's, Mulan's ARFF beside a label XML, CSV/TSV/ARFF/Parquet/JSON tables through
``_csv``), the shipped a9a and scikit-learn's sets, a test file's rows held out
(``--test``), and the checks that the tables can be measured on them, with messages for
the user."""
import codecs
import re
import warnings
from collections import namedtuple
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.preprocessing import MultiLabelBinarizer, StandardScaler
from sklearn.utils.multiclass import type_of_target

from sparsekit.benchmarks._csv import read_csv, reads_as_table, warn_if_same_file
from sparsekit.datasets import load_a9a, load_libsvm
from sparsekit.datasets._home import CORRUPT, _open_binary, _read_text
from sparsekit.datasets._xmlrepo import _parse_xmlrepo
from sparsekit.utils._columns import UsedColumns

#: the held-out share of the rows (70/30 splits)
TEST_SHARE = 0.3


#: the rows of a test file, held out for the probability (label-set) table: its ``name``,
#: ``X`` (the training rows' columns) and labels ``y``
HeldOut = namedtuple("HeldOut", "name X y")


class Dataset:
    """A data set to compare on: ``X`` (dense or CSR), labels ``y``, ``X_l1`` (the matrix
    of the l1 table: scikit-learn's dense sets standardized) and its sorted ``classes``;
    for a multi-label set (``multilabel``), ``y`` is a 0/1 CSR indicator matrix whose
    columns are the labels ``classes``; ``n_features`` is the column count of the source
    when ``X`` holds only its used columns; ``note`` says how ``X`` was made from the
    source; ``encode(train, test)``, for a table file, gives ``(X_train, X_test)`` with
    its encoders fit on the rows ``train`` (``X`` has them fit on every row); ``test``,
    a test file's :data:`HeldOut` rows (:meth:`hold_out`), or None (a 70/30 split);
    ``label_names``, the text of each label code when a table file's labels were text;
    ``words``, whether every column of ``X`` is a word's weight (a table of free text only, a
    fastText file)."""

    def __init__(self, name, X, y, X_l1=None, classes=None, n_features=None, note=None,
                 encode=None, label_names=None, words=False):
        self.name, self.X, self.note, self.encode = name, X, note, encode
        self.words = words
        self.label_names = label_names
        self.n_features = X.shape[1] if n_features is None else n_features
        self.multilabel = sp.issparse(y) or np.ndim(y) == 2
        # int64: scikit-learn's LabelBinarizer (inside OneVsRestClassifier) misplaces the
        # columns of an int8 indicator from 129 labels on
        self.y = sp.csr_matrix(y, dtype=np.int64) if self.multilabel else np.asarray(y)
        self.X_l1 = X if X_l1 is None else X_l1
        self.classes = (np.asarray(classes) if classes is not None
                        else np.arange(self.y.shape[1]) if self.multilabel
                        else np.unique(self.y))
        self.test = None

    def hold_out(self, n_train, name):
        """Train on the first ``n_train`` rows only and hold out the others as ``test``, a
        :data:`HeldOut` named ``name`` (a test file's rows): with ``encode``, both are
        encoded by encoders fit on the training rows, which then make ``X_l1`` too. The
        classes become the training rows' (a multi-label set keeps every label)."""
        rows = np.arange(self.y.shape[0])
        if self.encode is not None:
            X, X_test = self.encode(rows[:n_train], rows[n_train:])
            X_l1 = X
        else:
            X, X_test, X_l1 = self.X[:n_train], self.X[n_train:], self.X_l1[:n_train]
        self.test = HeldOut(name, X_test, self.y[n_train:])
        self.X, self.X_l1, self.y = X, X_l1, self.y[:n_train]
        if not self.multilabel:
            self.classes = np.unique(self.y)

    @property
    def described(self):
        """The name and shape for a table's title, with the source's column count when the
        empty columns were left out, and the note."""
        n, p = self.X.shape
        text = f"{self.name} {self.X.shape}"
        if p != self.n_features:
            text = f"{self.name} ({n}, {p}) (the {p} used columns of {self.n_features})"
        return text if self.note is None else f"{text} ({self.note})"


#: the file ending of Apple Numbers documents (a package pandas does not read), refused
#: with a hint
NUMBERS = ".numbers"


def _read_rows(spec, zero_based):
    """``(X, label_sets)`` of a LIBSVM file, or of an Extreme Classification Repository
    file (told by its first line, ``N D L``): a CSR X and a tuple of labels per row
    (comma-separated label sets, as the LIBSVM page's multi-label sets, or one label)."""
    if Path(spec).suffix.lower() == NUMBERS:
        raise ValueError(f"{spec!r} is an Apple Numbers document: export its table as CSV "
                         "or Excel (File, Export To) and pass that file")
    xmlrepo = _is_xmlrepo(spec)
    try:
        if _starts_binary(spec):
            raise ValueError("its first bytes hold a NUL: a binary file, or text in UTF-16 "
                             "(save it as UTF-8)")
        if xmlrepo:
            X, Y = _parse_xmlrepo(_read_text(spec), spec)
            label_sets = np.split(Y.indices, Y.indptr[1:-1])
        else:
            X, label_sets = load_libsvm(spec, zero_based=zero_based, multilabel=True)
    except (OSError, ValueError) as exc:
        message = str(exc).replace("pass zero_based=True", "use --zero-based")
        if len(message) > 300:           # a binary file's first "number" is quoted whole
            message = message[:300] + " ..."
        kind = ("an Extreme Classification Repository file" if xmlrepo else
                "a LIBSVM file (or a .csv/.tsv/.arff/.parquet/.json(l)/.xlsx file by its "
                "name)")
        raise ValueError(f"cannot read {spec!r} as {kind}: {message}") from None
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:                       # every row of the tables would fail on it
        row = np.searchsorted(X.indptr, bad[0], side="right")
        raise ValueError(f"{spec!r}: data row {row} (from 1) holds a NaN or infinite value")
    sizes = np.array([len(labels) for labels in label_sets])
    flat = np.fromiter(chain.from_iterable(label_sets), dtype=np.float64, count=int(sizes.sum()))
    if not np.isfinite(flat).all():    # "nan" or "1e999" reads as a number
        first = int(np.argmax(~np.isfinite(flat)))
        row = int(np.searchsorted(np.cumsum(sizes), first, side="right"))
        raise ValueError(f"{spec!r}: data row {row + 1} (from 1) has the label {flat[first]}, "
                         "not a class label")
    if sizes.max(initial=0) == 1 and not sizes.all():   # a file of classes missing labels?
        missing = np.flatnonzero(sizes == 0) + 1
        warnings.warn(f"{spec!r}: {missing.size} data row(s) hold no label "
                      f"({_listed(missing)}, from 1), every other row one: read as label "
                      "sets, empty on those rows; a file of classes needs a label on every "
                      "row", UserWarning, stacklevel=4)
    return sp.csr_matrix(X), list(label_sets)


def _read_file(spec, zero_based, test=None):
    """``(dataset, n_train)``: the :class:`Dataset` of a LIBSVM or Extreme Classification
    Repository file (:func:`_read_rows`), followed by the rows of the file ``test`` when
    given (their columns numbered as the first file's), and the first file's row count.
    Class labels when every row has one label, label sets otherwise; X holds the columns
    that store an entry when many store none (:class:`UsedColumns`)."""
    if spec == "a9a":                               # shipped; its label per row
        X, y = load_a9a()
        label_sets = [(label,) for label in y]
    else:
        X, label_sets = _read_rows(spec, zero_based)
    n_train = X.shape[0]
    if test is not None:
        X_test, test_sets = _read_rows(test, zero_based)
        X = sp.vstack([X, _resized(X_test, X.shape[1])], format="csr")
        label_sets += test_sets
    X, n_features = _used_columns(X, n_train)
    if all(len(labels) == 1 for labels in label_sets):
        return Dataset(Path(spec).name, X, [labels[0] for labels in label_sets],
                       n_features=n_features), n_train
    binarizer = MultiLabelBinarizer(sparse_output=True)
    Y = binarizer.fit_transform([tuple(labels) for labels in label_sets])
    return Dataset(Path(spec).name, X, Y, classes=binarizer.classes_,
                   n_features=n_features), n_train


def _resized(X, n_columns):
    """CSR ``X`` on ``n_columns`` columns: a test file's rows on the training file's
    columns (those past them dropped: no model has a weight there; those short of them
    empty)."""
    if X.shape[1] > n_columns:
        X = X[:, :n_columns]
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_columns))


def _used_columns(X, n_train=None):
    """``(X on its used columns, X's column count)``: a file's columns that store no entry
    in its first ``n_train`` rows (the training rows; all by default) are left out
    (:class:`UsedColumns`; dense X as it is)."""
    n_features = X.shape[1]
    columns = UsedColumns(X if n_train is None or not sp.issparse(X) else X[:n_train])
    return columns.take(X), n_features


def _starts_binary(spec):
    """Whether the file ``spec`` (not a set's name) holds a NUL in its first 64 kB."""
    if not Path(spec).is_file():
        return False
    try:
        with _open_binary(spec) as f:
            return b"\0" in f.read(1 << 16)
    except CORRUPT:                     # a damaged compressed file: the reader says why
        return False


def _is_xmlrepo(spec):
    """Whether the file's first line is three whole numbers (an Extreme Classification
    Repository file's ``N D L``: a LIBSVM row holds ``index:value`` pairs)."""
    try:
        with _open_binary(spec) as f:
            first = f.readline(4096).removeprefix(codecs.BOM_UTF8)
    except CORRUPT:                     # a missing or damaged file: the reader says why
        return False
    return re.fullmatch(rb"\s*\d+\s+\d+\s+\d+\s*", first) is not None


def mulan_labels_name(name):
    """The name of a Mulan multi-label ARFF file's label XML, ``<set>.xml`` for
    ``<set>.arff``, ``<set>-train.arff`` or ``<set>-test.arff`` (also compressed), or None
    for another file name."""
    match = re.fullmatch(r"(.+?)(-train|-test)?\.arff(\.(xz|gz|bz2))?", name, re.I)
    return None if match is None else match.group(1) + ".xml"


def _mulan_labels_file(spec):
    """The label XML beside a Mulan multi-label ARFF file (:func:`mulan_labels_name`), or
    None."""
    name = mulan_labels_name(Path(spec).name)
    xml = None if name is None else Path(spec).with_name(name)
    return xml if xml is not None and xml.is_file() else None


def _read_mulan(spec, labels_file, test=None):
    """``(dataset, n_train)``: the multi-label :class:`Dataset` of a Mulan ARFF file (the
    attributes its label XML names are the labels, the others the features; sparse ARFF
    rows included), followed by the rows of the Mulan file ``test`` when given, and the
    first file's row count."""
    from sparsekit.datasets._mulan import _label_names, _load_file

    parts = []
    for path in [spec] if test is None else [spec, test]:
        try:
            names = _label_names(labels_file)
            parts.append(_load_file(path, names))
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read {path!r} as a Mulan file with the labels of "
                             f"{labels_file.name}: {exc}") from None
    (X, Y), n_train = parts[0], parts[0][0].shape[0]
    if test is not None:
        X_test, Y_test = parts[1]
        if X_test.shape[1] != X.shape[1]:
            raise ValueError(f"{test!r} has {X_test.shape[1]} feature attributes, {spec!r} "
                             f"{X.shape[1]}: not the same data set's files")
        stack = sp.vstack if sp.issparse(X) or sp.issparse(X_test) else np.vstack
        X, Y = stack([X, X_test]), sp.vstack([sp.csr_matrix(Y), sp.csr_matrix(Y_test)])
        X = X.tocsr() if sp.issparse(X) else X
    X, n_features = _used_columns(X, n_train)
    return Dataset(Path(spec).name, X, sp.csr_matrix(Y), classes=np.array(names),
                   n_features=n_features,
                   note=f"{len(names)} labels named by {labels_file.name}"), n_train


#: the start of an HTML page (a web page saved or served in place of a data file)
WEB_PAGE = re.compile(rb"\s*<(!doctype\s+html|html[\s>])", re.IGNORECASE)


def _refuse_web_page(spec):
    """ValueError for a file that is an HTML page: a web page saved in place of the data
    (a repository's page of the file rather than its raw content)."""
    if not Path(spec).is_file():
        return
    try:
        with _open_binary(spec) as f:
            first = f.read(1024)
    except CORRUPT:                     # a damaged file: the reader says why
        return
    if WEB_PAGE.match(first):
        raise ValueError(f"{spec!r} is a web page (HTML), not a data file: download the file "
                         "itself (on GitHub, its Raw button)")


def load_dataset(spec, zero_based=False, label=None, test=None, drop=(), sheet=None,
                 test_sheet=None):
    """The :class:`Dataset` named by ``spec``: ``a9a`` (shipped), ``breast_cancer`` or
    ``digits`` (scikit-learn), a CSV, TSV, ARFF, Parquet or JSON file or a workbook's
    sheet ``sheet`` (its column ``label``, the last by default, for the labels:
    ``_csv.read_csv``), a LIBSVM file (columns numbered
    from 1, or from 0 with ``zero_based=True``), an Extreme Classification Repository file,
    a Mulan ARFF file beside its label XML (label sets, unless ``label`` names one), or a
    set of the data home; ``test``, a file of the same kind (a set of the data home, or ``a9a``'s
    ``a9a.t``), is its held-out rows (:meth:`Dataset.hold_out`; of a workbook, its sheet
    ``test_sheet``, ``sheet`` by default; the data file itself is warned about). Raises
    ValueError with a message for the user when it cannot be read or is not a
    classification task."""
    _refuse_web_page(spec)
    if test is not None:
        if Path(test).is_dir():
            raise ValueError(f"{test!r} is a directory; give the path of a test file")
        _refuse_web_page(test)
    labels_file = _mulan_labels_file(spec) if label is None else None   # --label: one label
    n_train, table, test_name = None, None, None if test is None else Path(test).name
    if spec in ("breast_cancer", "digits"):
        if test is not None:
            raise ValueError(f"{spec!r} (scikit-learn's) comes without a test file: its "
                             "probability table holds out 30% of its rows")
        if spec == "breast_cancer":
            X, y = load_breast_cancer(return_X_y=True)
            data = Dataset(spec, X, y, StandardScaler().fit_transform(X))
        else:
            X, y = load_digits(return_X_y=True)
            data = Dataset(spec, X / 16.0, y)
    elif spec == "a9a":
        data, n_train = _read_file(spec, zero_based, test)
    elif labels_file is not None:
        data, n_train = _read_mulan(spec, labels_file, test)
    elif reads_as_table(spec):
        if test is not None and not reads_as_table(test):
            raise ValueError(f"{test!r} is not a table (CSV, TSV, ARFF, Parquet, JSON, "
                             f"spreadsheet) as {spec!r} "
                             "is: a test file is of its training file's kind")
        table = read_csv(spec, label, test, drop, sheet, test_sheet)
        sets = table.y.ndim == 2                 # label sets: the names are the labels'
        data = Dataset(Path(spec).name, table.X, table.y, note=table.note,
                       encode=table.encode, classes=table.label_names if sets else None,
                       label_names=None if sets else table.label_names, words=table.words)
        n_train, test_name = table.n_train, table.test_name
    else:
        data, n_train = _read_file(spec, zero_based, test)
    if test is not None:
        if table is None:                 # read_csv tells a workbook's sheets apart
            warn_if_same_file(spec, test)
        data.hold_out(n_train, test_name)
    return _checked(data, spec, test)


def _checked(data, spec, test=None):
    """``data`` when its tables can be measured; ValueError with a message for the user
    otherwise, and a warning for the labels of a held-out file ``test`` that its training
    rows do not hold (no model can predict them)."""
    if data.y.shape[0] == 0:
        raise ValueError(f"{spec!r}: the file holds no rows")
    if test is not None and data.test.X.shape[0] == 0:
        raise ValueError(f"{test!r}: the test file holds no rows")
    if not (data.X.count_nonzero() if sp.issparse(data.X) else np.any(data.X)):
        raise ValueError(f"{spec!r}: every feature is constant (the matrix the models get "
                         "holds no nonzero entry): there is nothing for them to learn")
    if data.multilabel:
        counts = np.diff(sp.csc_matrix(data.y).indptr)
        if (data.X.shape[0] < 4 or counts.size < 2
                or not np.any((counts > 0) & (counts < data.X.shape[0]))):
            raise ValueError(f"{spec!r}: a multi-label set needs 4 rows or more, 2 labels "
                             "or more, and a label that some rows have and others not "
                             f"(rows {data.X.shape[0]}, rows per label "
                             f"{counts.tolist()[:20]})")
        held = np.diff(sp.csc_matrix(data.test.y).indptr) > 0 if test is not None else False
        unseen = data.classes[(counts == 0) & held]      # the test file's labels alone
        if unseen.size and not np.any((counts > 0) & held):   # every micro-F1 would be 0
            raise ValueError(f"{test!r}: none of its labels ({_listed(unseen)}) occurs in "
                             f"{spec!r}")
        if unseen.size:
            warnings.warn(f"{test!r}: {unseen.size} label(s) of the test file never occur in "
                          f"{spec!r} ({_listed(unseen)}): no model predicts them, "
                          "each of their test labels counts as missed", UserWarning,
                          stacklevel=3)
        return data
    kind = type_of_target(data.y)
    other = ("; if another column holds the labels, --label names it" if data.encode is not None
             else "")
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"{spec!r}: the labels are {kind}, not classes (a regression "
                         f"target? the models compared are classifiers{other})")
    counts = np.unique(data.y, return_counts=True)[1]
    if counts.size < 2:
        only = data.classes if data.label_names is None else data.label_names[data.classes]
        if test is not None:
            raise ValueError(f"{spec!r}: the training file holds a single class "
                             f"({_listed(only)}); classifiers need two or more")
        raise ValueError(f"{spec!r}: every row holds the same label ({_listed(only)}); "
                         f"classifiers need two classes or more{other}")
    if test is not None:
        unseen = ~np.isin(data.test.y, data.classes)
        if unseen.any():
            shown, hint = np.unique(data.test.y[unseen]), ""
            if data.label_names is not None:
                shown, known = data.label_names[shown], data.label_names[data.classes]
                if {_bare(v) for v in shown} <= {_bare(v) for v in known}:
                    hint = (f"; they differ from its labels ({_listed(known)}) only by "
                            "trailing periods or spaces: the same labels written differently? "
                            "edit one file to match the other")
            if unseen.all():           # every accuracy would be 0: nothing to compare
                raise ValueError(f"{test!r}: none of its labels ({_listed(shown)}) occurs "
                                 f"in {spec!r}{hint}")
            warnings.warn(f"{test!r}: {int(unseen.sum())} of its {unseen.size} rows hold "
                          f"labels that {spec!r} does not ({_listed(shown)}): no model "
                          f"predicts them, those rows count as errors{hint}", UserWarning,
                          stacklevel=3)
        return data
    if counts.size == data.y.shape[0] and counts.size > 2:
        raise ValueError(f"{spec!r}: each of its {counts.size} rows has a label of its own "
                         f"(an identifier? the models compared are classifiers{other})")
    if np.count_nonzero(counts >= 2) < 2:
        raise ValueError(f"{spec!r}: at least two classes need 2 rows or more for a "
                         f"train/test split (class sizes {counts.tolist()[:20]})")
    split = counts[counts >= 2]                    # the rows _class_tables.split stratifies
    n_test = int(np.ceil(TEST_SHARE * split.sum()))
    if split.size > min(n_test, split.sum() - n_test):
        raise ValueError(f"{spec!r}: {split.size} classes of 2 rows or more do not fit a "
                         f"stratified {TEST_SHARE:.0%} test split of {n_test} rows "
                         f"({counts.size} distinct labels in {data.X.shape[0]} rows: a "
                         f"regression target? the models compared are classifiers{other})")
    return data


def _bare(label):
    """A text label without the periods and spaces around it (UCI's ``adult.test`` writes
    ``>50K.`` where ``adult.data`` writes ``>50K``)."""
    return label.strip(" .")


def _listed(labels, most=5):
    """The first ``most`` of ``labels`` for a message (numbers as 7, not 7.0)."""
    shown = [f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)
             for v in labels[:most]]
    return ", ".join(shown) + (", ..." if len(labels) > most else "")
