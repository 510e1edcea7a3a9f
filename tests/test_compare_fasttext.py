"""fastText's input in ``sparsekit-compare``: the rows as tokens and the initial vectors."""
import numpy as np

from sparsekit.benchmarks import _fasttext


def test_fasttext_initial_vectors_cover_every_training_token(tmp_path):
    import scipy.sparse as sp

    X = sp.csr_matrix(np.array([[1.0, 0, 2], [0, 0, 1]]))
    _fasttext.initial_vectors(tmp_path / "init.vec", _fasttext.feature_words(X))
    header, *rows = (tmp_path / "init.vec").read_text().splitlines()
    assert header == f"3 {_fasttext.FASTTEXT_DIM}"
    assert [r.split()[0] for r in rows] == ["</s>", "f0", "f2"]
    values = np.array([r.split()[1:] for r in rows], float)
    assert np.all(np.abs(values) <= 1.0 / _fasttext.FASTTEXT_DIM)


def test_tokens_repeat_whole_counts_and_keep_other_values_once():
    import scipy.sparse as sp

    assert _fasttext.tokens(sp.csr_matrix(np.array([[2.0, 0, 1]]))) == ["f0 f0 f2"]
    assert _fasttext.tokens(sp.csr_matrix(np.array([[0.5, 0, 1]]))) == ["f0 f2"]
