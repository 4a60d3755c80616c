"""Property-based tests (Hypothesis) of the operator blocks and the joint covariance.

Random kernels, hyper-parameters, operators and point sets, including duplicated
points and points 1e-8 apart: blocks are finite and match finite differences,
cross blocks are transposes of each other, the joint matrix is symmetric
positive semi-definite up to round-off, predictions are finite, and float32
agrees with float64 to float32 precision.
"""

import numpy as np
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pigp
from pigp.kernels.covariance import block
from pigp.operators import D, Identity

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def spectral_mixture(variance, lengthscales):
    kernel = pigp.kernels.SpectralMixture(
        2,
        [0.5 * variance, 0.5 * variance],
        np.array([lengthscales, lengthscales[::-1]]),
        np.array([[0.4, 0.9], [1.3, 0.2]]),
    )
    kernel.build(np.zeros((2, 2)))
    return kernel


# (name, kernel factory, smoothness order)
KERNELS = [
    ("se", lambda v, ls: pigp.kernels.SquaredExponential(v, ls), 4),
    ("matern52", lambda v, ls: pigp.kernels.Matern52(v, ls), 2),
    ("matern72", lambda v, ls: pigp.kernels.Matern72(v, ls), 3),
    ("rq", lambda v, ls: pigp.kernels.RationalQuadratic(v, ls, alpha=1.5), 4),
    (
        "se+matern72",
        lambda v, ls: pigp.kernels.SquaredExponential(v, ls) + pigp.kernels.Matern72(0.5, ls),
        3,
    ),
    (
        "se*rq",
        lambda v, ls: (
            pigp.kernels.SquaredExponential(v, ls) * pigp.kernels.RationalQuadratic(1.0, ls)
        ),
        4,
    ),
    ("spectral_mixture", spectral_mixture, 4),
]

# Operators on (x0, x1), by the order they need.
OPERATORS = [
    (0, lambda c: Identity),
    (1, lambda c: D(0)),
    (1, lambda c: c * D(1) + Identity),
    (2, lambda c: D(1) - c * D(0, 2)),  # heat
    (2, lambda c: D({0: 1, 1: 1})),
    (2, lambda c: D(0, 2) + D(1, 2) + c * Identity),  # Helmholtz
]


@st.composite
def kernels(draw):
    name, make, order = draw(st.sampled_from(KERNELS))
    variance = draw(st.floats(0.1, 10.0))
    lengthscales = draw(st.lists(st.floats(0.3, 3.0), min_size=2, max_size=2))
    return name, make(variance, lengthscales), order


@st.composite
def operators(draw, max_order):
    order, make = draw(st.sampled_from([o for o in OPERATORS if o[0] <= max_order]))
    return make(draw(st.floats(0.1, 3.0)))


@st.composite
def point_sets(draw, min_size=1, max_size=6):
    """2-D points in [0, 1]^2, some duplicated, some 1e-8 apart."""
    n = draw(st.integers(min_size, max_size))
    X = np.array(
        draw(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=n, max_size=n))
    )
    kind = draw(st.sampled_from(["plain", "duplicate", "near"]))
    if kind == "duplicate":
        X = np.concatenate([X, X[:1]])
    elif kind == "near":
        X = np.concatenate([X, X[:1] + 1e-8])
    return X


@st.composite
def cross_blocks(draw):
    """A kernel, two operators it is smooth enough for, and two point sets."""
    _, kernel, order = draw(kernels())
    return (
        kernel,
        draw(operators(order // 2)),
        draw(operators(order // 2)),
        draw(point_sets()),
        draw(point_sets()),
    )


def _block(kernel, X1, X2, left, right, dtype=tf.float64):
    return block(
        kernel, tf.constant(X1, dtype), tf.constant(X2, dtype), left.resolve(2), right.resolve(2)
    ).numpy()


def _bound(kernel, left, right):
    """``sqrt(var(L u) var(M u))`` at one point: by Cauchy-Schwarz no entry of the
    (stationary) block cov(L u, M u) exceeds it, so it scales the tolerances."""
    x = np.zeros((1, 2))
    return float(
        np.sqrt(_block(kernel, x, x, left, left)[0, 0] * _block(kernel, x, x, right, right)[0, 0])
    )


@SETTINGS
@given(data=st.data())
def test_cross_blocks_are_finite_transposes(data):
    kernel, left, right, X1, X2 = data.draw(cross_blocks())
    K12 = _block(kernel, X1, X2, left, right)
    K21 = _block(kernel, X2, X1, right, left)
    assert np.all(np.isfinite(K12))
    np.testing.assert_allclose(K12, K21.T, rtol=0, atol=1e-12 * _bound(kernel, left, right))


@SETTINGS
@given(data=st.data())
def test_joint_matrix_is_symmetric_psd(data):
    _, kernel, order = data.draw(kernels())
    ops = [Identity, data.draw(operators(order // 2))]
    sets = [data.draw(point_sets()), data.draw(point_sets())]
    rows = [
        np.concatenate([_block(kernel, Xi, Xj, Li, Lj) for Xj, Lj in zip(sets, ops)], 1)
        for Xi, Li in zip(sets, ops)
    ]
    K = np.concatenate(rows, 0)
    scale = np.abs(K).max()
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-10 * scale)
    assert np.linalg.eigvalsh(0.5 * (K + K.T)).min() >= -1e-8 * scale


@SETTINGS
@given(data=st.data())
def test_first_derivative_blocks_match_finite_differences(data):
    _, kernel, order = data.draw(kernels())
    right = data.draw(operators(order // 2 - (order // 2 > 1)))
    column = data.draw(st.integers(0, 1))
    X1, X2 = data.draw(point_sets(max_size=4)), data.draw(point_sets(max_size=4))
    h = 1e-5
    step = np.zeros(2)
    step[column] = h
    exact = _block(kernel, X1, X2, D(column), right)
    plus = _block(kernel, X1 + step, X2, Identity, right)
    minus = _block(kernel, X1 - step, X2, Identity, right)
    fd = (plus - minus) / (2 * h)
    np.testing.assert_allclose(exact, fd, rtol=0, atol=1e-6 * _bound(kernel, D(column), right))


@SETTINGS
@given(data=st.data())
def test_float32_agrees_with_float64(data):
    kernel, left, right, X1, X2 = data.draw(cross_blocks())
    K64 = _block(kernel, X1, X2, left, right)
    K32 = _block(kernel, X1, X2, left, right, tf.float32)
    assert np.all(np.isfinite(K32))
    np.testing.assert_allclose(K32, K64, rtol=0, atol=1e-4 * _bound(kernel, left, right))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_predictions_are_finite(data):
    _, kernel, order = data.draw(kernels())
    operator = data.draw(operators(order // 2))
    X_u, X_f = data.draw(point_sets(min_size=2)), data.draw(point_sets(min_size=2))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    model = pigp.PIGP(kernel, operator)
    model.fit(
        X_u, rng.normal(size=len(X_u)), X_f, rng.normal(size=len(X_f)), steps=0, optimizer="adam"
    )
    X = np.concatenate([X_u, X_f, rng.uniform(size=(10, 2))])
    for output in ("u", "f"):
        mean, var = model.predict(X, output=output)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var >= 0)
