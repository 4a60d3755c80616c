"""SparsePIGP against the exact GP, its own closed forms, and itself across replicas."""

import json
import os
import socket
import subprocess
import sys
import warnings

import numpy as np
import pytest

import pigp
from pigp import kernels, operators
from pigp.experiments.heat import heat_solution

WORKER = os.path.join(os.path.dirname(__file__), "helpers", "sparse_worker.py")


def heat_data(n_u, n_f, seed=0, noise=0.01):
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.random((n_u, 2)), rng.random((n_f, 2))
    u, _ = heat_solution(X_u)
    _, f = heat_solution(X_f)
    return X_u, u + noise * rng.standard_normal(n_u), X_f, f


def fixed_kernel():
    return kernels.SquaredExponential(variance=0.8, lengthscales=[0.4, 0.7])


def test_with_inducing_points_at_the_u_data_the_bound_and_predictions_are_the_exact_gps():
    X_u, y_u, _, _ = heat_data(25, 0)
    sparse = pigp.SparsePIGP(
        fixed_kernel(), operators.heat(1.0), inducing_points=X_u, noise_u=1e-2, jitter=1e-12
    )
    sparse.fit(X_u, y_u, method="collapsed", steps=0)
    exact = pigp.PIGP(fixed_kernel(), operators.heat(1.0), noise_u=1e-2)
    exact.fit(X_u, y_u, steps=0, optimizer="adam")
    Xs, y = sparse.data.tensors(sparse.dtype)
    bound = -sparse.collapsed_objective().loss(Xs, y.numpy())
    np.testing.assert_allclose(bound, exact.log_marginal_likelihood(), rtol=1e-7)
    X = np.random.default_rng(1).random((30, 2))
    for output in ("u", "f"):
        mean, var = sparse.predict(X, output)
        mean_e, var_e = exact.predict(X, output)
        np.testing.assert_allclose(mean, mean_e, rtol=1e-6, atol=1e-8 * np.abs(mean_e).max())
        np.testing.assert_allclose(var, var_e, rtol=1e-5, atol=1e-8 * var_e.max())
    _, cov = sparse.predict(X[:7], "f", full_cov=True)
    _, cov_e = exact.predict(X[:7], "f", full_cov=True)
    np.testing.assert_allclose(cov, cov_e, rtol=1e-5, atol=1e-8 * np.abs(cov_e).max())


def test_the_sparse_laplace_hessian_by_differences_is_the_nested_tapes_one():
    """A sparse model's Laplace takes central differences of the gradient (the nested
    tapes through its blocks held 3.3 times the fit's peak memory): the Hessian matches
    the nested tapes' on the same bound, and so do the intervals."""
    from pigp.inference import laplace

    X_u, y_u, X_f, y_f = heat_data(40, 40)
    alpha = pigp.Parameter(0.7, name="alpha")
    model = pigp.SparsePIGP(kernels.SquaredExponential(), operators.heat(alpha), num_inducing=30)
    model.fit(X_u, y_u, X_f, y_f, method="collapsed")
    objective = model.objective()
    assert objective.hessian_by_differences
    Xs, y = model.data.tensors(model.dtype)
    H, gradient = laplace.hessian_and_gradient(objective, Xs, y)
    tapes, tape_gradient = (
        t.numpy() for t in laplace._hessian(objective, Xs, y, objective.unconstrained)
    )
    tapes = 0.5 * (tapes + tapes.T)
    np.testing.assert_allclose(gradient, tape_gradient, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(H, tapes, atol=1e-3 * np.abs(tapes).max())
    low, high = model.parameter_intervals()["operator.alpha"]
    assert low < model.parameter_values()["operator.alpha"] < high


def test_intervals_warn_where_the_inducing_points_leave_the_noise_unexplained():
    """``unexplained`` is the mean of ``(k(x, x) - q(x, x)) / noise`` over the data, made
    here from the model's public prior covariances (``Kzz`` with the model's relative
    jitter); the intervals warn above 0.05 (6 inducing points, noise learned) and not
    below (60, noise held at 1e-2)."""
    from pigp.engines.variational.collapsed import UNEXPLAINED_WARNS, unexplained

    X_u, y_u, X_f, y_f = heat_data(40, 40)
    shares = {}
    held = {k: pigp.Parameter(1e-2, positive=True, trainable=False) for k in ("noise_u", "noise_f")}
    for m, noise in ((6, {}), (60, held)):
        alpha = pigp.Parameter(0.7, name="alpha")
        model = pigp.SparsePIGP(
            kernels.SquaredExponential(), operators.heat(alpha), num_inducing=m, **noise
        )
        model.fit(X_u, y_u, X_f, y_f, method="collapsed")
        Z, scale = model.inducing_points, model.y_scale**2
        K_zz = model.covariance(Z, Z) / scale
        K_zz += model.jitter * np.mean(np.diag(K_zz)) * np.eye(m)
        values = model.parameter_values()
        ratios = []
        for X, name in ((X_u, "u"), (X_f, "f")):
            k = np.diag(model.covariance(X, X, name, name)) / scale
            K_xz = model.covariance(X, Z, name, "u") / scale
            q = np.sum(K_xz * np.linalg.solve(K_zz, K_xz.T).T, axis=1)
            ratios.append((k - q) / float(values[f"noise_{name}"]))
        shares[m] = unexplained(model)
        assert shares[m] == pytest.approx(np.mean(np.concatenate(ratios)), rel=1e-3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.parameter_intervals()
        loose = [w for w in caught if "inducing points leave" in str(w.message)]
        assert len(loose) == (shares[m] > UNEXPLAINED_WARNS)
    assert shares[6] > UNEXPLAINED_WARNS > shares[60]


def test_the_elbo_at_the_optimal_q_is_the_collapsed_bound():
    X_u, y_u, X_f, y_f = heat_data(30, 40)
    X_n = np.stack([np.zeros(10), np.linspace(0.05, 1, 10)], axis=1)
    u_x = np.pi * np.exp(-X_n[:, 1])  # Neumann data at x = 0
    neumann = pigp.Observations(X_n, u_x, operators.D(0), name="flux")
    model = pigp.SparsePIGP(fixed_kernel(), operators.heat(1.0), num_inducing=12)
    model.fit(X_u, y_u, X_f, y_f, observations=[neumann], method="collapsed", steps=0)
    assert model.data.names == ["u", "f", "flux"]
    Xs, y = model.data.tensors(model.dtype)
    bound = -model.collapsed_objective().loss(Xs, y.numpy())
    np.testing.assert_allclose(model.elbo(), bound, rtol=1e-9)
    # Any other q is worse.
    model.q_mu.assign_add(0.01 * np.ones(12))
    assert model.elbo() < bound


def test_one_natural_step_of_size_one_on_the_full_batch_gives_the_optimal_q():
    X_u, y_u, X_f, y_f = heat_data(30, 20)
    model = pigp.SparsePIGP(fixed_kernel(), operators.heat(1.0), num_inducing=10)
    model.fit(X_u, y_u, X_f, y_f, method="collapsed", steps=0)
    m, Ls = model.q_mu.numpy(), model.q_sqrt.numpy()
    model.q_mu.assign(np.zeros(10))
    model.q_sqrt.assign(np.eye(10))
    model.fit(
        X_u, y_u, X_f, y_f, method="stochastic", steps=1, batch_size=50,
        learning_rate=1e-300, natural_step=1.0, warm_start=None, optimal_q=False,
    )  # fmt: skip
    np.testing.assert_allclose(model.q_mu.numpy(), m, rtol=1e-7, atol=1e-9)
    S = np.tril(model.q_sqrt.numpy()) @ np.tril(model.q_sqrt.numpy()).T
    np.testing.assert_allclose(S, Ls @ Ls.T, rtol=1e-7, atol=1e-9)


def test_the_minibatch_losses_of_one_epoch_average_to_the_negative_elbo():
    # 40 u and 20 f values, batches of 12 = 8 u + 4 f: five steps see every value once.
    X_u, y_u, X_f, y_f = heat_data(40, 20)
    model = pigp.SparsePIGP(fixed_kernel(), operators.heat(1.0), num_inducing=8)
    model.fit(X_u, y_u, X_f, y_f, method="collapsed", steps=0)
    assert model.batch_sizes(12) == [8, 4]
    model.fit(
        X_u, y_u, X_f, y_f, method="stochastic", steps=5, batch_size=12,
        learning_rate=1e-300, natural_step=None, warm_start=None, optimal_q=False,
    )  # fmt: skip
    np.testing.assert_allclose(np.mean(model.history), -model.elbo(), rtol=1e-10)
    assert np.std(model.history) > 1e-3 * abs(np.mean(model.history))  # the batches differ


def test_the_stochastic_fit_learns_the_heat_solution():
    X_u, y_u, X_f, y_f = heat_data(1000, 300)
    model = pigp.SparsePIGP(kernels.SquaredExponential(), operators.heat(1.0), num_inducing=32)
    model.fit(X_u, y_u, X_f, y_f, method="stochastic", steps=500, batch_size=200)
    X = np.random.default_rng(5).random((400, 2))
    mean, var = model.predict(X)
    truth, _ = heat_solution(X)
    assert np.linalg.norm(mean - truth) / np.linalg.norm(truth) < 1e-2
    assert 0.8 < np.mean(np.abs(mean - truth) < 1.96 * np.sqrt(var)) <= 1.0


def test_the_gradient_in_the_inducing_points_is_the_finite_difference_one():
    X_u, y_u, X_f, y_f = heat_data(20, 20)
    model = pigp.SparsePIGP(
        fixed_kernel(), operators.heat(1.0), num_inducing=6, train_inducing=True
    )
    model.fit(X_u, y_u, X_f, y_f, method="collapsed", steps=0)
    objective = model.collapsed_objective()
    Xs, y = model.data.tensors(model.dtype)
    assert objective.variables[-1] is model.inducing
    _, grads = objective.loss_and_gradient(Xs, y)
    Z, h = model.inducing.numpy(), 1e-6
    for i, j in [(0, 0), (3, 1), (5, 0)]:
        losses = []
        for sign in (1, -1):
            shifted = Z.copy()
            shifted[i, j] += sign * h
            model.inducing.assign(shifted)
            losses.append(objective.loss(Xs, y.numpy()))
        model.inducing.assign(Z)
        np.testing.assert_allclose(
            grads[-1].numpy()[i, j], (losses[0] - losses[1]) / (2 * h), rtol=1e-5
        )
    model.fit(X_u, y_u, X_f, y_f, method="collapsed", steps=30, learning_rate=0.01)
    assert not np.allclose(model.inducing.numpy(), Z)


def test_save_and_load_predict_the_same(tmp_path):
    X_u, y_u, X_f, y_f = heat_data(30, 20)
    model = pigp.SparsePIGP(kernels.SquaredExponential(), operators.heat(1.0), num_inducing=8)
    model.fit(X_u, y_u, X_f, y_f, method="collapsed", steps=20)
    model.save(tmp_path / "sparse.npz")
    loaded = pigp.load(tmp_path / "sparse.npz")
    assert isinstance(loaded, pigp.SparsePIGP) and loaded.method == "collapsed"
    X = np.random.default_rng(2).random((10, 2))
    for a, b in zip(model.predict(X, "f"), loaded.predict(X, "f")):
        np.testing.assert_array_equal(a, b)
    assert loaded.parameter_values().keys() == model.parameter_values().keys()


@pytest.mark.parametrize(
    "settings, arguments, message",
    [
        ({"num_inducing": 0}, {}, "num_inducing"),
        ({"num_inducing": 60}, {}, "num_inducing"),
        ({"inducing_points": np.zeros((4, 3))}, {}, "inducing_points"),
        ({}, {"method": "exact"}, "method"),
        ({}, {"batch_size": 0}, "batch_size"),
        ({}, {"natural_step": 1.5}, "natural_step"),
        ({}, {"seed": 0.5}, "seed"),
        ({}, {"warm_start": 0}, "warm_start"),
    ],
)
def test_bad_settings_are_refused_before_anything_changes(settings, arguments, message):
    X_u, y_u, X_f, y_f = heat_data(30, 20)
    with pytest.raises(ValueError, match=message):
        model = pigp.SparsePIGP(kernels.SquaredExponential(), operators.heat(1.0), **settings)
        model.fit(X_u, y_u, X_f, y_f, **arguments)
    if "model" in locals():
        assert model.data is None and model.inducing is None


def test_the_exact_model_refuses_data_beyond_memory_and_names_the_sparse_one(monkeypatch):
    monkeypatch.setattr(pigp.memory, "available_bytes", lambda: 10**8)
    X_u, y_u, X_f, y_f = heat_data(30, 20)
    model = pigp.PIGP(kernels.SquaredExponential(), operators.heat(1.0))
    with pytest.raises(ValueError, match="SparsePIGP"):
        model.fit(X_u, y_u, X_f, y_f)
    assert model.data is None


# ----- tf.distribute: each strategy in processes of its own -----------------------------
def run_worker(tmp_path, mode, steps, env=None, name=None):
    out = tmp_path / f"{name or mode}.json"
    process = subprocess.Popen(
        [sys.executable, WORKER, str(out), mode, str(steps)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, out


def finish(process, timeout=300):
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    assert process.returncode == 0, err.decode()[-3000:]


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_mirrored_strategy_on_two_devices_follows_one_device(tmp_path):
    one, out_one = run_worker(tmp_path, "one", 50)
    finish(one)
    two, out_two = run_worker(tmp_path, "mirrored", 50)
    finish(two)
    a, b = json.loads(out_one.read_text()), json.loads(out_two.read_text())
    assert (a["replicas"], b["replicas"]) == (1, 2)
    np.testing.assert_allclose(b["losses"], a["losses"], rtol=1e-6)
    assert len(a["losses"]) == 50 and a["losses"][-1] < 0.1 * a["losses"][0]


@pytest.mark.slow
def test_multi_worker_mirrored_strategy_follows_one_process(tmp_path):
    one, out_one = run_worker(tmp_path, "one", 20)
    finish(one)
    cluster = [f"127.0.0.1:{port}" for port in free_ports(2)]
    workers = []
    for index in range(2):
        config = {"cluster": {"worker": cluster}, "task": {"type": "worker", "index": index}}
        workers.append(
            run_worker(tmp_path, "multiworker", 20, {"TF_CONFIG": json.dumps(config)}, "mw")[0]
        )
    try:
        for process in workers:
            finish(process)
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
    a, b = json.loads(out_one.read_text()), json.loads((tmp_path / "mw.json").read_text())
    assert b["replicas"] == 2
    np.testing.assert_allclose(b["losses"], a["losses"], rtol=1e-6)


def test_exact_data_are_refused_with_the_way_out():
    model = pigp.SparsePIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), num_inducing=4, noise_u=0
    )
    X = np.random.default_rng(0).uniform(size=(6, 2))
    with pytest.raises(ValueError, match=r"noise: .* \['u'\] have 0 \(exact data\).*e\.g\. 1e-6"):
        model.fit(X, np.sin(X[:, 0]), X, np.cos(X[:, 0]))
    assert model.data is None
