"""The sparse inverse-Cholesky engine (``pigp.engines.cholesky``): the maximin order and
the pattern against brute force, the factor against the dense inverse, and collocation
through the factor against the dense posterior mean."""

import numpy as np
import pytest

import pigp
from pigp.engines.cholesky.collocation import Collocation, Features
from pigp.engines.cholesky.factor import Terms, covariance_rows, dense_block, factor
from pigp.engines.cholesky.ordering import maximin, pattern
from pigp.operators import D, Identity


def square(n: int):
    """n x n interior grid points of the unit square and 4n boundary points."""
    h = 1.0 / (n + 1)
    g = np.arange(1, n + 1) * h
    interior = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    b = np.arange(0, n + 1) * h
    boundary = np.concatenate(
        [
            np.stack([b, 0 * b], 1),
            np.stack([1 + 0 * b, b], 1),
            np.stack([1 - b, 1 + 0 * b], 1),
            np.stack([0 * b, 1 - b], 1),
        ]
    )
    return boundary, interior


def test_maximin_takes_the_farthest_point_each_time():
    rng = np.random.default_rng(0)
    points = rng.uniform(size=(150, 2))
    first = np.zeros(150, bool)
    first[:20] = True
    order, lengths = maximin(points, first)
    assert sorted(order) == list(range(150))
    assert set(order[:20]) == set(range(20))  # the first set first
    for k in range(1, 150):
        before = points[order[:k]]
        distance = np.linalg.norm(before - points[order[k]], axis=1).min()
        assert lengths[k] == pytest.approx(distance)
        # No point left was farther from those before it (within its own set).
        rest = [i for i in order[k:] if first[i] == first[order[k]]]
        farthest = max(np.linalg.norm(before - points[i], axis=1).min() for i in rest)
        assert distance == pytest.approx(farthest)


def test_each_column_keeps_every_earlier_measurement_within_rho_l():
    boundary, interior = square(8)
    points = np.concatenate([boundary, interior, interior])
    kinds = np.concatenate([np.zeros(len(boundary) + 64, int), np.ones(64, int)])
    first = np.arange(len(points)) < len(boundary)
    pat = pattern(points, kinds, rho=3.0, first=first)
    ordered = points[pat.order]
    assert sorted(pat.order) == list(range(len(points)))
    assert (kinds[pat.order][-64:] == 1).all()  # derivative measurements last
    covered = np.zeros(len(points), bool)
    for columns, rows in pat.supernodes:
        for c in columns:
            mine = rows[rows <= c]
            assert mine[-1] == c
            near = np.flatnonzero(
                np.linalg.norm(ordered[: c + 1] - ordered[c], axis=1) <= 3.0 * pat.lengths[c]
            )
            assert set(near) <= set(mine)
            covered[c] = True
    assert covered.all()


@pytest.fixture(scope="module")
def poisson():
    boundary, interior = square(9)
    operators = [Identity.resolve(2), (D(0, 2) + D(1, 2)).resolve(2)]
    features = Features(np.concatenate([boundary, interior]), len(boundary), operators)
    kernel = pigp.kernels.Matern72(lengthscales=[0.3, 0.3])
    return kernel, features


def test_the_measurements_covariance_is_the_dense_models_blocks(poisson):
    """``covariance_rows`` (every kind's weights on every term, one pass over the
    kernel's derivatives) and ``dense_block`` (the factor's compiled program) against
    ``pigp.kernels.covariance.block`` per pair of kinds."""
    import tensorflow as tf

    from pigp.kernels.covariance import block

    kernel, features = poisson
    points, kinds, _ = features.measurements()
    terms = Terms.of(features.operators)
    W = terms.weights(points, kinds).numpy()
    for left_kind in (0, 1):
        for right_kind in (0, 1):
            left = features.feature_index(left_kind)[-20:]
            right = features.feature_index(right_kind)[:15]
            ours = covariance_rows(kernel, terms, points, W, left, right)
            dense = block(
                kernel,
                tf.constant(points[left]),
                tf.constant(points[right]),
                features.operators[left_kind],
                features.operators[right_kind],
            ).numpy()
            np.testing.assert_allclose(ours, dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())
            compiled = dense_block(kernel, terms, points, W, left, right)
            scale = np.abs(dense).max()
            np.testing.assert_allclose(compiled, dense, rtol=1e-10, atol=1e-12 * scale)


def test_both_block_paths_are_covariance_rows(poisson):
    """The factor's blocks by one call per batch (``_blocks``) and, for blocks too large
    for one call, by pairs (``_pair_blocks``) against ``covariance_rows``."""
    from pigp.engines.cholesky import factor as stages

    kernel, features = poisson
    points, kinds, _ = features.measurements()
    terms = Terms.of(features.operators)
    W = terms.weights(points, kinds).numpy()
    program = stages.entries_program(kernel, terms)
    rng = np.random.default_rng(1)
    index = np.stack([rng.permutation(len(points))[:48] for _ in range(3)])
    reference = np.stack([covariance_rows(kernel, terms, points, W, i, i) for i in index])
    padded_points, padded_W = np.r_[points, points[:1]], np.r_[W, 0 * W[:1]]
    by_batch = stages._blocks(program, padded_points, padded_W, index, stages._Layout(48))
    by_pairs = stages._pair_blocks(program, points, W, index, 2**12)  # two calls
    scale = np.abs(reference).max()
    np.testing.assert_allclose(by_batch, reference, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(by_pairs, reference, rtol=1e-10, atol=1e-12 * scale)


def test_the_factor_inverts_theta_when_every_column_sees_every_earlier_one(poisson):
    """At a radius that covers the square the factor is the exact inverse Cholesky
    factor: U U' Theta = I; at smaller radii the KL divergence shrinks as rho grows."""
    kernel, features = poisson
    points, kinds, first = features.measurements()
    terms = Terms.of(features.operators)
    W = terms.weights(points, kinds).numpy()
    n = len(points)
    theta = covariance_rows(kernel, terms, points, W, np.arange(n), np.arange(n))
    divergences = []
    for rho in (2.0, 4.0, 100.0):
        pat = pattern(points, kinds, rho=rho, first=first)
        U = factor(kernel, terms, points, W, pat, nugget=1e-6).toarray()
        ordered = theta[np.ix_(pat.order, pat.order)]
        ordered = ordered + 1e-6 * np.diag(np.diag(ordered))
        P = U @ U.T
        _, logdet = np.linalg.slogdet(ordered)
        divergences.append(
            0.5 * (np.trace(P @ ordered) - n - logdet - 2 * np.log(np.diag(U)).sum())
        )
        if rho == 100.0:
            np.testing.assert_allclose(P @ ordered, np.eye(n), atol=1e-6)
    assert divergences[0] > divergences[1] > abs(divergences[2])
    assert abs(divergences[2]) < 1e-6


@pytest.mark.parametrize("substitution", [True, False])
def test_products_with_theta_are_the_inverse_of_the_factors_precision(
    poisson, substitution, monkeypatch
):
    """``Factor.theta_times`` after ``solves_only`` (U scaled in place to a unit diagonal
    and SuperLU's substitution, or SciPy's splu copy where that is missing) against
    ``(U U')^-1 w`` by dense linear algebra, for a vector and a block of vectors."""
    from pigp.engines.cholesky import solve

    if not substitution:
        monkeypatch.setattr(solve, "_gstrs", None)
    kernel, features = poisson
    points, kinds, first = features.measurements()
    terms = Terms.of(features.operators)
    W = terms.weights(points, kinds).numpy()
    pat = pattern(points, kinds, rho=3.0, first=first)
    U = factor(kernel, terms, points, W, pat, nugget=1e-8)
    dense = U.toarray()
    precision = np.empty_like(dense)
    precision[np.ix_(pat.order, pat.order)] = dense @ dense.T  # by measurement
    ours = solve.Factor(U, pat.order).solves_only()
    assert (ours._unit is not None) == substitution
    w = np.random.default_rng(2).normal(size=(len(points), 3))
    expected = np.linalg.solve(precision, w)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(ours.theta_times(w), expected, atol=1e-9 * scale)
    np.testing.assert_allclose(ours.theta_times(w[:, 0]), expected[:, 0], atol=1e-9 * scale)


def test_collocation_through_the_factor_is_the_dense_posterior_mean(poisson):
    """-Laplace(u) = f with Dirichlet data: the mean of u at the interior points by PCG
    through the factor against the dense GP's, with the same kernel and nugget."""
    kernel, features = poisson
    b, n_i = features.boundary, features.interior
    X = features.points
    u = np.sin(np.pi * X[:, 0]) * np.sin(np.pi * X[:, 1])
    y = np.concatenate([u[:b], 2 * np.pi**2 * u[b:]])
    coefficients = np.stack([np.zeros(n_i), -np.ones(n_i)], 1)
    sparse = Collocation(kernel, features, rho=5.0, nugget=1e-10)
    mean = sparse.values(sparse.solve(coefficients, y))[b:]
    # Dense: the data are the boundary values and -Laplace at the interior points.
    points, kinds, _ = features.measurements()
    W = sparse.combination(coefficients) @ sparse.weights
    data_points = points[sparse.data_at]
    terms = sparse.terms
    K = covariance_rows(kernel, terms, data_points, W, np.arange(b + n_i), np.arange(b + n_i))
    K += 1e-10 * np.diag(np.diag(K))
    cross = covariance_rows(
        kernel,
        terms,
        np.concatenate([X[b:], data_points]),
        np.concatenate([sparse.weights[b : b + n_i], W]),
        np.arange(n_i),
        n_i + np.arange(b + n_i),
    )
    dense = cross @ np.linalg.solve(K, y)
    assert sparse.last.converged
    assert np.linalg.norm(mean - dense) / np.linalg.norm(dense) < 1e-3
    # Conjugate gradients stopped short say so.
    with pytest.warns(RuntimeWarning, match="conjugate gradients stopped after 3 iterations"):
        sparse.solve(coefficients, y, maxiter=3)
    # 81 interior points resolve u to a few per cent (the dense GP alike).
    assert np.linalg.norm(mean - u[b:]) / np.linalg.norm(u[b:]) < 5e-2


@pytest.fixture(scope="module")
def heat_data():
    """u values and f = u_t - alpha u_xx values at their own points, alpha a parameter."""
    rng = np.random.default_rng(3)
    alpha = pigp.Parameter(0.7)
    operators = [Identity.resolve(2), (D(1) - alpha * D(0, 2)).resolve(2)]
    u_points, f_points = rng.uniform(size=(70, 2)), rng.uniform(size=(60, 2))
    points = np.concatenate([u_points, f_points])
    kinds = np.concatenate([np.zeros(70, int), np.ones(60, int)])
    u = np.sin(np.pi * u_points[:, 0]) * np.exp(-u_points[:, 1])
    f = np.exp(-f_points[:, 1]) * np.sin(np.pi * f_points[:, 0]) * (0.7 * np.pi**2 - 1)
    y = np.concatenate([u, f])
    kernel = pigp.kernels.Matern72(lengthscales=[0.4, 0.6])
    return kernel, alpha, Terms.of(operators), points, kinds, y


def _dense_log_likelihood(kernel, terms, points, kinds, y, noise, nugget):
    W = terms.weights(points, kinds).numpy()
    n = len(points)
    K = covariance_rows(kernel, terms, points, W, np.arange(n), np.arange(n))
    K += np.diag(noise + nugget * np.diag(K))
    _, logdet = np.linalg.slogdet(K)
    return -0.5 * (y @ np.linalg.solve(K, y) + logdet + n * np.log(2 * np.pi))


def test_the_vecchia_log_likelihood_is_the_dense_one_when_columns_see_everything(heat_data):
    """At a radius covering the data the Vecchia log-likelihood is the exact log density
    (u and f at their own points, noise on each); at small radii it is below it."""
    from pigp.engines.cholesky.likelihood import vecchia_log_likelihood

    kernel, alpha, terms, points, kinds, y = heat_data
    noise = np.where(kinds == 0, 1e-4, 1e-3)
    dense = _dense_log_likelihood(kernel, terms, points, kinds, y, noise, 1e-10)
    values = {}
    for rho in (2.0, 1e4):
        pat = pattern(points, kinds, rho=rho)
        W = terms.weights(points, kinds)
        values[rho] = float(vecchia_log_likelihood(kernel, terms, points, W, pat, y, noise))
    assert values[1e4] == pytest.approx(dense, rel=1e-9)
    assert values[2.0] < dense - 1e-3


def test_the_vecchia_gradient_is_the_finite_difference_of_its_value(heat_data):
    """d/d(lengthscales, alpha, noise) of the Vecchia log-likelihood at rho = 3 by the
    tape against central differences of its value."""
    import tensorflow as tf

    from pigp.engines.cholesky.likelihood import vecchia_log_likelihood

    kernel, alpha, terms, points, kinds, y = heat_data
    pat = pattern(points, kinds, rho=3.0)
    log_noise = tf.Variable(np.log(np.where(kinds == 0, 1e-4, 1e-3)))
    variables = [kernel.lengthscales.unconstrained, alpha.unconstrained, log_noise]

    def value():
        W = terms.weights(points, kinds)
        return vecchia_log_likelihood(kernel, terms, points, W, pat, y, tf.exp(log_noise))

    with tf.GradientTape() as tape:
        total = value()
    gradients = tape.gradient(total, variables)
    for variable, gradient in zip(variables, gradients):
        start = variable.numpy().copy()
        flat = np.atleast_1d(start).reshape(-1)
        picks = range(len(flat)) if len(flat) < 5 else [0, 75, 120]
        for i in picks:
            step = 1e-5
            shifted = flat.copy()
            shifted[i] += step
            variable.assign(shifted.reshape(start.shape))
            up = float(value())
            shifted[i] -= 2 * step
            variable.assign(shifted.reshape(start.shape))
            down = float(value())
            variable.assign(start)
            expected = (up - down) / (2 * step)
            got = np.reshape(tf.convert_to_tensor(gradient).numpy(), -1)[i]
            assert got == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_the_batched_gradient_is_the_whole_tape_gradient(heat_data):
    """``vecchia_value_and_gradient`` (one batch of blocks at a time, the chain rule
    through the weights and noise applied once) against one tape over the whole sum,
    with batches forced small."""
    import tensorflow as tf

    from pigp.engines.cholesky import likelihood

    kernel, alpha, terms, points, kinds, y = heat_data
    pat = pattern(points, kinds, rho=3.0)
    log_noise = tf.Variable(np.log(np.where(kinds == 0, 1e-4, 1e-3)))
    variables = [kernel.lengthscales.unconstrained, alpha.unconstrained, log_noise]

    def make():
        return terms.weights(points, kinds), tf.exp(log_noise)

    with tf.GradientTape() as tape:
        W, noise = make()
        whole = likelihood.vecchia_log_likelihood(kernel, terms, points, W, pat, y, noise)
    expected = tape.gradient(whole, variables)
    saved = likelihood.BATCH_ENTRIES
    likelihood.BATCH_ENTRIES = 1  # one layout's worth of supernodes a batch
    try:
        batches = likelihood.Batches(pat)
        value, gradients = likelihood.vecchia_value_and_gradient(
            kernel, terms, points, pat, y, make, variables, batches=batches
        )
    finally:
        likelihood.BATCH_ENTRIES = saved
    assert len(batches.batches) > 1
    assert value == pytest.approx(float(whole), rel=1e-12)
    for got, want in zip(gradients, expected):
        np.testing.assert_allclose(got, tf.convert_to_tensor(want).numpy(), rtol=1e-9, atol=1e-9)


def test_gauss_newton_through_the_factor_is_dense_gauss_newton():
    """-Laplace(u) + u^3 = f (``pigp.experiments.nonlinear.elliptic_equation``) by
    ``gauss_newton`` against the same Gauss-Newton steps with dense matrices: equal
    where the columns see (nearly) everything, and at rho = 5 no farther from dense
    than the built-in check (rho against rho - 1) says."""
    from pigp.engines.cholesky.collocation import gauss_newton
    from pigp.experiments.nonlinear import (
        _elliptic_forcing,
        elliptic_equation,
        elliptic_solution,
    )

    boundary, interior = square(12)
    kernel = pigp.kernels.Matern72(lengthscales=[0.3, 0.3])
    f, g = _elliptic_forcing(interior), elliptic_solution(boundary)
    equation = elliptic_equation()
    solution = gauss_newton(equation, kernel, boundary, g, interior, f, rho=12.0, tolerance=1e-9)
    assert solution.converged
    # Dense: u = K(x, data) K(data, data)^-1 y for the linearisation at the last u.
    engine = solution.engine
    b, n_i = len(boundary), len(interior)
    points, kinds, _ = engine.features.measurements()
    u = np.zeros(n_i)
    for _ in range(len(solution.steps)):
        coefficients = np.stack([3 * u**2, -np.ones(n_i)], 1)
        W = engine.combination(coefficients) @ engine.weights
        data_points = points[engine.data_at]
        n = b + n_i
        K = covariance_rows(kernel, engine.terms, data_points, W, np.arange(n), np.arange(n))
        K += 1e-10 * np.diag(np.diag(K))
        cross = covariance_rows(
            kernel,
            engine.terms,
            np.concatenate([interior, data_points]),
            np.concatenate([engine.weights[b : b + n_i], W]),
            np.arange(n_i),
            n_i + np.arange(n),
        )
        u = cross @ np.linalg.solve(K, np.concatenate([g, f + 2 * u**3]))
    sparse = solution.u[b:]
    assert np.linalg.norm(sparse - u) / np.linalg.norm(u) < 1e-4
    checked = gauss_newton(equation, kernel, boundary, g, interior, f, rho=5.0, check=True)
    difference = np.linalg.norm(checked.u[b:] - u) / np.linalg.norm(u)
    assert 1e-5 < difference < checked.check < 0.1
    truth = elliptic_solution(interior)
    # 144 interior points resolve u to a few per cent (dense: 2.3e-2).
    assert np.linalg.norm(sparse - truth) / np.linalg.norm(truth) < 5e-2
    # The features' means at the interior points satisfy the equation there.
    lap = solution.values[1]
    residual = -lap + solution.values[0] ** 3 - f
    assert np.abs(residual).max() < 1e-6 * np.abs(f).max()


def test_a_collocation_beyond_the_memory_is_refused_before_any_work(monkeypatch):
    """``pigp.memory.check_collocation`` refuses what will not fit, naming rho (3,364
    measurements at rho 40: every column would hold half of them, 0.2 GB beside the
    1.2 GB floor)."""
    from pigp import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 1.1e9)
    monkeypatch.setattr(memory, "resident_bytes", lambda: 0)
    boundary, interior = square(40)
    operators = [Identity.resolve(2), (D(0, 2) + D(1, 2)).resolve(2)]
    features = Features(np.concatenate([boundary, interior]), len(boundary), operators)
    kernel = pigp.kernels.Matern72(lengthscales=[0.3, 0.3])
    with pytest.raises(ValueError, match="collocation: .* rho 40"):
        Collocation(kernel, features, rho=40.0)
    # What the process already holds (TensorFlow, a test runner's other work) counts
    # against the floor: the same solve in a process holding 1 GB asks 0.17 GB more.
    measurements = len(features.measurements()[0])
    monkeypatch.setattr(memory, "resident_bytes", lambda: 10**9)
    memory.check_collocation(measurements, 2, 2, 40.0, 1.3)
    monkeypatch.setattr(memory, "available_bytes", lambda: 0.1e9)
    with pytest.raises(ValueError, match="collocation: .* rho 40"):
        memory.check_collocation(measurements, 2, 2, 40.0, 1.3)
    # The estimate grows with the measurements, the dimension and rho.
    small = memory.collocation_bytes(10**4, 2)
    assert small < memory.collocation_bytes(10**5, 2) < memory.collocation_bytes(10**5, 3)
    assert memory.collocation_bytes(10**5, 2, rho=6.0) > memory.collocation_bytes(10**5, 2)
    # A column holds at most the measurements before it: half of them on average.
    floor = memory.COLLOCATION_OVERHEAD
    per_entry = memory.COLLOCATION_BYTES_PER_ENTRY
    assert memory.collocation_bytes(400, 2, rho=1e3) - floor == 400 * 200 * per_entry


def test_bad_input_to_gauss_newton_is_refused_with_the_argument_named():
    from pigp.engines.cholesky.collocation import gauss_newton
    from pigp.experiments.nonlinear import elliptic_equation

    boundary, interior = square(4)
    kernel = pigp.kernels.Matern72(lengthscales=[0.3, 0.3])
    g, f = np.zeros(len(boundary)), np.ones(len(interior))
    bad = f.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="forcing"):
        gauss_newton(elliptic_equation(), kernel, boundary, g, interior, bad)
    with pytest.raises(ValueError, match="interior: expected 2 columns"):
        gauss_newton(elliptic_equation(), kernel, boundary, g, interior[:, :1], f)
    with pytest.raises(ValueError, match="boundary_values"):
        gauss_newton(elliptic_equation(), kernel, boundary, g[:-1], interior, f)


def test_a_factor_that_cannot_be_made_says_so():
    """Lengthscales 10^4 times the spacing of u and f measurements make every block
    singular in floating point: a ValueError naming the kernel, not NaN in the factor."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 2))
    kernel = pigp.kernels.Matern52(lengthscales=[1e3, 1e3])
    terms = Terms.of([Identity.resolve(2), (D(1) - 0.5 * D(0, 2)).resolve(2)])
    points = np.concatenate([X, X])
    kinds = np.repeat([0, 1], 200)
    W = terms.weights(points, kinds).numpy()
    with pytest.raises(ValueError, match="kernel: the covariance of a neighbourhood"):
        factor(kernel, terms, points, W, pattern(points, kinds), nugget=0.0)


def test_marching_in_time_windows_solves_the_heat_equation():
    """``march``: u_t = u_xx + f with u = exp(-t) sin(pi x) + x t (the walls move), four
    windows of [0, 1], against the closed form and one solve over the whole interval;
    and the refusals."""
    from pigp.engines.cholesky.collocation import gauss_newton
    from pigp.engines.cholesky.marching import march
    from pigp.operators import D, Identity, nonlinear

    def exact(X):
        return np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0]) + X[:, 0] * X[:, 1]

    def forcing(X):  # u_t - u_xx
        return (np.pi**2 - 1) * np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0]) + X[:, 0]

    features = {"u": Identity, "t": D("t"), "xx": D("x", 2)}
    equation = nonlinear(lambda v, p: v["t"] - v["xx"], features).with_dims("x", "t")
    space = np.linspace(0, 1, 22)[1:-1, None]
    walls = np.array([[0.0], [1.0]])
    initial = exact(np.c_[np.r_[walls[:, 0], space[:, 0]], np.zeros(22)])
    kernel = pigp.kernels.Matern72(lengthscales=[0.3, 0.3])
    result = march(
        equation,
        kernel,
        space,
        walls,
        initial,
        lambda t: exact(np.c_[walls[:, 0], [t, t]]),
        np.linspace(0, 1, 5),
        5,
        forcing=forcing,
        rho=40.0,  # every column sees its whole window: the exact GP's numbers
    )
    assert result.u.shape == (20, 20) and all(result.converged)
    np.testing.assert_allclose(result.times, np.arange(1, 21) / 20)
    grid = np.stack(np.meshgrid(space[:, 0], result.times), -1).reshape(-1, 2)
    truth = exact(grid).reshape(20, 20)
    error = np.abs(result.u - truth).max()
    # The same points in one solve over [0, 1]: the windows lose nothing against it
    # (both 7.2e-3 from the closed form, the accuracy of Matérn 7/2 at this spacing).
    boundary = np.concatenate(
        [np.c_[np.r_[walls[:, 0], space[:, 0]], np.zeros(22)]]
        + [np.c_[walls[:, 0], [t, t]] for t in result.times]
    )
    once = gauss_newton(
        equation, kernel, boundary, exact(boundary), grid, forcing(grid), rho=40.0
    ).u[len(boundary) :]
    assert error < 1.1 * np.abs(once - truth.reshape(-1)).max()
    assert error < 1e-2 * np.abs(truth).max()
    with pytest.raises(ValueError, match="windows: expected at least two increasing"):
        march(equation, kernel, space, walls, initial, lambda t: [0, 0], [0.0, 0.0], 5)
    with pytest.raises(ValueError, match="wall_values: expected 2 finite values"):
        march(equation, kernel, space, walls, initial, lambda t: [0.0], [0.0, 1.0], 5)
    with pytest.raises(ValueError, match="initial"):
        march(equation, kernel, space, walls, initial[:-1], lambda t: [0, 0], [0.0, 1.0], 5)


def test_a_warped_kernel_is_ordered_in_its_warped_coordinates():
    """u_t = 0.1 u_xx + f with u = e^(-t) tanh(5x), the space points clustered at the
    front (x = sinh(3s)/sinh(3), s even) and a Matérn 7/2 on the warped x = asinh(x
    sinh 3)/3: the screening points are the warped ones over the base kernel's
    lengthscales, and at rho = 4 the solution is within 1% of the exact GP's (every
    column seeing everything), where ordering in raw coordinates left it 23% away."""
    import tensorflow as tf

    from pigp.engines.cholesky import collocation
    from pigp.operators import nonlinear

    a = 3.0
    x = np.sinh(a * np.linspace(-1, 1, 42)[1:-1]) / np.sinh(a)
    t = np.linspace(0, 0.5, 11)[1:]
    interior = np.stack(np.meshgrid(x, t), -1).reshape(-1, 2)
    edge = np.r_[-1.0, x, 1.0]
    ends = np.ones(10)
    boundary = np.concatenate([np.c_[edge, np.zeros_like(edge)], np.c_[-ends, t], np.c_[ends, t]])

    def exact(X):
        return np.exp(-X[:, 1]) * np.tanh(5 * X[:, 0])

    def forcing(X):  # u_t - 0.1 u_xx
        th = np.tanh(5 * X[:, 0])
        return np.exp(-X[:, 1]) * (-th + 5.0 * th * (1 - th**2))

    features = {"u": Identity, "t": D("t"), "xx": D("x", 2)}
    equation = nonlinear(lambda v, p: v["t"] - 0.1 * v["xx"], features).with_dims("x", "t")
    base = pigp.kernels.Matern72(lengthscales=[0.15, 0.2])
    kernel = pigp.kernels.Warped(base, [lambda z: tf.asinh(z * np.sinh(a)) / a, None])
    warped = np.c_[np.arcsinh(interior[:, 0] * np.sinh(a)) / a, interior[:, 1]]
    np.testing.assert_allclose(
        collocation.screening_points(kernel, interior), warped / [0.15, 0.2], rtol=1e-12
    )

    def solve(rho):
        return collocation.gauss_newton(
            equation,
            kernel,
            boundary,
            exact(boundary),
            interior,
            forcing(interior),
            rho=rho,
            nugget=1e-10,
        ).u[len(boundary) :]

    reference = solve(40.0)
    assert np.linalg.norm(reference - exact(interior)) < 0.02 * np.linalg.norm(exact(interior))
    distance = np.linalg.norm(solve(4.0) - reference) / np.linalg.norm(reference)
    assert distance < 1e-2
