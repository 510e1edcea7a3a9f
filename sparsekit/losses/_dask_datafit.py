"""A datafit over the row partitions of dask arrays: each partition's datafit lives on the
worker that holds the partition, and only parameter-sized vectors travel.

f(x) = Σ_b (n_b / n) f_b(x) for the partitions' datafits f_b (each the weighted mean of its
rows' losses), so the value, the gradient, the Hessian products, their diagonals, the
Lipschitz bound and the dual terms are the n_b/n-weighted sums of the partitions'; the
intercepts at w = 0 come from the summed label totals. A Hessian operator is one operator
per partition, kept on its worker: a product sends v and gathers one vector per partition.
The partitions' Hessians are kept matrix-free (a formed one would have to travel).

Dask is imported only here, by :class:`~sparsekit.L1LogisticOBA` when it is given a dask
array.
"""
import numpy as np


def _call(obj, name, *args):
    return getattr(obj, name)(*args)


def _rows(datafit):
    return datafit.n_samples


class DaskDatafit:
    """The datafit ``make(X_b, y_b, s_b)`` of every row partition, summed.

    Parameters
    ----------
    make : callable
        ``make(X_block, y_block, sample_weight_block) -> datafit`` (run on the workers);
        ``make.__sparsekit_unpenalized__`` is not used: ``penalty_weights`` and the sizes
        come from the first partition's datafit.
    X_blocks, y_blocks, weight_blocks : list of distributed.Future
        The row partitions, aligned.
    client : distributed.Client
    """

    def __init__(self, make, X_blocks, y_blocks, weight_blocks, client):
        self._client = client
        self._parts = [client.submit(make, X, y, s, pure=False)
                       for X, y, s in zip(X_blocks, y_blocks, weight_blocks)]
        rows = np.array(client.gather([client.submit(_rows, d) for d in self._parts]),
                        dtype=np.float64)
        self.n_samples = int(rows.sum())
        if not self.n_samples:
            raise ValueError("the dask arrays hold no rows")
        self._share = rows / self.n_samples
        head = self._parts[int(np.argmax(rows > 0))]
        self.penalty_weights, self.n_params, self.n_features, self.fit_intercept = \
            client.gather(client.submit(
                lambda d: (d.penalty_weights, d.n_params, d.n_features, d.fit_intercept),
                head))
        self._bound = None

    # -- reductions
    def _map(self, name, *args, parts=None):
        """``getattr(part, name)(*args)`` on every partition's datafit (or object), as
        futures; array arguments are scattered once and shared."""
        args = [self._client.scatter(a, broadcast=True, hash=False)
                if isinstance(a, np.ndarray) else a
                for a in args]
        return [self._client.submit(_call, p, name, *args, pure=False)
                for p in (self._parts if parts is None else parts)]

    def _sum(self, futures, share=None):
        share = self._share if share is None else share
        values = self._client.gather(futures)
        total = 0.0
        for weight, value in zip(share, values):
            total = total + weight * np.asarray(value, dtype=np.float64)
        return total

    # -- the datafit protocol
    def value(self, x):
        return float(self._sum(self._map("value", np.asarray(x, dtype=np.float64))))

    def value_grad(self, x):
        x = np.ascontiguousarray(x, dtype=np.float64)
        values = self._client.gather(self._map("value_grad", x))
        f = float(sum(w * v for w, (v, _) in zip(self._share, values)))
        g = sum(w * np.asarray(grad) for w, (_, grad) in zip(self._share, values))
        return f, g

    def hessp(self, x, free):
        return _DaskHessian(self, self._map("hessp", np.ascontiguousarray(x, dtype=np.float64),
                                            np.asarray(free, dtype=np.int64)),
                            int(np.size(free)))

    def lipschitz(self):
        if self._bound is None:
            self._bound = float(self._sum(self._map("lipschitz")))
        return self._bound

    def label_totals(self):
        return self._sum(self._map("label_totals"), share=np.ones(len(self._parts)))

    def null_intercept(self):
        make_type = self._client.gather(self._client.submit(type, self._parts[0]))
        return make_type.intercept_for(self.label_totals())

    def dual_terms(self, x, alpha):
        return float(self._sum(self._map("dual_terms", np.asarray(x, dtype=np.float64),
                                         float(alpha))))


class _DaskHessian:
    """One Hessian operator per partition, on its worker: products, diagonals and
    restrictions are their n_b/n-weighted sums."""

    def __init__(self, datafit, parts, size):
        self._f = datafit
        self._parts = parts
        self.shape = (size, size)
        self._diag = None

    def __call__(self, v):
        return self._f._sum(self._f._map("__call__", np.asarray(v, dtype=np.float64),
                                         parts=self._parts))

    def diagonal(self):
        if self._diag is None:
            self._diag = self._f._sum(self._f._map("diagonal", parts=self._parts))
        return self._diag

    def restrict(self, keep):
        keep = np.asarray(keep, dtype=bool)
        return _DaskHessian(self._f, self._f._map("restrict", keep, parts=self._parts),
                            int(keep.sum()))
