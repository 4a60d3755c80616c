"""Kernels: values, operator blocks at distinct and coincident points, smoothness checks."""

import numpy as np
import pytest
import sympy as sp
import tensorflow as tf
from conftest import sympy_block

import pigp
from pigp.kernels.covariance import block

HEAT = [(1.0, {1: 1}), (-0.6, {0: 2})]
IDENTITY = [(1.0, {})]
LENGTHSCALES = np.array([0.45, 0.8])
VARIANCE = 1.7


def scaled_s(z1, z2):
    return sum(((a - b) / ell) ** 2 for a, b, ell in zip(z1, z2, LENGTHSCALES))


def matern52(z1, z2):
    y = sp.sqrt(5 * scaled_s(z1, z2))
    return VARIANCE * (1 + y + y**2 / 3) * sp.exp(-y)


def matern72(z1, z2):
    y = sp.sqrt(7 * scaled_s(z1, z2))
    return VARIANCE * (1 + y + 2 * y**2 / 5 + y**3 / 15) * sp.exp(-y)


def rational_quadratic(z1, z2):
    return VARIANCE * (1 + scaled_s(z1, z2) / (2 * 1.5)) ** -1.5


# At r = 0 the derivatives a Matern kernel has are those of its series' even part.
def matern52_at_zero(z1, z2):
    s = scaled_s(z1, z2)
    return VARIANCE * (1 - 5 * s / 6 + 25 * s**2 / 24)


def matern72_at_zero(z1, z2):
    s = scaled_s(z1, z2)
    return VARIANCE * (1 - 7 * s / 10 + 49 * s**2 / 120 - 343 * s**3 / 720)


SM_WEIGHTS = (0.7, 1.3)
SM_LENGTHSCALES = ((0.45, 0.8), (1.2, 0.35))
SM_FREQUENCIES = ((1.1, 0.2), (0.3, 0.9))


def spectral_mixture(z1, z2):
    return sum(
        w
        * sp.exp(-sum(((a - b) / ell) ** 2 for a, b, ell in zip(z1, z2, ls)) / 2)
        * sp.Mul(*[sp.cos(2 * sp.pi * m * (a - b)) for a, b, m in zip(z1, z2, ms)])
        for w, ls, ms in zip(SM_WEIGHTS, SM_LENGTHSCALES, SM_FREQUENCIES)
    )


def make_spectral_mixture():
    kernel = pigp.kernels.SpectralMixture(
        2, SM_WEIGHTS, np.array(SM_LENGTHSCALES), np.array(SM_FREQUENCIES)
    )
    kernel.build(np.zeros((3, 2)))
    return kernel


KERNELS = {
    "matern52": (lambda: pigp.kernels.Matern52(VARIANCE, LENGTHSCALES), matern52, matern52_at_zero),
    "matern72": (lambda: pigp.kernels.Matern72(VARIANCE, LENGTHSCALES), matern72, matern72_at_zero),
    "rq": (
        lambda: pigp.kernels.RationalQuadratic(VARIANCE, LENGTHSCALES, alpha=1.5),
        rational_quadratic,
        rational_quadratic,
    ),
    "spectral_mixture": (make_spectral_mixture, spectral_mixture, spectral_mixture),
}


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("ops", [(IDENTITY, IDENTITY), (IDENTITY, HEAT), (HEAT, HEAT)])
def test_blocks_at_distinct_points_match_sympy(rng, name, ops):
    make, expr, _ = KERNELS[name]
    X1, X2 = rng.uniform(size=(5, 2)), rng.uniform(size=(6, 2))
    terms = [
        [(pigp.Coefficient(c), tuple(o.get(i, 0) for i in range(2))) for c, o in op] for op in ops
    ]
    K = block(make(), tf.constant(X1), tf.constant(X2), *terms).numpy()
    reference = sympy_block(expr, *ops, 2)(X1, X2)
    np.testing.assert_allclose(K, reference, rtol=1e-9, atol=1e-10 * np.abs(reference).max())


@pytest.mark.parametrize("dtype,tol", [(tf.float64, 1e-10), (tf.float32, 1e-4)])
@pytest.mark.parametrize("name", KERNELS)
def test_blocks_at_coincident_points_are_exact(rng, name, dtype, tol):
    """Fourth derivatives at r = 0: finite, and equal to the closed form there."""
    make, _, at_zero = KERNELS[name]
    X = rng.uniform(size=(4, 2))
    terms = pigp.operators.heat(0.6).resolve(2)
    K = block(make(), tf.constant(X, dtype), tf.constant(X, dtype), terms, terms).numpy()
    reference = sympy_block(at_zero, HEAT, HEAT, 2)(X, X)
    assert np.all(np.isfinite(K))
    np.testing.assert_allclose(np.diag(K), np.diag(reference), rtol=tol)


def test_matern_is_continuous_across_its_series_switch():
    """Blocks just inside and just outside the series region agree closely."""
    kernel = pigp.kernels.Matern52(1.0, [1.0, 1.0])
    terms = pigp.operators.heat(1.0).resolve(2)
    threshold = np.finfo(np.float64).eps ** (1 / 3) / np.sqrt(5)  # in r
    values = []
    for r in (0.9 * threshold, 1.1 * threshold, 0.0):
        X1, X2 = np.array([[0.3, 0.3]]), np.array([[0.3 + r, 0.3]])
        values.append(block(kernel, tf.constant(X1), tf.constant(X2), terms, terms).numpy()[0, 0])
    np.testing.assert_allclose(values[0], values[2], rtol=1e-4)
    np.testing.assert_allclose(values[1], values[2], rtol=1e-4)


def test_gram_matrices_match_numpy(rng):
    X1, X2 = rng.uniform(size=(6, 2)), rng.uniform(size=(3, 2))
    r = (X1[:, None, :] - X2[None, :, :]) / LENGTHSCALES
    s = np.sum(r**2, -1)
    k = pigp.kernels.SquaredExponential(VARIANCE, LENGTHSCALES)
    np.testing.assert_allclose(k(X1, X2).numpy(), VARIANCE * np.exp(-s / 2), rtol=1e-14)
    y = np.sqrt(5 * s)
    np.testing.assert_allclose(
        pigp.kernels.Matern52(VARIANCE, LENGTHSCALES)(X1, X2).numpy(),
        VARIANCE * (1 + y + y**2 / 3) * np.exp(-y),
        rtol=1e-13,
    )
    total = (k + pigp.kernels.Matern52(VARIANCE, LENGTHSCALES))(X1, X2).numpy()
    product = (k * pigp.kernels.Matern52(VARIANCE, LENGTHSCALES))(X1, X2).numpy()
    np.testing.assert_allclose(total, VARIANCE * (np.exp(-s / 2) + (1 + y + y**2 / 3) * np.exp(-y)))
    np.testing.assert_allclose(
        product, VARIANCE**2 * np.exp(-s / 2) * (1 + y + y**2 / 3) * np.exp(-y)
    )


def test_seed_parameterisation():
    from pigp.parameters import softplus

    k = pigp.kernels.SquaredExponential.from_weights(softplus(0.5), softplus([-1.0, -3.0]))
    assert k.variance.numpy() == pytest.approx(np.log1p(np.exp(0.5)) ** 2, rel=1e-14)
    np.testing.assert_allclose(
        k.lengthscales.numpy() ** -2, np.log1p(np.exp([-1.0, -3.0])), rtol=1e-13
    )


@pytest.mark.parametrize("kernel,order", [(pigp.kernels.Matern52, 3), (pigp.kernels.Matern72, 4)])
def test_operators_beyond_smoothness_are_refused(kernel, order):
    model = pigp.PIGP(kernel(1.0, [0.5]), pigp.D(0, order))
    with pytest.raises(ValueError, match="mean-square differentiable"):
        model.fit(X_f=np.linspace(0, 1, 5)[:, None], y_f=np.zeros(5), steps=0)


def test_parameters_are_softplus_constrained():
    p = pigp.Parameter(2.0, positive=True)
    assert p.unconstrained.numpy() == pytest.approx(np.log(np.expm1(2.0)))
    p.assign(0.25)
    assert p.numpy() == pytest.approx(0.25)
    with pytest.raises(ValueError, match="positive"):
        p.assign(-1.0)
    bounded = pigp.Parameter(1.0, lower=0.5)
    bounded.unconstrained.assign(-50.0)
    assert bounded.numpy() == pytest.approx(0.5)


def test_spectral_mixture_defaults_and_shapes():
    kernel = pigp.kernels.SpectralMixture(3)
    X = np.column_stack([np.linspace(0.0, 2.0, 5), np.linspace(-1.0, 3.0, 5)])
    kernel.build(X)
    np.testing.assert_allclose(kernel.weights.numpy(), [1 / 3] * 3)
    np.testing.assert_allclose(kernel.lengthscales.numpy(), [[1.0, 2.0]] * 3)
    # Half a cycle, a cycle and one and a half over each column's range (2 and 4).
    np.testing.assert_allclose(
        kernel.frequencies.numpy(), [[0.25, 0.125], [0.5, 0.25], [0.75, 0.375]]
    )
    # With every frequency 0 the kernel is a squared exponential.
    flat = pigp.kernels.SpectralMixture(1, 1.7, LENGTHSCALES, np.full(2, 1e-300))
    flat.build(X)
    se = pigp.kernels.SquaredExponential(1.7, LENGTHSCALES)
    np.testing.assert_allclose(flat(X).numpy(), se(X).numpy(), rtol=1e-14)


@pytest.mark.parametrize(
    "kwargs,argument",
    [
        ({"components": 0}, "components"),
        ({"components": 2, "weights": [1.0, 2.0, 3.0]}, "weights"),
        ({"components": 2, "frequencies": np.ones((3, 2))}, "frequencies"),
        ({"components": 1, "lengthscales": np.ones(3)}, "lengthscales"),
        ({"components": 1, "frequencies": [0.5, -1.0]}, "frequencies"),
        ({"components": 1, "lengthscales": [np.nan, 1.0]}, "lengthscales"),
    ],
)
def test_spectral_mixture_rejects_bad_shapes(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        kernel = pigp.kernels.SpectralMixture(**kwargs)
        kernel.build(np.zeros((4, 2)))


def test_spectral_mixture_learns_a_frequency():
    """u'' = f with u = sin(2 pi 1.3 x): the learned frequency is the field's, and the
    prediction is far better than a squared exponential's from the same data."""
    frequency = 1.3
    x_u = np.array([[0.0], [0.37], [0.81], [1.0]])
    x_f = np.linspace(0.05, 0.95, 8)[:, None]
    u = lambda x: np.sin(2 * np.pi * frequency * x[:, 0])
    f = lambda x: -((2 * np.pi * frequency) ** 2) * u(x)
    X = np.linspace(0.0, 1.0, 101)[:, None]
    errors = {}
    for name, kernel in [
        ("sm", pigp.kernels.SpectralMixture(1)),
        ("se", pigp.kernels.SquaredExponential()),
    ]:
        model = pigp.PIGP(kernel, pigp.operators.D(0, 2)).fit(x_u, u(x_u), x_f, f(x_f))
        errors[name] = np.linalg.norm(model.predict(X)[0] - u(X)) / np.linalg.norm(u(X))
        if name == "sm":
            assert abs(float(kernel.frequencies.numpy()[0, 0]) - frequency) < 1e-4
    assert errors["sm"] < 1e-6
    assert errors["sm"] < 0.1 * errors["se"]


def test_softplus_value_and_gradient_are_finite_and_exact_far_out():
    """The constrained value is TFP's softplus bit for bit, and its gradient is the
    sigmoid, finite at unconstrained values whose exp overflows."""
    import scipy.special
    import tensorflow_probability as tfp

    x = np.array([-800.0, -45.0, -20.5, -3.0, 0.0, 2.5, 40.0, 5000.0])
    parameter = pigp.Parameter(np.ones(len(x)), positive=True)
    parameter.unconstrained.assign(x)
    with tf.GradientTape() as tape:
        value = parameter.value()
    gradient = tape.gradient(value, parameter.unconstrained).numpy()
    np.testing.assert_array_equal(value.numpy(), tfp.bijectors.Softplus().forward(x).numpy())
    np.testing.assert_allclose(gradient, scipy.special.expit(x), rtol=1e-12, atol=1e-300)


def _heat_points(rng):
    """Six points, the fifth equal to the second, and the heat operator's terms."""
    X = rng.uniform(size=(6, 2))
    X[4] = X[1]
    return X, pigp.operators.heat(0.6).resolve(2)


@pytest.mark.parametrize(
    "make",
    [
        lambda: pigp.kernels.SquaredExponential(VARIANCE, LENGTHSCALES),
        KERNELS["matern52"][0],
        KERNELS["matern72"][0],
        KERNELS["rq"][0],
        make_spectral_mixture,
    ],
    ids=["se", "matern52", "matern72", "rq", "spectral_mixture"],
)
def test_closed_form_partials_match_the_nested_tapes(rng, monkeypatch, make):
    """The profile-only derivatives (``radial_partials``, the gaussian's and cosine's
    closed forms) against nested tapes through the whole kernel: the blocks and their
    gradients in the kernel's parameters, at distinct and coincident points."""
    from pigp.kernels import derivatives

    X, terms = _heat_points(rng)
    results = []
    for fast in (True, False):
        monkeypatch.setattr(derivatives, "RADIAL", fast)
        monkeypatch.setattr(derivatives, "CLOSED_FORMS", fast)
        kernel = make()
        kernel.build(X)
        variables = [p.unconstrained for p in kernel.parameters.values()]
        with tf.GradientTape() as tape:
            K = block(kernel, tf.constant(X), tf.constant(X), terms, terms)
            loss = tf.reduce_sum(tf.sin(K))
        results.append((K.numpy(), [g.numpy() for g in tape.gradient(loss, variables)]))
    (fast_K, fast_gradients), (taped_K, taped_gradients) = results
    assert np.all(np.isfinite(fast_K))
    np.testing.assert_allclose(fast_K, taped_K, rtol=1e-10, atol=1e-10 * np.abs(taped_K).max())
    for fast, taped in zip(fast_gradients, taped_gradients):
        assert np.all(np.isfinite(fast))
        np.testing.assert_allclose(fast, taped, rtol=1e-8, atol=1e-10 * np.abs(taped).max())


def test_warped_kernel_matches_nested_tapes_with_gradients(rng):
    """``Warped`` (the base's closed forms in the warped points, Faa di Bruno) against
    the same composed kernel written as a ``Custom`` pair function (nested tapes
    through both points): Burgers-like blocks and their gradients in the warp's
    parameters, at distinct and coincident points."""
    strength, width = pigp.Parameter(0.4), pigp.Parameter(0.15)

    def composed(x1, x2, strength, width):
        w1 = pigp.kernels.tanh_front(x1[..., 0], strength, width, 0.1)
        w2 = pigp.kernels.tanh_front(x2[..., 0], strength, width, 0.1)
        s = tf.square((w1 - w2) / 0.3) + tf.square((x1[..., 1] - x2[..., 1]) / 0.5)
        return 1.2 * tf.exp(-0.5 * s)

    front = lambda x, strength, width: pigp.kernels.tanh_front(x, strength, width, 0.1)  # noqa: E731
    warped = pigp.kernels.Warped(
        pigp.kernels.SquaredExponential(pigp.Parameter(1.2, trainable=False), [0.3, 0.5]),
        [front, None],
        {"strength": strength, "width": width},
    )
    custom = pigp.kernels.Custom(composed, {"strength": strength, "width": width})
    D = pigp.operators.D
    terms = (D(1) + 0.6 * D(0) - 0.05 * D(0, 2)).resolve(2)
    X = rng.uniform(-0.5, 0.5, size=(6, 2))
    X[4] = X[1]
    results = []
    for kernel in (warped, custom):
        with tf.GradientTape() as tape:
            K = block(kernel, tf.constant(X), tf.constant(X), terms, terms)
            loss = tf.reduce_sum(tf.sin(K))
        gradients = tape.gradient(loss, [strength.unconstrained, width.unconstrained])
        results.append((K.numpy(), [g.numpy() for g in gradients]))
    (K, gradients), (reference, reference_gradients) = results
    np.testing.assert_allclose(K, reference, rtol=1e-10, atol=1e-10 * np.abs(reference).max())
    for g, r in zip(gradients, reference_gradients):
        assert np.all(g != 0)
        np.testing.assert_allclose(g, r, rtol=1e-9)


def test_warped_kernel_refuses_bad_warps():
    with pytest.raises(ValueError, match="warps: expected a list"):
        pigp.kernels.Warped(pigp.kernels.SquaredExponential(), "tanh")
    with pytest.raises(ValueError, match="warps: expected a list"):
        pigp.kernels.Warped(pigp.kernels.SquaredExponential(), [1.0, None])
    with pytest.raises(ValueError, match="kernel: expected"):
        pigp.kernels.Warped("se", [None])
    front = pigp.kernels.steepening_front
    for inputs in (
        [(1,), None],
        [(0, 2), None],
        [(0, 0, 1), None],
        [(0, 1)],
        "x",
        [(0, True), None],
    ):
        with pytest.raises(ValueError, match="inputs: "):
            pigp.kernels.Warped(pigp.kernels.SquaredExponential(), [front, None], inputs=inputs)
    indices = np.array([0, 1])  # NumPy integers are column indices too
    warped = pigp.kernels.Warped(
        pigp.kernels.SquaredExponential(), [front, None], inputs=[indices, None]
    )
    assert warped.inputs == [(0, 1), (1,)]
    warped = pigp.kernels.Warped(
        pigp.kernels.SquaredExponential(), [front, None], inputs=[(np.int64(0), np.int64(1)), None]
    )
    assert warped.inputs == [(0, 1), (1,)] and type(warped.inputs[0][0]) is int
    kernel = pigp.kernels.Warped(pigp.kernels.SquaredExponential(), [None])
    model = pigp.PIGP(kernel, pigp.operators.heat(1.0))
    X = np.random.default_rng(0).uniform(size=(5, 2))
    with pytest.raises(ValueError, match="one entry per input column"):
        model.fit(X, np.sin(X[:, 0]), X, np.cos(X[:, 0]), steps=1)
    assert model.data is None


def test_spectral_mixture_wave_gradient_matches_the_reverse_pass(rng, monkeypatch):
    """The wave's closed-form gradient (``derivatives.WAVE_GRADIENT``) against the reverse
    pass through its Hermite recurrence: first derivatives in the parameters and the
    points, and second derivatives in the parameters (the Laplace Hessian's)."""
    from pigp.kernels import derivatives

    X, terms = _heat_points(rng)
    results = []
    for closed in (True, False):
        monkeypatch.setattr(derivatives, "WAVE_GRADIENT", closed)
        kernel = pigp.kernels.SpectralMixture(1)
        kernel.build(X)
        variables = [p.unconstrained for p in kernel.parameters.values()]
        points = tf.Variable(X)
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                K = block(kernel, points, tf.constant(X), terms, terms)
                loss = tf.reduce_sum(tf.sin(K))
            gradients = inner.gradient(loss, variables + [points])
            norm = tf.add_n([tf.reduce_sum(tf.square(g)) for g in gradients])
        second = outer.gradient(norm, variables)
        results.append([g.numpy() for g in gradients + second])
    for closed, taped in zip(*results):
        np.testing.assert_allclose(closed, taped, rtol=1e-9, atol=1e-12 * np.abs(taped).max())


def test_spectral_mixture_fit_laplace_and_sampling_log_no_tensorflow_warning(rng, caplog):
    """The wave's complex arithmetic is differentiated without ``tf.cast`` from real to
    complex, whose gradient makes TensorFlow log that it discards an imaginary part."""
    X_u, X_f = rng.uniform(size=(10, 2)), rng.uniform(size=(10, 2))
    y_u = np.sin(3 * X_u[:, 0]) * np.exp(-X_u[:, 1])
    model = pigp.PIGP(
        pigp.kernels.SpectralMixture(1),
        pigp.operators.heat(diffusivity=pigp.Parameter(0.5, positive=True)),
        noise_u=1e-4,
        noise_f=1e-4,
    )
    caplog.clear()
    model.fit(X_u, y_u, X_f, np.zeros(10), steps=20)
    std = model.parameter_uncertainty()["operator.diffusivity"]
    with pytest.warns(RuntimeWarning):  # 8 draws: R-hat far from 1
        model.sample(num_results=8, num_burnin=4, num_chains=2, seed=0)
    assert not np.isnan(std)
    logged = [r.getMessage()[:120] for r in caplog.records if r.name == "tensorflow"]
    assert not logged


@pytest.mark.parametrize("start", [0.9, 0.0])
def test_decaying_kernel_matches_nested_tapes_with_gradients(rng, start):
    """``Decaying`` (Leibniz's rule on the base's closed forms) against the same product
    written as a ``Custom`` pair function times the base (nested tapes through both
    points): heat blocks and their gradients in the rate and the base's parameters, at
    distinct and coincident points; and with rate 0 it is the base kernel itself."""
    rate = pigp.Parameter(start, positive=False)
    base = pigp.kernels.Matern52(1.3, [0.4, 0.7])
    decaying = pigp.kernels.Decaying(base, column=1, rate=rate)
    amplitude = pigp.kernels.Custom(
        lambda x1, x2, rate: tf.exp(-rate * (x1[..., 1] + x2[..., 1])), {"rate": rate}
    )
    X, terms = _heat_points(rng)
    variables = [rate.unconstrained, *(p.unconstrained for p in base.parameters.values())]
    results = []
    for kernel in (decaying, base * amplitude):
        with tf.GradientTape() as tape:
            K = block(kernel, tf.constant(X), tf.constant(X), terms, terms)
            loss = tf.reduce_sum(tf.sin(K))
        results.append((K.numpy(), [g.numpy() for g in tape.gradient(loss, variables)]))
    (K, gradients), (reference, reference_gradients) = results
    np.testing.assert_allclose(K, reference, rtol=1e-10, atol=1e-10 * np.abs(reference).max())
    for g, r in zip(gradients, reference_gradients):
        assert np.all(np.isfinite(g)) and np.all(g != 0)  # at rate 0 too (the start)
        np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-12 * np.abs(r).max())
    rate.assign(0.0)
    np.testing.assert_allclose(
        block(decaying, tf.constant(X), tf.constant(X), terms, terms).numpy(),
        block(base, tf.constant(X), tf.constant(X), terms, terms).numpy(),
        rtol=1e-12,
    )


def test_decaying_kernel_refuses_bad_arguments():
    se = pigp.kernels.SquaredExponential()
    with pytest.raises(ValueError, match="kernel: expected"):
        pigp.kernels.Decaying("se")
    with pytest.raises(ValueError, match="kernel: expected"):
        pigp.kernels.Decaying(pigp.kernels.Fields({"u": se}))
    for column in (-1, 1.0, True, "t"):
        with pytest.raises(ValueError, match="column: expected"):
            pigp.kernels.Decaying(se, column=column)
    with pytest.raises(ValueError, match="rate: expected a finite"):
        pigp.kernels.Decaying(se, rate=np.nan)
    model = pigp.PIGP(pigp.kernels.Decaying(se, column=2), pigp.operators.heat(1.0))
    X = np.random.default_rng(0).uniform(size=(5, 2))
    with pytest.raises(ValueError, match="column: expected an index below"):
        model.fit(X, np.sin(X[:, 0]), X, np.cos(X[:, 0]), steps=1)
    assert model.data is None
