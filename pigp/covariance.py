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

import functools
import itertools
import math
from collections import defaultdict

import numpy as np

from ._tensorflow import tf
from .derivatives import partials
from .kernels import Decaying, Fields, Warped, cosine, gaussian, hermite

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


def _partials(kernel, x1: tf.Tensor, x2: tf.Tensor, indices) -> dict:
    """``{index: derivative}`` of the kernel on pair tensors, for ``_weights``'s indices."""
    d = x1.shape[-1]
    if isinstance(kernel, Warped):
        return warped_partials(kernel, x1, x2, indices)
    if isinstance(kernel, Decaying):
        return decaying_partials(kernel, x1, x2, indices)
    if kernel.stationary:
        r = [x1[..., c] - x2[..., c] for c in range(d)]
        factors = kernel.separable(x1.dtype)
        if factors is not None:
            return separable_partials(factors, r, indices)
        radial = kernel.radial(x1.dtype)
        if radial is not None and RADIAL:
            return radial_partials(*radial, r, indices)
        return partials(lambda cols: kernel.stationary_pair(tf.stack(cols, axis=-1)), r, indices)
    shape = tf.broadcast_dynamic_shape(tf.shape(x1), tf.shape(x2))
    columns = tf.unstack(tf.broadcast_to(x1, shape), num=d, axis=-1) + tf.unstack(
        tf.broadcast_to(x2, shape), num=d, axis=-1
    )

    def function(cols):
        return kernel.pair(tf.stack(cols[:d], axis=-1), tf.stack(cols[d:], axis=-1))

    return partials(function, columns, indices)


def decaying_partials(kernel, x1: tf.Tensor, x2: tf.Tensor, indices) -> dict:
    """Partial derivatives of a ``Decaying`` kernel ``a(s1) a(s2) b(x1, x2)``, ``a(s) =
    exp(-rate s)`` of column ``c``, at multi-indices into ``(x1, x2)``: by Leibniz's rule
    in column ``c``, ``d^m_s1 d^n_s2 (a a b) = a a sum_j,l C(m, j) C(n, l) (-rate)^(j + l)
    d^(m - j)_s1 d^(n - l)_s2 b``, with the base's derivatives taken by ``_partials``
    (into ``r = x1 - x2``, sign ``(-1)^|index_2|``, where the base is stationary)."""
    d, c = x1.shape[-1], kernel.column
    base = kernel.kernel
    plans, needed = {}, set()
    for index in indices:
        first, second = list(index[:d]), list(index[d:])
        plan = []
        for j in range(first[c] + 1):
            for k in range(second[c] + 1):
                a, b = list(first), list(second)
                a[c] -= j
                b[c] -= k
                key, sign = _base_index(base, tuple(a + b), d)
                plan.append((sign * math.comb(first[c], j) * math.comb(second[c], k), j + k, key))
                needed.add(key)
        plans[index] = plan
    values = _partials(base, x1, x2, needed)
    powers = [tf.ones([], x1.dtype)]  # (-rate)^j by products: pow's gradient at 0 is NaN
    for _ in range(max(power for plan in plans.values() for _, power, _ in plan)):
        powers.append(powers[-1] * -kernel.rate.value(x1.dtype))
    amplitude = kernel.amplitude(x1) * kernel.amplitude(x2)
    return {
        index: amplitude
        * tf.add_n([weight * powers[power] * values[key] for weight, power, key in plan])
        for index, plan in plans.items()
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
    values = _partials(kernel, x1, x2, weights.keys())
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


def _warp_derivatives(kernel, c: int, x: tf.Tensor, top: int) -> list:
    """``[w, w', ..., w^(top)]`` of column ``c``'s warp at the values ``x``, by nested
    tapes on the points (not on pairs of them)."""
    values = partials(
        lambda columns: kernel.warp_column(c, columns[0]), [x], [(k,) for k in range(top + 1)]
    )
    return [values[(k,)] for k in range(top + 1)]


def _bell(derivatives: list, top: int) -> list:
    """Partial Bell polynomials ``B[m][j](w', w'', ...)``, ``0 <= j <= m <= top``:
    ``d^m/dx^m g(w(x)) = sum_j B[m][j] g^(j)(w(x))`` (Faa di Bruno), by the recurrence
    ``B[m][j] = sum_i C(m-1, i-1) w^(i) B[m-i][j-1]``."""
    one = tf.ones_like(derivatives[0])
    B = [[one]]
    for m in range(1, top + 1):
        row = [None]  # B[m][0] = 0 for m >= 1
        for j in range(1, m + 1):
            total = None
            for i in range(1, m - j + 2):
                if B[m - i][j - 1] is None:
                    continue
                term = math.comb(m - 1, i - 1) * derivatives[i] * B[m - i][j - 1]
                total = term if total is None else total + term
            row.append(total)
        B.append(row)
    return B


def warped_partials(kernel, x1: tf.Tensor, x2: tf.Tensor, indices) -> dict:
    """Partial derivatives of ``Warped`` kernel ``base(w(x1), w(x2))`` at multi-indices
    into ``(x1, x2)``: the base kernel's derivatives in the warped points, at every
    index of ``sum_j prod_c B[a_c][j_c](x1_c) B[b_c][l_c](x2_c) d^(j, l) base``
    (warps of their own columns; ``_read_warped_partials`` for warps that read
    others)."""
    indices = list(set(indices))
    if not kernel.own_columns:
        return _read_warped_partials(kernel, x1, x2, indices)
    d = x1.shape[-1]
    warped = [kernel.warps[c % d] is not None for c in range(2 * d)]
    tops = [max(index[c] for index in indices) if warped[c] else 0 for c in range(2 * d)]
    points = [x1[..., c] for c in range(d)] + [x2[..., c] for c in range(d)]
    chains = [
        _warp_derivatives(kernel, c % d, x, top) for c, (x, top) in enumerate(zip(points, tops))
    ]
    bells = [
        _bell(chain, top) if warped[c] else None for c, (chain, top) in enumerate(zip(chains, tops))
    ]
    w1 = tf.stack([chains[c][0] for c in range(d)], axis=-1)
    w2 = tf.stack([chains[d + c][0] for c in range(d)], axis=-1)
    base = kernel.kernel
    expansions = {}
    for index in indices:
        ranges = [
            range(1 if m else 0, m + 1) if warped[c] else range(m, m + 1)
            for c, m in enumerate(index)
        ]
        expansions[index] = list(itertools.product(*ranges))
    needed = set()
    for terms in expansions.values():
        for inner in terms:
            needed.add(_base_index(base, inner, d)[0])
    values = _partials(base, w1, w2, needed)
    out = {}
    for index, terms in expansions.items():
        total = None
        for inner in terms:
            key, sign = _base_index(base, inner, d)
            factor = None
            for c, (m, j) in enumerate(zip(index, inner)):
                if m and warped[c]:
                    b = bells[c][m][j]
                    factor = b if factor is None else factor * b
            term = sign * values[key] if factor is None else sign * factor * values[key]
            total = term if total is None else total + term
        out[index] = total
    return out


def _chain_rule(alpha: tuple, inputs: list, warped: list) -> dict:
    """``D^alpha g(W(x)) = sum_gamma C_gamma(x) (d^gamma g)(W(x))`` for a map ``W`` whose
    coordinate ``c`` reads the columns ``inputs[c]`` (``W_c = x_c`` where not
    ``warped[c]``): ``{gamma: {monomial: coefficient}}``, a monomial a sorted tuple of
    factors ``(c, beta)`` standing for ``d^beta W_c``. Built one derivative at a time:
    ``D_i (C d^gamma g) = (D_i C) d^gamma g + C sum_c (D_i W_c) d^(gamma + e_c) g``."""
    return _chain_rule_cached(tuple(alpha), tuple(map(tuple, inputs)), tuple(warped))


@functools.cache
def _chain_rule_cached(alpha: tuple, inputs: tuple, warped: tuple) -> dict:
    d = len(alpha)
    if not any(alpha):
        return {(0,) * d: {(): 1}}
    i = next(c for c in range(d) if alpha[c])
    lower = _chain_rule_cached(tuple(a - (c == i) for c, a in enumerate(alpha)), inputs, warped)
    out = {}

    def add(gamma, monomial, coefficient):
        terms = out.setdefault(gamma, {})
        terms[monomial] = terms.get(monomial, 0) + coefficient

    def raised(index, c):
        return tuple(v + (k == c) for k, v in enumerate(index))

    for gamma, polynomial in lower.items():
        for monomial, coefficient in polynomial.items():
            # (D_i C): the product rule over the monomial's factors.
            for position, (c, beta) in enumerate(monomial):
                if i in inputs[c]:
                    factors = list(monomial)
                    factors[position] = (c, raised(beta, i))
                    add(gamma, tuple(sorted(factors)), coefficient)
            # C (D_i W_c) d^(gamma + e_c) g.
            for c in range(d):
                if not warped[c]:
                    if c == i:
                        add(raised(gamma, c), monomial, coefficient)
                elif i in inputs[c]:
                    factors = tuple(sorted(monomial + ((c, raised((0,) * d, i)),)))
                    add(raised(gamma, c), factors, coefficient)
    return out


def _read_warped_partials(kernel, x1: tf.Tensor, x2: tf.Tensor, indices) -> dict:
    """``warped_partials`` for warps that read other columns than their own (a front
    whose width depends on time): the chain rule through ``W`` (``_chain_rule``) on each
    side, with ``W``'s derivatives by nested tapes on the points, not on pairs."""
    d = x1.shape[-1]
    warped = [w is not None for w in kernel.warps]
    inputs = [kernel.inputs[c] if warped[c] else (c,) for c in range(d)]
    sides = []
    for x, part in ((x1, slice(0, d)), (x2, slice(d, 2 * d))):
        expansions = {index[part]: _chain_rule(index[part], inputs, warped) for index in indices}
        needed = {c: set() for c in range(d) if warped[c]}
        for expansion in expansions.values():
            for polynomial in expansion.values():
                for monomial in polynomial:
                    for c, beta in monomial:
                        needed[c].add(beta)
        columns = [x[..., j] for j in range(d)]
        values, derivatives = [], {}
        for c in range(d):
            if not warped[c]:
                values.append(columns[c])
                continue
            reads = inputs[c]
            betas = [tuple(beta[j] for j in reads) for beta in needed[c]]
            got = partials(
                lambda cols, c=c: kernel.warp_column(c, *cols),
                [columns[j] for j in reads],
                [(0,) * len(reads)] + betas,
            )
            values.append(got[(0,) * len(reads)])
            for beta in needed[c]:
                derivatives[(c, beta)] = got[tuple(beta[j] for j in reads)]
        # Each coefficient C_gamma once per side, whatever pairs of indices share it.
        coefficients = {
            alpha: {gamma: _evaluate(p, derivatives) for gamma, p in expansion.items()}
            for alpha, expansion in expansions.items()
        }
        sides.append((coefficients, tf.stack(values, axis=-1)))
    (left, w1), (right, w2) = sides
    base = kernel.kernel
    needed = set()
    for index in indices:
        for g1 in left[index[:d]]:
            for g2 in right[index[d:]]:
                needed.add(_base_index(base, g1 + g2, d)[0])
    values = _partials(base, w1, w2, needed)
    out = {}
    for index in indices:
        total = None
        for g1, c1 in left[index[:d]].items():
            for g2, c2 in right[index[d:]].items():
                key, sign = _base_index(base, g1 + g2, d)
                term = sign * (c1 * c2) * values[key]
                total = term if total is None else total + term
        out[index] = total
    return out


def _evaluate(polynomial: dict, derivatives: dict):
    """A ``_chain_rule`` coefficient ``{monomial: coefficient}`` at the points, from
    ``{(c, beta): d^beta W_c}``."""
    total = None
    for monomial, coefficient in polynomial.items():
        term = None
        for factor in monomial:
            term = derivatives[factor] if term is None else term * derivatives[factor]
        term = float(coefficient) if term is None else coefficient * term
        total = term if total is None else total + term
    return total


def _base_index(base, inner: tuple, d: int) -> tuple:
    """The base kernel's index and sign for the warped index ``inner`` into
    ``(w1, w2)``: into ``r = w1 - w2`` for a stationary one."""
    if base.stationary:
        right = inner[d:]
        return tuple(a + b for a, b in zip(inner[:d], right)), (-1.0) ** sum(right)
    return tuple(inner), 1.0


#: Whether ``separable_partials`` takes a profile's derivatives from its closed forms
#: (``profile.derivatives``, as ``pigp.kernels.gaussian`` has) where it has them.
CLOSED_FORMS = True


def separable_partials(factors, r: list, indices) -> dict:
    """Partial derivatives of ``k(r) = sum_q w_q prod_c prod_f phi_qcf(a_qcf r_c)`` in ``r``.

    Each profile ``phi`` is differentiated by nested tapes in its own argument
    (no parameters inside, so the graphs stay small), to the highest order its
    column needs: ``d^k/dr^k phi(a r) = a^k phi^(k)(a r)``. The factors of a
    column combine by Leibniz's rule, the columns by multiplication:
    ``d^index k = sum_q w_q prod_c (prod_f phi_qcf(a_qcf r_c))^(index_c)``.

    Args:
        factors: ``[(w_q, [[(a, phi), ...] per column])]``, as ``Kernel.separable``
            returns.
        r: the columns of the difference ``x1 - x2``, tensors of one shape.
        indices: multi-indices (tuples of ``len(r)`` orders).

    Returns:
        dict: ``{index: d^index k}``.
    """
    indices = list(set(indices))
    top = [max(index[c] for index in indices) for c in range(len(r))]
    out = {}
    for weight, columns in factors:
        derivatives = []  # per column: [d^0, d^1, ..., d^top] of the column's product
        for c, column in enumerate(columns):
            wave = _gaussian_wave(column, r[c], top[c]) if CLOSED_FORMS else None
            if wave is not None:
                derivatives.append(wave)
                continue
            product = None
            for scale, profile in column:
                if CLOSED_FORMS and hasattr(profile, "derivatives"):
                    values = profile.derivatives(scale * r[c], top[c])
                else:
                    values = partials(
                        lambda z, profile=profile: profile(z[0]),
                        [scale * r[c]],
                        [(k,) for k in range(top[c] + 1)],
                    )
                    values = [values[(k,)] for k in range(top[c] + 1)]
                these = [values[0]] + [scale**k * values[k] for k in range(1, top[c] + 1)]
                product = these if product is None else _leibniz(product, these)
            derivatives.append(product)
        for index in indices:
            term = weight
            for c, k in enumerate(index):
                term = term * derivatives[c][k]
            out[index] = term if index not in out else out[index] + term
    return out


#: Whether kernels with ``Kernel.radial`` take their partials by ``radial_partials``
#: (else by nested tapes through the whole kernel; the same values to rounding).
RADIAL = True


def radial_partials(weight, inverse: list, profile, r: list, indices) -> dict:
    """Partial derivatives of ``k(r) = w phi(s)``, ``s = sum_c z_c^2``, ``z_c = a_c r_c``.

    The inner function is a sum of one square per column, so (Hermite's formula
    for ``d^n/dz^n phi(z^2)``, column by column)

    ``d^alpha k = w prod_c a_c^alpha_c sum_kappa prod_c [alpha_c! / (kappa_c!
    (alpha_c - 2 kappa_c)!) (2 z_c)^(alpha_c - 2 kappa_c)] phi^(|alpha| - |kappa|)(s)``

    over ``0 <= kappa_c <= alpha_c / 2``. Only ``phi``'s derivatives in its one
    argument are taken by tapes (up to the largest ``|alpha|``); a Matérn profile's
    series near ``s = 0`` keeps each of them finite there.

    Args:
        weight, inverse, profile: as ``Kernel.radial`` returns them.
        r: the columns of the difference ``x1 - x2``, tensors of one shape.
        indices: multi-indices (tuples of ``len(r)`` orders).

    Returns:
        dict: ``{index: d^index k}``.
    """
    indices = list(set(indices))
    z = [a * column for a, column in zip(inverse, r)]
    s = tf.add_n([tf.square(column) for column in z]) if len(z) > 1 else tf.square(z[0])
    top = max(sum(index) for index in indices)
    derivative = partials(lambda v: profile(v[0]), [s], [(m,) for m in range(top + 1)])
    phi = [derivative[(m,)] for m in range(top + 1)]
    powers = []  # per column: [(2 z_c)^0, (2 z_c)^1, ...]
    for c, column in enumerate(z):
        highest = max(index[c] for index in indices)
        these = [None, 2.0 * column]
        for _ in range(2, highest + 1):
            these.append(these[-1] * these[1])
        powers.append(these)
    out = {}
    for index in indices:
        total = None
        for kappa in itertools.product(*(range(n // 2 + 1) for n in index)):
            factor, term = 1, None
            for c, (n, k) in enumerate(zip(index, kappa)):
                factor *= math.factorial(n) // (math.factorial(k) * math.factorial(n - 2 * k))
                if n - 2 * k > 0:
                    term = powers[c][n - 2 * k] if term is None else term * powers[c][n - 2 * k]
            value = phi[sum(index) - sum(kappa)]
            value = factor * (value if term is None else term * value)
            total = value if total is None else total + value
        scale = weight
        for a, n in zip(inverse, index):
            if n:
                scale = scale * a**n
        out[index] = scale * total
    return out


def _gaussian_wave(column, r, order: int) -> list | None:
    """``[h, h', ..., h^(order)]`` of ``h(r) = gaussian(a r) cosine(w r)`` (a spectral
    mixture's column), or None for another column.

    ``h = Re exp(-a^2 r^2 / 2 + i w r)``, and with ``v = a r - i w / a`` the exponent is
    ``-v^2 / 2 - w^2 / (2 a^2)``, so ``h^(k) = Re[(-a)^k He_k(v) exp(-a^2 r^2 / 2 + i w
    r)]`` (Hermite's polynomials at a complex argument): one recurrence in place of
    Leibniz's rule over both factors' derivatives.
    """
    if len(column) != 2 or {profile for _, profile in column} != {gaussian, cosine}:
        return None
    (a, _), (w, _) = sorted(column, key=lambda factor: factor[1] is cosine)
    if not WAVE_GRADIENT:
        real, waves = _complex_wave(a, w, r, order)
        return [real] + [tf.math.real(c) for c in waves[1:]]
    return list(_wave_with_gradient(order)(a, w, r))


#: Whether ``_gaussian_wave``'s derivatives take their gradients in ``a``, ``w`` and
#: ``r`` from closed forms (``_wave_with_gradient``) rather than a reverse pass through
#: the Hermite recurrence.
WAVE_GRADIENT = True


def _complex_wave(a, w, r, order: int) -> tuple:
    """``(h, [C_0, ..., C_order])``: ``h = gaussian(a r) cos(w r)`` and the complex
    derivatives ``C_k = d^k/dr^k E = (-a)^k He_k(a r - i w / a) E`` of ``E = exp(-a^2 r^2
    / 2 + i w r)``, whose real parts are ``h``'s."""
    envelope = gaussian(a * r)
    angle = w * r
    real = envelope * tf.cos(angle)
    h = tf.complex(real, envelope * tf.sin(angle))
    v = tf.complex(a * r, -w / a * tf.ones_like(r))
    polynomials = hermite(v, order)
    scale = _as_complex(-a)
    return real, [h] + [scale**k * polynomials[k] * h for k in range(1, order + 1)]


def _as_complex(x) -> tf.Tensor:
    """``x + 0 i``; its gradient is the real part (``tf.cast``'s would warn that it
    discards the imaginary one)."""
    return tf.complex(x, tf.zeros_like(x))


def _wave_with_gradient(order: int):
    """``(a, w, r) -> [h, h', ..., h^(order)]`` with its gradient in closed form: with
    ``C_k`` of ``_complex_wave``, ``d h^(k)/dr = Re C_(k+1)``, ``d h^(k)/dw = d^k/dr^k
    Re(i r E) = -Im(r C_k + k C_(k-1))`` and ``d h^(k)/da = d^k/dr^k Re(-a r^2 E) = -a
    Re(r^2 C_k + 2 k r C_(k-1) + k (k-1) C_(k-2))``: one more derivative order instead
    of a reverse pass through the recurrence, and differentiable again (second
    derivatives for the Laplace Hessian)."""

    @tf.custom_gradient
    def wave(a, w, r):
        real, C = _complex_wave(a, w, r, order + 1)
        values = [real] + [tf.math.real(C[k]) for k in range(1, order + 1)]

        def gradient(*upstream):
            rc = _as_complex(r)
            d_r, d_w, d_a = None, None, None
            for k, dy in enumerate(upstream):
                if dy is None:
                    continue
                term_r = dy * tf.math.real(C[k + 1])
                inner_w = rc * C[k] + (k * C[k - 1] if k >= 1 else 0)
                inner_a = rc * rc * C[k]
                if k >= 1:
                    inner_a += 2 * k * rc * C[k - 1]
                if k >= 2:
                    inner_a += k * (k - 1) * C[k - 2]
                term_w = -dy * tf.math.imag(inner_w)
                term_a = dy * tf.math.real(inner_a)
                d_r = term_r if d_r is None else d_r + term_r
                d_w = term_w if d_w is None else d_w + term_w
                d_a = term_a if d_a is None else d_a + term_a
            if d_r is None:
                zero = tf.zeros_like(a)
                return zero, tf.zeros_like(w), tf.zeros_like(r)
            return (
                _sum_to(-a * d_a, a),
                _sum_to(d_w, w),
                _sum_to(d_r, r),
            )

        return values, gradient

    return wave


def _sum_to(value, like) -> tf.Tensor:
    """``value`` summed over the axes ``like`` was broadcast along."""
    shape = tf.shape(like)
    axes, _ = tf.raw_ops.BroadcastGradientArgs(s0=shape, s1=tf.shape(value))
    return tf.reshape(tf.reduce_sum(value, axis=axes), shape)


def _leibniz(f: list, g: list) -> list:
    """Derivatives ``(f g)^(k) = sum_j binom(k, j) f^(j) g^(k - j)`` from those of ``f``
    and ``g`` (lists indexed by order)."""
    return [
        tf.add_n([math.comb(k, j) * f[j] * g[k - j] for j in range(k + 1)]) for k in range(len(f))
    ]


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
#: inside TensorFlow's compiled training loop (``pigp.objective``): one setting
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


def _prior_whole(kernel, Xs, terms: list, dtype) -> tf.Tensor:
    """The prior part of ``_joint_whole`` (no noise, no jitter) for the resolved terms
    of each set; with several fields, the sum over fields."""
    sizes = [int(X.shape[0]) for X in Xs]
    if isinstance(kernel, Fields):
        parts = []
        for field, k in kernel.kernels.items():
            on = [on_field(t, field) for t in terms]
            if any(on):
                parts.append(_prior_whole(k, Xs, on, dtype))
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
    values = _partials(kernel, X[:, None, :], X[None, :, :], pairs_of.keys())
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
