"""
Softmax regression with thousands of classes: Implicit SGD, U-max and One-vs-Each
=================================================================================

:class:`sparsekit.ExtremeSoftmaxSGD` trains multinomial logistic regression with steps
whose cost does not grow with the number of classes K: each example touches its own
class and ``n_sampled`` sampled classes, O((n_sampled + 1) nnz(x)) work (Fagan & Iyengar
2018; Titsias 2016). This example

1. fits Implicit SGD, U-max and the One-vs-Each bound on synthetic bag-of-features data
   with about 1800 classes (:func:`sparsekit.datasets.make_extreme_softmax_teacher` with
   K = 2000 Zipf-sized classes, of which about 1800 occur in 24000 rows; its
   Bayes posterior is exactly a linear softmax) over a range of learning rates, and plots
   the exact training NLL after ten epochs (``loss_curve_``, computed in log space on a
   subsample): the implicit (proximal) step stays stable at any rate, while the explicit
   U-max and One-vs-Each steps need a small one;
2. scores top-5 predictions with :func:`sparsekit.linear_model.precision_at_k`,
3. draws One-vs-Each's sampled classes once per batch instead of once per example
   (``shared_classes=True``: still unbiased, far fewer weight rows read, but a feature
   every example has, the intercept, then needs a smaller rate), and
4. trains the same model out of core with ``partial_fit`` on chunks.
"""
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sparsekit import ExtremeSoftmaxSGD
from sparsekit.datasets import make_extreme_softmax_teacher
from sparsekit.linear_model import precision_at_k

X, y = make_extreme_softmax_teacher(24_000, 5_000, 2_000, 20, random_state=0)
X_train, y_train, X_test, y_test = X[:20_000], y[:20_000], X[20_000:], y[20_000:]
classes = np.unique(y)
print(f"{X_train.shape[0]} training rows, {X.shape[1]} features, {classes.size} classes")

# %%
# Ten epochs per method and learning rate. The explicit steps diverge at the large rates,
# as the plot shows; each such fit warns, and those warnings are silenced here
rates = [0.01, 0.1, 1.0, 10.0, 100.0]
best_rate = {}
fig, ax = plt.subplots(figsize=(6, 3.5))
for method in ["implicit", "umax", "ove"]:
    final = []
    for eta in rates:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = ExtremeSoftmaxSGD(method, learning_rate=eta, n_epochs=10, eval_every=10,
                                      eval_size=2_000, random_state=0).fit(X_train, y_train)
        final.append(model.loss_curve_[-1])
        if eta == rates[int(np.argmin(final))]:
            best = model
    best_rate[method] = rates[int(np.argmin(final))]
    p5 = precision_at_k(y_test, best.predict_topk(X_test, 5))
    print(f"{method:9s} best rate {rates[int(np.argmin(final))]:g}: training NLL "
          f"{min(final):.3f}, {np.mean(best.epoch_times_):.3f} s per epoch, test P@5 {p5:.3f}")
    ax.loglog(rates, final, "o-", label=method)
ax.axhline(np.log(classes.size), color="gray", linestyle=":", label="log K (W = 0)")
ax.set_xlabel("learning rate (per example)")
ax.set_ylabel("training NLL after 10 epochs")
ax.set_title(f"{classes.size} classes: exact NLL on 2000 training rows")
ax.legend()
fig.tight_layout()

# %%
# Batches of 16 whose examples share their sampled class (``shared_classes=True``): each
# example's class is still uniform among its wrong ones, but a batch reads one sampled
# weight row instead of 16, which matters once the weights (here 1800 x 5000 float64,
# 72 MB) outgrow the cache. A batch step averages its examples' gradients, so the rate is
# 16 times the one-example rate. The shared row takes the batch's 16 updates at once: the
# sparse features of different rows rarely meet, but a feature every example has, the
# intercept, moves 16 times as far there, and that rate is too large for it. Without an
# intercept, this rate overshoots in the first epochs: those fits warn that their training
# NLL ended above where it started, and the weights they return are scaled back
# (``shrink_``).
for intercept in (False, True):
    for shared in (False, True):
        model = ExtremeSoftmaxSGD("ove", learning_rate=16 * best_rate["ove"], batch_size=16,
                                  shared_classes=shared, fit_intercept=intercept,
                                  n_epochs=10, eval_every=10, eval_size=2_000,
                                  random_state=0).fit(X_train, y_train)
        print(f"ove, b=16, {'with' if intercept else 'no  '} intercept, classes drawn per "
              f"{'batch  ' if shared else 'example'}: training NLL "
              f"{model.loss_curve_[-1]:.3f}, {np.median(model.epoch_times_):.3f} s per epoch")

# %%
# Streaming: the same model from chunks of 2000 rows (every class declared up front)
stream = ExtremeSoftmaxSGD("implicit", learning_rate=10.0, random_state=0)
for epoch in range(3):
    for start in range(0, X_train.shape[0], 2_000):
        rows = slice(start, start + 2_000)
        stream.partial_fit(X_train[rows], y_train[rows], classes=classes)
print(f"partial_fit, 3 passes: test accuracy {stream.score(X_test, y_test):.3f}, "
      f"P@5 {stream.precision_at_k(X_test, y_test, k=5):.3f}")
plt.show()
