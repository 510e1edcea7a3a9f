"""The class-probability and label-set tables of ``sparsekit-compare``: their rows, the
held-out split, the budget caps, LIBLINEAR's per-label models and the label-set metrics."""
import numpy as np
import pytest
from _compare_files import shown_at, write_multilabel_svm

from sparsekit.benchmarks import _class_tables, _format
from sparsekit.benchmarks._data import Dataset, load_dataset


def test_multiclass_table_lists_every_model_against_logistic_regression():
    title, header, rows, measurements = _class_tables.compare_multiclass(1)
    assert [r[0] for r in rows][:3] == ["sparsekit SparsemaxClassifier",
                                        "sparsekit ExtremeSoftmaxSGD",
                                        "scikit-learn LogisticRegression (lbfgs)"]
    assert all(len(r) == len(header) for r in rows)
    assert rows[2][4] == "1.00x"
    for name, seconds, accuracy, support, ratio in rows[:2]:
        assert seconds.endswith(")") and ratio.endswith("x")
        assert float(accuracy) > 0.9 and 1.0 <= float(support) <= 10.0
    assert title in _format.format_table(title, header, rows)
    assert title.endswith("no fit capped in time")   # no budget; and no fastText row to name
    assert set(measurements) == {r[0] for r in rows}           # every model was measured
    assert all(len(m["seconds"]) == 1 and 0.9 < m["test_accuracy"] <= 1.0
               for m in measurements.values())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_probability_fits_are_capped_by_the_budget_and_say_so(monkeypatch):
    """On the user's large data no fit runs away: each is capped at about FIT_BUDGETS
    budgets (sparsekit's by a callback, scikit-learn's by iterations or epochs) and a row
    whose fit the cap ended is marked; LIBLINEAR has no cap to apply. A scikit-learn model
    whose one iteration takes longer than the cap is not run."""
    title, _, rows, _ = _class_tables.compare_multiclass(1, budget=1e-4)
    assert title.endswith(f"fits capped at ~{_class_tables.FIT_BUDGETS} x 0.0001 s except "
                          "LIBLINEAR's")
    names = [r[0] for r in rows]
    stopped = " [stopped by the budget]"
    assert names[:2] == ["sparsekit SparsemaxClassifier" + stopped,
                         "sparsekit ExtremeSoftmaxSGD" + stopped]
    assert rows[2][1].startswith("not run: one iteration took ")
    assert rows[3][1].startswith("not run: one epoch took ")
    assert names[4] == "LIBLINEAR -s 0 -B 1 (one-vs-rest)"
    assert all(0.0 < float(r[2]) <= 1.0 for r in rows[:2] + rows[4:])  # stopped, still a model

    monkeypatch.setattr(_class_tables, "max_iter_within", lambda *args: 1)  # one iteration fits
    names = [r[0] for r in _class_tables.compare_multiclass(1, budget=1e-4).rows]
    assert names[2:4] == [name + stopped for name in (
        "scikit-learn LogisticRegression (lbfgs)", "scikit-learn SGDClassifier (log_loss)")]
    # iterations sized below LBFGS_ITERATIONS but more than the cap lets run (later
    # iterations, with longer line searches, outlast the sizing fits'): a callback stops
    # the lbfgs fits at the cap, one-vs-rest's too, and their rows say so
    monkeypatch.setattr(_class_tables, "max_iter_within", lambda *args: 1000)
    names = [r[0] for r in _class_tables.compare_multiclass(1, budget=1e-4).rows]
    assert names[2] == "scikit-learn LogisticRegression (lbfgs)" + stopped
    digits = load_dataset("digits")
    X, y = digits.X[:300], digits.y[:300]
    data = Dataset("digit sets", X, np.stack([y % 2, y > 4, y == 3], axis=1).astype(int))
    names = [r[0] for r in _class_tables.compare_multilabel(1, data, budget=1e-4).rows]
    assert "scikit-learn OneVsRestClassifier(LogisticRegression)" + stopped in names


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_fit_that_ran_all_its_own_iterations_says_it_did_not_converge(monkeypatch):
    """The command silences ConvergenceWarning: a row whose model ran all of its own
    iterations (not a budget's cap) says "not converged in N iterations", sparsekit's as
    the peers'; one-vs-rest LogisticRegression on label sets too; models that converged, or
    have no iteration count (SGDClassifier's fixed epochs), say nothing."""
    monkeypatch.setattr(_class_tables, "LBFGS_ITERATIONS", 3)
    monkeypatch.setattr(_class_tables, "SPARSEMAX_ITERATIONS", 2)
    names = [r[0] for r in _class_tables.compare_multiclass(1).rows]
    assert names[:4] == ["sparsekit SparsemaxClassifier [not converged in 2 iterations]",
                         "sparsekit ExtremeSoftmaxSGD",
                         "scikit-learn LogisticRegression (lbfgs) [not converged in 3 "
                         "iterations]",
                         "scikit-learn SGDClassifier (log_loss)"]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 5)) * [1.0, 1e3, 1.0, 1e-3, 10.0]     # columns in other units
    Y = (X[:, :3] * [1.0, 1e-3, -1.0] + rng.normal(size=(80, 3)) > 0).astype(int)
    data = Dataset("units", X, Y)
    rows = _class_tables.compare_multilabel(1, data).rows
    assert ("scikit-learn OneVsRestClassifier(LogisticRegression) [not converged in 3 "
            "iterations]") in [r[0] for r in rows]
    monkeypatch.setattr(_class_tables, "LBFGS_ITERATIONS", 2000)
    monkeypatch.setattr(_class_tables, "SPARSEMAX_ITERATIONS", 500)
    names = [r[0] for r in _class_tables.compare_multiclass(1).rows]
    assert not any("[" in name for name in names)


def test_captions_name_the_uncapped_fits_of_their_own_rows():
    """fastText's one call is named among the fits the budget cannot stop only where the
    table has a fastText row (from FASTTEXT_MIN_CLASSES classes on)."""
    rows = [["sparsekit SparsemaxClassifier"], ["LIBLINEAR -s 0 -B 1 (one-vs-rest)"]]
    with_fasttext = rows + [["fastText supervised (softmax, 25 epochs, lr 1)"]]
    assert _class_tables._fasttext_named(rows) == []
    assert _class_tables._fasttext_named(with_fasttext) == ["fastText's"]
    cap = f"fits capped at ~{_class_tables.FIT_BUDGETS} x 10 s"
    assert (_class_tables._caps(10, ["LIBLINEAR's"] + _class_tables._fasttext_named(
        with_fasttext)) == f"{cap} except LIBLINEAR's and fastText's")
    assert (_class_tables._caps(10, [], between="LIBLINEAR's between labels")
            == f"{cap} (LIBLINEAR's between labels)")


def test_fasttext_joins_on_free_text_whatever_the_classes(tmp_path):
    """fastText has a row from FASTTEXT_MIN_CLASSES classes (labels) on, and on free text
    with fewer: a fastText file of two classes (its sentiment data sets) or of three labels
    in sets, or a table of text and labels; not on a table that also holds numbers."""
    pytest.importorskip("pandas")
    pytest.importorskip("fasttext")
    rng = np.random.default_rng(0)
    words = {"pos": ["good", "great", "fine", "lovely"], "neg": ["bad", "awful", "poor"]}
    labels = rng.choice(["pos", "neg"], 60)
    texts = [" ".join(rng.choice(words[c], 4)) + " movie plot" for c in labels]
    (tmp_path / "reviews.train").write_text("".join(f"__label__{c} {t}\n"
                                                    for c, t in zip(labels, texts)))
    (tmp_path / "reviews.csv").write_text("text,label\n" + "".join(
        f"{t},{c}\n" for c, t in zip(labels, texts)))
    (tmp_path / "mixed.csv").write_text("text,stars,label\n" + "".join(
        f"{t},{rng.integers(5)},{c}\n" for c, t in zip(labels, texts)))
    for name, joins in (("reviews.train", True), ("reviews.csv", True), ("mixed.csv", False)):
        data = load_dataset(str(tmp_path / name))
        assert data.words == joins and data.classes.size == 2
        rows = _class_tables.compare_multiclass(1, data).rows
        fasttext = [r for r in rows if r[0].startswith("fastText supervised")]
        assert len(fasttext) == joins
        if joins:
            assert float(fasttext[0][2]) > 0.9              # its test accuracy
    sets = [" ".join(f"__label__{c}" for c in rng.choice(["plot", "cast", "music"],
                                                          rng.integers(1, 3), replace=False))
            for _ in labels]
    (tmp_path / "aspects.train").write_text("".join(f"{s} {t}\n" for s, t in zip(sets, texts)))
    data = load_dataset(str(tmp_path / "aspects.train"))
    assert data.multilabel and data.words and data.classes.size == 3
    rows = _class_tables.compare_multilabel(1, data).rows
    assert [r[0] for r in rows if r[0].startswith("fastText supervised")]


def test_classes_seen_once_train_and_the_rest_split_stratified():
    y = np.array([0] * 10 + [1] * 10 + [2])          # class 2 has a single row
    data = Dataset("rare", np.arange(21.0)[:, None], y)
    X_train, X_test, y_train, y_test = _class_tables.split(data)
    assert 2 in y_train and 2 not in y_test
    assert sorted(np.concatenate([X_train, X_test]).ravel()) == list(range(21))
    assert np.bincount(y_test.astype(int)).tolist() == [3, 3]


def test_a_csv_files_split_is_encoded_on_its_training_rows(tmp_path):
    """The probability table's models see the test rows as a scikit-learn pipeline fit on
    the training rows would give them: the numbers standardized by the training rows' mean
    and deviation, not every row's (the l1 tables' matrix)."""
    pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    path = tmp_path / "shifted.csv"
    x = rng.normal(size=40)
    np.savetxt(path, np.column_stack([x, x > 0]), delimiter=",", header="x,label",
               comments="", fmt="%.6f")
    data = load_dataset(str(path))
    rows, encode = {}, data.encode

    def spy(train, test):
        rows.update(train=train, test=test)
        return encode(train, test)
    data.encode = spy
    X_train, X_test, y_train, y_test = _class_tables.split(data)
    train, test = rows["train"], rows["test"]
    assert train.size == 28 and test.size == 12
    x = np.round(x, 6)                                  # as written
    mean, std = x[train].mean(), x[train].std()
    np.testing.assert_allclose(X_train[:, 0], (x[train] - mean) / std, atol=1e-12)
    np.testing.assert_allclose(X_test[:, 0], (x[test] - mean) / std, atol=1e-12)
    assert abs(data.X[train].mean()) > 1e-3             # every row's scaling differs


def test_liblinear_label_models_stop_between_labels_after_the_budget():
    """As the one-vs-rest table's peers: the first label's model is always fit, the labels
    left after the budget are never predicted, and the row says how many were fit."""
    import scipy.sparse as sp

    pytest.importorskip("liblinear")
    X = sp.random(100, 6, density=0.5, format="csr", random_state=1)
    Y = sp.csr_matrix((X[:, :3].toarray() > 0.5).astype(int))
    Y_first = sp.csr_matrix(Y.toarray() * [1, 0, 0])      # only the first label's models
    first = _class_tables._liblinear_multilabel(X[:70], Y_first[:70], X[70:], Y[70:], 1)
    row = _class_tables._liblinear_multilabel(X[:70], Y[:70], X[70:], Y[70:], 1, budget=1e-12)
    assert row[0] == ("LIBLINEAR -s 0 -B 1 (a model per label) [stopped by the budget: "
                      "1 of 3 labels fit]")
    assert row[2:5] == first[2:5]     # the first label's model, the others never predicted
    assert first[4] > 0.0
    row = _class_tables._liblinear_multilabel(X[:70], Y[:70], X[70:], Y[70:], 1, budget=10.0)
    assert row[0] == "LIBLINEAR -s 0 -B 1 (a model per label)" and row[2] > 0.5


def _slow_label_set_metrics(Y, scores, predicted):
    """micro-F1, precision@1 and predicted labels per row, by counting."""
    Y, scores, predicted = (np.asarray(a) for a in (Y, scores, predicted))
    tp = fp = fn = hits = 0
    for y, s, p in zip(Y, scores, predicted):
        for j in range(Y.shape[1]):
            tp += bool(y[j] and p[j])
            fp += bool(p[j] and not y[j])
            fn += bool(y[j] and not p[j])
        hits += bool(y[int(np.argmax(s))])
    return 2 * tp / (2 * tp + fp + fn), hits / len(Y), predicted.sum() / len(Y)


def test_label_set_metrics_match_counting_on_ties_and_empty_rows():
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    Y = (rng.random((40, 6)) < 0.3).astype(int)
    Y[:4] = 0                                           # rows without a label
    scores = np.round(rng.random((40, 6)), 1)           # ties: argmax takes the first
    scores[4:8] = 0.5
    predicted = scores > 0.6
    expected = _slow_label_set_metrics(Y, scores, predicted)
    assert _class_tables._label_set_metrics(sp.csr_matrix(Y), scores, predicted) == \
        pytest.approx(expected, rel=1e-12)
    assert _class_tables._label_set_metrics(Y, scores, np.zeros_like(Y)) == (0.0, expected[1], 0.0)


def test_liblinear_label_models_are_liblinears_own_per_label_fits():
    """The table's LIBLINEAR row relabels one problem per label and reads each model's
    weights: its metrics are those of LIBLINEAR trained and asked per label."""
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    X = sp.random(150, 9, density=0.5, format="csr", random_state=3)
    Y = (X[:, :4].toarray() + 0.2 * rng.normal(size=(150, 4)) > 0.3).astype(int)
    Y[:, 3] = 0                          # constant in training: a constant score
    X_train, X_test, Y_train, Y_test = X[:100], X[100:], Y[:100], Y[100:]
    row = _class_tables._liblinear_multilabel(X_train, sp.csr_matrix(Y_train), X_test,
                                        sp.csr_matrix(Y_test), 1)
    scores = np.full(Y_test.shape, -1.0)
    for j in range(3):
        model = liblinearutil.train(2.0 * Y_train[:, j] - 1, X_train, "-s 0 -c 1 -B 1 -q")
        _, _, values = liblinearutil.predict(np.zeros(50), X_test, model, "-q")
        sign = 1.0 if model.get_labels()[0] == 1 else -1.0
        scores[:, j] = sign * np.ravel(values)
    assert row[2:5] == pytest.approx(_slow_label_set_metrics(Y_test, scores, scores > 0),
                                     rel=1e-12)


def test_liblinear_fits_one_model_of_two_classes_and_one_per_class_beyond():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 4))
    for labels, name in [(X[:, 0] > 0, "LIBLINEAR -s 0 -B 1"),
                         (np.digitize(X[:, 0], [-0.5, 0.5]), "LIBLINEAR -s 0 -B 1 (one-vs-rest)")]:
        y = labels.astype(int)
        row = _class_tables._liblinear_logistic(X[:60], y[:60], X[60:], y[60:], 1)
        assert row[0] == name and 0.5 < row[2] <= 1.0


def test_untimed_work_is_shown_under_the_name_of_the_model_it_prepares(monkeypatch,
                                                                        tmp_path):
    """The fits that size scikit-learn's capped fits and LIBLINEAR's copy of the data run
    before those models' timed fits: the progress display names that model then, not the
    one timed before it."""
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    shown = []
    seen = shown_at(monkeypatch, _class_tables, ["max_iter_within", "liblinear_binary"],
                    shown)
    seen.update(shown_at(monkeypatch, liblinearutil, ["problem"], shown))
    _class_tables.compare_multiclass(1, budget=10.0, announce=shown.append)
    assert seen["max_iter_within"] == [
        "scikit-learn LogisticRegression (lbfgs), untimed: sizing its iterations to the budget",
        "scikit-learn SGDClassifier (log_loss), untimed: sizing its epochs to the budget"]
    assert seen["problem"] == [
        "LIBLINEAR -s 0 -B 1 (one-vs-rest), untimed: its copy of the data"]
    seen["max_iter_within"].clear()
    data = load_dataset(str(write_multilabel_svm(tmp_path / "labels.svm")))
    _class_tables.compare_multilabel(1, data, budget=10.0, announce=shown.append)
    assert seen["max_iter_within"] == [
        "scikit-learn OneVsRestClassifier(LogisticRegression), untimed: sizing its iterations "
        "to the budget"]
    assert seen["liblinear_binary"] == [
        "LIBLINEAR -s 0 -B 1 (a model per label), untimed: its copy of the data"]
