"""
ℓ1 logistic regression with OBA: choosing C by cross-validation, and the path
=============================================================================

:class:`sparsekit.L1LogisticOBA` minimizes ‖w‖₁ + C Σᵢ log(1 + exp(−yᵢ(wᵀxᵢ + b))), the
intercept b unpenalized (LIBLINEAR's ``-s 6 -B 1 -R``), with the orthant-based second-order
method of Keskar (2017, chapter 2). This example

1. picks C by 5-fold cross-validation with :class:`sparsekit.L1LogisticOBACV` on the
   breast-cancer data (standardized): each training fold's problems are solved along the
   whole grid as one warm-started path, and every solution is scored on the fold's held-out
   rows (the log loss), and
2. draws the regularization path on all the data with :func:`sparsekit.l1_logistic_path`,
   which solves the problems from the smallest C upwards, each warm-started at the previous
   solution.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from sparsekit import L1LogisticOBACV, l1_logistic_path

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)

# %%
# Cross-validated C
Cs = np.logspace(-3, 2, 20)
search = L1LogisticOBACV(Cs=Cs, cv=5).fit(X, y)
loss = -search.scores_[:, 0]                 # (folds, Cs): the held-out log loss
print(f"best C = {search.C_:.3g}, held-out log loss = {loss.mean(axis=0).min():.3f}, "
      f"{np.count_nonzero(search.coef_)} of {X.shape[1]} coefficients nonzero")

# %%
# The path over the same Cs (warm starts)
coefs, Cs, n_iter = l1_logistic_path(X, y, Cs, tol=1e-8)
print("OBA iterations per C:", n_iter.tolist())

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.semilogx(Cs, coefs[:, :-1])
ax1.axvline(search.C_, color="k", ls="--", lw=1, label="CV choice")
ax1.set_xlabel("C")
ax1.set_ylabel("coefficient")
ax1.set_title("ℓ1 logistic regularization path (OBA)")
ax1.legend()
ax2.semilogx(search.Cs_, loss.mean(axis=0), marker="o")
ax2.fill_between(search.Cs_, loss.min(axis=0), loss.max(axis=0), alpha=0.2,
                 label="range over the folds")
ax2.axvline(search.C_, color="k", ls="--", lw=1)
ax2.set_xlabel("C")
ax2.set_ylabel("5-fold held-out log loss")
ax2.legend()
fig.tight_layout()
plt.show()
