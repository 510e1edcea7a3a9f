"""
Sparsemax regression: choosing alpha by cross-validation
========================================================

:class:`sparsekit.SparsemaxClassifier` fits a linear model with the sparsemax loss
(Martins & Astudillo 2016; the objective of Madsen et al. 2016, eq. 11): its
``predict_proba`` rows are probability vectors with exact zeros. This example tunes the L2
strength ``alpha`` with :class:`~sklearn.model_selection.GridSearchCV` over a
:class:`~sklearn.pipeline.Pipeline` (standardization, then the classifier) on the 8x8
digits, then with :class:`sparsekit.SparsemaxClassifierCV`, which fits each fold's alphas
as one warm-started path, and plots the cross-validated accuracy and the share of exact
zeros in the predicted probabilities against ``alpha``.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparsekit import SparsemaxClassifier, SparsemaxClassifierCV

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

# %%
# Grid search over alpha
alphas = np.logspace(-4, 0, 5)
pipe = make_pipeline(StandardScaler(), SparsemaxClassifier(solver="newton-cg"))
search = GridSearchCV(pipe, {"sparsemaxclassifier__alpha": alphas}, cv=5).fit(X_train,
                                                                              y_train)
print(f"best alpha {search.best_params_['sparsemaxclassifier__alpha']:g}, "
      f"test accuracy {search.score(X_test, y_test):.3f}")

# %%
# The same alphas on warm-started paths: on each training fold, one fit per alpha from the
# largest down, each started at the previous solution. In a pipeline the scaler is fit once
# on all the training rows (the grid search above refits it on each fold).
cv_pipe = make_pipeline(StandardScaler(),
                        SparsemaxClassifierCV(alphas=alphas, solver="newton-cg", cv=5))
cv_pipe.fit(X_train, y_train)
print(f"SparsemaxClassifierCV: alpha {cv_pipe[-1].alpha_:g}, "
      f"test accuracy {cv_pipe.score(X_test, y_test):.3f}")

# %%
# Sparsity of the predicted distributions
zeros = []
for alpha in alphas:
    model = pipe.set_params(sparsemaxclassifier__alpha=alpha).fit(X_train, y_train)
    zeros.append(np.mean(model.predict_proba(X_test) == 0))

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogx(alphas, search.cv_results_["mean_test_score"], "o-", label="CV accuracy")
ax.semilogx(alphas, zeros, "s--", label="exact zeros in predict_proba")
ax.set_xlabel("alpha")
ax.legend()
ax.set_title("SparsemaxClassifier on digits")
fig.tight_layout()
plt.show()
