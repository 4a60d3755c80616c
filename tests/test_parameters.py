"""Parameters: the constraint decided by use, signed coefficients learned, bounds warned about."""

import warnings

import numpy as np
import pytest

import pigp
from pigp.operators import D, Identity


def test_a_parameter_is_settled_by_its_first_use():
    coefficient = pigp.Parameter(-0.5, name="c")  # a negative start is allowed
    assert coefficient.positive is None
    operator = coefficient * D("x")
    assert coefficient.positive is False
    assert operator.parameters[0] is coefficient
    coefficient.assign(-2.0)
    assert coefficient.numpy() == -2.0 and coefficient.unconstrained.numpy() == -2.0

    lengthscale = pigp.Parameter([0.3])
    kernel = pigp.kernels.SquaredExponential(1.0, lengthscale)
    assert lengthscale.positive is True
    assert lengthscale.unconstrained.numpy() == pytest.approx(np.log(np.expm1(0.3)))
    assert kernel.lengthscales is lengthscale
    with pytest.raises(ValueError, match="positive"):
        lengthscale.assign([-1.0])

    noise = pigp.Parameter(1e-4)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D("x", 2), noise_u=noise, dims=("x",))
    assert model.noise_u is noise and noise.positive is True
    # Once settled, another use does not change it.
    assert (noise * D("x")).parameters[0].positive is True


def test_positive_errors_name_the_way_out():
    with pytest.raises(ValueError, match=r"positive=False for one of any sign"):
        pigp.Parameter(-0.5, positive=True, name="c")
    with pytest.raises(ValueError, match=r"^variance: expected values > 0\.0"):
        pigp.kernels.SquaredExponential(pigp.Parameter(-1.0, name="v"))
    with pytest.raises(ValueError, match="lower bound makes a parameter positive"):
        pigp.Parameter(1.0, positive=False, lower=0.5)
    assert pigp.Parameter(1.0, lower=0.5).positive is True


def _decay(c_true, n_u=6):
    """``u' + c u = 0`` on [0, 1]: ``u = exp(-c x)``; u at ``n_u`` points, the residual
    at 12."""
    u = lambda x: np.exp(-c_true * x)
    X_u, X_f = np.linspace(0, 1, n_u)[:, None], np.linspace(0.04, 0.96, 12)[:, None]
    return X_u, u(X_u[:, 0]), X_f, np.zeros(12)


def test_a_negative_coefficient_is_learned_with_the_default():
    c = pigp.Parameter(1.0, name="c")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D("x") + c * Identity, dims=("x",))
    model.fit(*_decay(-0.8))
    assert c.numpy() == pytest.approx(-0.8, abs=1e-3)
    std = model.parameter_uncertainty()["operator.c"]
    assert np.isfinite(std) and abs(c.numpy() + 0.8) < 5 * std + 1e-6


def test_a_coefficient_stuck_at_its_bound_is_named_with_the_way_out():
    c = pigp.Parameter(1.0, positive=True, name="c")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D("x") + c * Identity, dims=("x",))
    # 20 u values: with 6, where the fit ends (c rounded to 0, or c ~ 0.007 with part of
    # the data called noise) was seen to change with the installed packages; with 20 it
    # ends at c = 0 (its variable below -1e7).
    with pytest.warns(RuntimeWarning, match=r"operator\.c ended at the lower bound") as caught:
        model.fit(*_decay(-0.8, n_u=20))
    assert "positive=False" in str(caught[-1].message)
    assert c.numpy() < 1e-4  # the truth, -0.8, is out of reach
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        std = model.parameter_uncertainty()
    messages = [str(w.message) for w in caught]
    assert std["operator.c"] == np.inf
    assert any("operator.c" in m and "sit at the lower bound" in m for m in messages), messages
    # Wherever the fit stops on the way down (c = 2e-9 here, its variable -20, the
    # Hessian finite), the optimum lies beyond the bound: no Gaussian, no finite std.
    c.unconstrained.assign(-20.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert model.parameter_uncertainty()["operator.c"] == np.inf
        assert model.parameter_intervals()["operator.c"] == (0.0, np.inf)
    assert any("operator.c" in str(w.message) for w in caught)


def test_a_prior_on_the_positive_reals_makes_a_parameter_positive():
    from pigp._tensorflow import probability

    tfd = probability().distributions
    for prior in (tfd.LogNormal(0.0, 1.0), tfd.Gamma(2.0, 1.0), tfd.HalfNormal(1.0)):
        assert pigp.Parameter(2.0, prior=prior).positive is True
    signed = pigp.Parameter(2.0, prior=tfd.Normal(0.0, 1.0))
    assert signed.positive is None
    assert (signed * D("x")).parameters[0].positive is False


def test_sums_of_parameters_and_numbers_distribute_over_operators():
    """``(lam + mu) * D("x", 2)``, ``(lam - 1) * D("x")``, ``2 * (lam + mu)`` and a
    product of sums: each operator's block equals the one of its terms written out by
    hand, for the parameters' values."""
    from pigp.kernels.covariance import block

    lam, mu = pigp.Parameter(1.5, name="lam"), pigp.Parameter(0.25, name="mu")
    X = np.random.default_rng(0).uniform(size=(6, 1))
    kernel = pigp.kernels.SquaredExponential(lengthscales=[0.4])
    pairs = [
        ((lam + mu) * D("x", 2), lam * D("x", 2) + mu * D("x", 2)),
        ((lam - 1.0) * D("x"), lam * D("x") - 1.0 * D("x")),
        ((1.0 - lam) * Identity, 1.0 * Identity - lam * Identity),
        (2 * (lam + mu) * D("x"), 2 * lam * D("x") + 2 * mu * D("x")),
        ((lam + mu) * (lam - mu) * Identity, lam**2 * Identity - mu**2 * Identity),
        (pigp.operators.heat(lam + mu, dims=("x",)).with_dims("x", "t"), None),
    ]
    for operator, expanded in pairs[:-1]:
        terms, reference = operator.resolve(1, ("x",)), expanded.resolve(1, ("x",))
        got = block(kernel, X, X, terms, terms).numpy()
        want = block(kernel, X, X, reference, reference).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    heat = pairs[-1][0]
    by_order = {}
    for c, orders, _ in heat.terms:
        key = tuple(sorted(dict(orders).items()))
        by_order[key] = by_order.get(key, 0.0) + float(c.numpy())
    assert by_order == pytest.approx({(("t", 1),): 1.0, (("x", 2),): -1.75})  # u_t - (lam+mu) u_xx
    assert {p.name for p in (lam + mu).parameters} == {"lam", "mu"}
    assert (lam + 2.0).numpy() == pytest.approx(3.5)
    with pytest.raises(TypeError):
        lam + "a"


RATE = pigp.Parameter(0.3, name="rate")  # read by name from a module global below


def _global_reader(X):
    return np.exp(RATE.numpy()) * X[:, 0]


class _Scaled:
    def __init__(self, p):
        self.p = p

    def __call__(self, X):
        return self.p.value(X.dtype) * X[:, 0]


def test_parameters_read_inside_coefficient_functions_are_found():
    """A coefficient function's parameters are found wherever Python lets it read them:
    its closure, a default argument, a module global, a partial's arguments, a callable
    object's attributes, a nested function; each once, and nothing else."""
    import functools

    a, b, c = (pigp.Parameter(v, name=n) for v, n in ((1.0, "a"), (2.0, "b"), (3.0, "c")))
    unrelated = pigp.Parameter(4.0, name="unrelated")  # noqa: F841 (in scope, never read)

    def inner(X):
        return b.value() * X[:, 0]

    closure = lambda X: a.value() * inner(X) + a.value()  # noqa: E731
    defaulted = lambda X, scale=c: scale.value() * X[:, 0]  # noqa: E731
    partial = functools.partial(lambda X, p: p.value() * X[:, 0], p=c)

    def read(function):
        return pigp._reads.read_objects(function, pigp.Parameter)

    assert read(closure) == (a, b)
    assert read(defaulted) == (c,)
    assert read(_global_reader) == (RATE,)
    assert read(partial) == (c,)
    assert read(_Scaled(b)) == (b,)
    assert read(lambda X: X[:, 0]) == ()
    operator = closure * D("x", 2) + defaulted * D("x") + a * Identity
    assert operator.parameters == [a, b, c]


@pytest.mark.slow
def test_a_parameter_read_only_inside_a_coefficient_function_is_learned():
    """Darcy in 1-D, -(a u')' = f with a = exp(theta x), theta read only inside the
    functions a and a': theta is a trainable parameter of the model, the likelihood's
    gradient in it matches central differences, and the fit finds theta = 1.2 from
    u = sin(pi x) (the truth's f in closed form)."""
    import tensorflow as tf

    theta = pigp.Parameter(0.5, name="theta")
    a = lambda X: tf.exp(theta.value(X.dtype) * X[:, 0])  # noqa: E731
    a_x = lambda X: theta.value(X.dtype) * a(X)  # noqa: E731
    darcy = (-(a * D("x", 2)) - a_x * D("x")).with_dims("x")
    truth = 1.2
    x_u = np.r_[0.0, 1.0, np.random.default_rng(0).uniform(size=6)][:, None]
    x_f = np.linspace(0, 1, 25)[:, None]
    u = lambda x: np.sin(np.pi * x[:, 0])  # noqa: E731
    x = x_f[:, 0]
    f = np.exp(truth * x) * (np.pi**2 * np.sin(np.pi * x) - truth * np.pi * np.cos(np.pi * x))

    fixed = pigp.Parameter(1e-2, trainable=False)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), darcy, noise_u=fixed, noise_f=1e-2)
    model.fit(x_u, u(x_u), x_f, f, steps=1, optimizer="adam")
    assert [name for name, _ in model.trainable_parameters()][2] == "operator.theta"
    theta.assign(0.7)
    objective = model.objective(priors=False)
    tensors = model.data.tensors(model.dtype)
    _, gradients = objective.loss_and_gradient(*tensors)
    variable, h = objective.variables[2], 1e-4
    start = variable.numpy()
    variable.assign(start + h)
    above = objective.loss(*tensors)
    variable.assign(start - h)
    below = objective.loss(*tensors)
    variable.assign(start)
    assert float(gradients[2]) == pytest.approx((above - below) / (2 * h), rel=1e-6)
    assert abs(float(gradients[2])) > 10  # theta matters to the likelihood here

    theta.assign(0.5)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), darcy)
    model.fit(x_u, u(x_u), x_f, f)
    assert model.parameter_values()["operator.theta"] == pytest.approx(truth, rel=0.02)
    grid = np.linspace(0, 1, 101)[:, None]
    mean, _ = model.predict(grid)
    assert np.linalg.norm(mean - u(grid)) / np.linalg.norm(u(grid)) < 1e-2


@pytest.mark.slow
def test_a_linear_models_bands_carry_its_learned_coefficients_uncertainty():
    """For a linear equation with a learned coefficient (Darcy's theta, read inside
    a = exp(theta x)), ``predict`` adds ``J Sigma J'`` by default; the reference is the
    central difference of the posterior means refitted by hand at theta -+ its standard
    deviation, every other parameter held."""
    import tensorflow as tf

    theta = pigp.Parameter(0.5, name="theta")
    a = lambda X: tf.exp(theta.value(X.dtype) * X[:, 0])  # noqa: E731
    a_x = lambda X: theta.value(X.dtype) * a(X)  # noqa: E731
    darcy = (-(a * D("x", 2)) - a_x * D("x")).with_dims("x")
    rng = np.random.default_rng(7)
    x_u = rng.uniform(size=(10, 1))
    x_f = np.linspace(0, 1, 25)[:, None]
    x = x_f[:, 0]
    f = np.exp(1.2 * x) * (np.pi**2 * np.sin(np.pi * x) - 1.2 * np.pi * np.cos(np.pi * x))
    y_u = np.sin(np.pi * x_u[:, 0]) + 0.007 * rng.standard_normal(10)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), darcy)
    model.fit(x_u, y_u, x_f, f + 0.1 * rng.standard_normal(25))
    grid = np.linspace(0, 1, 41)[:, None]
    mean, var = model.predict(grid)
    given, var_given = model.predict(grid, coefficients=False)
    np.testing.assert_array_equal(mean, given)
    hat, std = float(theta.numpy()), model.parameter_uncertainty()["operator.theta"]
    moved = []
    for sign in (1.0, -1.0):
        theta.assign(hat + sign * std)
        moved.append(model.predict(grid, coefficients=False)[0])
    theta.assign(hat)
    added = ((moved[0] - moved[1]) / 2) ** 2  # (J std)^2
    assert np.linalg.norm(added) > 0.1 * np.linalg.norm(var_given)  # it matters here
    np.testing.assert_allclose(var - var_given, added, rtol=0.1, atol=0.02 * added.max())
