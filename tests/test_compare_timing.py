"""How ``sparsekit-compare`` caps its fits: iterations sized from timed fits, a fit whose
one iteration passes the cap not run, the callback that stops a fit, class-by-class fits."""
import json
import types

import numpy as np
import pytest

from sparsekit.benchmarks import _timing


def test_iteration_caps_count_a_fits_fixed_part_apart(monkeypatch):
    """A fit's time is a fixed part plus one per iteration (a one-vs-rest fit of many
    labels is mostly per-label setup at one iteration): the cap counts the fixed part once,
    where dividing the budget by a one-iteration fit gave several times fewer iterations;
    the part per iteration is measured on fits long enough to be timed. The fits advance a
    fake clock by their modelled time."""
    import types

    clock = [0.0]
    monkeypatch.setattr(_timing, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))

    def fit_with(seconds_fixed, seconds_per):
        def fit(k, step):
            clock[0] += seconds_fixed + seconds_per * k
        return fit

    budget = 0.3 / _timing.FIT_BUDGETS                  # 0.3 s for the capped fit
    # (0.3 - 0.02) / 0.005 = 56, where 0.3 / 0.025 gave 12
    assert _timing.max_iter_within(fit_with(0.02, 0.005), 100, budget, 10_000) in (55, 56)
    # a tenth of a one-iteration fit per iteration at least: (0.3 - 0.045) / 0.005 = 51
    assert _timing.max_iter_within(fit_with(0.05, 0.0), 100, budget, 10_000) in (50, 51)
    assert _timing.max_iter_within(fit_with(0.0, 0.01), 100, budget, 10_000) in (29, 30)
    assert _timing.max_iter_within(fit_with(0.0, 0.01), 100, budget, 7) == 7
    assert _timing.max_iter_within(fit_with(0.0, 0.01), 100, np.inf, 7) == 7

    def cheap_start(k, step):     # 1 s of setup, a first iteration of 0.02 s, then 0.4 s
        clock[0] += 1.0 + (0.02 if k == 1 else 0.1 + 0.4 * (k - 2))
    # lbfgs on 210,000 rows of 50 classes took 1.02 and 1.10 s for one and two iterations,
    # and 125 s for the 286 these made fit in 30 s: the fits double until they differ by
    # SIZING_SHARE of the cap (4 iterations, 1.9 s): (30 - (1.1 - 2 x 0.4)) / 0.4 = 74
    assert _timing.max_iter_within(cheap_start, 100, 10.0, 2000) == 74

    def warming(k, step):         # the first two iterations at half the cost of the others
        clock[0] += 0.002 * k if k <= 2 else 0.004 * k
    # sized by fits doubled until they differ by 0.3 s (SIZING_SHARE of 30 s): 30 / 0.004 =
    # 7500, where the fits of 1 and 2 iterations gave 15000, twice the time
    assert _timing.max_iter_within(warming, 100, 30.0 / _timing.FIT_BUDGETS,
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
    monkeypatch.setattr(_timing, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
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
    reason = _timing.max_iter_within(fit_with(0.0, 5.125e-9, 2.0), n, budget, 20000,
                                      "epoch")
    assert reason == ("not run: one epoch would take about 38 s (timed on 12,500 of the "
                      "400,000 rows), more than the cap of ~30 s (3 x --budget)")
    assert calls == [(1, 64), (1, 32)]
    calls.clear()
    # a power of 1.2, 40 s in all: the estimates from 1/32 ... 1/4 of the rows grow from 22
    # to 33 s, so the rows double until a quarter of them (7.6 s)
    reason = _timing.max_iter_within(fit_with(0.0, 40 / n ** 1.2, 1.2), n, budget, 20000)
    assert reason == ("not run: one iteration would take about 33 s (timed on 100,000 of "
                      "the 400,000 rows), more than the cap of ~30 s (3 x --budget)")
    assert calls == [(1, 64), (1, 32), (1, 16), (1, 8), (1, 4)]
    calls.clear()
    # a fixed part of 5 s and 4 s an iteration on all rows: the estimate (9 s) is less than
    # twice a fit on 1/32 of the rows, so the iterations are sized on every row: (30 - 5) / 4
    assert _timing.max_iter_within(fit_with(5.0, 1e-5), n, budget, 20000) == 6
    assert calls == [(1, 64), (1, 32), (1, 1), (2, 1)]
    calls.clear()
    # cheap: two small fits, then the sizing on every row
    assert _timing.max_iter_within(fit_with(0.0, 1e-8), n, budget, 20000) > 100
    assert calls[:3] == [(1, 64), (1, 32), (1, 1)]
    calls.clear()
    reason = _timing.max_iter_within(fit_with(95.0, 0.0), 100, budget, 20000, "epoch")
    assert reason == "not run: one epoch took 95.0 s, more than the cap of ~30 s (3 x --budget)"
    assert calls == [(1, 1)]
    calls.clear()
    assert _timing.max_iter_within(fit_with(0.0043, 0.0), 100, 0.001, 20000) == (
        "not run: one iteration took 0.0043 s, more than the cap of ~0.003 s (3 x --budget)")
    calls.clear()
    assert _timing.max_iter_within(fit_with(12.0, 0.0), 100, budget, 20000) == 2
    assert calls == [(1, 1)]
    row = _timing.measure("scikit-learn saga", _timing.unless_too_slow(reason, print), 3,
                           None)
    assert row == ["scikit-learn saga", reason, "", "", ""]


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
            _timing.TimeLimit(0.0)).fit(X / 16, y)
    assert est.n_iter_.tolist() == [1]
    full = L1LogisticOBA(C=10.0, multiclass="multinomial").fit(X / 16, y)
    assert full.n_iter_[0] > 1


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_lbfgs_time_limit_stops_scikit_learns_lbfgs_fits(monkeypatch):
    """scikit-learn's LogisticRegression (lbfgs) stops at the end of its first iteration
    once the limit has passed, its model fitted there; the labels of a OneVsRestClassifier
    that share the limit each stop after one iteration, the time running from ``start``
    (not from each label's fit); a limit not reached leaves the fit as it is without one."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    X, y = load_digits(return_X_y=True)
    X = X / 16
    limit = _timing.LbfgsTimeLimit(0.0)
    for _ in range(2):                                  # re-armed by start()
        est = LogisticRegression().set_callbacks(limit.start()).fit(X, y)
        assert est.n_iter_.tolist() == [1] and limit.stopped
        assert 0.5 < est.score(X, y) < 1.0
    full = LogisticRegression().fit(X, y)
    assert full.n_iter_[0] > 10 and full.score(X, y) > 0.98
    Y = np.stack([y % 2, y > 4, y == 3], axis=1).astype(int)
    ovr = OneVsRestClassifier(LogisticRegression().set_callbacks(limit.start())).fit(X, Y)
    assert [e.n_iter_[0] for e in ovr.estimators_] == [1, 1, 1] and limit.stopped
    free = _timing.LbfgsTimeLimit(np.inf)
    est = LogisticRegression().set_callbacks(free.start()).fit(X, y)
    assert not free.stopped and est.n_iter_[0] == full.n_iter_[0]
    np.testing.assert_array_equal(est.coef_, full.coef_)
    clock = iter(range(1000))           # a second a reading: the limit passes at the
    monkeypatch.setattr(_timing, "time",                                     # 3rd iteration
                        types.SimpleNamespace(perf_counter=lambda: next(clock)))
    limit = _timing.LbfgsTimeLimit(2.5)                 # of the first label, for all three
    ovr = OneVsRestClassifier(LogisticRegression().set_callbacks(limit.start())).fit(X, Y)
    assert [e.n_iter_[0] for e in ovr.estimators_] == [3, 1, 1] and limit.stopped


def test_class_by_class_stops_between_classes_after_the_limit():
    fitted = []

    def fit_class(k):
        fitted.append(k)
        return np.full(4, k + 1.0)
    done = []
    coef = _timing.class_by_class(fit_class, 3, np.inf, done)
    assert coef.tolist() == [[1.0] * 4, [2.0] * 4, [3.0] * 4] and done == [3]
    fitted.clear()
    coef = _timing.class_by_class(fit_class, 3, 0.0, done)
    assert fitted == [0] and done == [1]           # the first class is always fit
    assert coef.tolist() == [[1.0] * 4, [0.0] * 4, [0.0] * 4]


def test_fits_are_timed_fewer_times_where_the_repeats_would_pass_the_budget(monkeypatch):
    """After the warm-up, ``repeat`` fits, or as many as its time says fit in ``budget``
    (at least one): a 7-s fit once and a 4-s fit twice at the default 10 s, where both were
    timed 3 times; a first fit over the budget is the only fit; the titles say so. A first
    fit of WARM_FIT seconds or more is the first timed fit, not a warm-up run again."""
    import types

    clock, calls = [0.0], [0]
    monkeypatch.setattr(_timing, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))

    def fit_of(seconds):
        def fit():
            clock[0] += seconds
            calls[0] += 1
            return "model"
        return fit

    def timed(seconds, repeat=3, budget=10.0, fits=None):
        calls[0] = 0
        times, model = _timing._median_fit(fit_of(seconds), repeat, budget)
        assert model == "model"
        assert fits is None or calls[0] == fits, (seconds, calls[0])
        return times

    assert _timing.WARM_FIT == 1.0
    assert timed(7.0, fits=1) == [7.0]
    assert timed(4.0, fits=2) == [4.0, 4.0]
    assert timed(3.0, fits=3) == [3.0] * 3
    assert timed(1.0, fits=3) == [1.0] * 3 and timed(0.75, fits=4) == [0.75] * 3
    assert timed(0.5, fits=4) == [0.5] * 3 and len(timed(0.5, repeat=5, fits=6)) == 5
    assert len(timed(4.0, budget=np.inf, fits=3)) == 3
    assert timed(12.0, fits=1) == [12.0]                 # the first fit alone
    calls[0] = 0        # a first fit that does more than the others stays a warm-up
    assert _timing._median_fit(fit_of(4.0), 3, 10.0, warm_up=True)[0] == [4.0, 4.0]
    assert calls[0] == 3
    assert _timing.fits_phrase(3, 10.0) == ("median (min-max) of 3 fits (fewer where 3 "
                                            "would take over 10 s)")
    assert _timing.fits_phrase(3) == "median (min-max) of 3 fits"
    assert _timing.fits_phrase(1, 10.0) == "one fit each"      # not "of 1 fits"


def test_a_peer_that_fails_to_import_gets_the_reason_in_its_row(tmp_path, monkeypatch):
    """A peer's install that an upgrade broke (compiled against another NumPy, or using a
    name NumPy removed) raised at import and ended the command with a traceback; absent
    peers stay "not installed", a missing dependency of an installed one is named."""
    (tmp_path / "brokenpeer").mkdir()
    (tmp_path / "brokenpeer" / "__init__.py").write_text(
        'raise AttributeError("module numpy has no attribute float_")')
    (tmp_path / "needsdep.py").write_text("import a_dependency_that_is_absent")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _timing.import_peer("json") is json
    assert _timing.import_peer("a_peer_that_is_absent") is None
    assert _timing.import_peer("a_peer_that_is_absent.sub") is None
    assert _timing.import_peer("brokenpeer") == (
        "error: import brokenpeer: AttributeError: module numpy has no attribute float_")
    assert _timing.import_peer("needsdep") == (
        "error: import needsdep: ModuleNotFoundError: No module named "
        "'a_dependency_that_is_absent'")
    row = _timing.measure("peer", _timing.import_peer("brokenpeer"), 3, None)
    assert row == ["peer", "error: import brokenpeer: AttributeError: module numpy has no "
                   "attribute float_", "", "", ""]
