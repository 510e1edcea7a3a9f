"""The ``sparsekit-compare`` tables (the README's first command): rows, failing peers, the
user's data files and their errors."""
import contextlib
import json
import re

import numpy as np
import pytest

from sparsekit.benchmarks import compare


def test_multiclass_table_lists_every_model_against_logistic_regression():
    title, header, rows = compare.compare_multiclass(1)
    assert [r[0] for r in rows][:3] == ["sparsekit SparsemaxClassifier",
                                        "sparsekit ExtremeSoftmaxSGD (implicit)",
                                        "scikit-learn LogisticRegression (lbfgs)"]
    assert all(len(r) == len(header) for r in rows)
    assert rows[2][4] == "1.00x"
    for name, seconds, accuracy, support, ratio in rows[:2]:
        assert seconds.endswith(")") and ratio.endswith("x")
        assert float(accuracy) > 0.9 and 1.0 <= float(support) <= 10.0
    assert title in compare.format_table(title, header, rows)


def test_a_failing_peer_is_listed_with_its_error_and_the_others_still_run(monkeypatch):
    solvers = compare._l1_solvers

    def with_broken_peers(X, y, C):
        yield next(solvers(X, y, C))            # sparsekit's

        def broken():
            raise TypeError("an API change")
        yield "broken peer", broken
        yield "absent peer", None

    monkeypatch.setattr(compare, "_l1_solvers", with_broken_peers)
    _, _, rows = compare.compare_l1_logistic(1)
    by_name = {r[0]: r for r in rows}
    assert by_name["broken peer"][1] == "error: TypeError: an API change"
    assert by_name["absent peer"][1] == "not installed"
    assert by_name["sparsekit L1LogisticOBA"][4] == "1.00x"
    assert "rel. gap 0.0e+00" in by_name["sparsekit L1LogisticOBA"][2]


def test_repeat_must_be_positive():
    with pytest.raises(SystemExit):
        compare.main(["--repeat", "0"])


# --- the command on the user's data


def _write_svm(path, n=60, classes=2, seed=0):
    """A small LIBSVM file with ``classes`` separable-ish classes."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    lines = []
    for label in y:
        features = {j: rng.normal() + (label == j % classes) for j in rng.choice(8, 4, False)}
        tokens = " ".join(f"{j + 1}:{v:.4f}" for j, v in sorted(features.items()))
        lines.append(f"{label if classes > 2 else 2 * label - 1} {tokens}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_binary_file_gets_the_l1_table_and_the_probability_table(tmp_path, capsys):
    path = _write_svm(tmp_path / "tiny.svm")
    compare.main([str(path), "--repeat", "1", "--C", "0.5"])
    out = capsys.readouterr().out
    assert "l1-logistic (LIBLINEAR -s 6 objective), tiny.svm (60, 8), C=0.5" in out
    assert "class probabilities, tiny.svm (60, 8), 2 classes" in out
    assert "sparsekit L1LogisticOBA" in out and "sparsekit SparsemaxClassifier" in out
    assert "ExtremeSoftmaxSGD" not in out       # a softmax for many classes, not two


def test_a_multiclass_compressed_file_gets_the_probability_table_only(tmp_path, capsys):
    import gzip

    plain = _write_svm(tmp_path / "three.svm", n=90, classes=3)
    packed = tmp_path / "three.svm.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    compare.main([str(packed), "--repeat", "1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert [t["data"] for t in report] == ["three.svm.gz"]
    assert report[0]["title"].startswith("class probabilities, three.svm.gz (90, 8), 3 classes")
    names = [row["model"] for row in report[0]["rows"]]
    assert names[:3] == ["sparsekit SparsemaxClassifier", "sparsekit ExtremeSoftmaxSGD (implicit)",
                         "scikit-learn LogisticRegression (lbfgs)"]
    assert report[0]["rows"][2]["time / LogisticRegression"] == "1.00x"


@pytest.mark.parametrize("content, match", [
    (None, "cannot read .*missing.svm.*not found"),
    (b"\xfd7zXZ\x00 truncated", "cannot read .*corrupt or truncated"),
    (b"1 1:0.5\n0 0:1\n", "cannot read .*column indices start at 1"),
    (b"0.5 1:1\n1.5 2:1\n2.5 1:2\n", "labels are continuous, not classes"),
    (b"1 1:1\n1 2:1\n-1 1:2\n", "every class needs at least 2 rows"),
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


def test_without_data_it_compares_on_the_shipped_a9a_and_digits(monkeypatch):
    seen = []
    monkeypatch.setattr(compare, "tables", lambda data, *args: seen.append(data) or [])
    compare.main([])
    assert [d.name for d in seen] == ["a9a", "digits"]
    assert seen[0].X.shape == (32561, 123) and seen[0].classes.tolist() == [-1.0, 1.0]
    assert seen[0].X.indices.dtype == np.int32        # what saga, skglm and celer accept


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
    assert announced[0] == "digits: sparsekit SparsemaxClassifier"
    assert len(announced) == 5
    assert captured.out.startswith("class probabilities, digits")
