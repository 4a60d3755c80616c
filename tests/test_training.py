"""Training: Adam's update against a NumPy reference, rejection, and L-BFGS's history."""

import numpy as np
import pytest
import scipy.optimize
import tensorflow as tf

import pigp
from pigp.fitting import training
from pigp.fitting.training import Adam


def numpy_adam(x, gradient, steps, rate, beta1=0.9, beta2=0.999, eps=1e-8):
    m = v = np.zeros_like(x)
    for t in range(1, steps + 1):
        g = gradient(x)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        x = x - rate * np.sqrt(1 - beta2**t) / (1 - beta1**t) * m / (np.sqrt(v) + eps)
    return x


def test_adam_update_matches_a_numpy_reference():
    A = np.array([[3.0, 0.5], [0.5, 1.0]])
    x0 = np.array([1.0, -2.0])
    variable = tf.Variable(x0)
    optimizer = Adam(learning_rate=0.1)
    state = optimizer.init([variable])
    for _ in range(30):
        with tf.GradientTape() as tape:
            loss = 0.5 * tf.tensordot(variable, tf.linalg.matvec(A, variable), 1)
        taken, state = optimizer.update(loss, tape.gradient(loss, [variable]), [variable], state)
        assert bool(taken)
    expected = numpy_adam(x0, lambda x: A @ x, 30, 0.1)
    np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-12)
    assert float(state.step) == 30.0


def test_adam_rejects_a_non_finite_step_and_halves_the_rate():
    variable = tf.Variable([1.0, 2.0], dtype=tf.float64)
    optimizer = Adam(learning_rate=0.5)
    state = optimizer.init([variable])
    _, state = optimizer.update(
        tf.constant(4.0, tf.float64), [tf.constant([1.0, 1.0], tf.float64)], [variable], state
    )
    moved = variable.numpy().copy()
    np.testing.assert_array_equal(state.best[0].numpy(), [1.0, 2.0])  # values at loss 4
    taken, state = optimizer.update(
        tf.constant(np.nan, tf.float64), [tf.constant([1.0, 1.0], tf.float64)], [variable], state
    )
    assert not bool(taken)
    np.testing.assert_array_equal(variable.numpy(), [1.0, 2.0])  # back to the best
    assert float(state.rate_scale) == 0.5 and float(state.step) == 1.0
    assert not np.array_equal(moved, variable.numpy())


def test_optimisers_differing_in_rate_alone_share_programs():
    assert Adam(0.01) == Adam(0.5) and hash(Adam(0.01)) == hash(Adam(0.5))
    assert Adam(beta1=0.8) != Adam()


def heat_model():
    rng = np.random.default_rng(0)
    X_u, X_f = rng.uniform(size=(8, 2)), rng.uniform(size=(10, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # noqa: E731
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.0, [0.5, 0.5]),
        pigp.operators.heat(1.0),
        noise_u=1e-3,
        noise_f=1e-3,
    )
    return model, (X_u, u(X_u), X_f, (np.pi**2 - 1) * u(X_f))


def test_lbfgs_history_has_one_entry_per_iteration():
    """Against SciPy run directly on the same objective from the same start."""
    model, data = heat_model()
    model.fit(*data, steps=0)
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    variables = objective.variables
    x0 = np.concatenate([v.numpy().reshape(-1) for v in variables])
    sizes = np.cumsum([int(np.prod(v.shape)) for v in variables])[:-1]

    def function(x):
        for v, part in zip(variables, np.split(x, sizes)):
            v.assign(part.reshape(v.shape))
        loss, grads = objective.loss_and_gradient(Xs, y)
        return float(loss), np.concatenate([g.numpy().reshape(-1) for g in grads])

    reference = scipy.optimize.minimize(
        function, x0, jac=True, method="L-BFGS-B", options={"maxiter": 40}
    )
    for v, part in zip(variables, np.split(x0, sizes)):
        v.assign(part.reshape(v.shape))
    model.fit(*data, steps=40, optimizer="lbfgs")
    assert len(model.history) == reference.nit
    assert len(model.lbfgs_evaluations) == reference.nfev > reference.nit
    # The fit evaluates in one XLA program (Objective.fuses), the reference through the
    # Gram matrix's and its VJP's programs: the same losses to rounding.
    assert model.history[-1] == pytest.approx(reference.fun, rel=1e-10)
    assert np.all(np.diff(model.history) < 0)
    assert set(model.history) <= set(model.lbfgs_evaluations)


def test_adam_history_has_one_entry_per_step_and_ends_at_the_best():
    model, data = heat_model()
    model.fit(*data, steps=300, optimizer="adam")
    assert len(model.history) == 300 and model.lbfgs_evaluations == []
    assert -model.log_marginal_likelihood() <= min(model.history) + 1e-9


def _heat_model(kernel, diffusivity, rng, n_u, n_f):
    model = pigp.PIGP(kernel, pigp.operators.heat(diffusivity))
    X_u, X_f = rng.uniform(size=(n_u, 2)), rng.uniform(size=(n_f, 2))
    model.fit(X_u, np.sin(3 * X_u[:, 0]), X_f, np.cos(X_f[:, 1]), steps=0, optimizer="adam")
    return model


def _reference_loss_and_gradient(objective, Xs, y):
    """The loss through the uncompiled covariance read from the variables (no shared
    program, no substituted values), differentiated by one tape."""
    with tf.GradientTape() as tape:
        loss = objective.nll(Xs, y)
    return float(loss), [g.numpy() for g in tape.gradient(loss, objective.variables)]


def test_models_of_one_structure_share_compiled_programs_and_stay_exact():
    """A second model of the same kernel and operator (other data sizes, values and
    variables) reuses the first one's compiled covariance programs, and its loss and
    gradient are its own; a model whose operator differs in a constant does not."""
    rng = np.random.default_rng(3)
    first = _heat_model(pigp.kernels.SquaredExponential(1.0, [0.3, 0.5]), 1.0, rng, 12, 15)
    second = _heat_model(pigp.kernels.SquaredExponential(2.0, [0.6, 0.2]), 1.0, rng, 9, 17)
    other = _heat_model(pigp.kernels.SquaredExponential(2.0, [0.6, 0.2]), 0.5, rng, 9, 17)
    assert second.objective()._gram is first.objective()._gram
    assert second.objective()._gram_vjp is first.objective()._gram_vjp
    assert other.objective()._gram is not first.objective()._gram
    for model in (first, second, other):
        objective = model.objective()
        Xs, y = model.data.tensors(model.dtype)
        loss, grads = objective.loss_and_gradient(Xs, y)
        ref_loss, ref_grads = _reference_loss_and_gradient(objective, Xs, y)
        assert float(loss) == pytest.approx(ref_loss, rel=1e-10)
        for g, r in zip(grads, ref_grads):
            np.testing.assert_allclose(g.numpy(), r, rtol=1e-8, atol=1e-10)


def _everyday_objective(seed: int = 1):
    """The objective of a 40-value inverse heat problem (u = sin(pi x) cos(pi t) +
    x (1 - x) / 2, alpha = 0.5 learned from 2, 1% noise; benchmarks/everyday.py's)
    at its start, and its ``(Xs, y)``."""
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.uniform(0, 1, (20, 2)), rng.uniform(0, 1, (20, 2))
    x, t = X_u[:, 0], X_u[:, 1]
    y_u = np.sin(np.pi * x) * np.cos(np.pi * t) + 0.5 * x * (1 - x)
    x, t = X_f[:, 0], X_f[:, 1]
    u_t = -np.pi * np.sin(np.pi * x) * np.sin(np.pi * t)
    u_xx = -(np.pi**2) * np.sin(np.pi * x) * np.cos(np.pi * t) - 1.0
    y_f = u_t - 0.5 * u_xx
    y_u = y_u + 0.01 * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(20)
    y_f = y_f + 0.01 * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(20)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.operators.heat(diffusivity=pigp.Parameter(2.0, positive=True)),
    )
    model.fit(X_u, y_u, X_f, y_f, steps=0, optimizer="adam")
    return model.objective(), model.data.tensors(model.dtype)


def test_adam_hands_over_where_two_lbfgs_probes_agree():
    """Where only the nats keep Adam going, L-BFGS-B probes from Adam's point end
    the run once two in a row agree, at the optimum the full schedule (Adam until
    the nats rule lets go, then L-BFGS-B) reaches, in fewer Adam steps."""
    objective, (Xs, y) = _everyday_objective()
    start = [v.numpy() for v in objective.variables]
    full = pigp.fitting.training.minimize_adam(
        objective, Xs, y, 2000, Adam(0.02), stall=0.05, stall_nats=1.0
    )
    pigp.fitting.training.minimize_lbfgs(objective, Xs, y, 1000)
    reference = float(objective.loss(Xs, y.numpy()))
    for v, value in zip(objective.variables, start):
        v.assign(value)
    probed = pigp.fitting.training.minimize_adam(
        objective, Xs, y, 2000, Adam(0.02), stall=0.05, stall_nats=1.0, probe=0.01
    )
    assert full.probes == [] and len(probed.probes) == 2
    (first_step, first), (step, last) = probed.probes
    assert step == first_step + 250 == len(probed.losses) < len(full.losses)
    assert abs(last - first) <= 0.01
    # Left at the probe's optimum: the full schedule's loss, a gradient near 0.
    loss, grads = objective.loss_and_gradient(Xs, y)
    assert float(loss) == pytest.approx(last, abs=1e-9)
    assert float(loss) == pytest.approx(reference, abs=1e-3)
    assert max(np.abs(g.numpy()).max() for g in grads) < 1e-2


@pytest.mark.parametrize("nats", [None, 0.5])
def test_adam_stops_at_the_first_multiple_of_250_steps_that_gained_too_little(nats):
    """minimize_adam's stall rule, checked against the history it returns: it stops at
    the first multiple of 250 steps where those steps lowered the best loss by less
    than stall times all that the run lowered it (and, with ``stall_nats``, by less
    than that many nats), and not before."""
    rng = np.random.default_rng(5)
    model = _heat_model(pigp.kernels.SquaredExponential(1.0, [0.3, 0.5]), 1.0, rng, 10, 14)
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    stall = 0.1
    history = pigp.fitting.training.minimize_adam(
        objective, Xs, y, 5000, Adam(0.02), stall=stall, stall_nats=nats
    )
    losses = np.asarray(history.losses)
    assert len(losses) % 250 == 0 and len(losses) < 5000
    best = [losses[:k].min() for k in range(250, len(losses) + 1, 250)]
    gained = [losses[0] - b for b in best]
    recent = [np.inf] + [best[i - 1] - best[i] for i in range(1, len(best))]
    stops = [r < stall * g and (nats is None or r < nats) for r, g in zip(recent, gained)]
    assert stops[-1] and not any(stops[:-1])
    if nats is not None:  # the nats condition held the run back past the relative one
        assert any(r < stall * g for r, g in zip(recent[:-1], gained[:-1]))


def test_small_cholesky_matches_lapack_and_gives_nan_where_not_positive_definite():
    """``pigp.linalg.small_cholesky`` (the fused training programs' factorisation),
    compiled with XLA: LAPACK's factor of a badly conditioned kernel matrix to
    rounding, and NaN (never a finite wrong factor) for an indefinite matrix."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 2))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1) / 0.3**2) + 1e-8 * np.eye(30)
    factor = tf.function(pigp.linalg.small_cholesky, jit_compile=True)
    L = factor(tf.constant(K)).numpy()
    reference = np.linalg.cholesky(K)
    assert np.abs(L - reference).max() <= 1e-9 * np.abs(reference).max()
    assert np.all(np.triu(L, 1) == 0)
    indefinite = K - 0.1 * np.eye(30)
    assert np.isnan(factor(tf.constant(indefinite)).numpy()).any()


@pytest.mark.parametrize("case", ["whole", "blocks", "conditioned", "prior"])
def test_the_fused_program_gives_the_reference_loss_and_gradient(case):
    """On few values the Adam program is one XLA program (the Cholesky factor
    included), which L-BFGS-B's evaluations call with no step, the variables set
    from its vector: its loss and gradient against one tape through the uncompiled
    covariance, for a kernel whose gradient is taken on the whole matrix (squared
    exponential), one taken block by block (spectral mixture), a conditioned data set
    and a prior."""
    import tensorflow_probability as tfp

    rng = np.random.default_rng(4)
    kernel = (
        pigp.kernels.SpectralMixture(1) if case == "blocks" else pigp.kernels.SquaredExponential()
    )
    prior = tfp.distributions.LogNormal(0.0, 1.0) if case == "prior" else None
    operator = pigp.operators.heat(pigp.Parameter(0.8, positive=True, prior=prior))
    X_u, X_f = rng.uniform(size=(11, 2)), rng.uniform(size=(9, 2))
    model = pigp.PIGP(kernel, operator)
    observations = [
        pigp.Observations(
            X_f, np.sin(X_f[:, 0]), operator, 1e-3, name="equation", condition=case == "conditioned"
        ),
        pigp.Observations(X_u, np.cos(X_u[:, 1]), pigp.operators.Identity, 1e-3, name="sensors"),
    ]
    model.fit(observations=observations, steps=0)
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    assert objective.fuses(int(y.shape[0])) and bool(objective.priors) == (case == "prior")
    # Set from a vector: the current values moved, the reference taken there.
    x = np.concatenate([v.numpy().reshape(-1) for v in objective.variables]) + 0.1
    program = pigp.fitting.training._tf_program(objective, Adam(), fused=True)
    _, _, _, loss, gradient = program(
        Xs,
        y,
        tf.constant(0),
        pigp.fitting.training._flat_state(Adam().init(objective.variables)),
        objective.unconstrained,
        tf.constant(x),
        tf.constant(True),
    )
    assert np.array_equal(np.concatenate([v.numpy().reshape(-1) for v in objective.variables]), x)
    ref_loss, ref_grads = _reference_loss_and_gradient(objective, Xs, y)
    assert float(loss) == pytest.approx(ref_loss, rel=1e-10)
    reference = np.concatenate([np.ravel(r) for r in ref_grads])
    np.testing.assert_allclose(gradient.numpy(), reference, rtol=1e-7, atol=1e-9)


def test_fused_and_separate_programs_take_the_same_adam_steps(monkeypatch):
    """300 Adam steps (two compiled calls at least, the state carried between them) in
    the one fused XLA program and through the separate Gram and VJP programs: the
    same losses and the same end point, to rounding."""
    objective, (Xs, y) = _everyday_objective()
    start = [v.numpy() for v in objective.variables]
    runs = {}
    for fused_up_to in (0, 10_000):
        monkeypatch.setattr(pigp.engines.dense.objective, "FUSED_UP_TO", fused_up_to)
        for v, value in zip(objective.variables, start):
            v.assign(value)
        history = pigp.fitting.training.minimize_adam(objective, Xs, y, 300, Adam(0.02))
        runs[fused_up_to] = (np.array(history.losses), [v.numpy() for v in objective.variables])
    (separate, separate_end), (fused, fused_end) = runs[0], runs[10_000]
    assert len(fused) == len(separate) == 300
    np.testing.assert_allclose(fused, separate, rtol=1e-9)
    for a, b in zip(fused_end, separate_end):
        np.testing.assert_allclose(a, b, rtol=1e-7)


def test_the_default_progress_bar_waits_ten_seconds_and_only_on_a_terminal(monkeypatch):
    """``verbose=None`` (``fit``'s default): a bar that appears after 10 s of a run, on
    a terminal; off where the output is not one (logs, CI). True: always; False: none."""
    import io

    assert training.progress_bar(10, False) is None
    quiet = training.progress_bar(10, None)
    assert quiet.disable is True  # pytest's stderr is not a terminal
    quiet.close()

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stderr", Terminal())
    shown = training.progress_bar(10, None)
    assert not shown.disable and shown.delay == 10
    shown.close()
    always = training.progress_bar(10, True)
    assert not always.disable and always.delay == 0
    always.close()
