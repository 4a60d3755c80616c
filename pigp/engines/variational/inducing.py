"""Inducing-point approximations of a physics-informed GP, as plain functions.

The inducing variables are ``u`` at ``M`` points ``Z``, whitened:
``u(Z) = Lz v`` with ``Lz Lz' = Kzz`` and ``v ~ N(0, I)``; the variational
posterior is ``q(v) = N(m, S)``, ``S = Ls Ls'``. For a data set observing
``L_i u`` at ``X_i`` (any operator: ``Identity`` for u values, the PDE's for
forcing data, a derivative for Neumann data) let

    A_i = Lz^-1 cov(u(Z), L_i u(X_i))          (M, n_i)
    mean_i = A_i' m
    var_i  = diag(L_i L_i' k)(X_i) - colsum(A_i^2) + colsum((Ls' A_i)^2)

the marginals of ``q`` at the data. The evidence lower bound (Hensman et al.
2013, with every data set's own operator and noise) is

    ELBO = sum_i sum_j E_q[log N(y_ij | L_i u(x_ij), s_i)] - KL(q(v) || N(0, I))

and with the optimal ``q`` in closed form it collapses to Titsias's (2009)
bound ``log N(y | 0, Q + Lambda) - 0.5 tr(Lambda^-1 (K - Q))``, ``Q = A'A``,
``Lambda`` the noise variance of each value.
"""

from __future__ import annotations

import math

import numpy as np

from ..._tensorflow import tf
from ...kernels.covariance import block, block_diag

__all__ = [
    "inducing_points",
    "inducing_blocks",
    "projection",
    "marginals",
    "expected_log_likelihood",
    "kl_divergence",
    "collapsed_bound",
    "optimal_posterior",
    "posterior_from_precision",
]


def inducing_blocks(kernel, Z, Xs, identity: list, terms: list, jitter: float) -> tuple:
    """The prior blocks an inducing-point bound needs, and nothing else (the part
    worth compiling with XLA; the linear algebra runs faster outside it on a CPU).

    Args:
        Z: the inducing points, shape (M, d).
        Xs: one tensor of points per data set, shapes (n_i, d).
        identity: the terms of ``Identity`` for the input dimension.
        terms: one operator's resolved terms per entry of ``Xs``.
        jitter: relative jitter added to the diagonal of ``Kzz``.

    Returns:
        ``(Kzz, Kzx, kxx)``: ``Kzz + jitter * mean(diag Kzz) I`` of shape (M, M), and
        per data set ``cov(u(Z), L_i u(X_i))`` (M, n_i) and ``diag(L_i L_i' k)(X_i)``
        (n_i,).
    """
    Kzz = block(kernel, Z, Z, identity, identity)
    diag = tf.linalg.diag_part(Kzz)
    Kzz = tf.linalg.set_diag(Kzz, diag + jitter * tf.stop_gradient(tf.reduce_mean(diag)))
    Kzx = [block(kernel, Z, X, identity, t) for X, t in zip(Xs, terms)]
    kxx = [block_diag(kernel, X, t, t) for X, t in zip(Xs, terms)]
    return Kzz, Kzx, kxx


def projection(chol_z, Kzx) -> tf.Tensor:
    """``A = Lz^-1 Kzx``, shape (M, n)."""
    return tf.linalg.triangular_solve(chol_z, Kzx, lower=True)


def marginals(A, kxx, q_mu, q_sqrt) -> tuple:
    """The mean (n,) and variance (n,) of ``q`` at the points of ``A`` (see the module)."""
    mean = tf.linalg.matvec(A, q_mu, transpose_a=True)
    SA = tf.linalg.matmul(q_sqrt, A, transpose_a=True)
    var = kxx - tf.reduce_sum(tf.square(A), axis=0) + tf.reduce_sum(tf.square(SA), axis=0)
    return mean, var


def expected_log_likelihood(y, mean, var, noise) -> tf.Tensor:
    """``E[log N(y | f, noise)]`` under ``f ~ N(mean, var)``, elementwise:
    ``-0.5 (log(2 pi noise) + ((y - mean)^2 + var) / noise)``."""
    return -0.5 * (
        math.log(2.0 * math.pi) + tf.math.log(noise) + (tf.square(y - mean) + var) / noise
    )


def kl_divergence(q_mu, q_sqrt) -> tf.Tensor:
    """``KL(N(m, Ls Ls') || N(0, I))`` for a lower triangular ``Ls``:
    ``0.5 (tr S + m'm - M - log det S)``."""
    M = tf.cast(tf.shape(q_mu)[0], q_mu.dtype)
    log_det = 2.0 * tf.reduce_sum(tf.math.log(tf.abs(tf.linalg.diag_part(q_sqrt))))
    return 0.5 * (tf.reduce_sum(tf.square(q_sqrt)) + tf.reduce_sum(tf.square(q_mu)) - M - log_det)


def _stacked(Kzz, Kzx, kxx, Xs, sets, dtype) -> tuple:
    """``Lz``, ``A`` (M, N), ``kxx`` (N,) and the noise variance of each value (N,)."""
    chol_z = tf.linalg.cholesky(Kzz)
    noise = [tf.fill(tf.shape(X)[:1], s.noise.value(dtype)) for X, s in zip(Xs, sets)]
    return (
        chol_z,
        projection(chol_z, tf.concat(Kzx, axis=1)),
        tf.concat(kxx, axis=0),
        tf.concat(noise, axis=0),
    )


def collapsed_bound(blocks, Xs, sets, y, dtype) -> tf.Tensor:
    """Titsias's lower bound on ``log p(y)`` over all data sets at once.

    With ``As = A Lambda^-1/2``, ``B = I + As As'`` (``LB`` its Cholesky factor) and
    ``c = LB^-1 As Lambda^-1/2 y``:

        bound = -0.5 N log(2 pi) - 0.5 sum log Lambda - sum log diag LB
                - 0.5 y' Lambda^-1 y + 0.5 c'c - 0.5 sum (kxx - colsum A^2) / Lambda

    Args:
        blocks: ``inducing_blocks(...)`` of the data sets' points and operators.
        Xs: one tensor of points per data set.
        sets: the data sets (their ``noise``).
        y: the standardised targets, concatenated, shape (N,).
    """
    _, A, kxx, noise = _stacked(*blocks, Xs, sets, dtype)
    root = tf.sqrt(noise)
    As = A / root
    M = tf.shape(A)[0]
    chol_b = tf.linalg.cholesky(tf.eye(M, dtype=dtype) + tf.matmul(As, As, transpose_b=True))
    c = tf.linalg.triangular_solve(chol_b, tf.linalg.matvec(As, y / root)[:, None], lower=True)
    N = tf.cast(tf.shape(y)[0], dtype)
    return (
        -0.5 * N * math.log(2.0 * math.pi)
        - 0.5 * tf.reduce_sum(tf.math.log(noise))
        - tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol_b)))
        - 0.5 * tf.reduce_sum(tf.square(y) / noise)
        + 0.5 * tf.reduce_sum(tf.square(c))
        - 0.5 * tf.reduce_sum((kxx - tf.reduce_sum(tf.square(A), axis=0)) / noise)
    )


def optimal_posterior(blocks, Xs, sets, y, dtype) -> tuple:
    """``(m, Ls)`` of the ``q(v)`` that attains ``collapsed_bound``:
    ``S = B^-1``, ``m = B^-1 A Lambda^-1 y``."""
    _, A, _, noise = _stacked(*blocks, Xs, sets, dtype)
    precision = tf.eye(tf.shape(A)[0], dtype=dtype) + tf.matmul(A / noise, A, transpose_b=True)
    return posterior_from_precision(precision, tf.linalg.matvec(A, y / noise))


def posterior_from_precision(precision, theta) -> tuple:
    """``(m, Ls)`` with ``S = Ls Ls' = precision^-1`` and ``m = S theta``."""
    eye = tf.eye(tf.shape(precision)[0], dtype=precision.dtype)
    chol = tf.linalg.cholesky(0.5 * (precision + tf.transpose(precision)))
    S = tf.linalg.cholesky_solve(chol, eye)
    m = tf.linalg.cholesky_solve(chol, theta[:, None])[:, 0]
    return m, tf.linalg.cholesky(0.5 * (S + tf.transpose(S)))


def inducing_points(X: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    """``count`` points spread like ``X``: k-means centres (k-means++ start) of up to
    20,000 of its rows, each column scaled by its range while clustering."""
    import scipy.cluster.vq

    rng = np.random.default_rng(seed)
    if len(X) > 20_000:
        X = X[rng.choice(len(X), 20_000, replace=False)]
    unique = np.unique(X, axis=0)
    if len(unique) <= count:
        raise ValueError(
            f"num_inducing: expected fewer inducing points than distinct training "
            f"inputs ({len(unique)}), got {count}"
        )
    low, span = X.min(axis=0), np.ptp(X, axis=0)
    span = np.where(span > 0, span, 1.0)
    centres, _ = scipy.cluster.vq.kmeans2(
        (X - low) / span, count, minit="++", seed=np.random.default_rng(seed)
    )
    return low + centres * span
