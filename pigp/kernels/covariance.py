"""Kernel blocks pushed through linear operators: ``L_i L_j' k``.

For operators ``L = sum_a c_a d^a`` (acting on the first argument) and
``M = sum_b e_b d'^b`` (acting on the second), the block is
``sum_{a,b} c_a e_b d^a d'^b k``. For a stationary kernel ``k(z - z')`` a
derivative in the second argument is one in the difference with a sign,
``d'^b = (-1)^|b| d^b``, so only derivatives of ``k(r)`` in ``r = z - z'`` are
taken, and terms sharing ``a + b`` are evaluated once.

With several latent fields (``pigp.kernels.Fields``), each resolved term names the
field it acts on, ``(c_a, a, f)``, and a block is the sum over fields of the
single-field blocks of the terms on that field: ``sum_f L_f k_f M_f'``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .._tensorflow import tf
from .derivatives import kernel_partials, radial_partials, separable_partials
from .library import Fields

__all__ = [
    "operator_pair",
    "separable_partials",
    "radial_partials",
    "block",
    "block_diag",
    "joint",
    "joint_blocks",
    "whole_gradient",
    "term_weights",
    "large",
    "LARGE_FROM",
    "check_smoothness",
    "on_field",
]


def on_field(terms, field: str) -> list:
    """The terms ``(c, index, field)`` of a model of several fields that act on
    ``field``, as the single-field terms ``(c, index)``."""
    return [(c, index) for c, index, f in terms if f == field]


def check_smoothness(kernel, terms, what: str) -> None:
    """Refuse operators of higher order than the kernel can be differentiated."""
    if isinstance(kernel, Fields):
        for field, k in kernel.kernels.items():
            check_smoothness(k, on_field(terms, field), f"{what} (field {field!r})")
        return
    order = max((sum(index) for _, index in terms), default=0)
    if order > kernel.max_order:
        raise ValueError(
            f"{what}: an operator of order {order} needs a kernel that is {order} times "
            f"mean-square differentiable, but {type(kernel).__name__} is only "
            f"{kernel.max_order} times; use "
            + ("Matern72 (order 3), " if order <= 3 else "")
            + "SquaredExponential or RationalQuadratic (any order)"
        )


def term_weights(terms) -> list:
    """The coefficient of each resolved operator term: the one representation of
    the coefficients that every assembly of ``K`` (whole matrix, block by block,
    their gradients, predictions) reads.

    A coefficient that is a number is a Python float (the assemblies fold products
    of numbers before tracing); any other stays a ``Coefficient``, evaluated where
    it is used (``_weight``): a scalar where it is built from parameters, a vector
    over the points where it varies with the inputs (``Coefficient.functions``).
    """
    return [c.constant if not (c.parameters or c.varies) else c for c, *_ in terms]


def _varies(weight) -> bool:
    return not isinstance(weight, float) and weight.varies


def _weight(weight, dtype, X=None, shape=None) -> tf.Tensor:
    """A weight of ``term_weights`` as a tensor of ``dtype``: one that varies is
    evaluated at the points ``X`` (n, d) and reshaped to ``shape`` (to broadcast
    against pairs of points)."""
    if isinstance(weight, float):
        return tf.constant(weight, dtype)
    if not weight.varies:
        return weight.value(dtype)
    value = weight.value(dtype, X)
    return value if shape is None else tf.reshape(value, shape)


def _weights(kernel, left: list, right: list, dtype, at=None) -> dict:
    """``{multi-index: [weight products]}`` of ``L k M'``: ``_term_pairs`` with the
    weights of ``term_weights`` (``at``: see ``operator_pair``)."""
    w_left, w_right = term_weights(left), term_weights(right)
    X1, X2, outer = at if at is not None else (None, None, False)
    shapes = ([-1, 1], [1, -1]) if outer else (None, None)
    return {
        key: [
            sign
            * (_weight(w_left[a], dtype, X1, shapes[0]) * _weight(w_right[b], dtype, X2, shapes[1]))
            for sign, a, b in pairs
        ]
        for key, pairs in _term_pairs(kernel, left, right).items()
    }


def operator_pair(
    kernel, x1: tf.Tensor, x2: tf.Tensor, left: list, right: list, at=None
) -> tf.Tensor:
    """``L k M'`` on pair tensors ``x1``, ``x2`` of shape ``(..., d)`` (broadcastable).

    Args:
        kernel: a ``pigp.kernels.Kernel``.
        left: resolved operator terms ``[(Coefficient, multi_index)]`` acting on the
            first argument.
        right: the same for the second argument.
        at: where coefficients that vary with the inputs are evaluated: ``(X1, X2,
            outer)``, the points of the first and second argument (shapes (n, d) and
            (m, d)) and whether the pairs are all n x m of them (``block``) or the
            n matched ones (``block_diag``). Needed only for such coefficients.

    Returns:
        A tensor of the broadcast shape ``(...)``.
    """
    weights = _weights(kernel, left, right, x1.dtype, at)
    values = kernel_partials(kernel, x1, x2, weights.keys())
    total = None
    for key, coefficients in weights.items():
        if len({tuple(c.shape) for c in coefficients}) == 1:
            weight = tf.add_n(coefficients)
        else:  # weights that vary (n x 1, 1 x m) beside scalars: broadcast
            weight = coefficients[0]
            for c in coefficients[1:]:
                weight = weight + c
        term = weight * values[key]
        total = term if total is None else total + term
    return total


def block(kernel, X1: tf.Tensor, X2: tf.Tensor, left: list, right: list) -> tf.Tensor:
    """The prior covariance block ``cov(L u(X1), M u(X2))`` of shape ``(n, m)``; with
    several fields, the sum over fields of their blocks."""
    if isinstance(kernel, Fields):
        return _field_sum(
            kernel,
            left,
            right,
            lambda k, left_f, right_f: block(k, X1, X2, left_f, right_f),
            X1.dtype,
            [tf.shape(X1)[0], tf.shape(X2)[0]],
        )
    return operator_pair(kernel, X1[:, None, :], X2[None, :, :], left, right, (X1, X2, True))


def block_diag(kernel, X: tf.Tensor, left: list, right: list) -> tf.Tensor:
    """The diagonal ``cov(L u(x_i), M u(x_i))`` of shape ``(n,)``."""
    if isinstance(kernel, Fields):
        return _field_sum(
            kernel,
            left,
            right,
            lambda k, left_f, right_f: block_diag(k, X, left_f, right_f),
            X.dtype,
            [tf.shape(X)[0]],
        )
    return operator_pair(kernel, X, X, left, right, (X, X, False))


def _field_sum(kernel, left, right, single, dtype, shape) -> tf.Tensor:
    """``sum_f single(k_f, left_f, right_f)`` over the fields both sides act on (zeros
    of ``shape`` where they share none)."""
    parts = []
    for field, k in kernel.kernels.items():
        left_f, right_f = on_field(left, field), on_field(right, field)
        if left_f and right_f:
            parts.append(single(k, left_f, right_f))
    return tf.add_n(parts) if parts else tf.zeros(shape, dtype)


#: From this many values on, ``joint`` assembles ``K`` block by block (below, it
#: evaluates the kernel's derivatives on the whole matrix at once: fewer operations
#: to trace and compile, each derivative on all N^2 pairs rather than on its
#: blocks'), and a machine without a GPU factorises it with LAPACK rather than
#: inside TensorFlow's compiled training loop (``pigp.engines.dense.objective``): one setting
#: for both.
LARGE_FROM = 500


def large(n: int) -> bool:
    """Whether a joint covariance of ``n`` values is assembled block by block and
    factorised by LAPACK (without a GPU): ``n >= LARGE_FROM``."""
    return n >= LARGE_FROM


def whole(Xs) -> bool:
    """Whether ``joint`` takes the derivatives on the whole matrix for these inputs."""
    return len(Xs) > 1 and not large(sum(int(X.shape[0]) for X in Xs))


def whole_gradient(kernel, Xs, dtype) -> bool:
    """Whether the gradient of ``joint`` is taken on the whole matrix too (else block by
    block, from the blocks of the upper triangle; ``joint``'s value is the same either
    way). Not where a column multiplies several profiles (the spectral mixture's
    gaussian times cosine): there the Leibniz chains make the whole matrix's gradient,
    which carries every derivative on every pair, slower per call than the blocks'
    (docs/performance.md); with one profile per column the whole matrix's smaller
    program compiles sooner, which is what a first fit waits for."""
    if not whole(Xs):
        return False
    return all(_one_profile(k, dtype) for k in _kernels(kernel))


def _kernels(kernel) -> list:
    """The single-field kernels of ``kernel``: its fields' or itself."""
    return list(kernel.kernels.values()) if isinstance(kernel, Fields) else [kernel]


def _one_profile(kernel, dtype) -> bool:
    factors = kernel.separable(dtype) if kernel.stationary else None
    return factors is None or all(len(column) <= 1 for _, columns in factors for column in columns)


def joint(kernel, Xs, sets, jitter: float, dtype) -> tf.Tensor:
    """``K``: the joint covariance of data sets, noise and jitter included.

    Block ``(i, j)`` is ``L_i L_j' k`` at ``(Xs[i], Xs[j])``; each diagonal block
    gets its set's noise variance plus ``jitter`` times the mean of its own
    diagonal (held constant in gradients). Below ``LARGE_FROM`` points the
    derivatives are taken once on all pairs and each block picks its terms
    with a matrix of coefficients (``_joint_whole``); from ``LARGE_FROM``, block
    by block. Both read the coefficients from ``term_weights``.

    Args:
        kernel: the prior covariance of u.
        Xs: one tensor of points per data set, shapes (n_i, d).
        sets: objects with ``terms`` (resolved operator terms) and ``noise`` (a
            ``pigp.Parameter``), one per entry of ``Xs``, e.g. the
            ``pigp.data.DataSet`` objects of a fit.
        jitter: the relative diagonal jitter.
        dtype: the dtype of the parameters' values in the result.

    Returns:
        A tensor of shape (N, N), ``N = sum(n_i)``.
    """
    if whole(Xs):
        return _joint_whole(kernel, Xs, sets, jitter, dtype)
    return from_blocks(joint_blocks(kernel, Xs, sets, jitter, dtype))


def from_blocks(upper: dict) -> tf.Tensor:
    """The symmetric matrix whose blocks ``(i, j)``, ``i <= j``, are ``upper``'s (those
    of ``joint_blocks``), the lower ones their transposes."""
    m = 1 + max(j for _, j in upper)
    rows = [
        [upper[i, j] if i <= j else tf.transpose(upper[j, i]) for j in range(m)] for i in range(m)
    ]
    return tf.concat([tf.concat(row, axis=1) for row in rows], axis=0)


def joint_blocks(kernel, Xs, sets, jitter: float, dtype) -> dict:
    """The blocks ``(i, j)``, ``i <= j``, of ``joint`` (block by block): ``{(i, j): K_ij}``,
    the diagonal ones with their noise and jitter."""
    blocks = {}
    for i, (Xi, si) in enumerate(zip(Xs, sets)):
        for j in range(i, len(Xs)):
            blocks[i, j] = block(kernel, Xi, Xs[j], si.terms, sets[j].terms)
        diag = tf.linalg.diag_part(blocks[i, i])
        blocks[i, i] = tf.linalg.set_diag(
            blocks[i, i], diag + _diagonal_extra(diag, si.noise, jitter, dtype)
        )
    return blocks


def _joint_whole(kernel, Xs, sets, jitter: float, dtype) -> tf.Tensor:
    """``joint`` with each derivative of the kernel evaluated once on all pairs.

    ``K = sum_a M_a * d^a k`` over the multi-indices ``a`` any block needs, ``M_a``
    holding in block ``(i, j)`` the coefficient of ``d^a k`` there: a constant
    matrix where the coefficients are numbers, else a sum of coefficients times
    constant block indicators. Everything is elementwise on N x N (one loop once
    compiled). ``K`` is exactly symmetric: ``d^a k`` at ``-r`` is ``(-1)^|a|``
    times its value at ``r`` to the bit.
    """
    K = _prior_whole(kernel, Xs, [s.terms for s in sets], dtype)
    sizes = [int(X.shape[0]) for X in Xs]
    diag = tf.linalg.diag_part(K)
    extra, start = [], 0
    for n, s in zip(sizes, sets):
        extra.append(tf.fill([n], _diagonal_extra(diag[start : start + n], s.noise, jitter, dtype)))
        start += n
    return tf.linalg.set_diag(K, diag + tf.concat(extra, axis=0))


def _prior_whole(kernel, Xs, terms: list, dtype, products: bool = False) -> tf.Tensor:
    """The prior part of ``_joint_whole`` (no noise, no jitter) for the resolved terms
    of each set; with several fields, the sum over fields, each by
    ``_prior_by_products``."""
    sizes = [int(X.shape[0]) for X in Xs]
    if isinstance(kernel, Fields):
        parts = []
        for field, k in kernel.kernels.items():
            on = [on_field(t, field) for t in terms]
            if any(on):
                parts.append(_prior_whole(k, Xs, on, dtype, products=True))
        return tf.add_n(parts) if parts else tf.zeros([sum(sizes)] * 2, dtype)
    count = len(Xs)
    membership = np.repeat(np.arange(count), sizes)
    X = tf.concat(Xs, axis=0)
    weights = [term_weights(t) for t in terms]
    pairs_of = defaultdict(dict)  # index -> {(i, j): [(sign, term of i, term of j)]}
    for i in range(count):
        for j in range(count):
            for key, pairs in _term_pairs(kernel, terms[i], terms[j]).items():
                pairs_of[key][i, j] = pairs
    values = kernel_partials(kernel, X[:, None, :], X[None, :, :], pairs_of.keys())
    if products:
        return _prior_by_products(pairs_of, values, weights, membership, Xs, dtype)
    K = None
    for key, entries in pairs_of.items():
        constant = np.zeros((count, count))
        varying = None
        for (i, j), pairs in entries.items():
            for sign, a, b in pairs:
                left, right = weights[i][a], weights[j][b]
                if isinstance(left, float) and isinstance(right, float):
                    constant[i, j] += sign * left * right
                    continue
                if _varies(left) or _varies(right):
                    # Vectors over all N points, zero outside set i (j): their outer
                    # product weighs block (i, j) point by point.
                    part = sign * (
                        _spread(left, i, Xs, dtype)[:, None] * _spread(right, j, Xs, dtype)[None, :]
                    )
                else:
                    mask = tf.constant(
                        (membership[:, None] == i) & (membership[None, :] == j), dtype
                    )
                    part = sign * _weight(left, dtype) * _weight(right, dtype) * mask
                varying = part if varying is None else varying + part
        term = tf.constant(constant[membership][:, membership], dtype) * values[key]
        if varying is not None:
            term += varying * values[key]
        K = term if K is None else K + term
    return K


def _prior_by_products(pairs_of, values, weights, membership, Xs, dtype) -> tf.Tensor:
    """``_prior_whole``'s sum with each block's weights spread over the N x N matrix by
    products of N-vectors (set indicators, and ``_spread`` weights), so that no N x N
    constant enters the program: with two fields of second-order operators, one such
    constant per block and term pair held the fit of 480 values at 7-12 GB
    (``benchmarks/elasticity.py``). The same sum, in another order of rounding."""
    count = len(Xs)
    indicators = tf.constant(np.eye(count)[membership], dtype)
    K = None
    for key, entries in pairs_of.items():
        constant = np.zeros((count, count))
        lefts, rights = [], []
        for (i, j), pairs in entries.items():
            for sign, a, b in pairs:
                left, right = weights[i][a], weights[j][b]
                if isinstance(left, float) and isinstance(right, float):
                    constant[i, j] += sign * left * right
                    continue
                lefts.append(sign * _spread(left, i, Xs, dtype))
                rights.append(_spread(right, j, Xs, dtype))
        weight = None
        if np.any(constant):
            spread = tf.matmul(indicators, tf.constant(constant, dtype))
            weight = tf.matmul(spread, indicators, transpose_b=True)
        if lefts:
            varying = tf.matmul(tf.stack(lefts, axis=1), tf.stack(rights, axis=1), transpose_b=True)
            weight = varying if weight is None else weight + varying
        if weight is not None:
            term = weight * values[key]
            K = term if K is None else K + term
    return K if K is not None else tf.zeros([len(membership)] * 2, dtype)


def _spread(weight, i: int, Xs, dtype) -> tf.Tensor:
    """A weight of data set ``i`` as a vector over all the sets' points (zero outside
    set ``i``)."""
    sizes = [int(X.shape[0]) for X in Xs]
    value = tf.broadcast_to(_weight(weight, dtype, Xs[i]), [sizes[i]])
    return tf.pad(value, [[sum(sizes[:i]), sum(sizes[i + 1 :])]])


def _term_pairs(kernel, left: list, right: list) -> dict:
    """``{multi-index: [(sign, a, b)]}`` of ``L k M'``: the positions ``a`` of a term of
    ``left`` and ``b`` of one of ``right`` whose product of coefficients weighs the
    derivative of the kernel at that multi-index; for a stationary kernel indices
    into ``r = x1 - x2`` (``index_a + index_b``, sign ``(-1)^|index_b|``), else into
    ``(x1, x2)`` (``index_a`` then ``index_b``, sign 1)."""
    pairs = defaultdict(list)
    for a, (_, index_a, *_) in enumerate(left):
        for b, (_, index_b, *_) in enumerate(right):
            if kernel.stationary:
                key = tuple(i + j for i, j in zip(index_a, index_b))
                pairs[key].append(((-1.0) ** sum(index_b), a, b))
            else:
                pairs[tuple(index_a) + tuple(index_b)].append((1.0, a, b))
    return pairs


def _diagonal_extra(diag, noise, jitter: float, dtype) -> tf.Tensor:
    """What a data set's diagonal block gets on its diagonal: its noise variance plus
    ``jitter`` times the mean of the block's ``diag`` (held constant in gradients)."""
    return noise.value(dtype) + jitter * tf.stop_gradient(tf.reduce_mean(diag))
