"""The data sets of ``sparsekit-compare``: its files (LIBSVM, the Extreme Classification
Repository's, Mulan's, tables), test files held out by ``--test``, and the checks with their
messages for the user."""
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from _compare_files import MULAN_TOY_HEADER, write_mulan_toy, write_rows

from sparsekit.benchmarks._data import load_dataset

#: the data home the tests' conftest points at
DATA_HOME = Path(os.environ.get("SPARSEKIT_DATA", "/nonexistent"))


def test_extreme_classification_repository_files_are_read(tmp_path):
    """Files of the Extreme Classification Repository (first line ``N D L``, 0-based
    labels and columns) give label sets, or classes when every row has one label; the
    LIBSVM reader stopped at the header ("need more than 1 value to unpack")."""
    rows = ["0,2 0:1 3:0.5", "1 1:2", " 2:1", "2,0 0:0.25 1:1"]
    (tmp_path / "sets.txt").write_text("4 5 3\n" + "\n".join(rows) + "\n")
    data = load_dataset(str(tmp_path / "sets.txt"))
    assert data.multilabel and data.classes.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(data.y.toarray(), [[1, 0, 1], [0, 1, 0], [0, 0, 0],
                                                      [1, 0, 1]])
    # the 4 used columns of the 5 (column 4 holds no entry); a row may have no label
    assert data.X.shape == (4, 4) and data.n_features == 5
    np.testing.assert_array_equal(data.X.toarray(), [[1, 0, 0, 0.5], [0, 2, 0, 0],
                                                     [0, 0, 1, 0], [0.25, 1, 0, 0]])
    (tmp_path / "classes.txt").write_text("4 2 2\n0 0:1\n1 1:1\n0 0:2\n1 1:3\n")
    data = load_dataset(str(tmp_path / "classes.txt"))
    assert not data.multilabel and data.y.tolist() == [0, 1, 0, 1]
    (tmp_path / "bom.txt").write_text("4 2 2\n0 0:1\n1 1:1\n0 0:2\n1 1:3\n",
                                      encoding="utf-8-sig")     # a byte order mark first
    assert load_dataset(str(tmp_path / "bom.txt")).y.tolist() == [0, 1, 0, 1]
    (tmp_path / "short.txt").write_text("3 2 2\n0 0:1\n")
    with pytest.raises(ValueError, match="as an Extreme Classification Repository file: .*"
                       "header says 3 rows, found 1"):
        load_dataset(str(tmp_path / "short.txt"))



def test_a_file_of_classes_with_rows_of_no_label_says_so(tmp_path):
    """A LIBSVM file of one label per row but rows of none is read as label sets (an empty
    set is allowed there), with a warning naming those rows: a class file missing labels
    would otherwise turn into the label-set comparison unannounced."""
    rows = ["+1 1:1", "-1 2:1", " 3:1", "+1 1:2", "-1 2:2"]
    (tmp_path / "classes.svm").write_text("\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match=r"'.*classes.svm': 1 data row\(s\) hold no label "
                                         r"\(3, from 1\), every other row one: read as "
                                         r"label sets"):
        data = load_dataset(str(tmp_path / "classes.svm"))
    assert data.multilabel and data.y.shape == (5, 2)
    (tmp_path / "sets.svm").write_text("1,2 1:1\n 2:1\n1 3:1\n2 1:2\n")  # a set of two
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_dataset(str(tmp_path / "sets.svm")).multilabel


@pytest.mark.parametrize("rows, match", [
    (["+1 1:1", "-1 2:1", "nan 3:1", "+1 1:2"], "data row 3 .* has the label nan,"),
    (["1,2 1:1", "2 2:1", "3,1e999 3:1", "1 1:2"], "data row 3 .* has the label inf,"),
])
def test_a_label_that_is_not_a_number_names_its_row(tmp_path, rows, match):
    """A LIBSVM label written ``nan`` or ``1e999`` (read as numbers, not finite): the file
    and row named, where scikit-learn's "Input contains NaN." named neither."""
    (tmp_path / "bad.svm").write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=f"'.*bad.svm': {match} not a class label"):
        load_dataset(str(tmp_path / "bad.svm"))


def test_an_empty_libsvm_file_holds_no_rows(tmp_path):
    (tmp_path / "empty.svm").write_text("")
    with pytest.raises(ValueError, match="'.*empty.svm': the file holds no rows"):
        load_dataset(str(tmp_path / "empty.svm"))


def test_a_binary_file_is_named_so(tmp_path):
    """An image (any bytes with a NUL) was sniffed as a CSV table and refused for its
    label column's missing values."""
    (tmp_path / "photo.png").write_bytes(bytes(range(256)) * 10)
    with pytest.raises(ValueError, match="cannot read .*photo.png' as a LIBSVM file .*: its "
                                         "first bytes hold a NUL: a binary file"):
        load_dataset(str(tmp_path / "photo.png"))


def test_a_uci_data_file_is_read_as_csv(tmp_path):
    """UCI's ``.data`` files: comma-separated, no header, text labels (wine's first)."""
    pytest.importorskip("pandas")
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    path = tmp_path / "wine.data"
    np.savetxt(path, np.column_stack([y + 1, X]), delimiter=",", fmt="%g")
    data = load_dataset(str(path), label="0")
    assert data.X.shape == (178, 13) and data.classes.tolist() == [1, 2, 3]
    assert data.note == "label 0; 13 numeric columns standardized"
    with pytest.raises(ValueError, match="a regression target.*if another column holds the "
                                         "labels, --label names it"):
        load_dataset(str(path))                 # the last column: a measurement


def test_a_tables_label_column_of_one_value_or_of_identifiers_is_named_so(tmp_path):
    """A last column that is the same on every row, or different on every row (an id),
    is refused for what it is, with the hint that --label names the label column."""
    pytest.importorskip("pandas")
    rows = "".join(f"{k * 0.5},{k % 3},{k},same\n" for k in range(12))
    path = tmp_path / "t.csv"
    path.write_text("x,z,id,kind\n" + rows)
    with pytest.raises(ValueError, match=r"every row holds the same label \(same\); "
                                         "classifiers need two classes or more; if another "
                                         "column holds the labels, --label names it"):
        load_dataset(str(path))
    with pytest.raises(ValueError, match="each of its 12 rows has a label of its own "
                                         r"\(an identifier\? .*--label names it\)"):
        load_dataset(str(path), label="id")
    assert load_dataset(str(path), label="z").classes.tolist() == [0, 1, 2]



def test_a_mulan_arff_file_with_its_label_xml_gives_label_sets(tmp_path):
    """Mulan's multi-label files: ``<set>-train.arff`` (sparse rows too) beside
    ``<set>.xml``, whose labels are the label sets; without the XML the file is a table."""
    write_mulan_toy(tmp_path)
    header = MULAN_TOY_HEADER
    data = load_dataset(str(tmp_path / "toy-train.arff"))
    assert data.multilabel and data.classes.tolist() == ["sad", "calm"]
    assert data.y.toarray().tolist() == [[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]]
    np.testing.assert_array_equal(data.X, [[0.5, 1], [1.5, 0], [2.5, 1], [0, 2], [1, 1],
                                           [2, 0]])
    assert data.note == "2 labels named by toy.xml"
    sparse = ["{0 0.5,1 1,2 1}", "{0 1.5,3 1}", "{0 2.5,1 1,2 1,3 1}", "{1 2}", "{0 1,1 1,2 1}",
              "{0 2,3 1}"]
    (tmp_path / "toy.arff").write_text(header + "\n".join(sparse) + "\n")
    data = load_dataset(str(tmp_path / "toy.arff"))
    assert data.multilabel and data.X.format == "csr" and data.X.shape == (6, 2)
    assert data.y.toarray().tolist() == [[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]]
    data = load_dataset(str(tmp_path / "toy-train.arff"), label="sad")
    assert not data.multilabel and data.note.startswith("label 'sad'")   # one label, named
    (tmp_path / "toy.xml").unlink()                     # a table: the last attribute labels
    data = load_dataset(str(tmp_path / "toy-train.arff"))
    assert not data.multilabel and data.note.startswith("label 'calm'")



def test_a_test_files_labels_missing_from_training_are_warned_and_count_as_errors(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    train = write_rows(tmp_path / "tr.svm", X, np.where(X[:, 0] > 0, 1, 2))
    test = write_rows(tmp_path / "te.svm", X[:10], [1, 2, 7, 7, 1, 2, 1, 2, 9, 1])
    with pytest.warns(UserWarning, match=r"'[^']*te.svm': 3 of its 10 rows hold labels that "
                                         r"'.*tr.svm' does not \(7, 9\): no model predicts "
                                         "them, those rows count as errors"):
        data = load_dataset(str(train), test=str(test))
    assert data.classes.tolist() == [1, 2]            # the training file's classes
    assert data.X.shape == (40, 3) and data.test.y.tolist().count(7) == 2



def test_text_labels_written_differently_in_the_test_file_get_a_hint(tmp_path):
    """UCI Adult's pair: ``adult.test`` (a ``|`` comment line first) writes ``>50K.`` where
    ``adult.data`` writes ``>50K``; the labels are coded on both files. When no test label
    occurs in training (every accuracy would be 0) it is an error, otherwise a warning;
    both name the test file's labels as written and say how they differ."""
    pytest.importorskip("pandas")
    rows = [f"{20 + i}, {'Private' if i % 3 else 'State-gov'}, {i % 7}, "
            f"{'>50K' if i % 2 else '<=50K'}" for i in range(40)]
    (tmp_path / "adult.data").write_text("\n".join(rows[:30]) + "\n")
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n"
                                        + "".join(r + ".\n" for r in rows[30:]))
    differ = (r"\(<=50K., >50K.\).*they differ from its labels \(<=50K, >50K\) only by "
              "trailing periods or spaces: the same labels written differently")
    with pytest.raises(ValueError, match=r"'[^']*adult.test': none of its labels " + differ):
        load_dataset(str(tmp_path / "adult.data"), test=str(tmp_path / "adult.test"))
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n" + rows[30] + "\n"
                                        + "".join(r + ".\n" for r in rows[31:]))
    with pytest.warns(UserWarning, match=r"9 of its 10 rows hold labels that '[^']*adult.data' "
                                         r"does not " + differ):
        data = load_dataset(str(tmp_path / "adult.data"), test=str(tmp_path / "adult.test"))
    assert data.X.shape[0] == 30 and data.test.X.shape[0] == 10
    assert data.label_names[data.classes].tolist() == ["<=50K", ">50K"]


def test_a_csv_test_file_is_encoded_by_the_training_files_encoders(tmp_path):
    """A CSV test file of the same columns (in another order, or without a header) is
    encoded as a pipeline fit on the training file would encode it; the l1 tables' matrix
    is the training file's rows."""
    pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    x, x_test = rng.normal(2.0, 3.0, 30), rng.normal(size=12)
    city, city_test = rng.choice(["Oslo", "Lyon"], 30), rng.choice(["Oslo", "Kyiv"], 12)
    label = np.where(x > 2, "yes", "no")
    (tmp_path / "tr.csv").write_text("x,city,label\n" + "".join(
        f"{a:.6f},{c},{b}\n" for a, c, b in zip(x, city, label)))
    (tmp_path / "te.csv").write_text("label,city,x\n" + "".join(      # another column order
        f"{b},{c},{a:.6f}\n" for a, c, b in zip(x_test, city_test, np.where(x_test > 2, "yes",
                                                                             "no"))))
    (tmp_path / "bare.csv").write_text("".join(                   # no header: by position
        f"{a:.6f},{c},yes\n" for a, c in zip(x_test, city_test)))
    data = load_dataset(str(tmp_path / "tr.csv"), test=str(tmp_path / "te.csv"))
    x, x_test = np.round(x, 6), np.round(x_test, 6)
    standardized = (x_test - x.mean()) / x.std()
    X_test = data.test.X.toarray() if hasattr(data.test.X, "toarray") else data.test.X
    np.testing.assert_allclose(X_test[:, 0], standardized, atol=1e-12)
    np.testing.assert_array_equal(X_test[:, 1:], np.column_stack(   # Lyon, Oslo; Kyiv unseen
        [city_test == "Lyon", city_test == "Oslo"]))
    assert data.X.shape == (30, 3) and data.X_l1 is data.X
    np.testing.assert_allclose(np.asarray(data.X[:, [0]].todense() if hasattr(data.X, "todense")
                                          else data.X[:, [0]]).ravel(),
                               (x - x.mean()) / x.std(), atol=1e-12)
    assert data.test.y.tolist() == (x_test > 2).astype(int).tolist()   # coded as training
    bare = load_dataset(str(tmp_path / "tr.csv"), test=str(tmp_path / "bare.csv"))
    np.testing.assert_allclose(bare.test.X[:, 0] if not hasattr(bare.test.X, "toarray")
                               else bare.test.X.toarray()[:, 0], standardized, atol=1e-12)



def test_a_test_files_column_of_other_values_is_read_as_one_file_would_be(tmp_path):
    """Columns swapped under the same header: the values of both files are read as one
    file's would be (column a, numbers with two words: missing values; column b, words
    with two numbers: four categories), not a crash of the encoders on numbers mixed with
    strings."""
    pytest.importorskip("pandas")
    (tmp_path / "tr.csv").write_text("a,b,label\n" + "".join(
        f"{i / 10},{'xy'[i % 2]},{i % 2}\n" for i in range(20)))
    (tmp_path / "te.csv").write_text("a,b,label\nx,0.5,1\ny,0.7,0\n")
    data = load_dataset(str(tmp_path / "tr.csv"), test=str(tmp_path / "te.csv"))
    assert data.X.shape[0] == 20 and data.test.X.shape == (2, data.X.shape[1])
    assert "(the text 'x', 'y' read as missing in 1 of them)" in data.note
    assert "1 text column one-hot encoded into 4" in data.note



def test_a_mulan_test_file_pairs_with_its_training_file(tmp_path):
    write_mulan_toy(tmp_path)
    header = MULAN_TOY_HEADER
    (tmp_path / "toy-test.arff").write_text(header + "{0 3,3 1}\n{1 4,2 1}\n")   # sparse rows
    data = load_dataset(str(tmp_path / "toy-train.arff"),
                                test=str(tmp_path / "toy-test.arff"))
    assert data.multilabel and data.X.shape == (6, 2) and data.classes.tolist() == ["sad", "calm"]
    assert data.test.X.toarray().tolist() == [[3, 0], [0, 4]]
    assert data.test.y.toarray().tolist() == [[0, 1], [1, 0]]
    (tmp_path / "toy-test.arff").write_text(header.replace("@attribute f2 numeric\n", "")
                                            + "3,0,1\n")
    with pytest.raises(ValueError, match="'.*toy-test.arff' has 1 feature attributes, "
                                         "'.*toy-train.arff' 2: not the same data set's files"):
        load_dataset(str(tmp_path / "toy-train.arff"),
                             test=str(tmp_path / "toy-test.arff"))



@pytest.mark.skipif(not (DATA_HOME / "libsvm" / "a9a.t.xz").is_file(),
                    reason="no a9a.t in the data home")
def test_the_shipped_a9a_pairs_with_the_data_homes_a9a_t():
    data = load_dataset("a9a", test="a9a.t")
    assert data.X.shape == (32561, 123) and data.test.X.shape == (16281, 123)
    assert data.classes.tolist() == [-1, 1] and set(np.unique(data.test.y)) == {-1, 1}


def test_a_test_file_without_a_label_of_the_training_file_is_refused(tmp_path):
    """Every accuracy or micro-F1 would be 0: an error, not a table of zeros."""
    train = write_rows(tmp_path / "tr.svm", np.eye(6), [1, 2, 1, 2, 1, 2])
    test = write_rows(tmp_path / "te.svm", np.eye(3), [5, 6, 5])
    with pytest.raises(ValueError, match=r"'[^']*te.svm': none of its labels \(5, 6\) occurs in "):
        load_dataset(str(train), test=str(test))
    (tmp_path / "tr.svm").write_text("1,2 1:1\n2 2:1\n1 3:1\n3 1:1 2:1\n")
    (tmp_path / "te.svm").write_text("7 1:1\n8,9 2:1\n 3:1\n")
    with pytest.raises(ValueError, match=r"none of its labels \(7, 8, 9\) occurs in"):
        load_dataset(str(train), test=str(test))


#: small valid files of each text kind, which the sweep below damages
SWEPT_FILES = {
    ".svm": "+1 1:0.5 3:1 7:2.5\n-1 2:1 3:-0.25\n+1 1:1\n-1 5:3e2 6:1\n+1 2:0.5 4:1\n-1 1:1\n",
    ".txt": "1,2 1:0.5 3:1\n2 2:1\n0,1 1:1 4:2\n3 5:1\n1 2:2\n",
    ".csv": "age,city,note,label\n31,Paris,good and fast,yes\n45,Lyon,,no\n22,Paris,slow,yes\n"
            "38,Nice,ok ok,no\n51,Lyon,great,yes\n29,Nice,bad,no\n",
    ".tsv": "a\tb\ty\n1\t2\tA\n4\t5\tB\n7\t8\tA\n1\t0\tB\n2\t2\tA\n",
    ".jsonl": '{"x": 1, "z": "a", "y": "p"}\n{"x": 2, "z": "b", "y": "q"}\n'
              '{"x": 3, "z": "a", "y": "p"}\n{"x": 4, "z": "c", "y": "q"}\n',
    ".arff": "@relation r\n@attribute a numeric\n@attribute b {u,v}\n@attribute c {c1,c2}\n"
             "@data\n1,u,c1\n2,v,c2\n3,u,c1\n4,v,c2\n",
}
#: what the sweep writes into them: separators, numbers that are not finite, indices out
#: of range, JSON values that are not records, byte-order marks, NULs, blank lines
SWEPT_TOKENS = ["", " ", "\t", ",", ":", "0:1", "-1:2", "99999999999:1", "1:nan", "nan",
                "1e999", "-", "\n", "\r\n", "\n\n", "#", "qid:3", "\x00", "\ufeff", "é",
                "\"", "[1, 2]", "a|b", "1:1 1:2", "3:1 2:1", "@data", "{", "null", "true",
                "1,", ",,", "1:", ":1"]


def test_damaged_files_are_read_or_refused_with_a_value_error(tmp_path):
    """Seeded random damage to small valid files (a token replaced, a line repeated,
    dropped, cut short or added): each file is read, or refused by a ValueError (which
    sparsekit-compare prints as its error line), never another exception. A sweep of this
    kind found JSON lines that are not records (pandas' TypeError) and labels read as NaN
    (scikit-learn's "Input contains NaN.", naming no file)."""
    rng = np.random.default_rng(7)
    for trial in range(300):
        ending = list(SWEPT_FILES)[rng.integers(len(SWEPT_FILES))]
        lines = SWEPT_FILES[ending].split("\n")
        for _ in range(rng.integers(1, 4)):
            token, i = SWEPT_TOKENS[rng.integers(len(SWEPT_TOKENS))], rng.integers(len(lines))
            edit = rng.integers(4)
            if edit == 0:
                at = rng.integers(len(lines[i]) + 1)
                lines[i] = lines[i][:at] + token + lines[i][at + rng.integers(4):]
            elif edit == 1:
                lines.insert(i, lines[rng.integers(len(lines))])
            elif edit == 2 and len(lines) > 1:
                del lines[i]
            else:
                lines.insert(i, token)
        path = tmp_path / f"damaged{trial}{ending}"
        path.write_text("\n".join(lines), encoding="utf-8", newline="")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                load_dataset(str(path), zero_based=bool(rng.random() < 0.2))
            except ValueError:
                pass
            except Exception as exc:           # noqa: BLE001 (the assertion names it)
                raise AssertionError(f"{path.name} {lines!r}: {type(exc).__name__}: "
                                     f"{exc}") from exc
