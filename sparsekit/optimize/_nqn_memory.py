"""Compact-representation L-BFGS memory restricted to the free variables (NQN; Keskar 2017,
section 3.2).

The quasi-Newton matrix is ``B = θI − W M Wᵀ`` with ``W = [Y, θS]`` and
``M⁻¹ = [[−D, Lᵀ], [L, θSᵀS]]`` (Byrd, Nocedal & Schnabel 1994), ``D = diag(sᵢᵀyᵢ)``,
``L`` the strictly lower triangle of ``SᵀY`` in time order. The subspace step (3.2) with
the variables in 𝒜 fixed is, by the Sherman–Morrison–Woodbury formula,

    p_F = −g_F/θ − W_F (M⁻¹ − N/θ)⁻¹ W_Fᵀ g_F / θ²,   N = W_Fᵀ W_F,

(the form of the thesis' reference code). The Gram blocks ``S_FᵀS_F``,
``S_FᵀY_F`` and ``Y_FᵀY_F`` are kept current as variables enter or leave the free set
(cost O(m² · changes), as in L-BFGS-B's ``formk``) and are rebuilt from scratch with
BLAS when many variables change or periodically, to stop round-off drift.
"""
import numpy as np

from .._cython import _nqn_kernels as _k

_REBUILD_EVERY = 50


class FreeSetLBFGS:
    """Limited-memory pairs with Gram matrices on the full and on the free set.

    Parameters
    ----------
    n : int
        Number of variables.
    m : int
        Memory (number of stored curvature pairs).
    """

    def __init__(self, n, m):
        self.n, self.m = n, m
        self.S = np.zeros((n, m))
        self.Y = np.zeros((n, m))
        self.SS = np.zeros((m, m))
        self.SY = np.zeros((m, m))  # SY[j, k] = s_jᵀ y_k
        self.SSf = np.zeros((m, m))
        self.SYf = np.zeros((m, m))
        self.YYf = np.zeros((m, m))
        self.mask = np.zeros(n, dtype=np.uint8)  # active set the free Grams refer to
        self.order = []  # slots, oldest first
        self._syncs = 0
        self._sg = np.empty(m)
        self._yg = np.empty(m)
        self._zs = np.zeros(m)
        self._zy = np.zeros(m)
        self._full = np.empty((4, m + 1))
        self._A = np.empty((2 * m, 2 * m), order="F")
        self._rhs = np.empty(2 * m)
        self._ipiv = np.empty(2 * m, dtype=np.intc)
        self._free = np.empty((4, m + 1))

    def __len__(self):
        return len(self.order)

    def reset(self):
        """Forget every pair (used after a failed step, see ``_nqn.minimize_nqn``)."""
        self.order = []
        self.S[:] = 0.0
        self.Y[:] = 0.0
        for a in (self.SS, self.SY, self.SSf, self.SYf, self.YYf):
            a[:] = 0.0

    def last_curvature(self):
        """``yᵀy / sᵀy`` of the newest pair: the smooth-case choice of θ."""
        j = self.order[-1]
        return float(self._yy_last / self.SY[j, j])

    def _rebuild(self):
        free = self.mask == 0
        Sf, Yf = self.S[free], self.Y[free]
        np.matmul(Sf.T, Sf, out=self.SSf)
        np.matmul(Sf.T, Yf, out=self.SYf)
        np.matmul(Yf.T, Yf, out=self.YYf)
        self._syncs = 0

    def sync(self, active):
        """Make the free-set Grams refer to the active set ``active`` (uint8 mask)."""
        if not self.order:
            self.mask[:] = active
            return
        changed = np.flatnonzero(self.mask != active)
        if changed.size == 0:
            return
        n_free = self.n - int(np.count_nonzero(active))
        self.mask[:] = active
        self._syncs += 1
        if 4 * changed.size >= n_free or self._syncs >= _REBUILD_EVERY:
            self._rebuild()
            return
        entering = changed[active[changed] == 0].astype(np.intc)
        leaving = changed[active[changed] != 0].astype(np.intc)
        _k.gram_update(self.S, self.Y, entering, 1.0, self.SSf, self.SYf, self.YYf)
        _k.gram_update(self.S, self.Y, leaving, -1.0, self.SSf, self.SYf, self.YYf)

    def fix(self, added):
        """Move the indices ``added`` (int32) from the free set to 𝒜 (Algorithm 3)."""
        self.mask[added] = 1
        if self.order:
            _k.gram_update(self.S, self.Y, added, -1.0, self.SSf, self.SYf, self.YYf)

    def step(self, g, theta, out):
        """Write the subspace step (3.2) for the current mask into ``out``.

        Raises ``numpy.linalg.LinAlgError`` when the 2m x 2m system is singular.
        """
        o = self.order
        if not o:
            np.divide(g, -theta, out=out)
            out[self.mask != 0] = 0.0
            return out
        _k.free_products(self.S, self.Y, g, self.mask, self._sg, self._yg)
        info = _k.compact_coefficients(
            self.SS, self.SY, self.SSf, self.SYf, self.YYf, np.asarray(o, dtype=np.intc),
            theta, self._sg, self._yg, self._zs, self._zy, self._A, self._rhs, self._ipiv)
        if info != 0:
            raise np.linalg.LinAlgError("singular or non-finite compact L-BFGS system")
        _k.free_step(self.S, self.Y, g, self.mask, self._zs, self._zy, theta, out)
        return out

    def push(self, s, y):
        """Store the pair ``(s, y)``, dropping the oldest one when ``m`` are stored."""
        o = self.order
        slot = o.pop(0) if len(o) == self.m else len(o)
        _k.pair_products(self.S, self.Y, s, y, self.mask, self._full, self._free)
        self.S[:, slot] = s
        self.Y[:, slot] = y
        m = self.m
        for grams, prods in (((self.SS, self.SY, None), self._full),
                             ((self.SSf, self.SYf, self.YYf), self._free)):
            ss, sy, yy = grams
            ss[slot, :] = prods[0, :m]
            ss[:, slot] = prods[0, :m]
            sy[:, slot] = prods[1, :m]  # s_jᵀ y
            sy[slot, :] = prods[2, :m]  # sᵀ y_j
            ss[slot, slot] = prods[0, m]
            sy[slot, slot] = prods[1, m]
            if yy is not None:
                yy[slot, :] = prods[3, :m]
                yy[:, slot] = prods[3, :m]
                yy[slot, slot] = prods[2, m]
        self._yy_last = float(self._full[2, m])
        o.append(slot)
