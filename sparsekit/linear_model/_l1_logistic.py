"""ℓ1-regularized logistic regression solved by OBA (Keskar 2017, thesis chapter 2).

Objective, exactly LIBLINEAR's ``-s 6`` (Yuan et al. 2012):

    F(w, b) = ‖w‖₁ + C Σᵢ sᵢ log(1 + exp(−yᵢ (wᵀxᵢ + b))),   yᵢ ∈ {−1, +1},

with the intercept b free and unpenalized. The solver minimizes F / (C n), i.e. the mean
logistic loss plus μ‖w‖₁ with μ = 1/(C n), by :func:`sparsekit.optimize.minimize_oba`.
With ``l1_ratio`` r < 1 the penalty is scikit-learn's elastic net r‖w‖₁ + (1 − r)/2 ‖w‖²
(its ridge part joins the smooth datafit); with ``multiclass="multinomial"`` the loss is the
softmax negative log-likelihood of all classes at once.
"""
import numbers

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from scipy.special import expit, log_expit
from sklearn.callback import with_callbacks
from sklearn.linear_model._base import LinearClassifierMixin, SparseCoefMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted

from sparsekit.gpu._cupy import on_current_device, require_cupy
from sparsekit.gpu.datafits import is_device_matrix
from sparsekit.linear_model._base import SparsekitClassifier, unchanged_on_error
from sparsekit.linear_model._dask_input import block_predictions, is_dask_collection
from sparsekit.linear_model._device_input import (check_device_X, device_scores, fit_device,
                                                  host_targets, to_device)
from sparsekit.linear_model._l1_advice import warn_fit_results
from sparsekit.linear_model._l1_problems import (DaskProblems, DeviceProblems, MemoryProblems,
                                                 check_fit_data, multinomial_within_memory)
from sparsekit.linear_model._l1_solve import (EXCESS_WARN, GAP_CONFIRM, GAP_WARN, binary_model,
                                              centered_start, fit_binary, fit_multinomial,
                                              multinomial_model)
from sparsekit.losses._softmax import _log_softmax
from sparsekit.utils._scores import linear_scores
from sparsekit.utils._threads import (Abandoned, abandoned_on_error, cpu_threads, jobs_at_once,
                                      one_blas_thread, openmp_call, stop_if_abandoned)
from sparsekit.utils._validation import check_dense_size, check_entry_magnitude, validate_input


class _CoefRows:
    """The rows of a one-vs-rest ``coef_`` as the problems end: a dense array, or with
    ``sparse`` each row's nonzeros, made into a CSR matrix at the end."""

    def __init__(self, n_rows, n_columns, sparse):
        self.shape, self.sparse = (n_rows, n_columns), sparse
        self._rows = [None] * n_rows if sparse else np.empty(self.shape)

    def set(self, k, w):
        if self.sparse:
            places = np.flatnonzero(w)
            self._rows[k] = (places, w[places])
        else:
            self._rows[k] = w

    def matrix(self):
        if not self.sparse:
            return self._rows
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int64)
        np.cumsum([places.size for places, _ in self._rows], out=indptr[1:])
        indices = np.concatenate([places for places, _ in self._rows])
        data = np.concatenate([values for _, values in self._rows])
        return sp.csr_matrix((data, indices, indptr), shape=self.shape)


def _namespace(a):
    """The array module of ``a``: NumPy, or CuPy for a CuPy array."""
    return require_cupy() if is_device_matrix(a) else np


class L1LogisticOBA(LinearClassifierMixin, SparseCoefMixin, SparsekitClassifier):
    """Logistic regression with an ℓ1 (or elastic-net) penalty by OBA, a second-order method.

    Minimizes ‖w‖₁ + C Σᵢ sᵢ log(1 + exp(−yᵢ(wᵀxᵢ + b))) with the intercept b free and
    unpenalized: LIBLINEAR's ``-s 6 -B 1 -R`` objective, and its ``-s 6`` with
    ``fit_intercept=False`` (Keskar 2017, chapter 2). Multiclass
    problems are solved one-vs-rest, in parallel with joblib, or as one multinomial
    (softmax) problem: C Σᵢ sᵢ (log Σₖ exp(zᵢₖ) − zᵢ,yᵢ) + ‖W‖₁ with z = W xᵢ + b, solved by
    the same second-order method with the block Hessian of the softmax on the free set.
    ``l1_ratio`` < 1 makes the penalty scikit-learn's elastic net. X may be a dask array
    partitioned by rows, or a dask DataFrame: the fit then runs on the workers of the default
    ``distributed.Client`` that hold its partitions, and only parameter-sized vectors
    travel (the user guide's "Scaling out with Dask").

    Read more in the :ref:`User Guide <l1_logistic>`.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularization strength (as in LIBLINEAR and scikit-learn). X times s at
        C / s is the problem of X at C, its weights divided by s (with ``l1_ratio`` < 1,
        at a ridge weight divided by s). A fit whose columns' typical entry (the median
        column's root mean square nonzero entry) lies outside [1/16, 16] solves its
        problem with X multiplied by the power of two that brings that entry near 1 (the
        same problem: the weights and the elastic net's ridge weight follow), in a copy of
        X's entries where the layout does not copy them anyway (in memory, on a dask
        array's workers or on the GPU), so that features in any units (all 1e-4 times as
        large, and C 1e4 times) take the iterations they take at unit scale.
    tol : float, default=1e-8
        Stopping tolerance on the optimality measure ‖x − S_μ(x − ∇f(x))‖_∞ of the scaled
        problem f = Σᵢ sᵢ log(1 + exp(−yᵢ(wᵀxᵢ + b))) / Σᵢ sᵢ (the weighted mean loss),
        μ = 1/(C Σᵢ sᵢ) (1e-8 is the default ``optol`` of the thesis' reference code): rescaling the
        sample weights and 1/C together changes neither the solution nor the stop. The
        measure is in the units of the gradient, which a column of large entries scales: a
        solve that makes no progress for 20 iterations above ``tol`` (its gradient's rounding
        error) stops there and warns.
    max_iter : int, default=500
        Maximum number of OBA iterations per binary problem.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept. A fit without warm start begins at w = 0 with the
        intercept that is optimal for it (the log-odds of the weighted share of positives).
        The columns of X that hold an entry in every row (all of a dense X's; a numeric
        column beside one-hot ones in a sparse X) and whose mean lies beyond 10 standard
        deviations (a raw year or timestamp) are centered for the solve, in a copy (also
        in a dask array's partitions and on the GPU; not in a cupyx sparse matrix), which
        leaves the problem as it is (the intercept absorbs the shift) and its Newton
        systems well-conditioned.
    warm_start : bool, default=False
        Start from the previous solution when the shapes match.
    class_weight : dict, "balanced" or None, default=None
        Multiplies the loss terms of each class (as sample weights do); "balanced" gives
        class c the weight (total sample weight) / (n_classes × weight of class c), as
        scikit-learn does.
    n_jobs : int, default=None
        Number of threads: for the one-vs-rest problems (the kernels release the GIL),
        or for the matrix products of a fit's one problem, at most one thread per CPU and
        the same fit (on a dense float64 X, up to BLAS's rounding): a binary problem's
        (the rows of X w and of the Hessian products' X v, the columns of the gradient's
        and their Xᵀ r split among them, and a dense X's Hessians formed in float32
        panels, by panels; a sparse X's formed by scattered updates by blocks of rows
        where they make 2²⁴ updates or more, the same fit up to their rounding), the
        multinomial problem's (the rows of X V, the columns of Xᵀ R). None means 1 unless in a
        :func:`joblib.parallel_backend` context, -1 all processors. Threads of this
        process under any joblib backend (the problems share X); an interrupted fit
        (KeyboardInterrupt) ends them at their next iteration. BLAS runs one thread during
        the solves (its calls there are small; its own threads would take the cores from
        these), and is set back after the fit.
    verbose : int, default=0
        1 prints one line per binary problem, 2 also one line per OBA iteration.
    sparse_coef : bool, default=False
        Store ``coef_`` as a ``scipy.sparse.csr_matrix``; a one-vs-rest fit then keeps each
        class's nonzero weights as its problem ends and never holds the dense array (the
        multinomial solver works on the dense weights). A dense ``coef_`` larger than half
        the machine's memory (hashed features with many classes) is refused before the fit
        starts. The scores of sparse rows read only the nonzero weights either way; a dense
        ``coef_`` is scanned for them at each call, which a sparse one skips (batches of
        100 to 1,000 rows of a wide corpus score several times faster; ``sparsify()`` after the
        fit does the same).
    multiclass : {"ovr", "multinomial"}, default="ovr"
        With more than two classes: one binary problem per class against the rest (as
        LIBLINEAR), or one multinomial problem over all classes (the softmax model, as
        scikit-learn's ``LogisticRegression``, whose only ℓ1 solver for it is ``saga``);
        ``predict_proba`` then returns its softmax probabilities. A constant added to a
        feature's class weights changes no probability: of those models the multinomial
        fit with ``l1_ratio=1`` returns one where each feature's class weights hold a
        zero at their median (the least ℓ1 norm, and a zero more where two models tie on
        it). Two classes always make the binary problem. The multinomial fit holds about 14
        arrays of its dense weights' size and 6 of rows × classes (more where most weights
        are free); one whose arrays would exceed the machine's memory is refused before it
        starts, where one-vs-rest holds arrays of one class's weights.
    l1_ratio : float in (0, 1], default=1.0
        Elastic-net mixing, with scikit-learn's meaning: the penalty is
        ``l1_ratio ‖w‖₁ + (1 − l1_ratio)/2 ‖w‖²`` (the intercepts unpenalized); 1 is the
        ℓ1 penalty. For a pure ℓ2 penalty use scikit-learn's ``LogisticRegression``.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"`` fits on the current GPU with CuPy (``pip install sparsekit[gpu]``): the
        margins, the loss, the gradient and the Hessian products of OBA run on the device,
        its active-set logic on the host. X given as a CuPy array or a cupyx sparse matrix
        needs ``"cuda"``; dask arrays need ``"cpu"``. The fitted attributes are
        NumPy arrays: the model predicts NumPy input on the CPU, and CuPy input (whatever
        ``device``) on the GPU, returning CuPy arrays.

    Attributes
    ----------
    coef_ : ndarray or csr_matrix of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
        A multinomial model's intercepts sum to zero (adding a constant to all of them
        changes no probability).
    classes_ : ndarray of shape (n_classes,)
    n_iter_ : ndarray of shape (1,) or (n_classes,)
        OBA iterations of each binary problem (of the multinomial problem: shape (1,)).
    optimality_ : ndarray of shape (1,) or (n_classes,)
        Final optimality measure of each binary problem.
    duality_gap_ : ndarray of shape (1,) or (n_classes,)
        Relative duality gap of each binary problem at the returned (w, b): an upper bound
        on (F − min_w F) / F with b held fixed. ``tol`` is absolute, and where F is very
        flat it is met far from the minimum, so a solve stops at the first iterate that
        meets ``tol`` with a gap of at most 1% of F, or whose optimality is at most
        ``tol`` / 100 (and at most 0.1/(C Σ sᵢ)): where ``tol`` exceeds 1/(C Σ sᵢ) the gap
        is a loose bound that can be large however near the minimum F is. Both tests pass
        at a larger ``tol`` wherever they pass at a smaller one, so a smaller ``tol`` never
        returns a model of larger F. The fit warns when F fell by more than 0.1% after
        ``tol`` was met and the gap of the model returned is still above 5%.
    corrective_loops_ : list of ndarray
        Passes of OBA's corrective cycle per iteration, for each binary problem.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 2 (OBA, Algorithms 1 and 2).
    .. [2] Yuan, G.-X., Ho, C.-H. & Lin, C.-J. (2012). An improved GLMNET for L1-regularized
       logistic regression. JMLR 13, 1999-2030 (LIBLINEAR's ``-s 6`` objective).
    .. [3] Zou, H. & Hastie, T. (2005). Regularization and variable selection via the
       elastic net. JRSS B 67(2), 301-320 (``l1_ratio``).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekit import L1LogisticOBA
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), L1LogisticOBA(C=0.1)).fit(X, y)
    >>> round(model.score(X, y), 3)
    0.974
    >>> int((model[-1].coef_ != 0).sum())
    8

    scikit-learn's ``SelectFromModel`` keeps the features of nonzero weight (see ``penalty``):

    >>> from sklearn.feature_selection import SelectFromModel
    >>> int(SelectFromModel(model[-1], prefit=True).get_support().sum())
    8

    One multinomial model over the ten digits, with an elastic-net penalty:

    >>> from sklearn.datasets import load_digits
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = L1LogisticOBA(C=0.1, multiclass="multinomial", l1_ratio=0.8).fit(X / 16, y)
    >>> clf.coef_.shape, round(clf.score(X / 16, y), 2), int((clf.coef_ != 0).sum())
    ((10, 64), 0.94, 133)
    """

    _parameter_constraints = {
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "warm_start": ["boolean"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
        "sparse_coef": ["boolean"],
        "multiclass": [StrOptions({"ovr", "multinomial"})],
        "l1_ratio": [Interval(numbers.Real, 0, 1, closed="right")],
        "device": [StrOptions({"cpu", "cuda"})],
    }

    def __init__(self, C=1.0, *, tol=1e-8, max_iter=500, fit_intercept=True, warm_start=False,
                 class_weight=None, n_jobs=None, verbose=0, sparse_coef=False,
                 multiclass="ovr", l1_ratio=1.0, device="cpu"):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.sparse_coef = sparse_coef
        self.multiclass = multiclass
        self.l1_ratio = l1_ratio
        self.device = device

    @property
    def penalty(self):
        """The penalty's name: ``"l1"``, or ``"elasticnet"`` when ``l1_ratio`` < 1.

        Read-only, from ``l1_ratio``. scikit-learn's
        :class:`~sklearn.feature_selection.SelectFromModel` reads it, as it reads
        ``LinearSVC(penalty="l1")``'s: with ``"l1"`` its default threshold keeps the features
        of nonzero weight (above 1e-5) rather than those of above-mean weight.
        """
        return "l1" if self.l1_ratio == 1 else "elasticnet"

    @unchanged_on_error
    @with_callbacks
    def fit(self, X, y, sample_weight=None):
        """Fit the model on X and labels y.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, float32 or float64 (``coef_`` follows its dtype); a dask
            array of such row blocks, or a dask DataFrame (its partitions; ``y`` and
            ``sample_weight`` then Series of the same frame, or arrays), fit on the workers
            of the default ``distributed.Client``; or, with ``device="cuda"``, a CuPy array /
            cupyx sparse matrix. The columns of a sparse X that store no entry (hashed
            features) are left out of the solve: their weights are 0. A dense X of at
            most 30% nonzero entries (pixels, counts) is solved as a sparse copy.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows' loss terms (multiplied by ``class_weight``).

        Returns
        -------
        self : L1LogisticOBA
            The fitted estimator.
        """
        self._validate_params()
        on_device = fit_device(self.device, X)
        if on_device and is_dask_collection(X):
            raise ValueError("device='cuda' fits in-memory X; use device='cpu' for dask "
                             "arrays")
        data = (DeviceProblems if on_device else DaskProblems if is_dask_collection(X)
                else MemoryProblems)(self, X, y, sample_weight)
        classes = data.classes
        multinomial = self.multiclass == "multinomial" and classes.size > 2
        problems = (["the multinomial problem"] if multinomial
                    else [classes[1]] if classes.size == 2 else list(classes))
        if multinomial:     # the solver's arrays are in this process, on a GPU too
            multinomial_within_memory(data.n_samples, data.columns.n_used, classes.size,
                                      self.fit_intercept)
        if not self.sparse_coef:
            check_dense_size("coef_", [("rows", 1 if classes.size == 2 else classes.size),
                                       ("columns", self.n_features_in_)],
                             np.dtype(data.dtype).itemsize,
                             "pass sparse_coef=True, which stores its nonzeros")
        # the callbacks are shown X, y and sample_weight as given (their scorers weigh
        # by the user's weights, not by those times class_weight)
        context = self._begin_fit_task(X, y, len(problems), sample_weight)
        coef, intercept, results = self._solve_problems(data, problems, multinomial,
                                                        context, X, y, sample_weight)
        self.coef_ = data.columns.expand(coef.astype(data.dtype, copy=False))
        self.intercept_ = intercept.astype(data.dtype)
        self._softmax = multinomial
        self.n_iter_ = np.array([r.nit for r in results], dtype=np.int32)
        self.optimality_ = np.array([r.optimality for r in results])
        self.duality_gap_ = np.array([r.duality_gap for r in results])
        self.corrective_loops_ = [r.corrective_loops for r in results]
        # 1, not np.int64(1), in the messages
        names = problems if multinomial else [f"class {np.asarray(p).tolist()!r}"
                                              for p in problems]
        for name, r, gap in zip(names, results, self.duality_gap_):
            self._say(f"{name}: {r.nit} iterations, {r.ncg} CG, optimality "
                      f"{r.optimality:.2e}, F/(C n) {r.fun:.10e}, relative duality gap "
                      f"{gap:.2e}")
            if r.success and r.tol_excess > 0 and not (r.tol_excess > EXCESS_WARN
                                                    and gap > GAP_WARN):
                self._say(f"{name}: tol {self.tol:.2e} was met with a duality gap above "
                          f"{GAP_CONFIRM:.0%} of F; the solve went on until the gap was "
                          f"below it or the optimality below {r.tol_floor:.2e}, lowering "
                          f"F by {r.tol_excess:.2e} of it")
        warn_fit_results(names, results, self.duality_gap_, self.tol, self.max_iter,
                         data.advice)
        self._end_fit_task(context, X, y, sample_weight)
        return self

    def _solve_problems(self, data, problems, multinomial, context, X, y, sample_weight):
        """(coef on ``data``'s used columns, intercept, the solvers' results): every
        problem of ``data`` solved, in joblib's threads when there are several, each a
        subtask of the fit's callback ``context`` (shown ``X``, ``y`` and
        ``sample_weight``)."""
        # one subtask per problem, created here so that their ids follow the classes
        tasks = [context.subcontext(task_name="multinomial problem" if multinomial
                                    else "binary problem", max_subtasks=None)
                 for _ in problems]
        w0 = self._warm_start_point(data.classes.size if multinomial else len(problems),
                                    self.n_features_in_, multinomial, data.columns)
        C = self.C * data.c_factor
        parameters = multinomial_model if multinomial else binary_model
        # several problems in joblib's threads, or one on OpenMP threads from a thread of its
        # own: solves that end at their next iteration once the caller was interrupted
        threads = cpu_threads(self.n_jobs) if len(problems) == 1 else 1
        elsewhere = (jobs_at_once(self.n_jobs, len(problems), threads=True) > 1
                     if len(problems) > 1 else threads > 1)

        def solve(k, pos):
            if abandoned.is_set():        # a job that joblib started after the interrupt
                raise Abandoned
            self._begin_task(tasks[k], X, y, sample_weight)
            problem = data.datafit(None if multinomial
                                   else int(np.searchsorted(data.classes, pos)))

            def model(x):      # a fitted estimator only when this problem is the whole model
                if len(problems) > 1:
                    return None
                coef, intercept = parameters(problem, x)
                return {"coef_": data.columns.expand(coef).astype(data.dtype),
                        "intercept_": intercept.astype(data.dtype), "_softmax": multinomial}
            callback, close = self._iteration_callback(tasks[k], X, y, sample_weight, model,
                                                       abandoned if elsewhere else None)
            start = None if w0 is None else centered_start(problem, w0 if multinomial
                                                           else w0[k], multinomial)
            if multinomial:
                result = fit_multinomial(problem, C, self.tol, self.max_iter, start,
                                         self.verbose, self.l1_ratio, callback)
            else:
                w, b, res = fit_binary(problem, C, self.tol, self.max_iter, start,
                                       self.verbose, self.l1_ratio, callback)
                res.pop("x")        # w is its row of coef_
                result = (w, b, res)
            close()
            self._end_subtask(tasks[k], X, y, sample_weight)
            return result
        if isinstance(data, DeviceProblems):      # the problems' threads on the caller's GPU
            solve = on_current_device(solve)
        # BLAS on one thread: the solves' BLAS calls are small and alternate with OBA's own
        # kernels and the other problems' threads (at BLAS's default threads, dense fits
        # took up to 3.2 times as long: doc/benchmarks.md, "blas_threads")
        with one_blas_thread(), abandoned_on_error() as abandoned:
            if len(problems) > 1:
                jobs = (delayed(solve)(k, pos) for k, pos in enumerate(problems))
                # threads of this process whatever joblib backend is in effect: the solves
                # share the data (on dask input each drives the cluster from a thread of
                # the client), which a process or a dask worker would be sent a copy of
                results = Parallel(n_jobs=self.n_jobs, require="sharedmem",
                                   return_as="generator")(jobs)
            else:   # without joblib's pool (~10 ms for one task, a small fit's whole time)
                results = [openmp_call(threads, solve, 0, problems[0])]
            if multinomial:
                coef, intercept, res = results[0]
                return (sp.csr_matrix(coef) if self.sparse_coef else coef), intercept, [res]
            # each problem's row into coef_ as it ends (joblib yields them in order): not
            # every problem's solution kept to the end, then stacked; with sparse_coef only
            # its nonzeros, never a dense coef_
            coef = _CoefRows(len(problems), data.columns.n_used, self.sparse_coef)
            intercept, kept = np.empty(len(problems)), []
            for k, (w, b, res) in enumerate(results):
                coef.set(k, w)
                intercept[k] = b
                kept.append(res)
        return coef.matrix(), intercept, kept

    def _device_fit_data(self, X, y, sample_weight):
        """(X on the GPU, y, sample_weight on the host), validated as on the CPU."""
        if not is_device_matrix(X):
            X, y, sample_weight = check_fit_data(self, X, y, sample_weight)
            return to_device(X), y, sample_weight
        X = check_device_X(X)
        y, sample_weight = host_targets(X, y, sample_weight)
        self.__dict__.pop("feature_names_in_", None)
        self.n_features_in_ = X.shape[1]
        check_entry_magnitude(X, np.float64)
        return X, y, sample_weight

    def _iteration_callback(self, task, X, y, sample_weight, model, abandoned=None):
        """``(callback, close)``: OBA's callback, which makes each iteration a subtask of the
        problem's ``task`` for scikit-learn's callbacks (the model as it stands given by
        ``model(x)``, reconstruction attributes or None; a callback asking to stop ends the
        solve by ``StopIteration``) and ends the solve by :class:`Abandoned` once the Event
        ``abandoned`` is set, and ``close`` for the subtask begun after the last iteration.
        ``(None, no-op)`` without callbacks and event."""
        if not getattr(self, "_skl_callbacks", None):
            return stop_if_abandoned(abandoned), lambda: None
        current = []

        def begin():
            current.append(self._begin_subtask(task, "OBA iteration", X, y, sample_weight))

        def callback(intermediate_result):
            if abandoned is not None and abandoned.is_set():
                raise Abandoned
            x = intermediate_result.x
            stop = self._end_subtask(current[-1], X, y, sample_weight, lambda: model(x))
            begin()
            if stop:
                raise StopIteration

        begin()
        return callback, lambda: self._end_subtask(current[-1])

    def _warm_start_point(self, n_problems, n_features, multinomial, columns):
        """The previous solution as start(s) on the solvers' ``columns`` (UsedColumns):
        one row per binary problem, or the multinomial problem's (W.ravel(), b); None
        without a usable one."""
        if not (self.warm_start and hasattr(self, "coef_")) or multinomial != getattr(
                self, "_softmax", False):
            return None
        coef = self.coef_.toarray() if sp.issparse(self.coef_) else self.coef_
        if coef.shape != (n_problems, n_features):
            return None
        coef = columns.restrict(coef.astype(np.float64))
        if multinomial:
            return np.concatenate([coef.T.ravel(), self.intercept_ if self.fit_intercept
                                   else []]).astype(np.float64)
        if self.fit_intercept:
            return np.hstack([coef, self.intercept_[:, None]])
        return coef.copy()

    @block_predictions
    def decision_function(self, X):
        """Signed margins X wᵀ + b of the rows of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            The positive class' margin for two classes, one column per class otherwise;
            float32 when both X and the model are (a CuPy array for CuPy X).
        """
        check_is_fitted(self)
        if is_device_matrix(X):
            scores = device_scores(X, self.coef_, self.intercept_)
            return scores.ravel() if scores.shape[1] == 1 else scores
        X = validate_input(self, X, accept_sparse=["csr", "csc"],
                          dtype=[np.float64, np.float32], reset=False)
        dtype = np.result_type(X.dtype, self.coef_.dtype)    # float32 only if both are
        if sp.issparse(X):
            scores = linear_scores(X, self.coef_, self.intercept_,
                                   cpu_threads(self.n_jobs)).astype(dtype, copy=False)
        else:
            coef = self.coef_.astype(dtype)
            scores = safe_sparse_dot(X.astype(dtype, copy=False), coef.T, dense_output=True)
            scores = np.asarray(scores + self.intercept_.astype(dtype))
        return scores.ravel() if scores.shape[1] == 1 else scores

    @block_predictions
    def predict(self, X):
        """Predicted class of each row of X (the largest margin).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Elements of ``classes_`` (a CuPy array for CuPy X when the labels are numbers).
        """
        if not is_device_matrix(X):
            return super().predict(X)
        scores = self.decision_function(X)
        best = (scores > 0).astype(np.int64) if scores.ndim == 1 else scores.argmax(axis=1)
        if self.classes_.dtype.kind in "biuf":
            return _namespace(best).asarray(self.classes_)[best]
        return self.classes_[best.get()]

    @block_predictions
    def predict_proba(self, X):
        """Class probabilities of the rows of X.

        σ(margin) for two classes, the softmax of the scores for a multinomial model, the
        one-vs-rest σ's normalized to sum to 1 otherwise (as scikit-learn's one-vs-rest
        ``LogisticRegression``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; rows sum to 1.
        """
        scores = self.decision_function(X)
        if _namespace(scores) is np and scores.ndim == 2:
            return _probabilities(scores, getattr(self, "_softmax", False))
        return _namespace(scores).exp(self._log_proba(scores))

    @block_predictions
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed in log space.

        log σ(z) = −log(1 + e^{−z}) per class, normalized by a log-sum-exp over the
        classes: finite for any margin, where the log of a rounded probability is −inf.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        return self._log_proba(self.decision_function(X))

    def _log_proba(self, scores):
        """:meth:`predict_log_proba` of the scores (NumPy or CuPy)."""
        xp = _namespace(scores)                       # NumPy, or CuPy for CuPy X
        dtype = scores.dtype                          # float32 for a float32 model and X
        scores = scores.astype(np.float64)
        if scores.ndim == 1:
            scores = xp.stack([-scores, scores], axis=1)
            return (-xp.logaddexp(0.0, -scores)).astype(dtype)
        if not getattr(self, "_softmax", False):
            scores = -xp.logaddexp(0.0, -scores)      # log σ, then normalized
        if xp is np:
            return _log_softmax(scores).astype(dtype)
        top = scores.max(axis=1, keepdims=True)
        shifted = scores - top
        return (shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))).astype(dtype)


#: a row whose largest one-vs-rest margin is below this has every σ near or below the
#: smallest normal float64 (σ(-708) ≈ 2.2e-308): its probabilities come from their logarithms
SIGMOID_FLOOR = -700.0


def _probabilities(scores, softmax):
    """``predict_proba`` of host scores of several classes, in probability space (one pass
    of ``exp``, where the logarithms take three): the softmax, shifted by each row's largest
    score, or the σ's normalized (from their logarithms in the rows :data:`SIGMOID_FLOOR`
    sets apart)."""
    dtype = scores.dtype                              # float32 for a float32 model and X
    P = np.array(scores, dtype=np.float64)
    low = np.zeros(P.shape[0], dtype=bool)
    if softmax:
        P -= P.max(axis=1, keepdims=True)
        np.exp(P, out=P)
    else:
        low = P.max(axis=1) < SIGMOID_FLOOR
        expit(P, out=P)
        P[low] = 1.0                                  # replaced below
    P /= P.sum(axis=1, keepdims=True)
    if low.any():
        P[low] = np.exp(_log_softmax(log_expit(np.asarray(scores[low], dtype=np.float64))))
    return P.astype(dtype, copy=False)
