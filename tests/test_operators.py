"""Operator algebra: resolution to multi-indices, composition, application to functions."""

import numpy as np
import pytest
import tensorflow as tf

import pigp
from pigp.kernels.covariance import block
from pigp.operators import D, Identity, apply, heat, laplacian


def as_dict(terms):
    out = {}
    for c, index in terms:
        out[index] = out.get(index, 0.0) + c.numpy()
    return out


def test_heat_resolves_to_its_terms():
    assert as_dict(heat(0.3).resolve(2)) == {(0, 1): 1.0, (2, 0): -0.3}
    assert heat(1.0).order == 2


def test_names_indices_and_mixed_derivatives():
    L = (D({"x": 1, "t": 1}) + 2 * D("y", 2) - D(0)).with_dims("x", "y", "t")
    assert as_dict(L.resolve(3)) == {(1, 0, 1): 1.0, (0, 2, 0): 2.0, (1, 0, 0): -1.0}


def test_composition_multiplies_terms():
    L = (D("x") + 3 * Identity) @ (D("x") - 3 * Identity)  # d_xx - 9
    assert as_dict(L.with_dims("x").resolve(1)) == {(2,): 1.0, (1,): 0.0, (0,): -9.0}


def test_parameter_coefficients_are_live():
    c = pigp.Parameter(2.0, name="c")
    wave = (D("t", 2) - c**2 * D("x", 2)).with_dims("x", "t")
    assert as_dict(wave.resolve(2)) == {(0, 2): 1.0, (2, 0): -4.0}
    c.assign(3.0)
    assert as_dict(wave.resolve(2)) == {(0, 2): 1.0, (2, 0): -9.0}
    assert wave.parameters == [c]


def test_dimension_errors_name_the_problem():
    with pytest.raises(ValueError, match="not among"):
        D("z").with_dims("x", "t").resolve(2)
    with pytest.raises(ValueError, match="declare the column names"):
        D("x").resolve(2)
    with pytest.raises(ValueError, match="X has 2"):
        D(3).resolve(2)
    with pytest.raises(ValueError, match="2 columns, but X has 3"):
        heat(1.0).resolve(3)


def test_apply_matches_closed_form(rng):
    X = rng.uniform(size=(10, 2))
    u = lambda Z: tf.exp(-Z[:, 1]) * tf.sin(np.pi * Z[:, 0])
    f = apply(heat(0.5), u, X)
    expected = (0.5 * np.pi**2 - 1) * np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
    np.testing.assert_allclose(f, expected, rtol=1e-12)


def test_operator_blocks_match_hand_derived_heat_blocks(rng):
    """Blocks of D-algebra operators equal the hand-derived SE heat blocks:
    K_ff = (1/lt^2 - rt^2/lt^4) k + alpha^2 (rx^4/lx^8 - 6 rx^2/lx^6 + 3/lx^4) k."""
    alpha, lx, lt = 0.8, 0.4, 0.7
    kernel = pigp.kernels.SquaredExponential(1.0, [lx, lt])
    L = (D("t") - alpha * D("x", 2)).with_dims("x", "t")
    X1, X2 = rng.uniform(size=(5, 2)), rng.uniform(size=(7, 2))
    K = block(kernel, tf.constant(X1), tf.constant(X2), L.resolve(2), L.resolve(2)).numpy()
    rx = X1[:, None, 0] - X2[None, :, 0]
    rt = X1[:, None, 1] - X2[None, :, 1]
    k = np.exp(-(rx**2) / (2 * lx**2) - rt**2 / (2 * lt**2))
    hand = k * (1 / lt**2 - rt**2 / lt**4) + alpha**2 * k * (
        rx**4 / lx**8 - 6 * rx**2 / lx**6 + 3 / lx**4
    )
    np.testing.assert_allclose(K, hand, rtol=1e-12, atol=1e-12)


def test_laplacian():
    assert as_dict(laplacian("x", "y").with_dims("x", "y").resolve(2)) == {(2, 0): 1.0, (0, 2): 1.0}


def test_a_varying_coefficient_is_not_differentiated_by_composition():
    """``D(x) @ (a D(x))`` would need a'(x): refused, with the product rule to write."""
    a = lambda X: 1.0 + X[:, 0]  # noqa: E731
    with pytest.raises(ValueError, match="product rule"):
        D(0) @ (a * D(0))
    # On the right of a composition without derivatives, or with constant coefficients: fine.
    assert len(((a * D(0)) @ D(0)).terms) == 1
    assert len((2.0 * Identity @ (a * D(0))).terms) == 1


def test_apply_evaluates_a_varying_coefficient_at_the_points(rng):
    """(a u')(x) for u = sin(2 x), a = 1 + x^2, against the closed form."""
    X = rng.uniform(size=(7, 1))
    a = lambda X: 1.0 + tf.square(X[:, 0])  # noqa: E731
    values = pigp.operators.apply(a * D(0), lambda X: tf.sin(2.0 * X[:, 0]), X)
    np.testing.assert_allclose(values, (1 + X[:, 0] ** 2) * 2 * np.cos(2 * X[:, 0]), rtol=1e-13)
