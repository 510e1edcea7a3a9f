"""Loader and generator details from a mutation review: index bounds, dtypes, defaults,
the laws the generators' docstrings state, random_state handling, and input checks."""
import gzip
import lzma

import numpy as np
import pytest

from sparsekit.datasets import (
    load_debian,
    get_data_home,
    load_libsvm,
    load_mnist,
    load_mulan,
    load_xmlrepo,
    make_extreme_softmax_teacher,
    make_ove_toy,
    make_thesis_synthetic,
)
from sparsekit.utils._validation import is_positive_integer

# --------------------------------------------------------------------------- LIBSVM

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

def _idx(magic, dims, payload):
    header = np.array([magic, *dims], dtype=">u4").tobytes()
    return gzip.compress(header + np.asarray(payload, dtype=np.uint8).tobytes())


def _write_mnist(home, n_images, n_pixels, labels):
    (home / "mnist").mkdir(exist_ok=True)
    (home / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(
        _idx(2051, (n_images, 28, 28), np.arange(n_pixels) % 256))
    (home / "mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(
        _idx(2049, (len(labels),), labels))


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
        _idx(2049, (1, 28, 28), np.zeros(784)))
    with pytest.raises(ValueError, match="IDX magic number 2049, expected 2051"):
        load_mnist("test", data_home=tmp_path)


@pytest.mark.parametrize("content, message", [
    (b"2 4\n0 1:1\n", "first line must be 'N D L', got '2 4'"),
    (b"1 4 3\n0 1:1 2\n", "features are not all 'index:value' pairs"),
    (b"1 4 3\n0 1:\xff\n", "not UTF-8 text"),
])
def test_malformed_xmlrepo_file_is_an_error_that_names_it(tmp_path, content, message):
    (tmp_path / "x.txt").write_bytes(content)
    with pytest.raises(ValueError, match=f"x.txt: {message}"):
        load_xmlrepo(tmp_path / "x.txt")


def test_missing_explicit_path_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset file not found: .*nowhere.txt"):
        load_libsvm(tmp_path / "nowhere.txt")
