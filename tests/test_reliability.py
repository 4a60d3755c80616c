"""Numerical faults, interrupted training, determinism and extreme but valid data."""

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import tensorflow as tf

import pigp
from pigp import CholeskyError
from pigp.experiments import heat_design, heat_solution, relative_l2
from pigp.linalg import jittered_cholesky


def heat_data(n_f=12, seed=0):
    X_u, X_f = heat_design(seed, n_f)
    return X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1]


# ----- Cholesky retries -----------------------------------------------------------------
def test_cholesky_retries_with_growing_jitter_and_warns_once():
    v = np.array([1.0, 2.0, 3.0])
    K = np.outer(v, v)  # rank one: not positive definite
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chol, jitter = jittered_cholesky(K)
    assert jitter > 0
    np.testing.assert_allclose(
        chol @ chol.T, K + jitter * np.mean(np.diag(K)) * np.eye(3), rtol=1e-12
    )
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and f"{jitter:.1e}" in messages[0]


def test_cholesky_failure_names_the_block_and_the_fix():
    K = np.zeros((4, 4))
    K[:2, :2] = np.eye(2)
    K[2:, 2:] = [[100.0, 250.0], [250.0, 100.0]]  # indefinite beyond any jitter cap
    with pytest.raises(CholeskyError, match=r"largest: f\).*noise collapsed.*duplicate") as info:
        jittered_cholesky(K, [2, 2], ["u", "f"])
    assert isinstance(info.value, ValueError)
    with pytest.raises(CholeskyError, match="non-finite"):
        jittered_cholesky(np.array([[1.0, np.nan], [np.nan, 1.0]]))


def test_duplicate_points_with_fixed_tiny_noise_still_predict():
    X_u, y_u, X_f, y_f = heat_data()
    X_u, y_u = np.concatenate([X_u, X_u]), np.concatenate([y_u, y_u])
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.operators.heat(1.0),
        noise_u=pigp.Parameter(1e-300, trainable=False),
        noise_f=pigp.Parameter(1e-300, trainable=False),
        jitter=0.0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X_u, y_u, X_f, y_f, steps=0, optimizer="adam")
        mean, var = model.predict(X_f)
    assert any("jitter" in str(w.message) for w in caught)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))
    assert relative_l2(mean, heat_solution(X_f)[0]) < 1e-2


# ----- non-finite steps and interruption -----------------------------------------------------
def _cliff_kernel(x1, x2, variance, scale):
    """A squared exponential whose value is NaN once ``scale`` passes 0.6."""
    k = variance * tf.exp(-0.5 * tf.reduce_sum(tf.square((x1 - x2) / scale), axis=-1))
    return tf.where(scale > 0.6, tf.constant(np.nan, k.dtype), k)


@pytest.mark.parametrize("n_f", [12, 600])  # TensorFlow's Cholesky and LAPACK paths
def test_non_finite_steps_are_rejected_and_never_reach_the_parameters(n_f):
    X_u, y_u, X_f, y_f = heat_data(n_f)
    kernel = pigp.kernels.Custom(_cliff_kernel, {"variance": 1.0, "scale": 0.55}, stationary=True)
    model = pigp.PIGP(kernel, pigp.operators.heat(1.0))
    steps = 250 if n_f < 500 else 20
    with pytest.warns(RuntimeWarning, match="non-finite"):
        model.fit(X_u, y_u, X_f, y_f, steps=steps, learning_rate=0.5, optimizer="adam")
    assert model.rejected_steps
    assert all(not np.isfinite(model.history[i]) for i in model.rejected_steps)
    assert kernel.parameters["scale"].numpy() <= 0.6
    assert np.isfinite(model.log_marginal_likelihood())
    # The kept parameters are at least as good as the best seen.
    best = min(h for h in model.history if np.isfinite(h))
    assert -model.log_marginal_likelihood() <= best + 1e-9 * abs(best)
    mean, var = model.predict(X_f)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))


def test_interrupted_fit_keeps_the_best_parameters():
    X_u, y_u, X_f, y_f = heat_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))

    def interrupt(step, loss, model):
        if step >= 500:
            raise KeyboardInterrupt

    with pytest.warns(RuntimeWarning, match="interrupted after 500 steps"):
        with pytest.raises(KeyboardInterrupt):
            model.fit(X_u, y_u, X_f, y_f, steps=2000, callback=interrupt)
    assert len(model.history) == 500
    best = min(model.history)
    assert -model.log_marginal_likelihood() <= best + 1e-9 * abs(best)
    mean, _ = model.predict(X_f)
    assert relative_l2(mean, y_f / (np.pi**2 - 1)) < 1e-2


def test_callback_can_stop_early():
    X_u, y_u, X_f, y_f = heat_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    seen = []
    model.fit(
        X_u,
        y_u,
        X_f,
        y_f,
        steps=2000,
        optimizer="adam",
        callback=lambda step, loss, m: seen.append(step) or step >= 500,
    )
    assert seen == [250, 500] and len(model.history) == 500


def test_covariance_checks_its_inputs():
    X_u, y_u, X_f, y_f = heat_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(X_u, y_u, X_f, y_f, steps=0, optimizer="adam")
    with pytest.raises(ValueError, match=r"X1: expected 2 columns"):
        model.covariance(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"X2: expected 2 columns"):
        model.covariance(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="X1: expected finite"):
        model.covariance([[0.0, np.inf]])
    with pytest.raises(ValueError, match="left: |output: expected one of"):
        model.covariance(np.zeros((3, 2)), left="g")


# ----- determinism ----------------------------------------------------------------------
_RUN = textwrap.dedent("""
    import json, numpy as np, pigp
    from pigp.experiments import heat_design, heat_solution
    X_u, X_f = heat_design(0, 12)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1], steps=300)
    mean, var = model.predict(np.linspace(0, 1, 40).reshape(20, 2))
    values = np.concatenate([np.ravel(v) for v in model.parameter_values().values()])
    print(json.dumps([float(x).hex() for x in np.concatenate([values, mean, var])]))
""")


@pytest.mark.slow
def test_bit_identical_across_processes():
    outputs = [
        subprocess.run([sys.executable, "-c", _RUN], capture_output=True, text=True, check=True)
        .stdout.strip()
        .splitlines()[-1]
        for _ in range(2)
    ]
    assert json.loads(outputs[0]) == json.loads(outputs[1])


# ----- extreme but valid data -----------------------------------------------------------------
def _scaled_heat(scale_x, scale_y):
    """The heat data with inputs scaled by ``scale_x`` and targets by ``scale_y``:
    ``u'(x', t') = scale_y u(x'/s, t'/s)`` solves ``u'_t' - u'_x'x' = f'`` with
    ``f' = scale_y (u_t / s - u_xx / s^2)``."""
    X_u, X_f = heat_design(0, 30)
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # noqa: E731
    f = lambda X: scale_y * u(X) * (-1.0 / scale_x + np.pi**2 / scale_x**2)  # noqa: E731
    X = np.random.default_rng(1).uniform(size=(200, 2))
    return (scale_x * X_u, scale_y * u(X_u), scale_x * X_f, f(X_f)), scale_x * X, scale_y * u(X)


# Each case: what is tried, and the relative L2 error of u the default fit must reach.
EXTREME = {
    "inputs in [0, 1e-3]": ((1e-3, 1.0), 1e-2),
    "inputs in [0, 1e4]": ((1e4, 1.0), 1e-2),
    "targets of size 1e-8": ((1.0, 1e-8), 1e-3),
    "targets of size 1e8": ((1.0, 1e8), 1e-3),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(EXTREME))
def test_extreme_scales(case):
    (scale_x, scale_y), tolerance = EXTREME[case]
    data, X, truth = _scaled_heat(scale_x, scale_y)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(*data)
    mean, var = model.predict(X)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))
    assert relative_l2(mean, truth) < tolerance


def test_one_u_point_and_no_f_points():
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit([[0.5, 0.0]], [1.0])
    mean, var = model.predict([[0.5, 0.0], [0.9, 0.9]])
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))
    assert mean[0] == pytest.approx(1.0, abs=1e-2)
    assert var[1] > var[0]


@pytest.mark.slow
def test_five_thousand_points():
    rng = np.random.default_rng(5)
    X_u, X_f = rng.uniform(size=(2500, 2)), rng.uniform(size=(2500, 2))
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1], steps=3, optimizer="adam")
    X = rng.uniform(size=(500, 2))
    mean, var = model.predict(X)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))
    assert relative_l2(mean, heat_solution(X)[0]) < 1e-2


def test_warns_when_the_data_are_explained_as_noise():
    """A heat problem starting from sin(pi x), whose e^(-pi^2 t) transient a single SE
    kernel cannot follow beside a slow forced response: ML-II calls the u data noise."""
    X_u, X_f = heat_design(0, 30)
    y_u = np.where(X_u[:, 1] == 0, np.sin(np.pi * X_u[:, 0]), 0.0)
    y_f = np.exp(-np.square(X_f[:, 0] - 0.4) / 0.1) * (1 + np.sin(4 * X_f[:, 1]))
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    with pytest.warns(RuntimeWarning, match="'u' data is .* explaining those data as noise"):
        model.fit(X_u, y_u, X_f, y_f)
    assert model.parameter_values()["noise_u"] > 0.1 * np.mean(np.square(y_u / model.y_scale))


def test_no_noise_warning_on_a_well_fitted_problem():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0)).fit(*heat_data())
    assert not [w for w in caught if "as noise" in str(w.message)]


# ----- faults a hostile but legitimate user meets (docs/reliability.md's fault table) --------
def test_targets_near_the_float64_limit_are_standardised_without_overflow():
    """Data times 1e100 give the predictions of the data times 1e100; at 1e200 the mean
    still does, and the variance, not representable, is inf with a warning."""
    X_u, y_u, X_f, y_f = heat_data()
    X = np.random.default_rng(2).uniform(size=(50, 2))

    def fitted(scale):
        model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
        return model.fit(X_u, scale * y_u, X_f, scale * y_f, steps=200, optimizer="adam")

    reference = fitted(1.0)
    mean_ref, var_ref = reference.predict(X)
    mean, var = fitted(1e100).predict(X)
    np.testing.assert_allclose(mean, 1e100 * mean_ref, rtol=1e-6, atol=1e-6 * 1e100)
    np.testing.assert_allclose(var, 1e200 * var_ref, rtol=1e-4, atol=1e-8 * 1e200)
    model = fitted(1e200)
    assert model.y_scale == pytest.approx(1e200 * reference.y_scale, rel=1e-12)
    with pytest.warns(RuntimeWarning, match="variance .* beyond float64"):
        mean, var = model.predict(X)
    np.testing.assert_allclose(mean, 1e200 * mean_ref, rtol=1e-6, atol=1e-6 * 1e200)
    assert np.all(np.isinf(var)) and not np.any(np.isnan(var))


def test_all_zero_targets_are_refused():
    X_u, _, X_f, _ = heat_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    with pytest.raises(ValueError, match="every target is 0.*cannot learn"):
        model.fit(X_u, np.zeros(len(X_u)), X_f, np.zeros(len(X_f)))
    assert model.data is None


def test_constant_targets_are_warned():
    X_u, _, X_f, _ = heat_data()
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    with pytest.warns(RuntimeWarning, match="all equal"):
        model.fit(X_u, np.full(len(X_u), 2.0), steps=0)


def test_a_posterior_variance_collapsed_far_from_the_data_is_warned():
    X_u, y_u, X_f, y_f = heat_data()
    kernel = pigp.kernels.SquaredExponential(pigp.Parameter(1e-20, trainable=False), [0.1, 0.1])
    model = pigp.PIGP(kernel, pigp.operators.heat(1.0)).fit(X_u, y_u, X_f, y_f, steps=0)
    with pytest.warns(RuntimeWarning, match="posterior variance .* collapsed"):
        model.predict([[5.0, 5.0]])
    healthy = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.0, [0.1, 0.1]), pigp.operators.heat(1.0)
    ).fit(X_u, y_u, X_f, y_f, steps=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        healthy.predict([[5.0, 5.0]])


_MEMORY = textwrap.dedent("""
    import resource, numpy as np, pigp
    # Under a limit: were the refusal to fail, the child would fail to allocate, not
    # drive the machine out of memory.
    with open("/proc/self/status") as handle:
        size = [int(l.split()[1]) * 1024 for l in handle if l.startswith("VmSize")][0]
    resource.setrlimit(resource.RLIMIT_AS, (size + 4 * 2 ** 30, size + 4 * 2 ** 30))
    rng = np.random.default_rng(0)
    # Past what this machine's available memory holds, by 2000 values.
    half = pigp.memory.largest_n(pigp.memory.available_bytes()) // 2 + 1000
    print("values", 2 * half)
    X = rng.uniform(size=(half, 2))
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    before = pigp.memory.peak_bytes()
    try:
        model.fit(X, np.sin(X[:, 0]), X, np.cos(X[:, 1]))
    except ValueError as error:
        print("refused:", error)
    print("grew_kib", (pigp.memory.peak_bytes() - before) // 1024)
""")


@pytest.mark.slow
def test_a_problem_too_large_for_memory_is_refused_before_allocating():
    """Half u and half f points, 2000 values more than ``largest_n`` of the memory
    available (on a 24 GB machine some 16,000: K alone 2 GB)."""
    output = subprocess.run(
        [sys.executable, "-c", _MEMORY], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    values = int(output.split("values")[1].split()[0])
    assert f"refused: fit: {values} data values need about" in output
    assert "SparsePIGP" in output or "at most" in output
    grew = int(output.split("grew_kib")[1])
    assert grew < 200 * 1024  # nothing of N^2 size was allocated (2 GB each)


def test_memory_estimate_refuses_and_warns_by_what_is_available(monkeypatch):
    from pigp import memory

    X_u, y_u, X_f, y_f = heat_data()
    n = len(X_u) + len(X_f)
    need = memory.fit_bytes(n)
    monkeypatch.setattr(memory, "available_bytes", lambda: need // 2)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    with pytest.raises(ValueError, match=f"fit: {n} data values need about .* at most"):
        model.fit(X_u, y_u, X_f, y_f)
    assert model.data is None
    monkeypatch.setattr(memory, "available_bytes", lambda: int(need * 1.5))
    with pytest.warns(RuntimeWarning, match="of the memory available"):
        model.fit(X_u, y_u, X_f, y_f, steps=0)


def test_a_float32_model_is_checked_with_the_float32_estimate(monkeypatch):
    """float32 holds K and its companions at half the size (measured 39-45 bytes per
    entry at 4,000-10,000 values against 89-91 in float64): at memory for 12,000 float32
    values but not float64 ones, the float32 model passes the check and the float64 one
    is refused, with the largest N of its own dtype."""
    from pigp import memory

    n = 12_000
    assert memory.fit_bytes(n, dtype="float32") < 0.55 * memory.fit_bytes(n)
    have = memory.fit_bytes(n, dtype="float32") * 3 // 2
    monkeypatch.setattr(memory, "available_bytes", lambda: have)
    with pytest.warns(RuntimeWarning, match="of the memory available"):
        memory.check_fit(n, dtype="float32")
    with pytest.raises(ValueError, match=f"at most {memory.largest_n(have)} values fit"):
        memory.check_fit(n)
    assert memory.largest_n(have, "float32") > n > memory.largest_n(have)


def test_a_nonlinear_model_refused_for_memory_is_not_sent_to_sparse_pigp(monkeypatch):
    """SparsePIGP refuses nonlinear equations, so the dense engine's refusal points to
    the sparse collocation engine, which solves them (``engine="auto"``, the default,
    runs it: ``tests/test_sparse_nonlinear.py``)."""
    from pigp import memory
    from pigp.experiments.nonlinear import elliptic_equation

    rng = np.random.default_rng(0)
    X_b, X_i = rng.uniform(size=(40, 2)), rng.uniform(size=(60, 2))
    monkeypatch.setattr(memory, "available_bytes", lambda: memory.fit_bytes(100) // 2)
    model = pigp.PIGP(pigp.kernels.Matern72(), elliptic_equation(), engine="dense")
    with pytest.raises(ValueError, match="engine='cholesky'") as refused:
        model.fit(X_b, np.sin(X_b[:, 0]), X_i, np.ones(60))
    assert "SparsePIGP" not in str(refused.value)
    assert model.data is None


_INTERRUPT = textwrap.dedent("""
    import signal, sys, time, numpy as np, pigp
    # A shell's background job starts with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: install it, so the test does not depend on its launcher.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from pigp.experiments import heat_design, heat_solution
    optimizer, n_f = sys.argv[1], int(sys.argv[2])
    X_u, X_f = heat_design(0, n_f)
    # 5% noise: L-BFGS-B then takes some 40 iterations where on exact data it converged
    # in 7; at N = 620 those 40 took 2.7 s on a quiet machine, shorter than the wait
    # before the signal, so the L-BFGS case fits 1020 values.
    rng = np.random.default_rng(0)
    y_u, y_f = heat_solution(X_u)[0], heat_solution(X_f)[1]
    data = (X_u, y_u * (1 + 0.05 * rng.standard_normal(len(y_u))),
            X_f, y_f * (1 + 0.05 * rng.standard_normal(len(y_f))))
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(*data, steps=2, optimizer=optimizer)            # compile
    print("ready", flush=True)
    try:
        model.fit(*data, steps=10 ** 6 if optimizer == "adam" else 15000, optimizer=optimizer,
                  learning_rate=1e-4)
    except KeyboardInterrupt:
        losses = model.history + model.lbfgs_evaluations
        best = min((h for h in losses if np.isfinite(h)), default=np.inf)
        print("caught", time.perf_counter(), len(losses),
              -model.log_marginal_likelihood() <= best + 1e-9 * abs(best), flush=True)
        model.predict(X_f)
        raise
""")


@pytest.mark.slow
@pytest.mark.parametrize("optimizer,n_f", [("adam", 30), ("adam", 470), ("lbfgs", 1000)])
def test_ctrl_c_keeps_the_best_parameters_and_says_so_in_one_line(optimizer, n_f):
    """A real SIGINT to a child process fitting with Adam (compiled chunks, small and
    near the LAPACK threshold) or L-BFGS (LAPACK path)."""
    import signal
    import time

    child = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPT, optimizer, str(n_f)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        # Long enough for some steps on a loaded machine (the other test worker may be
        # building the docs); the timeout only bounds a hung child: after the signal the
        # child still computes the posterior and compiles predict's program.
        time.sleep(1.5 if optimizer == "adam" else 3.0)
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=300)
    finally:
        child.kill()
    caught = stdout.split()
    assert caught and caught[0] == "caught", stderr[-2000:]
    assert caught[0] == "caught" and int(caught[2]) > 0 and caught[3] == "True"
    print(f"{optimizer}, N = {20 + n_f}: landed {float(caught[1]) - sent:.3f} s after SIGINT")
    assert child.returncode != 0
    lines = [line for line in stderr.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and "kept the best parameters" in lines[0]
    traceback = stderr[stderr.index("Traceback") :]
    assert "tensorflow" not in traceback and "scipy" not in traceback
    assert traceback.strip().endswith("KeyboardInterrupt")


def test_the_memory_estimate_counts_fields_past_the_first():
    """One field: 100 bytes per entry of K and 200 MiB of programs, within 2x of each
    growth ``benchmarks/memory.py`` measured (0.17 to 3.19 GB at N = 500 to 6000; 0.16
    to 2.40 GB on an earlier install); each further field adds FIELD_OVERHEAD
    (two-field elasticity grew 0.59 to 0.75 GB at 240 to 960 values, fit and Laplace;
    0.49 to 0.83 GB in a run before: both runs here)."""
    from pigp import memory

    assert memory.fit_bytes(1000) == 100 * 1000**2 + 200 * 2**20
    assert memory.fit_bytes(1000, 2) - memory.fit_bytes(1000) == memory.FIELD_OVERHEAD
    assert memory.fit_bytes(1000, 3) - memory.fit_bytes(1000, 2) == memory.FIELD_OVERHEAD
    one = (
        *((500, 0.170e9), (1000, 0.248e9), (2000, 0.564e9), (4000, 1.451e9), (6000, 3.190e9)),
        *((500, 0.164e9), (1000, 0.232e9), (2000, 0.491e9), (4000, 1.153e9), (6000, 2.403e9)),
    )
    for n, grew in one:  # measured: benchmarks/results/memory.json, then the run before
        assert 1.0 <= memory.fit_bytes(n) / grew <= 2.0
    for n, grew in (
        (240, 0.590e9),  # memory_fields.json
        (480, 0.754e9),
        (960, 0.571e9),
        (240, 0.625e9),  # the run before
        (480, 0.829e9),
        (960, 0.491e9),
    ):
        assert 0.5 <= memory.fit_bytes(n, 2) / grew <= 2.0
    assert memory.largest_n(memory.fit_bytes(3000)) == 3000


_FIELDS_MEMORY = textwrap.dedent("""
    import sys, warnings, numpy as np, pigp
    sys.path.insert(0, sys.argv[1])
    from elasticity import model_and_data
    model, observations = model_and_data(0, 40, 80)  # 240 values, two fields
    base = pigp.memory.peak_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(observations=observations)
        model.parameter_uncertainty()
    grew = pigp.memory.peak_bytes() - base
    print("ratio", pigp.memory.fit_bytes(sum(model.data.sizes), 2) / grew)
""")


_PEAK_CHILD = textwrap.dedent("""
    import numpy as np
    from pigp.memory import peak_bytes
    before = peak_bytes()
    block = np.ones(100 * 2 ** 20 // 8)  # 100 MiB, touched
    print(before, peak_bytes() - before)
""")

_PEAK_PARENT = textwrap.dedent("""
    import subprocess, sys
    import numpy as np
    block = np.ones(500 * 2 ** 20 // 8)  # the launching process's peak: 500 MiB and more
    done = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True,
                          text=True, check=True, timeout=120)
    print(done.stdout)
""")


def test_the_peak_memory_is_the_process_own_not_its_launchers():
    """A process started by one that had touched 500 MiB: its peak (``peak_bytes``)
    starts at its own size and grows by the 100 MiB it touches (``ru_maxrss`` there
    starts at the launcher's peak and does not grow)."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_PARENT, _PEAK_CHILD],
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    before, grew = (int(v) for v in done.stdout.split())
    assert before < 300 * 2**20, before  # NumPy and pigp.memory: tens of MiB
    assert 0.95 * 100 * 2**20 <= grew <= 1.3 * 100 * 2**20, grew


@pytest.mark.slow
def test_the_two_field_memory_estimate_is_within_2x_of_a_fresh_process():
    """A fresh process's peak growth over a two-field fit of 240 values and its Laplace
    (``benchmarks/memory.py --fields 2``'s smallest row) against ``fit_bytes(n, 2)``."""
    from pathlib import Path

    benchmarks = str(Path(__file__).resolve().parents[1] / "benchmarks")
    done = subprocess.run(
        [sys.executable, "-c", _FIELDS_MEMORY, benchmarks],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if "are available: at most" in done.stderr:
        # check_fit refused: another process holds this machine's memory now
        pytest.skip(done.stderr.strip().splitlines()[-1])
    assert done.returncode == 0, done.stderr[-3000:]
    ratio = float(done.stdout.split("ratio")[1])
    assert 0.5 <= ratio <= 2.0, ratio
