"""The ``sparsekit-compare`` command (the README's first command): the tables of the user's
data files, their errors, the options, the spinner and the figures."""
import contextlib
import json
import re

import numpy as np
import pytest
from _compare_files import (installed_l1_peers, tiny_binary, write_multilabel_svm,
                            write_rows, write_svm)

from sparsekit.benchmarks import _class_tables, _l1_tables, _run, compare
from sparsekit.benchmarks._data import load_dataset


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
    rows = {r[0]: r for r in _class_tables.compare_multiclass(1, budget=10.0).rows}
    assert rows["scikit-learn LogisticRegression (lbfgs)"][1] == shown
    assert rows["sparsekit SparsemaxClassifier"][1].endswith(")")


def test_repeat_must_be_positive():
    with pytest.raises(SystemExit):
        compare.main(["--repeat", "0"])


@pytest.mark.parametrize("C", ["0", "-1", "nan", "inf"])
def test_C_must_be_a_finite_positive_number(C, capsys):
    with pytest.raises(SystemExit):
        compare.main(["--C", C])
    assert "argument --C: must be a" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["--repeat", "0"]])
def test_help_version_and_usage_errors_answer_before_the_tables_imports(argv):
    """What answers from the arguments alone does not wait for scikit-learn, pandas or the
    peers (seconds of imports on a slow disk): the command imports them after parsing."""
    import subprocess
    import sys

    probe = ("import sys\nfrom sparsekit.benchmarks import compare\n"
             f"try:\n    compare.main({argv!r})\nexcept SystemExit:\n    pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & "
             "{'numpy', 'scipy', 'sklearn', 'pandas', 'threadpoolctl'}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.splitlines()[-1] == "[]"


def test_help_ends_with_the_usage_examples(capsys):
    with pytest.raises(SystemExit) as exit_info:
        compare.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    examples = out[out.index("\nexamples:\n"):].splitlines()[2:]
    assert examples and all(line.lstrip().startswith("sparsekit-compare") for line in examples)
    assert "    sparsekit-compare a9a --test a9a.t      # the published split: train, then " \
        "test" in examples


def test_version_lists_sparsekit_the_peers_and_the_libraries(capsys, monkeypatch):
    from importlib.metadata import PackageNotFoundError, version

    import sparsekit

    def version_without_celer(name):
        if name == "celer":
            raise PackageNotFoundError(name)
        return version(name)
    monkeypatch.setattr("importlib.metadata.version", version_without_celer)
    compare.main(["--version", "a9a"])                     # no table: only the versions
    first, peers, libraries = capsys.readouterr().out.splitlines()
    assert first.startswith(f"sparsekit-compare (sparsekit {sparsekit.__version__}, Python 3.")
    assert peers.startswith("peers: liblinear-official ") and "celer not installed" in peers
    assert f"scikit-learn {version('scikit-learn')}, numpy {np.__version__}" in libraries


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    """``sparsekit-compare a b | head -1``: the tables of ``b`` have no reader left; the
    command ends with status 1 and no traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import sparsekit

    files = [str(write_svm(tmp_path / f"{name}.svm", seed=seed))
             for seed, name in enumerate("ab")]
    # the sparsekit of this session (installed or built in place), not a source tree in cwd
    package_root = str(Path(sparsekit.__file__).resolve().parents[1])
    command = subprocess.Popen([sys.executable, "-m", "sparsekit.benchmarks.compare", *files,
                                "--repeat", "1", "--budget", "0.5"], cwd=tmp_path,
                               env={**os.environ, "PYTHONPATH": package_root},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = command.stdout.readline()
    assert first.startswith(b"l1-logistic"), command.communicate()[1].decode()
    command.stdout.close()                                     # as head does
    err = command.stderr.read().decode()
    assert command.wait(timeout=300) == 1 and "Traceback" not in err, err


def test_ctrl_c_ends_the_command_with_a_line_and_status_130(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(_run, "load_dataset", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        compare.main(["digits"])
    assert exit_info.value.code == 130
    assert capsys.readouterr().err == "\nsparsekit-compare: interrupted\n"


#: print callbacks that an abandoned LIBLINEAR fit may still call: never collected
_LIBLINEAR_CALLBACKS = []


@pytest.mark.skipif(not hasattr(__import__("signal"), "pthread_sigmask"),
                    reason="POSIX signals")
def test_ctrl_c_during_liblinears_fit_ends_the_command_at_once(monkeypatch, tmp_path, capsys,
                                                               python_sigint):
    """Ctrl-C pressed while LIBLINEAR trains: its compiled fit (no time limit: minutes on a
    large file) held the interrupt until it returned, and then Python dropped it in the
    ctypes callback LIBLINEAR's module prints through (with ``-q`` too): the command ran on
    to its end. It now ends at once, with the line and status 130 and without the dropped
    exception's report, the fit left to end with the process."""
    import os
    import signal
    import threading
    import time

    liblinear = pytest.importorskip("liblinear.liblinear")
    pressed = []

    def ctrl_c(text):
        """The user's Ctrl-C at LIBLINEAR's first line, in a fit that runs on in C for 3 s
        (its thread blocks SIGINT for the time, which then cuts no sleep short)."""
        if not pressed:
            pressed.append(time.perf_counter())
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                time.sleep(3)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    _LIBLINEAR_CALLBACKS.append(liblinear.PRINT_STRING_FUN(ctrl_c))
    monkeypatch.setattr(liblinear, "ctypes_print_null", _LIBLINEAR_CALLBACKS[-1])
    with pytest.raises(SystemExit) as exit_info:
        compare.main([str(write_svm(tmp_path / "tiny.svm")), "--repeat", "1"])
    assert time.perf_counter() - pressed[0] < 1.5
    assert exit_info.value.code == 130
    captured = capsys.readouterr()
    assert captured.err == "\nsparsekit-compare: interrupted\n" and captured.out == ""
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_peers_that_fail_to_import_leave_the_other_rows(tmp_path, monkeypatch, capsys):
    """celer and skglm installs broken by a NumPy upgrade (errors at import) ended the
    command with a traceback: their rows now say why, and the tables come."""
    import sys

    for peer, error in (("celer", "RuntimeError"), ("skglm", "AttributeError")):
        (tmp_path / "broken" / peer).mkdir(parents=True)
        (tmp_path / "broken" / peer / "__init__.py").write_text(
            f'raise {error}("built against another NumPy")')
        monkeypatch.delitem(sys.modules, peer, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "broken"))
    compare.main([str(write_svm(tmp_path / "tiny.svm")), "--repeat", "1"])
    out = capsys.readouterr().out
    assert re.search(r"^celer +error: import celer: RuntimeError: built against another NumPy",
                     out, re.MULTILINE)
    assert re.search(r"^skglm +error: import skglm: AttributeError: built against", out,
                     re.MULTILINE)
    assert re.search(r"^sparsekit L1LogisticOBA +[0-9.]+ ms", out, re.MULTILINE)
    assert "class probabilities" in out


def test_a_binary_file_gets_the_l1_table_and_the_probability_table(tmp_path, capsys):
    path = write_svm(tmp_path / "tiny.svm")
    compare.main([str(path), "--repeat", "1", "--C", "0.5"])
    out = capsys.readouterr().out
    assert "l1-logistic (LIBLINEAR -s 6 objective), tiny.svm (60, 8), C=0.5" in out
    assert "class probabilities, tiny.svm (60, 8), 2 classes" in out
    assert "sparsekit L1LogisticOBA" in out and "sparsekit SparsemaxClassifier" in out
    assert "ExtremeSoftmaxSGD" not in out       # a softmax for many classes, not two


def test_markdown_prints_each_table_under_its_title_as_github_markdown(tmp_path, capsys):
    path = write_svm(tmp_path / "tiny.svm")
    compare.main([str(path), "--repeat", "1", "--markdown"])
    blocks = capsys.readouterr().out.strip().split("\n\n")
    titles, tables = blocks[0::2], blocks[1::2]
    assert titles[0].startswith("**l1-logistic (LIBLINEAR -s 6 objective), tiny.svm (60, 8)")
    assert titles[1].startswith("**class probabilities, tiny.svm (60, 8), 2 classes")
    assert len(titles) == len(tables) == 2 and all(t.endswith("**") for t in titles)
    for table in tables:
        header, rule, *rows = table.splitlines()
        n = header.count(" | ") + 1
        assert rule == "|" + "|".join(["---"] * n) + "|" and rows
        assert all(r.startswith("| ") and r.count(" | ") + 1 == n for r in rows)
    assert "| sparsekit L1LogisticOBA | " in tables[0]


def test_json_and_markdown_are_one_or_the_other(capsys):
    with pytest.raises(SystemExit) as exit_info:
        compare.main(["--json", "--markdown"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


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
@pytest.mark.parametrize("content, match", [
    (None, "cannot read .*missing.svm.*not found"),
    (b"\xfd7zXZ\x00 truncated", "cannot read .*corrupt or truncated"),
    (b"1 1:0.5\n0 0:1\n", "cannot read .*column indices start at 1"),
    (b"0.5 1:1\n1.5 2:1\n2.5 1:2\n", "labels are continuous, not classes"),
    (b"1 1:1\n1 2:1\n-1 1:2\n", "at least two classes need 2 rows or more"),
    (b"1 1:1\n1 2:1\n1 1:2\n", r"every row holds the same label \(1\); classifiers need two "
     "classes or more$"),
    (b"1 1:1\n2 2:1\n3 1:2\n4 2:2\n", r"each of its 4 rows has a label of its own \(an "
     r"identifier\? the models compared are classifiers\)$"),
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


def test_a_numbers_document_or_a_binary_file_is_a_short_clear_error(tmp_path, capsys):
    """An Apple Numbers document is refused by its name with what to do; any other binary
    file gets the LIBSVM reader's error cut short (it quoted the whole first "number":
    kilobytes)."""
    document, binary = tmp_path / "sales.numbers", tmp_path / "sales.bin"
    for path in (document, binary):
        path.write_bytes(b"PK\x03\x04" + bytes(5000))
    messages = []
    for path in (document, binary):
        with pytest.raises(SystemExit) as exit_info:
            compare.main([str(path)])
        assert exit_info.value.code == 2
        messages.append(capsys.readouterr().err.splitlines()[-1])
    assert "is an Apple Numbers document: export its table as CSV or Excel" in messages[0]
    assert "as a LIBSVM file (or a .csv/.tsv/.arff/.parquet/.json(l)/.xlsx file by its " \
        "name)" in messages[1]
    assert len(messages[1]) < 500


def test_without_data_it_compares_on_the_shipped_a9a_and_digits(monkeypatch):
    seen = []
    monkeypatch.setattr(_run, "tables", lambda data, *args: seen.append(data) or [])
    compare.main([])
    assert [d.name for d in seen] == ["a9a", "digits"]
    assert seen[0].X.shape == (32561, 123) and seen[0].classes.tolist() == [-1.0, 1.0]
    assert seen[0].X.indices.dtype == np.int32        # what saga, skglm and celer accept


def test_on_a_terminal_a_spinner_names_each_model_and_leaves_the_tables_clean(
        monkeypatch, capsys, tmp_path):
    pytest.importorskip("rich")
    import sys

    path = write_svm(tmp_path / "three.svm", classes=3)   # the tables of a multiclass file

    announced = []
    real = _run._progress

    @contextlib.contextmanager
    def spying():
        with real() as status:
            yield lambda text: announced.append(text) or status(text)

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(_run, "_progress", spying)
    compare.main([str(path), "--repeat", "1"])
    captured = capsys.readouterr()
    peers = installed_l1_peers()                    # a peer not installed is not timed
    timed = [text for text in announced if ", untimed: " not in text]
    assert timed[:4 + len(peers)] == [f"three.svm: {name}" for name in (
        "sparsekit L1LogisticOBA", *peers, "sparsekit L1LogisticOBA", "scikit-learn saga",
        "sparsekit SparsemaxClassifier")]
    assert len(timed) == 7 + len(peers) + ("LIBLINEAR -s 6" in peers)
    for k, text in enumerate(announced):    # untimed work, then that model's timed fits
        if ", untimed: " in text:
            following = next(t for t in announced[k + 1:] if ", untimed: " not in t)
            assert following == text.split(", untimed: ")[0], text
    assert "three.svm: skglm, untimed: numba compiling it on a few rows" in announced or (
        "skglm" not in peers)
    assert captured.out.startswith("l1-logistic one-vs-rest (LIBLINEAR -s 6 objective")
    assert "\n\nmultinomial l1-logistic, three.svm" in captured.out
    assert "\n\nclass probabilities, three.svm" in captured.out


def test_lowest_within_is_the_fastest_run_reaching_each_gap():
    # a ladder whose runs are not monotone in time (a loose tolerance that took longer)
    runs = [(0.05, 1e-8), (0.04, 1e-6), (0.08, 1e-7), (0.06, 1e-9), (0.02, 1e-2)]
    seconds, lowest = _run.lowest_within(runs)
    assert seconds == [0.02, 0.04, 0.05, 0.06, 0.08]
    assert lowest == [1e-2, 1e-6, 1e-8, 1e-9, 1e-9]
    for t, g in zip(seconds, lowest):     # the definition, run by run
        assert g == min(gap for s, gap in runs if s <= t)
    assert _run.lowest_within([]) == ([], [])
    # a diverged run (NaN objective) reaches nothing, and the later runs still count
    assert _run.lowest_within([(0.01, float("nan")), (0.02, 1e-3)])[1] == [float("inf"), 1e-3]


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


def test_zero_based_files_are_read_with_the_flag(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = tiny_binary()
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
        "1..30 (an identifier?): it is a feature here; --drop leaves it out if it should " \
        "not be one" in err
    assert not any("UserWarning" in line for line in err)
    compare.main(["--drop", "id", str(path), "--repeat", "1", "--json"])      # as it says
    dropped = capsys.readouterr().err
    assert "numbers the rows" not in dropped and "'id'" not in dropped


def test_label_is_for_csv_files_only(tmp_path, capsys):
    path = write_svm(tmp_path / "tiny.svm")
    assert "--label applies to CSV, TSV, ARFF, Parquet, JSON and spreadsheet files" in \
        _usage_error([str(path), "--label", "0"], capsys)
    assert "--sheet applies to spreadsheet workbooks (.xlsx, .xlsm, .xlsb, .xls, .ods)" in \
        _usage_error([str(path), "--sheet", "0"], capsys)


def test_a_workbooks_sheet_is_compared_as_a_csv_file(tmp_path, capsys):
    """A workbook's sheet chosen by ``--sheet``, the others not warned about; the titles
    name it."""
    pytest.importorskip("python_calamine")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("openpyxl")
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame
    frame["species"] = np.array(["setosa", "versicolor", "virginica"])[frame.pop("target")]
    path = tmp_path / "plants.xlsx"
    with pd.ExcelWriter(path) as writer:
        pd.DataFrame({"note": ["measured by hand"]}).to_excel(writer, sheet_name="Notes")
        frame.to_excel(writer, sheet_name="iris", index=False)
    compare.main([str(path), "--sheet", "iris", "--repeat", "1", "--json"])
    captured = capsys.readouterr()
    titles = [table["title"] for table in json.loads(captured.out)]
    assert len(titles) == 3 and all(
        "plants.xlsx (150, 4) (sheet 'iris'; label 'species' coded setosa=0, " in title
        for title in titles), titles
    assert "warning" not in captured.err


def test_train_and_test_sheets_of_one_workbook(tmp_path, capsys):
    """``--test-sheet`` names the test workbook's sheet (``--sheet``'s by default, which on
    the data workbook itself is warned about); it needs a test workbook."""
    pytest.importorskip("python_calamine")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("openpyxl")
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame.sample(frac=1, random_state=0)
    path = tmp_path / "plants.xlsx"
    with pd.ExcelWriter(path) as writer:
        frame.iloc[:100].to_excel(writer, sheet_name="train", index=False)
        frame.iloc[100:].to_excel(writer, sheet_name="test", index=False)
    argv = [str(path), "--sheet", "train", "--test", str(path), "--repeat", "1", "--json"]
    compare.main(argv + ["--test-sheet", "test"])
    captured = capsys.readouterr()
    proba = json.loads(captured.out)[-1]
    assert proba["test"] == "plants.xlsx's sheet 'test'"
    assert proba["title"].startswith("class probabilities, plants.xlsx (100, 4) (sheet "
                                     "'train'; label 'target'; ") and \
        "(trained on every row, tested on the 50 rows of plants.xlsx's sheet 'test';" in \
        proba["title"]
    assert "warning" not in captured.err
    compare.main(argv)
    assert f"sparsekit-compare: warning: {str(path)!r} is the data file itself, the same " \
        "sheet: the test accuracies are those of the training rows (--test-sheet names " \
        "another sheet)" in capsys.readouterr().err
    assert "--test-sheet applies to --test spreadsheet workbooks" in _usage_error(
        [str(path), "--test-sheet", "test"], capsys)


def test_a_bad_csv_file_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    pytest.importorskip("pandas")
    path = tmp_path / "bad.csv"
    path.write_text("age,city,y\n25,Oslo,1\n27,Lyon,\n31,Oslo,1\n")
    assert "the label column 'y' misses 1 value(s), the first on line 3" in _usage_error(
        [str(path)], capsys)


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
    assert table["title"].endswith("s except LIBLINEAR's and fastText's")   # one call each


def test_a_model_not_run_leaves_the_other_rows_and_no_ratio(monkeypatch):
    """A model not run: its row says why and the others are measured; in the probability
    table, where LogisticRegression is the base, the others have no ratio."""
    for tables in (_l1_tables, _class_tables):
        monkeypatch.setattr(tables, "max_iter_within", lambda fit_with, n_rows, budget, most,
                            unit="iteration": "not run: slow")
    rows = {r[0]: r for r in _l1_tables.compare_l1_logistic(1, budget=1.0).rows}
    assert rows["scikit-learn saga"][1:] == ["not run: slow", "", "", ""]
    assert rows["sparsekit L1LogisticOBA"][4] == "1.00x"
    rows = {r[0]: r for r in _l1_tables.compare_l1_multinomial(1, budget=1.0).rows}
    assert rows["scikit-learn saga"][1:] == ["not run: slow", "", "", ""]
    traces = _l1_tables.l1_traces(load_dataset("breast_cancer"), budget=1.0)
    assert "scikit-learn saga" not in traces and "sparsekit L1LogisticOBA" in traces
    rows = {r[0]: r for r in _class_tables.compare_multiclass(1, budget=1.0).rows}
    assert rows["scikit-learn LogisticRegression (lbfgs)"][1:] == ["not run: slow", "", "",
                                                                  ""]
    assert rows["scikit-learn SGDClassifier (log_loss)"][1] == "not run: slow"
    assert rows["sparsekit SparsemaxClassifier"][1].endswith(")")
    assert rows["sparsekit SparsemaxClassifier"][-1] == "n/a"


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


def test_a_tables_label_columns_get_the_label_set_table(tmp_path, capsys):
    """``--label a,b,c`` on a CSV file's 0/1 columns, and a JSON file's field of lists:
    the label-set table, its labels named by the columns (the lists' labels)."""
    import pandas as pd

    rng = np.random.default_rng(6)
    X = rng.standard_normal((150, 4))
    Y = X[:, :3] > 0.3
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    for j, name in enumerate(["red", "green", "blue"]):
        frame[name] = np.where(Y[:, j], "yes", "no")
    frame.to_csv(tmp_path / "colors.csv", index=False)
    frame["labels"] = [[n for n, on in zip(["red", "green", "blue"], row) if on] for row in Y]
    frame.drop(columns=["red", "green", "blue"]).to_json(tmp_path / "colors.jsonl",
                                                         orient="records", lines=True)
    for name, label in (("colors.csv", "red,green,blue"), ("colors.jsonl", "labels")):
        compare.main([str(tmp_path / name), "--label", label, "--repeat", "1", "--json"])
        (table,) = json.loads(capsys.readouterr().out)
        assert table["title"].startswith(f"label sets, {name} (150, 4) (label"), name
        assert ", 3 labels (70/30 split;" in table["title"]
        for model, m in table["measurements"].items():
            assert 0.7 < m["micro_f1"] <= 1.0, (name, model)   # a label is a feature's sign


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
    assert table["title"].endswith("s (LIBLINEAR's between labels) except fastText's")


def test_plot_of_a_multilabel_set_draws_micro_f1(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = write_multilabel_svm(tmp_path / "sets.svm")
    compare.main([str(path), "--repeat", "1", "--plot", str(tmp_path / "figures")])
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["sets.svm-proba.png"]


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
    assert _l1_tables._l1_objective(np.zeros(4), X, y, 0.5) == pytest.approx(90 * 0.5 * np.log(2))
    assert proba["title"].startswith("class probabilities, tr.svm (90, 4), 2 classes (trained "
                                     "on every row, tested on the 50 rows of te.svm)")
    expected = LogisticRegression().fit(X, y).score(X_test[:, :4], y_test)
    measured = proba["measurements"]["scikit-learn LogisticRegression (lbfgs)"]
    assert measured["test_accuracy"] == pytest.approx(expected, abs=1e-12)
    data = load_dataset(str(train), test=str(test))
    assert data.X.shape == (90, 4) and data.test.X.shape == (50, 4)   # the 5th: no weight
    np.testing.assert_allclose(data.test.X.toarray(), X_test[:, :4])
    np.testing.assert_array_equal(data.test.y, y_test)
    with pytest.warns(UserWarning, match="'.*tr.svm' is the data file itself: the test "
                                         "accuracies are those of the training rows$"):
        load_dataset(str(train), test=str(train))


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
                                     "row, tested on the 40 rows of te.svm;")
    for name, m in table["measurements"].items():
        assert 0.5 < m["micro_f1"] < 1.0, name     # the label only the test file holds: missed


@pytest.mark.parametrize("argv, shown", [
    (["--test", "te.svm"], "--test takes one test file per data file, in the same order, "
                           "after them (sparsekit-compare a9a --test a9a.t); got 1 test "
                           "file(s) for the data a9a digits"),
    (["tr.svm", "tr.svm", "--test", "te.svm"], "got 1 test file(s) for the data tr.svm tr.svm"),
    (["digits", "--test", "te.svm"], "'digits' (scikit-learn's) comes without a test file"),
    (["tr.svm", "--test", "empty.svm"], "'empty.svm': the test file holds no rows"),
    (["tr.csv", "--test", "te.svm"],
     "'te.svm' is not a table (CSV, TSV, ARFF, Parquet, JSON, spreadsheet) as 'tr.csv' is"),
    (["tr.csv", "--test", "other.csv"], "'other.csv' does not have the columns of 'tr.csv': 3 "
                                        "(separator ',': 'x', 'y', 'label') against 2 ('x', "
                                        "'label')"),
    (["tr.svm", "--test", "missing.svm"], "cannot read 'missing.svm' as a LIBSVM file"),
    (["tr.csv", "--test", "."], "'.' is a directory; give the path of a test file"),
    (["empty.svm"], "'empty.svm': the file holds no rows"),
    (["const.csv"], "'const.csv': every feature is constant (the matrix the models get holds "
                    "no nonzero entry): there is nothing for them to learn"),
    (["labels.svm"], "'labels.svm': every feature is constant"),    # labels, no entries
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
    (tmp_path / "labels.svm").write_text("1\n-1\n" * 4)
    (tmp_path / "const.csv").write_text("x,label\n" + "".join(f"7,{i % 2}\n" for i in range(20)))
    assert shown in _usage_error(argv, capsys)
