"""The PIGP model: likelihood, training, prediction, dtypes, determinism."""

import warnings

import numpy as np
import pytest
import scipy.stats
import tensorflow as tf

import pigp
from pigp.experiments import heat_design, heat_solution, relative_l2
from pigp.fitting import FitPlan, training
from pigp.fitting.noise import restart_if_noisy
from pigp.fitting.state import Snapshot
from pigp.kernels import covariance


def heat_data(n_f=30, seed=0):
    X_u, X_f = heat_design(seed, n_f)
    return X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1]


def se_heat_joint(X_u, X_f, variance, lx, lt, alpha, noise_u, noise_f):
    """The joint covariance from hand-derived SE heat blocks (NumPy)."""

    def parts(A, B):
        rx = A[:, None, 0] - B[None, :, 0]
        rt = A[:, None, 1] - B[None, :, 1]
        return rx, rt, variance * np.exp(-(rx**2) / (2 * lx**2) - rt**2 / (2 * lt**2))

    rx, rt, k = parts(X_u, X_u)
    Kuu = k
    rx, rt, k = parts(X_u, X_f)  # (d_t' - alpha d_x'x') k
    Kuf = k * (rt / lt**2) - alpha * k * (rx**2 / lx**4 - 1 / lx**2)
    rx, rt, k = parts(X_f, X_f)
    Kff = k * (1 / lt**2 - rt**2 / lt**4) + alpha**2 * k * (
        rx**4 / lx**8 - 6 * rx**2 / lx**6 + 3 / lx**4
    )
    return np.block(
        [[Kuu + noise_u * np.eye(len(X_u)), Kuf], [Kuf.T, Kff + noise_f * np.eye(len(X_f))]]
    )


@pytest.fixture(scope="module")
def fitted():
    X_u, y_u, X_f, y_f = heat_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(X_u, y_u, X_f, y_f, steps=600)
    return model, (X_u, y_u, X_f, y_f)


def test_log_likelihood_matches_independent_gaussian():
    X_u, y_u, X_f, y_f = heat_data(n_f=12)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.3, [0.6, 0.9]),
        pigp.operators.heat(0.8),
        noise_u=1e-4,
        noise_f=1e-3,
        jitter=0.0,
        standardize=False,
    )
    model.fit(X_u, y_u, X_f, y_f, steps=0)
    K = se_heat_joint(X_u, X_f, 1.3, 0.6, 0.9, 0.8, 1e-4, 1e-3)
    expected = scipy.stats.multivariate_normal(np.zeros(len(K)), K).logpdf(np.r_[y_u, y_f])
    assert model.log_marginal_likelihood() == pytest.approx(expected, rel=1e-9)


def test_loss_gradient_matches_finite_differences():
    X_u, y_u, X_f, y_f = heat_data(n_f=10)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.0, [0.5, 0.8]),
        pigp.operators.heat(1.0),
        noise_u=1e-3,
        noise_f=1e-2,
    )
    model.fit(X_u, y_u, X_f, y_f, steps=0)
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    variables = objective.variables
    with tf.GradientTape() as tape:
        loss = objective.nll(Xs, y)
    grads = [g.numpy() for g in tape.gradient(loss, variables)]
    h = 1e-6
    for var, grad in zip(variables, grads):
        base = var.numpy().copy()
        for i in np.ndindex(base.shape):
            step = np.zeros_like(base)
            step[i] = h
            var.assign(base + step)
            up = objective.nll(Xs, y).numpy()
            var.assign(base - step)
            down = objective.nll(Xs, y).numpy()
            var.assign(base)
            assert grad[i] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)


def test_fit_lowers_the_loss_and_predicts_the_heat_solution(fitted):
    model, (X_u, y_u, X_f, y_f) = fitted
    assert len(model.history) > 600  # 600 Adam steps, then L-BFGS iterations
    assert model.history[-1] < model.history[0] - 50
    X = np.random.default_rng(3).uniform(size=(400, 2))
    mean, _ = model.predict(X)
    assert relative_l2(mean, heat_solution(X)[0]) < 2e-3
    mean_f, _ = model.predict(X, output="f")
    assert relative_l2(mean_f, heat_solution(X)[1]) < 2e-2


def test_noise_free_interpolation_at_training_points(fitted):
    model, (X_u, y_u, X_f, y_f) = fitted
    mean_u, var_u = model.predict(X_u)
    mean_f, _ = model.predict(X_f, output="f")
    np.testing.assert_allclose(mean_u, y_u, atol=1e-4)
    np.testing.assert_allclose(mean_f, y_f, atol=1e-3 * np.abs(y_f).max())
    assert np.sqrt(var_u.max()) < 1e-3


def test_variance_is_the_diagonal_of_the_full_covariance(fitted):
    model, _ = fitted
    X = np.random.default_rng(4).uniform(size=(50, 2))
    for output in ("u", "f"):
        mean, var = model.predict(X, output=output)
        mean_full, cov = model.predict(X, output=output, full_cov=True)
        np.testing.assert_array_equal(mean, mean_full)
        # Both are prior minus explained variance: round-off is relative to the prior.
        prior = np.abs(model.covariance(X, X, output, output)).max()
        np.testing.assert_allclose(
            var, np.maximum(np.diag(cov), 0.0), rtol=1e-7, atol=1e-13 * prior
        )
        assert np.linalg.eigvalsh(cov).min() > -1e-10 * prior


def test_prediction_in_chunks_equals_one_pass(fitted):
    model, _ = fitted
    X = np.random.default_rng(5).uniform(size=(2500, 2))
    mean, var = model.predict(X)
    mean_small, var_small = model.predict(X[2040:2060])
    np.testing.assert_allclose(mean[2040:2060], mean_small, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(var[2040:2060], var_small, rtol=1e-10, atol=1e-18)


def test_covariance_blocks_are_transposes(fitted):
    model, (X_u, _, X_f, _) = fitted
    np.testing.assert_allclose(
        model.covariance(X_f, X_u, left="f", right="u"),
        model.covariance(X_u, X_f, left="u", right="f").T,
        rtol=1e-13,
    )


def test_same_data_same_result():
    X_u, y_u, X_f, y_f = heat_data(n_f=12)
    runs = []
    for _ in range(2):
        model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
        model.fit(X_u, y_u, X_f, y_f, steps=100)
        runs.append((model.parameter_values(), model.predict(X_f)))
    (p1, (m1, v1)), (p2, (m2, v2)) = runs
    for key in p1:
        np.testing.assert_array_equal(p1[key], p2[key])
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_array_equal(v1, v2)


def test_float32_model():
    X_u, y_u, X_f, y_f = heat_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), dtype="float32")
    model.fit(X_u, y_u, X_f, y_f, steps=600)
    X = np.random.default_rng(6).uniform(size=(300, 2))
    mean, var = model.predict(X)
    assert np.all(np.isfinite(var))
    assert relative_l2(mean, heat_solution(X)[0]) < 1e-2


@pytest.mark.parametrize(
    "n_f,kernel",
    [
        (12, lambda: pigp.kernels.SquaredExponential(1.0, [0.4, 0.6])),
        (600, lambda: pigp.kernels.SquaredExponential(1.0, [0.4, 0.6])),
        (12, lambda: pigp.kernels.SpectralMixture(1, lengthscales=[0.4, 0.6], frequencies=0.7)),
    ],
    ids=["se-whole", "se-blocks-lapack", "sm-whole-value-blocks-gradient"],
)
def test_training_gradient_identity_matches_autodiff_through_cholesky(n_f, kernel):
    """fit's gradient, 0.5 tr((K^-1 - a a') dK) by one VJP, with TensorFlow's Cholesky
    (small N) and with LAPACK (N >= 500), against autodiff through tf.linalg.cholesky;
    for the spectral mixture below 500 points K is taken on the whole matrix and its
    gradient block by block (``covariance.whole_gradient``)."""
    X_u, y_u, X_f, y_f = heat_data(n_f=n_f)
    alpha = pigp.Parameter(1.3, name="diffusivity")
    model = pigp.PIGP(
        kernel(),
        pigp.operators.heat(alpha),
        noise_u=1e-2,
        noise_f=1e-2,
    )
    model.fit(X_u, y_u, X_f, y_f, steps=0, optimizer="adam")
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    with tf.GradientTape() as tape:
        reference_loss = objective.nll(Xs, y)
    reference = tape.gradient(reference_loss, objective.variables)
    paths = {
        backend: objective.loss_and_gradient(Xs, y, backend) for backend in ("tensorflow", "lapack")
    }
    assert objective.backend(len(y.numpy())) == ("lapack" if n_f == 600 else "tensorflow")
    expected = n_f == 12 and isinstance(model.kernel, pigp.kernels.SquaredExponential)
    assert covariance.whole_gradient(model.kernel, Xs, model.dtype) == expected
    for name, (loss, grads) in paths.items():
        assert float(loss) == pytest.approx(float(reference_loss), rel=1e-10), name
        for g, r in zip(grads, reference):
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


def test_laplace_holds_fixed_what_curves_down_and_says_so():
    """Away from a minimum (alpha = 2, noise at its start, no training) the loss curves
    down along alpha and the noises: they are reported as inf with a warning, and the
    other stds equal those of a model in which those parameters are not trainable."""
    X_u, y_u, X_f, y_f = heat_data(n_f=12)

    def model(trainable):
        m = pigp.PIGP(
            pigp.kernels.SquaredExponential(1.0, [0.5, 0.8]),
            pigp.operators.heat(pigp.Parameter(2.0, trainable=trainable, name="alpha")),
            noise_u=pigp.Parameter(1e-4, trainable=trainable),
            noise_f=pigp.Parameter(1e-3, trainable=trainable),
        )
        return m.fit(X_u, y_u, X_f, y_f, steps=0)

    with pytest.warns(RuntimeWarning, match="curves down or is flat along.*operator.alpha"):
        std = model(True).parameter_uncertainty()
    assert std["operator.alpha"] == np.inf and std["noise_u"] == np.inf
    conditional = model(False).parameter_uncertainty()
    assert set(conditional) == {"kernel.variance", "kernel.lengthscales"}
    np.testing.assert_allclose(std["kernel.variance"], conditional["kernel.variance"], rtol=1e-9)
    np.testing.assert_allclose(
        std["kernel.lengthscales"], conditional["kernel.lengthscales"], rtol=1e-9
    )
    assert np.all(np.isfinite(conditional["kernel.lengthscales"]))


@pytest.mark.slow
def test_auto_kernel_keeps_the_fit_of_higher_marginal_likelihood():
    """kernel="auto" fits each candidate from the same start (the diffusivity and the
    noises too) and keeps the better: the same numbers as fitting each alone."""
    rng = np.random.default_rng(0)
    X_u, X_f = rng.uniform(size=(20, 2)), rng.uniform(size=(20, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(2 * np.pi * X[:, 0])  # noqa: E731
    data = (X_u, u(X_u), X_f, (4 * np.pi**2 - 1) * u(X_f))

    def fitted(kernel):
        alpha = pigp.Parameter(2.0, name="diffusivity")
        return pigp.PIGP(kernel, pigp.operators.heat(diffusivity=alpha)).fit(*data)

    auto = fitted("auto")
    # An evolution equation (a column t): the docs' Decaying(SE) is a candidate too.
    candidates = pigp.fitting.auto_kernels(("x", "t"))
    assert list(candidates) == [*pigp.fitting.AUTO_KERNELS, "Decaying(SquaredExponential)"]
    assert list(auto.kernel_choice) == list(candidates)
    alone = {name: fitted(make()) for name, make in candidates.items()}
    for name, model in alone.items():
        assert auto.kernel_choice[name] == pytest.approx(model.log_marginal_likelihood(), rel=1e-9)
    best = max(alone, key=lambda name: alone[name].log_marginal_likelihood())
    assert type(auto.kernel).__name__ == type(alone[best].kernel).__name__
    X = rng.uniform(size=(30, 2))
    np.testing.assert_allclose(auto.predict(X)[0], alone[best].predict(X)[0], rtol=1e-9)
    assert auto.parameter_values()["operator.diffusivity"] == pytest.approx(
        alone[best].parameter_values()["operator.diffusivity"], rel=1e-9
    )


@pytest.mark.slow
def test_auto_kernel_passes_over_a_candidate_whose_fit_called_the_data_noise():
    """u_t - u_xx + r u = 0 (r = -1.5; u = e^((r - pi^2) t) sin(pi x)) from 30 sensors at
    0.5% noise and 30 zeros of the equation counted as evidence: the squared
    exponential's fit calls the sensors noise, with an evidence far above the others',
    and "auto" keeps Decaying(SE) instead, whose r holds the truth."""
    rng = np.random.default_rng(0)
    X_u, X_f = rng.uniform(size=(30, 2)), rng.uniform(size=(30, 2))
    u = np.exp((1.5 - np.pi**2) * X_u[:, 1]) * np.sin(np.pi * X_u[:, 0])
    y_u = u + 0.005 * np.sqrt(np.mean(u**2)) * rng.standard_normal(30)

    def fitted(kernel):
        r = pigp.Parameter(-1.0, name="r")
        operator = (pigp.operators.D("t") - pigp.operators.D("x", 2) + r).with_dims("x", "t")
        return pigp.PIGP(kernel, operator).fit(X_u, y_u, X_f, np.zeros(30))

    with pytest.warns(RuntimeWarning, match="explaining those data as noise"):
        alone = fitted(pigp.kernels.SquaredExponential())
    assert list(pigp.fitting.noise.called_noise(alone, pigp.fitting.default_plan())) == ["u"]
    with pytest.warns(RuntimeWarning, match="kept Decaying.*SquaredExponential had the higher"):
        auto = fitted("auto")
    evidence = auto.kernel_choice
    assert evidence["SquaredExponential"] == pytest.approx(alone.log_marginal_likelihood())
    assert evidence["SquaredExponential"] > evidence["Decaying(SquaredExponential)"]
    assert type(auto.kernel).__name__ == "Decaying"
    low, high = auto.parameter_intervals()["operator.r"]
    assert low < -1.5 < high and high - low < 0.2


def test_auto_kernel_is_the_only_string_accepted():
    with pytest.raises(ValueError, match="kernel: expected a pigp.kernels.Kernel or 'auto'"):
        pigp.PIGP("se", pigp.operators.heat(1.0))


def test_laplace_std_is_inf_not_nan_where_a_value_rounded_to_its_bound():
    """A noise variance whose variable sank to -930 is 0.0 in float64: its slope is 0
    and the loss has no curvature along it; its std is inf, never NaN."""
    X_u, y_u, X_f, y_f = heat_data(n_f=12)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(1.0, [0.4, 0.6]), pigp.operators.heat(1.0))
    model.fit(X_u, y_u, X_f, y_f, steps=0)
    model.noise_u.unconstrained.assign(-930.0)
    assert model.parameter_values()["noise_u"] == 0.0
    with pytest.warns(RuntimeWarning):
        std = model.parameter_uncertainty()
    assert std["noise_u"] == np.inf
    assert all(np.all(~np.isnan(v)) for v in std.values())


def _reaction(noise_u=None, noise_f=None, level=0.0, plan=None):
    """``u'' - 4u = f`` on [0, 1], u = sin(3x) + x^2 exact at both ends, f at 15 points
    (with Gaussian noise of ``level`` times its RMS): the fitted model and u's relative
    L2 error on 201 points."""
    u = lambda x: np.sin(3 * x) + x**2
    f = lambda x: -9 * np.sin(3 * x) + 2 - 4 * u(x)
    X_b, X_f = np.array([[0.0], [1.0]]), np.linspace(0, 1, 15)[:, None]
    y_f = f(X_f[:, 0])
    y_f = y_f + level * np.sqrt(np.mean(y_f**2)) * np.random.default_rng(0).standard_normal(15)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.D("x", 2) - 4.0 * pigp.Identity,
        noise_u=noise_u,
        noise_f=noise_f,
        dims=("x",),
    )
    model.fit(X_b, u(X_b[:, 0]), X_f, y_f, plan=plan)
    x = np.linspace(0, 1, 201)[:, None]
    return model, relative_l2(model.predict(x)[0], u(x[:, 0]))


def test_exact_data_are_fitted_exactly_by_default():
    model, error = _reaction()
    assert error < 1e-7
    assert {name: c.kept for name, c in model.noise_choice.items()} == {"u": "exact", "f": "exact"}
    for name in ("u", "f"):  # within EXACT_EVIDENCE of the learned noise's evidence
        choice = model.noise_choice[name]
        assert choice.exact >= choice.learned - FitPlan().exact_evidence
    assert model.parameter_values()["noise_u"] == 0.0 and not model.noise_u.trainable
    assert "noise_u" not in dict(model.trainable_parameters())
    # The boundary values are reproduced to the jitter, with a std near 0 there.
    mean, var = model.predict(np.array([[0.0], [1.0]]))
    np.testing.assert_allclose(mean, [0.0, np.sin(3.0) + 1.0], atol=1e-8)
    assert np.sqrt(var).max() < 1e-4


def test_noise_zero_says_exact_and_is_not_learned():
    model, error = _reaction(noise_u=0, noise_f=0)
    assert error < 1e-7
    assert model.noise_choice == {} and model.trainable_parameters()[-1][0] == "kernel.lengthscales"
    assert model.noise_u.numpy() == 0.0 and model.noise_f.numpy() == 0.0


def test_noisy_data_keep_a_learned_noise():
    model, error = _reaction(level=0.05)
    assert model.noise_choice["f"].kept == "learned"
    assert model.noise_choice["f"].exact < model.noise_choice["f"].learned - 2.0
    assert model.noise_f.trainable and model.parameter_values()["noise_f"] > 1e-6
    assert error < 0.1


def _slow_heat(seed: int, noise: float):
    """The calibration benchmark's "slow" family: u = e^-2t sin(pi x) + x^2 t and
    f = u_t - 0.05 u_xx at 20 + 20 uniform random points, noise a fraction of each
    set's root mean square."""
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.uniform(0, 1, (20, 2)), rng.uniform(0, 1, (20, 2))
    x, t = X_u[:, 0], X_u[:, 1]
    y_u = np.exp(-2 * t) * np.sin(np.pi * x) + x**2 * t
    x, t = X_f[:, 0], X_f[:, 1]
    u_t = -2 * np.exp(-2 * t) * np.sin(np.pi * x) + x**2
    u_xx = -(np.pi**2) * np.exp(-2 * t) * np.sin(np.pi * x) + 2 * t
    y_f = u_t - 0.05 * u_xx
    y_u = y_u + noise * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(20)
    y_f = y_f + noise * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(20)
    return X_u, y_u, X_f, y_f


def _slow_model(**noises):
    alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(diffusivity=alpha), **noises
    )
    return model, alpha


def _slow_fit(seed: int, noise: float, plan=None):
    """``_slow_model()`` fitted to ``_slow_heat(seed, noise)`` (its warnings ignored)."""
    model, alpha = _slow_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(*_slow_heat(seed, noise), plan=plan)
    return model, alpha


@pytest.mark.slow
def test_a_fit_that_calls_the_data_noise_is_restarted_from_a_quieter_start():
    """On this design the default start ends at "u is noise" (a learned noise variance
    of several percent of u's mean square, alpha near its start of 2); the restart
    from noises 10x lower reaches the fit that a start at 1e-4, given by hand, reaches,
    15 nats higher, with alpha near the truth (0.05)."""
    data = _slow_heat(14, 0.05)
    model, alpha = _slow_fit(14, 0.05)
    restart = model.noise_restart
    assert restart is not None and restart.sets == ("u",) and restart.kept == "restart"
    assert restart.restart > restart.first + 10.0
    assert restart.restart == pytest.approx(model.log_marginal_likelihood(), abs=1e-9)
    reference, reference_alpha = _slow_model(
        noise_u=pigp.Parameter(1e-4, positive=True), noise_f=pigp.Parameter(1e-4, positive=True)
    )
    reference.fit(*data)
    assert model.log_marginal_likelihood() == pytest.approx(
        reference.log_marginal_likelihood(), abs=1e-3
    )
    assert float(alpha.numpy()) == pytest.approx(float(reference_alpha.numpy()), rel=1e-3)
    assert 0.02 < float(alpha.numpy()) < 0.05
    # Without the restart the default start stays in the other optimum.
    first, first_alpha = _slow_fit(14, 0.05, FitPlan(noise_restart=None))
    assert first.noise_restart is None
    assert first.log_marginal_likelihood() == pytest.approx(restart.first, abs=1e-6)
    assert float(first_alpha.numpy()) > 1.0
    # A fit whose learned noise is small is not restarted.
    quiet, _ = _slow_model()
    quiet.fit(*_slow_heat(0, 0.05))
    assert quiet.noise_restart is None


@pytest.mark.slow
def test_a_restart_that_leaves_exact_data_noisy_starts_the_coefficients_lower():
    """On exact data of this design the default start (alpha 2) ends with alpha 3.65 and
    the u noise at 2.7% of its mean square, and so does the quieter restart; the third
    start, the coefficients a tenth of theirs, finds the exact data explained with the
    true alpha (0.05), tens of nats higher."""
    model, alpha = _slow_fit(15, 0.0)
    restart = model.noise_restart
    assert restart is not None and restart.sets == ("u",) and restart.kept == "coefficients"
    assert restart.coefficients > max(restart.first, restart.restart) + 50.0
    assert restart.coefficients == pytest.approx(model.log_marginal_likelihood(), abs=1e-6)
    assert float(alpha.numpy()) == pytest.approx(0.05, rel=1e-2)
    # Without the third start the fit keeps the noisy optimum.
    first, first_alpha = _slow_fit(15, 0.0, FitPlan(coefficient_restart_start=None))
    assert first.noise_restart.coefficients is None and first.noise_restart.kept == "first"
    assert float(first_alpha.numpy()) > 1.0
    assert first.parameter_values()["noise_u"] > 0.01


@pytest.mark.slow
@pytest.mark.parametrize("bounded", [False, True])
def test_a_noise_started_by_the_user_is_restarted_too(bounded):
    """Seed 8 at 5% noise with u's and f's noise variances started at their true values
    (learned; a number, or a Parameter bounded below by 1e-5): from there the fit ended
    with alpha 3.13 and u's noise at 11% of its mean square, 24 nats below the fit that
    the default workflow (noises left to ``fit``) reaches; the restart from noises a
    tenth of theirs (above the bound) reaches that fit."""
    data = _slow_heat(8, 0.05)
    _, u, _, f = _slow_heat(8, 0.0)  # the same points, without the noise
    scale = np.mean(data[1] ** 2)  # standardised units: u's mean square
    true = {"noise_u": 0.05**2 * np.mean(u**2) / scale, "noise_f": 0.05**2 * np.mean(f**2) / scale}
    if bounded:
        true = {k: pigp.Parameter(v, lower=1e-5) for k, v in true.items()}
    model, alpha = _slow_model(**true)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(*data)
    default, default_alpha = _slow_fit(8, 0.05)
    restart = model.noise_restart
    assert restart is not None and restart.sets == ("u",) and restart.kept == "restart"
    assert restart.restart > restart.first + 20.0
    assert model.log_marginal_likelihood() == pytest.approx(
        default.log_marginal_likelihood(), abs=1e-2
    )
    assert float(alpha.numpy()) == pytest.approx(float(default_alpha.numpy()), rel=1e-2)
    assert 0.02 < float(alpha.numpy()) < 0.05


def _scripted_restart(k, **noises):
    """A fitted-to-nothing (``steps=0``) model of ``u'' - k u = f`` on 12 points, for
    calling ``pigp.fitting.noise.restart_if_noisy`` with a scripted optimiser: ``(model,
    objective, Xs, y, start)``."""
    x = np.linspace(0, 1, 12)[:, None]
    y_u = np.sin(3 * x[:, 0]) + 0.3 * np.random.default_rng(1).standard_normal(12)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.D("x", 2) - k * pigp.Identity,
        dims=("x",),
        **noises,
    )
    model.fit(x, y_u, x, -13 * np.sin(3 * x[:, 0]), steps=0)
    objective, (Xs, y) = model.objective(), model.data.tensors(model.dtype)
    return model, objective, Xs, y, Snapshot(objective.variables)


@pytest.mark.parametrize(
    "first, restart, third, kept",
    [
        # the lowest loss with louder noise: not kept; the third, quieter and lower, is
        ((0.09, 13.0), (0.3, 4.0), (0.05, 0.4), "coefficients"),
        # the restart quieter and lower but still loud; the third higher: the restart
        ((0.09, 13.0), (0.05, 4.0), (0.02, 0.4), "restart"),
        # both quieter and lower: the lower of the two
        ((0.09, 13.0), (0.05, 0.4), (0.02, 4.0), "coefficients"),
        # the restart quiet (below NOISE_RESTART) and lower: no third start
        ((0.02, 13.0), (0.009, 4.0), None, "restart"),
        # neither lower: the first fit, its values back
        ((0.09, 13.0), (0.05, 13.0), (0.02, 13.0), "first"),
    ],
)
def test_fits_restarts_keep_the_lowest_loss_among_fits_that_call_less_of_the_data_noise(
    first, restart, third, kept
):
    """``fit``'s restarts with a scripted optimiser that puts u's noise (a fraction of
    its standardised mean square, 1) and the coefficient k where each case says: the
    rule keeps the fit of lowest loss among those whose u noise is below the first's,
    starts the restart from the noises a tenth of their start and the third from k a
    tenth of its start too, and runs the third only where the restart is not kept or
    leaves u's noise above 1%."""
    k = pigp.Parameter(4.0, positive=True, name="k")
    model, objective, Xs, y, start = _scripted_restart(k)
    noises = {s.name: s.noise for s in model.data.sets}
    noise_start = {name: float(p.numpy()) for name, p in noises.items()}

    def loss_at(values):
        noises["u"].assign(values[0])
        noises["f"].assign(1e-3)
        k.assign(values[1])
        return float(objective.loss(Xs, y.numpy()))

    losses = {"first": loss_at(first), "restart": loss_at(restart)}
    if third is not None:
        losses["coefficients"] = loss_at(third)
    loss_at(first)
    calls = []

    def optimise(adam, lbfgs):
        calls.append(tuple(float(p.numpy()) for p in (noises["u"], noises["f"], k)))
        loss_at([restart, third][len(calls) - 1])

    histories = training.History(), training.History()
    returned = restart_if_noisy(
        model, objective, Xs, y, start, optimise, *histories, FitPlan(), model.report
    )
    # Each case's premises: which fits are quieter and lower than the first.
    quieter = {"restart": restart[0] < first[0]}
    if third is not None:
        quieter["coefficients"] = third[0] < first[0]
    candidates = [n for n in quieter if quieter[n] and losses[n] < losses["first"]]
    assert kept == (min(candidates, key=losses.get) if candidates else "first")
    assert model.noise_restart.kept == kept
    # The starts: the noises a tenth of theirs, then k a tenth of its start too.
    tenth = (0.1 * noise_start["u"], 0.1 * noise_start["f"])
    assert calls[0] == pytest.approx((*tenth, 4.0))
    if third is None:
        assert len(calls) == 1 and model.noise_restart.coefficients is None
    else:
        assert calls[1] == pytest.approx((*tenth, 0.4))
        assert model.noise_restart.coefficients == pytest.approx(-losses["coefficients"])
    assert model.noise_restart.first == pytest.approx(-losses["first"])
    assert model.noise_restart.restart == pytest.approx(-losses["restart"])
    kept_values = {"first": first, "restart": restart, "coefficients": third}[kept]
    assert (float(noises["u"].numpy()), float(k.numpy())) == pytest.approx(kept_values)
    assert (returned[0] is histories[0]) == (kept == "first")


def test_a_noise_shared_by_two_sets_is_restarted_a_tenth_of_its_start_once():
    """One Parameter as both sets' noise, ending loud: each restart starts it at a tenth
    of its start, not a hundredth (a set at a time)."""
    shared = pigp.Parameter(2e-3, positive=True, name="shared")
    k = pigp.Parameter(4.0, positive=True)
    model, objective, Xs, y, start = _scripted_restart(k, noise_u=shared, noise_f=shared)
    shared.assign(0.09)
    starts = []
    restart_if_noisy(
        model,
        objective,
        Xs,
        y,
        start,
        lambda *h: starts.append(float(shared.numpy())),
        None,
        None,
        FitPlan(),
        model.report,
    )
    assert starts == pytest.approx([2e-4, 2e-4])


def test_a_refit_that_stops_closing_the_gap_ends_early_with_the_same_decision(monkeypatch):
    """The exact-data trial's refit of a noisy set ends once it stops closing the gap
    to ``plan.exact_evidence`` (``plan.exact_refit_rate``); run to convergence instead
    (``exact_refit_rate=None``) it reaches the same decision, in more iterations."""
    lengths, minimize = [], pigp.fitting.training.minimize_lbfgs

    def counted(*args, **kwargs):
        history = minimize(*args, **kwargs)
        if kwargs.get("fixed"):  # the trial's refits hold the noise
            lengths.append(len(history.losses))
        return history

    monkeypatch.setattr(pigp.fitting.training, "minimize_lbfgs", counted)
    runs = {}
    for rate in (None, FitPlan().exact_refit_rate):
        lengths.clear()
        model, error = _reaction(level=0.05, plan=FitPlan(exact_refit_rate=rate))
        runs[rate] = (model.noise_choice["f"], list(lengths), error)
    (full, full_lengths, full_error), (early, early_lengths, early_error) = runs.values()
    assert full.kept == early.kept == "learned"
    assert early.exact < early.learned - FitPlan().exact_evidence
    assert early.exact <= full.exact + 1e-9  # stopped on the way to the converged refit
    assert full.learned == pytest.approx(early.learned, abs=1e-9)
    assert early_error == pytest.approx(full_error, rel=1e-9)  # the learned fit is kept
    assert len(early_lengths) == len(full_lengths) == 1
    assert early_lengths[0] < full_lengths[0]


def test_lbfgs_stop_ends_the_run_at_the_best_values():
    """``minimize_lbfgs``'s ``stop`` ends SciPy's run after the iteration it returns
    True on; the variables are left at the lowest loss evaluated."""
    model, _ = _reaction(level=0.05)
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    for v in objective.variables:  # away from the optimum, so that L-BFGS-B has work
        v.assign(v + 0.5)
    history = pigp.fitting.training.minimize_lbfgs(
        objective, Xs, y, 100, stop=lambda losses: len(losses) >= 3
    )
    assert len(history.losses) == 3
    loss = float(objective.loss(Xs, y.numpy()))
    assert loss == pytest.approx(min(history.evaluations), rel=1e-12)
    assert loss < history.evaluations[0]


def test_a_refit_decides_again_and_the_decision_survives_save_and_load(tmp_path):
    model, _ = _reaction()
    assert not model.noise_u.trainable
    model.fit(*(np.array([[0.0], [1.0]]), np.array([0.3, -0.2])), steps=0)  # no training
    assert model.noise_u.trainable and model.noise_u.numpy() == pytest.approx(1e-3)
    model, _ = _reaction()
    path = tmp_path / "exact.npz"
    model.save(path)
    loaded = pigp.load(path)
    assert loaded.noise_decided_by_fit == {"u", "f"}
    assert [s.noise_decided_by_fit for s in loaded.data.sets] == [True, True]
    assert not loaded.noise_u.trainable and loaded.noise_u.numpy() == 0.0
    x = np.linspace(0, 1, 7)[:, None]
    np.testing.assert_array_equal(loaded.predict(x)[0], model.predict(x)[0])


def test_laplace_gives_stds_where_the_hessian_is_partly_not_finite(monkeypatch):
    """A spectral-mixture fit of Raissi's problem with 1% noise (seed 0) whose loss Hessian
    has NaNs along a frequency (as nested tapes through the cosine gave where a frequency
    sat at 0; whether a fit lands there depends on the optimiser's path, so the NaNs are
    put into the fit's own Hessian here): the entry is held fixed and named, and the
    other stds are those of the Hessian without it (NumPy), the diffusivity's holding
    the truth."""
    from scipy.stats import qmc

    from pigp.inference import laplace as uncertainty

    design = qmc.LatinHypercube(d=2, seed=0)
    X_u, X_f = design.random(20), design.random(20)
    u = lambda X: np.exp(-X[:, 1]) * np.sin(2 * np.pi * X[:, 0])
    rng = np.random.default_rng(0)
    y_u = u(X_u) + 0.01 * np.sqrt(np.mean(u(X_u) ** 2)) * rng.standard_normal(20)
    f = (4 * np.pi**2 - 1) * u(X_f)
    y_f = f + 0.01 * np.sqrt(np.mean(f**2)) * rng.standard_normal(20)
    alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
    model = pigp.PIGP(
        pigp.kernels.SpectralMixture(1), pigp.operators.heat(alpha), noise_u=1e-3, noise_f=1e-3
    )
    model.fit(X_u, y_u, X_f, y_f)
    objective = model.objective()
    H = uncertainty.hessian(objective, *model.data.tensors(model.dtype))
    assert np.all(np.isfinite(H))
    entries = [
        f"{name}[{i}]" if p.shape != () else name
        for name, p in model.trainable_parameters()
        for i in range(int(np.prod(p.shape)))
    ]
    bad = entries.index("kernel.frequencies[1]")
    broken = H.copy()
    broken[bad, :] = broken[:, bad] = np.nan
    gradient = uncertainty.hessian_and_gradient(objective, *model.data.tensors(model.dtype))[1]
    monkeypatch.setattr(uncertainty, "hessian_and_gradient", lambda *args: (broken, gradient))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        std = model.parameter_uncertainty()
    messages = [str(w.message) for w in caught]
    assert any(
        "the loss Hessian is not finite along kernel.frequencies[1]" in m for m in messages
    ), messages
    assert all("operator.diffusivity" not in m for m in messages)
    assert std["kernel.frequencies"][0, 1] == np.inf
    # Held: the NaN entry and any entry without curvature (std inf), as laplace does.
    stds = np.concatenate([np.ravel(std[name]) for name, _ in model.trainable_parameters()])
    kept = [i for i in range(len(H)) if i != bad and np.isfinite(stds[i])]
    variance = np.diag(np.linalg.inv(H[np.ix_(kept, kept)]))[
        kept.index(entries.index("operator.diffusivity"))
    ]
    v = alpha.unconstrained.numpy()
    slope = 1.0 / (1.0 + np.exp(-v))  # d softplus(v) / dv
    assert std["operator.diffusivity"] == pytest.approx(slope * np.sqrt(variance), rel=1e-10)
    assert abs(alpha.numpy() - 1.0) < 3 * std["operator.diffusivity"]


def conductivity_1d(X):
    """a(x) = 1 + x^2."""
    return 1.0 + tf.square(X[:, 0])


def conductivity_slope_1d(X):
    """a'(x) = 2 x."""
    return 2.0 * X[:, 0]


def _darcy_1d(scale=1.0):
    """``-(k a u')' = -k a u'' - k a' u'`` written out, with ``a(x) = 1 + x^2``."""
    D = pigp.operators.D
    return -scale * (conductivity_1d * D(0, 2)) - scale * (conductivity_slope_1d * D(0))


def _darcy_data(n_f=15):
    """u = sin(pi x) on [0, 1]: f = -(a u')' at n_f interior points, u at both ends."""
    x = np.linspace(0.03, 0.97, n_f)
    f = -(2 * x * np.pi * np.cos(np.pi * x) - (1 + x**2) * np.pi**2 * np.sin(np.pi * x))
    return np.array([[0.0], [1.0]]), np.zeros(2), x[:, None], f


@pytest.mark.slow
def test_a_coefficient_that_varies_solves_and_learns_a_1d_darcy_problem():
    """Forward: u from f = -(a u')' and the boundary values, against sin(pi x); inverse:
    a scalar factor k of a learned from u and f data (truth 1, start 2), its loss and
    gradient against the uncompiled reference; predictions of a coefficient that varies
    against the same coefficient applied to the prediction of its derivative."""
    X_b, y_b, X_f, f = _darcy_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), _darcy_1d())
    model.fit(X_b, y_b, X_f, f)
    x = np.linspace(0, 1, 101)[:, None]
    mean, _ = model.predict(x)
    error = np.linalg.norm(mean - np.sin(np.pi * x[:, 0])) / np.linalg.norm(np.sin(np.pi * x[:, 0]))
    assert error < 1e-3
    # a(x) u'(x): the coefficient at the prediction points times the derivative's posterior.
    D = pigp.operators.D
    flux_mean, flux_var = model.predict(x, output=conductivity_1d * D(0))
    slope_mean, slope_var = model.predict(x, output=D(0))
    a = 1 + x[:, 0] ** 2
    np.testing.assert_allclose(flux_mean, a * slope_mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(flux_var, a**2 * slope_var, rtol=1e-7, atol=1e-12)

    k = pigp.Parameter(2.0, name="k")
    inverse = pigp.PIGP(pigp.kernels.SquaredExponential(), _darcy_1d(k))
    X_u = np.linspace(0.05, 0.95, 8)[:, None]
    inverse.fit(X_u, np.sin(np.pi * X_u[:, 0]), X_f, f, steps=0)
    objective = inverse.objective()
    Xs, y = inverse.data.tensors(inverse.dtype)
    loss, grads = objective.loss_and_gradient(Xs, y)
    with tf.GradientTape() as tape:
        reference = objective.nll(Xs, y)
    expected = tape.gradient(reference, objective.variables)
    assert float(loss) == pytest.approx(float(reference), rel=1e-10)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-7, atol=1e-9)
    inverse.fit(X_u, np.sin(np.pi * X_u[:, 0]), X_f, f)
    assert inverse.parameter_values()["operator.k"] == pytest.approx(1.0, abs=1e-2)


def test_a_coefficient_that_varies_is_saved_by_its_functions_path(tmp_path):
    X_b, y_b, X_f, f = _darcy_data(8)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), _darcy_1d(pigp.Parameter(1.2)))
    model.fit(X_b, y_b, X_f, f, steps=20)
    model.save(tmp_path / "darcy.npz")
    loaded = pigp.load(tmp_path / "darcy.npz")
    x = np.linspace(0, 1, 7)[:, None]
    for output in ("u", "f"):
        np.testing.assert_array_equal(model.predict(x, output)[0], loaded.predict(x, output)[0])


def test_difference_hessian_matches_the_nested_tapes(rng):
    """The Hessian of large problems (central differences of the gradient) against the
    nested tapes' on a small one: the same to 1e-5 of its scale (the O(h^2) error of
    central differences at step 1e-3 is ~2e-6 here); variables restored."""
    X_u, X_f = rng.uniform(size=(10, 2)), rng.uniform(size=(12, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
    alpha = pigp.Parameter(1.5, positive=True, name="diffusivity")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(alpha), noise_u=1e-4)
    model.fit(X_u, u(X_u), X_f, (np.pi**2 - 1) * u(X_f), steps=50, optimizer="adam")
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    before = [v.numpy().copy() for v in objective.variables]
    tapes = pigp.inference.laplace.hessian(objective, Xs, y)
    differences = pigp.inference.laplace.difference_hessian(objective, Xs, y)
    np.testing.assert_allclose(differences, tapes, atol=1e-5 * np.abs(tapes).max())
    for v, b in zip(objective.variables, before):
        np.testing.assert_array_equal(v.numpy(), b)


def test_laplace_intervals_are_the_unconstrained_gaussian_mapped_and_stay_positive():
    """A weakly informed diffusivity (20 u and 20 f values, 5% noise): the interval is
    softplus(v +- 1.96 sd) with sd from a central-difference Hessian of the log marginal
    likelihood in the unconstrained variables; above 0 and wider above the value than
    below it."""
    rng = np.random.default_rng(3)
    X_u, X_f = rng.uniform(0, 1, (20, 2)), rng.uniform(0, 1, (20, 2))
    u = lambda X: np.exp(-2 * X[:, 1]) * np.sin(np.pi * X[:, 0]) + X[:, 0] ** 2 * X[:, 1]
    u_t = lambda X: -2 * np.exp(-2 * X[:, 1]) * np.sin(np.pi * X[:, 0]) + X[:, 0] ** 2
    u_xx = lambda X: -(np.pi**2) * np.exp(-2 * X[:, 1]) * np.sin(np.pi * X[:, 0]) + 2 * X[:, 1]
    y_u, y_f = u(X_u), u_t(X_f) - 0.05 * u_xx(X_f)
    y_u = y_u + 0.05 * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(20)
    y_f = y_f + 0.05 * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(20)
    alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(diffusivity=alpha))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_u, y_u, X_f, y_f)
    intervals = model.parameter_intervals()
    std = model.parameter_uncertainty()

    variables = [p.unconstrained for _, p in model.trainable_parameters()]
    assert all(v.shape.rank <= 1 for v in variables)
    centre = np.concatenate([np.ravel(v.numpy()) for v in variables])

    def loss(x):
        offset = 0
        for v in variables:
            size = int(np.prod(v.shape))
            v.assign(np.reshape(x[offset : offset + size], v.shape))
            offset += size
        return -model.log_marginal_likelihood()

    # The Hessian's least eigenvalue is ~0.01 (the kernel variance is barely fixed): at
    # h = 1e-4 the loss's rounding moved it by 2% and alpha's sd by 0.2%; at 1e-3 the
    # sd (0.353039) is within 3e-5 of the exact Hessian's (0.353048).
    h, n = 1e-3, len(centre)
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            total = 0.0
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                x = centre.copy()
                x[i] += si * h
                x[j] += sj * h
                total += si * sj * loss(x)
            H[i, j] = H[j, i] = total / (4 * h * h)
    loss(centre)
    # Entries without curvature (std inf) are held fixed, as parameter_uncertainty does.
    names = [n for n, p in model.trainable_parameters() for _ in range(int(np.prod(p.shape)))]
    stds = np.concatenate([np.ravel(std[n]) for n, _ in model.trainable_parameters()])
    kept = np.flatnonzero(np.isfinite(stds))
    index = names.index("operator.diffusivity")
    at = list(kept).index(index)
    sd = np.sqrt(np.linalg.inv(H[np.ix_(kept, kept)])[at, at])
    v = centre[index]
    softplus = lambda x: np.logaddexp(0.0, x)
    low, high = intervals["operator.diffusivity"]
    assert low == pytest.approx(softplus(v - 1.959964 * sd), rel=1e-3)
    assert high == pytest.approx(softplus(v + 1.959964 * sd), rel=1e-3)
    value = float(alpha.numpy())
    assert 0 < low < value < high
    assert high - value > value - low  # wider above the value than below it
    # Every parameter gets an interval holding its value.
    for name, p in model.trainable_parameters():
        lo, hi = intervals[name]
        assert np.all(np.asarray(lo) < p.numpy()) and np.all(p.numpy() < np.asarray(hi))


def test_laplace_intervals_refuse_a_level_outside_0_1(fitted):
    model, _ = fitted
    for level in (0.0, 1.0, 1.5, -0.1, "0.9", float("nan")):
        with pytest.raises(ValueError, match=r"level: expected a probability in \(0, 1\)"):
            model.parameter_intervals(level)


def test_zero_valued_data_fitted_exactly_are_named_when_the_field_collapses():
    """A homogeneous heat equation (f = 0 at 20 points) with 20 noisy u values and every
    noise learned: the likelihood of the zeros grows without bound as the kernel
    variance shrinks, the fit ends at u = 0 with the u data called noise, and the
    warning names the zero-valued set as the cause."""
    rng = np.random.default_rng(0)
    u = lambda X: np.exp(-(np.pi**2) * 0.5 * X[:, 1]) * np.sin(np.pi * X[:, 0])
    X_u, X_f = rng.uniform(0, 1, (20, 2)), rng.uniform(0, 1, (20, 2))
    y_u = u(X_u) + 0.01 * rng.standard_normal(20)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.operators.heat(pigp.Parameter(1.0, positive=True, name="diffusivity")),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X_u, y_u, X_f, np.zeros(20))
    values = model.parameter_values()
    assert values["kernel.variance"] < 1e-6 and values["noise_u"] > 0.5
    messages = [
        str(w.message) for w in caught if "noise variance of the 'u' data" in str(w.message)
    ]
    assert len(messages) == 1
    assert "The ['f'] data are all zero" in messages[0]
    assert "condition=True" in messages[0]
