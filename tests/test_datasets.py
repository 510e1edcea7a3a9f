"""Loaders against the counts of shared/datasets/MANIFEST.md (skipped without the folder)."""
import bz2
import codecs
import gzip
import lzma
import os
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.datasets import (
    get_data_home,
    load_debian,
    load_fasttext,
    load_libsvm,
    load_mnist,
    load_mulan,
    load_xmlrepo,
)
from sparsekit.datasets import (
    make_extreme_softmax_teacher,
    make_ove_toy,
    make_thesis_synthetic,
)
from sparsekit.datasets._home import decode_text, text_encodings
from sparsekit.utils._validation import is_positive_integer

DATA_HOME = Path(
    os.environ.get("SPARSEKIT_DATA")
    or Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
)
needs_data = pytest.mark.skipif(
    not (DATA_HOME / "MANIFEST.md").is_file(), reason=f"no benchmark data at {DATA_HOME}"
)


def test_get_data_home_env_and_explicit(tmp_path, monkeypatch):
    """scikit-learn's convention: explicit folder, else SPARSEKIT_DATA, else
    ~/sparsekit_data (never a path relative to the source tree)."""
    monkeypatch.setenv("SPARSEKIT_DATA", str(tmp_path))
    assert get_data_home() == tmp_path
    assert get_data_home(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("SPARSEKIT_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert get_data_home() == tmp_path / "home" / "sparsekit_data"


@pytest.mark.parametrize(
    "call, missing, source",
    [
        (lambda h: load_libsvm("a9a", data_home=h), "a9a.xz", "the LIBSVM data page"),
        (lambda h: load_mnist("test", data_home=h), "t10k-images-idx3-ubyte.gz",
         "the MNIST database"),
        (lambda h: load_mulan("scene", "train", data_home=h), "scene.xml", "Mulan's"),
        (lambda h: load_xmlrepo("Bibtex", "test", data_home=h), "Bibtex_test.txt.xz",
         "load_mulan reads the same rows"),
        (lambda h: load_debian(data_home=h), "debian_packages.jsonl.xz", "Debian 12"),
    ],
)
def test_missing_file_is_named_with_its_source(tmp_path, call, missing, source):
    with pytest.raises(FileNotFoundError, match=f"{missing}.*source: .*{source}"):
        call(tmp_path)


@pytest.mark.parametrize("stored", ["w8a", "w8a.gz", "w8a.bz2"])
def test_a_data_file_is_found_plain_or_under_another_compression(tmp_path, stored):
    """As the LIBSVM page serves it (plain, or .bz2), not only as the xz copy the loaders
    name."""
    import bz2

    text = b"+1 1:1 300:0.5\n-1 2:1\n"
    (tmp_path / "libsvm").mkdir()
    opener = {"gz": gzip.open, "bz2": bz2.open}.get(stored.rpartition(".")[2], open)
    with opener(tmp_path / "libsvm" / stored, "wb") as f:
        f.write(text)
    X, y = load_libsvm("w8a", data_home=tmp_path)
    assert X.shape == (2, 300) and y.tolist() == [1, -1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="subset"):
        load_mnist("validation")
    with pytest.raises(ValueError, match="unknown Mulan"):
        load_mulan("yeast")
    with pytest.raises(ValueError, match="no train/test split"):
        load_mulan("cal500", "train")
    with pytest.raises(ValueError, match="subset"):
        load_xmlrepo("Bibtex", "valid")


@pytest.mark.parametrize("bom", [b"", codecs.BOM_UTF8])   # Windows tools write one
def test_libsvm_path_plain_gz_xz(tmp_path, bom):
    text = bom + b"+1 1:0.5 3:2\n-1 2:1\n"
    (tmp_path / "t.txt").write_bytes(text)
    (tmp_path / "t.gz").write_bytes(gzip.compress(text))
    (tmp_path / "t.xz").write_bytes(lzma.compress(text))
    (tmp_path / "t.bz2").write_bytes(bz2.compress(text))
    for name in ("t.txt", "t.gz", "t.xz", "t.bz2"):
        X, y = load_libsvm(tmp_path / name, n_features=4, dtype=np.float32)
        assert X.format == "csr" and X.dtype == np.float32
        np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2, 0], [0, 1, 0, 0]])
        np.testing.assert_array_equal(y, [1, -1])


def test_xmlrepo_format_edge_cases(tmp_path):
    text = "3 4 3\n0,2 1:0.5 3:1\n 0:2\n1 2:1.5 2:1\n"
    (tmp_path / "x.txt").write_text(text)
    X, Y = load_xmlrepo(tmp_path / "x.txt")
    np.testing.assert_array_equal(X.toarray(), [[0, 0.5, 0, 1], [2, 0, 0, 0], [0, 0, 2.5, 0]])
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    (tmp_path / "bad.txt").write_text("2 4 3\n0 1:1\n")
    with pytest.raises(ValueError, match="2 rows"):
        load_xmlrepo(tmp_path / "bad.txt")
    (tmp_path / "range.txt").write_text("1 4 3\n5 1:1\n")
    with pytest.raises(ValueError, match="label index"):
        load_xmlrepo(tmp_path / "range.txt")


def test_an_empty_data_variable_means_unset(monkeypatch):
    monkeypatch.setenv("SPARSEKIT_DATA", "")          # was Path("."): every file "missing"
    assert get_data_home().name == "sparsekit_data"


def _truncated(data):
    return lzma.compress(data)[:-20]


def test_damaged_files_are_errors_that_name_them(tmp_path):
    """A truncated .xz / .gz gave a bare EOFError, a row without its labels a bare int()
    error, a record without a section a KeyError."""
    (tmp_path / "libsvm").mkdir()
    (tmp_path / "libsvm" / "a9a.xz").write_bytes(_truncated(b"+1 1:0.5\n" * 500))
    (tmp_path / "mnist").mkdir()
    (tmp_path / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08"))
    (tmp_path / "xmlrepo").mkdir()
    (tmp_path / "xmlrepo" / "Bibtex_test.txt.xz").write_bytes(_truncated(b"1 2 2\n0 1:1\n" * 99))
    (tmp_path / "x.txt").write_text("1 4 3\n2:0.5 3:1\n")
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "debian_packages.jsonl.xz").write_bytes(
        lzma.compress(b'{"package": "p", "text": "t"}\n'))
    cases = [(lambda: load_libsvm("a9a", data_home=tmp_path), "a9a.xz: corrupt"),
             (lambda: load_mnist("test", data_home=tmp_path), "shorter than an IDX header"),
             (lambda: load_xmlrepo("Bibtex", "test", data_home=tmp_path), "Bibtex_test.txt.xz"),
             (lambda: load_xmlrepo(tmp_path / "x.txt"), "x.txt: rows must read"),
             (lambda: load_debian(data_home=tmp_path), "line 1 has no field 'section'")]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize("line, message", [
    (b'["p", "s"]', "line 1 is not a JSON object"),                   # was a bare TypeError
    (b'{"package": "p", "section": "s", "tags": "role::program", "text": "t"}',
     "line 1: tags must be a list, got str"),                    # was split into characters
])
def test_debian_records_of_the_wrong_shape_are_errors(tmp_path, line, message):
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "debian_packages.jsonl.xz").write_bytes(lzma.compress(line + b"\n"))
    with pytest.raises(ValueError, match=message):
        load_debian(data_home=tmp_path)


def test_mulan_malformed_label_xml_is_an_error_that_names_it(tmp_path):
    (tmp_path / "mulan").mkdir()
    (tmp_path / "mulan" / "emotions.xml").write_text('<labels><label name="a"></label>')
    arff = "@relation r\n@attribute x numeric\n@attribute a {0,1}\n@data\n1.0,1\n"
    (tmp_path / "mulan" / "emotions-train.arff.xz").write_bytes(lzma.compress(arff.encode()))
    with pytest.raises(ValueError, match="emotions.xml: not well-formed XML"):  # was ParseError
        load_mulan("emotions", "train", data_home=tmp_path)


def test_mulan_labels_must_be_zero_or_one_before_any_cast(tmp_path):
    (tmp_path / "mulan").mkdir()
    (tmp_path / "mulan" / "emotions.xml").write_text(
        '<labels xmlns="http://mulan.sourceforge.net/labels">'
        '<label name="a"></label><label name="b"></label></labels>')
    arff = ("@relation r\n@attribute x numeric\n@attribute y numeric\n@attribute a {0,1}\n"
            "@attribute b numeric\n@data\n1.0,2.0,1,0.5\n3.0,4.0,0,1\n")
    (tmp_path / "mulan" / "emotions-train.arff.xz").write_bytes(lzma.compress(arff.encode()))
    with pytest.raises(ValueError, match="values other than 0/1"):   # 0.5 was read as 0
        load_mulan("emotions", "train", data_home=tmp_path)


@needs_data
@pytest.mark.parametrize(
    "name, shape, counts",
    [
        ("a9a", (32561, 123), [24720, 7841]),
        ("a9a.t", (16281, 123), [12435, 3846]),
        ("w8a", (49749, 300), [48270, 1479]),
    ],
)
def test_libsvm_manifest_counts(name, shape, counts):
    X, y = load_libsvm(name)
    assert sp.isspmatrix_csr(X) and X.shape == shape
    labels, found = np.unique(y, return_counts=True)
    np.testing.assert_array_equal(labels, [-1, 1])
    np.testing.assert_array_equal(found, counts)
    assert 0 < X.nnz < 0.2 * np.prod(shape)


@needs_data
def test_libsvm_named_set_takes_an_explicit_n_features():
    X, y = load_libsvm("a9a.t", n_features=130)
    assert X.shape == (16281, 130)
    assert X[:, 123:].nnz == 0


@needs_data
def test_mnist_manifest_counts():
    X, y = load_mnist("train")
    assert X.shape == (60000, 784) and X.dtype == np.uint8
    np.testing.assert_array_equal(
        np.bincount(y), [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    )
    assert abs(X.mean() / 255 - 0.13066) < 5e-5
    X, y = load_mnist("test")
    assert X.shape == (10000, 784)
    np.testing.assert_array_equal(
        np.bincount(y), [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    )


MULAN = [
    ("emotions", "train", (391, 72, 6), 1.813),
    ("emotions", "test", (202, 72, 6), 1.975),
    ("scene", "train", (1211, 294, 6), 1.062),
    ("scene", "test", (1196, 294, 6), 1.086),
    ("cal500", None, (502, 68, 174), 26.044),
    ("bibtex", "train", (4880, 1836, 159), 2.38),
    ("bibtex", "test", (2515, 1836, 159), 2.444),
    ("delicious", "train", (12920, 500, 983), 19.047),
    ("delicious", "test", (3185, 500, 983), 18.91),
]


@needs_data
@pytest.mark.parametrize("name, subset, shape, cardinality", MULAN)
def test_mulan_manifest_counts(name, subset, shape, cardinality):
    X, Y = load_mulan(name, subset)
    n, d, n_labels = shape
    assert X.shape == (n, d) and Y.shape == (n, n_labels)
    assert sp.issparse(X) == sp.issparse(Y) == (name in ("bibtex", "delicious"))
    assert abs(Y.sum() / n - cardinality) < 1e-3
    values = Y.data if sp.issparse(Y) else Y
    assert set(np.unique(values)) <= {0, 1}
    assert np.isfinite(X.data if sp.issparse(X) else X).all()


@needs_data
def test_mulan_dense_matches_scipy_arff():
    import io

    from scipy.io import arff

    with lzma.open(DATA_HOME / "mulan" / "emotions-test.arff.xz", "rt") as f:
        records, meta = arff.loadarff(io.StringIO(f.read()))
    X, Y = load_mulan("emotions", "test")
    labels = {"amazed-suprised", "happy-pleased", "relaxing-calm", "quiet-still",
              "sad-lonely", "angry-aggresive"}
    features = [n for n in meta.names() if n not in labels]
    expected_X = np.column_stack([records[n].astype(float) for n in features])
    expected_Y = np.column_stack([records[n].astype(int) for n in meta.names() if n in labels])
    np.testing.assert_array_equal(X, expected_X)
    np.testing.assert_array_equal(Y, expected_Y)


@needs_data
def test_mulan_whole_set_stacks_train_and_test():
    X, Y = load_mulan("emotions")
    X_train, Y_train = load_mulan("emotions", "train")
    assert X.shape == (593, 72)
    np.testing.assert_array_equal(Y[:391], Y_train)


@needs_data
@pytest.mark.parametrize(
    "name, subset, shape, empty_rows",
    [
        ("Bibtex", "train", (4880, 1836, 159), 0),
        ("Bibtex", "test", (2515, 1836, 159), 0),
        ("Delicious", "train", (12920, 500, 983), 10),
        ("Delicious", "test", (3185, 500, 983), 4),
    ],
)
def test_xmlrepo_matches_mulan(name, subset, shape, empty_rows):
    X, Y = load_xmlrepo(name, subset)
    n, d, n_labels = shape
    assert X.shape == (n, d) and Y.shape == (n, n_labels)
    assert np.sum(Y.getnnz(axis=1) == 0) == empty_rows
    X_mulan, Y_mulan = load_mulan(name.lower(), subset)
    assert abs(X - X_mulan).max() == 0 and abs(Y - Y_mulan).max() == 0


@needs_data
def test_debian_corpus():
    data = load_debian()
    assert len(data.package) == len(data.section) == len(data.tags) == len(data.text) == 63436
    sections, counts = np.unique(data.section, return_counts=True)
    assert len(sections) == 58
    top = dict(zip(sections, counts))
    assert (top["libs"], top["libdevel"], top["python"]) == (6703, 5557, 4544)
    assert sum(1 for t in data.tags if t) == 30300
    # MANIFEST.md says 597 distinct tags; the file itself holds 598.
    assert len({tag for tags in data.tags for tag in tags}) == 598
    assert all(isinstance(t, str) and t for t in data.text[:100])


def _idx(magic, dims, payload):
    header = np.array([magic, *dims], dtype=">u4").tobytes()
    return gzip.compress(header + np.asarray(payload, dtype=np.uint8).tobytes())


def test_mnist_images_are_a_writeable_array(tmp_path):
    (tmp_path / "mnist").mkdir()
    (tmp_path / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(
        _idx(2051, (2, 28, 28), np.arange(2 * 784) % 256))
    (tmp_path / "mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(_idx(2049, (2,), [3, 7]))
    X, y = load_mnist("test", data_home=tmp_path)
    assert X.shape == (2, 784) and X.flags.writeable and X.flags.c_contiguous
    X[X < 128] = 0  # the usual binarization, in place
    np.testing.assert_array_equal(y, [3, 7])


def test_libsvm_unknown_name_lists_the_known_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="a9a.*w8a"):
        load_libsvm("rcv1")


def test_libsvm_one_based_by_default_a_zero_index_is_an_error(tmp_path):
    """A stray ``0:`` token must not shift every column of a one-based file by one."""
    path = tmp_path / "t.svm"
    path.write_text("1 1:1 3:2\n-1 0:1 2:1\n")
    with pytest.raises(ValueError, match="line 2: the index of '0:1' is below 1.*zero_based=True"):
        load_libsvm(path)
    X, _ = load_libsvm(path, zero_based=True)
    np.testing.assert_array_equal(X.toarray(), [[0, 1, 0, 2], [1, 0, 1, 0]])
    path.write_text("1 1:1 3:2\n-1 2:1\n")
    np.testing.assert_array_equal(load_libsvm(path)[0].toarray(), [[1, 0, 2], [0, 1, 0]])
    np.testing.assert_array_equal(load_libsvm(path, zero_based="auto")[0].toarray(),
                                  [[1, 0, 2], [0, 1, 0]])
    with pytest.raises(ValueError, match="zero_based must be"):
        load_libsvm(path, zero_based="yes")


def test_libsvm_a_folder_or_a_huge_index_is_a_clear_error(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        load_libsvm(tmp_path)
    path = tmp_path / "big.svm"
    path.write_text("1 1:1 4000000000:2\n")
    with pytest.raises(ValueError, match="big.svm, line 1: the index of '4000000000:2' is too "
                                         "large"):
        load_libsvm(path)


@pytest.mark.parametrize("line, multilabel, says", [
    (b"1 2:1 2", False, "'2' is not an index:value pair"),
    (b"1 2:abc", False, "the value of '2:abc' is not a number"),
    (b"x 2:1", False, "the label 'x' is not a number$"),
    (b"1,3 2:1", False, "the label '1,3' is not a number; a row of labels separated by "
                        "commas needs multilabel=True"),
    (b"1,x 2:1", True, "the label '1,x' is not a number$"),
    (b"1 3:1 2:1", False, "the indices of a row must increase, and '2:1' follows index 3"),
    (b"1 2:1 2:1", False, "the indices .*, and '2:1' follows index 2"),
    (b"1 -2:1", False, "the index of '-2:1' is below 1$"),
    (b"1 1.5:1", False, "the index of '1.5:1' is not an integer"),
    (b"1 qid:4 :1", False, "the index of ':1' is not an integer"),
    (b"1 3000000000:1 # a comment", True, "the index of '3000000000:1' is too large")])
@pytest.mark.parametrize("suffix", [".svm", ".svm.gz"])
def test_libsvm_a_malformed_line_is_named_by_its_number(tmp_path, line, multilabel, says,
                                                         suffix):
    """A line scikit-learn's reader refuses is named by its number (comments and blank
    lines counted) and what is wrong in it, where its reader's message named neither
    ("need more than 1 value to unpack"); the lines before it read."""
    head = b"# made by hand\n1 1:1 3:2\n\n-1 2:0.5 # one more\n"
    path = tmp_path / f"t{suffix}"
    packed = gzip.compress if suffix.endswith(".gz") else bytes
    path.write_bytes(packed(head + line + b"\n"))
    with pytest.raises(ValueError, match=f"t{re.escape(suffix)}, line 5: {says}"):
        load_libsvm(path, multilabel=multilabel)
    path.write_bytes(packed(head))
    assert load_libsvm(path, multilabel=multilabel)[0].shape == (2, 3)


def test_libsvm_bz2(tmp_path):
    import bz2
    (tmp_path / "t.svm.bz2").write_bytes(bz2.compress(b"1 1:1 3:2\n-1 2:1\n"))
    X, y = load_libsvm(tmp_path / "t.svm.bz2")
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 2], [0, 1, 0]])
    (tmp_path / "bad.svm.bz2").write_bytes(b"BZh9 not a stream")
    with pytest.raises(ValueError, match="bad.svm.bz2: corrupt"):
        load_libsvm(tmp_path / "bad.svm.bz2")


def test_libsvm_multilabel_reads_label_sets_compressed_and_round_trips_sklearn(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    (tmp_path / "m.svm.xz").write_bytes(lzma.compress(b"3,1 1:1\n 2:2\n2 1:1 2:1\n"))
    X, sets = load_libsvm(tmp_path / "m.svm.xz", multilabel=True)
    assert sets == [(1.0, 3.0), (), (2.0,)]               # each set sorted
    np.testing.assert_array_equal(X.toarray(), [[1, 0], [0, 2], [1, 1]])
    Y = np.array([[1, 0, 1], [0, 0, 0], [0, 1, 1]])
    dump_svmlight_file(X, Y, str(tmp_path / "sk.svm"), multilabel=True, zero_based=False)
    X2, sets2 = load_libsvm(tmp_path / "sk.svm", multilabel=True)
    assert sets2 == [(0.0, 2.0), (), (1.0, 2.0)]
    np.testing.assert_array_equal(X2.toarray(), X.toarray())
    assert X2.indices.dtype == np.int32                    # as the single-label reader
    (tmp_path / "single.svm").write_bytes(b"+1 1:1\n-1 2:1\n")   # a label per row
    assert load_libsvm(tmp_path / "single.svm", multilabel=True)[1] == [(1.0,), (-1.0,)]


# --- Loader and generator details from a mutation review: index bounds, dtypes, defaults,

def test_libsvm_labels_are_float64_as_stored(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"+1 1:0.5\n-1 2:1\n2.5 1:1\n")
    X, y = load_libsvm(tmp_path / "t.txt")
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, [1.0, -1.0, 2.5])
    assert X.shape == (3, 2)


def test_compressed_suffix_is_case_insensitive(tmp_path):
    (tmp_path / "t.XZ").write_bytes(lzma.compress(b"+1 1:0.5 3:2\n-1 2:1\n"))
    (tmp_path / "t.GZ").write_bytes(gzip.compress(b"+1 1:0.5 3:2\n-1 2:1\n"))
    for name in ("t.XZ", "t.GZ"):
        X, y = load_libsvm(tmp_path / name, n_features=3)
        np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1, 0]])


def test_data_home_expands_the_user_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home("~/data") == tmp_path / "data"


# --------------------------------------------------------------------------- XMLRepository

def test_xmlrepo_repeated_label_is_one_and_X_is_canonical(tmp_path):
    (tmp_path / "x.txt").write_text("2 3 3\n1,1 2:1 2:0.5\n0 0:1\n")
    X, Y = load_xmlrepo(tmp_path / "x.txt")
    np.testing.assert_array_equal(Y.toarray(), [[0, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(Y.data, [1, 1])
    assert X.nnz == 2 and X.has_canonical_format   # duplicates summed, indices sorted
    np.testing.assert_array_equal(X.toarray(), [[0, 0, 1.5], [1, 0, 0]])


@pytest.mark.parametrize("row, what", [("3 1:1", "label"), ("0 4:1", "feature")])
def test_xmlrepo_index_equal_to_the_header_count_is_out_of_range(tmp_path, row, what):
    (tmp_path / "x.txt").write_text(f"1 4 3\n{row}\n")
    with pytest.raises(ValueError, match=f"{what} index out of range"):
        load_xmlrepo(tmp_path / "x.txt")


def test_xmlrepo_point_without_labels_or_features_is_an_empty_row(tmp_path):
    (tmp_path / "x.txt").write_text("3 2 2\n0 0:1\n \n1 1:1\n")
    X, Y = load_xmlrepo(tmp_path / "x.txt")
    np.testing.assert_array_equal(X.toarray(), [[1, 0], [0, 0], [0, 1]])
    np.testing.assert_array_equal(Y.toarray(), [[1, 0], [0, 0], [0, 1]])


# --------------------------------------------------------------------------- Mulan / ARFF

def _write_mulan(home, arff, labels=("a", "b")):
    (home / "mulan").mkdir(exist_ok=True)
    (home / "mulan" / "emotions.xml").write_text(
        '<labels xmlns="http://mulan.sourceforge.net/labels">'
        + "".join(f'<label name="{n}"></label>' for n in labels) + "</labels>")
    (home / "mulan" / "emotions-train.arff.xz").write_bytes(lzma.compress(arff.encode()))


def test_mulan_labels_are_int64_and_features_float64(tmp_path):
    _write_mulan(tmp_path, "@relation r\n@attribute x numeric\n@attribute a {0,1}\n"
                           "@attribute b {0,1}\n@data\n1.5,1,0\n2.5,0,1\n")
    X, Y = load_mulan("emotions", "train", data_home=tmp_path)
    assert X.dtype == np.float64 and Y.dtype == np.int64
    np.testing.assert_array_equal(X, [[1.5], [2.5]])
    np.testing.assert_array_equal(Y, [[1, 0], [0, 1]])


@pytest.mark.parametrize("header, labels", [
    # keywords are case-insensitive
    ("@RELATION r\n@ATTRIBUTE x NUMERIC\n@Attribute a {0,1}\n@attribute b {0,1}\n@DATA\n",
     ("a", "b")),
    # quoted names are matched to the label XML unquoted
    ("@relation r\n@attribute 'x y' numeric\n@attribute 'a b' {0,1}\n"
     "@attribute \"it\\'s\" {0,1}\n@data\n", ("a b", "it's")),
])
def test_arff_header_spellings(tmp_path, header, labels):
    _write_mulan(tmp_path, header + "1.5,1,0\n", labels=labels)
    X, Y = load_mulan("emotions", "train", data_home=tmp_path)
    np.testing.assert_array_equal(X, [[1.5]])
    np.testing.assert_array_equal(Y, [[1, 0]])


def test_arff_comment_lines_in_the_data_are_skipped(tmp_path):
    _write_mulan(tmp_path, "@relation r\n@attribute x numeric\n@attribute a {0,1}\n"
                           "@attribute b {0,1}\n@data\n% first row\n1.5,1,0\n%\n2.5,0,1\n")
    X, Y = load_mulan("emotions", "train", data_home=tmp_path)
    np.testing.assert_array_equal(X, [[1.5], [2.5]])


def test_arff_sparse_index_equal_to_the_attribute_count_is_an_error(tmp_path):
    _write_mulan(tmp_path, "@relation r\n@attribute x numeric\n@attribute a {0,1}\n"
                           "@attribute b {0,1}\n@data\n{0 1.5,1 1}\n{3 1}\n")
    with pytest.raises(ValueError, match="index out of range 0..2"):
        load_mulan("emotions", "train", data_home=tmp_path)


# --------------------------------------------------------------------------- MNIST

def _idx_bytes(magic, dims, payload):
    header = np.array([magic, *dims], dtype=">u4").tobytes()
    return gzip.compress(header + np.asarray(payload, dtype=np.uint8).tobytes())


def _write_mnist(home, n_images, n_pixels, labels):
    (home / "mnist").mkdir(exist_ok=True)
    (home / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(
        _idx_bytes(2051, (n_images, 28, 28), np.arange(n_pixels) % 256))
    (home / "mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(
        _idx_bytes(2049, (len(labels),), labels))


def test_mnist_labels_are_int64_and_pixels_row_major(tmp_path):
    _write_mnist(tmp_path, 2, 2 * 784, [3, 7])
    X, y = load_mnist("test", data_home=tmp_path)
    assert y.dtype == np.int64 and X.dtype == np.uint8
    np.testing.assert_array_equal(X.ravel(), np.arange(2 * 784) % 256)


def test_mnist_payload_shorter_than_its_header_is_an_error(tmp_path):
    _write_mnist(tmp_path, 3, 2 * 784, [3, 7, 1])
    with pytest.raises(ValueError, match="header says shape"):
        load_mnist("test", data_home=tmp_path)


def test_mnist_image_and_label_counts_must_agree(tmp_path):
    _write_mnist(tmp_path, 2, 2 * 784, [3, 7, 1])
    with pytest.raises(ValueError, match="2 images but 3 labels"):
        load_mnist("test", data_home=tmp_path)


# --------------------------------------------------------------------------- thesis synthetic

def test_thesis_synthetic_positive_definite_matrix_is_not_shifted():
    # n = 1: A = 2u > 0, so step 3 does nothing and X = sqrt(2u)
    X, y = make_thesis_synthetic(1, random_state=4)
    rng = np.random.RandomState(4)
    y_ref = -1.0 + 2.0 * (rng.random_sample(1) > 0.5)
    u = rng.random_sample((1, 1))
    np.testing.assert_allclose(X, np.sqrt(2 * u), rtol=1e-14)
    np.testing.assert_array_equal(y, y_ref)


# --------------------------------------------------------------------------- OVE toy

@pytest.mark.parametrize("kind, k", [("T1", 10), ("T3", 30)])
def test_ove_toy_prior_is_the_squared_uniform_law(kind, k):
    _, _, params = make_ove_toy(kind, n_samples=5, n_classes=k, return_params=True,
                                random_state=7)
    u = np.random.RandomState(7).random_sample(k)
    np.testing.assert_allclose(params.class_prior, u**2 / np.sum(u**2), rtol=1e-12)


@pytest.mark.parametrize("kind", ["T1", "T2", "T3"])
def test_ove_toy_random_state_is_used(kind):
    args = dict(n_samples=300, n_classes=20)
    _, y0 = make_ove_toy(kind, **args, random_state=0)
    _, y1 = make_ove_toy(kind, **args, random_state=1)
    assert not np.array_equal(y0, y1)
    rng = np.random.RandomState(0)
    _, first = make_ove_toy(kind, **args, random_state=rng)   # an instance is advanced
    _, second = make_ove_toy(kind, **args, random_state=rng)
    np.testing.assert_array_equal(first, y0)
    assert not np.array_equal(first, second)


def test_ove_toy_t2_teacher_laws():
    # w_k ~ N(0, 2^2 I), b_k ~ N(0, 1)
    _, _, params = make_ove_toy("T2", n_samples=1, n_classes=5000, return_params=True,
                                random_state=3)
    assert params.coef.shape == (5000, 2) and params.intercept.shape == (5000,)
    assert abs(params.coef.std() - 2.0) < 0.07 and abs(params.coef.mean()) < 0.1   # 5 sigma
    assert abs(params.intercept.std() - 1.0) < 0.05 and abs(params.intercept.mean()) < 0.07


def test_ove_toy_t3_default_sizes():
    X, y, params = make_ove_toy("T3", return_params=True, random_state=0)
    assert X.shape == (10**6, 1) and y.shape == (10**6,)
    assert params.class_prior.shape == (10**4,)


def test_ove_toy_needs_two_classes():
    with pytest.raises(ValueError, match="n_classes >= 2"):
        make_ove_toy("T1", n_classes=1)
    X, y = make_ove_toy("T1", n_samples=1, n_classes=2, random_state=0)   # 1 is positive
    assert X.shape == (1, 1) and y.shape == (1,)


# --------------------------------------------------------------------------- extreme teacher

def test_extreme_teacher_share_of_own_class_draws_is_class_signal():
    n, d, k, L, s, beta = 2000, 10_000, 5, 20, 10, 0.8
    _, y, t = make_extreme_softmax_teacher(n, d, k, L, class_signal=beta, support_size=s,
                                           return_teacher=True, random_state=0)
    own_support = (t.coef[y] > 0).astype(np.float64)          # S_{y_n} of each point
    share = t.counts.multiply(own_support).sum() / (n * L)
    assert abs(share - (beta + (1 - beta) * s / d)) < 0.01


def test_extreme_teacher_default_support_is_twice_the_draws():
    L, d = 5, 100_000
    _, _, t = make_extreme_softmax_teacher(50, d, 20, L, return_teacher=True, random_state=0)
    per_class = t.coef.getnnz(axis=1)
    assert per_class.max() == 2 * L and per_class.min() >= 2 * L - 1   # rare collisions
    _, _, t = make_extreme_softmax_teacher(50, 3, 4, L, return_teacher=True, random_state=0)
    M = t.coef.copy()                      # s = min(2 L, d) = 3 slots per class
    M.data = np.expm1(M.data) * 3 * (1 - 0.5) / (0.5 * 3)
    np.testing.assert_allclose(np.asarray(M.sum(axis=1)).ravel(), 3)


def test_extreme_teacher_random_state_is_used():
    args = (200, 50, 10, 4)
    X0, y0 = make_extreme_softmax_teacher(*args, random_state=0)
    X1, y1 = make_extreme_softmax_teacher(*args, random_state=1)
    assert not np.array_equal(y0, y1) or (X0 != X1).nnz > 0
    rng = np.random.RandomState(0)
    Xa, ya = make_extreme_softmax_teacher(*args, random_state=rng)
    Xb, yb = make_extreme_softmax_teacher(*args, random_state=rng)
    np.testing.assert_array_equal(ya, y0)
    assert (Xa != Xb).nnz > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(support_size=0), "support_size"),
        (dict(support_size=2.5), "support_size"),
        (dict(support_size=True), "support_size"),
        (dict(class_signal=-0.1), "class_signal"),
    ],
)
def test_extreme_teacher_more_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_extreme_softmax_teacher(10, 5, 3, 2, **kwargs)


# --------------------------------------------------------------------------- validation

def test_is_positive_integer_bounds():
    assert is_positive_integer(1) and is_positive_integer(1.0) and is_positive_integer(np.int64(7))
    for bad in (0, -1, 0.5, 1.5, True, None, np.inf, np.nan, "3"):
        assert not is_positive_integer(bad)
    X, y = make_extreme_softmax_teacher(1, 1, 2, 1, random_state=0)
    assert X.shape == (1, 1) and y.shape == (1,)


def test_unchanged_on_error_removes_attributes_a_failed_fit_added():
    from sparsekit.linear_model._base import unchanged_on_error

    class Model:
        def __init__(self):
            self.alpha = 1.0

        @unchanged_on_error
        def fit(self, fail):
            self.alpha = 2.0
            self.n_features_in_ = 3
            if fail:
                raise KeyError("bad input")
            return self

    model = Model()
    with pytest.raises(KeyError):
        model.fit(fail=True)
    assert model.__dict__ == {"alpha": 1.0}
    assert model.fit(fail=False) is model and model.n_features_in_ == 3
    with pytest.raises(KeyError):
        model.fit(fail=True)
    assert model.__dict__ == {"alpha": 2.0, "n_features_in_": 3}


# --------------------------------------------------------------------------- malformed files
# Each loader's format check, with the message that names the file and the fault.

_ARFF_HEAD = "@relation r\n@attribute x numeric\n@attribute a {0,1}\n@attribute b {0,1}\n"


@pytest.mark.parametrize("arff, message", [
    (_ARFF_HEAD + "@data\n1.5,one,0\n", "non-numeric ARFF value"),
    (_ARFF_HEAD + "1.5,1,0\n", "no @data line"),
    ("@relation r\n@attribute\n@data\n1\n", "cannot parse attribute line"),
    (_ARFF_HEAD + "@data\n1.5,1,0\n2.5,0\n", "5 values for 2 rows of 3 attributes"),
    (_ARFF_HEAD + "@data\n{0 1.5,1 1}\n2 1\n", r"sparse row 1 is not of the form \{i v,...\}"),
    (_ARFF_HEAD + "@data\n{0 1.5,1}\n", "sparse entries are not all 'index value' pairs"),
])
def test_malformed_arff_is_an_error_that_names_the_file(tmp_path, arff, message):
    _write_mulan(tmp_path, arff)
    with pytest.raises(ValueError, match=f"emotions-train.arff.xz: {message}"):
        load_mulan("emotions", "train", data_home=tmp_path)


@pytest.mark.parametrize("labels_xml, message", [
    ("<labels></labels>", "emotions.xml: no <label name=...> elements"),
    ('<labels><label name="a"></label><label name="c"></label></labels>',
     r"labels \['c'\] of the label XML are not attributes"),
])
def test_label_xml_that_does_not_match_the_arff_is_an_error(tmp_path, labels_xml, message):
    _write_mulan(tmp_path, _ARFF_HEAD + "@data\n1.5,1,0\n")
    (tmp_path / "mulan" / "emotions.xml").write_text(labels_xml)
    with pytest.raises(ValueError, match=message):
        load_mulan("emotions", "train", data_home=tmp_path)


def test_mulan_unknown_subset_is_an_error():
    with pytest.raises(ValueError, match="subset must be 'train', 'test' or None, got 'dev'"):
        load_mulan("emotions", "dev")


@pytest.mark.parametrize("sparse", [False, True])
def test_mulan_without_subset_stacks_train_over_test(tmp_path, sparse):
    rows = {"train": ["1.5,1,0", "2.5,0,1"], "test": ["3.5,1,1"]}
    if sparse:
        rows = {"train": ["{0 1.5,1 1}", "{0 2.5,2 1}"], "test": ["{0 3.5,1 1,2 1}"]}
    _write_mulan(tmp_path, _ARFF_HEAD + "@data\n" + "\n".join(rows["train"]) + "\n")
    (tmp_path / "mulan" / "emotions-test.arff.xz").write_bytes(
        lzma.compress((_ARFF_HEAD + "@data\n" + "\n".join(rows["test"]) + "\n").encode()))
    X, Y = load_mulan("emotions", data_home=tmp_path)
    assert (X.format == "csr" and Y.format == "csr") if sparse else isinstance(X, np.ndarray)
    dense = (lambda A: A.toarray()) if sparse else np.asarray
    np.testing.assert_array_equal(dense(X), [[1.5], [2.5], [3.5]])
    np.testing.assert_array_equal(dense(Y), [[1, 0], [0, 1], [1, 1]])


def test_debian_blank_lines_are_skipped_and_bad_json_names_its_line(tmp_path):
    (tmp_path / "debian").mkdir()
    path = tmp_path / "debian" / "debian_packages.jsonl.xz"
    record = b'{"package": "p", "section": "s", "tags": ["a::b"], "text": "t"}\n'
    path.write_bytes(lzma.compress(b"\n" + record + b"  \n" + record))
    data = load_debian(data_home=tmp_path)
    assert list(data.package) == ["p", "p"] and data.tags == [["a::b"], ["a::b"]]
    path.write_bytes(lzma.compress(record + b"\n{not json\n"))
    with pytest.raises(ValueError, match="line 3 is not JSON"):
        load_debian(data_home=tmp_path)
    path.write_bytes(lzma.compress(record * 300)[:-20])
    with pytest.raises(ValueError, match="corrupt or truncated after line"):
        load_debian(data_home=tmp_path)


def test_mnist_wrong_magic_number_is_an_error(tmp_path):
    (tmp_path / "mnist").mkdir()
    (tmp_path / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(
        _idx_bytes(2049, (1, 28, 28), np.zeros(784)))
    with pytest.raises(ValueError, match="IDX magic number 2049, expected 2051"):
        load_mnist("test", data_home=tmp_path)


@pytest.mark.parametrize("content, message", [
    (b"2 4\n0 1:1\n", "first line must be 'N D L', got '2 4'"),
    (b"1 4 3\n0 1:1 2\n", "features are not all 'index:value' pairs"),
    (b"1 4 3\n0 1:\xff\n", "rows must read 'l1,l2 i:v i:v ...' \\(could not convert string "
                          "to float: 'ÿ'\\)"),     # read as Windows' code page
    (codecs.BOM_UTF16_LE + "1 4 3\n".encode("utf-16-le") + b"\x00\xdc",
     "not utf-16 text, as its byte-order mark says"),
])
def test_malformed_xmlrepo_file_is_an_error_that_names_it(tmp_path, content, message):
    (tmp_path / "x.txt").write_bytes(content)
    with pytest.raises(ValueError, match=f"x.txt: {message}"):
        load_xmlrepo(tmp_path / "x.txt")


@pytest.mark.parametrize("text", ["a,é\n", "Zürich €\r\n", ""])
def test_text_is_decoded_by_its_byte_order_mark_else_utf8_else_windows_code_page(text,
                                                                                   tmp_path):
    for codec, bom, name in (("utf-8", codecs.BOM_UTF8, "utf-8-sig"),
                             ("utf-16-le", codecs.BOM_UTF16_LE, "utf-16"),
                             ("utf-16-be", codecs.BOM_UTF16_BE, "utf-16"),
                             ("utf-32-le", codecs.BOM_UTF32_LE, "utf-32"),
                             ("utf-32-be", codecs.BOM_UTF32_BE, "utf-32")):
        assert decode_text(bom + text.encode(codec), "x") == (text, name)
        (tmp_path / "t.gz").write_bytes(gzip.compress(bom + text.encode(codec)))
        assert text_encodings(tmp_path / "t.gz") == (name,)
    assert decode_text(text.encode(), "x") == (text, "utf-8")
    assert decode_text(text.encode("cp1252"), "x") == (
        text, "utf-8" if text.isascii() else "cp1252")
    assert decode_text(b"\x81" + text.encode("latin-1", "replace"), "x")[1] == "latin-1"
    assert text_encodings(tmp_path / "nowhere") == ("utf-8", "cp1252", "latin-1")


def test_missing_explicit_path_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset file not found: .*nowhere.txt"):
        load_libsvm(tmp_path / "nowhere.txt")


def test_fasttext_files_are_texts_and_their_labels(tmp_path):
    """fastText's format: the ``__label__`` tokens of a line (first or anywhere) its labels,
    the other tokens its text; blank lines skipped; compressed files read; without
    ``multilabel`` a line with no label or several is named by its number."""
    lines = ["__label__baking Why do cakes sink ?", "", "  __label__eggs How long\tdo eggs keep",
             "Is tin safe __label__storage __label__metal"]
    (tmp_path / "c.train.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    texts, y = load_fasttext(tmp_path / "c.train.gz", multilabel=True)
    assert texts == ["Why do cakes sink ?", "How long do eggs keep", "Is tin safe"]
    assert y == [("baking",), ("eggs",), ("storage", "metal")]
    with pytest.raises(ValueError, match=r"c.train.gz, line 4: 2 labels \(__label__...\); "
                                         "pass multilabel=True"):
        load_fasttext(tmp_path / "c.train.gz")
    (tmp_path / "c.valid").write_text("\n".join(lines[:3] + ["no label here"]))
    with pytest.raises(ValueError, match="c.valid, line 4: no label .*every line needs one"):
        load_fasttext(tmp_path / "c.valid")
    assert load_fasttext(tmp_path / "c.valid", multilabel=True)[1][-1] == ()
    texts, y = load_fasttext(_write(tmp_path / "one.txt", lines[:3]))
    assert y.dtype.kind == "U" and list(y) == ["baking", "eggs"]
    texts, y = load_fasttext(_write(tmp_path / "p.txt", ["#cake a b", "c #egg"]),
                             label_prefix="#")
    assert texts == ["a b", "c"] and list(y) == ["cake", "egg"]
    for prefix in ("", "a b", 5):
        with pytest.raises(ValueError, match="label_prefix must be a non-empty string"):
            load_fasttext(tmp_path / "p.txt", label_prefix=prefix)
    with pytest.raises(FileNotFoundError):
        load_fasttext(tmp_path / "missing.txt")


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path
