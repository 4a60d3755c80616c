"""The posterior at fixed parameters: an immutable snapshot, and prediction from it.

Given the joint covariance ``K`` of the data (noise included) and the
standardised targets ``y``, the posterior of any ``M u`` at points ``X*`` has

    mean = K_*y alpha,           alpha = K^-1 y
    var  = k_** - colsum(V * V),  V = chol^-1 K_y*

with ``K_*y = [cov(M u(X*), L_i u(X_i))]_i`` and ``k_**`` the prior variance of
``M u`` at ``X*``. A ``Posterior`` holds ``chol`` and ``alpha`` with the
parameter values they were computed at; a model recomputes it as soon as any
parameter differs, so a prediction never mixes old weights with new blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ...linalg import jittered_cholesky

__all__ = ["Posterior", "CHUNK"]

CHUNK = 1024  # test points per compiled prediction call


@dataclass(frozen=True, eq=False)
class Posterior:
    """``chol`` and ``alpha`` of the data at one set of parameter values.

    Attributes:
        chol: lower Cholesky factor of ``K``, float64 array (N, N).
        alpha: ``K^-1 y`` (standardised targets), float64 array (N,).
        values: the unconstrained value of every parameter, in the model's order,
            at which ``K`` was computed.
        jitter: the relative jitter the factorisation needed on top of the model's
            (0 when none was).
        prior: ``diag(K)``, the data's prior variances (noise included).
    """

    chol: np.ndarray
    alpha: np.ndarray
    values: tuple
    jitter: float = 0.0
    prior: np.ndarray = None

    @classmethod
    def compute(
        cls, K: np.ndarray, y: np.ndarray, values: tuple, sizes=None, names=None
    ) -> Posterior:
        """Factorise ``K`` (with retries: ``pigp.linalg.jittered_cholesky``).

        Args:
            K: the joint covariance, array (N, N).
            y: the standardised targets, array (N,).
            values: the parameter values ``K`` was computed at (see
                ``is_current``).
            sizes: the data sets' sizes, for error messages.
            names: the data sets' names, for error messages.
        """
        K = np.asarray(K, dtype=np.float64)
        prior = np.diag(K).copy()
        chol, jitter = jittered_cholesky(K, sizes, names)
        alpha = scipy.linalg.cho_solve(
            (chol, True), np.asarray(y, dtype=np.float64), check_finite=False
        )
        for array in (chol, alpha, prior):
            array.setflags(write=False)
        return cls(chol, alpha, tuple(np.array(v, copy=True) for v in values), jitter, prior)

    def is_current(self, values: tuple) -> bool:
        """Whether ``values`` (same order as at ``compute``) are exactly this
        snapshot's."""
        return len(values) == len(self.values) and all(
            np.array_equal(a, b) for a, b in zip(values, self.values)
        )

    def predict(self, cross, X: np.ndarray, keep_V: bool = False, chunk: int = CHUNK) -> tuple:
        """Mean, variance and ``V = chol^-1 K_y*`` at points ``X``, in standardised units.

        Args:
            cross: ``cross(Xc) -> (K_*y, k_**)`` for a chunk of exactly ``chunk``
                points: the cross block (chunk, N) and the prior variances (chunk,).
            X: array of shape (n, d).
            keep_V: also return ``V`` (for a full covariance); else None.

        Returns:
            ``(mean, var, V, collapsed)``: arrays (n,), (n,) (not clipped) and
            (N, n) or None, and the number of points uncorrelated with every data
            value (correlation below 1e-3) whose variance is below 1e-12 (the
            standardised data's scale is 1): there it should be the prior's, so a
            kernel variance has collapsed.
        """
        means, variances, Vs, collapsed = [], [], [], 0
        for start in range(0, len(X), chunk):
            part = X[start : start + chunk]
            padded = np.concatenate([part, np.repeat(part[-1:], chunk - len(part), axis=0)])
            Ks, prior = cross(padded)
            Ks, prior = Ks[: len(part)], prior[: len(part)]
            V = scipy.linalg.solve_triangular(self.chol, Ks.T, lower=True, check_finite=False)
            means.append(Ks @ self.alpha)
            variances.append(prior - np.einsum("ij,ij->j", V, V))
            if keep_V:
                Vs.append(V)
            with np.errstate(divide="ignore", invalid="ignore"):
                correlation = np.max(
                    np.abs(Ks) / np.sqrt(np.outer(np.abs(prior), self.prior)), axis=1
                )
            collapsed += int(np.sum((correlation < 1e-3) & (variances[-1] < 1e-12)))
        V = np.concatenate(Vs, axis=1) if keep_V else None
        return np.concatenate(means), np.concatenate(variances), V, collapsed
