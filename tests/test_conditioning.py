"""Data sets the objective conditions on (``Observations(condition=True)``): the loss is
``-log p(other sets | conditioned sets)``."""

import warnings

import numpy as np
import pytest

import pigp
from pigp.fitting.run import warn_at_bounds
from pigp.operators import Identity, heat


def _u(X, alpha=0.5):
    return np.exp(-(np.pi**2) * alpha * X[:, 1]) * np.sin(np.pi * X[:, 0])


def _homogeneous(condition, seed=0, n=20):
    """Heat ``u_t = 0.5 u_xx``: n noisy u values (1%) and the equation's zeros, exact."""
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.uniform(0, 1, (n, 2)), rng.uniform(0, 1, (n, 2))
    y_u = _u(X_u) + 0.01 * rng.standard_normal(n)
    alpha = pigp.Parameter(1.0, positive=True, name="diffusivity")
    operator = heat(alpha)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), operator)
    observations = [
        pigp.Observations(X_u, y_u, Identity, name="sensors"),
        pigp.Observations(X_f, np.zeros(n), operator, 0, name="equation", condition=condition),
    ]
    return model, observations, alpha


def _conditional_reference(model):
    """``-log p(y_r | y_C)`` from the joint covariance by the Schur complement (NumPy);
    ``K`` as ``Objective.nll`` assembles it (op by op, not the compiled program, whose
    rounding differs by more than central differences tolerate)."""
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    K = objective.covariance(Xs).numpy()
    y = y.numpy()
    rows = np.concatenate(
        [
            np.full(len(s.X), s.condition)
            for s in model.data.sets  # the sets in the order of K
        ]
    )
    C, R = np.flatnonzero(rows), np.flatnonzero(~rows)
    solve = np.linalg.solve(K[np.ix_(C, C)], np.c_[y[C], K[np.ix_(C, R)]])
    mean = K[np.ix_(R, C)] @ solve[:, 0]
    cov = K[np.ix_(R, R)] - K[np.ix_(R, C)] @ solve[:, 1:]
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, y[R] - mean)
    return 0.5 * z @ z + np.sum(np.log(np.diag(chol))) + 0.5 * len(R) * np.log(2 * np.pi)


@pytest.fixture(scope="module")
def fitted():
    """A fitted model whose conditioned set has non-zero targets (a forcing f = u_t -
    0.5 u_xx of another field) and noise, so every term of the formula is tested."""
    rng = np.random.default_rng(1)
    X_u, X_f = rng.uniform(0, 1, (12, 2)), rng.uniform(0, 1, (10, 2))
    u = lambda X: np.sin(np.pi * X[:, 0]) * np.cos(np.pi * X[:, 1])
    f = lambda X: (
        -np.pi * np.sin(np.pi * X[:, 0]) * np.sin(np.pi * X[:, 1])
        + 0.5 * np.pi**2 * np.sin(np.pi * X[:, 0]) * np.cos(np.pi * X[:, 1])
    )
    operator = heat(pigp.Parameter(1.0, positive=True, name="diffusivity"))
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), operator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(
            observations=[
                pigp.Observations(X_f, f(X_f), operator, 1e-3, name="equation", condition=True),
                pigp.Observations(X_u, u(X_u), Identity, 1e-3, name="sensors"),
            ],
            steps=200,
        )
    return model


@pytest.mark.parametrize("backend", ["tensorflow", "lapack"])
def test_the_loss_is_the_conditional_density_of_the_other_sets(fitted, backend):
    objective = fitted.objective()
    Xs, y = fitted.data.tensors(fitted.dtype)
    reference = _conditional_reference(fitted)
    loss, _ = objective.loss_and_gradient(Xs, y, backend)
    assert float(loss) == pytest.approx(reference, rel=1e-9, abs=1e-9)
    assert float(objective.nll(Xs, y)) == pytest.approx(reference, rel=1e-9, abs=1e-9)
    assert -fitted.log_marginal_likelihood() == pytest.approx(reference, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("backend", ["tensorflow", "lapack"])
def test_the_gradient_matches_central_differences_of_the_conditional_density(fitted, backend):
    objective = fitted.objective()
    Xs, y = fitted.data.tensors(fitted.dtype)
    variables = objective.variables
    fitted_values = [v.numpy() for v in variables]
    for v in variables:  # away from the optimum, where the gradient is not ~0
        v.assign(v.numpy() + 0.3)
    try:
        _, grads = objective.loss_and_gradient(Xs, y, backend)
        _check_against_differences(fitted, variables, grads)
    finally:
        for v, value in zip(variables, fitted_values):
            v.assign(value)


def _check_against_differences(fitted, variables, grads, h=1e-3):
    """Central differences of ``Objective.nll`` (whose value the test above checks
    against the Schur complement): K's condition number (~1e9 here) leaves them
    good to ~2e-6 (relative) at this step."""
    objective = fitted.objective()
    Xs, y = fitted.data.tensors(fitted.dtype)
    for v, g in zip(variables, grads):
        start = v.numpy()
        flat = np.ravel(start).copy()
        for i in range(flat.size):
            values = []
            for sign in (1.0, -1.0):
                moved = flat.copy()
                moved[i] += sign * h
                v.assign(moved.reshape(np.shape(start)))
                values.append(float(objective.nll(Xs, y)))
            v.assign(start)
            expected = (values[0] - values[1]) / (2 * h)
            got = np.ravel(g.numpy())[i]
            assert got == pytest.approx(expected, rel=2e-5, abs=1e-4), v.name


def test_conditioning_on_a_homogeneous_equation_keeps_the_field_and_learns_alpha():
    """Counted as evidence, the exact zeros' density grows without bound as the kernel
    variance shrinks and the fit ends at u = 0 with the u data called noise; conditioned
    on, the fit recovers u and alpha (truth 0.5) with an interval holding it."""
    grid = np.stack(np.meshgrid(*[np.linspace(0, 1, 30)] * 2), -1).reshape(-1, 2)
    errors = {}
    for condition in (False, True):
        model, observations, alpha = _homogeneous(condition)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(observations=observations)
        mean, _ = model.predict(grid)
        errors[condition] = np.linalg.norm(mean - _u(grid)) / np.linalg.norm(_u(grid))
    assert errors[False] > 0.99  # u = 0
    assert errors[True] < 0.15
    assert model.parameter_values()["kernel.variance"] > 1e-3
    assert abs(float(alpha.numpy()) - 0.5) < 0.05
    low, high = model.parameter_intervals()["operator.diffusivity"]
    assert low < 0.5 < high


def test_conditioned_sets_survive_save_and_load(fitted, tmp_path):
    fitted.save(tmp_path / "conditioned.npz")
    loaded = pigp.load(tmp_path / "conditioned.npz")
    assert [s.condition for s in loaded.data.sets] == [True, False]
    assert loaded.log_marginal_likelihood() == fitted.log_marginal_likelihood()
    X = np.random.default_rng(2).uniform(0, 1, (7, 2))
    np.testing.assert_array_equal(loaded.predict(X)[0], fitted.predict(X)[0])


def test_condition_is_refused_where_it_does_not_apply():
    with pytest.raises(ValueError, match="condition: expected True or False"):
        pigp.Observations(np.zeros((2, 2)), np.ones(2), condition="yes")
    model, observations, _ = _homogeneous(True)
    everything = [
        pigp.Observations(o.X, o.y, o.operator, 0, o.name, condition=True) for o in observations
    ]
    with pytest.raises(ValueError, match="every set .* has condition=True"):
        model.fit(observations=everything)
    sparse = pigp.SparsePIGP(pigp.kernels.SquaredExponential(), heat(0.5), num_inducing=5)
    noisy = [
        pigp.Observations(o.X, o.y, o.operator, 1e-4, o.name, condition=o.condition)
        for o in observations
    ]
    with pytest.raises(ValueError, match="condition=True .* is for pigp.PIGP"):
        sparse.fit(observations=noisy)


def test_a_nonlinear_equation_refuses_conditioned_sets():
    from pigp.operators import D, nonlinear

    burgers = nonlinear(
        lambda v, p: v["t"] + v["u"] * v["x"] - 0.1 * v["xx"],
        features={"u": Identity, "t": D("t"), "x": D("x"), "xx": D("x", 2)},
    ).with_dims("x", "t")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), burgers)
    X = np.random.default_rng(0).uniform(0, 1, (6, 2))
    with pytest.raises(ValueError, match=r"condition=True \(\['boundary'\]\) is for linear"):
        model.fit(
            X_f=X,
            y_f=np.zeros(6),
            observations=[
                pigp.Observations(X, np.ones(6), Identity, 0, "boundary", condition=True)
            ],
        )
    assert model.data is None  # refused before anything changed


def _mp_gaussian_nll(K, y, rows):
    """``-log N(y_rows | 0, K_rows,rows)`` in 60-digit arithmetic (mpmath), from the
    float64 ``K`` and ``y`` as given."""
    import mpmath

    mpmath.mp.dps = 60
    rows = [int(i) for i in rows]
    chol = mpmath.cholesky(mpmath.matrix([[mpmath.mpf(K[i, j]) for j in rows] for i in rows]))
    z = mpmath.lu_solve(chol, mpmath.matrix([mpmath.mpf(y[i]) for i in rows]))
    log_det = sum(mpmath.log(chol[i, i]) for i in range(len(rows)))
    return 0.5 * sum(v**2 for v in z) + log_det + 0.5 * len(rows) * mpmath.log(2 * mpmath.pi)


@pytest.mark.parametrize("lengthscale, rel", [(0.1, 1e-10), (0.15, 1e-4)])
def test_the_conditional_density_keeps_its_digits_where_the_conditioned_rows_do_not(
    lengthscale, rel
):
    """Sensors far from 40 exact equation values whose targets the prior explains badly
    (random numbers): ``-log p(y_C)`` is huge and ``K_CC`` ill-conditioned, while
    ``-log p(y_u | y_C)`` is 4.58 and 15.5. Subtracting two marginal likelihoods, each
    from its own factorisation, gave 4.581138 and -562.3 (measured); one factor with the
    conditioned rows first keeps the digits (the looser bound: rounding x condition)."""
    rng = np.random.default_rng(3)
    X_f, X_u = rng.uniform(0, 0.3, (40, 2)), rng.uniform(0.7, 1, (8, 2))
    operator = heat(pigp.Parameter(0.5, positive=True))
    model = pigp.PIGP(pigp.kernels.SquaredExponential(lengthscales=[lengthscale] * 2), operator)
    model.fit(
        observations=[
            pigp.Observations(X_u, np.sin(np.pi * X_u[:, 0]), Identity, 1e-4, name="sensors"),
            pigp.Observations(
                X_f, rng.standard_normal(40), operator, 0, name="equation", condition=True
            ),
        ],
        steps=0,
    )
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    K, values = objective.covariance(Xs).numpy(), y.numpy()
    reference = float(
        _mp_gaussian_nll(K, values, range(48)) - _mp_gaussian_nll(K, values, range(8, 48))
    )
    assert -model.log_marginal_likelihood() == pytest.approx(reference, rel=rel)
    assert float(objective.nll(Xs, y)) == pytest.approx(reference, rel=rel)
    for backend in ("tensorflow", "lapack"):
        loss, _ = objective.loss_and_gradient(Xs, y, backend)
        assert float(loss) == pytest.approx(reference, rel=rel), backend


@pytest.mark.slow
def test_coefficients_that_collapse_under_counted_zeros_name_conditioning():
    """Two fields (u_t = 0.1 u_xx - a u + c v and its twin, a = 1, c = 0.5, the closed
    form of ``reaction_diffusion_solution``) from 40 noisy sensors each and both
    equations' zeros at 40 points, exact. Counted as evidence, a and c fall to their
    lower bound and the warning names the zero sets and ``condition=True``; conditioned
    on, both come out within 5% of the truth, with no warning."""
    from pigp.experiments import systems

    found = {}
    for condition in (False, True):
        rng = np.random.default_rng(0)
        X_s, X_c = rng.uniform(size=(40, 2)), rng.uniform(size=(40, 2))
        a = pigp.Parameter(0.5, positive=True, name="a")
        c = pigp.Parameter(0.2, positive=True, name="c")
        ops = systems.reaction_diffusion_operators(0.1, decay=a, coupling=c)
        truth = systems.reaction_diffusion_solution(X_s)
        noisy = {
            k: y + 0.01 * np.sqrt(np.mean(y**2)) * rng.standard_normal(40) for k, y in truth.items()
        }
        zeros = np.zeros(40)
        observations = [
            pigp.Observations(X_s, noisy["u"], ops["u"], name="sensors_u"),
            pigp.Observations(X_s, noisy["v"], ops["v"], name="sensors_v"),
            pigp.Observations(X_c, zeros, ops["equation_u"], 0, "equation_u", condition=condition),
            pigp.Observations(X_c, zeros, ops["equation_v"], 0, "equation_v", condition=condition),
        ]
        kernels = {name: pigp.kernels.SquaredExponential() for name in ("u", "v")}
        model = pigp.PIGP(kernels, ops["equation_u"], dims=("x", "t"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(observations=observations)
        found[condition] = ([str(w.message) for w in caught], float(a.numpy()), float(c.numpy()))
        if not condition:
            counted = model, a, c
    messages, a_counted, c_counted = found[False]
    assert a_counted < 1e-3 and c_counted < 1e-3
    (bound,) = [m for m in messages if "ended at the lower bound" in m]
    assert "['equation_u', 'equation_v']" in bound and "condition=True" in bound
    # Short of the bound, a coefficient under 1% of its start is named beside the zeros
    # (and not without them); one at 2% of its start is not.
    model, a, c = counted
    a.assign(0.004)
    c.assign(0.2 * 0.02)
    zeros, starts = ["equation_u"], {id(a): 0.5, id(c): 0.2}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_at_bounds(model, zeros, starts)
        warn_at_bounds(model, [], starts)
    (fell,) = [str(w.message) for w in caught]
    assert "operator.a fell below 1% of its start" in fell and "operator.c" not in fell
    assert "condition=True" in fell
    messages, a_conditioned, c_conditioned = found[True]
    assert messages == []
    assert a_conditioned == pytest.approx(1.0, rel=0.05)
    assert c_conditioned == pytest.approx(0.5, rel=0.05)
