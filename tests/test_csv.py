"""CSV and TSV files for ``sparsekit-compare``: the label column, the model matrix (numbers
standardized, text one-hot encoded) and the errors a user's file can meet."""
import codecs
import csv
import gzip
import re
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.benchmarks._csv import is_table, read_csv, reads_as_table

pd = pytest.importorskip("pandas")


def _mixed_frame(n=12):
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "hours": rng.normal(40, 10, n),
        "member": rng.integers(0, 2, n).astype(bool),
        "city": rng.choice(["Oslo", "Lyon", "Turin"], n),
        "income": rng.choice(["<=50K", ">50K"], n),
    })


def test_delimited_files_are_told_by_their_ending():
    assert is_table("a/b.csv") and is_table("b.TSV") and is_table("b.csv.gz")
    assert is_table("b.arff") and is_table("b.ARFF.xz")
    assert not any(map(is_table, ["a9a", "b.svm", "b.svm.xz", "b.gz", "csv"]))


def test_numbers_are_standardized_and_text_one_hot_encoded(tmp_path):
    frame = _mixed_frame()
    frame.loc[3, "city"] = None                       # a missing text value: a category
    path = tmp_path / "adult.csv"
    frame.to_csv(path, index=False)
    data = read_csv(path)
    numeric = frame[["age", "hours", "member"]].to_numpy(float)
    expected_numeric = (numeric - numeric.mean(0)) / numeric.std(0)
    assert sp.issparse(data.X) and data.X.format == "csr"
    X = data.X.toarray()
    np.testing.assert_allclose(X[:, :3], expected_numeric, atol=1e-12)
    cities = frame["city"].astype(object).to_numpy()
    names = sorted({c for c in cities if isinstance(c, str)})
    for k, city in enumerate(names):             # OneHotEncoder's order: sorted, missing last
        np.testing.assert_array_equal(X[:, 3 + k], cities == city)
    np.testing.assert_array_equal(X[:, -1], np.arange(12) == 3)
    # text labels are coded by their sorted order for LIBLINEAR and fastText
    np.testing.assert_array_equal(data.y, (frame["income"] == ">50K").astype(int))
    assert data.note == ("label 'income' coded <=50K=0, >50K=1; 3 numeric columns "
                         "standardized; 1 text column one-hot encoded into 4")


def test_a_file_of_numbers_only_is_dense_and_may_lack_a_header(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("1.5,2,0\n2.5,4,1\n3.5,5,1\n")
    data = read_csv(path)                       # every cell of line 1 is a number: data
    assert isinstance(data.X, np.ndarray) and data.X.shape == (3, 2)
    np.testing.assert_array_equal(data.y, [0, 1, 1])
    assert data.note == "label 2; 2 numeric columns standardized"
    first = read_csv(path, label="0")           # by position from 0, as the header is absent
    np.testing.assert_array_equal(first.y, [1.5, 2.5, 3.5])


@pytest.mark.parametrize("content, header", [
    ("age,city,label\n39,Oslo,a\n50,Lyon,b\n", True),         # names atop numbers
    ("39,Oslo,a\n50,Lyon,b\n39,Oslo,a\n", False),             # UCI's adult.data: Oslo again
    ("5.1,3.5,Iris-setosa\n4.9,3.0,Iris-setosa\n", False),      # iris.data
    ("p,x,s\ne,y,s\np,x,k\n", False),                         # mushrooms: letters repeat
    ("0,1,target\n0.5,1.5,0\n2.5,0.5,1\n", True),              # to_csv of numbered columns
    ("review,label\ngood film,pos\ndull plot,neg\n", True),    # text under text names
    ("1.5,2,0\n2.5,4,1\n", False),                            # numbers only
    ("a,b,label\n?,1,0\n2,,1\n", True),                       # missing values below
])
def test_the_first_line_is_a_header_unless_it_reads_as_data(tmp_path, content, header):
    path = tmp_path / "t.csv"
    path.write_text(content)
    rows = content.count("\n") - header
    assert read_csv(path).y.size == rows


def test_comma_separated_files_are_tables_under_any_name(tmp_path):
    """UCI's ``.data`` files are CSV (or tab- or ';'-separated); LIBSVM files, multi-label
    ones included, and the Extreme Classification Repository's are not."""
    files = {"adult.data": "39, State-gov, 77516, <=50K\n", "a.svm": "1 1:0.5 3:1\n",
             "sets.svm": "0,4 1:0.64 2:1\n", "xml.txt": "4 5 3\n0,2 0:1\n",
             "tabs.data": "1.5\tred\t0\n2.5\tblue\t1\n3\tred\t1\n",
             "semi.data": "1,5;red;0\n2,5;blue;1\n3;red;1\n"}
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    assert reads_as_table(tmp_path / "adult.data") and reads_as_table(tmp_path / "b.csv")
    for name in ("tabs.data", "semi.data"):                   # by their separators
        data = read_csv(tmp_path / name)
        np.testing.assert_allclose(data.X[:, 0].toarray().ravel() * np.std([1.5, 2.5, 3])
                                   + np.mean([1.5, 2.5, 3]), [1.5, 2.5, 3])
    assert not any(reads_as_table(tmp_path / n) for n in ("a.svm", "sets.svm", "xml.txt"))
    (tmp_path / "bare.svm").write_text("1,2 \n3 3:-0.69 4:0.33\n")  # a first row without pairs
    assert not reads_as_table(tmp_path / "bare.svm")
    assert not reads_as_table(tmp_path / "missing.data") and not reads_as_table("w8a")


@pytest.mark.parametrize("label, expected", [("city", "city"), ("-2", "city"), ("0", "age"),
                                             (None, "income")])
def test_the_label_column_is_named_by_header_or_position(tmp_path, label, expected):
    path = tmp_path / "adult.csv"
    _mixed_frame().to_csv(path, index=False)
    assert read_csv(path, label).note.startswith(f"label {expected!r}")


def test_free_text_is_a_bag_of_words_and_names_are_warned_about(tmp_path):
    """A column of sentences becomes TF-IDF (scikit-learn's TfidfVectorizer), an empty field
    an empty document; a column of two-word names, all distinct, stays one-hot with a
    warning; short repeated phrases stay categories."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    rng = np.random.default_rng(1)
    words = np.array(["good", "bad", "plot", "actor", "film", "long", "dull", "fun"])
    frame = pd.DataFrame({
        "review": [" ".join(rng.choice(words, rng.integers(3, 9))) + f" take{i}"
                   for i in range(24)],
        "critic": [f"Critic {chr(65 + i)}" for i in range(24)],
        "venue": rng.choice(["New York Times", "Le Monde"], 24),
        "stars": rng.integers(1, 6, 24),
    })
    frame.loc[4, "review"] = None
    path = tmp_path / "reviews.csv"
    frame.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="'critic' has 24 distinct values in 24 rows"):
        data = read_csv(path)
    expected = TfidfVectorizer().fit_transform(frame["review"].fillna(""))
    np.testing.assert_allclose(data.X[:, -expected.shape[1]:].toarray(), expected.toarray())
    assert data.X[4, -expected.shape[1]:].nnz == 0
    assert data.X.shape[1] == 24 + 2 + expected.shape[1]
    assert data.note == ("label 'stars'; 2 text columns one-hot encoded into 26; 1 free-text "
                         f"column as TF-IDF over {expected.shape[1]} words")


def test_names_that_stripping_would_merge_keep_their_spaces(tmp_path):
    path = tmp_path / "names.csv"
    path.write_text("a ,a,label \n1,2,0\n2,3,1\n3,1,0\n")
    data = read_csv(path)
    assert data.note == "label 'label'; 2 numeric columns standardized"
    assert data.X.shape == (3, 2)


def test_tsv_and_compressed_files_are_read(tmp_path):
    frame = _mixed_frame()
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.to_csv(tmp_path / "a.tsv", index=False, sep="\t")
    (tmp_path / "a.csv.gz").write_bytes(gzip.compress((tmp_path / "a.csv").read_bytes()))
    reference = read_csv(tmp_path / "a.csv")
    for name in ("a.tsv", "a.csv.gz"):
        data = read_csv(tmp_path / name)
        assert (data.X != reference.X).nnz == 0 and data.note == reference.note
        np.testing.assert_array_equal(data.y, reference.y)


def test_an_identifier_column_is_warned_about(tmp_path):
    frame = _mixed_frame(n=30)
    frame.insert(0, "name", [f"person {i}" for i in range(len(frame))])
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="'name' has 30 distinct values in 30 rows"):
        data = read_csv(path)
    assert data.X.shape == (30, 3 + 30 + 3)


def test_spreadsheet_files_are_read(tmp_path):
    """What spreadsheets write: a byte-order mark, ';' with decimal commas, Windows' code
    page (Latin-1's letters)."""
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbfa,b,label\n1,x,0\n2,y,1\n3,x,1\n")
    (tmp_path / "semi.csv").write_bytes(b"a;b;label\n1,5;x;0\n2;y;1\n3;x;1\n")
    (tmp_path / "latin.csv").write_bytes(b"a,b,label\n1,caf\xe9,0\n2,y,1\n3,caf\xe9,1\n")
    for name, a in (("bom", [1, 2, 3]), ("semi", [1.5, 2, 3]), ("latin", [1, 2, 3])):
        data = read_csv(tmp_path / f"{name}.csv")
        assert data.note == ("read as cp1252 text, not UTF-8; " * (name == "latin")
                             + "label 'label'; 1 numeric column standardized; 1 text column "
                             "one-hot encoded into 2"), name
        np.testing.assert_allclose(data.X.toarray()[:, 0], (a - np.mean(a)) / np.std(a))
        np.testing.assert_array_equal(data.X.toarray()[:, 1:], [[1, 0], [0, 1], [1, 0]])


def _encoded_table(sep=","):
    """A table with accented names and categories (and a euro sign, cp1252's 0x80), as text."""
    return (f"région{sep}prix{sep}classe\n" + "".join(
        f"{place}{sep}{i % 5 + 0.5}{sep}{label}\n" for i, (place, label) in enumerate(
            [("Bâle", "oui"), ("Piémont", "non"), ("Bâle", "non"), ("Zürich €", "oui")] * 3)))


@pytest.mark.parametrize("name, encoding, bom", [
    ("unicode.txt", "utf-16-le", codecs.BOM_UTF16_LE),   # Excel's "Unicode text": tabs
    ("big.tsv", "utf-16-be", codecs.BOM_UTF16_BE),
    ("wide.csv.gz", "utf-32-le", codecs.BOM_UTF32_LE),
    ("sig.csv", "utf-8", codecs.BOM_UTF8),
])
def test_a_file_with_a_byte_order_mark_is_read_in_its_encoding(tmp_path, name, encoding,
                                                               bom):
    """UTF-16 and UTF-32 after their byte-order mark (compressed too) read as the same table
    in UTF-8, UCI's comment lines skipped, no note: nothing was guessed."""
    sep = "," if ".csv" in name else "\t"
    text = "| a comment\n" + _encoded_table(sep)
    (tmp_path / "plain.csv").write_text(_encoded_table(), encoding="utf-8")
    data = bom + text.encode(encoding)
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    read, plain = read_csv(tmp_path / name, label="classe"), read_csv(tmp_path / "plain.csv",
                                                                       label="classe")
    assert read.note == plain.note == ("label 'classe' coded non=0, oui=1; 1 numeric column "
                                       "standardized; 1 text column one-hot encoded into 3")
    np.testing.assert_array_equal(read.X.toarray(), plain.X.toarray())
    np.testing.assert_array_equal(read.y, plain.y)


@pytest.mark.parametrize("suffix", [".csv", ".arff"])
def test_a_file_that_is_not_utf8_is_read_as_windows_code_page_and_said(tmp_path, suffix):
    """Windows' Western code page, as Excel saves a CSV file in Western European locales:
    its names and categories read as written (--label by the accented name), the note says
    it was a guess."""
    text = _encoded_table()
    if suffix == ".arff":
        text = ("@relation t\n@attribute région {Bâle,Piémont,'Zürich €'}\n"
                "@attribute prix numeric\n@attribute classe {oui,non}\n@data\n"
                + text.split("\n", 1)[1].replace("Zürich €", "'Zürich €'"))
    path = tmp_path / f"table{suffix}"
    path.write_bytes(text.encode("cp1252"))
    data = read_csv(path, label="classe", drop=["prix"])
    assert data.note == ("read as cp1252 text, not UTF-8; label 'classe' coded non=0, oui=1; "
                         "'prix' left out, as asked; 1 text column one-hot encoded into 3")
    categories = read_csv(path, label="région").label_names
    np.testing.assert_array_equal(categories, ["Bâle", "Piémont", "Zürich €"])


def test_bytes_that_are_not_cp1252_read_as_latin1_and_late_ones_count(tmp_path):
    """A byte Windows' code page leaves undefined (0x81) reads as Latin-1; a byte that is
    not UTF-8 after the lines read for the header still decides for the whole file."""
    rows = "".join(f"{i},{'ab'[i % 2]},{i % 2}\n" for i in range(300))
    path = tmp_path / "late.csv"
    path.write_bytes(("n,code,label\n" + rows).encode() + b"7,caf\xe9,1\n")
    assert read_csv(path).note.startswith("read as cp1252 text, not UTF-8; label 'label'")
    path.write_bytes(("n,code,label\n" + rows).encode() + b"7,\x81,1\n")
    assert read_csv(path).note.startswith("read as latin-1 text, not UTF-8; label 'label'")


def test_a_test_file_read_as_windows_code_page_is_named_so(tmp_path):
    (tmp_path / "train.csv").write_text(_encoded_table(), encoding="utf-8")
    (tmp_path / "test.csv").write_bytes(_encoded_table().encode("cp1252"))
    data = read_csv(tmp_path / "train.csv", label="classe", test=tmp_path / "test.csv")
    assert data.test_name == "test.csv (read as cp1252 text, not UTF-8)"
    assert not data.note.startswith("read as")
    half = data.X.shape[0] // 2
    np.testing.assert_array_equal(data.X[:half].toarray(), data.X[half:].toarray())


def test_a_file_that_breaks_its_byte_order_mark_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.csv"
    path.write_bytes(codecs.BOM_UTF16_LE + "a,label\n1,0\n".encode("utf-16-le") + b"\x00\xdc")
    with pytest.raises(ValueError, match="broken.csv.*not utf-16 text, as its byte-order mark "
                                         "says"):
        read_csv(path)


# mtime=0: a gzip header holds the time it was written, and pytest-xdist's workers must
# collect the same parameters (a second's tick between them was a collection error).
@pytest.mark.parametrize("name, content, kind", [
    ("book.csv", None, "a zip archive \\(an Excel or OpenDocument workbook"),
    ("old.csv", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "an Office document"),
    ("packed.tsv", gzip.compress(b"a\tlabel\n1\t0\n", mtime=0), "gzip-compressed data"),
    ("t.csv.gz", gzip.compress(b"PAR1" + bytes(10), mtime=0), "a Parquet file"),
], ids=["workbook", "office", "gzip", "parquet-in-gzip"])
def test_a_binary_file_named_as_text_is_named_for_what_it_is(tmp_path, name, content, kind):
    """A workbook or a compressed file under a text file's name: what it is, and what to do."""
    if content is None:
        pytest.importorskip("openpyxl")         # pandas' writer of the workbook
        frame = _mixed_frame(n=10)
        frame.to_excel(tmp_path / "book.xlsx", index=False)
        content = (tmp_path / "book.xlsx").read_bytes()
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError, match=f"'.*{re.escape(name)}' is {kind}.*not delimited "
                                         "text: name the file by its kind"):
        read_csv(tmp_path / name)
    (tmp_path / "text.csv").write_bytes(b"PAR1,BZh,label\n1,2,0\n3,4,1\n")   # text: read
    assert read_csv(tmp_path / "text.csv").X.shape == (2, 2)


def test_a_semicolon_file_with_decimal_points_is_read_as_numbers(tmp_path):
    """UCI's bank marketing files: ';'-separated, quoted text, decimal points (93.994 is a
    price index, not 93 994)."""
    path = tmp_path / "bank-additional.csv"
    path.write_text('"age";"job";"cons.price.idx";"euribor3m";"y"\n'
                    '56;"housemaid";93.994;4.857;"no"\n57;"services";93.994;4.857;"no"\n'
                    '37;"services";92.893;1.313;"yes"\n40;"admin.";94.465;4.961;"no"\n')
    data = read_csv(path)
    assert data.note == ("label 'y' coded no=0, yes=1; 3 numeric columns standardized; 1 "
                         "text column one-hot encoded into 3")
    price = np.array([93.994, 93.994, 92.893, 94.465])
    np.testing.assert_allclose(data.X.toarray()[:, 1], (price - price.mean()) / price.std())


def test_numbers_with_thousands_separators_are_numbers(tmp_path):
    """Spreadsheets save formatted cells as shown: "1,234.5" in a comma file, "1.234,5" or
    "1 234,5" in a semicolon file with decimal commas; a column that also holds other text
    stays text."""
    (tmp_path / "comma.csv").write_text('n,code,label\n"1,234.5",1-2,0\n12,"1,2",1\n'
                                        '"-3,000",3,1\n,x,0\n')
    (tmp_path / "semi.csv").write_text("n;code;label\n1.234,5;1-2;0\n12;1.2;1\n"
                                       "-3 000;3;1\n;x;0\n")
    for name in ("comma", "semi"):
        data = read_csv(tmp_path / f"{name}.csv")
        assert data.note == ("label 'label'; 1 numeric column standardized (1 missing "
                             "value(s) in 1 of them set to the column's median, 1 0/1 column "
                             "marking where) (1 written with thousands separators); 1 text "
                             "column one-hot encoded into 4"), name
        n = np.array([1234.5, 12.0, -3000.0, 12.0])          # the median fills the gap
        np.testing.assert_allclose(data.X.toarray()[:, 0], (n - n.mean()) / n.std())


def test_missing_numbers_are_imputed_by_the_median_and_marked(tmp_path):
    """Empty fields, NA and the UCI repository's ? are missing values: in a numeric column
    the column's median takes their place before standardizing, and a 0/1 column per such
    column marks the rows; in a text column they are a category of their own; a column
    without a value is left out."""
    path = tmp_path / "gaps.csv"
    path.write_text("age,hours,none,city,label\n20,1,,Oslo,a\n,2,,?,b\n40,NA,,Lyon,a\n"
                    " ?,4,,Oslo,b\n30,5,,Lyon,a\n")
    data = read_csv(path)
    X = data.X.toarray()
    filled = np.array([[20, 1], [30, 2], [40, 3], [30, 4], [30, 5]], float)
    np.testing.assert_allclose(X[:, :2], (filled - filled.mean(0)) / filled.std(0))
    np.testing.assert_array_equal(X[:, 2:4], [[0, 0], [1, 0], [0, 1], [1, 0], [0, 0]])
    np.testing.assert_array_equal(X[:, 4:], [[0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0],
                                             [1, 0, 0]])      # Lyon, Oslo, missing
    assert data.note == ("label 'label' coded a=0, b=1; 1 empty column left out; 2 numeric "
                         "columns standardized (3 missing value(s) in 2 of them set to the "
                         "column's median, 2 0/1 columns marking where); 1 text column "
                         "one-hot encoded into 3")
    dense = tmp_path / "numbers.csv"
    dense.write_text("a,b\n1,0\n,1\n3,1\n")
    data = read_csv(dense)
    assert isinstance(data.X, np.ndarray) and data.X.shape == (3, 2)
    np.testing.assert_allclose(data.X[:, 0], [-1.224744871, 0, 1.224744871], atol=1e-9)
    np.testing.assert_array_equal(data.X[:, 1], [0, 1, 0])


def test_a_split_is_encoded_by_encoders_fit_on_its_training_rows(tmp_path):
    """Medians, means and scales, categories and vocabularies come from the training rows
    alone (as in a scikit-learn pipeline): a test row's category or word unseen in training
    encodes to zeros, its number is scaled by the training rows' mean and deviation, and
    the columns marking gaps are those of the file."""
    path = tmp_path / "split.csv"
    path.write_text("age,height,city,review,label\n"
                    "20,1.5,Oslo,good plot fine actor,a\n,1.6,Lyon,bad plot dull actor,b\n"
                    "40,1.7,Oslo,good film long fun,a\n30,1.8,Lyon,dull film bad end,b\n"
                    "90,,Turin,good good great plot,a\n10,2.0,Rome,unseen words only here,b\n")
    data = read_csv(path)
    X_train, X_test = data.encode(np.arange(4), np.array([4, 5]))
    assert sp.issparse(X_train) and X_train.format == "csr" and sp.issparse(X_test)
    X_train, X_test = X_train.toarray(), X_test.toarray()
    age = np.array([20, 30, 40, 30])                 # the training median fills row 1
    mean, std = age.mean(), age.std()
    np.testing.assert_allclose(X_train[:, 0], (age - mean) / std)
    np.testing.assert_allclose(X_test[:, 0], (np.array([90, 10]) - mean) / std)
    height = np.array([1.5, 1.6, 1.7, 1.8])
    np.testing.assert_allclose(X_test[:, 1], (np.array([np.median(height), 2.0])
                                              - height.mean()) / height.std())
    # gaps: age's in training, height's in the test rows only; both columns are marked
    np.testing.assert_array_equal(X_train[:, 2:4], [[0, 0], [1, 0], [0, 0], [0, 0]])
    np.testing.assert_array_equal(X_test[:, 2:4], [[0, 1], [0, 0]])
    np.testing.assert_array_equal(X_train[:, 4:6], [[0, 1], [1, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(X_test[:, 4:6], 0)    # Turin and Rome: unseen in training
    assert X_test[1, 6:].sum() == 0                     # only unseen words
    assert X_train.shape[1] == X_test.shape[1] == 6 + 10    # the training rows' 10 words
    assert data.X.shape[1] == 2 + 2 + 4 + 15            # the l1 tables': every row's


def test_a_column_of_codes_mostly_numbers_is_text(tmp_path):
    """Titanic's tickets (``113803``, ``A/5 21171``, ``PC 17599``, ...): numbers beside many
    distinct other values are codes, one-hot encoded, where a few distinct other words
    (``-``, ``n.a.``) mark missing numbers: read as missing, imputed and marked, and said."""
    tickets = ["113803", "A/5 21171", "PC 17599", "349909", "STON/O2. 3101282", "330877",
               "17463", "W./C. 6608", "248738", "2649"]
    frame = pd.DataFrame({"ticket": tickets, "fare": np.arange(10.0) ** 2, "label": [0, 1] * 5})
    path = tmp_path / "tickets.csv"
    frame.to_csv(path, index=False)
    data = read_csv(path)
    assert data.note == ("label 'label'; 1 numeric column standardized; 1 text column "
                         "one-hot encoded into 10")
    frame["ticket"] = ["113803", "-", "n.a.", "349909", "-", "330877", "17463", "248738",
                       "2649", "--"]
    frame.to_csv(path, index=False)
    data = read_csv(path)
    assert data.note == ("label 'label'; 2 numeric columns standardized (4 missing value(s) in "
                         "1 of them set to the column's median, 1 0/1 column marking where) "
                         "(the text '-', '--', 'n.a.' read as missing in 1 of them)")
    tickets = np.array([113803, 0, 0, 349909, 0, 330877, 17463, 248738, 2649, 0], float)
    known = tickets > 0
    tickets[~known] = np.median(tickets[known])
    np.testing.assert_allclose(data.X[:, 0], (tickets - tickets.mean()) / tickets.std())
    np.testing.assert_array_equal(data.X[:, 2], ~known)


def test_marks_of_missing_numbers_in_a_decimal_comma_file(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("a;b;label\n1,5;x;0\n-;y;1\n2,5;x;1\nunknown;y;0\n3,5;x;1\n")
    data = read_csv(path)
    assert data.note.endswith("(the text '-', 'unknown' read as missing in 1 of them); 1 "
                              "text column one-hot encoded into 2")
    a = np.array([1.5, 2.5, 2.5, 2.5, 3.5])                   # the median in the gaps
    np.testing.assert_allclose(data.X[:, 0].toarray().ravel(), (a - a.mean()) / a.std())


def test_columns_without_a_value_are_left_out(tmp_path):
    """Trailing separators (spreadsheets, the SMS spam collection) make columns without a
    value: left out and counted, not imputed and marked."""
    path = tmp_path / "trailing.csv"
    path.write_text("a,b,label,,\n1,x,0,,\n2,y,1,,\n3,x,1,,\n")
    data = read_csv(path, "label")
    assert data.note == ("label 'label'; 2 empty columns left out; 1 numeric column "
                         "standardized; 1 text column one-hot encoded into 2")
    assert data.X.shape == (3, 3)
    path.write_text("a,label\n,0\n,1\n")
    with pytest.raises(ValueError, match="no feature column with a value beside the label"):
        read_csv(path)


def test_a_row_index_is_left_out_and_a_row_counter_warned_about(tmp_path):
    """The unnamed first column pandas' ``to_csv`` writes (0, 1, ...) is left out, with a
    note; a named column numbering the rows (Titanic's ``PassengerId``) stays a feature,
    with a warning."""
    frame = _mixed_frame(n=30)
    frame.insert(0, "PassengerId", np.arange(1, 31))
    path = tmp_path / "indexed.csv"
    frame.to_csv(path)                                    # the index too, unnamed
    with pytest.warns(UserWarning, match="'PassengerId' numbers the rows 1..30"):
        data = read_csv(path)
    assert data.X.shape == (30, 4 + 3)
    assert data.note == ("label 'income' coded <=50K=0, >50K=1; the unnamed column "
                         "'Unnamed: 0' left out (the row index 0, 1, ... that pandas' to_csv "
                         "and to_excel write); 4 numeric columns standardized; 1 text column "
                         "one-hot encoded into 3")
    frame.index = frame.index[::-1]                       # not a row index: kept
    frame.to_csv(path)
    with pytest.warns(UserWarning, match="PassengerId"):
        assert read_csv(path).X.shape == (30, 5 + 3)
    frame.reset_index(drop=True).iloc[:5].to_csv(path)    # a few rows: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_csv(path).note.split("; ")[1].startswith("the unnamed column")


def test_leading_comment_lines_of_uci_files_are_skipped(tmp_path):
    """UCI's ``adult.test`` opens with ``|1x3 Cross validator``: lines starting with ``|``
    above the data are comments, skipped, and a file under another name is still told a
    table by its first data line; errors count the file's lines with them."""
    path = tmp_path / "adult.test"
    path.write_text("|1x3 Cross validator\n| another\n39, State-gov, 1, <=50K.\n"
                    "50, Private, 2, >50K.\n38, Private, 3, <=50K.\n")
    assert reads_as_table(path)
    data = read_csv(path)
    assert data.X.shape[0] == 3 and data.y.tolist() == [0, 1, 0]
    assert data.label_names.tolist() == ["<=50K.", ">50K."]
    path.write_text("|1x3 Cross validator\n39, State-gov, 1, <=50K\n50, Private, 2,\n")
    with pytest.raises(ValueError, match="misses 1 value.*first on line 3"):
        read_csv(path)


@pytest.mark.parametrize("content, label, match", [
    ("", None, "cannot read .*No columns to parse"),
    ("a,b\n1,2\n3,4\n", "c", r"no label column 'c' .* its 2 columns: 'a', 'b'"),
    ("a,b\n1,2\n3,4\n", "7", "no label column '7'"),
    ("only\n1\n2\n", None, "a label column and at least one feature column are needed"),
    ("a,b,label\n", None, "no data rows after the header"),
    ("a,b\n1,x\n2,\n3,y\n", None, "the label column 'b' misses 1 value.*first on line 3"),
    # the line in the file: pandas leaves blank lines out, a quoted cell may hold newlines
    ("a,b\n1,x\n\n2,\n3,y\n", None, "the label column 'b' misses 1 value.*first on line 4"),
    ('a,b\n1,"x\ny"\n  \n2,\n3,y\n', None, "'b' misses 1 value.*first on line 5"),
    # a cell over the csv module's default size limit (131,072 characters)
    ("a,b\n" + "w" * 200_000 + ",x\n\n2,\n3,y\n", None, "'b' misses 1 value.*first on line 4"),
    ("a,b\n1,2\n2,inf\n3,2\n", None, "the label column 'b' holds inf on line 3, not a"),
    ("a,b\n1,x\ninf,y\n", None, "the numeric column 'a' holds values too large"),
    ("a,b\n1e308,x\n-1e308,y\n", None, "the numeric column 'a' holds values too large"),
    ("1,x\ninf,y\n2,x\n", None, "the numeric column 0 holds values too large"),   # no header
    ("a,b\n-1e308,x\n-1e308,y\n,x\n", None, "the numeric column 'a' holds values too large"),
    ("a,b\n1 2 3,0\n4 5 6,1\n", None, "the free-text column 'a': empty vocabulary"),
])
def test_a_bad_file_is_a_clear_error(tmp_path, content, label, match):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        read_csv(path, label)


@pytest.mark.parametrize("limit", [131_072, 10, 2**31 - 1])
def test_the_lines_named_do_not_depend_on_the_csv_modules_limit(tmp_path, limit):
    # the csv module's limit on a cell's size is the process's: SciPy's ARFF reader raises
    # it for good, so that the line named depended on what the process had read before
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n" + "w" * 200_000 + ",x\n\n2,\n3,y\n")
    saved = csv.field_size_limit(limit)
    try:
        with pytest.raises(ValueError, match="'b' misses 1 value.*first on line 4"):
            read_csv(path)
        assert csv.field_size_limit() == limit
    finally:
        csv.field_size_limit(saved)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=re.escape(f"cannot read {str(tmp_path / 'no.csv')!r}")):
        read_csv(tmp_path / "no.csv")


def test_without_pandas_the_error_says_how_to_get_it(tmp_path, monkeypatch):

    monkeypatch.setitem(sys.modules, "pandas", None)        # as if it were not installed
    with pytest.raises(ValueError, match="needs pandas: pip install pandas"):
        read_csv(tmp_path / "a.csv")


ARFF = """% Weka's format: comments, quoted names and values, ? for a missing value
@RELATION flowers

@ATTRIBUTE length\tREAL
@ATTRIBUTE 'leaf width' NUMERIC
@ATTRIBUTE colour {red,'light blue'}
@ATTRIBUTE class {setosa,virginica}

@DATA
5.1,3.5,red,setosa
% a comment between rows
4.9,?,'light blue',virginica
4.7,3.2,?,virginica

4.6,3.1,red,setosa
"""


def test_arff_files_are_read_with_their_attribute_names_and_nominal_values(tmp_path):
    path = tmp_path / "flowers.arff"
    path.write_text(ARFF)
    data = read_csv(path)
    assert data.note == ("label 'class' coded setosa=0, virginica=1; 2 numeric columns "
                         "standardized (1 missing value(s) in 1 of them set to the column's "
                         "median, 1 0/1 column marking where); 1 text column one-hot encoded "
                         "into 3")
    np.testing.assert_array_equal(data.y, [0, 1, 1, 0])
    X = data.X.toarray()
    length = np.array([5.1, 4.9, 4.7, 4.6])
    np.testing.assert_allclose(X[:, 0], (length - length.mean()) / length.std())
    np.testing.assert_array_equal(X[:, 2], [0, 1, 0, 0])             # the marked gap
    np.testing.assert_array_equal(X[:, 3:], [[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]])
    assert read_csv(path, label="0").note.startswith("label 'length'")
    # a missing label is named by its line in the file, past the comment and blank lines
    for label, line in (("leaf width", 12), ("colour", 13)):
        with pytest.raises(ValueError, match=f"misses 1 value.*the first on line {line};"):
            read_csv(path, label=label)


def test_an_arff_nominal_attribute_of_numbers_is_categories(tmp_path):
    """Weka declares ``{1,2,3}`` a nominal attribute: its codes are one-hot encoded (a
    missing one a category of its own), not read as numbers, nor as numbers written with
    thousands separators."""
    path = tmp_path / "grades.arff"
    path.write_text("@relation t\n@attribute a numeric\n@attribute grade {1,2,3}\n"
                    "@attribute class {yes,no}\n@data\n1.5,1,yes\n2.5,2,no\n3.5,?,yes\n"
                    "4.5,3,no\n")
    data = read_csv(path)
    assert data.note == ("label 'class' coded no=0, yes=1; 1 numeric column standardized; "
                         "1 text column one-hot encoded into 4")
    np.testing.assert_array_equal(data.X.toarray()[:, 1:], [[1, 0, 0, 0], [0, 1, 0, 0],
                                                            [0, 0, 0, 1], [0, 0, 1, 0]])


@pytest.mark.parametrize("content, match", [
    ("@relation r\n@attribute a numeric\n@attribute c {x,y}\n@data\n{0 1,1 y}\n",
     "sparse ARFF rows"),
    ("@relation r\n@attribute a numeric\n1\n", "no @data line"),
    ("@relation r\n@attribute a\n@data\n1\n", "cannot read the attribute line"),
])
def test_an_arff_file_it_cannot_read_is_a_clear_error(tmp_path, content, match):
    path = tmp_path / "bad.arff"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        read_csv(path)


def _typed_frame(n=40):
    """A table as a Parquet file keeps it: nullable integers and booleans with gaps, a
    category, a pandas string column of free text, dates and text labels."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({
        "age": pd.array(rng.integers(18, 80, n), dtype="Int64"),
        "member": pd.array(rng.random(n) < 0.5, dtype="boolean"),
        "city": pd.Categorical(rng.choice(["Oslo", "Lyon", "Turin"], n)),
        "joined": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 900, n), "D"),
        "review": pd.array([" ".join(rng.choice(["good", "slow", "cheap", "kind"], 4))
                            for _ in range(n)], dtype="string"),
        "churn": pd.Categorical(rng.choice(["yes", "no"], n)),
    })
    frame.loc[3, "age"] = pd.NA
    frame.loc[5, "member"] = pd.NA
    return frame


def test_parquet_files_are_read_with_their_columns_types(tmp_path):
    pytest.importorskip("pyarrow")
    frame = _typed_frame()
    path = tmp_path / "churn.parquet"
    frame.to_parquet(path)
    assert is_table(path) and reads_as_table(path) and is_table("b.PARQUET")
    data = read_csv(path)
    assert data.note == ("label 'churn' coded no=0, yes=1; 3 numeric columns standardized "
                         "(2 missing value(s) in 2 of them set to the column's median, "
                         "2 0/1 columns marking where) (1 of dates or durations, in seconds); "
                         "1 text column one-hot encoded into 3; 1 free-text column as TF-IDF "
                         "over 4 words")
    np.testing.assert_array_equal(data.y, (frame["churn"] == "yes").astype(int))
    X = data.X.toarray()
    age = frame["age"].to_numpy(float, na_value=np.nan)
    age[3] = np.nanmedian(age)
    np.testing.assert_allclose(X[:, 0], (age - age.mean()) / age.std(), atol=1e-12)
    days = (frame["joined"] - frame["joined"].min()).dt.days.to_numpy(float)
    np.testing.assert_allclose(X[:, 2], (days - days.mean()) / days.std(), atol=1e-12)
    np.testing.assert_array_equal(X[:, 3:5], np.c_[np.arange(40) == 3, np.arange(40) == 5])
    for k, city in enumerate(["Lyon", "Oslo", "Turin"]):
        np.testing.assert_array_equal(X[:, 5 + k], frame["city"] == city)
    # the same table written as CSV reads to the same matrix, its ISO dates as seconds too
    frame.loc[5, "member"] = False                  # (a CSV's boolean column has no gap)
    frame.to_parquet(path)
    frame.to_csv(tmp_path / "churn.csv", index=False)
    as_csv = read_csv(tmp_path / "churn.csv")
    assert "(1 of dates or durations, in seconds)" in as_csv.note
    np.testing.assert_allclose(as_csv.X.toarray(), read_csv(path).X.toarray(), atol=1e-12)


def test_iso_dates_in_text_columns_are_seconds(tmp_path):
    """A CSV column whose every value is an ISO 8601 date (a time and an offset optional, a
    gap missing) is read as seconds since its first, as a typed date column is (it was
    one-hot encoded as an identifier, one column a date); a column with one value that is
    not a date, or a day that does not exist, stays text."""
    n = 30
    when = pd.date_range("2023-03-01", periods=n, freq="7D")
    frame = pd.DataFrame({"when": when.strftime("%Y-%m-%d"), "x": np.arange(n) % 4,
                          "y": np.arange(n) % 2})
    frame.loc[4, "when"] = ""
    frame.to_csv(tmp_path / "dated.csv", index=False)
    data = read_csv(tmp_path / "dated.csv")
    assert data.note == ("label 'y'; 2 numeric columns standardized (1 missing value(s) in 1 "
                         "of them set to the column's median, 1 0/1 column marking where) "
                         "(1 of dates or durations, in seconds)")
    days = np.arange(n, dtype=float) * 7
    days[4] = np.median(np.delete(days, 4))
    np.testing.assert_allclose(data.X[:, 0], (days - days.mean()) / days.std(), atol=1e-12)
    stamps = ["2023-03-01T08:00:00Z", "2023-03-01 10:30+02:00", "2023-03-02T00:00:00.5"]
    frame = pd.DataFrame({"when": stamps * 10, "y": [0, 1, 1] * 10})
    frame.to_csv(tmp_path / "stamps.csv", index=False)
    seconds = np.array([8 * 3600, 8.5 * 3600, 24 * 3600 + 0.5] * 10) - 8 * 3600
    np.testing.assert_allclose(read_csv(tmp_path / "stamps.csv").X[:, 0],
                               (seconds - seconds.mean()) / seconds.std(), atol=1e-12)
    frame = pd.DataFrame({"when": when.strftime("%m/%d/%Y"), "y": np.arange(n) % 2})
    frame.to_csv(tmp_path / "us.csv", index=False)          # day and month either way round
    with pytest.warns(UserWarning, match=r"the text column 'when' has 30 distinct values in "
                                         r"30 rows \(dates such as '03/01/2023'\? only ISO "
                                         r"8601 dates, 2024-03-01, are read as seconds"):
        assert "text column one-hot encoded into 30" in read_csv(tmp_path / "us.csv").note
    for odd in ("soon", "2023-02-30"):
        frame = pd.DataFrame({"when": ["2023-03-01", odd, "2023-03-03"] * 4,
                              "y": [0, 1, 1] * 4})
        frame.to_csv(tmp_path / "odd.csv", index=False)
        assert "text column one-hot encoded into 3" in read_csv(tmp_path / "odd.csv").note


def test_a_parquet_test_file_is_read_by_column_names(tmp_path):
    pytest.importorskip("pyarrow")
    frame = _typed_frame()
    frame.iloc[:30].to_parquet(tmp_path / "train.parquet")
    frame.iloc[30:, ::-1].to_parquet(tmp_path / "test.parquet")      # columns in any order
    both = read_csv(tmp_path / "train.parquet", "churn", test=tmp_path / "test.parquet")
    assert both.n_train == 30
    frame.to_parquet(tmp_path / "all.parquet")
    whole = read_csv(tmp_path / "all.parquet", "churn")
    np.testing.assert_allclose(both.X.toarray(), whole.X.toarray(), atol=1e-12)
    parts = tmp_path / "parts"                       # a table's parts, as dask writes them
    parts.mkdir()
    frame.iloc[:20].to_parquet(parts / "part.0.parquet")
    frame.iloc[20:].to_parquet(parts / "part.1.parquet")
    (tmp_path / "empty").mkdir()
    assert is_table(parts) and not is_table(tmp_path / "empty")
    np.testing.assert_allclose(read_csv(parts, "churn").X.toarray(), whole.X.toarray(),
                               atol=1e-12)
    missing = frame.iloc[30:].copy()
    missing.loc[36, "churn"] = np.nan
    missing.to_parquet(tmp_path / "gap.parquet")
    with pytest.raises(ValueError, match=r"'churn' misses 1 value\(s\), the first on row 6;"):
        read_csv(tmp_path / "train.parquet", "churn", test=tmp_path / "gap.parquet")


def test_a_parquet_file_it_cannot_read_is_a_clear_error(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")

    path = tmp_path / "table.parquet"
    path.write_text("a,b\n1,2\n")                           # a CSV file under the name
    with pytest.raises(ValueError, match="cannot read .*table.parquet' as Parquet: .*magic"):
        read_csv(path)
    with pytest.raises(ValueError, match="cannot read .*no.parquet': no such file"):
        read_csv(tmp_path / "no.parquet")
    _typed_frame().to_parquet(path)
    for module in ("pyarrow", "fastparquet"):                # as if neither were installed
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ValueError, match="needs pyarrow: pip install pyarrow"):
        read_csv(path)


def test_a_hive_partitioned_parquet_table_is_read_with_its_partition_column(tmp_path):
    """A table written by partitions (``year=2024/...parquet``, as Spark and pandas'
    ``partition_cols`` write it): its partition column reads back as categories of
    numbers, which are one-hot encoded as any category column (they crashed the reader's
    conversion to text)."""
    pytest.importorskip("pyarrow")
    frame = _typed_frame().assign(year=np.tile([2023, 2024], 20))
    frame.to_parquet(tmp_path / "table", partition_cols=["year"])
    assert is_table(tmp_path / "table")
    data = read_csv(tmp_path / "table", "churn")
    assert isinstance(pd.read_parquet(tmp_path / "table")["year"].dtype, pd.CategoricalDtype)
    assert "2 text columns one-hot encoded into 5" in data.note      # city's 3, year's 2
    years = data.X.toarray()[:, -6:-4]          # year's columns, before review's 4 words
    np.testing.assert_array_equal(years.sum(axis=1), 1)
    np.testing.assert_array_equal(years.sum(axis=0), [20, 20])


def test_parquet_decimals_are_numbers_and_nested_columns_are_left_out(tmp_path):
    """Parquet's decimal numbers (prices) are numbers, not text of as many categories;
    a column of lists or records, which no model takes, is left out with a warning."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from decimal import Decimal

    rng = np.random.default_rng(2)
    prices = rng.uniform(1, 100, 40).round(2)
    pq.write_table(pa.table({
        "price": pa.array([Decimal(f"{p:.2f}") for p in prices], pa.decimal128(10, 2)),
        "tags": pa.array([["a", "b"][:k] for k in rng.integers(0, 3, 40)]),
        "label": pa.array(rng.integers(0, 2, 40)),
    }), tmp_path / "shop.parquet")
    with pytest.warns(UserWarning, match="'tags' hold lists or records .*: left out"):
        data = read_csv(tmp_path / "shop.parquet")
    assert data.note == "label 'label'; 1 numeric column standardized"
    np.testing.assert_allclose(data.X[:, 0], (prices - prices.mean()) / prices.std())


def _records(n=30):
    rng = np.random.default_rng(4)
    return [{"size": float(rng.integers(1, 500)),
             "text": " ".join(rng.choice(["tool", "game", "library", "font", "data"], 4)),
             "tags": ["a", "b"][: int(rng.integers(0, 3))],
             "section": str(rng.choice(["games", "libs"]))} for _ in range(n)]


def test_json_records_are_read_one_per_line_or_in_an_array(tmp_path):
    """JSON Lines (``.jsonl``, also compressed) and an array of records (``.json``): the
    fields are the columns, a field a record lacks is missing there, lists are left out
    with a warning; a missing label is named by its line."""
    import json

    records = _records()
    del records[5]["size"]                                 # a field one record lacks
    lines = "\n".join(json.dumps(r) for r in records) + "\n"
    (tmp_path / "pkgs.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    (tmp_path / "pkgs.json").write_text(json.dumps(records))
    assert is_table("a.jsonl") and is_table("a.NDJSON.xz") and is_table("a.json")
    read = []
    for name in ("pkgs.jsonl.gz", "pkgs.json"):
        with pytest.warns(UserWarning, match="'tags' hold lists or records"):
            read.append(read_csv(tmp_path / name))
    for data in read:
        assert data.note.startswith("label 'section' coded games=0, libs=1; 1 numeric column "
                                    "standardized (1 missing value(s) in 1 of them")
        np.testing.assert_array_equal(data.y, [r["section"] == "libs" for r in records])
    np.testing.assert_allclose(read[0].X.toarray(), read[1].X.toarray())
    records[7].pop("section")
    (tmp_path / "gap.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    with pytest.raises(ValueError, match="the first on line 8;"):
        read_csv(tmp_path / "gap.jsonl")


def _fasttext_lines(rng, n, several=False):
    """Lines of fastText's format: a review's words and its label, or (``several``) the
    labels of its one to three topics, first or last on the line."""
    topics = {t: [f"{t}{i}" for i in range(12)] for t in ("sport", "music", "food", "film")}
    lines = []
    for i in range(n):
        chosen = list(rng.choice(list(topics), rng.integers(1, 4) if several else 1,
                                 replace=False))
        words = " ".join(w for t in chosen for w in rng.choice(topics[t], 3)) + f", take{i}"
        labels = " ".join(f"__label__{t}" for t in chosen)
        lines.append(f"{words} {labels}" if several and i % 5 == 0 else f"{labels} {words}")
    return lines


def test_fasttext_files_are_free_text_and_their_labels(tmp_path):
    """A file in fastText's format (``__label__`` tokens; any name, compressed too, commas
    in its text) is read as a free-text column, as TF-IDF, and its labels; several labels
    on a line make label sets, a label anywhere on the line; blank lines are skipped, and
    a line without a label is named by its number, the first line too."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from sparsekit.benchmarks._data import load_dataset

    rng = np.random.default_rng(5)
    lines = _fasttext_lines(rng, 40)
    (tmp_path / "reviews.train").write_bytes(gzip.compress(
        ("\n".join(lines[:30]) + "\n\n").encode()))
    (tmp_path / "reviews.train").rename(tmp_path / "reviews.train.gz")
    (tmp_path / "reviews.valid").write_text("\n".join(lines[30:]) + "\n")
    assert reads_as_table(tmp_path / "reviews.valid") and not is_table("reviews.valid")
    data = read_csv(tmp_path / "reviews.train.gz")
    texts = [" ".join(t for t in line.split() if not t.startswith("__label__"))
             for line in lines[:30]]
    expected = TfidfVectorizer().fit_transform(texts)
    np.testing.assert_allclose(data.X.toarray(), expected.toarray())
    assert [data.label_names[code] for code in data.y] == [line.split()[0][9:]
                                                           for line in lines[:30]]
    assert data.note.startswith("label '__label__' coded film=0, food=1, music=2, sport=3; "
                                "1 free-text column as TF-IDF over")
    held = load_dataset(str(tmp_path / "reviews.train.gz"), test=str(tmp_path /
                                                                     "reviews.valid"))
    assert held.X.shape[0] == 30 and held.test.X.shape[0] == 10
    sets = _fasttext_lines(rng, 30, several=True)
    (tmp_path / "topics.txt").write_text("\n".join(sets) + "\n")
    data = read_csv(tmp_path / "topics.txt")
    assert data.y.shape == (30, 4) and list(data.label_names) == ["film", "food", "music",
                                                                  "sport"]
    for row, line in zip(sp.csr_matrix(data.y).toarray(), sets):
        assert {data.label_names[j] for j in np.flatnonzero(row)} == {
            t[9:] for t in line.split() if t.startswith("__label__")}
    (tmp_path / "gap.txt").write_text("\n".join(lines[:3]) + "\n\nno label here\n")
    with pytest.raises(ValueError, match="the label column '__label__' misses 1 value.*the "
                                         "first on line 5;"):
        read_csv(tmp_path / "gap.txt")
    (tmp_path / "head.txt").write_text("no label here\n" + "\n".join(lines[:3]) + "\n")
    with pytest.raises(ValueError, match="the label column '__label__' misses 1 value.*the "
                                         "first on line 1;"):
        read_csv(tmp_path / "head.txt")


@pytest.mark.parametrize("content, match", [
    ('{"a": 1, "b": 2}\n{"a": 2, "b":\n', "cannot read .* as JSON"),
    ("[[1, 2], [3, 4]]", "not a table of records with named fields"),
    ('{"a": 1, "b": 2}\ntrue\n{"a": 2, "b": 3}\n', "'.*bad.jsonl': line 2 is not a record"),
    ('{"a": 1}\n\n{"a": 2}\nnull\n', "'.*bad.jsonl': line 4 is not a record"),
    ('{"a": 1, "b": 2}\n-\n', "'.*bad.jsonl': line 2 is not a record"),   # not JSON
    ('[{"a": 1, "b": 2}, {"a": 2, "b": 3}, 5]', "'.*bad.json': record 2 is not a record"),
])
def test_a_json_file_it_cannot_read_is_a_clear_error(tmp_path, content, match):
    path = tmp_path / ("bad.jsonl" if content.startswith("{") else "bad.json")
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        read_csv(path)


def test_columns_named_by_drop_are_left_out(tmp_path):
    frame = _mixed_frame()
    path = tmp_path / "adult.csv"
    frame.to_csv(path, index=False)
    for drop in (["city", "hours"], ["3", "1"], ["city", "3", "hours"]):   # names, positions
        data = read_csv(path, drop=drop)
        assert data.note.startswith("label 'income' coded <=50K=0, >50K=1; 'city', 'hours' "
                                    "left out, as asked; 2 numeric columns standardized")
        assert isinstance(data.X, np.ndarray) and data.X.shape == (12, 2)   # no text left
    with pytest.raises(ValueError, match="no column to leave out 'town'"):
        read_csv(path, drop=["town"])
    with pytest.raises(ValueError, match="the label column 'income' cannot be left out"):
        read_csv(path, drop=["income"])


def test_a_wide_table_reads_without_pandas_warnings(tmp_path):
    """150 numeric columns and a text one: the typed frame was grown a column at a time,
    and pandas warned "DataFrame is highly fragmented" once per column past the 100th."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((20, 150)), columns=[f"c{j}" for j in range(150)])
    frame["town"] = np.array(["a", "b"])[np.arange(20) % 2]
    frame["label"] = np.arange(20) % 2
    frame.to_csv(tmp_path / "wide.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = read_csv(tmp_path / "wide.csv")
    assert data.X.shape == (20, 152) and data.note.startswith("label 'label'; 150 numeric")


def _workbook(path, sheets, title=None, engine=None):
    """Write ``sheets`` ({name: frame}) to the workbook ``path`` without the index, the
    first sheet's table below a ``title`` line and a blank line, one column right of the
    sheet's edge, and a blank row in the middle of its table."""
    with pd.ExcelWriter(path, engine=engine) as writer:
        for k, (name, frame) in enumerate(sheets.items()):
            if k == 0 and title is not None:        # the sheet's cells, row by row
                rows = [[None, *frame.columns]] + [
                    [None, *(None if pd.isna(v) else v for v in row)]
                    for row in frame.astype(object).itertuples(index=False)]
                blank = [None] * len(rows[0])
                rows = [[title, *blank[1:]], blank] + rows[:11] + [blank] + rows[11:]
                pd.DataFrame(rows).to_excel(writer, sheet_name=name, index=False,
                                            header=False)
            else:
                frame.to_excel(writer, sheet_name=name, index=False)


@pytest.mark.parametrize("ending, engine", [(".xlsx", "openpyxl"), (".ods", "odf")])
def test_a_workbooks_sheet_is_read_as_its_csv_file(tmp_path, ending, engine):
    """A sheet below a title, with a blank row, at a column from the sheet's edge, reads
    to the matrix of the same table written as CSV; its dates are seconds (as Parquet's);
    other sheets are warned about; a missing label is named by the sheet's row."""
    pytest.importorskip("python_calamine")
    pytest.importorskip(engine)
    frame = _typed_frame()
    frame["member"] = frame["member"].astype("Float64")     # a CSV's 0/1 (a bool's gap: text)
    path = tmp_path / f"churn{ending}"
    _workbook(path, {"Customers": frame, "Notes": pd.DataFrame({"n": ["by hand"]})},
              title="Churn, 2024", engine=engine)
    assert is_table(path) and reads_as_table(path) and is_table("b.XLSX")
    with pytest.warns(UserWarning, match=r"holds 2 sheets \('Customers', 'Notes'\): the "
                                         "first, 'Customers', is read; --sheet names"):
        data = read_csv(path)
    assert data.note.startswith("sheet 'Customers' (rows 1-2 above its table left out); "
                                "label 'churn' coded no=0, yes=1; 3 numeric columns "
                                "standardized (2 missing value(s)")
    assert "(1 of dates or durations, in seconds)" in data.note
    X = data.X.toarray()
    days = (frame["joined"] - frame["joined"].min()).dt.days.to_numpy(float)
    np.testing.assert_allclose(X[:, 2], (days - days.mean()) / days.std(), atol=1e-12)
    frame.to_csv(tmp_path / "churn.csv", index=False)            # its dates: ISO text
    np.testing.assert_allclose(X, read_csv(tmp_path / "churn.csv").X.toarray(), atol=1e-12)
    frame.loc[12, "churn"] = np.nan
    _workbook(path, {"Customers": frame}, title="Churn, 2024", engine=engine)
    # rows 1-2 the title, 3 the header, 4-13 frame rows 0-9, 14 blank, 15 frame row 10
    with pytest.raises(ValueError, match=r"misses 1 value\(s\), the first on row 17 of "
                                         "sheet 'Customers';"):
        read_csv(path)


def test_a_workbooks_sheet_is_named_or_numbered_and_a_test_sheet_matched(tmp_path):
    """``sheet`` names a sheet (a hidden one too) or numbers it from 0 among the sheets
    shown (no warning then; the first shown by default); a sheet without a header has its
    columns numbered, as a CSV file's; a test workbook is read as a test CSV file (by
    column names, the same sheet or ``test_sheet``: another sheet of the data workbook too,
    its own sheet warned about, as a CSV file tested on itself); a sheet with no table, or
    none of that name, is a clear error naming the sheets shown."""
    pytest.importorskip("python_calamine")
    pytest.importorskip("openpyxl")
    frame = _mixed_frame(40)
    path = tmp_path / "adult.xlsx"
    _workbook(path, {"Notes": pd.DataFrame(columns=["note", "author"]), "2024": frame,
                     "empty": pd.DataFrame()})
    frame.to_csv(tmp_path / "adult.csv", index=False)
    csv = read_csv(tmp_path / "adult.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sheet in ("2024", "1"):                  # a name first, then a position
            data = read_csv(path, sheet=sheet)
            assert data.note == f"sheet '2024'; {csv.note}"
            np.testing.assert_allclose(data.X.toarray(), csv.X.toarray(), atol=1e-12)
    import openpyxl

    book = openpyxl.load_workbook(path)
    book["Notes"].sheet_state = "hidden"                   # as a workbook's tab can be
    book.save(path)
    with pytest.warns(UserWarning, match=r"holds 2 sheets \('2024', 'empty'\): the first"):
        assert read_csv(path).note == f"sheet '2024'; {csv.note}"
    assert read_csv(path, sheet="0").note == f"sheet '2024'; {csv.note}"
    for sheet, match in (("2", r"no sheet '2' \(by name or position from 0\); its sheets: "
                                "'2024', 'empty'"),
                         ("empty", "its sheet 'empty' holds no table"),
                         ("Notes", "its sheet 'Notes' holds no data rows after the header")):
        with pytest.raises(ValueError, match=match):
            read_csv(path, sheet=sheet)
    frame.to_excel(tmp_path / "bare.xlsx", header=False, index=False)
    data = read_csv(tmp_path / "bare.xlsx")
    assert data.note.startswith("sheet 'Sheet1'; label 4 coded <=50K=0, >50K=1; 3 numeric")
    frame.to_csv(tmp_path / "bare.csv", header=False, index=False)
    np.testing.assert_allclose(data.X.toarray(), read_csv(tmp_path / "bare.csv").X.toarray(),
                               atol=1e-12)
    frame.to_excel(tmp_path / "indexed.xlsx")             # pandas' index, a first column
    assert "the unnamed column 'Unnamed: 0' left out" in read_csv(tmp_path / "indexed.xlsx").note
    _workbook(tmp_path / "train.xlsx", {"2024": frame.iloc[:30]})
    _workbook(tmp_path / "test.xlsx", {"2024": frame.iloc[30:, ::-1]})  # columns in any order
    both = read_csv(tmp_path / "train.xlsx", test=tmp_path / "test.xlsx", sheet="2024")
    assert both.n_train == 30 and both.test_name == "test.xlsx's sheet '2024'"
    np.testing.assert_allclose(both.X.toarray(), csv.X.toarray(), atol=1e-12)
    book = tmp_path / "book.xlsx"                   # train and test: two sheets of one book
    _workbook(book, {"train": frame.iloc[:30], "test": frame.iloc[30:, ::-1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for test_sheet in ("test", "1"):
            one = read_csv(book, test=book, sheet="train", test_sheet=test_sheet)
            assert one.n_train == 30 and one.test_name == "book.xlsx's sheet 'test'"
            np.testing.assert_allclose(one.X.toarray(), csv.X.toarray(), atol=1e-12)
    for test_sheet in (None, "0", "train"):        # the training sheet itself, however named
        with pytest.warns(UserWarning, match="book.xlsx' is the data file itself, the same "
                                             "sheet: the test accuracies are those of the "
                                             r"training rows \(--test-sheet names another"):
            assert read_csv(book, test=book, sheet="train", test_sheet=test_sheet).n_train == 30
    with pytest.warns(UserWarning, match="adult.csv' is the data file itself: the test "):
        assert read_csv(tmp_path / "adult.csv", test=tmp_path / "adult.csv").n_train == 40


def test_a_workbook_it_cannot_read_is_a_clear_error(tmp_path, monkeypatch):
    pytest.importorskip("python_calamine")

    path = tmp_path / "sales.xlsx"
    for content in (b"a,b\n1,2\n", b"PK\x03\x04" + bytes(500), b""):
        path.write_bytes(content)
        with pytest.raises(ValueError, match="cannot read .*sales.xlsx' as a spreadsheet "
                                             "workbook: "):
            read_csv(path)
    with pytest.raises(ValueError, match="cannot read .*no.ods': no such file"):
        read_csv(tmp_path / "no.ods")
    monkeypatch.setitem(sys.modules, "python_calamine", None)   # as if not installed
    with pytest.raises(ValueError, match="needs python-calamine: pip install python-calamine"):
        read_csv(path)


def _label_set_table(n=40):
    """Features, and five label columns written as spreadsheets and exports write them."""
    import pandas as pd

    rng = np.random.default_rng(5)
    Y = rng.random((n, 5)) < 0.4
    frame = pd.DataFrame({"x": rng.standard_normal(n), "city": rng.choice(["a", "b"], n)})
    frame["toxic"], frame["obscene"] = Y[:, 0].astype(int), Y[:, 1].astype(float)
    frame["insult"] = np.where(Y[:, 2], "Yes", "no")
    frame["threat"], frame["hate"] = Y[:, 3], np.where(Y[:, 4], "TRUE", "false")
    return frame, Y


def test_several_label_columns_are_a_label_set(tmp_path):
    """``--label a,b,c``: 0/1, 1.0/0.0, yes/no, booleans, true/false columns (any case) are
    a label set's indicator columns, named by header or position; the test file's too."""
    frame, Y = _label_set_table()
    frame.to_csv(tmp_path / "t.csv", index=False)
    data = read_csv(tmp_path / "t.csv", label="toxic,obscene,insult,threat,hate")
    assert data.note == ("label sets of the 5 columns 'toxic', 'obscene', 'insult', 'threat', "
                         "'hate'; 1 numeric column standardized; 1 text column one-hot "
                         "encoded into 2")
    np.testing.assert_array_equal(data.y, Y)
    np.testing.assert_array_equal(data.label_names, ["toxic", "obscene", "insult", "threat",
                                                     "hate"])
    by_position = read_csv(tmp_path / "t.csv", label="2, 3,-3 ,-2,-1", drop=["city"])
    np.testing.assert_array_equal(by_position.y, Y)
    assert by_position.X.shape == (40, 1)
    frame[:30].to_csv(tmp_path / "train.csv", index=False)
    frame[30:].to_csv(tmp_path / "test.csv", index=False)
    held = read_csv(tmp_path / "train.csv", label="toxic,obscene,insult,threat,hate",
                    test=tmp_path / "test.csv")
    np.testing.assert_array_equal(held.y, Y)
    assert held.n_train == 30


def test_label_set_columns_refuse_other_values_missing_ones_and_leaving_out(tmp_path):
    frame, _ = _label_set_table()
    frame.loc[6, "insult"] = "maybe"
    frame.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError, match="the label column 'insult' holds 'maybe' on line 8: "
                                         "the columns of a label set hold 0/1, true/false"):
        read_csv(tmp_path / "t.csv", label="toxic,insult")
    with pytest.raises(ValueError, match="the label column 'city' holds '[ab]' on line 2"):
        read_csv(tmp_path / "t.csv", label="toxic,city")
    with pytest.raises(ValueError, match="the label column 'toxic' cannot be left out"):
        read_csv(tmp_path / "t.csv", label="toxic,obscene", drop=["toxic"])
    with pytest.raises(ValueError, match="no label column 'nope'"):
        read_csv(tmp_path / "t.csv", label="toxic,nope")
    frame.loc[3, "obscene"] = np.nan
    frame.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError, match="the label column 'obscene' misses 1 value.*line 5"):
        read_csv(tmp_path / "t.csv", label="toxic,obscene")
    frame.rename(columns={"x": "a,b"}).to_csv(tmp_path / "comma.csv", index=False)
    assert read_csv(tmp_path / "comma.csv", label="a,b").note.startswith("label 'a,b';")


def test_a_column_of_lists_is_a_label_set(tmp_path):
    """JSON records (and Parquet rows) whose label field is a list: label sets (an empty
    list a row without a label), classes when every list holds one label; records are
    refused, and so is such a column among several label columns."""
    import json

    records = _records()
    records[3]["tags"], records[4]["tags"] = [], ["b", "a", "b"]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    data = read_csv(tmp_path / "p.jsonl", label="tags")
    assert data.note.startswith("label 'tags', label sets; 1 numeric column standardized; ")
    np.testing.assert_array_equal(data.label_names, ["a", "b"])
    np.testing.assert_array_equal(data.y.toarray(), [["a" in r["tags"], "b" in r["tags"]]
                                                     for r in records])
    for r in records:
        r["tags"] = [r["section"]]
    (tmp_path / "one.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    data = read_csv(tmp_path / "one.jsonl", label="tags", drop=["section"])
    assert data.note.startswith("label 'tags' coded games=0, libs=1; ")
    np.testing.assert_array_equal(data.y, [r["section"] == "libs" for r in records])
    records[9]["tags"] = [{"a": 1}]
    (tmp_path / "bad.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    with pytest.raises(ValueError, match="the label column 'tags' holds \\[\\{'a': 1\\}\\] on "
                                         "line 10: a label set is a list of labels"):
        read_csv(tmp_path / "bad.jsonl", label="tags")
    with pytest.raises(ValueError, match="holds lists, a label set by itself: name it alone"):
        read_csv(tmp_path / "bad.jsonl", label="tags,section")
    with pytest.warns(UserWarning, match="'tags' hold lists .*left out \\(--label tags reads "
                                         "a column of lists as label sets\\)"):
        assert read_csv(tmp_path / "p.jsonl").note.startswith("label 'section'")


def test_label_sets_written_in_a_text_column(tmp_path):
    """A CSV label column of list literals (pandas' to_csv of a column of lists, JSON's
    lists) or of labels separated by '|' (MovieLens' genres) is read as label sets, as the
    JSON field of lists is; '|' in a few class names that do not recombine stays a class."""
    import json

    import pandas as pd

    records = _records()
    records[3]["tags"] = []
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    expected = read_csv(tmp_path / "p.jsonl", label="tags")
    frame = pd.DataFrame(records)
    frame.to_csv(tmp_path / "lists.csv", index=False)
    frame.assign(tags=frame["tags"].map(json.dumps)).to_csv(tmp_path / "json.csv",
                                                              index=False)
    for name in ("lists.csv", "json.csv"):
        data = read_csv(tmp_path / name, label="tags")
        assert data.note.startswith("label 'tags', label sets written as lists; "), name
        np.testing.assert_array_equal(data.y.toarray(), expected.y.toarray())
        np.testing.assert_array_equal(data.label_names, expected.label_names)
    genres = ["Comedy|Drama", "Drama", "Comedy", "Action|Comedy", "Action", "Drama"] * 5
    frame.iloc[:30].assign(genres=genres).to_csv(tmp_path / "movies.csv", index=False)
    data = read_csv(tmp_path / "movies.csv", label="genres", drop=["tags"])
    assert data.note.startswith("label 'genres', label sets split at '|'; ")
    np.testing.assert_array_equal(data.label_names, ["Action", "Comedy", "Drama"])
    np.testing.assert_array_equal(data.y[:4].toarray(),
                                  [[0, 1, 1], [0, 0, 1], [0, 1, 0], [1, 1, 0]])
    names = ["A|B", "C", "D", "E"] * 7                  # one class name holds a '|'
    frame.iloc[:28].assign(kind=names).to_csv(tmp_path / "kinds.csv", index=False)
    data = read_csv(tmp_path / "kinds.csv", label="kind", drop=["tags"])
    assert data.note.startswith("label 'kind' coded A|B=0, C=1, D=2, E=3; ")
    frame.iloc[:30].assign(one=[[s] for s in ["x", "y", "z"] * 10]).to_csv(
        tmp_path / "one.csv", index=False)
    data = read_csv(tmp_path / "one.csv", label="one", drop=["tags"])
    assert data.note.startswith("label 'one' coded x=0, y=1, z=2; ")
