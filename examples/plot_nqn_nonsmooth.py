"""
NQN: bound-constrained L-BFGS for nonsmooth functions, against SciPy's L-BFGS-B
===============================================================================

:func:`sparsekit.optimize.minimize_nqn` is the nonsmooth quasi-Newton method of Keskar's
thesis (chapter 3): L-BFGS with an inexact weak-Wolfe line search and a restart on a
sampled ε-subgradient when a step fails, with the interface of
:func:`scipy.optimize.minimize`. On a nonsmooth function L-BFGS-B's line search often
stalls at a kink far from the minimum; NQN keeps making progress.

The problem is MAXHILB, ``max_i |(H x)_i|`` with H the Hilbert matrix (Haarala et al.
2004), at n = 50 with the thesis' bounds (Table 3.2, :mod:`sparsekit.optimize._test_problems`),
from ten random starts, with the thesis' protocol: memory m = 20, a budget of 100 n
evaluations, and no stopping test on the gradient or on f's relative decrease
(``ftol = gtol = 0``), and NQN's stall test on (``stall_tol = 1e-8``: it ends a run whose
last ten iterations gained at most 1e-8 of the decrease since the start; off by default).
doc/benchmarks.md runs all 24 problems.
"""
import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import minimize

from sparsekit.optimize import minimize_nqn
from sparsekit.optimize._test_problems import BoundedProblem

problem = BoundedProblem("MAXHILB", 50)
starts = problem.starting_points(10, random_state=0)

# %%
# Both solvers with the same memory and evaluation budget
options = {"maxcor": 20, "maxfun": 100 * problem.n, "ftol": 0.0, "gtol": 0.0}
nqn_options = {**options, "stall_tol": 1e-8}
results = {"NQN": [], "L-BFGS-B": []}
for x0 in starts:
    for name in results:
        values = []

        def fun(x):
            f, g = problem.fun(x)
            values.append(f)
            return f, g
        if name == "NQN":
            res = minimize_nqn(fun, x0, jac=True, bounds=problem.bounds, options=nqn_options)
        else:
            res = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=problem.bounds,
                           options=options)
        results[name].append((res.fun, np.minimum.accumulate(values)))

f_best = min(f for runs in results.values() for f, _ in runs)
for name, runs in results.items():
    finals = np.array([f for f, _ in runs])
    print(f"{name:9s} final f - f_best: median {np.median(finals - f_best):.2e}, "
          f"worst {np.max(finals - f_best):.2e}")

# %%
# Best value so far against function evaluations
fig, ax = plt.subplots(figsize=(6, 3.5))
for (name, runs), color in zip(results.items(), ["C0", "C1"]):
    for i, (_, best) in enumerate(runs):
        ax.semilogy(best - f_best + 1e-16, color=color, alpha=0.6,
                    label=name if i == 0 else None)
ax.set_xlabel("function evaluations")
ax.set_ylabel("f - f_best")
ax.set_title(f"{problem.name}, n = {problem.n}, 10 starts")
ax.legend()
fig.tight_layout()
plt.show()
