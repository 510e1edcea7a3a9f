"""fastText's input in ``sparsekit-compare``: the rows as tokens and the initial vectors."""
import numpy as np
import pytest
from _compare_files import shown_at

from sparsekit.benchmarks import _fasttext, _timing


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


def test_writing_fasttexts_input_is_shown_under_its_name(monkeypatch):
    """fastText's training file and initial vectors are written before its timed fits (a
    large text file takes seconds): the progress display names fastText then."""
    import scipy.sparse as sp

    pytest.importorskip("fasttext")
    shown = []
    seen = shown_at(monkeypatch, _fasttext, ["initial_vectors"], shown)
    X = sp.csr_matrix(np.random.default_rng(0).poisson(1.0, size=(40, 8)).astype(float))
    row = _fasttext.fasttext_row("fastText supervised (softmax, 5 epochs)",
                                 ["__label__0", "__label__1"] * 20, X, lambda model: (1, 1),
                                 1, announce=shown.append)
    assert seen["initial_vectors"] == [
        "fastText supervised (softmax, 5 epochs), untimed: writing its training file"]
    assert shown[-1] == "fastText supervised (softmax, 5 epochs)" and row[1] != ""


def test_fasttexts_first_fit_which_searches_its_rate_is_never_timed(monkeypatch):
    """fastText's first fit tries learning rates from 1 down until one trains: however
    long it takes, it is a warm-up, and the timed fits train at the rate it found."""
    import scipy.sparse as sp

    fasttext = pytest.importorskip("fasttext")
    rates, train = [], fasttext.train_supervised

    def recording(**options):
        rates.append(options["lr"])
        if options["lr"] == _fasttext.FASTTEXT_RATES[0]:
            raise RuntimeError("Encountered NaN.")
        return train(**options)
    monkeypatch.setattr(fasttext, "train_supervised", recording)
    monkeypatch.setattr(_timing, "WARM_FIT", 0.0)   # every other first fit would be timed
    X = sp.csr_matrix(np.random.default_rng(0).poisson(1.0, size=(40, 8)).astype(float))
    row = _fasttext.fasttext_row("fastText supervised (softmax, 5 epochs)",
                                 ["__label__0", "__label__1"] * 20, X, lambda model: (1, 1),
                                 2)
    second = _fasttext.FASTTEXT_RATES[1]
    assert rates == [_fasttext.FASTTEXT_RATES[0], second, second, second]
    assert len(row[1]) == 2 and row[0].endswith(f", lr {second:g})")
