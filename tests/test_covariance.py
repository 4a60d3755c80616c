"""Operator blocks against sympy closed forms, finite differences and each other."""

import numpy as np
import pytest
import sympy as sp
import tensorflow as tf
from conftest import se_expr, sympy_block

import pigp
from pigp.kernels.covariance import block, block_diag
from pigp.parameters import softplus

HEAT = lambda alpha: [(1.0, {1: 1}), (-alpha, {0: 2})]  # u_t - alpha u_xx
IDENTITY = [(1.0, {})]


def seed_grids():
    g20, g30 = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
    return np.stack([g20, g20], 1), np.stack([g30, g30], 1)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_seed_configuration_is_finite_and_exact(dtype):
    """The question's 20 x 30 f-f block: finite at [0, 0] and [19, 29], exact everywhere."""
    amplitude, weights = softplus(0.5), softplus([-1.0, -3.0])
    kernel = pigp.kernels.SquaredExponential.from_weights(amplitude, weights)
    terms = pigp.operators.heat(1.0).resolve(2)
    X20, X30 = seed_grids()
    Kff = block(kernel, tf.constant(X20, dtype), tf.constant(X30, dtype), terms, terms).numpy()
    reference = sympy_block(se_expr(amplitude**2, 1 / np.sqrt(weights)), HEAT(1.0), HEAT(1.0), 2)(
        X20, X30
    )
    assert Kff.shape == (20, 30)
    assert np.all(np.isfinite(Kff))
    tol = 1e-12 if dtype == tf.float64 else 2e-6
    for i, j in [(0, 0), (19, 29)]:  # the coincident corners that went NaN
        assert X20[i] == pytest.approx(X30[j])
        assert Kff[i, j] == pytest.approx(reference[i, j], rel=tol)
    np.testing.assert_allclose(Kff, reference, rtol=tol, atol=tol * np.abs(reference).max())


def test_pow_two_is_what_made_the_seed_nan():
    """``a**2`` has a NaN third derivative at a = 0; ``tf.square`` does not."""
    a = tf.constant([0.0, 0.5], tf.float64)

    def third(square):
        with tf.GradientTape() as t3:
            t3.watch(a)
            with tf.GradientTape() as t2:
                t2.watch(a)
                with tf.GradientTape() as t1:
                    t1.watch(a)
                    y = square(a)
                d1 = t1.gradient(y, a)
            d2 = t2.gradient(d1, a)
        return t3.gradient(d2, a, unconnected_gradients="zero").numpy()

    assert np.isnan(third(lambda v: v**2)[0])
    np.testing.assert_array_equal(third(tf.square), [0.0, 0.0])


@pytest.mark.parametrize("left,right", [("u", "u"), ("u", "f"), ("f", "u"), ("f", "f")])
def test_heat_blocks_match_sympy(rng, left, right):
    alpha, variance, lengthscales = 0.7, 1.3, np.array([0.4, 0.9])
    kernel = pigp.kernels.SquaredExponential(variance, lengthscales)
    ops = {"u": IDENTITY, "f": HEAT(alpha)}
    terms = {"u": pigp.Identity.resolve(2), "f": pigp.operators.heat(alpha).resolve(2)}
    X1 = rng.uniform(size=(7, 2))
    X2 = np.concatenate([rng.uniform(size=(4, 2)), X1[:3]])  # distinct and coincident pairs
    K = block(kernel, tf.constant(X1), tf.constant(X2), terms[left], terms[right]).numpy()
    reference = sympy_block(se_expr(variance, lengthscales), ops[left], ops[right], 2)(X1, X2)
    np.testing.assert_allclose(K, reference, rtol=1e-11, atol=1e-12)


def test_cross_block_matches_finite_differences(rng):
    """K_uf[i, j] = (d/dt' - alpha d^2/dx'^2) k(z_i, z'_j) by central differences."""
    alpha = 0.7
    kernel = pigp.kernels.SquaredExponential(1.0, np.array([0.5, 0.8]))
    X1, X2 = rng.uniform(size=(5, 2)), rng.uniform(size=(6, 2))
    Kuf = block(
        kernel,
        tf.constant(X1),
        tf.constant(X2),
        pigp.Identity.resolve(2),
        pigp.operators.heat(alpha).resolve(2),
    ).numpy()
    h = 1e-4
    k = lambda B: kernel(X1, B).numpy()
    shift = lambda c, s: X2 + s * h * np.eye(2)[c]
    k_t = (k(shift(1, 1)) - k(shift(1, -1))) / (2 * h)
    k_xx = (k(shift(0, 1)) - 2 * k(X2) + k(shift(0, -1))) / h**2
    np.testing.assert_allclose(Kuf, k_t - alpha * k_xx, rtol=1e-6, atol=1e-7)


def test_block_symmetry_and_diagonal(rng):
    kernel = pigp.kernels.SquaredExponential(1.0, np.array([0.3, 0.6]))
    f = pigp.operators.heat(1.0).resolve(2)
    u = pigp.Identity.resolve(2)
    X1, X2 = tf.constant(rng.uniform(size=(6, 2))), tf.constant(rng.uniform(size=(9, 2)))
    np.testing.assert_allclose(
        block(kernel, X1, X2, f, u).numpy(),
        block(kernel, X2, X1, u, f).numpy().T,
        rtol=1e-13,
        atol=1e-13,
    )
    np.testing.assert_allclose(
        block_diag(kernel, X1, f, f).numpy(),
        np.diag(block(kernel, X1, X1, f, f).numpy()),
        rtol=1e-13,
    )


def test_non_stationary_path_matches_stationary(rng):
    """A kernel given as a plain pair function (both arguments differentiated)
    gives the same blocks as the stationary sign trick."""
    lengthscales = np.array([0.5, 0.7])

    def se(x1, x2, variance):
        return variance * tf.exp(-0.5 * tf.reduce_sum(tf.square((x1 - x2) / lengthscales), -1))

    custom = pigp.kernels.Custom(se, {"variance": 1.5})
    builtin = pigp.kernels.SquaredExponential(1.5, lengthscales)
    f = pigp.operators.heat(0.4).resolve(2)
    X1, X2 = tf.constant(rng.uniform(size=(5, 2))), tf.constant(rng.uniform(size=(4, 2)))
    np.testing.assert_allclose(
        block(custom, X1, X2, f, f).numpy(), block(builtin, X1, X2, f, f).numpy(), rtol=1e-11
    )


def test_non_stationary_kernel_matches_sympy(rng):
    """``k = (1 + x1 . x2) * SE``: derivatives in both arguments differ."""
    import sympy as sp

    def poly_se(x1, x2, variance):
        dot = 1.0 + tf.reduce_sum(x1 * x2, -1)
        return variance * dot * tf.exp(-0.5 * tf.reduce_sum(tf.square(x1 - x2), -1))

    kernel = pigp.kernels.Custom(poly_se, {"variance": 0.8})
    expr = lambda z1, z2: (
        0.8
        * (1 + sum(a * b for a, b in zip(z1, z2)))
        * sp.exp(-sum((a - b) ** 2 for a, b in zip(z1, z2)) / 2)
    )
    terms = pigp.operators.heat(0.5).resolve(2)
    X1 = rng.uniform(size=(4, 2))
    X2 = np.concatenate([rng.uniform(size=(3, 2)), X1[:2]])
    K = block(kernel, tf.constant(X1), tf.constant(X2), terms, terms).numpy()
    reference = sympy_block(expr, HEAT(0.5), HEAT(0.5), 2)(X1, X2)
    np.testing.assert_allclose(K, reference, rtol=1e-11, atol=1e-12)


def test_joint_matrix_is_symmetric_positive_definite(rng):
    X_u, X_f = rng.uniform(size=(10, 2)), rng.uniform(size=(15, 2))
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.0, [0.5, 0.5]),
        pigp.operators.heat(1.0),
        noise_u=1e-8,
        noise_f=1e-8,
    )
    model.fit(X_u, np.sin(X_u[:, 0]), X_f, np.cos(X_f[:, 1]), steps=0)
    K = pigp.kernels.covariance.joint(
        model.kernel, model.data.tensors(model.dtype)[0], model.data.sets, model.jitter, model.dtype
    ).numpy()
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-12 * np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() > -1e-10 * np.abs(K).max()


def _generic(kernel):
    """The same kernel with the one-column factorisation switched off."""
    kernel.separable = lambda dtype: None
    return kernel


SEPARABLE = {
    "se": lambda: pigp.kernels.SquaredExponential(1.3, [0.4, 0.7]),
    "sm": lambda: pigp.kernels.SpectralMixture(
        2, [0.6, 1.1], [[0.4, 0.7], [1.2, 0.3]], [[1.1, 0.2], [0.3, 0.9]]
    ),
    "sum": lambda: (
        pigp.kernels.SquaredExponential(1.3, [0.4, 0.7])
        + pigp.kernels.SpectralMixture(1, 0.5, [0.6, 0.9], [0.8, 0.4])
    ),
    "product": lambda: (
        pigp.kernels.SquaredExponential(1.3, [0.4, 0.7])
        * pigp.kernels.SpectralMixture(1, 0.5, [0.6, 0.9], [0.8, 0.4])
    ),
}


@pytest.mark.parametrize("name", SEPARABLE)
def test_separable_path_matches_the_whole_kernel_differentiated(rng, name):
    """Derivatives of one-column factors, multiplied, equal the tapes through the
    whole kernel, at distinct and at coincident points (fourth order in x)."""
    fast, slow = SEPARABLE[name](), _generic(SEPARABLE[name]())
    for kernel in (fast, slow):
        kernel.build(np.zeros((2, 2)))
    assert fast.separable(tf.float64) is not None
    f = pigp.operators.heat(0.7).resolve(2)
    u = pigp.Identity.resolve(2)
    X1 = rng.uniform(size=(5, 2))
    X2 = np.concatenate([rng.uniform(size=(3, 2)), X1[:2]])  # two coincident pairs
    for left, right in [(u, u), (u, f), (f, u), (f, f)]:
        a = block(fast, tf.constant(X1), tf.constant(X2), left, right).numpy()
        b = block(slow, tf.constant(X1), tf.constant(X2), left, right).numpy()
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * np.abs(b).max())
    np.testing.assert_allclose(
        block_diag(fast, tf.constant(X1), f, f).numpy(),
        block_diag(slow, tf.constant(X1), f, f).numpy(),
        rtol=1e-11,
    )


def conductivity(X):
    """a(x, t) = 1 + x^2 + 0.5 sin(t), a coefficient that varies from point to point."""
    return 1.0 + tf.square(X[:, 0]) + 0.5 * tf.sin(X[:, 1])


def velocity(X):
    """c(x, t) = cos(x) - t."""
    return tf.cos(X[:, 0]) - X[:, 1]


def test_coefficients_that_vary_match_sympy(rng):
    """``a(x) u_xx + 2 u_t`` against ``c(x') u_x' - u``, with a and c functions of the points:
    each block ``sum_ab c_a(x_i) c_b(x_j) D_a D'_b k`` against sympy, and ``block_diag``
    against the block's diagonal."""
    import sympy as sp
    from conftest import X1S, X2S

    kernel = pigp.kernels.SquaredExponential(1.3, [0.7, 0.4])
    D = pigp.operators.D
    left = (conductivity * D(0, 2) + 2.0 * D(1)).resolve(2)
    right = (velocity * D(0) - pigp.operators.Identity).resolve(2)
    a = 1 + X1S[0] ** 2 + sp.Rational(1, 2) * sp.sin(X1S[1])
    c = sp.cos(X2S[0]) - X2S[1]
    reference = sympy_block(
        se_expr(1.3, [0.7, 0.4]), [(a, {0: 2}), (2.0, {1: 1})], [(c, {0: 1}), (-1.0, {})], 2
    )
    X1, X2 = rng.uniform(size=(6, 2)), rng.uniform(size=(5, 2))
    K = block(kernel, tf.constant(X1), tf.constant(X2), left, right).numpy()
    np.testing.assert_allclose(K, reference(X1, X2), rtol=1e-12, atol=1e-12)
    diag = block_diag(kernel, tf.constant(X1), left, right).numpy()
    np.testing.assert_allclose(
        diag,
        block(kernel, tf.constant(X1), tf.constant(X1), left, right).numpy().diagonal(),
        rtol=1e-13,
    )


def test_whole_matrix_and_blocks_agree_with_coefficients_that_vary(rng):
    """The joint K of sets with a coefficient that varies (times a parameter, and
    beside constant ones) is the same on the whole matrix as block by block."""
    from types import SimpleNamespace

    from pigp.kernels.covariance import _joint_whole, joint_blocks

    kernel = pigp.kernels.SquaredExponential(1.0, [0.5, 0.8])
    D = pigp.operators.D
    scale = pigp.Parameter(1.7)
    operators = [
        pigp.operators.Identity,
        (scale * conductivity) * D(0, 2) - D(1),
        velocity * D(0) + 0.5 * pigp.operators.Identity,
    ]
    sets = [
        SimpleNamespace(terms=op.resolve(2), noise=pigp.Parameter(1e-3, positive=True))
        for op in operators
    ]
    Xs = [tf.constant(rng.uniform(size=(n, 2))) for n in (4, 6, 5)]
    whole = _joint_whole(kernel, Xs, sets, 1e-12, tf.float64).numpy()
    upper = joint_blocks(kernel, Xs, sets, 1e-12, tf.float64)
    starts = np.cumsum([0, 4, 6, 5])
    for (i, j), Kij in upper.items():
        np.testing.assert_allclose(
            whole[starts[i] : starts[i + 1], starts[j] : starts[j + 1]],
            Kij.numpy(),
            rtol=1e-12,
            atol=1e-12,
        )
    np.testing.assert_array_equal(whole, whole.T)
    assert np.all(np.linalg.eigvalsh(whole) > 0)


@pytest.mark.parametrize(
    "base, warp", [("rq", "own"), ("se", "own"), ("rq", "steepening"), ("se", "forming")]
)
def test_warped_kernel_blocks_match_sympy(rng, base, warp):
    """``base(w(x1), w(x2))`` with ``w = x + 0.5 tanh(x / 0.1)`` on the first column
    (``"steepening"``: the width ``0.1 exp(-0.7 t)``, a warp of x that reads t;
    ``"forming"``: the width ``0.1 (1 + 3 exp(-0.7 t))``, centred at 0.05): the
    chain rule through the warp against sympy's derivatives of the composed kernel,
    up to fourth order in the warped column (u_xx against u_xx) and mixed with the
    other, at coincident points too."""
    import sympy as sp

    strength, width, rate = 0.5, 0.1, 0.7
    if base == "rq":
        inner = pigp.kernels.RationalQuadratic(1.3, [0.3, 0.4], 0.8)

        def profile(s):
            return 1.3 * (1 + s / (2 * 0.8)) ** -0.8

    else:
        inner = pigp.kernels.SquaredExponential(1.3, [0.3, 0.4])

        def profile(s):
            return 1.3 * sp.exp(-s / 2)

    if warp == "own":
        kernel = pigp.kernels.Warped(
            inner, [pigp.kernels.tanh_front, None], {"strength": strength, "width": width}
        )
    elif warp == "steepening":
        kernel = pigp.kernels.Warped(
            inner,
            [pigp.kernels.steepening_front, None],
            {"strength": strength, "width": width, "rate": rate},
            inputs=[(0, 1), None],
        )
    else:
        kernel = pigp.kernels.Warped(
            inner,
            [pigp.kernels.forming_front, None],
            {"strength": strength, "width": width, "rate": rate, "ratio": 3.0, "center": 0.05},
            inputs=[(0, 1), None],
        )

    def expr(z1, z2):
        if warp == "own":
            w = lambda x, t: x + strength * sp.tanh(x / width)
        elif warp == "steepening":
            w = lambda x, t: x + strength * sp.tanh(x / (width * sp.exp(-rate * t)))
        else:
            w = lambda x, t: (
                x + strength * sp.tanh((x - 0.05) / (width * (1 + 3 * sp.exp(-rate * t))))
            )
        s = ((w(*z1) - w(*z2)) / 0.3) ** 2 + ((z1[1] - z2[1]) / 0.4) ** 2
        return profile(s)

    burgers_like = [(1.0, {1: 1}), (0.7, {0: 1}), (-0.02, {0: 2})]
    mixed = [(1.0, {0: 2, 1: 1})]
    operators = {"identity": IDENTITY, "burgers": burgers_like, "mixed": mixed}
    D = pigp.operators.D
    resolved = {
        "identity": pigp.operators.Identity.resolve(2),
        "burgers": (D(1) + 0.7 * D(0) - 0.02 * D(0, 2)).resolve(2),
        "mixed": (D(0, 2) @ D(1)).resolve(2),
    }
    X1 = rng.uniform(-0.3, 0.3, size=(4, 2))
    X2 = np.concatenate([rng.uniform(-0.3, 0.3, size=(3, 2)), X1[:2]])
    for a in operators:
        for b in operators:
            K = block(kernel, tf.constant(X1), tf.constant(X2), resolved[a], resolved[b]).numpy()
            reference = sympy_block(expr, operators[a], operators[b], 2)(X1, X2)
            np.testing.assert_allclose(
                K, reference, rtol=1e-10, atol=1e-10 * np.abs(reference).max(), err_msg=f"{a}, {b}"
            )


@pytest.mark.parametrize("rate", [0.8, -0.5])
@pytest.mark.parametrize("left,right", [("u", "u"), ("u", "f"), ("f", "u"), ("f", "f")])
def test_decaying_blocks_match_sympy(rng, rate, left, right):
    """``Decaying``: exp(-rate (t1 + t2)) k_SE, its heat blocks by Leibniz's rule on the
    base's closed forms, against sympy's derivatives of the whole product."""
    alpha, variance, lengthscales = 0.7, 1.3, np.array([0.4, 0.9])
    kernel = pigp.kernels.Decaying(pigp.kernels.SquaredExponential(variance, lengthscales), 1, rate)
    se = se_expr(variance, lengthscales)
    product = lambda z1, z2: sp.exp(-rate * (z1[1] + z2[1])) * se(z1, z2)
    ops = {"u": IDENTITY, "f": HEAT(alpha)}
    terms = {"u": pigp.Identity.resolve(2), "f": pigp.operators.heat(alpha).resolve(2)}
    X1 = rng.uniform(size=(6, 2))
    X2 = np.concatenate([rng.uniform(size=(4, 2)), X1[:3]])  # distinct and coincident pairs
    K = block(kernel, tf.constant(X1), tf.constant(X2), terms[left], terms[right]).numpy()
    closed_form = sympy_block(product, ops[left], ops[right], 2)
    np.testing.assert_allclose(K, closed_form(X1, X2), rtol=1e-11, atol=1e-12)
    if left == right:
        diagonal = block_diag(kernel, tf.constant(X1), terms[left], terms[left]).numpy()
        np.testing.assert_allclose(diagonal, np.diag(closed_form(X1, X1)), rtol=1e-11)
