"""Priors, MAP fits and NUTS: the sampler against a posterior computed on a grid, the
mixture predictive against direct averaging, priors through save and load."""

import os
import warnings

import numpy as np
import pytest
import scipy.stats
import tensorflow as tf
import tensorflow_probability as tfp

import pigp
from pigp.operators import D

tfd = tfp.distributions


def one_parameter_model(prior=None, lower=0.0):
    """1-D, u data only, only the kernel variance (> lower) trainable."""
    rng = np.random.default_rng(0)
    X = np.linspace(0, 1, 8)[:, None]
    y = np.sin(3 * X[:, 0]) + 0.05 * rng.standard_normal(8)
    kernel = pigp.kernels.SquaredExponential(
        variance=pigp.Parameter(1.0, name="variance", prior=prior, lower=lower),
        lengthscales=pigp.Parameter([0.3], trainable=False, name="lengthscales"),
    )
    model = pigp.PIGP(kernel, D("x", 2), noise_u=pigp.Parameter(0.01, trainable=False), dims=("x",))
    return model, X, y


def grid_posterior(model, loc: float, scale: float, jacobian: bool):
    """The unnormalised log posterior of the variance on a grid of its unconstrained
    value v, with a LogNormal(loc, scale) prior evaluated by SciPy: log p(y | theta)
    + log p(theta) (+ log |d theta / d v| = log sigmoid(v), theta = lower + softplus(v))."""
    ((_, p),) = model.trainable_parameters()
    v0 = p.unconstrained.numpy()
    grid = np.linspace(v0 - 6, v0 + 6, 3001)
    likelihood = []
    for v in grid:
        p.unconstrained.assign(v)
        likelihood.append(model.log_marginal_likelihood())
    p.unconstrained.assign(v0)
    theta = p.lower + np.logaddexp(0.0, grid)
    values = np.array(likelihood) + scipy.stats.lognorm(s=scale, scale=np.exp(loc)).logpdf(theta)
    if jacobian:
        values -= np.logaddexp(0.0, -grid)
    return theta, values


def test_log_prior_and_jacobian_are_scipys_densities():
    loc, scale = np.float64(0.3), np.float64(0.7)  # float64: exact to round-off
    vector = pigp.Parameter([0.5, 2.0], True, prior=tfd.LogNormal(loc, scale), name="ls")
    expected = scipy.stats.lognorm(s=0.7, scale=np.exp(0.3)).logpdf([0.5, 2.0]).sum()
    assert float(vector.log_prior()) == pytest.approx(expected, rel=1e-12)
    scalar = pigp.Parameter(1.5, prior=tfd.Gamma(2.0, 3.0), lower=0.5)
    expected = scipy.stats.gamma(a=2.0, scale=1 / 3.0).logpdf(1.5)
    # Python floats make a float32 distribution: its parameters carry float32 rounding.
    assert float(scalar.log_prior()) == pytest.approx(expected, rel=1e-6)
    # A batch of unconstrained values: softplus' Jacobian is sigmoid.
    v = np.array([[-1.0, 0.5], [2.0, 3.0]])
    np.testing.assert_allclose(
        vector.log_jacobian(v).numpy(), -np.logaddexp(0.0, -v).sum(axis=1), rtol=1e-12
    )
    np.testing.assert_allclose(
        vector.log_prior(v).numpy(),
        scipy.stats.lognorm(s=0.7, scale=np.exp(0.3)).logpdf(np.logaddexp(0.0, v)).sum(axis=1),
        rtol=1e-12,
    )
    assert float(pigp.Parameter(1.0).log_prior()) == 0.0
    # At a given value; and the sampler's coordinates: value = lower + exp(w).
    assert float(scalar.log_prior(value=np.float64(1.5))) == pytest.approx(expected, rel=1e-6)
    w = np.array([-2.0, 0.0, 3.0])
    to_value = scalar.sampling_bijector
    np.testing.assert_allclose(to_value.forward(w).numpy(), 0.5 + np.exp(w), rtol=1e-15)
    np.testing.assert_allclose(to_value.inverse(0.5 + np.exp(w)).numpy(), w, atol=1e-14)
    np.testing.assert_allclose(to_value.forward_log_det_jacobian(w, 0).numpy(), w, atol=1e-15)
    unbounded = pigp.Parameter(-1.0, positive=False).sampling_bijector
    assert float(unbounded.forward(np.float64(-3.0))) == -3.0


@pytest.mark.slow
@pytest.mark.parametrize("lower", [0.0, 0.2])
def test_nuts_matches_the_posterior_computed_on_a_grid(lower):
    # The sampler moves log(theta - lower); the grid is in softplus coordinates.
    model, X, y = one_parameter_model(prior=tfd.LogNormal(0.0, 1.0), lower=lower)
    model.fit(X, y, steps=200)
    theta, log_post = grid_posterior(model, 0.0, 1.0, jacobian=True)
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    mean = np.sum(weights * theta)
    std = np.sqrt(np.sum(weights * (theta - mean) ** 2))
    fitted = model.parameter_values()
    samples = model.sample(num_results=800, num_burnin=400, num_chains=2, seed=3)
    draws = samples["kernel.variance"]
    assert draws.shape == (2, 800)
    ess = float(samples.ess["kernel.variance"])
    assert ess > 100
    # Within Monte-Carlo error: 4 standard errors of the mean, and of the std.
    assert abs(draws.mean() - mean) < 4 * std / np.sqrt(ess)
    assert abs(draws.std() - std) < 4 * std / np.sqrt(2 * ess) + 0.02 * std
    assert model.parameter_values() == fitted  # the fitted values are restored
    assert np.all(samples.rhat["kernel.variance"] < 1.05)
    table = samples.summary()
    assert "kernel.variance" in table and "R-hat" in table and "2 chains x 800 draws," in table


def test_a_prior_turns_the_fit_into_the_map_and_leaves_the_marginal_likelihood_alone():
    prior = tfd.LogNormal(np.log(3.0), 0.3)  # far from the ML-II value (~0.5)
    model, X, y = one_parameter_model(prior=prior)
    model.fit(X, y, steps=0, optimizer="lbfgs")
    model.fit(X, y, steps=300, optimizer="lbfgs")
    theta, log_post = grid_posterior(model, np.log(3.0), 0.3, jacobian=False)
    fitted = model.parameter_values()["kernel.variance"]
    assert fitted == pytest.approx(theta[np.argmax(log_post)], rel=5e-3)
    # log_marginal_likelihood is the likelihood alone: equal to a model without the prior.
    plain, _, _ = one_parameter_model()
    plain.fit(X, y, steps=0)
    dict(plain.trainable_parameters())["kernel.variance"].assign(fitted)
    assert model.log_marginal_likelihood() == pytest.approx(plain.log_marginal_likelihood(), 1e-10)
    # The prior moved the estimate towards it, from the maximum-likelihood value.
    plain.fit(X, y, steps=300, optimizer="lbfgs")
    assert plain.parameter_values()["kernel.variance"] < fitted < 3.0


def test_the_loss_gradient_includes_the_prior():
    model, X, y = one_parameter_model(prior=tfd.Gamma(2.0, 1.0))
    model.fit(X, y, steps=0)
    objective = model.objective()
    Xs, yt = model.data.tensors(model.dtype)
    (v,) = objective.variables
    _, (grad,) = objective.loss_and_gradient(Xs, yt)
    h, v0 = 1e-5, v.numpy()
    losses = []
    for step in (h, -h):
        v.assign(v0 + step)
        losses.append(objective.loss(Xs, yt.numpy()))
    v.assign(v0)
    assert float(grad) == pytest.approx((losses[0] - losses[1]) / (2 * h), rel=1e-6)
    with tf.GradientTape() as tape:
        reference = objective.nll(Xs, yt)
    assert float(grad) == pytest.approx(float(tape.gradient(reference, v)), rel=1e-8)


def test_predict_with_samples_is_the_mixture_of_the_draws():
    model, X, y = one_parameter_model()
    model.fit(X, y, steps=50)
    draws = np.array([[0.3, 0.6, 1.2], [2.0, 0.9, 0.45]])  # 2 chains x 3 draws
    samples = pigp.Samples({"kernel.variance": draws}, 1.0, 0.1, 0.8, 0, {})
    X_test = np.linspace(-0.2, 1.2, 15)[:, None]
    before = model.predict(X_test)
    means, variances, covariances = [], [], []
    p = dict(model.trainable_parameters())["kernel.variance"]
    fitted = p.unconstrained.numpy()
    for value in draws.ravel():
        p.assign(value)
        m, v = model.predict(X_test)
        _, c = model.predict(X_test, full_cov=True)
        means.append(m)
        variances.append(v)
        covariances.append(c)
    p.unconstrained.assign(fitted)
    means = np.array(means)
    mean, var = model.predict(X_test, samples=samples)
    np.testing.assert_allclose(mean, means.mean(0), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(var, np.mean(variances, 0) + means.var(0), rtol=1e-10, atol=1e-14)
    _, cov = model.predict(X_test, samples=samples, full_cov=True)
    centred = means - means.mean(0)
    expected = np.mean(covariances, 0) + centred.T @ centred / len(means)
    np.testing.assert_allclose(cov, expected, rtol=1e-9, atol=1e-13)
    # The parameters are left as they were, and so are the plain predictions.
    np.testing.assert_array_equal(model.predict(X_test)[0], before[0])
    # Thinning: two draws, evenly spaced over all six.
    m2, _ = model.predict(X_test, samples=samples, max_draws=2)
    p.assign(draws.ravel()[0])
    first = model.predict(X_test)[0]
    p.assign(draws.ravel()[-1])
    last = model.predict(X_test)[0]
    p.unconstrained.assign(fitted)
    np.testing.assert_allclose(m2, 0.5 * (first + last), rtol=1e-10, atol=1e-14)


def test_priors_survive_save_and_load(tmp_path):
    model, X, y = one_parameter_model(prior=tfd.LogNormal(0.5, 0.25))
    model.fit(X, y, steps=20)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = pigp.load(path)
    (_, p), (_, q) = model.trainable_parameters()[0], loaded.trainable_parameters()[0]
    assert type(q.prior) is tfd.LogNormal
    assert float(q.prior.loc) == 0.5 and float(q.prior.scale) == 0.25
    assert float(q.log_prior()) == float(p.log_prior())
    assert loaded.log_marginal_likelihood() == model.log_marginal_likelihood()


def test_sampling_refuses_bad_input_before_anything_runs():
    model, X, y = one_parameter_model()
    with pytest.raises(ValueError, match="fit"):
        model.sample()
    with pytest.raises(ValueError, match="prior: expected a tensorflow_probability distribution"):
        pigp.Parameter(1.0, prior="lognormal")
    model.fit(X, y, steps=10)
    for kwargs, message in (
        ({"num_chains": 0}, "num_chains: expected an integer >= 1"),
        ({"num_results": 2.5}, "num_results: expected an integer >= 1"),
        ({"num_burnin": -1}, "num_burnin: expected an integer >= 0"),
        ({"target_accept": 1.5}, "target_accept: expected a number in"),
    ):
        with pytest.raises(ValueError, match=message):
            model.sample(**kwargs)
    with pytest.raises(ValueError, match="samples: expected a pigp.Samples"):
        model.predict(X, samples={"kernel.variance": 1.0})
    other = pigp.Samples({"kernel.lengthscales": np.ones((1, 2, 1))}, 1.0, 0.1, 0.8, 0, {})
    with pytest.raises(ValueError, match="are not trainable parameters"):
        model.predict(X, samples=other)


@pytest.mark.slow
def test_a_parameter_without_prior_gets_the_default_and_a_warning():
    model, X, y = one_parameter_model()
    model.fit(X, y, steps=100)
    with pytest.warns(RuntimeWarning, match=r"no prior for \['kernel.variance'\]"):
        samples = model.sample(num_results=50, num_burnin=50, num_chains=1, seed=0)
    prior = samples.priors["kernel.variance"]
    fitted = model.parameter_values()["kernel.variance"]
    assert isinstance(prior, tfd.LogNormal)
    assert float(prior.loc) == pytest.approx(np.log(fitted)) and float(prior.scale) == 2.0
    assert samples["kernel.variance"].shape == (1, 50)
    assert np.all(samples["kernel.variance"] > 0)


def test_trace_and_posterior_plots_draw_the_draws():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    draws = np.array([[0.3, 0.6, 1.2, 0.8], [2.0, 0.9, 0.45, 0.7]])
    samples = pigp.Samples({"kernel.variance": draws}, 1.0, 0.1, 0.8, 0, {})
    fig, (a, b) = plt.subplots(1, 2)
    pigp.plotting.traces(samples, "kernel.variance", ax=a)
    np.testing.assert_array_equal([line.get_ydata() for line in a.lines], draws)
    pigp.plotting.posterior(samples, "kernel.variance", ax=b, laplace=(0.8, 0.3), truth=1.0)
    heights = [patch.get_height() for patch in b.patches]
    widths = [patch.get_width() for patch in b.patches]
    assert np.sum(np.multiply(heights, widths)) == pytest.approx(1.0)  # a density
    curve = b.lines[0]
    x, density = curve.get_xdata(), curve.get_ydata()
    assert np.trapezoid(density, x) == pytest.approx(1.0, abs=1e-3)
    assert b.lines[1].get_xdata()[0] == 1.0
    plt.close(fig)


@pytest.mark.slow
def test_the_draws_depend_on_the_seed_not_on_the_threads(monkeypatch):
    # Four chains are two groups; with copies of the model the groups run in two
    # threads, without them one after another: the same draws either way.
    model, X, y = one_parameter_model(prior=tfd.LogNormal(0.0, 1.0))
    model.fit(X, y, steps=100)
    settings = dict(num_results=60, num_burnin=60, num_chains=4, seed=5)
    copies = []
    original = pigp.inference.sampler.copies
    monkeypatch.setattr(
        pigp.inference.sampler,
        "copies",
        lambda model, n: copies.extend(original(model, n)) or copies,
    )
    threaded = model.sample(**settings)
    assert len(copies) == min(1, (os.cpu_count() or 1) - 1)
    monkeypatch.setattr(pigp.inference.sampler, "copies", lambda model, n: [])
    alone = model.sample(**settings)
    np.testing.assert_array_equal(threaded["kernel.variance"], alone["kernel.variance"])
    # Per draw: divergences and leapfrog steps, (chains, results).
    assert threaded.diverging.shape == threaded.leapfrogs.shape == (4, 60)
    assert int(threaded.diverging.sum()) == threaded.divergences
    assert np.all(threaded.leapfrogs >= 1) and np.all(threaded.leapfrogs <= 255)


def test_draws_that_round_to_the_lower_bound_are_kept_above_it():
    # lower + exp(w) rounds to lower for w below about -745 (lower = 0) or for a
    # small exp(w) next to lower; the draw must still be a value the parameter takes.
    from pigp.inference.nuts import _representable

    bounded, positive = pigp.Parameter(1.0, lower=0.5), pigp.Parameter(1.0, positive=True)
    draws = _representable(np.array([0.5, 0.7]), bounded)
    assert draws[0] == np.nextafter(0.5, 1.0) and draws[1] == 0.7
    bounded.assign(draws[0])
    tiny = _representable(np.array([0.0, 1e-300]), positive)
    assert tiny[0] == np.finfo(np.float64).tiny and tiny[1] == 1e-300
    positive.assign(tiny[0])
    assert np.isfinite(positive.unconstrained.numpy())
    free = pigp.Parameter(-2.0, positive=False)
    assert _representable(np.array([-3.0]), free)[0] == -3.0


def test_draws_that_are_not_finite_or_mostly_divergent_do_not_pass_silently():
    from pigp.inference.nuts import _check_draws

    good = {"a": np.ones((2, 5))}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check_draws(good, 0, 10)
    with pytest.raises(RuntimeError, match=r"draws of \['b'\] are not finite"):
        _check_draws({**good, "b": np.array([[1.0, np.inf]])}, 10, 10)
    with pytest.warns(RuntimeWarning, match="3 of 10 transitions diverged"):
        _check_draws(good, 3, 10)
    # A few divergences: the draws may be biased; the way out is a smaller step.
    with pytest.warns(RuntimeWarning, match=r"5 of 4000 .* higher target_accept \(now 0.8;"):
        _check_draws(good, 5, 4000)
    with pytest.warns(RuntimeWarning, match="5 of 4000 .* a prior or fix them"):
        _check_draws(good, 5, 4000, target_accept=0.95)


@pytest.mark.parametrize("lower", [0.0, 1e-4])
def test_the_samplers_map_to_the_variable_is_exact_and_smooth_far_below_zero(lower):
    """``v(w) = softplus^-1(e^w)``: softplus(v) equals e^w, and dv/dw is the closed
    form ``e^w / (1 - exp(-e^w))``, finite where ``lower + e^w`` rounds to ``lower``;
    ``sampling_start`` inverts it."""
    parameter = pigp.Parameter(1.0, lower=lower)
    w = tf.constant([-700.0, -100.0, -30.5, -29.5, -1.0, 0.0, 3.0, 40.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(w)
        v = parameter.unconstrained_from_sampling(w)
    slope = tape.gradient(v, w).numpy()
    e = np.exp(w.numpy())
    np.testing.assert_allclose(tf.math.softplus(v).numpy(), e, rtol=1e-12)
    np.testing.assert_allclose(slope, e / -np.expm1(-e), rtol=1e-9)
    for start in w.numpy():
        parameter.unconstrained.assign(parameter.unconstrained_from_sampling(start))
        assert parameter.sampling_start() == pytest.approx(start, rel=1e-12)


def test_the_default_prior_of_a_bounded_parameter_is_normal_in_log_value_above_the_bound():
    parameter = pigp.Parameter(3.0, lower=1.0)
    prior = pigp.inference.nuts.default_prior(parameter)
    values = np.array([1.5, 2.0, 7.0])
    expected = scipy.stats.lognorm(s=2.0, scale=2.0).logpdf(values - 1.0)
    np.testing.assert_allclose(prior.log_prob(values).numpy(), expected, rtol=1e-12)


def test_sampling_exact_data_says_how_to_set_a_floor():
    X = np.linspace(0, 1, 8)[:, None]
    kernel = pigp.kernels.SquaredExponential(
        variance=pigp.Parameter(1.0, prior=tfd.LogNormal(0.0, 1.0)),
        lengthscales=pigp.Parameter([0.3], trainable=False),
    )
    model = pigp.PIGP(kernel, D("x", 2), noise_u=0, dims=("x",))
    model.fit(X, np.sin(3 * X[:, 0]), steps=20)
    assert model.noise_u.numpy() == 0.0
    with pytest.warns(RuntimeWarning, match=r"\['u'\] are exact .* lower=1e-4"):
        samples = model.sample(num_results=3, num_burnin=2, num_chains=1)
    assert np.all(np.isfinite(samples["kernel.variance"]))


def test_sample_draws_the_noises_fit_found_exact_above_a_floor():
    """Defaults on exact data: fit keeps u and f exact; sample draws their noise variances
    above 1e-4 (with a warning naming them), the model keeps its exact noises, and
    predict(samples=...) equals the mixture by hand over a model given those floors."""
    x = np.linspace(0, 1, 7)[:, None]
    x_f = np.linspace(0.05, 0.95, 9)[:, None]
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D("x", 2), dims=("x",))
    model.fit(x, np.sin(3 * x[:, 0]), x_f, -9 * np.sin(3 * x_f[:, 0]), steps=200)
    assert {c.kept for c in model.noise_choice.values()} == {"exact"}
    X = np.linspace(0, 1, 11)[:, None]
    before = model.predict(X)
    with pytest.warns(RuntimeWarning, match=r"\['f', 'u'\] are drawn above a floor of 0.0001"):
        samples = model.sample(num_results=20, num_burnin=20, num_chains=2, seed=3)
    assert samples.noise_floors == {"u": 1e-4, "f": 1e-4}
    assert np.all(samples["noise_u"] > 1e-4) and np.all(samples["noise_f"] > 1e-4)
    assert model.parameter_values()["noise_u"] == 0.0 == model.parameter_values()["noise_f"]
    np.testing.assert_array_equal(model.predict(X)[0], before[0])

    mean, var = model.predict(X, samples=samples, max_draws=10)
    floored = pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        D("x", 2),
        noise_u=pigp.Parameter(1e-3, lower=1e-4),
        noise_f=pigp.Parameter(1e-3, lower=1e-4),
        dims=("x",),
    )
    floored.fit(x, np.sin(3 * x[:, 0]), x_f, -9 * np.sin(3 * x_f[:, 0]), steps=0)
    parameters = floored.parameters_by_name()
    means, variances = [], []
    for draw in samples.draws(10):
        for name, value in draw.items():
            parameters[name].assign(value)
        m, v = floored.predict(X)
        means.append(m)
        variances.append(v)
    means = np.array(means)
    np.testing.assert_allclose(mean, means.mean(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, np.mean(variances, axis=0) + means.var(axis=0), rtol=1e-8)

    with pytest.warns(RuntimeWarning, match="are exact"):
        as_fitted = model.sample(num_results=3, num_burnin=2, num_chains=1, noise_floor=None)
    assert as_fitted.noise_floors == {} and "noise_u" not in as_fitted.names
    with pytest.raises(ValueError, match="noise_floor"):
        model.sample(noise_floor=-1.0)


def coefficient_model():
    """1-D, u'' = c u'' data on 6 noisy f points and 4 u points: only the positive
    coefficient c trainable, the data bounding it weakly."""
    rng = np.random.default_rng(1)
    X_u, X_f = np.linspace(0, 1, 4)[:, None], np.linspace(0.1, 0.9, 6)[:, None]
    c = pigp.Parameter(0.5, positive=True, name="c")
    kernel = pigp.kernels.SquaredExponential(
        variance=pigp.Parameter(1.0, trainable=False),
        lengthscales=pigp.Parameter([0.4], trainable=False),
    )
    model = pigp.PIGP(
        kernel,
        (c * D("x", 2)).with_dims("x"),
        noise_u=pigp.Parameter(1e-4, trainable=False),
        noise_f=pigp.Parameter(0.5, trainable=False),
        dims=("x",),
    )
    y_u = np.sin(2 * X_u[:, 0])
    y_f = -0.1 * 4 * np.sin(2 * X_f[:, 0]) + 0.3 * rng.standard_normal(6)
    return model, (X_u, y_u, X_f, y_f), c


@pytest.mark.slow
def test_a_coefficient_without_prior_is_sampled_under_a_normal_in_its_value():
    model, data, c = coefficient_model()
    model.fit(*data, steps=300)
    fitted = float(c.numpy())
    prior = pigp.inference.nuts.default_prior(c, coefficient=True)
    scale = max(fitted, 1.0)
    values = np.array([0.01, fitted, 2.0])
    np.testing.assert_allclose(
        prior.log_prob(values).numpy(),
        scipy.stats.truncnorm(-fitted / scale, np.inf, loc=fitted, scale=scale).logpdf(values),
        rtol=1e-10,
    )
    # The posterior of c on a grid of its value: the likelihood (by the model) times
    # SciPy's cut normal, against the draws of sample() with no prior given.
    grid = np.linspace(1e-4, 6.0, 1500)
    v0 = c.unconstrained.numpy()
    log_likelihood = []
    for value in grid:
        c.unconstrained.assign(np.log(np.expm1(value)))
        log_likelihood.append(model.log_marginal_likelihood())
    c.unconstrained.assign(v0)
    posteriors = {}
    for name, log_prior in (
        ("normal", scipy.stats.norm(fitted, scale).logpdf(grid)),
        ("log-normal", scipy.stats.lognorm(s=2.0, scale=fitted).logpdf(grid)),
    ):
        log_post = np.array(log_likelihood) + log_prior
        weights = np.exp(log_post - log_post.max())
        weights /= weights.sum()
        mean = np.sum(weights * grid)
        posteriors[name] = mean, np.sqrt(np.sum(weights * (grid - mean) ** 2))
    with pytest.warns(RuntimeWarning, match=r"no prior for \['operator.c'\]"):
        samples = model.sample(num_results=600, num_burnin=300, num_chains=2, seed=2)
    draws = samples["operator.c"]
    ess = float(samples.ess["operator.c"])
    mean, std = posteriors["normal"]
    assert ess > 100
    assert abs(draws.mean() - mean) < 4 * std / np.sqrt(ess)
    assert abs(draws.std() - std) < 4 * std / np.sqrt(2 * ess) + 0.02 * std
    # The test tells the two priors apart: under the log-normal the mean is elsewhere.
    assert abs(posteriors["log-normal"][0] - mean) > 8 * std / np.sqrt(ess)
    assert samples.priors["operator.c"].name == "default_value_prior"
