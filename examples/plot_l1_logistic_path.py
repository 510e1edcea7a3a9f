"""
ℓ1 logistic regression with OBA: choosing C by cross-validation, and the path
=============================================================================

:class:`sparsekit.L1LogisticOBA` minimizes ‖w‖₁ + C Σᵢ log(1 + exp(−yᵢ(wᵀxᵢ + b))), the
intercept b unpenalized (LIBLINEAR's ``-s 6 -B 1 -R``), with the orthant-based second-order
method of Keskar (2017, chapter 2). This example

1. picks C by 5-fold :class:`~sklearn.model_selection.GridSearchCV` on the breast-cancer
   data (standardized), and
2. draws the regularization path with :func:`sparsekit.l1_logistic_path`, which solves the
   problems from the smallest C upwards, each warm-started at the previous solution.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparsekit import L1LogisticOBA, l1_logistic_path

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)

# %%
# Cross-validated C
Cs = np.logspace(-3, 2, 20)
search = GridSearchCV(make_pipeline(StandardScaler(), L1LogisticOBA(tol=1e-6)),
                      {"l1logisticoba__C": Cs}, cv=5).fit(X, y)
best_C = search.best_params_["l1logisticoba__C"]
best = search.best_estimator_[-1]
print(f"best C = {best_C:.3g}, CV accuracy = {search.best_score_:.3f}, "
      f"{np.count_nonzero(best.coef_)} of {X.shape[1]} coefficients nonzero")

# %%
# The path over the same Cs (warm starts)
coefs, Cs, n_iter = l1_logistic_path(X, y, Cs, tol=1e-8)
print("OBA iterations per C:", n_iter.tolist())

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.semilogx(Cs, coefs[:, :-1])
ax1.axvline(best_C, color="k", ls="--", lw=1, label="CV choice")
ax1.set_xlabel("C")
ax1.set_ylabel("coefficient")
ax1.set_title("ℓ1 logistic regularization path (OBA)")
ax1.legend()
ax2.semilogx(Cs, search.cv_results_["mean_test_score"], marker="o")
ax2.set_xlabel("C")
ax2.set_ylabel("5-fold CV accuracy")
fig.tight_layout()
plt.show()
