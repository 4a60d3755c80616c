"""Several latent fields: blocks against sympy, one field against the single-field
model, the stream function's divergence, Stokes recovery at a small size."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import se_expr, sympy_block

import pigp
from pigp.experiments import systems
from pigp.kernels import Fields, SquaredExponential
from pigp.kernels.covariance import block, block_diag, joint, joint_blocks
from pigp.operators import D, Identity, apply, field

LENGTHS = {"a": (0.7, 0.4), "b": (0.3, 0.9)}
VARIANCES = {"a": 1.3, "b": 0.6}


def two_fields():
    return Fields(
        {name: SquaredExponential(VARIANCES[name], list(LENGTHS[name])) for name in ("a", "b")}
    )


def by_field(operator_terms):
    """``{field: [(c, {column: order})]}`` of a list ``[(c, {column: order}, field)]``."""
    out = {"a": [], "b": []}
    for c, orders, f in operator_terms:
        out[f].append((c, orders))
    return out


# L = a_x + 2 b_yy - b,  M = 3 a_xy + b_x (columns 0 = x, 1 = y)
LEFT = [(1.0, {0: 1}, "a"), (2.0, {1: 2}, "b"), (-1.0, {}, "b")]
RIGHT = [(3.0, {0: 1, 1: 1}, "a"), (1.0, {0: 1}, "b")]


def resolved(terms):
    return pigp.operators.Operator(terms).resolve(2, fields=("a", "b"))


def reference(X1, X2, left, right):
    """``sum_f L_f k_f M_f'`` by sympy, one field at a time."""
    total = 0.0
    on_left, on_right = by_field(left), by_field(right)
    for f in ("a", "b"):
        if on_left[f] and on_right[f]:
            kernel = se_expr(VARIANCES[f], LENGTHS[f])
            total = total + sympy_block(kernel, on_left[f], on_right[f], 2)(X1, X2)
    return total


def test_field_blocks_match_sympy(rng):
    X1, X2 = rng.uniform(size=(7, 2)), rng.uniform(size=(5, 2))
    X2[0] = X1[3]  # a coincident pair
    kernel = two_fields()
    K = block(kernel, tf.constant(X1), tf.constant(X2), resolved(LEFT), resolved(RIGHT)).numpy()
    np.testing.assert_allclose(K, reference(X1, X2, LEFT, RIGHT), rtol=1e-12, atol=1e-12)
    diag = block_diag(kernel, tf.constant(X1), resolved(LEFT), resolved(LEFT)).numpy()
    np.testing.assert_allclose(diag, np.diag(reference(X1, X1, LEFT, LEFT)), rtol=1e-12)


def test_fields_no_shared_field_is_zero(rng):
    X = tf.constant(rng.uniform(size=(4, 2)))
    only_a, only_b = resolved([(1.0, {0: 1}, "a")]), resolved([(1.0, {}, "b")])
    np.testing.assert_array_equal(block(two_fields(), X, X, only_a, only_b).numpy(), 0.0)


class Set:
    def __init__(self, terms, noise):
        self.terms, self.noise = terms, pigp.Parameter(noise)


def test_fields_joint_whole_matches_blocks_and_sympy(rng):
    """The whole-matrix and block-by-block assemblies of K agree with sympy."""
    Xs = [tf.constant(rng.uniform(size=(n, 2))) for n in (4, 6, 3)]
    operators = [LEFT, RIGHT, [(1.0, {}, "a")]]
    sets = [Set(resolved(t), 0.01 * (i + 1)) for i, t in enumerate(operators)]
    whole = joint(two_fields(), Xs, sets, 0.0, tf.float64).numpy()
    upper = joint_blocks(two_fields(), Xs, sets, 0.0, tf.float64)
    X = [x.numpy() for x in Xs]
    expected = np.block(
        [[reference(X[i], X[j], operators[i], operators[j]) for j in range(3)] for i in range(3)]
    )
    expected += np.diag(np.repeat([0.01, 0.02, 0.03], [4, 6, 3]))
    np.testing.assert_allclose(whole, expected, rtol=1e-11, atol=1e-11)
    for (i, j), K in upper.items():
        rows = slice(sum(len(x) for x in X[:i]), sum(len(x) for x in X[: i + 1]))
        cols = slice(sum(len(x) for x in X[:j]), sum(len(x) for x in X[: j + 1]))
        np.testing.assert_allclose(K.numpy(), expected[rows, cols], rtol=1e-11, atol=1e-11)


def heat_data(rng):
    X_u = rng.uniform(size=(12, 2))
    X_f = rng.uniform(size=(15, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
    f = lambda X: (np.pi**2 - 1) * u(X)
    return X_u, u(X_u), X_f, f(X_f)


def test_one_field_is_the_single_field_model_bit_for_bit(rng):
    """A dict of one kernel and untagged operators: the single-field model's numbers."""
    X_u, y_u, X_f, y_f = heat_data(rng)
    X = rng.uniform(size=(9, 2))
    results = []
    for kernel in (SquaredExponential(1.0, [0.5, 0.5]), {"u": SquaredExponential(1.0, [0.5, 0.5])}):
        model = pigp.PIGP(kernel, pigp.operators.heat(1.0), noise_u=1e-6, noise_f=1e-6)
        model.fit(X_u, y_u, X_f, y_f, steps=20, optimizer="adam")
        results.append((model.log_marginal_likelihood(), *model.predict(X)))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_stream_function_velocity_is_divergence_free(rng):
    design = systems.curl_design(sensors=20, seed=1)
    psi = field("psi")
    u, v = (D("y") @ psi).with_dims("x", "y"), (-(D("x") @ psi)).with_dims("x", "y")
    model = pigp.PIGP({"psi": SquaredExponential()}, u, dims=("x", "y"))
    model.fit(
        observations=[
            pigp.Observations(design["X_s"], design["y_u"], u, name="sensors_u"),
            pigp.Observations(design["X_s"], design["y_v"], v, name="sensors_v"),
        ],
        steps=100,
    )
    X = systems.unit_grid(15)
    u_x, _ = model.predict(X, output=D("x") @ u)
    v_y, _ = model.predict(X, output=D("y") @ v)
    scale = np.max(np.abs(u_x))
    assert np.max(np.abs(u_x + v_y)) <= 1e-12 * scale
    # and the means of u and v by central differences: the same to the differences' error
    h = 1e-4
    shift = lambda dx, dy: X + np.array([dx, dy])
    du = (model.predict(shift(h, 0), output=u)[0] - model.predict(shift(-h, 0), output=u)[0]) / (
        2 * h
    )
    dv = (model.predict(shift(0, h), output=v)[0] - model.predict(shift(0, -h), output=v)[0]) / (
        2 * h
    )
    assert np.max(np.abs(du + dv)) <= 1e-6 * scale
    truth = systems.curl_solution(X)
    mean, _ = model.predict(X, output=u)
    assert np.linalg.norm(mean - truth["u"]) / np.linalg.norm(truth["u"]) < 0.05


def test_stokes_forcing_is_the_operators_applied_to_the_closed_form(rng):
    X = rng.uniform(size=(10, 2))
    ops = systems.stokes_operators(systems.VISCOSITY)
    functions = {
        "psi": lambda X: tf.sin(np.pi * X[:, 0]) * tf.sin(np.pi * X[:, 1]),
        "p": lambda X: tf.cos(np.pi * X[:, 0]) * tf.cos(np.pi * X[:, 1]),
    }
    truth = systems.stokes_solution(X)
    for name, key in (("momentum_x", "g_x"), ("momentum_y", "g_y"), ("u", "u"), ("v", "v")):
        np.testing.assert_allclose(apply(ops[name], functions, X), truth[key], atol=1e-12)
    np.testing.assert_allclose(apply(ops["continuity"], functions, X), 0.0, atol=1e-12)


def test_reaction_diffusion_solution_solves_its_equations(rng):
    X = rng.uniform(size=(10, 2))
    ops = systems.reaction_diffusion_operators()
    d, pi = systems.DIFFUSIVITY, np.pi
    first = lambda X: tf.exp(-(d * pi**2 + 0.5) * X[:, 1]) * tf.sin(pi * X[:, 0])
    second = lambda X: 0.5 * tf.exp(-(d * pi**2 + 1.5) * X[:, 1]) * tf.sin(pi * X[:, 0])
    functions = {"u": lambda X: first(X) + second(X), "v": lambda X: first(X) - second(X)}
    for name in ("equation_u", "equation_v"):
        np.testing.assert_allclose(apply(ops[name], functions, X), 0.0, atol=1e-12)
    truth = systems.reaction_diffusion_solution(X)
    np.testing.assert_allclose(apply(ops["u"], functions, X), truth["u"], atol=1e-14)


@pytest.mark.slow
def test_stokes_experiment_recovers_pressure_without_pressure_data(tmp_path):
    """``pigp stokes --quick``'s code: 25 sensors, 80 collocation points, p from the
    momentum equations alone; metrics JSON and the pressure maps."""
    import json

    metrics = systems.stokes(str(tmp_path), quick=True)
    assert metrics == json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["p_relative_l2"] < 0.1, metrics
    assert metrics["u"]["relative_l2"] < 0.05 and metrics["v"]["relative_l2"] < 0.05
    assert abs(metrics["viscosity"] - 0.1) < 0.01 and metrics["viscosity_std"] > 0
    assert {"kernel.psi.variance", "kernel.p.lengthscales"} <= set(metrics["parameters"])
    assert (tmp_path / "pressure.png").stat().st_size > 10_000


def test_a_model_of_several_fields_trains_by_lbfgs_alone_by_default():
    """``FitPlan.fields_training``: a default fit of a model of two fields is, bit for bit,
    ``optimizer="lbfgs", steps=1000``; the plan's ``fields_training=None`` fits it by
    the one-field schedule (Adam first), which ends elsewhere."""
    design = systems.curl_design(sensors=10, seed=3)
    psi = field("psi")
    u, v = (D("y") @ psi).with_dims("x", "y"), (-(D("x") @ psi)).with_dims("x", "y")

    def fitted(**arguments):
        model = pigp.PIGP(
            {"psi": SquaredExponential(), "q": SquaredExponential()}, u, dims=("x", "y")
        )
        observations = [
            pigp.Observations(design["X_s"], design["y_u"], u, name="sensors_u"),
            pigp.Observations(design["X_s"], design["y_v"], v + field("q"), name="v_q"),
        ]
        return model.fit(observations=observations, **arguments).parameter_values()

    default, lbfgs = fitted(), fitted(optimizer="lbfgs", steps=1000)
    adam = fitted(plan=pigp.fitting.FitPlan(fields_training=None), steps=300)
    for name in default:
        np.testing.assert_array_equal(default[name], lbfgs[name])
    assert any(np.any(default[name] != adam[name]) for name in default)


def test_a_model_of_several_fields_saves_and_loads(tmp_path):
    """The stream-function model: predictions of a field and of an operator of it bit for
    bit after save and load, parameters by name."""
    design = systems.curl_design(sensors=12, seed=2)
    psi = field("psi")
    u, v = (D("y") @ psi).with_dims("x", "y"), (-(D("x") @ psi)).with_dims("x", "y")
    model = pigp.PIGP({"psi": SquaredExponential(), "q": SquaredExponential()}, u, dims=("x", "y"))
    model.fit(
        observations=[
            pigp.Observations(design["X_s"], design["y_u"], u, name="sensors_u"),
            pigp.Observations(design["X_s"], design["y_v"] + 0.0, v + field("q"), name="v_q"),
        ],
        steps=20,
        optimizer="adam",
    )
    model.save(tmp_path / "curl")
    loaded = pigp.load(tmp_path / "curl")
    before, after = model.parameter_values(), loaded.parameter_values()
    assert list(after) == list(before) and "kernel.q.lengthscales" in after
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])
    X = systems.unit_grid(6)
    for output in ("psi", "q", u, D("x") @ v):
        for a, b in zip(model.predict(X, output=output), loaded.predict(X, output=output)):
            np.testing.assert_array_equal(a, b)


def test_field_refusals(rng):
    X = rng.uniform(size=(5, 2))
    y = np.sin(X[:, 0])
    two = {"a": SquaredExponential(), "b": SquaredExponential()}
    with pytest.raises(ValueError, match="names no field"):
        pigp.PIGP(two, D(0)).fit(observations=[pigp.Observations(X, y, D(0), name="d")])
    with pytest.raises(ValueError, match="acts on 'c'"):
        pigp.PIGP(two, D(0) @ field("a")).fit(
            observations=[pigp.Observations(X, y, field("c"), name="d")]
        )
    with pytest.raises(ValueError, match="the model has one field"):
        pigp.PIGP(SquaredExponential(), Identity).fit(
            observations=[pigp.Observations(X, y, field("a"), name="d")]
        )
    with pytest.raises(ValueError, match="both sides act on fields"):
        field("a") @ field("b")
    model = pigp.PIGP(two, field("a"))
    model.fit(observations=[pigp.Observations(X, y, field("a") + field("b"), name="d")], steps=0)
    with pytest.raises(ValueError, match="predict one by name"):
        model.predict(X)
    with pytest.raises(ValueError, match="SparsePIGP models one field"):
        pigp.SparsePIGP(two, field("a"), num_inducing=3)
    with pytest.raises(ValueError, match="identifiers"):
        Fields({"a b": SquaredExponential()})
    with pytest.raises(ValueError, match="dict from field names"):
        Fields({})
    three = {**two, "unused": SquaredExponential()}
    unused = pigp.PIGP(three, field("a"))
    with pytest.raises(ValueError, match=r"fields \['unused'\] have a kernel but no data"):
        unused.fit(observations=[pigp.Observations(X, y, field("a") + field("b"), name="d")])
    assert unused.data is None
