"""Entry-wise partial derivatives by nested ``tf.GradientTape``.

``tape.gradient(y, x)`` differentiates ``sum(y)``. When every entry of ``y``
depends only on the same entry of each input column (pair tensors: each entry
of a Gram matrix has its own copy of its two points), the gradient of the sum
*is* the entry-wise derivative. Nesting tapes gives higher orders.

``kernel_partials`` takes a kernel's partial derivatives at pair tensors for the
operator blocks (``pigp.kernels.covariance``): by closed forms where the kernel has them
(``separable_partials`` for sums of products of one-column profiles,
``radial_partials`` for a profile of the scaled squared distance), by Leibniz's rule
for ``Decaying``, by Faa di Bruno's formula for ``Warped``, and by nested tapes
(``partials``) otherwise.
"""

from __future__ import annotations

import functools
import itertools
import math

from .._tensorflow import tf
from .base import cosine, gaussian, hermite
from .library import Decaying, Warped

__all__ = [
    "partials",
    "kernel_partials",
    "decaying_partials",
    "warped_partials",
    "separable_partials",
    "radial_partials",
]


def _parent(index: tuple):
    """The multi-index one derivative lower, and the column of that derivative."""
    for column in reversed(range(len(index))):
        if index[column]:
            parent = list(index)
            parent[column] -= 1
            return tuple(parent), column
    return None, None


def partials(function, columns: list, indices) -> dict:
    """Partial derivatives of ``function(columns)`` for each multi-index in ``indices``.

    Args:
        function: maps a list of same-shaped tensors (one per variable) to a
            tensor of that shape, entry by entry.
        columns: the variables, a list of tensors of one shape.
        indices: multi-indices (tuples of ``len(columns)`` orders).

    Returns:
        dict: ``{index: d^|index| function / d columns^index}``, tensors of the shape
        of the columns. One tape level is opened per derivative order, and each
        level differentiates only what the next level needs.
    """
    indices = set(indices)
    if all(sum(index) == 0 for index in indices):
        value = function(columns)
        return {index: value for index in indices}
    steps = {index: _parent(index) for index in indices}
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(columns)
        lower = partials(
            function,
            columns,
            {parent if parent is not None else index for index, (parent, _) in steps.items()},
        )
    out = {}
    for index, (parent, column) in steps.items():
        if parent is None:
            out[index] = lower[index]
        else:
            out[index] = tape.gradient(
                lower[parent], columns[column], unconnected_gradients=tf.UnconnectedGradients.ZERO
            )
    del tape
    return out


def kernel_partials(kernel, x1: tf.Tensor, x2: tf.Tensor, indices) -> dict:
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
    values = kernel_partials(base, x1, x2, needed)
    powers = [tf.ones([], x1.dtype)]  # (-rate)^j by products: pow's gradient at 0 is NaN
    for _ in range(max(power for plan in plans.values() for _, power, _ in plan)):
        powers.append(powers[-1] * -kernel.rate.value(x1.dtype))
    amplitude = kernel.amplitude(x1) * kernel.amplitude(x2)
    return {
        index: amplitude
        * tf.add_n([weight * powers[power] * values[key] for weight, power, key in plan])
        for index, plan in plans.items()
    }


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
    values = kernel_partials(base, w1, w2, needed)
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
    values = kernel_partials(base, w1, w2, needed)
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
#: (``profile.derivatives``, as ``pigp.kernels.base.gaussian`` has) where it has them.
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
