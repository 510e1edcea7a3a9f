"""
Label sets with sparsemax: where to cut the predicted distribution
==================================================================

Given a label-indicator matrix, :class:`sparsekit.SparsemaxClassifier` on the simplex fits
one sparse distribution over the labels per row, its target spread uniformly over the
row's labels (Martins & Astudillo 2016). Its support, the labels of nonzero probability,
is a label set, but unless ``alpha`` is small it holds many more labels than the rows do.
``predict`` therefore cuts the distribution at ``threshold_``, the threshold with the best
micro-F1 on the training rows, chosen by ``fit``; ``threshold=0`` asks for the support.

This example draws label sets with :func:`~sklearn.datasets.make_multilabel_classification`,
compares the two rules with the box polytope (a marginal per label, cut the same way at
its own ``threshold_``) and one-vs-rest logistic regression (probabilities above 1/2), and
plots the micro-F1 of every cut.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_multilabel_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier

from sparsekit import SparsemaxClassifier

X, Y = make_multilabel_classification(n_samples=3000, n_features=40, n_classes=20,
                                      n_labels=3, allow_unlabeled=False, random_state=0)
X_train, X_test, Y_train, Y_test = train_test_split(X, Y, test_size=0.3, random_state=0)

# %%
# Four rules for the label sets
simplex = SparsemaxClassifier().fit(X_train, Y_train)
box = SparsemaxClassifier(polytope="box").fit(X_train, Y_train)
models = {
    f"simplex, threshold_ = {simplex.threshold_:.3f}": simplex,
    "simplex, support (threshold=0)": SparsemaxClassifier(threshold=0.0).fit(X_train, Y_train),
    f"box polytope, threshold_ = {box.threshold_:.3f}": box,
    "one-vs-rest logistic, p > 1/2": OneVsRestClassifier(LogisticRegression(max_iter=1000))
    .fit(X_train, Y_train),
}
print(f"true labels per test row: {Y_test.sum(axis=1).mean():.2f}")
for name, model in models.items():
    predicted = model.predict(X_test)
    print(f"{name:32s} micro-F1 {f1_score(Y_test, predicted, average='micro'):.3f}, "
          f"{predicted.sum(axis=1).mean():.2f} labels per row")

# %%
# The micro-F1 of every cut of the simplex fit's distributions
thresholds = np.linspace(0, 0.4, 81)
fig, ax = plt.subplots(figsize=(6, 3.5))
for X_rows, Y_rows, label in ((X_train, Y_train, "training rows"),
                              (X_test, Y_test, "test rows")):
    P = simplex.predict_proba(X_rows)
    ax.plot(thresholds, [f1_score(Y_rows, P > t, average="micro") for t in thresholds],
            label=label)
ax.axvline(simplex.threshold_, color="k", linestyle="--", label="threshold_")
ax.set_xlabel("threshold on predict_proba")
ax.set_ylabel("micro-F1")
ax.legend()
ax.set_title("SparsemaxClassifier on the simplex: cutting the label distribution")
fig.tight_layout()
plt.show()
