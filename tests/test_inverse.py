"""Coefficients of nonlinear reaction terms: the linearised likelihood's gradient against
the likelihood with the right-hand side recomputed (r u_k^2 for Fisher-KPP, in closed
form), recovery from starts on both sides of the truth, and the warning where the data
cannot tell the coefficient."""

import numpy as np
import pytest
import scipy.linalg
import tensorflow as tf

import pigp
from pigp.experiments import reaction


def _fisher_kpp_model(r, **noises):
    equation = reaction.equation("fisher_kpp", {"r": r})
    return pigp.PIGP(
        pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.3]),
        equation,
        **{"noise_u": 1e-4, **noises},
    )


def _fit(model, data, boundary_noise=None, **settings):
    boundary = pigp.Observations(data["X_b"], data["y_b"], noise=boundary_noise, name="boundary")
    model.fit(
        data["X_u"], data["y_u"], data["X_f"], data["y_f"], observations=[boundary], **settings
    )


def test_the_gradient_in_a_reaction_coefficient_sees_the_right_hand_side_move():
    """F = u_t - 0.01 u_xx - r u (1 - u) linearised at u_k has right-hand side r u_k^2
    (f = 0): the loss at r' is -log N(y(r') | 0, K(r')) with the collocation targets
    r' u_k^2. Its central difference, from LAPACK, matches the gradient of every path
    (the compiled TensorFlow one, LAPACK's, the autodiff loss); with the targets held at
    r's it differs by more than its size. The targets are divided by the u data's RMS,
    the rate's term too. (Noisy equation and walls keep K's condition
    number near 1e6, where differences of the loss have digits to spare.)"""
    data = reaction.design("fisher_kpp", values=30, collocation=60, seed=1)
    r = 1.7
    model = _fisher_kpp_model(r, noise_f=1e-3)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        _fit(model, data, 1e-3, solver={"learn": "never", "iterations": 3})
    objective = model.objective()
    parameter = model.operator.parameters_by_name["r"]
    f = model.data.get("f")
    u_k = f.operator.linearisation.values.numpy()[0]
    np.testing.assert_allclose(f.y, r * u_k**2, rtol=1e-12, atol=1e-14)
    Xs, y = model.data.tensors(model.dtype)
    assert model.y_scale == pytest.approx(np.sqrt(np.mean(data["y_u"] ** 2)), rel=1e-12)
    rows = slice(*np.cumsum([0] + [len(s.X) for s in model.data.sets])[[1, 2]])
    assert model.data.sets[1] is f

    def loss(value, moving=True):
        saved = parameter.unconstrained.numpy()
        parameter.assign(value)
        K = objective.gram(Xs)
        parameter.unconstrained.assign(saved)
        targets = y.numpy().copy()
        if moving:
            targets[rows] = value * u_k**2 / model.y_scale  # standardised, as y
        chol = scipy.linalg.cholesky(K, lower=True)
        alpha = scipy.linalg.cho_solve((chol, True), targets)
        return 0.5 * targets @ alpha + np.sum(np.log(np.diag(chol)))

    assert np.linalg.cond(objective.gram(Xs)) < 1e8
    h = 1e-5
    numeric = (loss(r + h) - loss(r - h)) / (2 * h)
    frozen = (loss(r + h, False) - loss(r - h, False)) / (2 * h)
    with tf.GradientTape() as tape:
        value = parameter.forward(parameter.unconstrained)
    slope = float(tape.gradient(value, parameter.unconstrained))  # d r / d unconstrained
    place = [i for i, v in enumerate(objective.variables) if v is parameter.unconstrained][0]
    for backend in ("tensorflow", "lapack"):
        _, gradient = objective.loss_and_gradient(Xs, y, backend)
        np.testing.assert_allclose(float(gradient[place]) / slope, numeric, rtol=1e-5)
    with tf.GradientTape() as tape:
        nll = objective.nll(Xs, y)
    autodiff = tape.gradient(nll, parameter.unconstrained)
    np.testing.assert_allclose(float(autodiff) / slope, numeric, rtol=1e-5)
    assert abs(numeric - frozen) > abs(numeric)


def test_a_saved_reaction_model_loads_with_the_same_loss_and_gradient(tmp_path):
    """The targets' offset is saved with the linearisation: a loaded model's loss and
    gradient in r are the fitted model's (an offset of 0 would shift every target)."""
    data = reaction.design("fisher_kpp", values=20, collocation=30, seed=3)
    model = _fisher_kpp_model(1.5, noise_f=1e-3)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        _fit(model, data, 1e-3, solver={"learn": "never", "iterations": 2})
    path = tmp_path / "kpp.pigp"
    model.save(path)
    loaded = pigp.load(path)
    for m in (model, loaded):
        objective = m.objective()
        Xs, y = m.data.tensors(m.dtype)
        loss, gradient = objective.loss_and_gradient(Xs, y, "tensorflow")
        m.found = float(loss), [float(np.ravel(g.numpy())[0]) for g in gradient]
    np.testing.assert_allclose(loaded.found[0], model.found[0], rtol=1e-10)
    np.testing.assert_allclose(loaded.found[1], model.found[1], rtol=1e-8)


@pytest.mark.slow
def test_fisher_kpp_finds_r_from_starts_below_and_above():
    """r = 2 from 0.5 and 4 on 80 u values with 1% noise and the equation at 250
    points: within 3%, the 95% interval holding the truth, nothing reported as not
    identified. (At 160 points r came out 1.98, its interval, given the collocation,
    0.0066 short of the truth: give the equation at enough points.)"""
    data = reaction.design("fisher_kpp", values=80, collocation=250, seed=0)
    for start in (0.5, 4.0):
        model = _fisher_kpp_model(start)
        _fit(model, data)
        value = model.parameter_values()["operator.r"]
        low, high = model.parameter_intervals()["operator.r"]
        assert abs(value / 2 - 1) < 0.03, (start, value)
        assert low <= 2.0 <= high, (start, low, high)
        assert model.unidentified == {}


def test_a_coefficient_the_data_cannot_tell_is_reported_not_identified():
    """u = 1 everywhere solves u_t = 0.01 u_xx + r u (1 - u) for every r: the fit warns
    that r is not identified and says so in the report (whose configuration keeps it),
    and its intervals say so again."""
    rng = np.random.default_rng(0)
    X_u = rng.uniform(0, 1, (30, 2))
    X_f = rng.uniform(0, 1, (60, 2))
    s = np.linspace(0, 1, 10)
    X_b = np.r_[np.c_[s, 0 * s], np.c_[0 * s, s], np.c_[1 + 0 * s, s]]
    data = {
        "X_u": X_u,
        "y_u": 1 + 0.01 * rng.standard_normal(30),
        "X_f": X_f,
        "y_f": np.zeros(60),
        "X_b": X_b,
        "y_b": np.ones(len(X_b)),
    }
    model = _fisher_kpp_model(1.0)
    with pytest.warns(RuntimeWarning, match="not identified") as caught:
        _fit(model, data)
    assert list(model.unidentified) == ["operator.r"]
    assert any("'operator.r'" in str(w.message) for w in caught)
    with pytest.warns(RuntimeWarning, match="not measurements"):
        model.parameter_intervals()
    assert pigp.fitting.FitReport.from_config(model.report.to_config()).unidentified == dict(
        model.unidentified
    )


def test_a_second_round_is_kept_only_where_the_data_say_it_is_better():
    """With ``noise_restart`` below any noise, the conditional stage's held noise always
    sets off the second round; the model ends at the round whose likelihood of the
    noisy data given the equation is the higher, which ``noise_restart`` records."""
    data = reaction.design("fisher_kpp", values=40, collocation=80, seed=2)
    model = _fisher_kpp_model(1.0)
    _fit(model, data, plan=pigp.fitting.FitPlan(noise_restart=1e-12))
    restart = model.noise_restart
    assert restart is not None and restart.sets == ("u",)
    assert np.isfinite(restart.first)
    kept = max(restart.first, restart.restart)
    assert restart.kept == ("restart" if restart.restart > restart.first else "first")
    np.testing.assert_allclose(model.log_marginal_likelihood(), kept, rtol=1e-9)
    assert set(model.held) == {"kernel.variance", "kernel.lengthscales", "noise_u"}
