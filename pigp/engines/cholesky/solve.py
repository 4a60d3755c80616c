"""Solves with a sparse inverse-Cholesky factor: triangular solves, products with
``Theta``, and preconditioned conjugate gradients.

``Theta^-1 ~ U U'`` with ``U`` upper triangular and sparse, so ``Theta w ~ U'^-1 U^-1 w``:
two sparse triangular solves. They run on ``U``'s own arrays, scaled in place to a unit
diagonal, by SuperLU's triangular substitution (``_superlu.gstrs``, what
``scipy.sparse.linalg.spsolve_triangular`` calls after copying its matrix); where that
function is missing, by SciPy's SuperLU of ``U`` in its natural order (no fill, but a
copy of ``U``: at 10^5 points of -Lap u + u^3 = f, 0.34 GB beside the factor's own).
A reduced matrix ``A = Theta[D, D]`` (the data among more measurements) is solved by
conjugate gradients on those products, preconditioned by the factor of ``A`` itself:
``A^-1 ~ U_D U_D'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

try:  # SuperLU's substitution over CSC arrays (SciPy >= 1.12), without a copy of U.
    from scipy.sparse.linalg._dsolve._superlu import gstrs as _gstrs
except ImportError:  # pragma: no cover - older SciPy: splu's copy
    _gstrs = None

__all__ = ["Factor", "pcg", "PCGResult"]


class Factor:
    """``U`` (``scipy.sparse`` upper triangular, in pattern positions) and its solves.

    Args:
        U: the factor, shape (n, n).
        order: ``pattern.order``: position k holds measurement ``order[k]``.
    """

    def __init__(self, U: sp.spmatrix, order: np.ndarray):
        self.U = sp.csc_matrix(U)
        self._size, self._nnz = self.U.shape[0], int(self.U.nnz)
        self.order = np.asarray(order)
        self._solver = None
        self._unit = None  # (U D^-1 with a zero diagonal, D, the identity): solves_only

    @property
    def _lu(self):
        """SciPy's SuperLU of ``U`` (made at the first solve: a preconditioner only
        multiplies)."""
        if self._solver is None:
            self._solver = spla.splu(
                self.U, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True}
            )
        return self._solver

    @property
    def size(self) -> int:
        return self._size

    def theta_times(self, w: np.ndarray) -> np.ndarray:
        """``Theta w`` for ``w`` indexed by measurement (shape (n,) or (n, k))."""
        ordered = w[self.order]
        if self._unit is not None:
            z = self._unit_solve("N", ordered)
            z = self._unit_solve("T", z / self._unit[1].reshape(-1, *([1] * (z.ndim - 1))) ** 2)
        else:
            z = self._lu.solve(self._lu.solve(ordered), trans="T")
        out = np.empty_like(z)
        out[self.order] = z
        return out

    def precision_times(self, w: np.ndarray) -> np.ndarray:
        """``Theta^-1 w ~ U U' w`` for ``w`` indexed by measurement."""
        ordered = w[self.order]
        z = self.U @ (self.U.T @ ordered)
        out = np.empty_like(z)
        out[self.order] = z
        return out

    def nnz(self) -> int:
        return self._nnz

    def _unit_solve(self, trans: str, b: np.ndarray) -> np.ndarray:
        """``V^-1 b`` (``trans`` "N") or ``V'^-1 b`` ("T") for the unit upper-triangular
        ``V = U D^-1`` (so ``U^-1 b = D^-1 V^-1 b`` and ``U'^-1 b = V'^-1 D^-1 b``)."""
        V, _, identity = self._unit
        b = np.array(b, dtype=np.float64, order="F")
        x, info = _gstrs(
            trans, self._size, *identity, self._size, V.nnz, V.data, V.indices, V.indptr, b
        )
        if info:
            raise np.linalg.LinAlgError("the sparse factor is singular")
        return x

    def solves_only(self) -> Factor:
        """Keep only what ``theta_times`` needs: ``U`` scaled in place to a unit
        diagonal (``_unit_solve``), or SciPy's copy of it where SuperLU's substitution
        is missing; ``precision_times`` is gone either way."""
        U = self.U
        last = U.indptr[1:] - 1
        if _gstrs is None or not np.array_equal(U.indices[last], np.arange(self._size)):
            self._lu  # noqa: B018 (made now, from U)
            self.U = None
            return self
        # Each column's diagonal entry is its last (rows sorted): read, scale, zero it.
        diagonal = U.data[last].copy()
        counts = np.diff(U.indptr)
        step = 1 << 16
        for start in range(0, self._size, step):
            stop = min(start + step, self._size)
            part = slice(U.indptr[start], U.indptr[stop])
            U.data[part] /= np.repeat(diagonal[start:stop], counts[start:stop])
        U.data[last] = 0.0
        U.indices = U.indices.astype(np.intc, copy=False)
        U.indptr = U.indptr.astype(np.intc, copy=False)
        n = self._size
        identity = (n, np.ones(n), np.arange(n, dtype=np.intc), np.arange(n + 1, dtype=np.intc))
        self._unit = (U, diagonal, identity)
        self.U = None
        return self


@dataclass
class PCGResult:
    x: np.ndarray
    iterations: int
    residuals: list = field(default_factory=list)
    converged: bool = True


def pcg(matvec, b: np.ndarray, precondition, rtol: float = 1e-10, maxiter: int = 1000) -> PCGResult:
    """Conjugate gradients for ``A x = b`` (A symmetric positive definite).

    Args:
        matvec: ``w -> A w``.
        b: array of shape (n,).
        precondition: ``r -> M^-1 r`` with ``M ~ A``.
        rtol: stop when ``|r| <= rtol |b|``.
        maxiter: at most this many iterations.

    Returns:
        A ``PCGResult`` (``converged`` False where ``maxiter`` was reached first).
    """
    x = np.zeros_like(b)
    r = b.copy()
    norm_b = float(np.linalg.norm(b)) or 1.0
    z = precondition(r)
    p = z.copy()
    rz = float(r @ z)
    residuals = [float(np.linalg.norm(r)) / norm_b]
    for iteration in range(1, maxiter + 1):
        Ap = matvec(p)
        step = rz / float(p @ Ap)
        x += step * p
        r -= step * Ap
        residuals.append(float(np.linalg.norm(r)) / norm_b)
        if residuals[-1] <= rtol:
            return PCGResult(x, iteration, residuals)
        z = precondition(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return PCGResult(x, maxiter, residuals, converged=False)
