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

import functools
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..._tensorflow import tf
from ...kernels.covariance import _term_pairs, _weight, term_weights
from ...kernels.derivatives import kernel_partials
from ...memory import release_freed
from ...structure import program
from .ordering import Pattern

__all__ = ["Terms", "factor", "covariance_rows", "dense_block"]

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


#: Kernel entries per call of the compiled program (its input shapes are fixed): the
#: Vecchia likelihood's calls.
CHUNK = 2**19
#: The factor's calls: smaller, because the memory of a call's buffers stays with the
#: process, and of this one size (no smaller ``SIZES`` for a batch's last call: each size
#: compiles a program of its own, which the process keeps). -Lap u + u^3 = f at 10^5
#: interior points (one run each, ``/proc``'s VmHWM): 2^18 entries peaked at 1.57 GB in
#: 133 s, 2^17 at 1.49 GB in 140 s, 2^16 at 1.48 GB in 158 s; at 10^4 points the three
#: sizes of before (2^16 and the smaller two) peaked at 1.05 GB and one at 0.95 GB.
FACTOR_CHUNK = 2**17


def entries_program(kernel, terms: Terms):
    """The compiled program of a batch of blocks: ``(rows, weights, left, right, full) ->
    entries``. ``rows`` (CHUNK, d) and ``weights`` (CHUNK, A) are the blocks' rows one
    after the other; ``left``, ``right`` (CHUNK,) index the pairs of rows of each block's
    upper triangle, whose entries the kernel gives; ``full`` (2 CHUNK,) places them in
    each block's full square (both triangles). One set of shapes whatever the blocks'
    sizes (``CHUNK``, or a smaller power of two for a call of few blocks:
    ``_Layout.fitted``), so it compiles once per size, kernel and operators (kept in
    ``pigp.structure``'s table: the kernel's variables are read inside, so the key is
    the kernel itself)."""
    pairs = _term_pairs(kernel, terms.terms, terms.terms)
    key = ("cholesky-entries", ("object", kernel), tuple((k, tuple(v)) for k, v in pairs.items()))
    return program(key, lambda: _entries_program(kernel, pairs))


def _entries_program(kernel, pairs: dict):

    @tf.function(jit_compile=True)
    def upper(x1, x2, w1, w2):
        return _weighted(pairs, kernel_partials(kernel, x1, x2, pairs.keys()), w1, w2)

    # The gathers outside XLA: its gathers on the CPU took ~8x the kernel's time.
    @tf.function
    def entries(rows, weights, left, right, full):
        x1, x2 = tf.gather(rows, left), tf.gather(rows, right)
        w1, w2 = tf.gather(weights, left), tf.gather(weights, right)
        return tf.gather(upper(x1, x2, w1, w2), full)

    return entries


def entries_gradient_program(kernel, terms: Terms):
    """The compiled vector-Jacobian product of ``entries_program``'s: ``(rows, weights,
    left, right, full, cotangent) -> (kernel_gradients, weight_gradients)``, the
    gradient of ``sum(cotangent * entries)`` with respect to each of ``kernel.variables``
    (a list, in that order) and to ``weights`` (CHUNK, A).

    One XLA program, forward and backward: a ``tf.GradientTape`` over the eager
    ``entries_program`` kept every intermediate of the kernel's derivatives outside XLA,
    about 10 times the forward's time (7.1 s against 0.65 s for the Vecchia
    log-likelihood of 4,000 heat measurements in (x, y, t)); this takes about 3 times it."""
    pairs = _term_pairs(kernel, terms.terms, terms.terms)
    key = ("cholesky-vjp", ("object", kernel), tuple((k, tuple(v)) for k, v in pairs.items()))
    return program(key, lambda: _entries_gradient_program(kernel, pairs))


def _entries_gradient_program(kernel, pairs: dict):
    variables = list(kernel.variables)

    @tf.function(jit_compile=True)
    def upper(x1, x2, w1, w2, cotangent):
        with tf.GradientTape() as tape:
            tape.watch([*variables, w1, w2])
            values = _weighted(pairs, kernel_partials(kernel, x1, x2, pairs.keys()), w1, w2)
        sources = [*variables, w1, w2]
        gradients = tape.gradient(values, sources, output_gradients=cotangent)
        return [tf.zeros_like(v) if g is None else g for v, g in zip(sources, gradients)]

    @tf.function
    def vjp(rows, weights, left, right, full, cotangent):
        size = tf.shape(left)[0]
        x1, x2 = tf.gather(rows, left), tf.gather(rows, right)
        w1, w2 = tf.gather(weights, left), tf.gather(weights, right)
        pairs_cotangent = tf.math.unsorted_segment_sum(cotangent, full, size)
        *kernel_gradients, d1, d2 = upper(x1, x2, w1, w2, pairs_cotangent)
        rows_count = tf.shape(rows)[0]
        dweights = tf.math.unsorted_segment_sum(d1, left, rows_count)
        dweights += tf.math.unsorted_segment_sum(d2, right, rows_count)
        return kernel_gradients, dweights

    vjp.variables_order = variables
    return vjp


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


class _Layout:
    """Where the entries of ``count`` blocks of ``m`` rows go in one call of the
    program of ``size`` pairs: each block's upper-triangle pairs (``left``, ``right``:
    rows of the call's buffer) and each full entry's place among them (``full``), as the
    program's three index tensors (``tensors``)."""

    def __init__(self, m: int, size: int = CHUNK, sizes: tuple | None = None):
        self.m, self.size = m, size
        self.sizes = SIZES if sizes is None else sizes
        upper, lower = np.triu_indices(m)
        self.pairs = len(upper)
        self.count = size // self.pairs
        place = np.empty((m, m), dtype=np.int32)
        place[upper, lower] = np.arange(self.pairs)
        place[lower, upper] = np.arange(self.pairs)
        offsets = np.arange(self.count)[:, None]
        left = np.zeros(size, np.int32)
        right = np.zeros(size, np.int32)
        full = np.zeros(2 * size, np.int32)
        n = self.count * self.pairs
        left[:n] = (offsets * m + upper).reshape(-1)
        right[:n] = (offsets * m + lower).reshape(-1)
        full[: self.count * m * m] = (offsets * self.pairs + place.reshape(-1)).reshape(-1)
        self.tensors = [tf.constant(a) for a in (left, right, full)]

    def fitted(self, blocks: int) -> _Layout:
        """The layout of a call of ``blocks`` blocks (at most ``count``): of the least of
        ``SIZES`` that holds them, so a small problem or the last call of a batch does
        not evaluate a full ``CHUNK`` of pairs (each size compiles once per kernel: at
        700 values, one evaluation of the Vecchia log-likelihood and its gradient went
        from 6 s to 2.5 s, after
        14 s of compiling)."""
        need = blocks * self.pairs
        size = next((s for s in self.sizes if s >= need), CHUNK)
        if size >= self.size:
            return self
        return _layout(self.m, size)


#: The sizes of the program's calls: three, so it compiles at most three times.
SIZES = (2**12, 2**15)


@functools.lru_cache(maxsize=256)
def _layout(m: int, size: int) -> _Layout:
    return _Layout(m, size)


def _blocks(program, points: np.ndarray, W: np.ndarray, index: np.ndarray, layout: _Layout):
    """``Theta[index[b], index[b]]`` for a batch of row lists ``index`` (B, m): the
    kernel's entries of each block's upper triangle only, mirrored in the program.
    Rows with zero weights (padding) give zero rows and columns."""
    B, m = index.shape
    d, A = points.shape[1], W.shape[1]
    theta = np.empty((B, m, m))
    for start in range(0, B, layout.count):
        stop = min(B, start + layout.count)
        call = layout.fitted(stop - start)
        take = index[start:stop].reshape(-1)
        rows, weights = np.zeros((call.size, d)), np.zeros((call.size, A))
        rows[: len(take)], weights[: len(take)] = points[take], W[take]
        out = program(rows, weights, *call.tensors).numpy()
        theta[start:stop] = out[: (stop - start) * m * m].reshape(-1, m, m)
    return theta


def _pair_values(
    program, points: np.ndarray, W: np.ndarray, first, second, size: int = CHUNK
) -> np.ndarray:
    """``Theta[first[k], second[k]]`` for lists of measurement indices, ``size / 2``
    pairs a call of the program: the first sides in the buffer's first half, the second
    in its second half."""
    out = np.empty(len(first))
    half = size // 2
    rows = np.zeros((size, points.shape[1]))
    weights = np.zeros((size, W.shape[1]))
    place = np.arange(size, dtype=np.int32)
    indices = (place, np.roll(place, -half), np.arange(2 * size, dtype=np.int32) % size)
    for start in range(0, len(first), half):
        k = min(half, len(first) - start)
        rows[:k], weights[:k] = points[first[start : start + k]], W[first[start : start + k]]
        rows[half : half + k] = points[second[start : start + k]]
        weights[half : half + k] = W[second[start : start + k]]
        out[start : start + k] = program(rows, weights, *indices).numpy()[:k]
    return out


def _pair_blocks(program, points: np.ndarray, W: np.ndarray, index: np.ndarray, size: int):
    """``_blocks`` for blocks too large for one call (over ``size`` upper-triangle
    entries), by ``_pair_values`` over their upper triangles."""
    B, m = index.shape
    upper, lower = np.triu_indices(m)
    values = _pair_values(
        program, points, W, index[:, upper].reshape(-1), index[:, lower].reshape(-1), size
    ).reshape(B, -1)
    theta = np.empty((B, m, m))
    theta[:, upper, lower] = values
    theta[:, lower, upper] = values
    return theta


def padded(m: int) -> int:
    """A block size at most 12.5% above ``m`` from few sizes: multiples of 16 up to 64,
    then of an eighth of the power of two below ``m``."""
    if m <= 64:
        return -(-m // 16) * 16
    step = 2 ** (math.floor(math.log2(m)) - 3)
    return -(-m // step) * step


def _buckets(pattern: Pattern) -> dict:
    """Supernodes grouped by their padded number of rows."""
    groups = {}
    for index, (_, rows) in enumerate(pattern.supernodes):
        groups.setdefault(padded(len(rows)), []).append(index)
    return groups


def factor(
    kernel,
    terms: Terms,
    points,
    weights,
    pattern: Pattern,
    nugget: float = 1e-10,
    program=None,
    noise=None,
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
        noise: array (n,) of variances added to the measurements' diagonal entries (the
            factor of ``Theta + diag(noise)``), or None.

    Returns:
        A ``scipy.sparse.csc_matrix`` of shape (n, n).
    """
    points = np.asarray(points, np.float64)
    ordered_points = points[pattern.order]
    W = np.asarray(weights, np.float64)[pattern.order]
    program = program or entries_program(kernel, terms)
    padded_points = np.concatenate([ordered_points, ordered_points[:1]])
    padded_W = np.concatenate([W, np.zeros((1, W.shape[1]))])
    n = pattern.size
    S = np.zeros(n + 1)
    if noise is not None:
        S[:n] = np.asarray(noise, np.float64)[pattern.order]
    # The factor's places, known from the pattern: column c holds the rows of its
    # supernode up to c (sorted), its entries written in place below.
    count = np.zeros(n + 1, np.int64)
    for columns, rows in pattern.supernodes:
        count[columns + 1] = np.searchsorted(rows, columns) + 1
    indptr = np.cumsum(count)
    indices = np.empty(indptr[-1], np.int32)
    data = np.empty(indptr[-1])
    for columns, rows in pattern.supernodes:
        for c in columns:
            indices[indptr[c] : indptr[c + 1]] = rows[: indptr[c + 1] - indptr[c]]
    for m, members in _buckets(pattern).items():
        layout = _Layout(m, FACTOR_CHUNK, sizes=()) if m * (m + 1) // 2 <= FACTOR_CHUNK else None
        batch = max(1, BATCH_ENTRIES // (m * m))
        for start in range(0, len(members), batch):
            chunk = members[start : start + batch]
            index = np.zeros((len(chunk), m), dtype=np.int64)
            valid = np.zeros((len(chunk), m), bool)
            for b, s in enumerate(chunk):
                rows = pattern.supernodes[s][1]
                index[b, : len(rows)] = rows
                valid[b, : len(rows)] = True
            if layout is None:
                theta = _pair_blocks(program, ordered_points, W, index, FACTOR_CHUNK)
                theta *= valid[:, :, None] * valid[:, None, :]
            else:
                # Padding rows take the weights of a measurement of no terms: zero.
                index[~valid] = len(W)
                theta = _blocks(program, padded_points, padded_W, index, layout)
            diagonal = np.einsum("bii->bi", theta)
            diagonal += nugget * diagonal + ~valid + S[np.where(valid, index, n)]
            widest = max(len(pattern.supernodes[s][0]) for s in chunk)
            selector = np.zeros((len(chunk), m, widest))
            places = []
            for b, s in enumerate(chunk):
                columns, rows = pattern.supernodes[s]
                ks = np.searchsorted(rows, columns)
                selector[b, ks, np.arange(len(columns))] = 1.0
                places.append((columns, ks))
            picked = _inverse_rows(tf.constant(theta), tf.constant(selector)).numpy()
            if not np.all(np.isfinite(picked)):
                raise ValueError(
                    "kernel: the covariance of a neighbourhood of measurements is singular "
                    "in floating point (lengthscales long against the points' spacing, or a "
                    f"nugget of {nugget:g} too small for them); the sparse factor cannot be "
                    "made: use the dense engine, or a larger nugget (PIGP's jitter)"
                )
            for b, (columns, ks) in enumerate(places):
                for j, (c, k) in enumerate(zip(columns, ks)):
                    data[indptr[c] : indptr[c + 1]] = picked[b, : k + 1, j]
    release_freed()
    return sp.csc_matrix((data, indices, indptr), shape=(n, n))


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


def dense_block(kernel, terms: Terms, points, weights, left, right, program=None) -> np.ndarray:
    """``covariance_rows`` by the compiled program (``_pair_values``): the dense block
    of thousands of rows and columns (the tape's eager derivatives of every pair at once
    need ~10 GB at 5,000 x 2,700)."""
    points = np.asarray(points, np.float64)
    weights = np.asarray(weights, np.float64)
    program = program or entries_program(kernel, terms)
    first, second = (a.reshape(-1) for a in np.meshgrid(left, right, indexing="ij"))
    values = _pair_values(program, points, weights, first, second)
    return values.reshape(len(left), len(right))
