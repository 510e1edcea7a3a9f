"""The formed subspace Hessian of the multinomial datafit, carried from one iterate to the next.

Row i adds sᵢ x̃ᵢx̃ᵢᵀ ⊗ (diag pᵢ − pᵢpᵢᵀ) to ∇²f, and forming it costs a pass over every row
of the free columns with K·|F| entries each (the whole fit's time on a tall dense X). In
late iterations the free set F loses a few entries or none and most rows' probabilities
barely move, so the previous Gram is updated instead of formed again (ours, not in the
thesis, as the binary one of :mod:`~sparsekit.losses._panel_gram`):

- the entries that left F are dropped;
- the rows whose probabilities moved by more than ``rtol`` (relative, in any class) are
  refreshed: their term at the old probabilities subtracted, at the new ones added;
- the entries that joined F get their rows of the Gram from one pass over X, at the
  carried probabilities (unless they are many: then it is formed again).

The result is exactly the Hessian at probabilities p̃ᵢ with |p̃ᵢₖ − pᵢₖ| ≤ rtol·pᵢₖ. As
vᵀ(diag p − ppᵀ)v = min_c Σₖ pₖ(vₖ − c)², each row's term is then within a factor 1 ± rtol
of the exact one, and so is the Gram: (1 − rtol) H_F ⪯ H̃_F ⪯ (1 + rtol) H_F, a Newton
system solved as well as to a relative residual of ~rtol.
"""
import numpy as np

from sparsekit._cython import _gram_kernels


class CarriedGram:
    """∇²f[F, F] of a :class:`~sparsekit.losses._multinomial_datafit.Multinomial` by its
    dense route, with every row's probabilities within ``rtol`` of the current ones.

    Parameters
    ----------
    rtol : float
        Relative tolerance on the probabilities (0: every row that moved is refreshed).
    """

    #: a new Gram is formed when more than this share of the rows moved (a refresh
    #: subtracts and adds: twice a row's share of a new Gram)
    refresh_share = 0.4
    #: ... or when more than this share of the free entries joined (their rows cost about
    #: 2 |joined| / |F| of a new Gram)
    join_share = 0.125

    def __init__(self, rtol):
        self._rtol = float(rtol)
        self._free = self._G = self._P = None

    def __call__(self, H):
        """The Gram on ``H``'s free entries at its datafit's current point (kept for the
        next call: read it only). The datafit is ``H``'s, not kept here: it holds this
        object, and a reference back would keep both, and the datafit's arrays, alive
        until Python's cyclic garbage collector runs."""
        f, free = H._f, H._free
        kept = None if self._G is None else np.isin(free, self._free, assume_unique=True)
        moved = None if kept is None else self._moved(f._P)
        if (moved is None or moved.size > self.refresh_share * f.n_samples
                or np.count_nonzero(~kept) > self.join_share * free.size):
            G = f._gram_dense(H)
            self._P = f._P.copy()
        else:
            old = np.searchsorted(self._free, free[kept])
            Gk = _gram_kernels.principal_submatrix(self._G, old)
            if moved.size:
                Gk += f._gram_dense(f._matrix_free(free[kept]), rows=moved,
                                    terms=[(f._P[moved], 1.0), (self._P[moved], -1.0)])
                self._P[moved] = f._P[moved]
            if kept.all():
                G = Gk
            else:
                G = np.empty((free.size, free.size))
                G[np.ix_(kept, kept)] = Gk
                joined = np.flatnonzero(~kept)
                rows = f._gram_rows(H, joined, self._P)
                both = rows[:, joined]                   # computed twice: made symmetric
                rows[:, joined] = (both + both.T) / 2
                G[joined] = rows
                G[:, joined] = rows.T
        self._free, self._G = free.copy(), G
        return G

    def _moved(self, P):
        """The rows with a probability more than ``rtol`` away from the carried one."""
        return _gram_kernels.mn_moved_rows(P, self._P, self._rtol)
