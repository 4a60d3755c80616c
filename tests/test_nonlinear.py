"""Nonlinear equations by Gauss-Newton: linearised blocks against sympy, a linear
equation through the nonlinear path against the linear model, solutions against
closed forms and the Cole-Hopf reference, learned coefficients, errors, save/load."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import se_expr, sympy_block

import pigp
from pigp.experiments.nonlinear import (
    burgers_design,
    burgers_equation,
    burgers_reference,
    elliptic_design,
    elliptic_solution,
)
from pigp.kernels.covariance import block
from pigp.operators import D, Identity, heat, laplacian, nonlinear
from pigp.operators.linearisation import Linearisation

PI = np.pi
ROOT = Path(__file__).resolve().parents[1]


def elliptic_residual(v, p):
    return -v["lap"] + v["u"] ** 3


def burgers(nu):
    return burgers_equation(nu)


def burgers_data(n_interior, n_boundary, seed=0):
    design = burgers_design(n_interior, n_boundary, seed)
    return design["X_b"], design["y_b"], design["X_f"]


def elliptic_data(n_interior, n_boundary, seed=0):
    design = elliptic_design(n_interior, n_boundary, seed)
    return design["X_b"], design["y_b"], design["X_f"], design["y_f"]


def test_linearised_block_matches_sympy_with_the_partials_in_closed_form(rng):
    """The block of the linearised Burgers operator is sum_ab c_a(x) c_b(x') D_a D'_b k
    with c_t = 1, c_u = u_x, c_x = u, c_xx = -nu at the stored features."""
    nu = pigp.Parameter(0.3)
    equation = burgers(nu)
    values = rng.normal(size=(4, 6))  # u, t, x, xx at 6 points
    linearisation = Linearisation(equation, values)
    X = rng.uniform(-1, 1, (6, 2))
    kernel = pigp.kernels.SquaredExponential(variance=1.3, lengthscales=[0.7, 0.9])
    terms = linearisation.operator.resolve(2)
    K = block(kernel, tf.constant(X), tf.constant(X), terms, terms).numpy()
    partials = {"u": values[2], "t": np.ones(6), "x": values[0], "xx": -0.3 * np.ones(6)}
    orders = {"u": {}, "t": {1: 1}, "x": {0: 1}, "xx": {0: 2}}
    expected = np.zeros((6, 6))
    for a in orders:
        for b in orders:
            pair = sympy_block(se_expr(1.3, [0.7, 0.9]), [(1, orders[a])], [(1, orders[b])], 2)
            expected += partials[a][:, None] * partials[b][None, :] * pair(X, X)
    np.testing.assert_allclose(K, expected, rtol=1e-10, atol=1e-10)


def test_the_loss_gradient_in_a_coefficient_of_the_equation_matches_finite_differences():
    nu = pigp.Parameter(0.1, positive=True)
    Xb, yb, Xi = burgers_data(30, 20)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(lengthscales=[0.3, 0.5]), burgers(nu))
    model.fit(Xb, yb, Xi, np.zeros(len(Xi)), solver={"learn": "never", "iterations": 2})
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    _, gradient = objective.tf_loss_and_gradient(Xs, y, objective.unconstrained)
    place = [i for i, v in enumerate(objective.variables) if v is nu.unconstrained][0]

    def loss(shift):
        saved = nu.unconstrained.numpy()
        nu.unconstrained.assign(saved + shift)
        Xs, y = model.data.tensors(model.dtype)
        value = objective.loss(Xs, y.numpy())
        nu.unconstrained.assign(saved)
        return value

    h = 1e-5
    numeric = (loss(h) - loss(-h)) / (2 * h)
    np.testing.assert_allclose(float(gradient[place]), numeric, rtol=1e-5)
    assert abs(numeric) > 1e-3  # the coefficient matters


@pytest.mark.parametrize("standardize", [False, True])
def test_a_linear_equation_through_the_nonlinear_path_is_the_linear_model(rng, standardize):
    """Heat u_t - u_xx = f written as a residual: one Gauss-Newton step gives the
    linear model's posterior (the second only confirms it), standardised alike: both
    divide the targets by the RMS of the u data (the nonlinear model leaves the
    equation's right-hand side out of that RMS)."""
    X_u = rng.uniform(0, 1, (12, 2))
    X_f = rng.uniform(0, 1, (15, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(2 * PI * X[:, 0])  # noqa: E731
    f = (4 * PI**2 - 1) * u(X_f)
    settings = dict(noise_u=pigp.Parameter(1e-4, trainable=False), noise_f=0)

    def kernel():
        return pigp.kernels.SquaredExponential(variance=2.0, lengthscales=[0.3, 0.8])

    linear = pigp.PIGP(kernel(), heat(1.0), standardize=standardize, **settings)
    linear.fit(X_u, u(X_u), X_f, f, steps=0)
    equation = nonlinear(lambda v, p: v["t"] - v["xx"], {"t": D("t"), "xx": D("x", 2)}).with_dims(
        "x", "t"
    )
    model = pigp.PIGP(kernel(), equation, standardize=standardize, **settings)
    model.fit(X_u, u(X_u), X_f, f, solver={"learn": "never"})
    rms = np.sqrt(np.mean(u(X_u) ** 2))
    assert model.y_scale == pytest.approx(rms if standardize else 1.0, rel=1e-12)
    assert linear.y_scale == model.y_scale
    X = rng.uniform(0, 1, (40, 2))
    for output in ("u", D("x")):
        mean, var = model.predict(X, output=output)
        expected_mean, expected_var = linear.predict(X, output=output)
        np.testing.assert_allclose(mean, expected_mean, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(var, expected_var, rtol=1e-7, atol=1e-12)
    assert [s.iteration for s in model.gauss_newton] == [1, 2]
    assert model.gauss_newton[1].change < 1e-10


def test_nonlinear_elliptic_with_learned_hyper_parameters_matches_the_closed_form():
    """-laplacian u + u^3 = f on the unit square, Dirichlet; Chen et al.'s solution."""
    Xb, yb, Xi, f = elliptic_data(200, 40)
    equation = nonlinear(elliptic_residual, {"u": Identity, "lap": laplacian("x", "y")}).with_dims(
        "x", "y"
    )
    model = pigp.PIGP(pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.2]), equation)
    model.fit(Xb, yb, Xi, f)
    g = np.linspace(0, 1, 30)
    G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    mean, var = model.predict(G)
    rms = np.sqrt(np.mean((mean - elliptic_solution(G)) ** 2))
    assert rms < 1e-3, rms
    assert model.gauss_newton[-1].change < 1e-5
    assert any(s.learned for s in model.gauss_newton)
    # The equation at the collocation points, and N[u] predicted there, hold f.
    value, spread = model.predict(Xi[:20], output="f")
    np.testing.assert_allclose(value, f[:20], atol=1e-2 * np.max(np.abs(f)))
    assert np.all(spread >= 0) and np.all(np.isfinite(spread))
    # u's band covers the error (the band of the final linearisation)
    z = np.abs(mean - elliptic_solution(G)) / np.sqrt(var + 1e-300)
    assert np.mean(z < 3) > 0.8


@pytest.mark.slow
def test_the_burgers_example_matches_cole_hopf(tmp_path):
    """``examples/burgers.py --quick`` (``pigp burgers``): nu = 0.1, 300 + 80 points."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "burgers.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["rms_error"] < 5e-3, metrics["rms_error"]
    assert metrics["gauss_newton_iterations"] >= 2 and metrics["last_change"] < 1e-5
    assert (tmp_path / "burgers.png").stat().st_size > 10_000


@pytest.mark.slow
def test_inverse_burgers_learns_the_viscosity_from_noisy_u_data():
    true_nu = 0.1
    rng = np.random.default_rng(3)
    Xb, yb, Xi = burgers_data(250, 60)
    X_u = np.c_[rng.uniform(-1, 1, 120), rng.uniform(0, 1, 120)]
    y_u = burgers_reference(X_u, true_nu)
    y_u = y_u + 0.01 * np.std(y_u) * rng.normal(size=len(y_u))
    nu = pigp.Parameter(0.3, positive=True)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.3]), burgers(nu), noise_u=1e-4
    )
    boundary = pigp.Observations(Xb, yb, name="boundary")
    model.fit(X_u, y_u, Xi, np.zeros(len(Xi)), observations=[boundary])
    assert model.held  # nu learned last by the data's likelihood given the equation
    learned = model.parameter_values()["operator.nu"]
    assert abs(learned - true_nu) < 0.05 * true_nu, learned
    std = model.parameter_uncertainty()["operator.nu"]
    assert 0 < std < 0.05 * true_nu
    assert model.parameter_values()["noise_u"] > 0  # declared noisy: learned


def test_save_and_load_predict_the_same(tmp_path):
    nu = pigp.Parameter(0.1, trainable=False)
    Xb, yb, Xi = burgers_data(40, 20)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(lengthscales=[0.3, 0.5]), burgers(nu))
    model.fit(Xb, yb, Xi, np.zeros(len(Xi)), solver={"learn": "never", "iterations": 3})
    path = tmp_path / "burgers.npz"
    model.save(path)
    loaded = pigp.load(path, custom_objects={})
    X = np.random.default_rng(0).uniform(-1, 1, (10, 2))
    for output in ("u", "x", "f"):
        np.testing.assert_array_equal(loaded.predict(X, output)[0], model.predict(X, output)[0])
    saved, back = model.parameter_values(), loaded.parameter_values()
    assert sorted(saved) == sorted(back)
    for name in saved:
        np.testing.assert_array_equal(back[name], saved[name])


def test_bad_equations_and_settings_are_refused_with_the_argument_named():
    Xb, yb, Xi = burgers_data(20, 10)
    nu = pigp.Parameter(0.1)
    kernel = pigp.kernels.SquaredExponential()
    not_pointwise = nonlinear(
        lambda v, p: v["u"] - tf.reduce_mean(v["u"]), {"u": Identity}
    ).with_dims("x", "t")
    with pytest.raises(ValueError, match="pointwise"):
        pigp.PIGP(kernel, not_pointwise).fit(Xb, yb, Xi, np.zeros(len(Xi)))
    third = nonlinear(
        lambda v, p: v["xxx"] + v["u"] ** 2, {"u": Identity, "xxx": D("x", 3)}
    ).with_dims("x", "t")
    with pytest.raises(ValueError, match="times"):  # Matern 5/2: two derivatives
        pigp.PIGP(pigp.kernels.Matern52(), third).fit(Xb, yb, Xi, np.zeros(len(Xi)))
    with pytest.raises(ValueError, match="auto"):
        pigp.PIGP("auto", burgers(nu))
    with pytest.raises(ValueError, match="X_f"):
        pigp.PIGP(kernel, burgers(nu)).fit(Xb, yb)
    with pytest.raises(ValueError, match="solver"):
        pigp.PIGP(kernel, burgers(nu)).fit(Xb, yb, Xi, np.zeros(len(Xi)), solver={"steps": 1})
    with pytest.raises(ValueError, match="solver"):
        pigp.PIGP(kernel, heat(1.0)).fit(Xb, yb, Xi, np.zeros(len(Xi)), solver={})
    with pytest.raises(ValueError, match="features"):
        nonlinear(lambda v, p: v["u"], {"u": "u"})
    with pytest.raises(ValueError, match="parameters"):  # a number is a constant; not text
        nonlinear(lambda v, p: v["u"], {"u": Identity}, {"nu": "0.1"})
    # A feature named "u" that is not u would be shadowed by u in predict(output="u").
    with pytest.raises(ValueError, match=r"features\['u'\]: 'u' names the field itself"):
        nonlinear(lambda v, p: v["u"] ** 2, {"u": D("x")})
    nonlinear(lambda v, p: v["u"] ** 2, {"u": 1.0 * Identity})  # u itself, written otherwise
    with pytest.raises(ValueError, match="operator"):
        pigp.SparsePIGP(kernel, burgers(nu))


def test_a_step_that_does_not_converge_warns():
    nu = pigp.Parameter(0.05, trainable=False)
    Xb, yb, Xi = burgers_data(60, 30)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.3]), burgers(nu))
    with pytest.warns(RuntimeWarning, match="did not converge"):
        model.fit(Xb, yb, Xi, np.zeros(len(Xi)), solver={"learn": "never", "iterations": 1})
    assert len(model.gauss_newton) == 1


def test_the_likelihood_setting_is_checked_and_conditional_needs_noisy_data():
    nu = pigp.Parameter(0.3, positive=True)
    Xb, yb, Xi = burgers_data(40, 20)
    boundary = pigp.Observations(Xb, yb, name="boundary")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), burgers(nu))
    with pytest.raises(
        ValueError, match=r"solver\['likelihood'\]: expected 'auto', 'joint' or 'conditional'"
    ):
        model.fit(X_f=Xi, y_f=np.zeros(len(Xi)), observations=[boundary], solver={"likelihood": 1})
    with pytest.raises(ValueError, match="every data set here is exact"):
        model.fit(
            X_f=Xi,
            y_f=np.zeros(len(Xi)),
            observations=[boundary],
            solver={"likelihood": "conditional"},
        )
    held = pigp.Parameter(0.3, trainable=False)
    with pytest.raises(ValueError, match="no trainable coefficient"):
        pigp.PIGP(pigp.kernels.SquaredExponential(), burgers(held), noise_u=1e-4).fit(
            Xb, yb, Xi, np.zeros(len(Xi)), solver={"likelihood": "conditional"}
        )
    assert model.data is None and nu.trainable  # refused before anything changed


def _small_inverse(seed=1):
    rng = np.random.default_rng(seed)
    Xb, yb, Xi = burgers_data(80, 30, seed)
    X_u = np.c_[rng.uniform(-1, 1, 40), rng.uniform(0, 1, 40)]
    y_u = burgers_reference(X_u, 0.1)
    y_u = y_u + 0.01 * np.std(y_u) * rng.normal(size=len(y_u))
    nu = pigp.Parameter(0.3, positive=True)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(lengthscales=[0.3, 0.5]), burgers(nu), noise_u=1e-4
    )
    data = (X_u, y_u, Xi, np.zeros(len(Xi)))
    return model, data, [pigp.Observations(Xb, yb, name="boundary")]


def test_a_conditional_stage_that_does_not_converge_leaves_the_joint_fit():
    """Two Gauss-Newton iterations cannot converge: the conditional stage is dropped
    with a warning, and the model is the joint fit's, bit for bit."""
    found = {}
    for likelihood in ("joint", "conditional"):
        model, data, observations = _small_inverse()
        with pytest.warns(RuntimeWarning) as caught:
            model.fit(
                *data,
                observations=observations,
                solver={"iterations": 2, "likelihood": likelihood},
            )
        found[likelihood] = model, [str(w.message) for w in caught]
    joint, conditional = found["joint"][0], found["conditional"][0]
    assert any("kept the joint fit's values" in m for m in found["conditional"][1])
    assert not any("kept the joint" in m for m in found["joint"][1])
    assert conditional.held == () and not any(s.condition for s in conditional.data.sets)
    assert [n for n, _ in conditional.trainable_parameters()] == [
        n for n, _ in joint.trainable_parameters()
    ]
    for name, value in joint.parameter_values().items():
        np.testing.assert_array_equal(conditional.parameter_values()[name], value)
    X = np.random.default_rng(0).uniform(-1, 1, (10, 2))
    np.testing.assert_array_equal(conditional.predict(X)[0], joint.predict(X)[0])


def test_a_conditional_fit_holds_the_kernel_and_noise_then_releases_them(tmp_path, caplog):
    """The default for a trainable coefficient and noisy data: the coefficient
    learned last with the kernel's and the noise's parameters held (not trainable,
    named in ``model.held``, left out of the Laplace std), each free again at the
    next fit; ``held`` survives save/load. Its two stages (two structures) build
    their own programs, each traced once, with no retracing warning."""
    model, data, observations = _small_inverse()
    caplog.clear()
    before = set(pigp.structure._programs)
    model.fit(*data, observations=observations)
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
    counts = [
        p.experimental_get_tracing_count()
        for key, p in pigp.structure._programs.items()
        if key not in before and hasattr(p, "experimental_get_tracing_count")
    ]
    assert len(counts) >= 5 and max(counts) == 1
    assert model.held == ("kernel.variance", "kernel.lengthscales", "noise_u")
    assert [name for name, _ in model.trainable_parameters()] == ["operator.nu"]
    assert set(model.parameter_uncertainty()) == {"operator.nu"}
    # the last phases learned nu alone, on the data given the equation and boundary
    assert [s.condition for s in model.data.sets] == [False, True, True]
    path = tmp_path / "inverse.npz"
    model.save(path)
    assert pigp.load(path, custom_objects={}).held == model.held
    joint = model.fit(*data, observations=observations, solver={"likelihood": "joint"})
    assert joint.held == ()
    names = [name for name, _ in joint.trainable_parameters()]
    assert names == ["kernel.variance", "kernel.lengthscales", "operator.nu", "noise_u"]
    assert not any(s.condition for s in joint.data.sets)


def _kpp_residual(v, p):
    return v["t"] - p["d"] * v["xx"] - p["r"] * v["u"] * (1 - v["u"])


def _undeclared_feature(v, p):
    return v["t"] - v["yy"]


def _undeclared_parameter(v, p):
    return v["t"] - p["nu"] * v["u"]


def test_numbers_are_constants_and_undeclared_names_are_named():
    """A number in ``parameters=`` is a known constant (not trained, named); a residual
    that reads a feature or a parameter it did not declare is refused at fit, saying
    which and what is declared; ``output=`` errors list the features."""
    features = {"u": Identity, "t": D("t"), "xx": D("x", 2)}
    r = pigp.Parameter(1.0, name="r")
    kpp = nonlinear(_kpp_residual, features, {"d": 0.01, "r": r}).with_dims("x", "t")
    assert kpp.parameters_by_name["d"].numpy() == 0.01
    assert not kpp.parameters_by_name["d"].trainable
    assert kpp.evaluate(
        {"u": np.array([0.5]), "t": np.array([0.0]), "xx": np.array([2.0])}
    ).numpy() == pytest.approx([-0.02 - 0.25])
    X = np.random.default_rng(0).uniform(size=(6, 2))
    for residual, message in (
        (_undeclared_feature, r"reads v\['yy'\], but 'yy' is not a declared feature"),
        (_undeclared_parameter, r"reads p\['nu'\], but 'nu' is not a declared parameter"),
    ):
        equation = nonlinear(residual, features).with_dims("x", "t")
        model = pigp.PIGP(pigp.kernels.SquaredExponential(), equation)
        with pytest.raises(ValueError, match=message):
            model.fit(X, np.sin(X[:, 0]), X, np.zeros(6))
        assert model.data is None
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), kpp)
    with pytest.warns(RuntimeWarning, match="did not converge"):  # one step is enough here
        model.fit(X, np.sin(X[:, 0]), X, np.zeros(6), solver={"iterations": 1, "learn": "never"})
    with pytest.raises(ValueError, match=r"'u', 'f', 't', 'xx'\]"):
        model.predict(X, output="nothing")


@pytest.mark.slow
def test_bands_carry_the_uncertainty_of_a_learned_coefficient():
    """``predict`` adds ``J Sigma J'`` for a learned coefficient (by default), with ``J``
    by one Gauss-Newton step; the reference is the change of the converged solutions
    themselves at nu -+ its standard deviation, every other parameter held."""
    model, data, observations = _small_inverse()
    model.fit(*data, observations=observations)
    X = np.c_[np.linspace(-0.9, 0.9, 25), np.linspace(0.1, 0.9, 25)]
    mean, var = model.predict(X)
    given, var_given = model.predict(X, coefficients=False)
    np.testing.assert_array_equal(mean, given)
    nu = model.operator.parameters[0]
    nu_hat = float(nu.numpy())
    std = model.parameter_uncertainty()["operator.nu"]
    converged = []
    for sign in (1.0, -1.0):
        nu.assign(nu_hat + sign * std)
        model.fit(*data, observations=observations, solver={"learn": "never"})
        converged.append(model.predict(X, coefficients=False)[0])
    added = ((converged[0] - converged[1]) / 2) ** 2  # (J std)^2
    assert np.linalg.norm(added) > 0.1 * np.linalg.norm(var_given)  # it matters here
    np.testing.assert_allclose(var - var_given, added, rtol=0.2, atol=0.02 * added.max())
