"""Solves with a sparse inverse-Cholesky factor: triangular solves, products with
``Theta``, and preconditioned conjugate gradients.

``Theta^-1 ~ U U'`` with ``U`` upper triangular and sparse, so ``Theta w ~ U'^-1 U^-1 w``:
two sparse triangular solves (SciPy's SuperLU of the triangular ``U`` in its natural
order, which adds no fill). A reduced matrix ``A = Theta[D, D]`` (the data among more
measurements) is solved by conjugate gradients on those products, preconditioned by the
factor of ``A`` itself: ``A^-1 ~ U_D U_D'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

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

    def solves_only(self) -> Factor:
        """Keep only what ``theta_times`` needs (SciPy's copy of ``U``): ``U`` itself
        is dropped, and ``precision_times`` with it."""
        self._lu  # noqa: B018 (made now, from U)
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
