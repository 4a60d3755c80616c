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
from .factor import (
    BATCH_ENTRIES,
    CHUNK,
    Terms,
    _buckets,
    _Layout,
    entries_gradient_program,
    entries_program,
)
from .ordering import Pattern

__all__ = ["Batches", "vecchia_log_likelihood", "vecchia_value_and_gradient"]


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


class Batches:
    """The supernodes of a ``Pattern`` in batches of one padded size each, with their
    index arrays: made once per pattern and reused by every evaluation of the
    likelihood (a fit evaluates it hundreds of times).

    Each batch is ``(layout, index, picks, picked, valid)``: ``index`` (B, m) the rows
    of each supernode (``n``, the padding row, past its own), ``picks`` (B, w) the places
    of its columns among its rows, ``picked`` (B, w) 1 where a place is a column,
    ``valid`` (B, m) 1 on real rows.
    """

    def __init__(self, pattern: Pattern):
        n = pattern.size
        self.batches = []
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
                valid = (index < n).astype(np.float64)
                self.batches.append((layout, index, picks, picked, valid))


def _inputs(pattern: Pattern, points, weights, y, noise):
    """The measurements in pattern order with one padding row: ``(X, W, Y, S)``."""
    order = pattern.order
    n = len(order)
    W = tf.gather(tf.convert_to_tensor(weights, tf.float64), order)
    W = tf.concat([W, tf.zeros([1, W.shape[1]], tf.float64)], 0)  # the padding row
    points = np.asarray(points, np.float64)
    X = np.concatenate([points[order], points[order[:1]]])
    Y = np.concatenate([np.asarray(y, np.float64)[order], [0.0]])
    if noise is None:
        noise = tf.zeros([n], tf.float64)
    S = tf.gather(tf.convert_to_tensor(noise, tf.float64), order)
    S = tf.concat([S, tf.ones([1], tf.float64)], 0)  # padding rows: 1 on the diagonal
    return X, W, Y, S


def _batch_value(program, X, W, Y, S, batch, nugget):
    """One batch's sum over its columns."""
    layout, index = batch[:2]
    return _blocks_value(_theta(program, X, W, index, layout), Y, S, batch, nugget)


def _blocks_value(theta, Y, S, batch, nugget):
    """One batch's sum over its columns from its blocks ``theta`` (B, m, m)."""
    _, index, picks, picked, valid = batch
    diagonal = tf.stop_gradient(tf.linalg.diag_part(theta))
    extra = tf.gather(S, index) + nugget * diagonal * valid
    return _columns(theta, extra[..., None], Y[index], valid, picks, picked)


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
    batches: Batches | None = None,
) -> tf.Tensor:
    """The Vecchia approximation of ``log N(y; 0, Theta + diag(noise))``.

    Call it under a ``tf.GradientTape`` for the gradient: the kernel's variables, the
    ``weights`` (a tensor made from parameters, e.g. ``Terms.weights``) and the
    ``noise`` (a tensor) are watched like any other TensorFlow computation. The tape
    then holds every block at once; ``vecchia_value_and_gradient`` holds one batch's.

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
        batches: ``Batches(pattern)`` made before.

    Returns:
        A scalar tensor.
    """
    program = program or entries_program(kernel, terms)
    batches = batches or Batches(pattern)
    X, W, Y, S = _inputs(pattern, points, weights, y, noise)
    total = tf.constant(-0.5 * pattern.size * math.log(2 * math.pi), tf.float64)
    for batch in batches.batches:
        total += _batch_value(program, X, W, Y, S, batch, nugget)
    return total


def vecchia_value_and_gradient(
    kernel,
    terms: Terms,
    points,
    pattern: Pattern,
    y,
    make,
    variables,
    nugget=1e-10,
    program=None,
    batches: Batches | None = None,
) -> tuple:
    """``vecchia_log_likelihood`` and its gradient with respect to ``variables``, one
    batch of blocks at a time (the memory of one batch, whatever N).

    Args:
        make: ``() -> (weights, noise)``: the measurements' weights (n, A) and noise
            variances (n,) as tensors computed from the variables (called once, under
            a tape: the chain rule through them is applied once, to the sums of the
            batches' gradients).
        variables: the ``tf.Variable`` objects to differentiate by (the kernel's, the
            coefficients', the noises').
        others: as ``vecchia_log_likelihood``'s.

    Returns:
        ``(value, gradients)``: a float and a list of arrays, one per variable (zeros
        where a variable does not enter).
    """
    program = program or entries_program(kernel, terms)
    gradient_program = entries_gradient_program(kernel, terms)
    batches = batches or Batches(pattern)
    with tf.GradientTape() as outer:
        weights, noise = make()
        X, W, Y, S = _inputs(pattern, points, weights, y, noise)
    total = -0.5 * pattern.size * math.log(2 * math.pi)
    kernel_variables = gradient_program.variables_order
    kernel_gradients = [np.zeros(v.shape) for v in kernel_variables]
    dW, dS = np.zeros(W.shape), tf.zeros_like(S)
    for batch in batches.batches:
        layout, index = batch[:2]
        # The blocks without a tape; their gradient by the compiled product below.
        theta = _theta(program, X, W, index, layout)
        with tf.GradientTape() as tape:
            tape.watch([theta, S])
            value = _blocks_value(theta, Y, S, batch, nugget)
        dtheta, parts_S = tape.gradient(value, [theta, S])
        total += float(value.numpy())
        dS += tf.convert_to_tensor(parts_S)
        _theta_gradient(gradient_program, X, W, index, layout, dtheta, kernel_gradients, dW)
    chained = outer.gradient([W, S], variables, output_gradients=[tf.constant(dW), dS])
    gradients = []
    for v, c in zip(variables, chained):
        g = np.zeros(v.shape) if c is None else tf.convert_to_tensor(c).numpy()
        for k, u in zip(kernel_gradients, kernel_variables):
            if u is v:
                g = g + k
        gradients.append(g)
    return total, gradients


def _theta_gradient(gradient_program, X, W, index, layout, dtheta, kernel_gradients, dW):
    """Add the gradient of ``sum(dtheta * _theta(...))`` to ``kernel_gradients`` (one
    array per kernel variable) and ``dW`` (the weights', (n + 1, A)), in place."""
    B, m = index.shape
    dtheta = np.reshape(dtheta.numpy(), (B, m * m))
    for start, take, call, rows, weights in _calls(X, W, index, layout):
        k = len(take)
        cotangent = np.zeros(2 * call.size)
        cotangent[: k * m] = dtheta[start : start + layout.count].reshape(-1)
        parts, dweights = gradient_program(rows, weights, *call.tensors, cotangent)
        for g, p in zip(kernel_gradients, parts):
            g += p.numpy()
        np.add.at(dW, take, dweights.numpy()[:k])


def _theta(program, X: np.ndarray, W: tf.Tensor, index: np.ndarray, layout: _Layout):
    """The blocks ``Theta[index[b], index[b]]`` as a differentiable tensor (B, m, m)."""
    m = index.shape[1]
    out = []
    for _, take, call, rows, weights in _calls(X, W, index, layout):
        values = program(rows, weights, *call.tensors)
        out.append(tf.reshape(values[: len(take) * m], [-1, m, m]))
    return tf.concat(out, 0)


def _calls(X: np.ndarray, W: tf.Tensor, index: np.ndarray, layout: _Layout):
    """The program's calls over the blocks ``index`` (B, m), ``layout.count`` blocks a
    call: ``(start, take, call, rows, weights)``, ``take`` the calls' measurements and
    ``rows``, ``weights`` their points and weights padded to the call's size."""
    B, m = index.shape
    for start in range(0, B, layout.count):
        take = index[start : start + layout.count].reshape(-1)
        call = layout.fitted(len(take) // m)
        rows = np.zeros((call.size, X.shape[1]))
        rows[: len(take)] = X[take]
        weights = tf.concat(
            [tf.gather(W, take), tf.zeros([call.size - len(take), W.shape[1]], tf.float64)], 0
        )
        yield start, take, call, rows, weights
