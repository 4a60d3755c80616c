"""Plotting works headless, draws what it says on the axes it is given, and progress shows."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import pigp  # noqa: E402
from pigp.experiments import heat_design, heat_solution  # noqa: E402


@pytest.fixture(scope="module")
def model():
    X_u, X_f = heat_design(0, 12)
    m = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    return m.fit(
        X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1], steps=100, optimizer="adam"
    )


def test_grid_order():
    X, shape = pigp.plotting.grid(3)
    assert shape == (3, 3)
    np.testing.assert_array_equal(X[:4], [[0, 0], [0.5, 0], [1, 0], [0, 0.5]])


def test_maps_use_the_given_axes_and_overlay_points(model):
    X, _ = pigp.plotting.grid(20)
    mean, var = model.predict(X)
    fig, axes = plt.subplots(1, 4)
    points = {"u data": model.data.sets[0].X, "f data": model.data.sets[1].X}
    truth = heat_solution(X)[0]
    out = pigp.plotting.posterior_maps(X, mean, var, truth=truth, points=points, axes=axes)
    assert list(out) == list(axes)
    assert [a.get_title() for a in axes] == [
        "posterior mean",
        "truth",
        "posterior std",
        "absolute error",
    ]
    np.testing.assert_allclose(axes[2].images[0].get_array().ravel(), np.sqrt(var))
    np.testing.assert_allclose(axes[3].images[0].get_array().ravel(), np.abs(mean - truth))
    assert len(axes[0].collections) == 2  # the two point sets
    # Data on the boundary lines are drawn whole, not cut at the edge of the map.
    assert not any(c.get_clip_on() for c in axes[0].collections)
    plt.close(fig)
    with pytest.raises(ValueError, match="axes: 4 axes are needed"):
        pigp.plotting.posterior_maps(X, mean, var, truth=truth, axes=plt.subplots(1, 3)[1])
    plt.close("all")
    # Without axes: a new figure, two panels wide.
    drawn = pigp.plotting.posterior_maps(X, mean, var, truth=truth, points=points)
    assert len(drawn) == 4 and drawn[0].figure.get_size_inches()[0] == 9.0
    plt.close("all")


def test_slice_band_is_two_sigma(model):
    fig, ax = plt.subplots()
    assert pigp.plotting.slice_at(model, 0.5, ax=ax, truth=lambda P: heat_solution(P)[0]) is ax
    x = np.linspace(0, 1, 200)
    mean, var = model.predict(np.stack([x, np.full(200, 0.5)], 1))
    np.testing.assert_allclose(ax.lines[0].get_ydata(), mean)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() == pytest.approx((mean + 2 * np.sqrt(var)).max())
    plt.close(fig)


def test_training_curve_marks_rejected_steps(model):
    ax = pigp.plotting.training_curve(model.history, rejected=[3, 7])
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), model.history)
    np.testing.assert_array_equal(ax.lines[1].get_xdata(), [3, 7])
    plt.close(ax.figure)


def test_verbose_shows_a_progress_bar_with_the_loss(model, capsys):
    X_u, X_f = heat_design(0, 12)
    model.fit(
        X_u,
        heat_solution(X_u)[0],
        X_f,
        heat_solution(X_f)[1],
        steps=300,
        optimizer="adam",
        verbose=True,
    )
    err = capsys.readouterr().err
    assert "300/300" in err and "loss=" in err
    model.fit(X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1], steps=10, optimizer="adam")
    assert capsys.readouterr().err == ""
