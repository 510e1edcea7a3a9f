"""The ``sparsekit-compare`` tables (the README's first command): rows, failing peers."""
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
