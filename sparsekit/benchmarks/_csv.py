"""CSV, TSV, ARFF, Parquet and JSON files and spreadsheet workbooks for
``sparsekit-compare``: one label column, the others features.

The feature columns become the matrix that every model of the tables gets, as a
scikit-learn user would build it: numeric columns (numbers and booleans) standardized, a
missing number set to its column's median with a 0/1 column marking where (scikit-learn's
``SimpleImputer(strategy="median", add_indicator=True)``), free text (three words or
more, and more than half the rows differ) as TF-IDF (``TfidfVectorizer``, an empty field an
empty document), the other text columns one-hot encoded (a missing value a category of its
own); :data:`CsvData`'s ``encode`` fits these encoders on training rows only, for held-out
scores. Empty fields, ``NA``, ``n/a`` and ``?`` (the UCI repository's mark) are missing
values, and so are up to MAX_MARKERS other words in a column of numbers (``-``); numbers
written with thousands separators (``"1,234.5"``, as spreadsheets save formatted cells) are
numbers. The matrix is CSR when a column is text, dense otherwise.
"""
import ast
import csv
import ctypes
import io
import json
import os
import re
import threading
import warnings
from collections import Counter, namedtuple
from contextlib import contextmanager
from decimal import Decimal
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MultiLabelBinarizer, OneHotEncoder, StandardScaler

from sparsekit.datasets._arff import _ATTRIBUTE, _unquote
from sparsekit.datasets._fasttext_format import LABEL_PREFIX, read_fasttext_lines
from sparsekit.datasets._home import (CORRUPT, FALLBACK_ENCODINGS, _open_binary, _read_bytes,
                                      decode_text, text_encodings)

#: file name endings read as delimited text, and their separators
SEPARATORS = {".csv": ",", ".tsv": "\t"}
#: the file name ending of Weka's ARFF tables
ARFF = ".arff"
#: the file name ending of Apache Parquet tables (read by pandas through pyarrow)
PARQUET = ".parquet"
#: file name endings of JSON tables: one record per line, or an array of records
JSON_LINES, JSON = {".jsonl", ".ndjson"}, ".json"
#: file name endings of spreadsheet workbooks (Excel's and OpenDocument's), read by pandas
#: through python-calamine
WORKBOOKS = {".xlsx", ".xlsm", ".xlsb", ".xls", ".ods"}
#: a workbook's table starts at the first of its sheet's first TITLE_ROWS rows filled at
#: least half as wide as the widest of them: rows above it (a title, blank rows) are not
#: part of the table
TITLE_ROWS = 20
#: endings of the compressions pandas reads by the file name
COMPRESSIONS = {".gz", ".bz2", ".xz", ".zip", ".zst"}
#: a text column with more distinct values than this share of the rows is free text
#: (a bag of words) when its values hold FREE_TEXT_WORDS words or more (the median), else
#: probably an identifier or a name: it gets a warning, as its one-hot columns would
#: outnumber the other features without describing the rows
MAX_DISTINCT_SHARE = 0.5
FREE_TEXT_WORDS = 3
#: ... and more distinct values than this (no warning on a few rows; nor on a numeric
#: column numbering the rows, an identifier too)
MIN_WARNED_DISTINCT = 20
#: lines starting with ``|`` before the data are comments, as in the UCI repository's files
#: (``adult.test`` opens with ``|1x3 Cross validator``), up to this many
MAX_COMMENT_LINES = 100
#: the lines read to tell a delimited file from a LIBSVM file by its ``index:value`` pairs
SNIFFED_LINES = 10
#: the lines read to tell whether the first line is a header
HEADER_SAMPLE = 101
#: what the first bytes of a file named as text say it is instead, for the message, when
#: control characters among its first 64 bytes confirm it is not text
NOT_TEXT = {b"PK\x03\x04": "a zip archive (an Excel or OpenDocument workbook, or a zipped "
                            "file)",
            b"\xd0\xcf\x11\xe0": "an Office document (an Excel 97-2003 workbook, .xls?)",
            b"PAR1": "a Parquet file", b"\x1f\x8b": "gzip-compressed data",
            b"\xfd7zXZ": "xz-compressed data", b"BZh": "bzip2-compressed data"}
#: a text cell that reads as a date: ISO 8601's calendar date, a time of day after it
#: (``T`` or a space) and a UTC offset or ``Z`` optional (what databases and pandas write)
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?"
                      r"(Z|[+-]\d{2}:?\d{2})?")

#: ... and one in another order (03/01/2024, 1.3.24), whose day and month may be either
#: way round: read as text, the identifiers' warning says so
OTHER_DATE = re.compile(r"\d{1,2}[/.-]\d{1,2}[/.-](\d{2}|\d{4})([T ]\d{1,2}:\d{2}(:\d{2})?)?")

#: cells read as missing values (pandas' defaults among them, and UCI's ``?``)
MISSING_MARKS = {"", "?", "NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None", "#N/A"}
#: a column of numbers with at most this many distinct other words holds marks of missing
#: values (``-``, ``n.a.``, ``unknown``), read as missing; with more, it is a column of codes
#: (text: Titanic's tickets)
MAX_MARKERS = 3

#: ``X`` (dense or CSR, the encoders fit on every row), labels ``y`` (a 0/1 matrix of
#: label sets, a column per label, for several label columns or a column of lists), a ``note`` for
#: the tables' titles, ``encode(train, test)``: ``(X_train, X_test)`` with the encoders fit
#: on the rows ``train`` only, and ``n_train``: the rows of the first file (the others are
#: a held-out file's), ``label_names``: the text of each label code when the labels were
#: text (code ``i`` is ``label_names[i]``), the labels' names for label sets, else None,
#: and ``test_name``: the held-out file's name for titles (with its sheet, of a workbook),
#: else None
#: ``words``: every feature column is free text (X is only their TF-IDF), as in a fastText file
CsvData = namedtuple("CsvData", "X y note encode n_train label_names test_name words")
#: what a table file's reader returns: the ``frame``, ``place(i)`` naming the file's line
#: (row, record) of row ``i`` for messages (``"line 7"``), the ``decimal`` mark, the
#: ``layout`` read for messages (the separator; a workbook's sheet) and, for a text file,
#: the ``encoding`` it was decoded with
TableRead = namedtuple("TableRead", "frame place decimal layout encoding", defaults=(None,))


def is_table(path):
    """Whether ``path`` names a CSV, TSV, ARFF or JSON file (compressed or not), a
    Parquet file (or a directory of them, as dask and Spark write a table) or a
    spreadsheet workbook."""
    return (_separator(path) is not None or _ending(path) in (ARFF, JSON, *JSON_LINES)
            or _is_parquet(path) or is_workbook(path))


def is_workbook(path):
    """Whether ``path`` names a spreadsheet workbook (by its ending)."""
    return Path(path).suffix.lower() in WORKBOOKS


def warn_if_same_file(path, test, part=None):
    """Warn when the test file ``test`` is the data file ``path`` itself (``part``: and
    the same ``part`` of it, a workbook's sheet): the test accuracies would be the training
    rows'."""
    try:
        same = os.path.samefile(path, test)
    except OSError:                   # a file that is not there is refused elsewhere
        return
    if same:
        warnings.warn(f"{str(test)!r} is the data file itself"
                      + (f", the same {part}" if part else "")
                      + ": the test accuracies are those of the training rows"
                      + (f" (--test-{part} names another {part})" if part else ""),
                      UserWarning, stacklevel=3)


def _is_parquet(path):
    return _ending(path) == PARQUET or (Path(path).is_dir()
                                        and any(Path(path).rglob("*" + PARQUET)))


def reads_as_table(path):
    """Whether ``path`` is read as a table: a CSV, TSV or ARFF file by its ending, a file
    in fastText's format, or a file of another ending whose first line is delimited (UCI's
    ``.data`` files)."""
    return is_table(path) or is_fasttext(path) or _sniffed_separator(path) is not None


def is_fasttext(path):
    """Whether ``path`` (not named as a table) is a text file in fastText's format: one of
    its first SNIFFED_LINES lines that hold anything holds a ``__label__`` token (first, as
    fastText's tutorials write it, or anywhere; a line without one is then named by the
    reader, where the LIBSVM reader would refuse its first word as a label)."""
    if is_table(path):
        return False
    lines = [line for line in _head_lines(path, MAX_COMMENT_LINES) if line.strip()]
    return any(token.startswith(LABEL_PREFIX) for line in lines[:SNIFFED_LINES]
               for token in line.split())


def _sniffed_separator(path):
    """The separator of a file whose first line (past UCI's ``|`` comment lines) holds
    tabs, semicolons or commas (in this order of preference: a ``;`` file writes decimal
    commas) and none of whose first SNIFFED_LINES lines holds a LIBSVM ``index:value`` pair
    (``39, State-gov, 77516, ...``), else None."""
    lines = _head_lines(path, MAX_COMMENT_LINES + SNIFFED_LINES)
    lines = lines[_comments(lines):][:SNIFFED_LINES]
    if not lines or any(re.search(r"(^|\s)\d+:", line) is not None or "\0" in line
                        for line in lines):   # a pair or a NUL (binary: not a table)
        return None                 # (a LIBSVM row may have no pair: "1,4 " has no features)
    return next((sep for sep in ("\t", ";", ",") if sep in lines[0]), None)


def _head_lines(path, count):
    """The first ``count`` lines of the decompressed file ``path``, each cut at 64 kB,
    decoded as its byte-order mark says, else as UTF-8 with other bytes replaced (what is
    looked for, separators, digits and ``|``, is ASCII in every codec read); [] when the
    file cannot be read (not a file here, a set's name; or damaged: the reader says)."""
    try:
        with io.TextIOWrapper(_open_binary(path), encoding=text_encodings(path)[0],
                              errors="replace") as f:
            return [f.readline(1 << 16) for _ in range(count)]
    except CORRUPT:
        return []


def _comments(lines):
    """How many of ``lines`` start with ``|`` before the first that does not (UCI's
    comments)."""
    return next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))


def _ending(path):
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes.pop()
    return suffixes[-1] if suffixes else None


def _separator(path):
    return SEPARATORS.get(_ending(path))


def _is_number(cell):
    try:
        float(cell)
    except (TypeError, ValueError):
        return False
    return True


def read_csv(path, label=None, test=None, drop=(), sheet=None, test_sheet=None):
    """The :class:`CsvData` of a CSV, TSV, ARFF, Parquet or JSON file or of a sheet of a
    spreadsheet workbook, followed by the rows of the table file ``test`` when given (a
    held-out file of the same columns; of a workbook, its sheet ``test_sheet``, by default
    ``sheet``: train and test can be two sheets of one workbook), without the columns
    ``drop`` names (by header or position, as ``label``). ``test_name`` names the held-out
    rows for titles; a test file that is the data file itself (the same sheet of a
    workbook) is warned about: its accuracies are the training rows'.

    CSV and TSV (and delimited lines under another name, as UCI's ``.data`` files):
    the first line is the header unless it reads as data (numbers only, or text that
    recurs below it in its column, and no name atop a column of numbers; then the columns
    are numbered from 0); a ``.csv`` file whose first line holds ``;``
    and no comma is ``;``-separated with decimal commas (decimal points where they read
    more columns as numbers: UCI's bank marketing files). CSV, TSV and ARFF text is UTF-8,
    or UTF-16 or 32 after their byte-order mark; a file that is not is read as Windows'
    Western code page (cp1252, what Excel saves in Western European locales), else as
    Latin-1, and the note says so. ARFF (Weka's format): the ``@attribute`` names, nominal
    attributes as text (their values quoted with ``'`` where they hold spaces), ``?`` a
    missing value; sparse rows (``{i v, ...}``) are refused. Parquet: its columns and their
    types as pandas reads them (pyarrow needed). JSON: records, one per line (``.jsonl``,
    ``.ndjson``) or in an array (``.json``), their fields the columns. Workbooks
    (``.xlsx``, ``.xlsm``, ``.xlsb``, ``.xls``, ``.ods``; python-calamine needed): the sheet
    ``sheet`` names (by name or position from 0; the first by default), its cells typed as
    the workbook holds them, its header told as a CSV file's, rows above its table (a
    title) and rows and unnamed columns without a value left out. ``label`` names the label
    column, by its header or by its position (from 0; negative counts from the end); the
    last column by default (Weka's class attribute; columns of lists or records, which no
    model takes as features and which are left out with a warning, are passed over); several,
    separated by commas, are a label set's columns (each 0/1, true/false or yes/no: a row's
    labels are its columns that hold 1), and a JSON or Parquet column of lists holds label
    sets, as does a text column of list literals (``['a', 'b']``) or of labels separated by
    ``|`` that recombine (``Comedy|Drama``). Dates and durations become seconds (dates
    since the column's first): typed ones (Parquet, JSON, workbooks) and text columns
    whose every value is an ISO 8601 date (``2024-03-01``, a time and an offset
    optional). Raises ValueError with a message for
    the user when the file cannot be read, the label column does not exist, a label is
    missing, or a number is too large to standardize.
    """
    try:
        import pandas as pd
    except ImportError:
        raise ValueError(f"reading {str(path)!r} needs pandas: pip install pandas") from None
    frame, place, decimal, layout, encoding = _frame(path, pd, sheet)
    if frame.shape[1] < 2:
        raise ValueError(f"{str(path)!r}: a label column and at least one feature column "
                         f"are needed, the file has {frame.shape[1]} column(s) ({layout})")
    nested = _nested_columns(frame)
    if label is None and is_fasttext(path):       # its labels, a column of lists or not
        label = LABEL_PREFIX
    labels = _label_columns(frame, path, label, nested)
    dropped = list(dict.fromkeys(_named_column(frame, path, c, "column to leave out")
                                 for c in drop))
    for name in labels:
        if name in dropped:
            raise ValueError(f"{str(path)!r}: the label column {name!r} cannot be left out")
        _refuse_missing(frame[name], f"the label column {name!r}", path, place)
    n_train, test_name = len(frame), None
    if test is not None:
        frame, test_name = _with_test_rows(frame, test, labels, path, pd, layout,
                                           sheet if test_sheet is None else test_sheet)
    listed = [c for c in labels if c in nested]
    if len(labels) > 1 and listed:
        raise ValueError(f"{str(path)!r}: the label column {_listed_columns(listed)} holds "
                         "lists, a label set by itself: name it alone")
    features, index, empty = _feature_frame(frame, labels, dropped, nested, n_train, path)
    grouped, marks = _read_text_numbers(features, decimal)
    _read_text_dates(features, pd)
    times = _read_times(features, pd)
    numeric = [c for c in features if pd.api.types.is_numeric_dtype(features[c])
               or pd.api.types.is_bool_dtype(features[c])]
    _warn_row_numbers(features[numeric], n_train, path)
    text = [c for c in features if c not in numeric]
    words = [c for c in text if _is_free_text(features[c])]
    categories = [c for c in text if c not in words]
    _warn_identifiers(features[categories], path)
    features = _typed(features, numeric, words)
    encoder = _encoder(features, numeric, categories, words)
    X = _fit_encoder(encoder, features, path)        # on every row: the l1 tables' matrix
    y, names, label_part = _label_values(frame, labels, nested, path, place, pd)
    parts = [label_part]
    if dropped:
        parts.append(f"{_listed_columns(dropped)} left out, as asked")
    if index:
        parts.append(f"the unnamed column {index[0]!r} left out (the row index 0, 1, ... "
                     "that pandas' to_csv and to_excel write)")
    if empty:
        parts.append(f"{_columns(len(empty), 'empty')} left out")
    if numeric:
        parts.append(_numeric_part(features[numeric], grouped, times, marks))
    if categories:
        width = encoder.output_indices_["categories"]
        parts.append(f"{_columns(len(categories), 'text')} one-hot encoded into "
                     f"{width.stop - width.start}")
    if words:
        vocabulary = sum(len(encoder.named_transformers_[f"words {c}"].vocabulary_)
                         for c in words)
        parts.append(f"{_columns(len(words), 'free-text')} as TF-IDF over {vocabulary} "
                     "words")
    if encoding in FALLBACK_ENCODINGS:     # a guess: said, for names that read wrong
        parts.insert(0, f"read as {encoding} text, not UTF-8")
    if is_workbook(path):
        parts.insert(0, layout)             # the sheet read
    return CsvData(X, y, "; ".join(parts), partial(_encode_split, encoder, features, path),
                   n_train, names, test_name, bool(words) and not (numeric or categories))


def _with_test_rows(frame, test, labels, path, pd, layout, sheet):
    """``frame`` followed by the rows of the table file ``test`` (its sheet ``sheet``), and
    the name that titles them; warns when ``test`` is the data file (sheet) itself."""
    held, read = _test_frame(test, frame, labels, path, pd, sheet)
    test_name = Path(test).name
    if is_workbook(test):
        test_name += f"'s {read.layout}"
    if read.encoding in FALLBACK_ENCODINGS:
        test_name += f" (read as {read.encoding} text, not UTF-8)"
    if read.layout == layout:
        warn_if_same_file(path, test, "sheet" if is_workbook(path) else None)
    return pd.concat([frame, held], ignore_index=True), test_name


def _feature_frame(frame, labels, dropped, nested, n_train, path):
    """The feature columns: ``frame`` without the label columns, those ``dropped``, the
    columns of lists or records no label names (left out with a warning), the row index
    pandas writes as an unnamed first column and the columns without a value. Returns
    (features, [the index column], [the empty columns])."""
    unused = [c for c in nested if c not in labels and c not in dropped]
    if unused:
        lists = [c for c in unused if not isinstance(_first_value(frame[c]), dict)]
        warnings.warn(f"{str(path)!r}: {_listed_columns(unused)} hold lists or records "
                      "(nested values), which no model here takes: left out"
                      + (f" (--label {lists[0]} reads a column of lists as label sets)"
                         if lists else ""), UserWarning, stacklevel=3)
    features = frame.drop(columns=[*labels, *dropped, *unused])
    # pandas' to_csv (and to_excel) writes the frame's index as a first column without a header
    index = [c for c in features if isinstance(c, str)     # numbering the first file's rows
             and re.fullmatch(r"Unnamed: \d+(\.\d+)?", c)
             and _counts_rows(features[c].iloc[:n_train], 0)]
    # ... and spreadsheets columns without a value (trailing separators)
    empty = [c for c in features if c not in index and features[c].isna().all()]
    features = features.drop(columns=index + empty)
    if features.shape[1] == 0:
        raise ValueError(f"{str(path)!r}: no feature column with a value beside the label")
    return features, index, empty


def _warn_row_numbers(numeric, n_train, path):
    """Warn of each numeric column that numbers the first ``n_train`` rows (0 or 1 up)."""
    if len(numeric) <= MIN_WARNED_DISTINCT:
        return
    for c in numeric:
        column = numeric[c].iloc[:n_train]
        if _counts_rows(column, 1) or _counts_rows(column, 0):
            warnings.warn(f"{str(path)!r}: the numeric column {c!r} numbers the rows "
                          f"{column.iloc[0]:g}..{column.iloc[-1]:g} (an "
                          "identifier?): it is a feature here; --drop leaves it out if "
                          "it should not be one", UserWarning, stacklevel=3)


def _label_values(frame, labels, nested, path, place, pd):
    """(y, the label names or None, the note's words on the labels): one label column's
    values, text labels coded by their sorted order (LIBLINEAR takes numbers only, and
    fastText's labels are tokens), or label sets (several 0/1 columns, a column of lists,
    or text that writes sets)."""
    written = (None if len(labels) > 1 or labels[0] in nested
               else _written_sets(frame[labels[0]]))
    if len(labels) > 1:
        y, names = _label_sets(frame[labels], path, place), np.array(labels, dtype=object)
        part = f"label sets of the {len(labels)} columns {_listed_columns(labels, 5)}"
    elif labels[0] in nested or written is not None:
        y, names = _listed_labels(frame[labels[0]] if written is None else written[0], path,
                                  place)
        how = "" if y.ndim == 1 else ", label sets" + ("" if written is None
                                                       else f" {written[1]}")
        part = f"label {labels[0]!r}{how}"
    else:
        y, names = frame[labels[0]].to_numpy(), None
        part = f"label {labels[0]!r}"
    if y.ndim == 1 and not pd.api.types.is_numeric_dtype(y.dtype):
        names, y = np.unique(y.astype(str), return_inverse=True)
        shown = ", ".join(f"{v}={i}" for i, v in enumerate(names[:5]))
        part += f" coded {shown}{', ...' if names.size > 5 else ''}"
    return y, names, part


def _numeric_part(numeric, grouped, times, marks):
    """The note's words on the numeric columns: standardized, their missing values, and
    what was read from text (thousands separators, dates and durations, missing marks)."""
    missing = numeric.isna().to_numpy()
    gaps = int(missing.any(axis=0).sum())
    part = f"{_columns(numeric.shape[1], 'numeric')} standardized"
    if gaps:
        part += (f" ({int(missing.sum())} missing value(s) in {gaps} of them set to "
                 f"the column's median, {_columns(gaps, '0/1')} marking where)")
    if grouped:
        part += f" ({len(grouped)} written with thousands separators)"
    if times:
        part += f" ({len(times)} of dates or durations, in seconds)"
    if marks:
        shown = ", ".join(repr(m) for m in sorted(set().union(*marks.values())))
        part += f" (the text {shown} read as missing in {len(marks)} of them)"
    return part


def _frame(path, pd, sheet=None):
    """The :data:`TableRead` of a CSV, TSV, ARFF, Parquet or JSON file
    (:func:`_delimited_frame`, :func:`_arff_frame`, :func:`_parquet_frame`,
    :func:`_json_frame`) or of a workbook's sheet ``sheet`` (:func:`_workbook_frame`), its
    column names stripped of the spaces around them and at least one data row."""
    read = (partial(_workbook_frame, sheet=sheet) if is_workbook(path) else
            _fasttext_frame if is_fasttext(path) else
            _parquet_frame if _is_parquet(path) else
            _json_frame if _ending(path) in (JSON, *JSON_LINES) else
            _arff_frame if _ending(path) == ARFF else _delimited_frame)
    table = read(path, pd)
    frame = table.frame
    # headers written "name ," (UCI Adult's) lose their spaces: --label takes the bare name;
    # names that would become one ("a" and "a ") keep theirs
    stripped = [c.strip() if isinstance(c, str) else c for c in frame.columns]
    counts = Counter(stripped)
    frame.columns = [s if counts[s] == 1 else c for s, c in zip(stripped, frame.columns)]
    if frame.shape[0] == 0:
        raise ValueError(f"{str(path)!r}: no data rows after the header")
    return table


def _test_frame(test, frame, labels, path, pd, sheet=None):
    """``(rows, read)``: the rows of the table file ``test`` (of a workbook: its sheet
    ``sheet``) under the columns of ``frame`` (the training file ``path``'s, its label
    columns ``labels``): the same column names in any order, or, where either file has no
    header, the same number of columns in the same order; and its :data:`TableRead`."""
    read = _frame(test, pd, sheet)
    held, layout = read.frame, read.layout
    numbered = [list(f.columns) == list(range(f.shape[1])) for f in (frame, held)]
    if set(held.columns) != set(frame.columns):
        if not any(numbered) or held.shape[1] != frame.shape[1]:
            raise ValueError(f"{str(test)!r} does not have the columns of {str(path)!r}: "
                             f"{held.shape[1]} ({layout}: {_listed_columns(held.columns)}) "
                             f"against {frame.shape[1]} ({_listed_columns(frame.columns)})")
        held.columns = frame.columns
    for label in labels:
        _refuse_missing(held[label], f"the label column {label!r}", test, read.place)
    return held[list(frame.columns)], read


def _delimited_frame(path, pd):
    """The :data:`TableRead` of a CSV or TSV file, decoded by the first of its
    :func:`~sparsekit.datasets._home.text_encodings` that reads every byte (UTF-8, else
    Windows' Western code page, else Latin-1; UTF-16 or 32 after their byte-order mark)."""
    kind = _not_text(path)
    if kind is not None:
        raise ValueError(f"{str(path)!r} is {kind}, not delimited text: name the file by "
                         "its kind (.xlsx, .ods, .xls, .parquet, .gz, ...), or export a CSV file")
    sep = _separator(path) or _sniffed_separator(path)      # UCI's .data files: by content
    comments = _comment_lines(path)
    encodings = text_encodings(path)
    for encoding in encodings:
        try:
            return _decoded_frame(path, pd, sep, comments, encoding)
        except UnicodeDecodeError as exc:
            error = exc
    raise ValueError(f"cannot read {str(path)!r}: not {encodings[0]} text, as its "
                     f"byte-order mark says ({error})")


def _decoded_frame(path, pd, sep, comments, encoding):
    """:func:`_delimited_frame` with the separator ``sep`` (None: pandas' default), after
    ``comments`` lines, decoded with ``encoding`` (a UnicodeDecodeError where it cannot)."""
    options = {"skipinitialspace": True, "encoding": encoding, "skiprows": comments}
    try:
        first = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str,
                            keep_default_na=False, **options)
        if first.shape[1] == 1 and ";" in first.iloc[0, 0]:
            sep = ";"                       # a spreadsheet's CSV with a decimal comma
        sample = pd.read_csv(path, sep=sep, header=None, nrows=HEADER_SAMPLE, dtype=str,
                             keep_default_na=False, **options)
        header = 0 if _has_header(sample, sep) else None
        decimal = "."
        frame = pd.read_csv(path, sep=sep, header=header, na_values=["?"], **options)
        if sep == ";":   # decimal commas, unless decimal points read more columns as numbers
            commas = pd.read_csv(path, sep=sep, header=header, decimal=",", na_values=["?"],
                                 **options)   # (UCI's bank marketing: ';' and 93.994)
            if _numeric_count(commas, pd) >= _numeric_count(frame, pd):
                frame, decimal = commas, ","
    except UnicodeDecodeError:             # (a ValueError) the next encoding is tried
        raise
    except (OSError, ValueError) as exc:   # pandas' parser and empty-file errors included
        raise ValueError(f"cannot read {str(path)!r}: {exc}") from None
    place = _record_lines(path, encoding, sep, comments + (header == 0))
    return TableRead(frame, place, decimal, f"separator {sep!r}", encoding)


def _record_lines(path, encoding, sep, skip):
    """``place(i)`` of a delimited file: the line (from 1) on which its data record ``i``
    starts as pandas reads the records, after ``skip`` lines (comments, the header): blank
    lines (also of spaces) left out, a quoted cell's newlines inside its record. The file
    is read again at the first call (for an error's message), not before."""
    starts = []

    def place(i):
        if not starts:
            try:
                with _cells_of_any_size(), io.TextIOWrapper(_open_binary(path),
                                                          encoding=encoding, newline="") as f:
                    for _ in range(skip):
                        f.readline()
                    reader = csv.reader(f, delimiter=sep or ",", skipinitialspace=True)
                    end = skip                  # the lines read before the record
                    for record in reader:
                        if len(record) > 1 or record and record[0].strip():
                            starts.append(end + 1)
                        end = skip + reader.line_num
            except (csv.Error, *CORRUPT, UnicodeError):
                starts.clear()                  # the count without blank lines instead
        return f"line {starts[i] if i < len(starts) else skip + 1 + i}"
    return place


#: the largest limit the csv module takes on a cell's size (a C long)
_CSV_LARGEST_CELL = 2 ** (8 * ctypes.sizeof(ctypes.c_long) - 1) - 1
_CSV_LIMIT = threading.Lock()


@contextmanager
def _cells_of_any_size():
    """Within it the csv module reads cells of any size (pandas has read the file: its
    cells are in memory anyway); the module's limit is restored after. That limit is the
    process's, and other libraries raise it for good (SciPy's ARFF reader does): a file's
    line numbers would otherwise depend on what the process read before. The lock keeps
    two threads' saves and restores from crossing."""
    with _CSV_LIMIT:
        saved = csv.field_size_limit(_CSV_LARGEST_CELL)
        try:
            yield
        finally:
            csv.field_size_limit(saved)


def _not_text(path):
    """What :data:`NOT_TEXT` says the decompressed file ``path`` is by its first bytes, or
    None."""
    try:
        with _open_binary(path) as f:
            head = f.read(64)
    except CORRUPT:                 # the reader says why
        return None
    if not re.search(rb"[\x00-\x08\x0e-\x1f]", head):
        return None
    return next((kind for magic, kind in NOT_TEXT.items() if head.startswith(magic)), None)


def _comment_lines(path):
    """How many lines at the top of ``path`` start with ``|`` (UCI's comments), at most
    MAX_COMMENT_LINES."""
    return _comments(_head_lines(path, MAX_COMMENT_LINES))


def _has_header(sample, sep):
    """Whether the first line of ``sample`` (the file's first lines as text) names the
    columns: a name atop a column of numbers says so (``age`` over ``39, 50, ...``); else
    a line of numbers only is data, and so is a line whose text repeats below it in its
    column (a category: UCI's ``adult.data``, ``iris.data``, mushrooms); else a header."""
    first, rest = sample.iloc[0], sample.iloc[1:]

    def number(cell):
        return _is_number(cell.replace(",", ".") if sep == ";" else cell)

    def missing(cell):
        return cell.strip() in MISSING_MARKS
    repeated = False
    for c in sample:
        cells = [v for v in rest[c] if not missing(v)]
        if cells and all(map(number, cells)) and not number(first[c]) \
                and not missing(first[c]):
            return True
        repeated |= not number(first[c]) and first[c] in set(cells)
    return not (repeated or all(map(number, first)))


def _numeric_count(frame, pd):
    return sum(pd.api.types.is_numeric_dtype(frame[c]) for c in frame)


def _arff_frame(path, pd):
    """The :data:`TableRead` of an ARFF file: the ``@data`` rows read as CSV with ``'``
    quotes under the ``@attribute`` names, nominal attributes as text."""
    try:
        text, encoding = decode_text(_read_bytes(path), path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc}") from None
    parts = re.split(r"^[ \t]*@data[ \t]*\r?$", text, maxsplit=1, flags=re.I | re.M)
    if len(parts) != 2:
        raise ValueError(f"{str(path)!r}: no @data line (not an ARFF file?)")
    head, body = parts
    names, nominal = [], []
    for line in head.splitlines():
        match = _ATTRIBUTE.match(line.strip())
        if match is not None:
            names.append(_unquote(match.group(1)))
            if match.group(2).startswith("{"):
                nominal.append(names[-1])
        elif line.strip()[:10].lower() == "@attribute":
            raise ValueError(f"{str(path)!r}: cannot read the attribute line {line!r}")
    first = head.count("\n") + 2                   # the file's line after @data
    rows = [(first + i, ln) for i, ln in enumerate(body.split("\n")[1:])
            if ln.strip() and not ln.lstrip().startswith("%")]
    if any(ln.lstrip().startswith("{") for _, ln in rows):
        raise ValueError(f"{str(path)!r}: sparse ARFF rows ({{index value, ...}}) are read "
                         "as a Mulan multi-label file, with its label XML beside it "
                         "(<set>.xml); else convert the file to LIBSVM or CSV")
    try:
        frame = pd.read_csv(io.StringIO("\n".join(ln for _, ln in rows)), header=None,
                            names=names, quotechar="'", escapechar="\\", na_values=["?"],
                            keep_default_na=False, skipinitialspace=True,
                            dtype=dict.fromkeys(nominal, str))
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc}") from None
    return TableRead(frame, lambda i: f"line {rows[i][0]}", ".",
                     f"{len(names)} @attribute line(s)", encoding)


def _fasttext_frame(path, pd):
    """The :data:`TableRead` of a file in fastText's format
    (:func:`~sparsekit.datasets.load_fasttext`): per line that holds anything, its
    ``__label__`` tokens the labels (a row's label, or its label set where a line holds
    several) and its other tokens the column ``text``; rows named by their line. A line
    without a label has a missing one."""
    numbers, words, labels, encoding = read_fasttext_lines(path)
    several = any(len(found) > 1 for found in labels)
    frame = pd.DataFrame({"text": words, LABEL_PREFIX: [
        found if several else found[0] if found else None for found in labels]})
    if several:     # label sets: a row without a label is an empty set, as for a list column
        frame[LABEL_PREFIX] = frame[LABEL_PREFIX].astype(object)
    return TableRead(frame, lambda i: f"line {numbers[i]}", ".",
                     "fastText's format, labels marked __label__", encoding)


def _parquet_frame(path, pd):
    """The :data:`TableRead` of a Parquet file, or of a directory of them (a table's
    parts, read as one): its columns as pandas reads them (a categorical column as text,
    dates and durations as numbers of seconds; lists as lists), decimal numbers as floats;
    rows named by their position from 0."""
    try:
        frame = pd.read_parquet(path)
    except FileNotFoundError:
        raise ValueError(f"cannot read {str(path)!r}: no such file") from None
    except ImportError:
        raise ValueError(f"reading the Parquet file {str(path)!r} needs pyarrow: "
                         "pip install pyarrow") from None
    except (OSError, ValueError) as exc:    # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"cannot read {str(path)!r} as Parquet: {exc}") from None
    frame = _flat(frame)
    return TableRead(frame, lambda i: f"row {i}", ".", f"{frame.shape[1]} Parquet column(s)")


def _json_frame(path, pd):
    """The :data:`TableRead` of a JSON file: records one per line (``.jsonl``,
    ``.ndjson``; rows named by their line) or an array of records (``.json``), their
    fields the columns as pandas types them (a field a record lacks missing there; lists
    and nested records as they are)."""
    lines = _ending(path) in JSON_LINES
    try:
        frame = pd.read_json(path, lines=lines, compression="infer")
    except FileNotFoundError:
        raise ValueError(f"cannot read {str(path)!r}: no such file") from None
    except (OSError, ValueError) as exc:           # pandas' parser errors are ValueError
        raise ValueError(f"cannot read {str(path)!r} as JSON: {exc}") from None
    except (TypeError, AttributeError):  # a value that is not a record among the records
        # (pandas 2.0 raises the AttributeError, later releases the TypeError)
        raise ValueError(f"{str(path)!r}: {_first_non_record(path, lines)} is not a record "
                         "with named fields ({\"field\": value, ...}), as the others "
                         "are") from None
    if frame.ndim != 2 or isinstance(frame.columns, pd.RangeIndex):
        raise ValueError(f"{str(path)!r}: not a table of records with named fields "
                         "({\"field\": value, ...}" + (" on each line)" if lines else
                                                       " in an array: [{...}, ...])"))
    frame = _flat(frame)
    place = (lambda i: f"line {i + 1}") if lines else (lambda i: f"record {i}")
    return TableRead(frame, place, ".", f"{frame.shape[1]} field(s)")


def _first_non_record(path, lines):
    """Where the first value of a JSON file of records that is not one stands: "line 3"
    (JSON Lines, from 1: also a line json cannot read) or "record 2" (an array, from 0), as
    the table's places; "a value" when json finds none."""
    def record(text):
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False
    with io.TextIOWrapper(_open_binary(path), encoding="utf-8", errors="replace") as f:
        if lines:
            i = next((i for i, line in enumerate(f) if line.strip() and not record(line)),
                     None)
            return "a value" if i is None else f"line {i + 1}"
        try:
            values = json.load(f)
        except ValueError:
            return "a value"
    i = next((i for i, value in enumerate(values) if not isinstance(value, dict)), None)
    return "a value" if i is None else f"record {i}"


def _workbook_frame(path, pd, sheet=None):
    """The :data:`TableRead` of a spreadsheet workbook's sheet ``sheet`` (by name, or
    position from 0 among the sheets shown, not hidden; the first shown by default, a
    warning naming the others): its table from
    its first row filled at least half as wide as the widest of the first TITLE_ROWS
    rows, its header told as a CSV file's (:func:`_has_header`), its cells typed as the
    workbook holds them (dates as Parquet's), rows and unnamed columns without a value
    left out (blank rows, the sheet's margins); rows named as the sheet numbers them."""
    try:
        from python_calamine import CalamineError, SheetVisibleEnum
    except ImportError:
        raise ValueError(f"reading the workbook {str(path)!r} needs python-calamine: "
                         "pip install python-calamine") from None
    try:
        book = pd.ExcelFile(path, engine="calamine")
    except FileNotFoundError:
        raise ValueError(f"cannot read {str(path)!r}: no such file") from None
    except (OSError, ValueError, CalamineError) as exc:
        raise ValueError(f"cannot read {str(path)!r} as a spreadsheet workbook: {exc}"
                         ) from None
    with book:
        hidden = {s.name for s in book.book.sheets_metadata
                  if s.visible != SheetVisibleEnum.Visible}
        shown = [n for n in book.sheet_names if n not in hidden] or book.sheet_names
        name = _sheet_name(book.sheet_names, shown, sheet, path)
        read = partial(_read_sheet, book, name, path, CalamineError)
        cells = read(header=None, nrows=TITLE_ROWS + HEADER_SAMPLE)
        filled = cells.notna().sum(axis=1).to_numpy()[:TITLE_ROWS]
        if not filled.any():
            raise ValueError(f"{str(path)!r}: its sheet {name!r} holds no table (no value "
                             f"in its first {TITLE_ROWS} rows); its sheets: "
                             f"{_listed_columns(shown)} (--sheet picks one)")
        start = int(np.argmax(2 * filled >= filled.max()))
        sample = cells.iloc[start:].dropna(how="all").dropna(axis=1, how="all")
        header = _has_header(sample.map(lambda v: "" if pd.isna(v) else str(v)), ",")
        frame = read(header=start) if header else read(header=None, skiprows=start)
    margins = [c for c in frame if (not header or str(c).startswith("Unnamed: "))
               and frame[c].isna().all()]
    frame = frame.drop(columns=margins)
    if not header:                          # numbered from 0, as a CSV file's columns
        frame.columns = range(frame.shape[1])
    kept = frame.notna().any(axis=1).to_numpy()
    # the sheet's row numbers (from 1) of the frame's rows
    rows = np.flatnonzero(kept) + start + 1 + int(header)
    frame = frame[kept].reset_index(drop=True)
    if frame.shape[0] == 0:
        raise ValueError(f"{str(path)!r}: its sheet {name!r} holds no data rows after the "
                         f"header; its sheets: {_listed_columns(shown)} (--sheet picks "
                         "one)")
    above = "row 1" if start == 1 else f"rows 1-{start}"
    title = f" ({above} above its table left out)" if filled[:start].any() else ""
    return TableRead(frame, lambda i: f"row {rows[i]} of sheet {name!r}", ".",
                     f"sheet {name!r}{title}")


def _read_sheet(book, name, path, errors, **options):
    """The sheet ``name`` of the workbook ``book`` as pandas reads it with ``options``
    (and ``?`` a missing value, as in CSV files), ValueError for the user on the reader's
    ``errors``."""
    import pandas as pd

    try:
        return pd.read_excel(book, sheet_name=name, na_values=["?"], **options)
    except (OSError, ValueError, errors) as exc:
        raise ValueError(f"cannot read the sheet {name!r} of {str(path)!r}: {exc}") from None


def _sheet_name(names, shown, sheet, path):
    """The name of the sheet ``sheet`` among a workbook's sheets ``names``: a name (a
    hidden one too), or a position from 0 among the sheets ``shown`` (None: the first
    shown, with a warning when others are shown)."""
    if sheet is None:
        if len(shown) > 1:
            warnings.warn(f"{str(path)!r} holds {len(shown)} sheets "
                          f"({_listed_columns(shown)}): the first, {shown[0]!r}, is read; "
                          "--sheet names another", UserWarning, stacklevel=5)
        return shown[0]
    name = _by_name_or_position(names, shown, sheet)
    if name is None:
        raise ValueError(f"{str(path)!r}: no sheet {sheet!r} (by name or position from "
                         f"0); its sheets: {_listed_columns(shown)}")
    return name


def _flat(frame):
    """``frame`` (a Parquet or JSON file's, its values typed) with decimal numbers as
    floats."""
    for c in [c for c in frame if frame[c].dtype.kind == "O"]:   # the first value tells
        if isinstance(_first_value(frame[c]), Decimal):          # decimal numbers (prices)
            frame[c] = frame[c].astype(np.float64)
    return frame


def _first_value(column):
    values = column.dropna()
    return values.iloc[0] if len(values) else None


def _nested_columns(frame):
    """The columns of ``frame`` that hold lists or records (a Parquet or JSON file's): no
    model takes them as features; a column of lists can be a label set."""
    return [c for c in frame if frame[c].dtype.kind == "O"
            and isinstance(_first_value(frame[c]), (list, tuple, dict, set, np.ndarray))]


def _read_text_numbers(frame, decimal):
    """Convert, in place, the text columns of ``frame`` that hold numbers written otherwise:
    with thousands separators (``1,234.5``; ``1.234,5`` or ``1 234,5`` where the decimal mark
    is a comma), as spreadsheets save formatted cells, or (more than half the values) beside
    1 to MAX_MARKERS distinct words that mark missing values (``-``, ``n.a.``, ``unknown``),
    read as missing. Return ``(the columns with separators, {column: its words})``; text
    columns of plain numbers only (an ARFF nominal attribute's codes) stay categories."""
    import pandas as pd

    group = "," if decimal == "." else "[. \u00a0]"
    pattern = rf"[-+]?(?:\d{{1,3}}(?:{group}\d{{3}})+|\d+)(?:{re.escape(decimal)}\d*)?"
    grouped, marks = [], {}
    for c in frame:
        if pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c]):
            continue
        text = frame[c].dropna().astype(str).str.strip()
        separated = text.str.fullmatch(pattern) & text.str.contains(group)
        digits = text.where(~separated, text.str.replace(group, "", regex=True))
        numbers = pd.to_numeric(digits.str.replace(decimal, ".") if decimal != "." else digits,
                                errors="coerce")
        words = set(text[numbers.isna()])
        if (numbers.notna().mean() > 0.5 and len(words) <= MAX_MARKERS
                and (words or separated.any())):
            frame[c] = numbers.reindex(frame.index)
            if separated.any():
                grouped.append(c)
            if words:
                marks[c] = words
    return grouped, marks


def _read_text_dates(frame, pd):
    """Convert, in place, the text columns of ``frame`` whose every value is an ISO 8601
    date (:data:`ISO_DATE`; a missing one NaT) to datetime64, in UTC where a value carries
    an offset (the values without one read as UTC times), so that :func:`_read_times` makes
    them seconds; a column with a value that is not a valid date stays text."""
    for c in frame:
        column = frame[c]
        if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
            continue
        values = column.dropna()
        if values.empty or not all(isinstance(v, str) for v in values):
            continue
        values = values.str.strip()
        if not values.str.fullmatch(ISO_DATE.pattern).all():
            continue
        zoned = values.str.contains(r"(?:Z|[+-]\d{2}:?\d{2})$", regex=True)
        # the values with an offset and those without parsed apart: pandas 2.1-2.3 read a
        # value without one after a value with one in that value's offset
        try:
            parts = [pd.to_datetime(values[where], format="ISO8601", utc=bool(zoned.any()))
                     for where in (zoned, ~zoned) if where.any()]
        except (ValueError, OverflowError):         # a day that does not exist: text
            continue
        frame[c] = pd.concat(parts).reindex(column.index)


def _read_times(frame, pd):
    """Convert, in place, the columns of dates and durations of ``frame`` (a Parquet
    file's typed columns) to seconds (dates since the column's first), a missing one NaN;
    their names."""
    times = [c for c in frame if pd.api.types.is_datetime64_any_dtype(frame[c])
             or pd.api.types.is_timedelta64_dtype(frame[c])]
    for c in times:
        column = frame[c]
        if pd.api.types.is_datetime64_any_dtype(column):
            column = column - column.min()
        frame[c] = column.dt.total_seconds()
    return times


def _is_free_text(column):
    """Whether a text column holds free text: a median of FREE_TEXT_WORDS words or more
    (names have two), and more distinct values than MAX_DISTINCT_SHARE of the rows."""
    words = column.dropna().astype(str).str.split().str.len()
    return (words.size > 0 and words.median() >= FREE_TEXT_WORDS
            and column.nunique() > MAX_DISTINCT_SHARE * column.size)


def _typed(features, numeric, words):
    """``features`` as the encoder takes them: numbers as float64 (a missing one NaN),
    category values as Python strings (a missing one a category of its own), free text
    as strings (a missing one an empty document); columns by position, as a file without
    a header names them by numbers."""
    import pandas as pd

    columns = []
    for position, c in enumerate(features):
        column = features.iloc[:, position]
        if c in numeric:
            column = column.astype(np.float64)
        elif c in words:
            column = column.astype(object).fillna("").astype(str)
        else:     # text (numbers too where a test file's column mixes them in)
            column = column.astype(object)        # (a category column: any values)
            column = column.where(column.isna(), column.astype(str))
        columns.append(column.rename(position))
    # joined at once: a frame grown a column at a time warns (PerformanceWarning) past 100
    typed = (pd.concat(columns, axis=1) if columns
             else pd.DataFrame(index=features.index))
    typed.columns = list(features.columns)
    return typed


def _encoder(features, numeric, categories, words):
    """The unfitted ``ColumnTransformer`` of the model matrix: numbers median-imputed
    (0 in a column without any) and standardized, then a 0/1 column marking the missing
    numbers of each numeric column with a gap in the file, the categories one-hot
    (categories unseen in its fit ignored), and each free-text column as TF-IDF; sparse
    output when a column is text."""
    columns = list(features.columns)
    gaps = [columns.index(c) for c in numeric if features[c].isna().any()]
    steps = []
    if numeric:
        steps.append(("numbers", make_pipeline(SimpleImputer(strategy="median",
                                                             keep_empty_features=True),
                                               StandardScaler()),
                      [columns.index(c) for c in numeric]))
    if gaps:     # the columns with a gap in the file, marked in every split
        steps.append(("missing", MissingIndicator(features="all"), gaps))
    if categories:
        steps.append(("categories", OneHotEncoder(handle_unknown="ignore"),
                      [columns.index(c) for c in categories]))
    steps += [(f"words {c}", TfidfVectorizer(), columns.index(c)) for c in words]
    return ColumnTransformer(steps, sparse_threshold=1.0 if categories or words else 0.0)


def _fit_encoder(encoder, features, path):
    """``encoder`` fit on the rows of ``features``, and their matrix (CSR, or dense
    float64); ValueError for a number too large to standardize (its square summed over the
    rows would overflow: the mean, median and variance stay finite below) or a free-text
    column without a word of two letters in these rows."""
    numeric = features.select_dtypes(np.float64)
    limit = np.sqrt(np.finfo(np.float64).max / max(len(features), 1))
    with np.errstate(invalid="ignore"):
        too_large = (np.abs(numeric.to_numpy()) > limit).any(axis=0)   # inf too, not NaN
    if too_large.any():
        _too_large(numeric.columns[int(np.argmax(too_large))], path)
    try:
        X = encoder.fit_transform(features)
    except ValueError as exc:                # no word of two letters in a free-text column
        for name, _, c in encoder.transformers:
            if name.startswith("words ") and not features.iloc[:, c].str.contains(
                    r"\w\w", regex=True).any():
                raise ValueError(f"{str(path)!r}: the free-text column "
                                 f"{features.columns[c]!r}: {exc}") from None
        raise
    return _matrix(X)


def _too_large(name, path):
    name = name.item() if isinstance(name, np.generic) else name     # a column number
    raise ValueError(f"{str(path)!r}: the numeric column {name!r} holds values too large "
                     "to standardize (infinite or overflowing)")


def _matrix(X):
    return X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)


def _encode_split(encoder, features, path, train, test):
    """``(X_train, X_test)``: a copy of ``encoder`` fit on the rows ``train`` (medians,
    means and scales, categories and vocabularies of the training rows only, as a
    scikit-learn pipeline would), applied to both."""
    fitted = clone(encoder)
    X_train = _fit_encoder(fitted, features.iloc[train], path)
    return X_train, _matrix(fitted.transform(features.iloc[test]))


def _warn_identifiers(frame, path):
    """A warning for each category column with more distinct values than
    MAX_DISTINCT_SHARE of the rows."""
    for c in frame:
        distinct = frame[c].nunique(dropna=False)
        if distinct > max(MAX_DISTINCT_SHARE * len(frame), MIN_WARNED_DISTINCT):
            values = frame[c].dropna().astype(str).str.strip()
            what = "an identifier?"
            if values.size and values.str.fullmatch(OTHER_DATE.pattern).all():
                what = (f"dates such as {values.iloc[0]!r}? only ISO 8601 dates, "
                        "2024-03-01, are read as seconds: day and month here may be either "
                        "way round")
            warnings.warn(f"{str(path)!r}: the text column {c!r} has {distinct} distinct "
                          f"values in {len(frame)} rows ({what}): each becomes a "
                          f"one-hot column; --drop {c} leaves it out", UserWarning,
                          stacklevel=3)


def _columns(count, kind):
    return f"{count} {kind} column{'s' if count > 1 else ''}"


def _label_columns(frame, path, label, nested=()):
    """The names of the label columns ``label`` names: a header or a position from 0
    (None: the last column but the ``nested`` ones, of lists or records), or several of
    them separated by commas (a label set's columns; a header holding commas is one
    column)."""
    columns = list(frame.columns)
    if label is None:
        flat = [c for c in columns if c not in nested]
        return [flat[-1] if flat else columns[-1]]
    if "," not in str(label) or _by_name_or_position(columns, columns, label) is not None:
        return [_named_column(frame, path, label)]
    return list(dict.fromkeys(_named_column(frame, path, c.strip())   # "a, b" as "a,b"
                              for c in str(label).split(",") if c.strip()))


#: the text of a label-set column's cells, and whether the row has that label
LABEL_FLAGS = {"1": 1, "0": 0, "1.0": 1, "0.0": 0, "true": 1, "false": 0, "yes": 1, "no": 0,
               "y": 1, "n": 0, "t": 1, "f": 0}


def _label_sets(columns, path, place):
    """The 0/1 indicator matrix of a label set's ``columns`` (a frame), each column 0/1,
    boolean, or :data:`LABEL_FLAGS` text (``yes``/``no``, ``true``/``false``, any case);
    ValueError naming the first other value and its place in the file."""
    Y = np.empty(columns.shape, dtype=np.int8)
    for j, c in enumerate(columns):
        text = columns[c].astype(str).str.strip().str.lower()
        flags = text.map(LABEL_FLAGS)
        if flags.isna().any():
            i = int(np.argmax(flags.isna().to_numpy()))
            raise ValueError(f"{str(path)!r}: the label column {c!r} holds "
                             f"{columns[c].iloc[i]!r} on {place(i)}: the columns of a label "
                             "set hold 0/1, true/false or yes/no")
        Y[:, j] = flags.to_numpy(dtype=np.int8)
    return Y


def _written_sets(column):
    """``(lists, how)`` when a text label column writes label sets: every cell a list
    literal (``['a', 'b']``, as pandas writes a column of lists to a CSV file; JSON's
    ``["a", "b"]``), or labels separated by ``|`` (MovieLens' ``Comedy|Drama``) where a cell
    holds two or more and the cells combine fewer labels than they have distinct values
    (else ``|`` is part of a few class names); ``lists`` a Series of lists, ``how`` for
    the note. Else None."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return None
    text = column.astype(str).str.strip()
    if len(text) and text.str.startswith("[").all() and text.str.endswith("]").all():
        try:
            lists = [ast.literal_eval(cell) for cell in text]
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if all(isinstance(v, list) for v in lists):
            return pd.Series(lists, index=column.index), "written as lists"
        return None
    if not text.str.contains("|", regex=False).any():
        return None
    split = text.str.split("|").map(lambda labels: [v.strip() for v in labels])
    if any("" in labels for labels in split):
        return None
    if len(set().union(*map(set, split))) >= text.nunique():   # not combinations of labels
        return None
    return split, "split at '|'"


def _listed_labels(column, path, place):
    """``(y, names)`` of a label column of lists (a JSON or Parquet file's): the labels as
    text and None when every list holds one (classes), else the 0/1 CSR indicator matrix of
    the label sets, a column per label ``names`` (sorted text; an empty list a row without a
    label); ValueError naming the first record or other value."""
    sets = []
    for i, value in enumerate(column):
        if not isinstance(value, (list, tuple, set, np.ndarray)) or any(
                isinstance(v, (list, tuple, dict, set, np.ndarray)) for v in value):
            raise ValueError(f"{str(path)!r}: the label column {column.name!r} holds "
                             f"{_shown(value)} on {place(i)}: a label set is a list of "
                             "labels")
        sets.append({str(v) for v in value})
    if all(len(labels) == 1 for labels in sets):
        return np.array([next(iter(labels)) for labels in sets], dtype=object), None
    binarizer = MultiLabelBinarizer(sparse_output=True)     # as the LIBSVM files' sets
    Y = binarizer.fit_transform(sets)
    return Y, binarizer.classes_.astype(object)


def _shown(value, most=60):
    text = repr(value)
    return text if len(text) <= most else text[:most] + " ..."


def _named_column(frame, path, label, what="label column"):
    """The name of the column ``label`` (a header, or a position from 0; None: the last),
    ``what`` for the message when there is none."""
    columns = list(frame.columns)
    if label is None:
        return columns[-1]
    name = _by_name_or_position(columns, columns, label)
    if name is None:
        raise ValueError(f"{str(path)!r}: no {what} {label!r} (by name or position "
                         f"from 0); its {len(columns)} columns: {_listed_columns(columns)}")
    return name


def _by_name_or_position(names, numbered, key):
    """``key`` if it is one of ``names``, else the item of ``numbered`` at the position it
    writes (from 0; negative from the end), else None."""
    if key in names:
        return key
    try:
        return numbered[int(key)]
    except (ValueError, IndexError):
        return None


def _listed_columns(columns, most=20):
    """The first ``most`` column names for a message."""
    columns = list(columns)
    return ", ".join(repr(c) for c in columns[:most]) + (", ..." if len(columns) > most else "")


def _counts_rows(column, start):
    """Whether ``column`` holds ``start, start + 1, ...`` down its rows (2 rows or more)."""
    import pandas as pd

    values = column.to_numpy()
    return (values.size >= 2 and pd.api.types.is_numeric_dtype(column)
            and not pd.api.types.is_bool_dtype(column)
            and np.array_equal(values, start + np.arange(values.size)))


def _refuse_missing(column, what, path, place):
    """ValueError naming the first missing value of ``column``, or infinite number, by its
    place in the file (``place(i)``: where row ``i`` is), if any."""
    missing = column.isna().to_numpy()
    if missing.any():
        raise ValueError(f"{str(path)!r}: {what} misses {int(missing.sum())} value(s), the "
                         f"first on {place(int(np.argmax(missing)))}; fill them in or "
                         "drop those rows")
    values = column.to_numpy()
    if values.dtype.kind == "f" and np.isinf(values).any():     # "inf" reads as inf
        first = int(np.argmax(np.isinf(values)))
        raise ValueError(f"{str(path)!r}: {what} holds {values[first]} on {place(first)}, "
                         "not a class label")
