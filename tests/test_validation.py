"""Bad input gets a ValueError naming the argument, before any state changes."""

import numpy as np
import pytest

import pigp
from pigp.experiments import heat_design, heat_solution


@pytest.fixture(scope="module")
def model_and_data():
    X_u, X_f = heat_design(0, 12)
    y_u, y_f = heat_solution(X_u)[0], heat_solution(X_f)[1]
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(X_u, y_u, X_f, y_f, steps=50)
    return model, (X_u, y_u, X_f, y_f)


def bad_fits(X_u, y_u, X_f, y_f):
    nan = X_u.copy()
    nan[3, 1] = np.nan
    return [
        (dict(X_u=X_u[:, :1], y_u=y_u, X_f=X_f, y_f=y_f), "X_u.*2 columns"),
        (dict(X_u=X_u, y_u=y_u[:-1], X_f=X_f, y_f=y_f), "y_u.*expected 20 values"),
        (dict(X_u=nan, y_u=y_u, X_f=X_f, y_f=y_f), "X_u: expected finite"),
        (
            dict(X_u=X_u, y_u=np.where(y_u > 0.5, np.inf, y_u), X_f=X_f, y_f=y_f),
            "y_u: expected finite",
        ),
        (dict(X_u=X_u.astype(str), y_u=y_u, X_f=X_f, y_f=y_f), "X_u: expected a numeric"),
        (
            dict(X_u=np.zeros((0, 2)), y_u=np.zeros(0), X_f=X_f, y_f=y_f),
            "X_u: expected at least one",
        ),
        (dict(X_u=X_u, y_u=y_u, X_f=X_f, y_f=None), "y_f: expected an array"),
        (dict(X_u=X_u, y_u=y_u, X_f=X_f[:, :1], y_f=y_f), "X_f.*2 columns"),
        (dict(), "expected data"),
    ]


def test_rejected_fit_leaves_the_model_unchanged(model_and_data):
    model, data = model_and_data
    X = np.random.default_rng(0).uniform(size=(20, 2))
    before = model.predict(X), model.parameter_values(), list(model.history)
    for kwargs, message in bad_fits(*data):
        with pytest.raises(ValueError, match=message):
            model.fit(**kwargs, steps=5)
    after = model.predict(X), model.parameter_values(), list(model.history)
    np.testing.assert_array_equal(before[0][0], after[0][0])
    np.testing.assert_array_equal(before[0][1], after[0][1])
    assert before[2] == after[2]
    for key in before[1]:
        np.testing.assert_array_equal(before[1][key], after[1][key])


def test_predict_input_checks(model_and_data):
    model, _ = model_and_data
    with pytest.raises(ValueError, match=r"X: expected 2 columns, got shape \(4, 3\)"):
        model.predict(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="X: expected finite"):
        model.predict([[0.1, np.nan]])
    with pytest.raises(ValueError, match="output: expected one of"):
        model.predict(np.zeros((2, 2)), output="g")


def test_lists_and_column_vectors_are_accepted(model_and_data):
    _, (X_u, y_u, X_f, y_f) = model_and_data
    a = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    a.fit(X_u.tolist(), y_u[:, None], X_f, y_f.tolist(), steps=3)
    b = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    b.fit(X_u, y_u, X_f, y_f, steps=3)
    assert a.history == b.history


def test_predict_before_fit():
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    with pytest.raises(ValueError, match="not fitted"):
        model.predict(np.zeros((3, 2)))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(noise_u=-1e-3), r"noise_u: expected None .*, 0 \(exact data\), a positive"),
        (dict(noise_f=float("nan")), "noise_f: expected None"),
        (
            dict(noise_f=pigp.Parameter(-1.0)),
            r"noise_f: expected values > 0\.0 \(a positive quantity\), got the pigp.Parameter",
        ),
        (dict(dtype="int32"), "dtype: expected 'float32' or 'float64'"),
        (dict(jitter=float("nan")), "jitter"),
    ],
)
def test_constructor_checks(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), **kwargs)


def test_kernel_parameter_checks():
    with pytest.raises(ValueError, match="lengthscales: expected values > 0"):
        pigp.kernels.SquaredExponential(1.0, [0.5, -1.0])
    with pytest.raises(ValueError, match="variance: expected finite"):
        pigp.kernels.SquaredExponential(np.inf)


def test_observation_sets_check_their_data():
    with pytest.raises(ValueError, match=r"wall\.y: expected 2 values, one per row of wall\.X"):
        pigp.Observations([[0.0, 0.0], [1.0, 0.0]], [0.0], name="wall")
    with pytest.raises(ValueError, match=r"wall\.X: expected finite"):
        pigp.Observations([[0.0, np.nan]], [0.0], name="wall")
    with pytest.raises(ValueError, match="noise_wall: expected None"):
        pigp.Observations([[0.0, 0.0]], [0.0], noise=-1.0, name="wall")
    with pytest.raises(ValueError, match="operator: expected"):
        pigp.Observations([[0.0, 0.0]], [0.0], operator="d/dx")


def test_kernel_shape_mismatch_is_refused_before_any_state_changes():
    """A spectral mixture given 3 lengthscales for 2-column inputs: the fit is refused
    and neither the model nor the kernel gains data or parameters."""
    X_u, X_f = heat_design(0, 12)
    kernel = pigp.kernels.SpectralMixture(1, lengthscales=[0.5, 0.5, 0.5])
    model = pigp.PIGP(kernel, pigp.operators.heat(1.0))
    with pytest.raises(ValueError, match="lengthscales: expected a number, 2 values"):
        model.fit(X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1], steps=5)
    assert kernel.lengthscales is None and kernel.frequencies is None
    with pytest.raises(ValueError, match="not fitted yet"):
        model.predict(X_u)


def test_boolean_inputs_and_targets_are_refused():
    X_u, X_f = heat_design(0)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    with pytest.raises(ValueError, match="X_u: expected a numeric array, got dtype bool"):
        model.fit(X_u > 0.5, heat_solution(X_u)[0])
    with pytest.raises(ValueError, match="y_u: expected a numeric array, got dtype bool"):
        model.fit(X_u, heat_solution(X_u)[0] > 0.1)
    assert model.data is None
