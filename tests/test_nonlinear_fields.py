"""Nonlinear equations over several fields, and systems of equations: the
linearisation against finite differences of the residual, a manufactured coupled
problem against its closed form, the one-field case against the plain model, and the
refusals."""

import warnings

import numpy as np
import pytest
import tensorflow as tf

import pigp
from pigp.kernels import SquaredExponential
from pigp.operators import D, Identity, field, nonlinear
from pigp.operators.linearisation import Linearisation

u, v = field("u"), field("v")


def coupled_residual(f, p):
    """u'' - c u v = f1 and v' + u^2 = f2."""
    return f["uxx"] - p["c"] * f["u"] * f["v"], f["vx"] + f["u"] ** 2


def coupled(c=1.0):
    return nonlinear(
        coupled_residual,
        features={"uxx": D(0, 2) @ u, "u": u, "v": v, "vx": D(0) @ v},
        parameters={"c": c},
    )


def U(x):
    return np.sin(np.pi * x[:, 0])


def V(x):
    return np.cos(x[:, 0])


def right_hand_sides(x, c=1.0):
    return np.stack([-(np.pi**2) * U(x) - c * U(x) * V(x), -np.sin(x[:, 0]) + U(x) ** 2], axis=1)


def boundary():
    Xb = np.array([[0.0], [1.0]])
    return [
        pigp.Observations(Xb, U(Xb), u, name="u_ends"),
        pigp.Observations(Xb[:1], V(Xb[:1]), v, name="v_start"),
    ]


def fields_model(equation):
    return pigp.PIGP({"u": SquaredExponential(), "v": SquaredExponential()}, equation)


def test_a_systems_linearisation_is_the_residuals_derivative_by_finite_differences():
    equation = coupled(pigp.Parameter(1.3))
    rng = np.random.default_rng(0)
    values = rng.uniform(-1.0, 1.0, (4, 7))
    lin = Linearisation(equation, values)
    partials = np.stack([c.numpy() for c in lin.jacobian()])
    assert partials.shape == (4, 14)  # 4 features, 2 equations at 7 points
    names = list(equation.features)

    def residual(vals):
        return equation.evaluate(dict(zip(names, vals))).numpy()

    h = 1e-6
    for a in range(4):
        up, down = values.copy(), values.copy()
        up[a] += h
        down[a] -= h
        fd = (residual(up) - residual(down)) / (2 * h)
        np.testing.assert_allclose(partials[a], fd, rtol=1e-7, atol=1e-8)
    # The right-hand side offset is -F(v_k) + sum_a c_a v_a,k, equation by equation.
    y = rng.normal(size=14)
    tiled = np.tile(values, (1, 2))
    expected = y - residual(values) + np.sum(partials * tiled, axis=0)
    np.testing.assert_allclose(lin.right_hand_side(y), expected, rtol=1e-12)


def test_a_coupled_system_in_two_fields_matches_its_closed_form():
    x = np.linspace(0, 1, 30)[:, None]
    model = fields_model(coupled())
    model.fit(X_f=x, y_f=right_hand_sides(x), observations=boundary())
    assert model.gauss_newton[-1].change < 1e-6
    xs = np.linspace(0, 1, 41)[:, None]
    for name, exact in (("u", U), ("v", V)):
        mean, var = model.predict(xs, name)
        assert np.max(np.abs(mean - exact(xs))) < 1e-6, name
        assert np.all(np.isfinite(var)) and np.all(var >= 0)
    value, var = model.predict(xs, "f")
    assert value.shape == var.shape == (41, 2)
    np.testing.assert_allclose(value, right_hand_sides(xs), atol=1e-4)
    # A feature over a field, by name, is that operator of the field.
    np.testing.assert_allclose(
        model.predict(xs, "vx")[0], model.predict(xs, D(0) @ v)[0], rtol=0, atol=1e-12
    )


def test_a_coefficient_of_a_system_is_learned_from_exact_data():
    c = pigp.Parameter(0.5, positive=True)
    x = np.linspace(0, 1, 25)[:, None]
    Xu = np.linspace(0.05, 0.95, 8)[:, None]
    sensors = pigp.Observations(Xu, U(Xu), u, name="u_inside")
    model = fields_model(coupled(c))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X_f=x, y_f=right_hand_sides(x, 2.0), observations=[*boundary(), sensors])
    assert abs(float(c.numpy()) - 2.0) < 0.02 * 2.0, float(c.numpy())
    # u's walls are 0 and sin(pi) ~ 1e-16: zero up to rounding, not data a noise explains.
    assert np.max(np.abs(U(np.array([[0.0], [1.0]])))) < 1e-15
    assert not [w for w in caught if "as noise" in str(w.message)]
    with warnings.catch_warnings():  # the kernel's parameters may sit on a flat ridge
        warnings.simplefilter("ignore")
        std = model.parameter_uncertainty()["operator.c"]
    assert 0 < std < 0.1


def test_one_named_field_is_the_plain_one_field_model():
    plain = nonlinear(lambda f, p: f["xx"] - f["w"] ** 3, features={"xx": D(0, 2), "w": Identity})
    named = nonlinear(lambda f, p: f["xx"] - f["w"] ** 3, features={"xx": D(0, 2) @ u, "w": u})
    x = np.linspace(0.05, 0.95, 12)[:, None]
    rhs = -(np.pi**2) * U(x) - U(x) ** 3
    Xb = np.array([[0.0], [1.0]])
    kernel = dict(lengthscales=[0.4])
    solver = {"learn": "never"}
    one = pigp.PIGP(SquaredExponential(**kernel), plain)
    one.fit(Xb, U(Xb), x, rhs, solver=solver)
    two = pigp.PIGP({"u": SquaredExponential(**kernel)}, named)
    two.fit(
        X_f=x, y_f=rhs, observations=[pigp.Observations(Xb, U(Xb), u, name="ends")], solver=solver
    )
    xs = np.linspace(0, 1, 17)[:, None]
    np.testing.assert_allclose(two.predict(xs, "u")[0], one.predict(xs)[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(two.predict(xs, "u")[1], one.predict(xs)[1], rtol=1e-6, atol=1e-14)


def test_save_and_load_a_system_predicts_the_same(tmp_path):
    x = np.linspace(0, 1, 15)[:, None]
    model = fields_model(coupled())
    model.fit(X_f=x, y_f=right_hand_sides(x), observations=boundary(), solver={"learn": "never"})
    path = tmp_path / "system.npz"
    model.save(path)
    loaded = pigp.load(path)
    xs = np.linspace(0, 1, 9)[:, None]
    for output in ("u", "v", "vx", "f"):
        np.testing.assert_array_equal(loaded.predict(xs, output)[0], model.predict(xs, output)[0])


def test_what_does_not_fit_the_fields_is_refused_at_the_users_line():
    x = np.linspace(0, 1, 10)[:, None]
    with pytest.raises(ValueError, match=r"y_f: the equation is a system of 2 equations"):
        fields_model(coupled()).fit(X_f=x, y_f=np.zeros(10), observations=boundary())
    with pytest.raises(ValueError, match="kernel: the equation's features act on the fields"):
        pigp.PIGP(SquaredExponential(), coupled())
    plain = nonlinear(lambda f, p: f["xx"], features={"xx": D(0, 2)})
    with pytest.raises(ValueError, match="the equation's features name none"):
        fields_model(plain)
    with pytest.raises(ValueError, match="act on no named field"):
        nonlinear(lambda f, p: f["a"] + f["b"], features={"a": D(0) @ u, "b": D(0)})
    shadow = nonlinear(lambda f, p: f["v"] + f["u"], features={"v": D(0) @ v, "u": u})
    with pytest.raises(ValueError, match=r"features\['v'\]: 'v' names a field"):
        fields_model(shadow)
    with pytest.raises(ValueError, match="residual: returned an empty sequence"):
        _ = nonlinear(lambda f, p: (), features={"u": u}).size


def test_tensorflow_sees_every_equation_of_a_system():
    equation = coupled()
    f = {k: tf.constant([0.5, 1.5], tf.float64) for k in equation.features}
    out = equation.call(f).numpy()
    assert equation.size == 2
    np.testing.assert_allclose(out, [0.5 - 0.25, 1.5 - 2.25, 0.5 + 0.25, 1.5 + 2.25])


def test_the_brusselators_reference_converges_at_second_order():
    """The method of lines behind the Brusselator's figures: halving the spacing
    quarters the difference (second order), and the state starts at the initial one."""
    from pigp.experiments.brusselator import brusselator_initial, brusselator_reference

    x, t = np.linspace(0.0, 1.0, 11), np.array([0.0, 0.5, 2.0])
    coarse, middle, fine = (brusselator_reference(x, t, points=p) for p in (201, 401, 801))
    for k in range(2):
        ratio = np.abs(coarse[k] - middle[k]).max() / np.abs(middle[k] - fine[k]).max()
        assert 3.8 < ratio < 4.2
    np.testing.assert_allclose(fine[0][0], brusselator_initial(x)[0], atol=1e-12)
    np.testing.assert_allclose(fine[1][0], brusselator_initial(x)[1], atol=1e-12)
    assert np.abs(fine[0][-1] - fine[0][0]).max() > 0.3  # the species move


@pytest.mark.slow
def test_the_brusselator_by_collocation_matches_the_method_of_lines():
    """Two species, two nonlinear equations in time, from the initial state and the
    walls alone: the Gauss-Newton solution against the method of lines on a 21 x 21 grid
    of the space-time rectangle."""
    import json
    import subprocess
    import sys

    # In a fresh process: the two fields' compiled programs (XLA keeps what it compiles
    # for the process's life) would otherwise stay with the test worker.
    code = (
        "import json; from pigp.experiments.brusselator import brusselator_fit; "
        "print(json.dumps(brusselator_fit(12, 12, test=21)[1]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=1200, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["converged"]
    # Measured 5.0e-5 and 3.4e-5 (on a 41 x 41 grid). At 8 x 8 and 10 x 10 points the fit
    # ends far off (0.20 and 0.17 in u): the results page says so.
    assert result["error_u"] < 1e-3 and result["error_v"] < 1e-3
