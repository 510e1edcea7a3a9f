"""Loaders against the counts of shared/datasets/MANIFEST.md (skipped without the folder)."""
import gzip
import lzma
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.datasets import (
    get_data_home,
    load_debian,
    load_libsvm,
    load_mnist,
    load_mulan,
    load_xmlrepo,
)

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
    "call, missing",
    [
        (lambda h: load_libsvm("a9a", data_home=h), "a9a.xz"),
        (lambda h: load_mnist("test", data_home=h), "t10k-images-idx3-ubyte.gz"),
        (lambda h: load_mulan("scene", "train", data_home=h), "scene.xml"),
        (lambda h: load_xmlrepo("Bibtex", "test", data_home=h), "Bibtex_test.txt.xz"),
        (lambda h: load_debian(data_home=h), "debian_packages.jsonl.xz"),
    ],
)
def test_missing_file_is_named(tmp_path, call, missing):
    with pytest.raises(FileNotFoundError, match=missing):
        call(tmp_path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="subset"):
        load_mnist("validation")
    with pytest.raises(ValueError, match="unknown Mulan"):
        load_mulan("yeast")
    with pytest.raises(ValueError, match="no train/test split"):
        load_mulan("cal500", "train")
    with pytest.raises(ValueError, match="subset"):
        load_xmlrepo("Bibtex", "valid")


def test_libsvm_path_plain_gz_xz(tmp_path):
    text = b"+1 1:0.5 3:2\n-1 2:1\n"
    (tmp_path / "t.txt").write_bytes(text)
    (tmp_path / "t.gz").write_bytes(gzip.compress(text))
    (tmp_path / "t.xz").write_bytes(lzma.compress(text))
    for name in ("t.txt", "t.gz", "t.xz"):
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
    with pytest.raises(ValueError, match="Invalid index 0.*zero_based=True"):
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
    with pytest.raises(ValueError, match="big.svm: a feature index is too large"):
        load_libsvm(path)


def test_libsvm_bz2(tmp_path):
    import bz2
    (tmp_path / "t.svm.bz2").write_bytes(bz2.compress(b"1 1:1 3:2\n-1 2:1\n"))
    X, y = load_libsvm(tmp_path / "t.svm.bz2")
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 2], [0, 1, 0]])
    (tmp_path / "bad.svm.bz2").write_bytes(b"BZh9 not a stream")
    with pytest.raises(ValueError, match="bad.svm.bz2: corrupt"):
        load_libsvm(tmp_path / "bad.svm.bz2")
