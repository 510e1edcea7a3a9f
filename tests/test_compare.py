"""The ``sparsekit-compare`` tables (the README's first command): rows, failing peers, the
user's data files and their errors."""
import contextlib
import json
import re

import numpy as np
import pytest

from _compare_files import write_multilabel_svm, write_rows, write_svm
from sparsekit.benchmarks import compare
from sparsekit.benchmarks._data import Dataset, load_dataset


def test_multiclass_table_lists_every_model_against_logistic_regression():
    title, header, rows, measurements = compare.compare_multiclass(1)
    assert [r[0] for r in rows][:3] == ["sparsekit SparsemaxClassifier",
                                        "sparsekit ExtremeSoftmaxSGD",
                                        "scikit-learn LogisticRegression (lbfgs)"]
    assert all(len(r) == len(header) for r in rows)
    assert rows[2][4] == "1.00x"
    for name, seconds, accuracy, support, ratio in rows[:2]:
        assert seconds.endswith(")") and ratio.endswith("x")
        assert float(accuracy) > 0.9 and 1.0 <= float(support) <= 10.0
    assert title in compare.format_table(title, header, rows)
    assert set(measurements) == {r[0] for r in rows}           # every model was measured
    assert all(len(m["seconds"]) == 1 and 0.9 < m["test_accuracy"] <= 1.0
               for m in measurements.values())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_probability_fits_are_capped_by_the_budget_and_say_so(monkeypatch):
    """On the user's large data no fit runs away: each is capped at about FIT_BUDGETS
    budgets (sparsekit's by a callback, scikit-learn's by iterations or epochs) and a row
    whose fit the cap ended is marked; LIBLINEAR has no cap to apply. A scikit-learn model
    whose one iteration takes longer than the cap is not run."""
    rows = compare.compare_multiclass(1, budget=1e-4).rows
    names = [r[0] for r in rows]
    stopped = " [stopped by the budget]"
    assert names[:2] == ["sparsekit SparsemaxClassifier" + stopped,
                         "sparsekit ExtremeSoftmaxSGD" + stopped]
    assert rows[2][1].startswith("not run: one iteration took ")
    assert rows[3][1].startswith("not run: one epoch took ")
    assert names[4] == "LIBLINEAR -s 0 -B 1 (one-vs-rest)"
    assert all(0.0 < float(r[2]) <= 1.0 for r in rows[:2] + rows[4:])  # stopped, still a model

    monkeypatch.setattr(compare, "_max_iter_within", lambda *args: 1)   # one iteration fits
    names = [r[0] for r in compare.compare_multiclass(1, budget=1e-4).rows]
    assert names[2:4] == [name + stopped for name in (
        "scikit-learn LogisticRegression (lbfgs)", "scikit-learn SGDClassifier (log_loss)")]


@pytest.mark.parametrize("error, shown", [
    (TypeError("an API change"), "error: TypeError: an API change"),
    (ValueError("first line.\nsecond line"), "error: ValueError: first line. second line"),
])
def test_a_peer_failing_its_timing_fit_is_listed_with_its_error(monkeypatch, error, shown):
    """The fit that sizes a peer's cap fails as the measured one would: the table still
    comes, with the error in that peer's row, on one line."""
    from sklearn.linear_model import LogisticRegression

    def broken(self, X, y, sample_weight=None):
        raise error
    monkeypatch.setattr(LogisticRegression, "fit", broken)
    rows = {r[0]: r for r in compare.compare_multiclass(1, budget=10.0).rows}
    assert rows["scikit-learn LogisticRegression (lbfgs)"][1] == shown
    assert rows["sparsekit SparsemaxClassifier"][1].endswith(")")


def test_a_failing_peer_is_listed_with_its_error_and_the_others_still_run(monkeypatch):
    solvers = compare._l1_solvers

    def with_broken_peers(X, y, C, budget):
        yield next(solvers(X, y, C))            # sparsekit's

        def broken(tol):
            raise TypeError("an API change")
        yield "broken peer", broken
        yield "absent peer", None

    monkeypatch.setattr(compare, "_l1_solvers", with_broken_peers)
    rows = compare.compare_l1_logistic(1).rows
    by_name = {r[0]: r for r in rows}
    assert by_name["broken peer"][1] == "error: TypeError: an API change"
    assert by_name["absent peer"][1] == "not installed"
    assert by_name["sparsekit L1LogisticOBA"][4] == "1.00x"
    assert "rel. gap 0.0e+00" in by_name["sparsekit L1LogisticOBA"][2]


def test_repeat_must_be_positive():
    with pytest.raises(SystemExit):
        compare.main(["--repeat", "0"])


# --- the command on the user's data


def test_a_binary_file_gets_the_l1_table_and_the_probability_table(tmp_path, capsys):
    path = write_svm(tmp_path / "tiny.svm")
    compare.main([str(path), "--repeat", "1", "--C", "0.5"])
    out = capsys.readouterr().out
    assert "l1-logistic (LIBLINEAR -s 6 objective), tiny.svm (60, 8), C=0.5" in out
    assert "class probabilities, tiny.svm (60, 8), 2 classes" in out
    assert "sparsekit L1LogisticOBA" in out and "sparsekit SparsemaxClassifier" in out
    assert "ExtremeSoftmaxSGD" not in out       # a softmax for many classes, not two


def test_a_multiclass_compressed_file_gets_the_l1_and_probability_tables(tmp_path, capsys):
    import gzip

    plain = write_svm(tmp_path / "three.svm", n=90, classes=3)
    packed = tmp_path / "three.svm.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    compare.main([str(packed), "--repeat", "1", "--json", "--C", "2"])
    report = json.loads(capsys.readouterr().out)
    assert [t["data"] for t in report] == ["three.svm.gz"] * 3
    assert [t["test"] for t in report] == [None] * 3               # a 70/30 split
    ovr, l1, proba = report
    assert ovr["title"].startswith("l1-logistic one-vs-rest (LIBLINEAR -s 6 objective for "
                                   "each class against the others, summed), three.svm.gz "
                                   "(90, 8), 3 classes, C=2")
    assert ovr["rows"][0]["solver"] == "sparsekit L1LogisticOBA"
    assert "LIBLINEAR -s 6" in ovr["measurements"]
    assert l1["title"].startswith("multinomial l1-logistic, three.svm.gz (90, 8), 3 classes, "
                                  "C=2")
    assert [row["solver"] for row in l1["rows"]] == ["sparsekit L1LogisticOBA",
                                                     "scikit-learn saga"]
    objectives = [m["objective"] for m in l1["measurements"].values()]
    assert max(objectives) - min(objectives) < 1e-5 * min(objectives)  # the same problem
    assert proba["title"].startswith("class probabilities, three.svm.gz (90, 8), 3 classes")
    names = [row["model"] for row in proba["rows"]]
    assert names[:3] == ["sparsekit SparsemaxClassifier", "sparsekit ExtremeSoftmaxSGD",
                         "scikit-learn LogisticRegression (lbfgs)"]
    assert proba["rows"][2]["time / LogisticRegression"] == "1.00x"
    seconds = proba["measurements"]["sparsekit SparsemaxClassifier"]["seconds"]
    assert len(seconds) == 1 and seconds[0] > 0      # the raw numbers, for machines


def test_a_files_empty_columns_are_left_out_for_every_model(tmp_path, capsys):
    """Hashed features: a file whose 8 used columns lie among 2**24 gets the tables of the
    same file with its columns numbered 1 to 8 (the same objectives and test accuracies),
    and the titles give both column counts; the peers never see the empty columns
    (LogisticRegression's L-BFGS would keep vectors of 2**24 weights per class)."""
    compact = write_svm(tmp_path / "compact.svm", n=90, classes=3)
    places = np.sort(np.random.default_rng(1).choice(2**24, 8, replace=False)) + 1
    wide = tmp_path / "wide.svm"
    wide.write_text("".join(
        " ".join([tokens[0]] + [f"{places[int(t.split(':')[0]) - 1]}:{t.split(':')[1]}"
                                for t in tokens[1:]]) + "\n"
        for tokens in map(str.split, compact.read_text().splitlines())))
    reports = []
    for path in (compact, wide):
        compare.main([str(path), "--repeat", "1", "--json", "--budget", "100"])
        reports.append(json.loads(capsys.readouterr().out))
    titles = [table["title"] for table in reports[1]]
    assert titles[0].startswith("l1-logistic one-vs-rest (LIBLINEAR -s 6 objective for each "
                                "class against the others, summed), wide.svm (90, 8) (the 8 "
                                f"used columns of {places[-1]}), 3 classes")
    assert titles[1].startswith("multinomial l1-logistic, wide.svm (90, 8) (the 8 used "
                                f"columns of {places[-1]}), 3 classes")
    assert titles[2].startswith("class probabilities, wide.svm (90, 8) (the 8 used columns")
    for small, large in zip(*reports):
        for name, m in small["measurements"].items():
            for metric in ("objective", "test_accuracy"):
                if metric in m:
                    assert large["measurements"][name][metric] == pytest.approx(
                        m[metric], rel=1e-6, abs=1e-9), (name, metric)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")     # saga's step on an empty X
def test_a_file_without_entries_keeps_its_column(tmp_path, capsys):
    """With no stored entry at all there is no used column to keep: the models still get
    one (an intercept-only fit), not an X of zero columns that every one of them refuses."""
    path = tmp_path / "empty.svm"
    path.write_text("1\n-1\n" * 4)
    compare.main([str(path), "--repeat", "1", "--json"])
    l1, proba = json.loads(capsys.readouterr().out)
    assert "empty.svm (8, 1), C=1" in l1["title"]
    assert "objective" in l1["measurements"]["sparsekit L1LogisticOBA"]
    assert "test_accuracy" in proba["measurements"]["sparsekit SparsemaxClassifier"]


def test_multinomial_table_objective_is_scikit_learns():
    """The table's objective is the one LogisticRegression(l1) minimizes: its value at
    OBA's solution matches a direct computation from predict_proba."""
    title, header, rows, measurements = compare.compare_l1_multinomial(1, C=0.5)
    assert "digits (1797, 64), 10 classes, C=0.5" in title
    from sklearn.datasets import load_digits

    from sparsekit import L1LogisticOBA
    X, y = load_digits(return_X_y=True)
    est = L1LogisticOBA(C=0.5, tol=1e-8, multiclass="multinomial").fit(X / 16, y)
    nll = -np.log(est.predict_proba(X / 16)[np.arange(len(y)), y]).sum()
    F = np.abs(est.coef_).sum() + 0.5 * nll
    assert measurements["sparsekit L1LogisticOBA"]["objective"] == pytest.approx(F, rel=1e-10)
    assert rows[0][4] == "1.00x" and "rel. gap" in rows[1][2]


@pytest.mark.parametrize("content, match", [
    (None, "cannot read .*missing.svm.*not found"),
    (b"\xfd7zXZ\x00 truncated", "cannot read .*corrupt or truncated"),
    (b"1 1:0.5\n0 0:1\n", "cannot read .*column indices start at 1"),
    (b"0.5 1:1\n1.5 2:1\n2.5 1:2\n", "labels are continuous, not classes"),
    (b"1 1:1\n1 2:1\n-1 1:2\n", "at least two classes need 2 rows or more"),
    # integer targets of a regression: more classes than a stratified split holds
    (b"".join(b"%d 1:%d\n%d 2:1\n" % (k, k, k) for k in range(1, 6)),
     "5 classes of 2 rows or more do not fit a stratified 30% test split of 3 rows .*a "
     "regression target"),
    (b"1 0:1\n-1 1:1\n", "column indices start at 1 .*use --zero-based"),
    (b"1 1:1\n2 2:1\n1 1:nan\n2 2:2\n", r"data row 3 \(from 1\) holds a NaN or infinite"),
    (b"1,2 1:1\n2 2:1\n1 1:inf\n 2:2\n", r"data row 3 \(from 1\) holds a NaN or infinite"),
    # multi-label files with two rows, with one label, with the same set on every row
    (b"1,2 1:1\n2 1:2\n", "multi-label set needs 4 rows or more"),
    (b"1 1:1\n 1:2\n1 2:1\n 2:2\n", "multi-label set needs 4 rows or more"),
    (b"1,2 1:1\n1,2 1:2\n1,2 2:1\n1,2 2:2\n", "multi-label set needs 4 rows or more"),
    # a repository's web page of the file, saved in place of the file
    (b"\n\n<!DOCTYPE html>\n<html lang='en'>\n<head></head></html>\n",
     "is a web page \\(HTML\\), not a data file: download the file itself"),
    (b"<HTML><body>1 1:1</body></HTML>", "is a web page"),
])
def test_an_unreadable_file_is_a_clear_error_not_a_traceback(tmp_path, capsys, content,
                                                             match):
    path = tmp_path / ("missing.svm" if content is None else
                       "bad.svm.xz" if content.startswith(b"\xfd7z") else "bad.svm")
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SystemExit) as exit_info:
        compare.main([str(path)])
    assert exit_info.value.code == 2
    assert re.search(match, capsys.readouterr().err)


def test_a_spreadsheet_or_a_binary_file_is_a_short_clear_error(tmp_path, capsys):
    """A workbook is refused by its name with what to do; any other binary file gets the
    LIBSVM reader's error cut short (it quoted the whole first "number": kilobytes)."""
    workbook, binary = tmp_path / "sales.xlsx", tmp_path / "sales.bin"
    for path in (workbook, binary):
        path.write_bytes(b"PK\x03\x04" + bytes(5000))
    messages = []
    for path in (workbook, binary):
        with pytest.raises(SystemExit) as exit_info:
            compare.main([str(path)])
        assert exit_info.value.code == 2
        messages.append(capsys.readouterr().err.splitlines()[-1])
    assert "is a spreadsheet workbook: save its sheet as CSV" in messages[0]
    assert "as a LIBSVM file (or a .csv/.tsv/.arff file by its name)" in messages[1]
    assert len(messages[1]) < 500


def test_without_data_it_compares_on_the_shipped_a9a_and_digits(monkeypatch):
    seen = []
    monkeypatch.setattr(compare, "tables", lambda data, *args: seen.append(data) or [])
    compare.main([])
    assert [d.name for d in seen] == ["a9a", "digits"]
    assert seen[0].X.shape == (32561, 123) and seen[0].classes.tolist() == [-1.0, 1.0]
    assert seen[0].X.indices.dtype == np.int32        # what saga, skglm and celer accept


def _installed_l1_peers():
    """The l1 tables' peers that import, in their rows' order."""
    import importlib

    peers = []
    for module, name in (("liblinear", "LIBLINEAR -s 6"), ("skglm", "skglm"),
                         ("celer", "celer")):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
            peers.append(name)
    return peers


def test_on_a_terminal_a_spinner_names_each_model_and_leaves_the_tables_clean(
        monkeypatch, capsys):
    pytest.importorskip("rich")
    import sys

    announced = []
    real = compare._progress

    @contextlib.contextmanager
    def spying():
        with real() as status:
            yield lambda text: announced.append(text) or status(text)

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(compare, "_progress", spying)
    compare.main(["digits", "--repeat", "1"])
    captured = capsys.readouterr()
    peers = _installed_l1_peers()                    # a peer not installed is not timed
    assert announced[:4 + len(peers)] == [f"digits: {name}" for name in (
        "sparsekit L1LogisticOBA", *peers, "sparsekit L1LogisticOBA", "scikit-learn saga",
        "sparsekit SparsemaxClassifier")]
    assert len(announced) == 7 + len(peers) + ("LIBLINEAR -s 6" in peers)
    assert captured.out.startswith("l1-logistic one-vs-rest (LIBLINEAR -s 6 objective")
    assert "\n\nmultinomial l1-logistic, digits" in captured.out
    assert "\n\nclass probabilities, digits" in captured.out


def test_plot_writes_the_suboptimality_and_accuracy_figures(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = write_svm(tmp_path / "tiny.svm")
    compare.main([str(path), "--repeat", "1", "--plot", str(tmp_path / "figures")])
    written = sorted(p.name for p in (tmp_path / "figures").iterdir())
    assert written == ["tiny.svm-l1.png", "tiny.svm-proba.png"]
    assert all((tmp_path / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
               for name in written)
    assert "wrote" in capsys.readouterr().err


def _usage_error(argv, capsys):
    """The message of the usage error (exit code 2) that ``argv`` ends in."""
    with pytest.raises(SystemExit) as exit_info:
        compare.main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_plot_into_a_path_that_cannot_be_a_directory_is_a_clear_error(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert "--plot: cannot create" in _usage_error(
        ["digits", "--plot", str(blocker / "figures")], capsys)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")   # tol 0.1
def test_the_l1_ladder_reaches_the_tables_objective_from_above():
    data = Dataset("tiny", *_tiny_binary())
    traces = compare.l1_traces(data, C=1.0)
    best = compare.compare_l1_logistic(1, data=data).measurements
    F_star = best["sparsekit L1LogisticOBA"]["objective"]
    oba = traces["sparsekit L1LogisticOBA"]
    assert len(oba) == len(compare.L1_LADDER)
    assert all(F >= F_star * (1 - 1e-12) for _, F in oba)
    assert oba[-1][1] == pytest.approx(F_star, rel=1e-10)
    assert len(traces["scikit-learn saga"]) == compare.L1_LADDER.index(1e-6) + 1


def _tiny_binary(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def test_zero_based_files_are_read_with_the_flag(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = _tiny_binary()
    dump_svmlight_file(X, y, str(tmp_path / "sklearn.svm"))          # numbered from 0
    compare.main([str(tmp_path / "sklearn.svm"), "--zero-based", "--repeat", "1"])
    assert "sklearn.svm (80, 6)" in capsys.readouterr().out


def test_a_csv_file_with_text_columns_and_text_labels_gets_every_row(tmp_path, capsys):
    """A scikit-learn user's file: a header, numbers and text, the labels as words; every
    model, LIBLINEAR's included, fits the coded labels."""
    pytest.importorskip("pandas")
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame
    frame["species"] = np.array(["setosa", "versicolor", "virginica"])[frame.pop("target")]
    frame.insert(2, "colour", np.random.default_rng(0).choice(["red", "blue"], len(frame)))
    frame.to_csv(tmp_path / "iris.csv", index=False)
    compare.main([str(tmp_path / "iris.csv"), "--label", "species", "--repeat", "1",
                  "--json"])
    ovr, l1, proba = json.loads(capsys.readouterr().out)
    described = ("iris.csv (150, 6) (label 'species' coded setosa=0, versicolor=1, "
                 "virginica=2; 4 numeric columns standardized; 1 text column one-hot "
                 "encoded into 2)")
    assert ovr["title"].startswith("l1-logistic one-vs-rest (LIBLINEAR -s 6 objective for "
                                   f"each class against the others, summed), {described}, "
                                   "3 classes")
    assert l1["title"].startswith(f"multinomial l1-logistic, {described}, 3 classes")
    assert proba["title"].startswith(f"class probabilities, {described}, 3 classes")
    accuracies = {row["model"]: float(row["test accuracy"]) for row in proba["rows"]}
    assert len(accuracies) == 5 and min(accuracies.values()) > 0.7, accuracies


def test_warnings_print_as_one_line_each(tmp_path, capsys):
    pytest.importorskip("pandas")
    path = tmp_path / "people.csv"
    rows = "\n".join(f"{i},{i % 3},{i % 2}" for i in range(1, 31))
    path.write_text(f"id,group,label\n{rows}\n")
    compare.main([str(path), "--repeat", "1", "--json"])
    err = capsys.readouterr().err.splitlines()
    assert f"sparsekit-compare: warning: {str(path)!r}: the numeric column 'id' numbers the rows " \
        "1..30 (an identifier?): it is a feature here; leave it out of the file if it should " \
        "not be one" in err
    assert not any("UserWarning" in line for line in err)


def test_label_is_for_csv_files_only(tmp_path, capsys):
    path = write_svm(tmp_path / "tiny.svm")
    assert "--label applies to CSV, TSV and ARFF files" in _usage_error([str(path), "--label", "0"],
                                                                  capsys)


def test_a_bad_csv_file_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    pytest.importorskip("pandas")
    path = tmp_path / "bad.csv"
    path.write_text("age,city,y\n25,Oslo,1\n27,Lyon,\n31,Oslo,1\n")
    assert "the label column 'y' misses 1 value(s), the first on line 3" in _usage_error(
        [str(path)], capsys)


def test_classes_seen_once_train_and_the_rest_split_stratified():
    y = np.array([0] * 10 + [1] * 10 + [2])          # class 2 has a single row
    data = Dataset("rare", np.arange(21.0)[:, None], y)
    X_train, X_test, y_train, y_test = compare._split(data)
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
    X_train, X_test, y_train, y_test = compare._split(data)
    train, test = rows["train"], rows["test"]
    assert train.size == 28 and test.size == 12
    x = np.round(x, 6)                                  # as written
    mean, std = x[train].mean(), x[train].std()
    np.testing.assert_allclose(X_train[:, 0], (x[train] - mean) / std, atol=1e-12)
    np.testing.assert_allclose(X_test[:, 0], (x[test] - mean) / std, atol=1e-12)
    assert abs(data.X[train].mean()) > 1e-3             # every row's scaling differs


def test_fasttext_joins_on_many_classes_on_its_tokens(tmp_path, capsys):
    pytest.importorskip("fasttext")
    rng = np.random.default_rng(0)
    classes, n = 20, 400
    lines = []
    for i in range(n):
        label = i % classes
        tokens = {1 + label * 3 + k for k in range(3)} | set(rng.choice(60, 2) + 1)
        lines.append(f"{label} " + " ".join(f"{j}:1" for j in sorted(tokens)))
    path = tmp_path / "topics.svm"
    path.write_text("\n".join(lines) + "\n")
    compare.main([str(path), "--repeat", "1", "--json"])
    table = json.loads(capsys.readouterr().out)[-1]
    fasttext_rows = [r for r in table["rows"] if r["model"].startswith("fastText")]
    assert len(fasttext_rows) == 1, table["rows"]
    assert float(fasttext_rows[0]["test accuracy"]) > 0.9     # chance: 0.05


def test_fasttext_initial_vectors_cover_every_training_token(tmp_path):
    import scipy.sparse as sp

    X = sp.csr_matrix(np.array([[1.0, 0, 2], [0, 0, 1]]))
    compare._fasttext_initial_vectors(tmp_path / "init.vec", compare._feature_words(X))
    header, *rows = (tmp_path / "init.vec").read_text().splitlines()
    assert header == f"3 {compare.FASTTEXT_DIM}"
    assert [r.split()[0] for r in rows] == ["</s>", "f0", "f2"]
    values = np.array([r.split()[1:] for r in rows], float)
    assert np.all(np.abs(values) <= 1.0 / compare.FASTTEXT_DIM)


def test_tokens_repeat_whole_counts_and_keep_other_values_once():
    import scipy.sparse as sp

    assert compare._tokens(sp.csr_matrix(np.array([[2.0, 0, 1]]))) == ["f0 f0 f2"]
    assert compare._tokens(sp.csr_matrix(np.array([[0.5, 0, 1]]))) == ["f0 f2"]


def test_saga_epochs_are_capped_by_the_budget():
    X, y = _tiny_binary(n=2000)
    assert compare._saga_max_iter(X, y, 1.0, np.inf) == 20000
    # ~30 ms for thousands of epochs: one epoch (~2 ms) within it on a loaded machine too
    capped = compare._saga_max_iter(X, y, 1.0, 1e-2)
    assert 1 <= capped < 20000


def test_iteration_caps_count_a_fits_fixed_part_apart(monkeypatch):
    """A fit's time is a fixed part plus one per iteration (a one-vs-rest fit of many
    labels is mostly per-label setup at one iteration): the cap counts the fixed part once,
    where dividing the budget by a one-iteration fit gave several times fewer iterations;
    the part per iteration is measured on fits long enough to be timed. The fits advance a
    fake clock by their modelled time."""
    import types

    clock = [0.0]
    monkeypatch.setattr(compare, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))

    def fit_with(seconds_fixed, seconds_per):
        def fit(k, step):
            clock[0] += seconds_fixed + seconds_per * k
        return fit

    budget = 0.3 / compare.FIT_BUDGETS                  # 0.3 s for the capped fit
    # (0.3 - 0.02) / 0.005 = 56, where 0.3 / 0.025 gave 12
    assert compare._max_iter_within(fit_with(0.02, 0.005), 100, budget, 10_000) in (55, 56)
    # a tenth of a one-iteration fit per iteration at least: (0.3 - 0.045) / 0.005 = 51
    assert compare._max_iter_within(fit_with(0.05, 0.0), 100, budget, 10_000) in (50, 51)
    assert compare._max_iter_within(fit_with(0.0, 0.01), 100, budget, 10_000) in (29, 30)
    assert compare._max_iter_within(fit_with(0.0, 0.01), 100, budget, 7) == 7
    assert compare._max_iter_within(fit_with(0.0, 0.01), 100, np.inf, 7) == 7

    def cheap_start(k, step):     # 1 s of setup, a first iteration of 0.02 s, then 0.4 s
        clock[0] += 1.0 + (0.02 if k == 1 else 0.1 + 0.4 * (k - 2))
    # lbfgs on 210,000 rows of 50 classes took 1.02 and 1.10 s for one and two iterations,
    # and 125 s for the 286 these made fit in 30 s: the fits double until they differ by
    # SIZING_SHARE of the cap (4 iterations, 1.9 s): (30 - (1.1 - 2 x 0.4)) / 0.4 = 74
    assert compare._max_iter_within(cheap_start, 100, 10.0, 2000) == 74

    def warming(k, step):         # the first two iterations at half the cost of the others
        clock[0] += 0.002 * k if k <= 2 else 0.004 * k
    # sized by fits doubled until they differ by 0.3 s (SIZING_SHARE of 30 s): 30 / 0.004 =
    # 7500, where the fits of 1 and 2 iterations gave 15000, twice the time
    assert compare._max_iter_within(warming, 100, 30.0 / compare.FIT_BUDGETS,
                                    100_000) in (7499, 7500)


def test_a_fit_whose_one_iteration_passes_the_cap_is_not_run(monkeypatch):
    """saga's first epoch took 390 s on a 300,000 x 50,000 file of 50 classes against a cap
    of 30 s, and the command ran it to learn so. On many rows the one-iteration fit is
    first estimated from fits on every 64th, 32nd, ... row (a fixed part not scaled): over
    the cap, the full fit never runs and the row says why; far below it, the rows stop
    doubling. On few rows, a one-iteration fit over the cap is the only sizing fit, and one
    above a third of the cap sizes the fit alone. The fits advance a fake clock."""
    import types

    clock = [0.0]
    monkeypatch.setattr(compare, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    calls = []
    n = 400_000

    def fit_with(seconds_fixed, seconds_per_row, power=1.0):
        def fit(k, step):
            calls.append((k, step))
            clock[0] += seconds_fixed + k * seconds_per_row * (-(-n // step)) ** power
        return fit

    budget = 10.0                                       # a cap of 30 s
    # quadratic in the rows: 1/64 of them 0.2 s, 1/32 0.8 s, all 820 s; the estimate
    # 0.8 + 0.6 / 6250 x 387,500 = 38 s
    reason = compare._max_iter_within(fit_with(0.0, 5.125e-9, 2.0), n, budget, 20000,
                                      "epoch")
    assert reason == ("not run: one epoch would take about 38 s (timed on 12,500 of the "
                      "400,000 rows), more than the cap of ~30 s (3 x --budget)")
    assert calls == [(1, 64), (1, 32)]
    calls.clear()
    # a power of 1.2, 40 s in all: the estimates from 1/32 ... 1/4 of the rows grow from 22
    # to 33 s, so the rows double until a quarter of them (7.6 s)
    reason = compare._max_iter_within(fit_with(0.0, 40 / n ** 1.2, 1.2), n, budget, 20000)
    assert reason == ("not run: one iteration would take about 33 s (timed on 100,000 of "
                      "the 400,000 rows), more than the cap of ~30 s (3 x --budget)")
    assert calls == [(1, 64), (1, 32), (1, 16), (1, 8), (1, 4)]
    calls.clear()
    # a fixed part of 5 s and 4 s an iteration on all rows: the estimate (9 s) is less than
    # twice a fit on 1/32 of the rows, so the iterations are sized on every row: (30 - 5) / 4
    assert compare._max_iter_within(fit_with(5.0, 1e-5), n, budget, 20000) == 6
    assert calls == [(1, 64), (1, 32), (1, 1), (2, 1)]
    calls.clear()
    # cheap: two small fits, then the sizing on every row
    assert compare._max_iter_within(fit_with(0.0, 1e-8), n, budget, 20000) > 100
    assert calls[:3] == [(1, 64), (1, 32), (1, 1)]
    calls.clear()
    reason = compare._max_iter_within(fit_with(95.0, 0.0), 100, budget, 20000, "epoch")
    assert reason == "not run: one epoch took 95.0 s, more than the cap of ~30 s (3 x --budget)"
    assert calls == [(1, 1)]
    calls.clear()
    assert compare._max_iter_within(fit_with(0.0043, 0.0), 100, 0.001, 20000) == (
        "not run: one iteration took 0.0043 s, more than the cap of ~0.003 s (3 x --budget)")
    calls.clear()
    assert compare._max_iter_within(fit_with(12.0, 0.0), 100, budget, 20000) == 2
    assert calls == [(1, 1)]
    row = compare._measure("scikit-learn saga", compare._unless_too_slow(reason, print), 3,
                           None)
    assert row == ["scikit-learn saga", reason, "", "", ""]


def test_a_model_not_run_leaves_the_other_rows_and_no_ratio(monkeypatch):
    """A model not run: its row says why and the others are measured; in the probability
    table, where LogisticRegression is the base, the others have no ratio."""
    monkeypatch.setattr(compare, "_max_iter_within",
                        lambda fit_with, n_rows, budget, most, unit="iteration": "not run: slow")
    rows = {r[0]: r for r in compare.compare_l1_logistic(1, budget=1.0).rows}
    assert rows["scikit-learn saga"][1:] == ["not run: slow", "", "", ""]
    assert rows["sparsekit L1LogisticOBA"][4] == "1.00x"
    rows = {r[0]: r for r in compare.compare_l1_multinomial(1, budget=1.0).rows}
    assert rows["scikit-learn saga"][1:] == ["not run: slow", "", "", ""]
    traces = compare.l1_traces(compare.load_dataset("breast_cancer"), budget=1.0)
    assert "scikit-learn saga" not in traces and "sparsekit L1LogisticOBA" in traces
    rows = {r[0]: r for r in compare.compare_multiclass(1, budget=1.0).rows}
    assert rows["scikit-learn LogisticRegression (lbfgs)"][1:] == ["not run: slow", "", "",
                                                                  ""]
    assert rows["scikit-learn SGDClassifier (log_loss)"][1] == "not run: slow"
    assert rows["sparsekit SparsemaxClassifier"][1].endswith(")")
    assert rows["sparsekit SparsemaxClassifier"][-1] == "n/a"


def test_liblinear_label_models_stop_between_labels_after_the_budget():
    """As the one-vs-rest table's peers: the first label's model is always fit, the labels
    left after the budget are never predicted, and the row says how many were fit."""
    import scipy.sparse as sp

    pytest.importorskip("liblinear")
    X = sp.random(100, 6, density=0.5, format="csr", random_state=1)
    Y = sp.csr_matrix((X[:, :3].toarray() > 0.5).astype(int))
    Y_first = sp.csr_matrix(Y.toarray() * [1, 0, 0])      # only the first label's models
    first = compare._liblinear_multilabel(X[:70], Y_first[:70], X[70:], Y[70:], 1)
    row = compare._liblinear_multilabel(X[:70], Y[:70], X[70:], Y[70:], 1, budget=1e-12)
    assert row[0] == ("LIBLINEAR -s 0 -B 1 (a model per label) [stopped by the budget: "
                      "1 of 3 labels fit]")
    assert row[2:5] == first[2:5]     # the first label's model, the others never predicted
    assert first[4] > 0.0
    row = compare._liblinear_multilabel(X[:70], Y[:70], X[70:], Y[70:], 1, budget=10.0)
    assert row[0] == "LIBLINEAR -s 0 -B 1 (a model per label)" and row[2] > 0.5


def test_time_limit_stops_the_multinomial_fit_after_an_iteration():
    """The multinomial table caps OBA's fit by a callback, as saga's by its epochs: a limit
    of 0 s stops it after its first iteration, without a ConvergenceWarning."""
    import warnings

    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning

    from sparsekit import L1LogisticOBA
    X, y = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = L1LogisticOBA(C=10.0, multiclass="multinomial").set_callbacks(
            compare._TimeLimit(0.0)).fit(X / 16, y)
    assert est.n_iter_.tolist() == [1]
    full = L1LogisticOBA(C=10.0, multiclass="multinomial").fit(X / 16, y)
    assert full.n_iter_[0] > 1


def test_a_solver_that_stops_above_the_best_objective_says_so_beside_its_time_ratio():
    """A capped fit's time is where it stopped, not its time to the answer: its ratio cell
    says how far above the best objective it ended (saga on Bibtex: 2.8e-01)."""
    rows = [["sparsekit L1LogisticOBA", [2.0, 2.0, 2.0], 100.0, 5, ""],
            ["scikit-learn saga", [1.0, 1.0, 1.0], 128.0, 3, ""],
            ["LIBLINEAR -s 6", [4.0, 4.0, 4.0], 100.00001, 5, ""]]
    table = compare._objective_table("t", "F(w)", "w", rows)
    cells = {r[0]: r[4] for r in table.rows}
    assert cells["scikit-learn saga"] == "0.50x (stopped 2.8e-01 above)"
    assert cells["LIBLINEAR -s 6"] == "2.00x"                  # 1e-7 above: solved
    assert cells["sparsekit L1LogisticOBA"] == "1.00x"


def test_skglm_compiles_on_a_few_rows_before_any_timed_fit(monkeypatch):
    """skglm's numba kernels compile on its first fit: that fit is an untimed one on 25 rows
    of each class, so that neither a timed fit nor a warm-up longer than the budget (which
    would be the row's time) pays for the compilation."""
    skglm = pytest.importorskip("skglm")
    rows, fit = [], skglm.SparseLogisticRegression.fit

    def recording(self, X, y):
        rows.append(X.shape[0])
        return fit(self, X, y)

    monkeypatch.setattr(skglm.SparseLogisticRegression, "fit", recording)
    X, y = compare._l1_problem(load_dataset("breast_cancer"))
    solvers = dict(compare._l1_solvers(X, y, 1.0))
    assert rows == [50]
    w = solvers["skglm"](1e-6)
    assert rows == [50, X.shape[0]] and w.shape == (X.shape[1],)


def test_skglm_failing_its_compiling_fit_is_listed_with_its_error(monkeypatch):
    """A skglm that fails already on the few rows it compiles on: the l1 table still comes,
    with the error in skglm's row."""
    skglm = pytest.importorskip("skglm")

    def broken(self, X, y):
        raise TypeError("an API change")
    monkeypatch.setattr(skglm.SparseLogisticRegression, "fit", broken)
    rows = {r[0]: r for r in compare.compare_l1_logistic(1, budget=10.0).rows}
    assert rows["skglm"][1] == "error: TypeError: an API change"
    assert rows["sparsekit L1LogisticOBA"][1].endswith(")")


# --- multi-label files


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


def test_a_multilabel_file_gets_the_label_set_table(tmp_path, capsys):
    """Comma-separated label sets (rows without a label included) are read as a
    multi-label set: one table, every model measured against OneVsRest
    LogisticRegression, the metrics in range and the models better than chance."""
    path = write_multilabel_svm(tmp_path / "sets.svm")
    compare.main([str(path), "--repeat", "1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert len(report) == 1
    table = report[0]
    assert table["title"].startswith("label sets, sets.svm (120, 8), 5 labels (70/30 split;")
    assert re.search(r"SparsemaxClassifier leaves the \d+ training rows without a label out",
                     table["title"])
    assert re.search(r"SparsemaxClassifier on the simplex predicts the labels above 0\.\d+; "
                     r"SparsemaxClassifier on the box predicts the labels above 0\.\d+, "
                     "the training rows' best micro-F1 cuts", table["title"])
    names = [row["model"] for row in table["rows"]]
    assert names == ["sparsekit SparsemaxClassifier",
                     "sparsekit SparsemaxClassifier(polytope='box')",
                     "scikit-learn OneVsRestClassifier(LogisticRegression)",
                     "LIBLINEAR -s 0 -B 1 (a model per label)"]
    assert table["rows"][2]["time / OneVsRest LogisticRegression"] == "1.00x"
    for name, m in table["measurements"].items():
        assert 0.6 < m["micro_f1"] <= 1.0, name          # a label is one feature's sign
        assert 0.6 < m["precision_at_1"] <= 1.0, name
        assert 0.5 < m["mean_labels"] < 5.0, name


def test_label_set_metrics_match_counting_on_ties_and_empty_rows():
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    Y = (rng.random((40, 6)) < 0.3).astype(int)
    Y[:4] = 0                                           # rows without a label
    scores = np.round(rng.random((40, 6)), 1)           # ties: argmax takes the first
    scores[4:8] = 0.5
    predicted = scores > 0.6
    expected = _slow_label_set_metrics(Y, scores, predicted)
    assert compare._label_set_metrics(sp.csr_matrix(Y), scores, predicted) == \
        pytest.approx(expected, rel=1e-12)
    assert compare._label_set_metrics(Y, scores, np.zeros_like(Y)) == (0.0, expected[1], 0.0)


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
    row = compare._liblinear_multilabel(X_train, sp.csr_matrix(Y_train), X_test,
                                        sp.csr_matrix(Y_test), 1)
    scores = np.full(Y_test.shape, -1.0)
    for j in range(3):
        model = liblinearutil.train(2.0 * Y_train[:, j] - 1, X_train, "-s 0 -c 1 -B 1 -q")
        _, _, values = liblinearutil.predict(np.zeros(50), X_test, model, "-q")
        sign = 1.0 if model.get_labels()[0] == 1 else -1.0
        scores[:, j] = sign * np.ravel(values)
    assert row[2:5] == pytest.approx(_slow_label_set_metrics(Y_test, scores, scores > 0),
                                     rel=1e-12)


def test_a_label_in_every_or_no_training_row_does_not_break_a_row(tmp_path, capsys):
    path = tmp_path / "constant.svm"
    rng = np.random.default_rng(4)
    lines = []
    for i in range(60):           # label 1 on every row, label 3 on none of the training
        x = rng.normal(size=4)
        labels = ["1"] + (["2"] if x[0] > 0 else []) + (["3"] if i == 59 else [])
        lines.append(",".join(labels) + " " + " ".join(f"{j + 1}:{v:.3f}"
                                                       for j, v in enumerate(x)))
    path.write_text("\n".join(lines) + "\n")
    compare.main([str(path), "--repeat", "1", "--json"])
    rows = json.loads(capsys.readouterr().out)[0]["rows"]
    assert all(row["fit time"].endswith(")") for row in rows), rows


def test_fasttext_joins_a_multilabel_set_from_twenty_labels(tmp_path, capsys):
    pytest.importorskip("fasttext")
    rng = np.random.default_rng(5)
    lines = []
    for i in range(600):          # two topics per row, each with its own 3 words
        labels = sorted({i % 20, (i * 7 + 3) % 20})
        words = {1 + 3 * t + k for t in labels for k in range(3)} | set(rng.choice(60, 2) + 1)
        lines.append(",".join(map(str, labels)) + " " +
                     " ".join(f"{j}:1" for j in sorted(words)))
    path = tmp_path / "topics.svm"
    path.write_text("\n".join(lines) + "\n")
    compare.main([str(path), "--repeat", "1", "--json"])
    table = json.loads(capsys.readouterr().out)[0]
    fasttext_rows = [r for r in table["rows"] if r["model"].startswith("fastText")]
    assert len(fasttext_rows) == 1, table["rows"]
    assert float(fasttext_rows[0]["precision@1"]) > 0.9
    assert float(fasttext_rows[0]["test micro-F1"]) > 0.8


def test_plot_of_a_multilabel_set_draws_micro_f1(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = write_multilabel_svm(tmp_path / "sets.svm")
    compare.main([str(path), "--repeat", "1", "--plot", str(tmp_path / "figures")])
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["sets.svm-proba.png"]


# --- test files (--test)


def test_a_test_file_scores_the_probability_table_as_train_and_predict(tmp_path, capsys):
    """``DATA --test FILE``: the probability table's models train on every row of DATA and
    score on FILE's rows (LogisticRegression's accuracy is scikit-learn's own fit on the
    training file scored on the test file, its extra column carrying no weight); the l1
    table solves on DATA's rows only."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 4)) * (rng.random((90, 4)) < 0.7)
    y = np.where(X @ [1.0, -1.0, 0.5, 0.0] + rng.normal(0, 0.5, 90) > 0, 1, -1)
    X_test = np.column_stack([rng.normal(size=(50, 4)), rng.normal(size=50)])  # a 5th column
    y_test = np.where(X_test[:, :4] @ [1.0, -1.0, 0.5, 0.0] > 0, 1, -1)
    train = write_rows(tmp_path / "tr.svm", X, y)
    test = write_rows(tmp_path / "te.svm", X_test, y_test)
    compare.main([str(train), "--test", str(test), "--repeat", "1", "--json", "--C", "0.5"])
    l1, proba = json.loads(capsys.readouterr().out)
    assert l1["data"] == proba["data"] == "tr.svm" and l1["test"] == proba["test"] == "te.svm"
    X, X_test = np.round(X, 4), np.round(X_test, 4)               # as written
    assert l1["title"].startswith("l1-logistic (LIBLINEAR -s 6 objective), tr.svm (90, 4), ")
    w = l1["measurements"]["sparsekit L1LogisticOBA"]["objective"]
    best = min(m["objective"] for m in l1["measurements"].values())
    assert w == pytest.approx(best, rel=1e-9)
    assert compare._l1_objective(np.zeros(4), X, y, 0.5) == pytest.approx(90 * 0.5 * np.log(2))
    assert proba["title"].startswith("class probabilities, tr.svm (90, 4), 2 classes (trained "
                                     "on every row, tested on te.svm's 50 rows)")
    expected = LogisticRegression().fit(X, y).score(X_test[:, :4], y_test)
    measured = proba["measurements"]["scikit-learn LogisticRegression (lbfgs)"]
    assert measured["test_accuracy"] == pytest.approx(expected, abs=1e-12)
    data = load_dataset(str(train), test=str(test))
    assert data.X.shape == (90, 4) and data.test.X.shape == (50, 4)   # the 5th: no weight
    np.testing.assert_allclose(data.test.X.toarray(), X_test[:, :4])
    np.testing.assert_array_equal(data.test.y, y_test)


def test_a_multilabel_test_file_scores_the_label_set_table(tmp_path, capsys):
    """Label sets: the models train on DATA's rows; a label only in the test file is
    warned about and stays a column of the test rows (missed by every model)."""
    train = write_multilabel_svm(tmp_path / "tr.svm", n=100, seed=0)
    test = write_multilabel_svm(tmp_path / "te.svm", n=40, seed=1, empty_rows=0)
    test.write_text(test.read_text().replace("\n", " 9:1\n", 1).replace("10", "10,99", 1))
    with pytest.warns(UserWarning, match=r"1 label\(s\) of the test file never occur in .*"
                                         r"\(99\).*counts as missed"):
        data = load_dataset(str(train), test=str(test))
    assert data.X.shape == (100, 8) and data.test.X.shape == (40, 8)   # column 9: no weight
    assert data.classes.tolist() == [10, 11, 12, 13, 14, 99]
    assert data.y[:, -1].nnz == 0 and data.test.y[0, -1] == 1
    compare.main([str(train), "--test", str(test), "--repeat", "1", "--json"])
    out, err = capsys.readouterr()
    assert "sparsekit-compare: warning: " in err and "(99): no model predicts them" in err
    (table,) = json.loads(out)
    assert table["title"].startswith("label sets, tr.svm (100, 8), 6 labels (trained on every "
                                     "row, tested on te.svm's 40 rows;")
    for name, m in table["measurements"].items():
        assert 0.5 < m["micro_f1"] < 1.0, name     # the label only the test file holds: missed


@pytest.mark.parametrize("argv, shown", [
    (["--test", "te.svm"], "--test takes one test file per data file, in the same order, "
                           "after them (sparsekit-compare a9a --test a9a.t); got 1 test "
                           "file(s) for the data a9a digits"),
    (["tr.svm", "tr.svm", "--test", "te.svm"], "got 1 test file(s) for the data tr.svm tr.svm"),
    (["digits", "--test", "te.svm"], "'digits' (scikit-learn's) comes without a test file"),
    (["tr.svm", "--test", "empty.svm"], "'empty.svm': the test file holds no rows"),
    (["tr.csv", "--test", "te.svm"], "'te.svm' is not a CSV, TSV or ARFF file as 'tr.csv' is"),
    (["tr.csv", "--test", "other.csv"], "'other.csv' does not have the columns of 'tr.csv': 3 "
                                        "(separator ',': 'x', 'y', 'label') against 2 ('x', "
                                        "'label')"),
    (["tr.svm", "--test", "missing.svm"], "cannot read 'missing.svm' as a LIBSVM file"),
    (["tr.csv", "--test", "."], "'.' is a directory; give the path of a test file"),
    (["empty.svm"], "'empty.svm': the file holds no rows"),
    (["one.csv", "--test", "tr.csv"], "'one.csv': the training file holds a single class (no); "
                                      "classifiers need two or more"),
])
def test_a_test_file_that_cannot_serve_is_a_clear_error(tmp_path, capsys, monkeypatch, argv,
                                                         shown):
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    write_svm(tmp_path / "tr.svm")
    write_svm(tmp_path / "te.svm", seed=1)
    (tmp_path / "empty.svm").write_text("")
    (tmp_path / "tr.csv").write_text("x,label\n" + "".join(f"{i},{i % 2}\n" for i in range(20)))
    (tmp_path / "other.csv").write_text("x,y,label\n1,2,0\n3,4,1\n")
    (tmp_path / "one.csv").write_text("x,label\n1,no\n2,no\n3,no\n")
    assert shown in _usage_error(argv, capsys)




# --- the one-vs-rest l1 table (more than two classes)


def _three_classes(tmp_path, labels=(0, 1, 2)):
    """A small LIBSVM file of three classes, read as the command reads it; its labels
    ``labels`` (not 0, 1, 2: the table must code them)."""
    path = write_svm(tmp_path / "three.svm", n=90, classes=3)
    text = path.read_text()
    lines = [f"{labels[int(line.split(' ', 1)[0])]} {line.split(' ', 1)[1]}"
             for line in text.splitlines()]
    path.write_text("\n".join(lines) + "\n")
    return load_dataset(str(path))


def test_one_vs_rest_table_objective_is_liblinears_own_multiclass_fit(tmp_path):
    """Each solver's summed objective is the one LIBLINEAR -s 6 minimizes for a multiclass
    file (a model per class against the others): every row ends at the objective of
    LIBLINEAR's own multiclass fit, computed here class by class from its models, and the
    peers fit class by class give the same classes' models."""
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    data = _three_classes(tmp_path, labels=(-1, 4, 7))
    X, y = data.X_l1, data.y
    table = compare.compare_l1_ovr(1, C=0.5, data=data)
    assert table.title.startswith("l1-logistic one-vs-rest (LIBLINEAR -s 6 objective")
    assert "three.svm (90, 8), 3 classes, C=0.5, no intercept" in table.title
    assert [r[0] for r in table.rows] == ["sparsekit L1LogisticOBA", "LIBLINEAR -s 6",
                                          "skglm", "celer"]
    model = liblinearutil.train(liblinearutil.problem(y.astype(float), X),
                                liblinearutil.parameter("-s 6 -c 0.5 -B -1 -e 1e-10 -q"))
    F = 0.0
    for k, label in enumerate(model.get_labels()):
        w = np.array(model.get_decfun(k)[0])
        margins = np.where(y == label, 1.0, -1.0) * (X @ w)
        F += np.abs(w).sum() + 0.5 * sum(np.log1p(np.exp(-m)) for m in margins)
    for name, m in table.measurements.items():
        assert m["objective"] == pytest.approx(F, rel=1e-9), name
    assert table.rows[0][4] == "1.00x" and all("stopped" not in r[4] for r in table.rows)


def test_class_by_class_stops_between_classes_after_the_limit():
    fitted = []

    def fit_class(k):
        fitted.append(k)
        return np.full(4, k + 1.0)
    done = []
    coef = compare._class_by_class(fit_class, 3, np.inf, done)
    assert coef.tolist() == [[1.0] * 4, [2.0] * 4, [3.0] * 4] and done == [3]
    fitted.clear()
    coef = compare._class_by_class(fit_class, 3, 0.0, done)
    assert fitted == [0] and done == [1]           # the first class is always fit
    assert coef.tolist() == [[1.0] * 4, [0.0] * 4, [0.0] * 4]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_vs_rest_fits_are_capped_by_the_budget_and_say_so(tmp_path):
    """OBA stops by its callback, the peers between classes (the classes left at zero
    weights); the rows say how many classes were solved and the objective column how far
    the caps left them."""
    peers = _installed_l1_peers()
    if not peers:
        pytest.skip("no l1 peer installed (pip install '.[compare]')")
    table = compare.compare_l1_ovr(1, data=_three_classes(tmp_path), budget=1e-9)
    rows = {r[0]: r for r in table.rows if r[1] != "not installed"}
    assert set(rows) == {"sparsekit L1LogisticOBA [stopped by the budget: 0 of 3 classes "
                         "solved]",
                         *(f"{peer} [stopped by the budget: 1 of 3 classes solved]"
                           for peer in peers)}
    capped = [r for name, r in rows.items() if "1 of 3" in name]
    assert all("above)" in r[4] for r in capped)   # two classes never fit: far above


def test_one_vs_rest_table_lists_a_missing_peer_and_measures_the_others(tmp_path,
                                                                        monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "celer", None)      # import celer raises ImportError
    rows = {r[0]: r for r in compare.compare_l1_ovr(1, data=_three_classes(tmp_path)).rows}
    assert rows["celer"][1:] == ["not installed", "", "", ""]
    assert rows["sparsekit L1LogisticOBA"][4] == "1.00x"


def test_objectives_score_a_few_rows_at_a_time_and_sum_the_same(monkeypatch):
    """The l1 tables' objectives never hold an n_samples x n_classes matrix (a file of
    300,000 rows and 1,000 classes would need 2.4 GB per copy): computed in blocks of rows
    they are the direct formulas'."""
    import scipy.sparse as sp
    from scipy.special import logsumexp

    rng = np.random.default_rng(0)
    X = sp.random(1000, 30, density=0.2, format="csr", random_state=0)
    W, b, y = rng.normal(size=(7, 30)), rng.normal(size=7), rng.integers(0, 7, 1000)
    Z = X @ W.T
    softmax = np.abs(W).sum() + 2.0 * (logsumexp(Z + b, axis=1)
                                       - (Z + b)[np.arange(1000), y]).sum()
    signs = np.where(y[:, None] == np.arange(7), 1.0, -1.0)
    ovr = np.abs(W).sum() + 2.0 * np.logaddexp(0.0, -signs * Z).sum()
    monkeypatch.setattr(compare, "SCORE_BLOCK", 50)             # 143 blocks of 7 rows
    assert len(list(compare._score_blocks(X, W))) == 143
    assert compare._multinomial_objective(W, b, X, y, 2.0) == pytest.approx(softmax, rel=1e-13)
    assert compare._ovr_objective(W, X, y, 2.0) == pytest.approx(ovr, rel=1e-13)
