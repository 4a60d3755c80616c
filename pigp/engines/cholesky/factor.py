"""The numerical sparse inverse-Cholesky factor over a ``Pattern``, from pigp's own
tape-derived kernel blocks.

For a column ``i`` with neighbour set ``s`` (its own position last) and the Cholesky
factor ``L`` of ``Theta[s, s]``, the KL-optimal column is ``U[s, i] = L^-T e_last``
(Schafer, Katzfuss & Owhadi 2021), and ``Theta^-1 ~ U U'``. A supernode shares one
``L`` among its columns: column ``c``, the ``k``-th of the supernode's rows, takes the
first ``k`` entries of row ``k`` of ``L^-1`` (the leading block of ``L^-1`` is the
inverse of the leading block of ``L``).

The blocks ``Theta[s, s]`` of a batch of supernodes are one compiled program over the
gathered points: each measurement ``p`` has weights ``W[p, a]`` on the terms ``a`` of
every kind's operator (zero on the other kinds' terms), and
``Theta[p, q] = sum_{a, b} sign W[p, a] W[q, b] d^(a+b) k(x_p - x_q)`` with the kernel's
partial derivatives taken once per multi-index (``pigp.kernels.derivatives``), so any
operator and kernel of the dense model works.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..._tensorflow import tf
from ...kernels.covariance import _term_pairs, _weight, term_weights
from ...kernels.derivatives import kernel_partials
from .ordering import Pattern

__all__ = ["Terms", "factor", "covariance_rows"]

#: Entries of one batch's blocks (supernodes x rows x rows): bounds the memory of a
#: batch's kernel derivatives to about 8 bytes x this x the number of multi-indices.
BATCH_ENTRIES = 2_000_000


@dataclass(frozen=True)
class Terms:
    """Every kind's operator terms, flattened: ``terms[a] = (coefficient, index)`` and
    ``kind_of[a]`` the kind it belongs to (``resolve``d operators, one per kind)."""

    terms: list
    kind_of: np.ndarray

    @classmethod
    def of(cls, operators: list) -> Terms:
        terms, kinds = [], []
        for kind, resolved in enumerate(operators):
            terms += list(resolved)
            kinds += [kind] * len(resolved)
        return cls(terms, np.asarray(kinds))

    def weights(self, points: np.ndarray, kinds: np.ndarray, dtype=tf.float64) -> tf.Tensor:
        """``W`` of shape (n, A): each measurement's weight on each term."""
        X = tf.constant(points, dtype)
        columns = []
        for a, weight in enumerate(term_weights(self.terms)):
            mask = tf.constant(kinds == self.kind_of[a], dtype)
            value = _weight(weight, dtype, X)
            columns.append(mask * value)
        return tf.stack(columns, axis=1)


#: Entries of the kernel per call of the compiled program: its one input shape.
CHUNK = 2**18


def entries_program(kernel, terms: Terms):
    """The compiled ``(x1, x2, w1, w2) -> Theta entries`` over flat lists of pairs: x1, x2
    of shape (CHUNK, d), w1, w2 (CHUNK, A). One shape whatever the blocks' sizes, so it
    compiles once per kernel and operators."""
    pairs = _term_pairs(kernel, terms.terms, terms.terms)

    @tf.function(jit_compile=True)
    def entries(x1, x2, w1, w2):
        return _weighted(pairs, kernel_partials(kernel, x1, x2, pairs.keys()), w1, w2)

    return entries


def _weighted(pairs: dict, values: dict, w1, w2):
    """``sum_{a, b} sign w1[..., a] w2[..., b] values[a + b]``: the kernel's derivatives
    weighed by each side's weights on the terms (``w1``, ``w2`` broadcast against the
    derivatives, their last axis the terms)."""
    theta = None
    for key, products in pairs.items():
        weight = tf.add_n([sign * w1[..., a] * w2[..., b] for sign, a, b in products])
        term = weight * values[key]
        theta = term if theta is None else theta + term
    return theta


@tf.function(
    input_signature=[
        tf.TensorSpec([None, None, None], tf.float64),
        tf.TensorSpec([None, None, None], tf.float64),
    ]
)
def _inverse_rows(theta, selector):
    """``L^-T selector`` for a batch of blocks ``Theta = L L'``: column j holds the row of
    ``L^-1`` that ``selector[:, :, j]`` picks (TensorFlow's batched kernels: XLA's Cholesky
    on the CPU is ~60x slower, 0.56 s against 0.0095 s for 256 blocks of 64)."""
    return tf.linalg.triangular_solve(tf.linalg.cholesky(theta), selector, lower=True, adjoint=True)


def _blocks(program, points: np.ndarray, W: np.ndarray, index: np.ndarray, d: int, A: int):
    """``Theta[index[b], index[b]]`` for a batch of row lists ``index`` (B, m), by the
    flat program in chunks of ``CHUNK`` pairs: the upper triangles only, mirrored
    (``Theta`` is symmetric: half the kernel's evaluations)."""
    B, m = index.shape
    upper, lower = np.triu_indices(m)
    left = index[:, upper].reshape(-1)
    right = index[:, lower].reshape(-1)
    total = len(left)
    out = np.empty(total)
    x1 = np.zeros((CHUNK, d))
    x2 = np.zeros((CHUNK, d))
    w1 = np.zeros((CHUNK, A))
    w2 = np.zeros((CHUNK, A))
    for start in range(0, total, CHUNK):
        stop = min(total, start + CHUNK)
        k = stop - start
        x1[:k], x2[:k] = points[left[start:stop]], points[right[start:stop]]
        w1[:k], w2[:k] = W[left[start:stop]], W[right[start:stop]]
        out[start:stop] = program(x1, x2, w1, w2).numpy()[:k]
    theta = np.empty((B, m, m))
    values = out.reshape(B, -1)
    theta[:, upper, lower] = values
    theta[:, lower, upper] = values
    return theta


def padded(m: int) -> int:
    """A block size of at most 25% padding from few sizes: multiples of 16 up to 64,
    then 1, 1.25, 1.5 or 1.75 times a power of two (each size compiles once)."""
    if m <= 64:
        return -(-m // 16) * 16
    base = 2 ** (math.floor(math.log2(m)))
    return next(int(base * f) for f in (1.0, 1.25, 1.5, 1.75, 2.0) if base * f >= m)


def _buckets(pattern: Pattern) -> dict:
    """Supernodes grouped by their padded number of rows."""
    groups = {}
    for index, (_, rows) in enumerate(pattern.supernodes):
        groups.setdefault(padded(len(rows)), []).append(index)
    return groups


def factor(
    kernel, terms: Terms, points, weights, pattern: Pattern, nugget: float = 1e-10, program=None
):
    """``U``: the sparse upper-triangular factor, ``Theta^-1 ~ U U'``, in ``pattern``'s
    positions (row and column ``k`` are measurement ``pattern.order[k]``).

    Args:
        kernel: a ``pigp.kernels.Kernel`` (one field).
        terms: ``Terms``: the operator terms the measurements combine.
        points: array (n, d) of the measurements' points.
        weights: array (n, A): each measurement's weight on each term (``Terms.weights``
            for measurements of one kind each; any combination, e.g. a linearised
            equation's, otherwise).
        pattern: the ``Pattern`` of these measurements.
        nugget: added to each diagonal entry of a block, relative to it.
        program: ``entries_program(kernel, terms)`` made before (it compiles once).

    Returns:
        A ``scipy.sparse.csc_matrix`` of shape (n, n).
    """
    points = np.asarray(points, np.float64)
    ordered_points = points[pattern.order]
    W = np.asarray(weights, np.float64)[pattern.order]
    program = program or entries_program(kernel, terms)
    d, A = ordered_points.shape[1], W.shape[1]
    rows_out, cols_out, values_out = [], [], []
    for m, members in _buckets(pattern).items():
        batch = max(1, BATCH_ENTRIES // (m * m))
        for start in range(0, len(members), batch):
            chunk = members[start : start + batch]
            index = np.zeros((len(chunk), m), dtype=np.int64)
            valid = np.zeros((len(chunk), m))
            for b, s in enumerate(chunk):
                rows = pattern.supernodes[s][1]
                index[b, : len(rows)] = rows
                index[b, len(rows) :] = rows[0]
                valid[b, : len(rows)] = 1.0
            theta = _blocks(program, ordered_points, W, index, d, A)
            theta *= valid[:, :, None] * valid[:, None, :]
            diagonal = np.einsum("bii->bi", theta)
            diagonal += nugget * diagonal + (1.0 - valid)
            widest = max(len(pattern.supernodes[s][0]) for s in chunk)
            selector = np.zeros((len(chunk), m, widest))
            places = []
            for b, s in enumerate(chunk):
                columns, rows = pattern.supernodes[s]
                ks = np.searchsorted(rows, columns)
                selector[b, ks, np.arange(len(columns))] = 1.0
                places.append((columns, rows, ks))
            picked = _inverse_rows(tf.constant(theta), tf.constant(selector)).numpy()
            for b, (columns, rows, ks) in enumerate(places):
                for j, (c, k) in enumerate(zip(columns, ks)):
                    rows_out.append(rows[: k + 1])
                    cols_out.append(np.full(k + 1, c))
                    values_out.append(picked[b, : k + 1, j])
    n = pattern.size
    return sp.csc_matrix(
        (np.concatenate(values_out), (np.concatenate(rows_out), np.concatenate(cols_out))),
        shape=(n, n),
    )


def covariance_rows(kernel, terms: Terms, points, weights, left, right) -> np.ndarray:
    """The dense block ``Theta[left, right]`` (measurement indices), for checks and small
    problems."""
    points = np.asarray(points, np.float64)
    W = tf.constant(np.asarray(weights, np.float64))
    pairs = _term_pairs(kernel, terms.terms, terms.terms)
    X1 = tf.constant(points[left])[:, None, :]
    X2 = tf.constant(points[right])[None, :, :]
    values = kernel_partials(kernel, X1, X2, pairs.keys())
    W1, W2 = tf.gather(W, left)[:, None, :], tf.gather(W, right)[None, :, :]
    return _weighted(pairs, values, W1, W2).numpy()
