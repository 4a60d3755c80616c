"""A nonlinear equation through ``PIGP(..., engine="cholesky")``: the same fit and predict
as the dense engine, against the dense engine's answer with the same parameters."""

import numpy as np
import pytest
from test_sparse_cholesky import square

import pigp
from pigp.experiments.nonlinear import _elliptic_forcing, elliptic_equation, elliptic_solution

pytestmark = pytest.mark.slow


def held_kernel():
    return pigp.kernels.Matern72(lengthscales=pigp.Parameter([0.3, 0.3], trainable=False))


@pytest.fixture(scope="module")
def fitted():
    """-Lap u + u^3 = f on a 14 x 14 grid, by both engines (the sparse one at rho 40,
    where every column sees the whole square: the exact GP's numbers)."""
    boundary, interior = square(14)
    data = (boundary, elliptic_solution(boundary), interior, _elliptic_forcing(interior))
    dense = pigp.PIGP(held_kernel(), elliptic_equation()).fit(*data)
    sparse = pigp.PIGP(
        held_kernel(), elliptic_equation(), engine="cholesky", engine_options={"rho": 40.0}
    ).fit(*data)
    X = np.random.default_rng(0).uniform(size=(200, 2))
    return dense, sparse, data, X


def test_the_solution_and_predictions_are_the_dense_engines(fitted):
    dense, sparse, (boundary, _, interior, _), X = fitted
    assert sparse.sparse and not dense.sparse
    engine = sparse.report.engine
    assert engine["name"] == "cholesky" and engine["gauss_newton_converged"] == 1.0
    assert (
        sparse.parameter_values()["kernel.variance"] == dense.parameter_values()["kernel.variance"]
    )  # both learned the variance on all 256 values (under learn_points)
    at_points = sparse.predict(interior)[0]
    np.testing.assert_allclose(at_points, dense.predict(interior)[0], rtol=0, atol=1e-8)
    mean, var = sparse.predict(X)
    with pytest.raises(ValueError, match="coefficients=None"):
        sparse.predict(X, coefficients=True)
    reference, reference_var = dense.predict(X)
    assert np.linalg.norm(mean - reference) / np.linalg.norm(reference) < 5e-4
    # The variance conditions on part of the data: never below the exact one.
    assert np.all(var >= reference_var * (1 - 1e-6))
    # The equation's value at new points, through its features' means.
    f, _ = sparse.predict(X, "f")
    f_dense, _ = dense.predict(X, "f")
    assert np.linalg.norm(f - f_dense) / np.linalg.norm(f_dense) < 5e-3


def test_a_saved_sparse_nonlinear_model_predicts_the_same(fitted, tmp_path):
    _, sparse, _, X = fitted
    mean, var = sparse.predict(X)
    sparse.save(tmp_path / "m.pigp")
    loaded = pigp.load(tmp_path / "m.pigp")
    assert loaded.report.engine == sparse.report.engine
    got, got_var = loaded.predict(X)
    np.testing.assert_allclose(got, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_var, var, rtol=1e-10)


def test_what_the_sparse_nonlinear_engine_refuses():
    boundary, interior = square(4)
    data = (boundary, elliptic_solution(boundary), interior, _elliptic_forcing(interior))
    noisy = pigp.PIGP(held_kernel(), elliptic_equation(), noise_u=1e-4, engine="cholesky")
    with pytest.raises(ValueError, match="'u' has a noise"):
        noisy.fit(*data)
    assert noisy.data is None
    derivative = pigp.Observations(interior, np.ones(len(interior)), pigp.operators.D(0))
    model = pigp.PIGP(held_kernel(), elliptic_equation(), engine="cholesky")
    with pytest.raises(ValueError, match="observes an operator of u"):
        model.fit(*data, observations=[derivative])
    from pigp.experiments.navier_stokes import navier_stokes

    kernels = {name: held_kernel() for name in "uvp"}
    with pytest.raises(ValueError, match="of one field"):
        pigp.PIGP(kernels, navier_stokes(0.05), engine="cholesky").fit(
            X_f=interior,
            y_f=np.zeros((len(interior), 3)),
            observations=[pigp.Observations(boundary, boundary[:, 0], pigp.operators.field("u"))],
        )
    with pytest.raises(ValueError, match="learn='vecchia' is for linear"):
        pigp.PIGP(
            held_kernel(),
            elliptic_equation(),
            engine="cholesky",
            engine_options={"learn": "vecchia"},
        ).fit(*data)


def test_the_default_engine_turns_sparse_where_dense_would_not_fit(monkeypatch):
    """``engine="auto"`` (the default) fits dense where ``pigp.memory.fit_bytes`` fits in
    the memory available, and sparse beyond, with a warning; the same data give the same
    solution at the points either way (rho 40: the exact GP's numbers)."""
    from pigp import memory

    boundary, interior = square(8)
    data = (boundary, elliptic_solution(boundary), interior, _elliptic_forcing(interior))
    options = {"rho": 40.0}
    roomy = pigp.PIGP(held_kernel(), elliptic_equation(), engine_options=options).fit(*data)
    assert roomy.engine == "auto" and not roomy.sparse
    monkeypatch.setattr(memory, "available_bytes", lambda: memory.fit_bytes(50))
    with pytest.warns(RuntimeWarning, match="the sparse engine runs"):
        tight = pigp.PIGP(held_kernel(), elliptic_equation(), engine_options=options).fit(*data)
    assert tight.sparse and tight.report.engine["name"] == "cholesky"
    np.testing.assert_allclose(
        tight.predict(interior)[0], roomy.predict(interior)[0], rtol=0, atol=1e-7
    )
    # A model the sparse engine does not take keeps the dense engine's refusal.
    single = pigp.PIGP(held_kernel(), elliptic_equation(), dtype="float32")
    with pytest.raises(ValueError, match="need about .* GB for the exact GP"):
        single.fit(*data)


def test_the_default_engine_turns_sparse_from_a_size_for_a_kernel_that_screens(monkeypatch):
    """From ``SPARSE_FROM`` values (5,000 by default, where the sparse engine was the
    faster in ``benchmarks/engine_crossover.py``), ``engine="auto"`` solves a nonlinear
    equation by the sparse engine with a Matérn kernel and exact point values, and keeps
    the dense engine for a kernel that does not screen or for noisy data; data found
    noisy by the sparse engine's subset fit send the fit back to dense, with a warning."""
    from pigp.engines.cholesky import choice

    boundary, interior = square(8)
    g = elliptic_solution(boundary)
    data = (boundary, g, interior, _elliptic_forcing(interior))
    size = len(boundary) + len(interior)
    options = {"rho": 40.0}

    def chosen(kernel, noise_u=None, values=g):
        model = pigp.PIGP(kernel, elliptic_equation(), noise_u=noise_u, engine_options=options)
        prepared = model.prepare_data(boundary, values, interior, data[3])
        return choice.chooses_sparse(model, prepared)

    assert not chosen(held_kernel())  # under SPARSE_FROM
    monkeypatch.setattr(choice, "SPARSE_FROM", size)
    assert chosen(held_kernel())
    assert not chosen(pigp.kernels.SquaredExponential(lengthscales=[0.3, 0.3]))
    assert not chosen(held_kernel(), noise_u=1e-4)
    model = pigp.PIGP(held_kernel(), elliptic_equation(), engine_options=options).fit(*data)
    assert model.sparse and model.report.engine["name"] == "cholesky"
    dense = pigp.PIGP(held_kernel(), elliptic_equation(), engine="dense").fit(*data)
    np.testing.assert_allclose(
        model.predict(interior)[0], dense.predict(interior)[0], rtol=0, atol=1e-7
    )
    # Data the subset fit finds noisy (NoisyData from the sparse fit) go back to dense.
    from pigp.engines.cholesky.nonlinear import NoisyData
    from pigp.engines.dense import model as dense_model

    def finds_noise(*args):
        raise NoisyData("observations: the fit on 100 of the values found the sets ['u']")

    monkeypatch.setattr(dense_model, "fit_nonlinear", finds_noise)
    with pytest.warns(RuntimeWarning, match="engine='auto': the dense engine runs"):
        back = pigp.PIGP(held_kernel(), elliptic_equation(), engine_options=options).fit(*data)
    assert not back.sparse
    np.testing.assert_allclose(
        back.predict(interior)[0], dense.predict(interior)[0], rtol=0, atol=1e-10
    )


def test_the_built_in_check_bounds_the_distance_from_the_exact_gp():
    """``engine_options={"check": True}`` reports the relative difference of u between the
    solutions at rho and rho - 1; where the error falls with rho it bounds the distance
    of the answer at rho from the dense engine's (the exact GP's, same kernel)."""
    boundary, interior = square(12)
    data = (boundary, elliptic_solution(boundary), interior, _elliptic_forcing(interior))
    dense = pigp.PIGP(held_kernel(), elliptic_equation(), engine="dense").fit(*data)
    model = pigp.PIGP(
        held_kernel(),
        elliptic_equation(),
        engine="cholesky",
        engine_options={"rho": 3.0, "check": True},
    )
    with pytest.warns(RuntimeWarning, match="differs from the one at rho 2"):
        sparse = model.fit(*data)
    check = sparse.report.engine["check"]
    exact = dense.predict(interior)[0]
    distance = np.linalg.norm(sparse.predict(interior)[0] - exact) / np.linalg.norm(exact)
    assert 0 < distance <= check < 0.1
    with pytest.raises(ValueError, match="check: expected True or False"):
        pigp.PIGP(held_kernel(), elliptic_equation(), engine_options={"check": 1})
