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

import tensorflow as tf

from .covariance import block, block_diag

__all__ = [
    "inducing_cholesky",
    "projection",
    "marginals",
    "expected_log_likelihood",
    "kl_divergence",
    "collapsed_bound",
    "optimal_posterior",
]


def inducing_cholesky(kernel, Z: tf.Tensor, identity: list, jitter: float) -> tf.Tensor:
    """``Lz``: the lower Cholesky factor of ``Kzz + jitter * mean(diag Kzz) I``."""
    Kzz = block(kernel, Z, Z, identity, identity)
    diag = tf.linalg.diag_part(Kzz)
    extra = jitter * tf.stop_gradient(tf.reduce_mean(diag))
    return tf.linalg.cholesky(tf.linalg.set_diag(Kzz, diag + extra))


def projection(kernel, Z, chol_z, X, identity: list, terms: list) -> tuple:
    """``(A, kxx)``: ``Lz^-1 cov(u(Z), L u(X))`` of shape (M, n) and the prior
    variances ``diag(L L' k)(X)`` of shape (n,), for ``L`` given by ``terms``."""
    Kzx = block(kernel, Z, X, identity, terms)
    A = tf.linalg.triangular_solve(chol_z, Kzx, lower=True)
    return A, block_diag(kernel, X, terms, terms)


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


def _stacked(kernel, Z, chol_z, Xs, sets, identity, dtype) -> tuple:
    """``A`` (M, N), ``kxx`` (N,) and the noise variance of each value (N,), all data sets."""
    parts = [projection(kernel, Z, chol_z, X, identity, s.terms) for X, s in zip(Xs, sets)]
    noise = [tf.fill(tf.shape(X)[:1], s.noise.value(dtype)) for X, s in zip(Xs, sets)]
    return (
        tf.concat([A for A, _ in parts], axis=1),
        tf.concat([k for _, k in parts], axis=0),
        tf.concat(noise, axis=0),
    )


def collapsed_bound(kernel, Z, Xs, sets, y, identity, jitter: float, dtype) -> tf.Tensor:
    """Titsias's lower bound on ``log p(y)`` over all data sets at once.

    With ``As = A Lambda^-1/2``, ``B = I + As As'`` (``LB`` its Cholesky factor) and
    ``c = LB^-1 As Lambda^-1/2 y``:

        bound = -0.5 N log(2 pi) - 0.5 sum log Lambda - sum log diag LB
                - 0.5 y' Lambda^-1 y + 0.5 c'c - 0.5 sum (kxx - colsum A^2) / Lambda

    Args:
        Xs: one tensor of points per data set.
        sets: the data sets (their ``terms`` and ``noise``).
        y: the standardised targets, concatenated, shape (N,).
        identity: the terms of ``Identity`` for the input dimension.
        jitter: the relative jitter of ``Kzz``.
    """
    chol_z = inducing_cholesky(kernel, Z, identity, jitter)
    A, kxx, noise = _stacked(kernel, Z, chol_z, Xs, sets, identity, dtype)
    root = tf.sqrt(noise)
    As = A / root
    M = tf.shape(Z)[0]
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


def optimal_posterior(kernel, Z, Xs, sets, y, identity, jitter: float, dtype) -> tuple:
    """``(m, Ls)`` of the ``q(v)`` that attains ``collapsed_bound``:
    ``S = B^-1``, ``m = B^-1 A Lambda^-1 y``."""
    chol_z = inducing_cholesky(kernel, Z, identity, jitter)
    A, _, noise = _stacked(kernel, Z, chol_z, Xs, sets, identity, dtype)
    As = A / tf.sqrt(noise)
    M = tf.shape(Z)[0]
    eye = tf.eye(M, dtype=dtype)
    chol_b = tf.linalg.cholesky(eye + tf.matmul(As, As, transpose_b=True))
    m = tf.linalg.cholesky_solve(chol_b, tf.linalg.matvec(A, y / noise)[:, None])[:, 0]
    S = tf.linalg.cholesky_solve(chol_b, eye)
    return m, tf.linalg.cholesky(0.5 * (S + tf.transpose(S)))
