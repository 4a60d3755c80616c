"""Saving and loading: the loaded model predicts bit for bit; bad files are refused."""

import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import pigp
from pigp.operators import D


def _exp_quadratic(x1, x2, variance, scale):
    return variance * tf.exp(-tf.reduce_sum(tf.square((x1 - x2) / scale), axis=-1))


@pytest.fixture(scope="module")
def heat_data():
    rng = np.random.default_rng(3)
    X_u, X_f = rng.uniform(size=(12, 2)), rng.uniform(size=(15, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # noqa: E731
    return X_u, u(X_u), X_f, (np.pi**2 - 1.0) * u(X_f)


def test_round_trip_learned_coefficient_is_bit_identical(heat_data, tmp_path):
    alpha = pigp.Parameter(1.5, name="alpha")
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(), (D("t") - alpha * D("x", 2)).with_dims("x", "t")
    )
    model.fit(*heat_data, steps=100, optimizer="adam")
    model.save(tmp_path / "model.npz")
    loaded = pigp.load(tmp_path / "model.npz")

    X = np.random.default_rng(0).uniform(size=(40, 2))
    for output in ("u", "f"):
        m1, v1 = model.predict(X, output=output)
        m2, v2 = loaded.predict(X, output=output)
        np.testing.assert_array_equal(m1, m2)
        np.testing.assert_array_equal(v1, v2)
    assert loaded.parameter_values().keys() == model.parameter_values().keys()
    for name, value in model.parameter_values().items():
        np.testing.assert_array_equal(loaded.parameter_values()[name], value)
    assert loaded.history == model.history
    # Training resumes from the loaded state, and the coefficient is still learned.
    before = loaded.parameter_values()["operator.alpha"]
    loaded.fit(*heat_data, steps=20, optimizer="adam")
    assert loaded.parameter_values()["operator.alpha"] != before


def test_round_trip_observation_sets_and_kernel_combinations(tmp_path):
    x = np.linspace(0.0, 1.0, 9)[:, None]
    kernel = pigp.kernels.Matern72(lengthscales=[0.4]) + pigp.kernels.RationalQuadratic(
        0.5, [0.3], alpha=2.0
    )
    model = pigp.PIGP(kernel, D(0, 2), noise_u=1e-4)
    boundary = pigp.Observations([[0.0], [1.0]], [0.0, 0.0], name="dirichlet")
    slope = pigp.Observations([[0.0]], [np.pi], operator=D(0), name="neumann")
    model.fit(
        X_f=x,
        y_f=-(np.pi**2) * np.sin(np.pi * x[:, 0]),
        observations=[boundary, slope],
        steps=30,
        optimizer="adam",
    )
    model.save(tmp_path / "poisson.npz")
    loaded = pigp.load(tmp_path / "poisson.npz")
    X = np.linspace(0, 1, 17)[:, None]
    for output in ("u", "f", "neumann"):
        np.testing.assert_array_equal(model.predict(X, output)[0], loaded.predict(X, output)[0])
    assert loaded.kernel.second.alpha.numpy() == kernel.second.alpha.numpy()


def test_custom_kernel_needs_its_function(heat_data, tmp_path):
    kernel = pigp.kernels.Custom(_exp_quadratic, {"variance": 1.0, "scale": 0.5})
    model = pigp.PIGP(kernel, pigp.operators.heat(1.0))
    model.fit(*heat_data, steps=10, optimizer="adam")
    model.save(tmp_path / "custom.npz")
    X = heat_data[0]
    loaded = pigp.load(tmp_path / "custom.npz")  # importable: found by its path
    np.testing.assert_array_equal(model.predict(X)[0], loaded.predict(X)[0])

    # A function a new process cannot import by its path (a script's): named at load.
    local = _local_quadratic
    model = pigp.PIGP(
        pigp.kernels.Custom(local, {"variance": 1.0, "scale": 0.5}), pigp.operators.heat(1.0)
    )
    model.fit(*heat_data, steps=10, optimizer="adam")
    model.save(tmp_path / "local.npz")
    with pytest.raises(ValueError, match="custom_objects="):
        pigp.load(tmp_path / "local.npz")
    name = local.__qualname__
    loaded = pigp.load(tmp_path / "local.npz", custom_objects={name: local})
    np.testing.assert_array_equal(model.predict(X)[0], loaded.predict(X)[0])
    # Another function under that name is refused, naming it.
    with pytest.raises(ValueError, match="_local_quadratic.*computes something else"):
        pigp.load(tmp_path / "local.npz", custom_objects={name: _exp_quadratic})


def _local_quadratic(x1, x2, variance, scale):
    return _exp_quadratic(x1, x2, variance, scale)


_local_quadratic.__module__ = "__main__"  # as if defined in a script


def test_a_lambda_is_refused_at_save_with_the_way_out(tmp_path):
    equation = pigp.operators.nonlinear(
        lambda v, p: v["xx"] + v["u"] ** 3, {"u": pigp.Identity, "xx": pigp.D("x", 2)}
    ).with_dims("x")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), equation)
    with pytest.raises(ValueError, match=r"'.*<lambda>' is a lambda.*define it with def"):
        model.save(tmp_path / "lambda.npz")
    assert not (tmp_path / "lambda.npz").exists()


def test_a_changed_residual_is_refused_at_load_naming_it(tmp_path, monkeypatch):
    """A module's residual saved, then the module edited (a constant, then the code):
    ``load`` refuses each, naming the function; comments and layout do not count."""
    import importlib

    source = (
        "RATE = {rate}\n\n\ndef residual(v, p):\n"
        "    # {comment}\n    return v['xx'] + RATE * v['u'] * (1 - v['u'])\n"
    )
    module = tmp_path / "kpp_equation.py"
    module.write_text(source.format(rate=2.0, comment="Fisher-KPP"))
    monkeypatch.syspath_prepend(str(tmp_path))
    kpp = importlib.import_module("kpp_equation")
    equation = pigp.operators.nonlinear(kpp.residual, {"u": pigp.Identity, "xx": pigp.D("x", 2)})
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), equation.with_dims("x"))
    x = np.linspace(0, 1, 8)[:, None]
    with pytest.warns(RuntimeWarning, match="did not converge"):  # two steps suffice here
        model.fit(
            x[[0, -1]], [0.2, 0.8], x, np.zeros(8), solver={"iterations": 2, "learn": "never"}
        )
    path = tmp_path / "kpp.npz"
    model.save(path)
    module.write_text(source.format(rate=2.0, comment="another comment") + "\n\n")
    importlib.reload(kpp)
    np.testing.assert_array_equal(pigp.load(path).predict(x)[0], model.predict(x)[0])
    for changed in (source.format(rate=3.0, comment=""), source.replace("1 - v", "2 - v")):
        module.write_text(changed.format(rate=2.0, comment=""))
        importlib.reload(kpp)
        with pytest.raises(ValueError, match="'kpp_equation:residual' found at load computes"):
            pigp.load(path)


def _round_trip(kernel, heat_data, path):
    """``(model, loaded)``: a heat model of ``kernel`` trained 10 Adam steps, saved to
    ``path`` and loaded, after checking the loaded one predicts f to the bit."""
    model = pigp.PIGP(kernel, pigp.operators.heat(1.0))
    model.fit(*heat_data, steps=10, optimizer="adam")
    model.save(path)
    loaded = pigp.load(path)
    X = heat_data[0]
    np.testing.assert_array_equal(model.predict(X, "f")[0], loaded.predict(X, "f")[0])
    return model, loaded


def test_warped_kernel_round_trips(heat_data, tmp_path):
    """A ``Warped`` kernel saves its base kernel, its warp (by import path) and the
    warp's parameters; the loaded model predicts the same values to the bit."""
    kernel = pigp.kernels.Warped(
        pigp.kernels.RationalQuadratic(),
        [pigp.kernels.tanh_front, None],
        {"strength": 0.3, "width": 0.2},
    )
    model, loaded = _round_trip(kernel, heat_data, tmp_path / "warped.npz")
    assert loaded.kernel.warps[0] is pigp.kernels.tanh_front and loaded.kernel.warps[1] is None
    assert loaded.parameter_values()["kernel.width"] == model.parameter_values()["kernel.width"]
    # A warp that reads another column keeps its inputs.
    kernel = pigp.kernels.Warped(
        pigp.kernels.RationalQuadratic(),
        [pigp.kernels.steepening_front, None],
        {"strength": 0.3, "width": 0.2, "rate": 0.5},
        inputs=[(0, 1), None],
    )
    _, loaded = _round_trip(kernel, heat_data, tmp_path / "steepening.npz")
    assert loaded.kernel.inputs == [(0, 1), (1,)]


def test_bad_files_get_clear_errors(tmp_path, heat_data):
    with pytest.raises(ValueError, match="no such file"):
        pigp.load(tmp_path / "missing.npz")
    (tmp_path / "text.npz").write_text("not a model")
    with pytest.raises(ValueError, match="not a pigp model file"):
        pigp.load(tmp_path / "text.npz")
    np.savez(tmp_path / "foreign.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="not a pigp model file"):
        pigp.load(tmp_path / "foreign.npz")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(*heat_data, steps=0, optimizer="adam")
    model.save(tmp_path / "good.npz")
    data = dict(np.load(tmp_path / "good.npz"))
    del data["set_0_X"]
    np.savez(tmp_path / "damaged.npz", **data)
    with pytest.raises(ValueError, match="damaged"):
        pigp.load(tmp_path / "damaged.npz")
    raw = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="not a pigp model file"):
        pigp.load(tmp_path / "truncated.npz")


def test_round_trip_spectral_mixture(heat_data, tmp_path):
    model = pigp.PIGP(pigp.kernels.SpectralMixture(2), pigp.operators.heat(1.0))
    model.fit(*heat_data, steps=20, optimizer="adam")
    model.save(tmp_path / "sm.npz")
    loaded = pigp.load(tmp_path / "sm.npz")
    assert loaded.kernel.components == 2
    for name in ("weights", "lengthscales", "frequencies"):
        np.testing.assert_array_equal(
            getattr(loaded.kernel, name).numpy(), getattr(model.kernel, name).numpy()
        )
    X = np.random.default_rng(1).uniform(size=(7, 2))
    np.testing.assert_array_equal(model.predict(X)[0], loaded.predict(X)[0])


class ScaledSE(pigp.kernels.SquaredExponential):
    """A user's subclass with a constructor argument of its own."""

    def __init__(self, variance=1.0, lengthscales=None, factor=2.0):
        super().__init__(variance, lengthscales)
        self.factor = float(factor)

    def profile(self, s):
        return tf.exp(-0.5 * self.factor * s)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class PlainSubclass(pigp.kernels.Matern72):
    """A subclass that adds nothing to the constructor: the base config serves."""


@pytest.mark.parametrize(
    "kernel",
    [ScaledSE(0.7, [0.4, 0.5], factor=1.5), PlainSubclass(lengthscales=[0.5, 0.6])],
    ids=["own-config", "inherited-config"],
)
def test_user_subclass_of_a_kernel_round_trips(kernel, heat_data, tmp_path):
    model = pigp.PIGP(
        kernel,
        pigp.operators.heat(1.0) if isinstance(kernel, ScaledSE) else D("x", 2).with_dims("x", "t"),
    )
    data = heat_data if isinstance(kernel, ScaledSE) else (None, None, heat_data[2], heat_data[3])
    model.fit(*data, steps=10, optimizer="adam")
    model.save(tmp_path / "subclass.npz")
    loaded = pigp.load(tmp_path / "subclass.npz")
    assert type(loaded.kernel) is type(kernel)
    assert getattr(loaded.kernel, "factor", None) == getattr(kernel, "factor", None)
    X = np.random.default_rng(2).uniform(size=(9, 2))
    np.testing.assert_array_equal(model.predict(X)[0], loaded.predict(X)[0])


def test_files_of_another_format_version_are_refused_by_name(tmp_path, heat_data):
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(*heat_data, steps=0)
    model.save(tmp_path / "good.npz")
    data = dict(np.load(tmp_path / "good.npz"))
    for version, message in (
        (1, "format version 1.*reads versions 2, 3 only.*refit"),
        (4, "format version 4.*newer pigp"),
    ):
        spec = json.loads(str(data["spec"]))
        spec["version"] = version
        np.savez(tmp_path / "other.npz", **{**data, "spec": np.array(json.dumps(spec))})
        with pytest.raises(ValueError, match=message):
            pigp.load(tmp_path / "other.npz")


def test_io_does_not_read_private_attributes():
    """Saving goes through get_config(): pigp/io.py touches no ``obj._name``."""
    import ast
    import pathlib

    source = pathlib.Path(pigp.io.__file__).read_text()
    private = [
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]
    assert private == []


def _edited(path, target, **changes):
    data = dict(np.load(path))
    spec = json.loads(str(data["spec"]))
    for key, value in changes.items():
        if key == "y_scale":
            spec["y_scale"] = value
        else:
            data[key] = value(data[key])
    np.savez(target, **{**data, "spec": np.array(json.dumps(spec))})
    return target


@pytest.mark.parametrize(
    "change,message",
    [
        (
            {"set_1_y": lambda y: np.where(np.arange(len(y)) == 3, np.nan, y)},
            r"set_1_y: expected finite values",
        ),
        ({"set_0_y": lambda y: y[:-1]}, r"set_0_y: expected 12 values, one per row of set_0_X"),
        ({"set_1_X": lambda X: X[:, :1]}, r"set_1_X: expected 2 columns"),
        (
            {"parameter_0": lambda p: np.full_like(p, np.inf)},
            r"parameter 'variance': expected finite values, got inf",
        ),
        ({"y_scale": -1.0}, r"y_scale: expected a positive number, got -1"),
    ],
    ids=["nan-target", "short-y", "wrong-columns", "inf-parameter", "negative-scale"],
)
def test_edited_files_are_refused_naming_the_file_and_the_field(
    change, message, heat_data, tmp_path
):
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(*heat_data, steps=0)
    model.save(tmp_path / "good.npz")
    target = _edited(tmp_path / "good.npz", tmp_path / "edited.npz", **change)
    with pytest.raises(ValueError, match=r"edited.npz'? is a damaged pigp model file: " + message):
        pigp.load(target)


def test_a_file_that_is_not_a_zip_archive_says_so(tmp_path):
    (tmp_path / "notes.npz").write_text("x, y\n1, 2\n")
    with pytest.raises(ValueError) as info:
        pigp.load(tmp_path / "notes.npz")
    assert "not a zip archive" in str(info.value) and "pickle" not in str(info.value)


@pytest.mark.parametrize("kind", ["pigp", "sparse"])
def test_version_2_files_are_read_and_predict_as_they_did(kind):
    """Files written by the format version before (the model class by name), with
    their predictions then (tests/data/make_version2.py): read, and predicting the same.
    The sparse model's bit for bit; the exact model's to rounding, since the gaussian's
    derivatives are closed forms (``pigp.kernels.derivatives.CLOSED_FORMS``; measured: mean 2e-12,
    variance 1e-9 of their largest values)."""
    folder = pathlib.Path(__file__).parent / "data"
    expected = np.load(folder / "version2_predictions.npz")
    model = pigp.load(folder / f"version2_{kind}.npz")
    assert type(model) is (pigp.PIGP if kind == "pigp" else pigp.SparsePIGP)
    # The exact model's alpha is learned: its band now adds alpha's uncertainty by
    # default (J Sigma J'), which files of version 2 predicted without.
    settings = {} if kind == "sparse" else {"coefficients": False}
    mean, var = model.predict(expected["X"], **settings)
    mean_then, var_then = expected[f"{kind}_mean"], expected[f"{kind}_var"]
    if kind == "sparse":
        np.testing.assert_array_equal(mean, mean_then)
        np.testing.assert_array_equal(var, var_then)
    else:
        np.testing.assert_allclose(mean, mean_then, rtol=0, atol=1e-10 * np.abs(mean_then).max())
        np.testing.assert_allclose(var, var_then, rtol=0, atol=1e-7 * np.abs(var_then).max())


def test_decaying_kernel_round_trips(heat_data, tmp_path):
    """A ``Decaying`` kernel saves its base kernel, its column and its rate; the loaded
    model predicts the same values to the bit."""
    kernel = pigp.kernels.Decaying(pigp.kernels.SquaredExponential(), column=1, rate=0.4)
    model, loaded = _round_trip(kernel, heat_data, tmp_path / "decaying.npz")
    assert loaded.kernel.column == 1
    assert loaded.parameter_values()["kernel.rate"] == model.parameter_values()["kernel.rate"]
    assert model.parameter_values()["kernel.rate"] != 0.4  # trained


def test_files_record_the_import_paths_from_before_the_folders(heat_data, tmp_path):
    """A saved model names its classes by the paths files have always held
    (``pigp.models:PIGP``, ``pigp.kernels:...``, ``pigp.operators:...``), not by the
    modules they now live in, so files written before and after read alike."""
    model = pigp.PIGP(pigp.kernels.Matern52(), pigp.operators.heat(0.5))
    model.fit(*heat_data, steps=5, optimizer="adam")
    model.save(tmp_path / "model.npz")
    spec, _ = pigp.io.read(tmp_path / "model.npz")
    text = json.dumps(spec)
    assert spec["class"] == "pigp.models:PIGP"
    assert '"pigp.kernels:Matern52"' in text and '"pigp.operators:Operator"' in text
    assert "engines" not in text and "library" not in text and "linear" not in text


_CONDUCTIVITY = """
import pigp
import tensorflow as tf

THETA = pigp.Parameter(0.5, name="theta")


def a(X):
    return tf.exp(THETA.value(X.dtype) * X[:, 0])


def a_x(X):
    return THETA.value(X.dtype) * a(X)
"""


def test_a_parameter_read_by_a_coefficient_function_round_trips(tmp_path, monkeypatch):
    """theta, read only inside the importable functions a and a' of -(a u')' = f, is
    saved by name and given back to the functions' own parameter at load: set to
    another value in between, it is restored, and the loaded model predicts bit for bit."""
    (tmp_path / "conductivity_for_io.py").write_text(_CONDUCTIVITY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import conductivity_for_io as c

    darcy = (-(c.a * D("x", 2)) - c.a_x * D("x")).with_dims("x")
    x = np.linspace(0, 1, 15)
    f = np.exp(1.2 * x) * (np.pi**2 * np.sin(np.pi * x) - 1.2 * np.pi * np.cos(np.pi * x))
    x_u = np.array([0.0, 0.3, 0.7, 1.0])
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), darcy, noise_u=0.0, noise_f=0.0)
    model.fit(x_u[:, None], np.sin(np.pi * x_u), x[:, None], f, steps=30, optimizer="adam")
    fitted = model.parameter_values()["operator.theta"]
    assert fitted != 0.5  # learned
    grid = np.linspace(0, 1, 21)[:, None]
    mean, var = model.predict(grid)
    model.save(tmp_path / "darcy.npz")
    c.THETA.assign(0.1)
    loaded = pigp.load(tmp_path / "darcy.npz")
    assert float(c.THETA.numpy()) == fitted
    assert loaded.parameter_values()["operator.theta"] == fitted
    m2, v2 = loaded.predict(grid)
    np.testing.assert_array_equal(m2, mean)
    np.testing.assert_array_equal(v2, var)
