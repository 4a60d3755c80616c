"""Observation sets beyond (u, f), learned PDE coefficients and their uncertainty."""

import numpy as np
import pytest
import tensorflow as tf

import pigp
from pigp.operators import D, Identity


def test_poisson_1d_with_dirichlet_and_neumann_data():
    """u'' = f on [0, 1] with u = sin(pi x / 2): u(0) = 0 (Dirichlet), u'(1) = 0 (Neumann)."""
    u = lambda x: np.sin(np.pi * x / 2)
    X_f = np.linspace(0.05, 0.95, 12)[:, None]
    f = -((np.pi / 2) ** 2) * u(X_f[:, 0])
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D(0, 2))
    model.fit(
        X_f=X_f,
        y_f=f,
        observations=[
            pigp.Observations([[0.0]], [0.0], Identity, name="dirichlet"),
            pigp.Observations([[1.0]], [0.0], D(0), name="neumann"),
        ],
    )
    x = np.linspace(0, 1, 101)[:, None]
    mean, var = model.predict(x)
    assert np.max(np.abs(mean - u(x[:, 0]))) < 1e-3
    slope, _ = model.predict([[1.0]], output="neumann")
    assert abs(slope[0]) < 1e-3
    assert set(model.parameter_values()) >= {"dirichlet.noise", "neumann.noise"}


def test_a_set_named_with_spaces_and_punctuation_fits_predicts_and_saves(tmp_path):
    """A name a user writes ("initial & walls (exact)") names the set's noise in
    ``parameter_values`` and its output in ``predict``, and survives save/load; the
    answer is the one of the same set named plainly."""
    u = lambda x: np.sin(np.pi * x / 2)
    X_f = np.linspace(0.05, 0.95, 12)[:, None]
    f = -((np.pi / 2) ** 2) * u(X_f[:, 0])
    means = []
    for name in ("initial & walls (exact)", "walls"):
        model = pigp.PIGP(pigp.kernels.SquaredExponential(), D(0, 2))
        model.fit(
            X_f=X_f,
            y_f=f,
            observations=[pigp.Observations([[0.0], [1.0]], [0.0, 1.0], Identity, name=name)],
            steps=300,
        )
        assert f"{name}.noise" in model.parameter_values()
        mean, _ = model.predict([[0.5]], output=name)
        means.append(mean[0])
        path = tmp_path / "model.pigp"
        model.save(path)
        again = pigp.load(path)
        np.testing.assert_allclose(again.predict([[0.5]], output=name)[0], mean, rtol=1e-9)
    assert means[0] == pytest.approx(means[1], rel=1e-9)
    assert means[0] == pytest.approx(u(0.5), abs=1e-2)


@pytest.mark.parametrize("positive", [None, True])
def test_learned_diffusivity_and_its_laplace_std(positive):
    """alpha is recovered; its Laplace std equals one from a finite-difference Hessian
    (signed, the default for a coefficient, and softplus-constrained)."""
    from scipy.stats import qmc

    sampler = qmc.LatinHypercube(d=2, seed=1)
    X_u, X_f = sampler.random(20), sampler.random(20)
    u = lambda X: np.exp(-X[:, 1]) * np.sin(2 * np.pi * X[:, 0])
    alpha = pigp.Parameter(2.0, positive, name="diffusivity")
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.operators.heat(alpha),
        noise_u=pigp.Parameter(1e-6, trainable=False),
        noise_f=pigp.Parameter(1e-6, trainable=False),
    )
    model.fit(X_u, u(X_u), X_f, (4 * np.pi**2 - 1) * u(X_f))
    assert abs(alpha.numpy() - 1.0) < 1e-2
    std = model.parameter_uncertainty()

    # Independent reference: the Hessian by central differences of the loss gradient.
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    variables = objective.variables
    x0 = np.concatenate([v.numpy().reshape(-1) for v in variables])
    sizes = [int(np.prod(v.shape)) for v in variables]

    def gradient(x):
        for v, part in zip(variables, np.split(x, np.cumsum(sizes)[:-1])):
            v.assign(part.reshape(v.shape))
        with tf.GradientTape() as tape:
            loss = objective.nll(Xs, y)
        return np.concatenate([g.numpy().reshape(-1) for g in tape.gradient(loss, variables)])

    h = 1e-5
    H = np.stack([(gradient(x0 + h * e) - gradient(x0 - h * e)) / (2 * h) for e in np.eye(len(x0))])
    gradient(x0)
    H = 0.5 * (H + H.T)
    index = [i for i, v in enumerate(variables) if v is alpha.unconstrained][0]
    offset = sum(sizes[:index])
    slope = 1.0 / (1.0 + np.exp(-x0[offset])) if positive else 1.0  # d softplus / dv
    reference = slope * np.sqrt(np.linalg.inv(H)[offset, offset])
    assert std["operator.diffusivity"] == pytest.approx(reference, rel=1e-3)
    assert abs(alpha.numpy() - 1.0) < 5 * reference


@pytest.mark.parametrize("name", ["u", "f"])
def test_observation_sets_named_u_or_f_are_refused(name):
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D(0, 2))
    before = model.parameter_values()
    clash = pigp.Observations([[0.0], [1.0]], [0.0, 0.0], name=name)
    with pytest.raises(ValueError, match=rf"observations\[0\].name: '{name}' is reserved"):
        model.fit(X_f=[[0.5]], y_f=[1.0], observations=[clash])
    assert model.data is None and model.parameter_values() == before


def test_duplicate_observation_names_are_refused():
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D(0, 2))
    sets = [
        pigp.Observations([[0.0]], [0.0], name="edge"),
        pigp.Observations([[1.0]], [0.0], name="edge"),
    ]
    with pytest.raises(ValueError, match="names must be distinct"):
        model.fit(X_f=[[0.5]], y_f=[1.0], observations=sets)


def test_a_nonlinear_equations_right_hand_side_is_left_out_of_the_scale():
    """``target_scale(..., without=("f",))``: the RMS of the first other set's targets
    (the u data), of all the others' where those are 0; 1 where they are all 0 (up to
    rounding) or there are none; the first set's RMS without ``without``."""
    from types import SimpleNamespace

    from pigp.data import target_scale

    def sets(**targets):
        return [SimpleNamespace(name=name, y=np.asarray(y, float)) for name, y in targets.items()]

    data = sets(f=[100.0, -100.0], boundary=[3.0, 4.0], initial=[0.0, 0.0, 5.0])
    assert target_scale(data, without=("f",)) == pytest.approx(np.sqrt(25 / 2), rel=1e-15)
    assert target_scale(data) == pytest.approx(100.0, rel=1e-15)  # the first set's
    zeros_first = sets(f=[100.0], walls=[0.0, 0.0], initial=[3.0, 4.0])
    assert target_scale(zeros_first, without=("f",)) == pytest.approx(np.sqrt(25 / 4), rel=1e-15)
    assert target_scale(sets(f=[7.0], boundary=[0.0, 0.0]), without=("f",)) == 1.0
    assert target_scale(sets(f=[7.0]), without=("f",)) == 1.0
    zero_up_to_rounding = sets(f=[100.0, 3.0], boundary=[np.sin(np.pi), 0.0])
    assert target_scale(zero_up_to_rounding, without=("f",)) == 1.0
    assert target_scale(data, standardize=False, without=("f",)) == 1.0
