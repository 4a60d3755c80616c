"""The Vecchia log-likelihood of data through the sparse inverse-Cholesky factor, and its
gradient with respect to the kernel's hyper-parameters, the noise and the operators'
coefficients.

With ``Theta^-1 ~ U U'`` over a ``Pattern``, the Gaussian log density of ``y`` is
approximately ``sum_i (log U_ii - (U[:, i]' y)^2 / 2) - (n / 2) log 2 pi``: a sum over
columns (Schafer, Katzfuss & Owhadi, SIAM J. Sci. Comput. 43, 2021). For a supernode
with rows ``s`` and ``Theta[s, s] = L L'``, its column at the ``k``-th of its rows has
``U_ii = 1 / L_kk`` and ``U[:, i]' y = (L^-1 y[s])_k``, so each supernode adds
``sum_k (-log L_kk - z_k^2 / 2)`` with ``z = L^-1 y[s]``: one small Cholesky
factorisation and one triangular solve, differentiable by TensorFlow. The gap to the
exact log marginal likelihood is the KL divergence of the approximation; it shrinks as
``rho`` grows.
"""

from __future__ import annotations

import math

import numpy as np

from ..._tensorflow import tf
from .factor import BATCH_ENTRIES, CHUNK, Terms, _buckets, _Layout, entries_program
from .ordering import Pattern

__all__ = ["vecchia_log_likelihood"]


@tf.function(
    input_signature=[tf.TensorSpec([None, None, None], tf.float64)] * 2
    + [tf.TensorSpec([None, None], tf.float64)] * 2
    + [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.float64)]
)
def _columns(theta, extra, y, valid, picks, picked):
    """``sum over columns of (-log L_kk - z_k^2 / 2)`` for a batch of blocks ``theta``
    (B, m, m) with ``extra`` added to their diagonals (B, m, 1): ``picks`` (B, w) are
    each supernode's columns' places ``k`` among its rows, ``picked`` (B, w) 1 where a
    place is a column (0: padding); ``valid`` (B, m) marks real rows."""
    matrix = tf.linalg.set_diag(theta, tf.linalg.diag_part(theta) + extra[..., 0])
    L = tf.linalg.cholesky(matrix)
    z = tf.linalg.triangular_solve(L, (y * valid)[..., None], lower=True)[..., 0]
    diagonal = tf.gather(tf.linalg.diag_part(L), picks, batch_dims=1)
    values = tf.gather(z, picks, batch_dims=1)
    return tf.reduce_sum(picked * (-tf.math.log(diagonal) - 0.5 * values**2))


def vecchia_log_likelihood(
    kernel,
    terms: Terms,
    points: np.ndarray,
    weights,
    pattern: Pattern,
    y: np.ndarray,
    noise=None,
    nugget: float = 1e-10,
    program=None,
) -> tf.Tensor:
    """The Vecchia approximation of ``log N(y; 0, Theta + diag(noise))``.

    Call it under a ``tf.GradientTape`` for the gradient: the kernel's variables, the
    ``weights`` (a tensor made from parameters, e.g. ``Terms.weights``) and the
    ``noise`` (a tensor) are watched like any other TensorFlow computation.

    Args:
        kernel: a ``pigp.kernels.Kernel``.
        terms: the ``Terms`` the measurements combine.
        points: array (n, d): each measurement's point.
        weights: (n, A): each measurement's weight on each term (array or tensor).
        pattern: the ``Pattern`` of the measurements (``ordering.pattern``).
        y: array (n,): the data, one per measurement.
        noise: (n,) noise variances (array or tensor), or None (none).
        nugget: added to each diagonal entry of a block, relative to it (held constant
            in gradients).
        program: ``entries_program(kernel, terms)`` made before.

    Returns:
        A scalar tensor.
    """
    points = np.asarray(points, np.float64)
    n = len(points)
    order = pattern.order
    program = program or entries_program(kernel, terms)
    W = tf.gather(tf.convert_to_tensor(weights, tf.float64), order)
    W = tf.concat([W, tf.zeros([1, W.shape[1]], tf.float64)], 0)  # the padding row
    X = np.concatenate([points[order], points[order[:1]]])
    Y = np.concatenate([np.asarray(y, np.float64)[order], [0.0]])
    if noise is None:
        noise = tf.zeros([n], tf.float64)
    S = tf.gather(tf.convert_to_tensor(noise, tf.float64), order)
    S = tf.concat([S, tf.ones([1], tf.float64)], 0)  # padding rows: 1 on the diagonal
    total = tf.constant(-0.5 * n * math.log(2 * math.pi), tf.float64)
    for m, members in _buckets(pattern).items():
        layout = _Layout(m)
        if layout.count == 0:
            raise ValueError(f"pattern: a supernode of {m} rows is over {CHUNK} entries")
        batch = max(layout.count, BATCH_ENTRIES // (m * m) // layout.count * layout.count)
        for start in range(0, len(members), batch):
            chunk = members[start : start + batch]
            index = np.full((len(chunk), m), n, dtype=np.int64)
            widest = max(len(pattern.supernodes[s][0]) for s in chunk)
            picks = np.zeros((len(chunk), widest), np.int32)
            picked = np.zeros((len(chunk), widest))
            for b, s in enumerate(chunk):
                columns, rows = pattern.supernodes[s]
                index[b, : len(rows)] = rows
                picks[b, : len(columns)] = np.searchsorted(rows, columns)
                picked[b, : len(columns)] = 1.0
            theta = _theta(program, X, W, index, layout)
            valid = (index < n).astype(np.float64)
            diagonal = tf.stop_gradient(tf.linalg.diag_part(theta))
            extra = tf.gather(S, index) + nugget * diagonal * valid
            total += _columns(theta, extra[..., None], Y[index], valid, picks, picked)
    return total


def _theta(program, X: np.ndarray, W: tf.Tensor, index: np.ndarray, layout: _Layout):
    """The blocks ``Theta[index[b], index[b]]`` as a differentiable tensor (B, m, m)."""
    B, m = index.shape
    out = []
    for start in range(0, B, layout.count):
        take = index[start : start + layout.count].reshape(-1)
        k = len(take)
        rows = np.zeros((CHUNK, X.shape[1]))
        rows[:k] = X[take]
        weights = tf.concat([tf.gather(W, take), tf.zeros([CHUNK - k, W.shape[1]], tf.float64)], 0)
        values = program(rows, weights, *layout.tensors)
        out.append(tf.reshape(values[: k * m], [-1, m, m]))
    return tf.concat(out, 0)
