"""The posterior is never stale: predictions always use the current parameter values."""

import numpy as np
import pytest

import pigp


def heat_problem(seed=0, n_u=10, n_f=15):
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.uniform(size=(n_u, 2)), rng.uniform(size=(n_f, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # noqa: E731
    return X_u, u(X_u), X_f, (np.pi**2 - 1.0) * u(X_f)


def fresh_copy(model, data):
    """A new model with the same parameter values (bit for bit), fitted with steps=0."""
    values = model.parameters_by_name()
    kernel = pigp.kernels.SquaredExponential(
        values["kernel.variance"].numpy(), values["kernel.lengthscales"].numpy()
    )
    copy = pigp.PIGP(
        kernel,
        pigp.operators.heat(1.0),
        noise_u=values["noise_u"].numpy(),
        noise_f=values["noise_f"].numpy(),
    )
    for name, p in copy.parameters_by_name().items():
        if p.positive == values[name].positive:
            p.unconstrained.assign(values[name].unconstrained)
        else:  # a noise fit found exact (0, pinned) is copied as noise=0
            assert p.numpy() == values[name].numpy() == 0.0
    return copy.fit(*data, steps=0)


def assert_same_prediction(model, reference, X):
    for output in ("u", "f"):
        mean, var = model.predict(X, output=output)
        mean_ref, var_ref = reference.predict(X, output=output)
        np.testing.assert_allclose(mean, mean_ref, rtol=1e-10, atol=1e-10 * np.abs(mean_ref).max())
        np.testing.assert_allclose(var, var_ref, rtol=1e-8, atol=1e-10 * var_ref.max())


def test_predict_after_assign_equals_a_fresh_model():
    data = heat_problem()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(*data, steps=200, optimizer="adam")
    X = np.random.default_rng(1).uniform(size=(60, 2))
    before, _ = model.predict(X)  # a snapshot at the fitted values
    lengthscales = model.kernel.lengthscales
    lengthscales.assign(3 * lengthscales.numpy())
    after, _ = model.predict(X)
    assert np.max(np.abs(after - before)) > 1e-3 * np.abs(before).max()
    assert_same_prediction(model, fresh_copy(model, data), X)


def test_predict_inside_a_callback_follows_training():
    data = heat_problem(seed=2)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    X = np.random.default_rng(3).uniform(size=(40, 2))
    seen = []

    def callback(step, loss, model):
        seen.append(model.predict(X)[0])
        assert_same_prediction(model, fresh_copy(model, data), X)

    model.fit(*data, steps=500, optimizer="adam", callback=callback)
    assert len(seen) == 2 and np.max(np.abs(seen[1] - seen[0])) > 1e-6


def test_refit_on_other_data_with_no_steps_uses_the_new_data():
    model = pigp.PIGP(pigp.kernels.SquaredExponential(1.0, [0.4, 0.6]), pigp.operators.heat(1.0))
    model.fit(*heat_problem(seed=4), steps=0)
    X = np.random.default_rng(5).uniform(size=(30, 2))
    model.predict(X)
    other = heat_problem(seed=6)
    model.fit(*other, steps=0)
    assert_same_prediction(model, fresh_copy(model, other), X)


def test_posterior_snapshot_is_reused_only_while_current():
    model = pigp.PIGP(pigp.kernels.SquaredExponential(1.0, [0.4, 0.6]), pigp.operators.heat(1.0))
    model.fit(*heat_problem(), steps=0)
    first = model.posterior()
    assert model.posterior() is first
    with pytest.raises(ValueError, match="read-only"):
        first.alpha[0] = 0.0
    model.noise_f.assign(2 * model.noise_f.numpy())
    second = model.posterior()
    assert second is not first
    # alpha = K^-1 y, with K from the public covariance blocks in data units.
    X_u, y_u, X_f, y_f = heat_problem()
    c2 = model.y_scale**2
    K = np.block(
        [
            [model.covariance(X_u, X_u, "u", "u"), model.covariance(X_u, X_f, "u", "f")],
            [model.covariance(X_f, X_u, "f", "u"), model.covariance(X_f, X_f, "f", "f")],
        ]
    )
    K[np.diag_indices(len(K))] += (
        np.r_[np.full(len(X_u), model.noise_u.numpy()), np.full(len(X_f), model.noise_f.numpy())]
        * c2
    )
    K += np.diag(
        model.jitter
        * np.r_[
            np.full(len(X_u), np.mean(np.diag(K)[:10])), np.full(len(X_f), np.mean(np.diag(K)[10:]))
        ]
    )
    alpha = np.linalg.solve(K / c2, np.r_[y_u, y_f] / model.y_scale)
    np.testing.assert_allclose(second.alpha, alpha, rtol=1e-7)


def test_predict_agrees_with_covariance():
    """predict's mean and covariance equal the Gaussian conditional written with
    covariance() blocks (data units), to round-off."""
    X_u, y_u, X_f, y_f = heat_problem(seed=7)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.3, [0.5, 0.7]),
        pigp.operators.heat(1.0),
        noise_u=1e-2,
        noise_f=1e-2,
        jitter=0.0,
    )
    model.fit(X_u, 5.0 * y_u, X_f, 5.0 * y_f, steps=0)
    assert model.y_scale != 1.0
    X = np.random.default_rng(8).uniform(size=(25, 2))
    c2 = model.y_scale**2
    Kyy = np.block(
        [
            [model.covariance(X_u, X_u, "u", "u"), model.covariance(X_u, X_f, "u", "f")],
            [model.covariance(X_f, X_u, "f", "u"), model.covariance(X_f, X_f, "f", "f")],
        ]
    )
    Kyy += np.diag(np.r_[np.full(len(X_u), 1e-2), np.full(len(X_f), 1e-2)]) * c2
    Ksy = np.hstack([model.covariance(X, X_u, "u", "u"), model.covariance(X, X_f, "u", "f")])
    mean_ref = Ksy @ np.linalg.solve(Kyy, 5.0 * np.r_[y_u, y_f])
    cov_ref = model.covariance(X, X) - Ksy @ np.linalg.solve(Kyy, Ksy.T)
    mean, cov = model.predict(X, full_cov=True)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cov, cov_ref, atol=1e-9 * np.abs(cov_ref).max())
