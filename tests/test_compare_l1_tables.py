"""The l1-logistic tables of ``sparsekit-compare``: the objectives against the peers' own
fits, failing and missing peers, the budget caps, the tolerance ladder."""
import functools

import numpy as np
import pytest
from _compare_files import installed_l1_peers, shown_at, tiny_binary, write_svm

from sparsekit import L1LogisticOBA
from sparsekit.benchmarks import _l1_tables
from sparsekit.benchmarks._data import Dataset, load_dataset


def test_a_failing_peer_is_listed_with_its_error_and_the_others_still_run(monkeypatch):
    solvers = _l1_tables._l1_solvers

    def with_broken_peers(X, y, C, budget, announce=None):
        yield next(solvers(X, y, C))            # sparsekit's

        def broken(tol):
            raise TypeError("an API change")
        yield "broken peer", broken, str
        yield "absent peer", None, str

    monkeypatch.setattr(_l1_tables, "_l1_solvers", with_broken_peers)
    rows = _l1_tables.compare_l1_logistic(1).rows
    by_name = {r[0]: r for r in rows}
    assert by_name["broken peer"][1] == "error: TypeError: an API change"
    assert by_name["absent peer"][1] == "not installed"
    assert by_name["sparsekit L1LogisticOBA"][4] == "1.00x"
    assert "rel. gap 0.0e+00" in by_name["sparsekit L1LogisticOBA"][2]


def test_multinomial_table_objective_is_scikit_learns():
    """The table's objective is the one LogisticRegression(l1) minimizes: its value at
    OBA's solution matches a direct computation from predict_proba."""
    title, header, rows, measurements = _l1_tables.compare_l1_multinomial(1, C=0.5)
    assert "digits (1797, 64), 10 classes, C=0.5" in title
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    est = L1LogisticOBA(C=0.5, tol=1e-8, multiclass="multinomial").fit(X / 16, y)
    nll = -np.log(est.predict_proba(X / 16)[np.arange(len(y)), y]).sum()
    F = np.abs(est.coef_).sum() + 0.5 * nll
    assert measurements["sparsekit L1LogisticOBA"]["objective"] == pytest.approx(F, rel=1e-10)
    assert rows[0][4] == "1.00x" and "rel. gap" in rows[1][2]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")   # tol 0.1
def test_the_l1_ladder_reaches_the_tables_objective_from_above():
    data = Dataset("tiny", *tiny_binary())
    traces = _l1_tables.l1_traces(data, C=1.0)
    best = _l1_tables.compare_l1_logistic(1, data=data).measurements
    F_star = best["sparsekit L1LogisticOBA"]["objective"]
    oba = traces["sparsekit L1LogisticOBA"]
    assert len(oba) == len(_l1_tables.L1_LADDER)
    assert all(F >= F_star * (1 - 1e-12) for _, F in oba)
    assert oba[-1][1] == pytest.approx(F_star, rel=1e-10)
    assert len(traces["scikit-learn saga"]) == _l1_tables.L1_LADDER.index(1e-6) + 1


def test_liblinear_weighs_a_dense_xs_trailing_columns_of_zeros():
    """LIBLINEAR counts a dense X's columns up to the last nonzero entry: a constant last
    column of a CSV, standardized to zeros, left its weights one short of X's columns (the
    row was a matmul error); it now gets its row, at the others' objective."""
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    X, y = tiny_binary()
    data = Dataset("zeros last", np.hstack([X, np.zeros((X.shape[0], 2))]), y)
    table = _l1_tables.compare_l1_logistic(1, data=data)
    liblinear = table.measurements["LIBLINEAR -s 6"]
    assert liblinear["objective"] == pytest.approx(
        table.measurements["sparsekit L1LogisticOBA"]["objective"], rel=1e-9)
    w = _l1_tables.liblinear_binary(liblinearutil, data.X, y)(y, "-s 6 -c 1 -B -1 -e 1e-8 -q")
    assert w.shape == (X.shape[1] + 2,) and not w[-2:].any()


def test_saga_epochs_are_capped_by_the_budget():
    X, y = tiny_binary(n=2000)
    assert _l1_tables._saga_max_iter(X, y, 1.0, np.inf) == 20000
    # ~30 ms for thousands of epochs: one epoch (~2 ms) within it on a loaded machine too
    capped = _l1_tables._saga_max_iter(X, y, 1.0, 1e-2)
    assert 1 <= capped < 20000


def test_a_solver_that_stops_above_the_best_objective_says_so_beside_its_time_ratio():
    """A capped fit's time is where it stopped, not its time to the answer: its ratio cell
    says how far above the best objective it ended (saga on Bibtex: 2.8e-01)."""
    rows = [["sparsekit L1LogisticOBA", [2.0, 2.0, 2.0], 100.0, 5, ""],
            ["scikit-learn saga", [1.0, 1.0, 1.0], 128.0, 3, ""],
            ["LIBLINEAR -s 6", [4.0, 4.0, 4.0], 100.00001, 5, ""]]
    table = _l1_tables._objective_table("t", "F(w)", "w", rows)
    cells = {r[0]: r[4] for r in table.rows}
    assert cells["scikit-learn saga"] == "0.50x (stopped 2.8e-01 above)"
    assert cells["LIBLINEAR -s 6"] == "2.00x"                  # 1e-7 above: solved
    assert cells["sparsekit L1LogisticOBA"] == "1.00x"


def test_huge_objectives_are_printed_in_significant_digits():
    """C = 1e300 made F a 300-digit number in the objective column."""
    rows = [["sparsekit L1LogisticOBA", [1.0], 2.5e300, 1, ""],
            ["LIBLINEAR -s 6", [1.0], 2.5e300, 1, ""],
            ["skglm", [1.0], 10558.723370631, 1, ""]]
    objectives = [r[2] for r in _l1_tables._objective_table("t", "F(w)", "w", rows).rows]
    assert objectives[0].startswith("2.500000000000e+300 (rel. gap")
    assert objectives[2].startswith("10558.72337063 (rel. gap")


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
    X, y = _l1_tables._l1_problem(load_dataset("breast_cancer"))
    solvers = {name: fit for name, fit, _ in _l1_tables._l1_solvers(X, y, 1.0)}
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
    rows = {r[0]: r for r in _l1_tables.compare_l1_logistic(1, budget=10.0).rows}
    assert rows["skglm"][1] == "error: TypeError: an API change"
    assert rows["sparsekit L1LogisticOBA"][1].endswith(")")


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
    table = _l1_tables.compare_l1_ovr(1, C=0.5, data=data)
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_vs_rest_fits_are_capped_by_the_budget_and_say_so(tmp_path):
    """OBA stops by its callback, the peers between classes (the classes left at zero
    weights); the rows say how many classes were solved and the objective column how far
    the caps left them."""
    peers = installed_l1_peers()
    if not peers:
        pytest.skip("no l1 peer installed (pip install '.[compare]')")
    table = _l1_tables.compare_l1_ovr(1, data=_three_classes(tmp_path), budget=1e-9)
    rows = {r[0]: r for r in table.rows if r[1] != "not installed"}
    assert set(rows) == {"sparsekit L1LogisticOBA [stopped by the budget: 0 of 3 classes "
                         "solved]",
                         *(f"{peer} [stopped by the budget: 1 of 3 classes solved]"
                           for peer in peers)}
    capped = [r for name, r in rows.items() if "1 of 3" in name]
    assert all("above)" in r[4] for r in capped)   # two classes never fit: far above


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_multinomial_fit_the_budget_stopped_says_so(tmp_path):
    """OBA's multinomial fit, stopped by its callback after its first iteration, is not
    the table's answer in its time: its row says the budget ended it, as the one-vs-rest
    rows do (saga, whose one epoch takes longer than the cap, is not run)."""
    table = _l1_tables.compare_l1_multinomial(1, data=_three_classes(tmp_path), budget=1e-9)
    rows = {r[0]: r for r in table.rows}
    assert "sparsekit L1LogisticOBA [stopped by the budget]" in rows
    assert rows["scikit-learn saga"][1].startswith("not run: one epoch ")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("table", ["binary", "multinomial"])
def test_saga_rows_say_whether_the_budget_or_its_own_epochs_ended_them(monkeypatch,
                                                                      tmp_path, table):
    """saga's epochs are sized to the budget: a row whose fit ran all of them says the
    budget stopped it, one that ran all of the table's own epochs that it did not converge,
    and one that converged before either says nothing."""
    monkeypatch.setattr(_l1_tables, "_binary_l1_peers", lambda *args: iter(()))
    compare = {"binary": lambda: _l1_tables.compare_l1_logistic(
                   1, data=Dataset("tiny", *tiny_binary()), budget=1.0),
               "multinomial": lambda: _l1_tables.compare_l1_multinomial(
                   1, data=_three_classes(tmp_path), budget=1.0)}[table]

    def saga_row(epochs):
        monkeypatch.setattr(_l1_tables, "max_iter_within", lambda *args: epochs)
        return [r[0] for r in compare().rows if r[0].startswith("scikit-learn saga")]
    assert saga_row(2) == ["scikit-learn saga [stopped by the budget]"]
    monkeypatch.setattr(_l1_tables, "SAGA_EPOCHS", 2)
    assert saga_row(2) == ["scikit-learn saga [not converged in 2 epochs]"]
    monkeypatch.setattr(_l1_tables, "SAGA_EPOCHS", 100000)
    assert saga_row(100000) == ["scikit-learn saga"]
    if table == "binary":    # the title says which fit is capped: in this table only saga's
        assert f"saga's epochs capped at ~{_l1_tables.FIT_BUDGETS} x 1 s, no other fit " \
               "capped; " in compare().title


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_an_oba_fit_that_ran_all_its_iterations_says_it_did_not_converge(monkeypatch,
                                                                         tmp_path):
    """In the three tables, OBA's row says so when its fit ended at ``max_iter`` short of
    ``tol`` (the one-vs-rest row with the classes it solved), and nothing when it
    converged."""
    monkeypatch.setattr(_l1_tables, "_binary_l1_peers", lambda *args: iter(()))
    binary, classes = Dataset("tiny", *tiny_binary()), _three_classes(tmp_path)

    def first_row(max_iter, compare, data):
        monkeypatch.setattr(_l1_tables, "L1LogisticOBA", functools.partial(
            L1LogisticOBA, max_iter=max_iter))
        return compare(1, data=data).rows[0][0]
    assert first_row(2, _l1_tables.compare_l1_logistic, binary) == \
        "sparsekit L1LogisticOBA [not converged in 2 iterations]"
    assert first_row(2, _l1_tables.compare_l1_ovr, classes) == \
        "sparsekit L1LogisticOBA [not converged in 2 iterations: 0 of 3 classes solved]"
    assert first_row(2, _l1_tables.compare_l1_multinomial, classes) == \
        "sparsekit L1LogisticOBA [not converged in 2 iterations]"
    for compare, data in ((_l1_tables.compare_l1_logistic, binary),
                          (_l1_tables.compare_l1_ovr, classes),
                          (_l1_tables.compare_l1_multinomial, classes)):
        assert first_row(500, compare, data) == "sparsekit L1LogisticOBA"


def test_one_vs_rest_table_lists_a_missing_peer_and_measures_the_others(tmp_path,
                                                                        monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "celer", None)      # import celer raises ImportError
    rows = {r[0]: r for r in _l1_tables.compare_l1_ovr(1, data=_three_classes(tmp_path)).rows}
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
    monkeypatch.setattr(_l1_tables, "SCORE_BLOCK", 50)             # 143 blocks of 7 rows
    assert len(list(_l1_tables._score_blocks(X, W))) == 143
    assert _l1_tables._multinomial_objective(W, b, X, y, 2.0) == pytest.approx(softmax, rel=1e-13)
    assert _l1_tables._ovr_objective(W, X, y, 2.0) == pytest.approx(ovr, rel=1e-13)


@pytest.mark.parametrize("table", ["binary", "one-vs-rest", "multinomial"])
def test_untimed_work_is_shown_under_the_name_of_the_solver_it_prepares(monkeypatch,
                                                                         tmp_path, table):
    """LIBLINEAR's copy of the data, skglm's numba compilation and the sizing of saga's
    epochs take seconds before those solvers' fits (skglm's compilation 5-12 s): the
    progress display names that solver then, not the one timed before it."""
    peers = installed_l1_peers()
    shown = []
    seen = shown_at(monkeypatch, _l1_tables,
                     ["liblinear_binary", "_small_slice", "_saga_max_iter"], shown)
    if table == "binary":
        _l1_tables.compare_l1_logistic(1, data=Dataset("tiny", *tiny_binary()), budget=10.0,
                                       announce=shown.append)
    elif table == "one-vs-rest":
        _l1_tables.compare_l1_ovr(1, data=_three_classes(tmp_path), budget=10.0,
                                  announce=shown.append)
    else:
        _l1_tables.compare_l1_multinomial(1, data=_three_classes(tmp_path), budget=10.0,
                                          announce=shown.append)
    expected = {"liblinear_binary": "LIBLINEAR -s 6, untimed: its copy of the data",
                "_small_slice": "skglm, untimed: numba compiling it on a few rows",
                "_saga_max_iter": "scikit-learn saga, untimed: sizing its epochs to the budget"}
    present = {"liblinear_binary": table != "multinomial" and "LIBLINEAR -s 6" in peers,
               "_small_slice": table != "multinomial" and "skglm" in peers,
               "_saga_max_iter": table != "one-vs-rest"}
    for name, line in expected.items():
        assert seen[name] == ([line] if present[name] else []), name
    timed = [line for line in shown if ", untimed: " not in line]
    assert timed[0] == "sparsekit L1LogisticOBA" and len(timed) == len(set(timed))
