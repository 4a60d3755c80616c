"""Where the time goes: Gram assembly, a training step, and the floors beside them.

For N = N_u + N_f points (half u, half f) of the heat problem, per dtype, in one run:

  assembly       the compiled (XLA) tape-derived joint covariance K
  closed_form    the same matrix from hand-derived SE heat blocks (NumPy, in this file only)
  step           one Adam step as ``fit`` takes it: loss and gradient by the identity
                 0.5 tr((K^-1 - a a') dK), and the update (TF Cholesky in a compiled
                 loop of 250 steps below N = 500, LAPACK per step from N = 500)
  lapack_floor   SciPy cho_factor + LAPACK potri of an N x N SPD matrix
  tf_floor       TF Cholesky, solve, log-det and their autodiff gradient, fixed matrix
  predict_1e4    posterior mean and variance of u at 10^4 points
  gpflow_step    GPflow's GPR (plain RBF kernel, no physics), loss and gradient
                 under tf.function, at the same N (when GPflow is installed)
  peak_rss_mib   the peak resident memory of the fresh process that measured this row
                 alone (each row runs in its own process); base_rss_mib is that
                 process's memory after importing TensorFlow and pigp

then: a cold start (a fresh process: import, a new model's first fit and its second
fit on the README's quick-start problem, and a second new model of the same
structure; then the same in two more processes that share a
``pigp.compilation_cache`` folder, the second one measured: the programs loaded from
disk instead of compiled), the kernels on Raissi's inverse problem (a fresh process: for seeds 0
and 1 of ``raissi_inverse.py``'s designs, a fit with the squared exponential, one
with a one-component spectral mixture and one with ``kernel="auto"``; seed 0's
fits compile their programs, seed 1's reuse them), Adam steps per second on the
seed's 50-point problem, prediction at 10^4, 10^5 and 10^6 points, and the time to reach
relative L2 <= 1e-3 on the core heat example with Adam alone and with the default
(Adam then L-BFGS).

    python benchmarks/performance.py --out results/performance.json
"""

import time

_STARTED = time.perf_counter()  # noqa: E402  (the cold start's import time counts from here)

import argparse
import json
import subprocess
import sys
import tempfile

import numpy as np
import scipy.linalg
import tensorflow as tf
from common import best_of, write_json

import pigp
import pigp.fitting.training
import pigp.plotting
from pigp import experiments


def peak_rss_mib() -> float:
    return pigp.memory.peak_bytes() / 2**20


def closed_form_joint(X_u, X_f, variance, lx, lt, alpha):
    """The heat SE blocks derived by hand (L = d/dt - alpha d2/dx2)."""

    def parts(A, B):
        rx = A[:, None, 0] - B[None, :, 0]
        rt = A[:, None, 1] - B[None, :, 1]
        return rx, rt, variance * np.exp(-(rx**2) / (2 * lx**2) - rt**2 / (2 * lt**2))

    _, _, Kuu = parts(X_u, X_u)
    rx, rt, k = parts(X_u, X_f)
    Kuf = k * (rt / lt**2) - alpha * k * (rx**2 / lx**4 - 1 / lx**2)
    rx, rt, k = parts(X_f, X_f)
    Kff = k * (1 / lt**2 - rt**2 / lt**4) + alpha**2 * k * (
        rx**4 / lx**8 - 6 * rx**2 / lx**6 + 3 / lx**4
    )
    return np.block([[Kuu, Kuf], [Kuf.T, Kff]])


def gpflow_step_seconds(X, y, dtype):
    """One GPflow GPR loss-and-gradient step (RBF kernel), compiled with tf.function."""
    try:
        import gpflow
    except ImportError:
        return None
    gpflow.config.set_default_float(dtype)
    model = gpflow.models.GPR(
        (X.astype(dtype), y[:, None].astype(dtype)),
        kernel=gpflow.kernels.SquaredExponential(lengthscales=[0.3, 0.5]),
        noise_variance=1e-2,
    )
    variables = model.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = model.training_loss()
        return loss, tape.gradient(loss, variables)

    run = lambda: [t.numpy() for t in tf.nest.flatten(step())]  # noqa: E731
    run()
    return best_of(run)


def measure(n: int, dtype: str, rng) -> dict:
    base = peak_rss_mib()
    X_u, X_f = rng.uniform(size=(n // 2, 2)), rng.uniform(size=(n - n // 2, 2))
    y_u, y_f = np.sin(3 * X_u[:, 0]), np.cos(2 * X_f[:, 1])
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.0, [0.3, 0.5]),
        pigp.operators.heat(1.0),
        noise_u=1e-2,
        noise_f=1e-2,
        dtype=dtype,
    )
    model.fit(X_u, y_u, X_f, y_f, steps=0, optimizer="adam")
    objective = model.objective()
    Xs, _ = model.data.tensors(model.dtype)
    y_standard = model.data.tensors(model.dtype)[1]

    # A step as fit takes it (loss, gradient, Adam update), timed over a whole
    # compiled call of Adam steps where fit runs many per call (N < 500).
    adam = pigp.fitting.training.Adam(1e-9)
    state = adam.init(objective.variables)
    k = 250 if n < 500 else 1
    step = lambda: list(pigp.fitting.training.adam_steps(objective, Xs, y_standard, k, adam, state))  # noqa: E731
    step()
    K = objective.gram(Xs)
    Kt = tf.constant(K)
    y = tf.constant(np.r_[y_u, y_f][:, None], K.dtype)

    def tf_floor():
        with tf.GradientTape() as tape:
            tape.watch(Kt)
            chol = tf.linalg.cholesky(Kt)
            a = tf.linalg.cholesky_solve(chol, y)
            loss = 0.5 * tf.reduce_sum(y * a) + tf.reduce_sum(
                tf.math.log(tf.linalg.diag_part(chol))
            )
        return tape.gradient(loss, Kt).numpy()

    potri = scipy.linalg.lapack.get_lapack_funcs("potri", (K,))

    def lapack_floor():
        c, lower = scipy.linalg.cho_factor(K, lower=True, check_finite=False)
        potri(c, lower=1)

    X_test = rng.uniform(size=(10_000, 2))
    model.predict(X_test)
    row = {
        "N": n,
        "dtype": dtype,
        "assembly_s": best_of(lambda: objective.gram(Xs)),
        "closed_form_s": best_of(
            lambda: closed_form_joint(X_u.astype(dtype), X_f.astype(dtype), 1.0, 0.3, 0.5, 1.0)
        ),
        "step_s": best_of(step) / k,
        "lapack_floor_s": best_of(lapack_floor),
        "tf_floor_s": best_of(tf_floor),
        "predict_1e4_s": best_of(lambda: model.predict(X_test), repeats=2),
        "gpflow_step_s": gpflow_step_seconds(np.r_[X_u, X_f], np.r_[y_u, y_f], dtype),
    }
    row["peak_rss_mib"] = peak_rss_mib()
    row["base_rss_mib"] = base
    row["step_over_lapack"] = row["step_s"] / row["lapack_floor_s"]
    row["assembly_over_closed_form"] = row["assembly_s"] / row["closed_form_s"]
    row["step_over_gpflow"] = row["step_s"] / row["gpflow_step_s"] if row["gpflow_step_s"] else None
    return row


def seed_steps_per_second() -> float:
    g20, g30 = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
    X_u, X_f = np.stack([g20, g20], 1), np.stack([g30, g30], 1)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), noise_u=1e-3, noise_f=1e-3
    )
    data = (X_u, np.sin(X_u[:, 0]), X_f, np.cos(X_f[:, 0]))
    model.fit(*data, steps=250, optimizer="adam")
    start = time.perf_counter()
    model.fit(*data, steps=2000, optimizer="adam")
    return 2000 / (time.perf_counter() - start)


def prediction_scaling(counts) -> list:
    """Predict mean and variance at 10^4 .. 10^6 points from a 500-point model."""
    rng = np.random.default_rng(1)
    X_u, X_f = rng.uniform(size=(250, 2)), rng.uniform(size=(250, 2))
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(1.0, [0.3, 0.5]),
        pigp.operators.heat(1.0),
        noise_u=1e-3,
        noise_f=1e-3,
    )
    model.fit(X_u, np.sin(3 * X_u[:, 0]), X_f, np.cos(2 * X_f[:, 1]), steps=0, optimizer="adam")
    model.predict(X_u)
    rows = []
    for count in counts:
        side = int(round(np.sqrt(count)))
        X, _ = pigp.plotting.grid(side)
        start = time.perf_counter()
        mean, var = model.predict(X)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "points": len(X),
                "seconds": seconds,
                "microseconds_per_point": 1e6 * seconds / len(X),
                "finite": bool(np.all(np.isfinite(mean)) and np.all(np.isfinite(var))),
                "peak_rss_mib": peak_rss_mib(),
            }
        )
    return rows


def time_to_accuracy(target=1e-3, max_adam_steps=20_000) -> dict:
    """Seconds until the core heat example's u reaches relative L2 <= target."""
    X, _ = pigp.plotting.grid(50)
    u_true, _ = experiments.heat_solution(X)
    X_u, X_f = experiments.heat_design(0)
    data = (X_u, experiments.heat_solution(X_u)[0], X_f, experiments.heat_solution(X_f)[1])
    new = lambda: pigp.PIGP(
        pigp.kernels.SquaredExponential(),  # noqa: E731
        pigp.operators.heat(diffusivity=1.0),
        noise_u=1e-3,
        noise_f=1e-3,
    )
    new().fit(*data, steps=250, optimizer="adam")  # compile once

    model = new()
    start = time.perf_counter()
    model.fit(*data)
    default = {
        "seconds": time.perf_counter() - start,
        "relative_l2": experiments.relative_l2(model.predict(X)[0], u_true),
        "steps": len(model.history),
    }

    model, clock = new(), {"fit": 0.0, "reached": None, "error": None, "steps": 0}
    start = [time.perf_counter()]

    def callback(step, loss, model):
        clock["fit"] += time.perf_counter() - start[0]  # prediction time excluded
        error = experiments.relative_l2(model.predict(X)[0], u_true)
        clock.update(error=error, steps=step)
        if error <= target and clock["reached"] is None:
            clock["reached"] = clock["fit"]
            return True
        start[0] = time.perf_counter()

    model.fit(*data, steps=max_adam_steps, optimizer="adam", callback=callback)
    adam = {
        "seconds": clock["reached"],
        "relative_l2": clock["error"],
        "steps": clock["steps"],
        "seconds_spent": clock["fit"],
    }
    return {"target": target, "default": default, "adam": adam}


def in_fresh_process(*args) -> dict:
    """Run this script with ``args`` in a new Python process; its JSON answer."""
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True, timeout=3600
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def cold_start(cache: str | None = None) -> dict:
    """In this (fresh) process: import (TensorFlow, pigp, SciPy: from the script's first
    line), then the README quick start's first fit of a new model, the same model's
    second fit, and a second new model's first fit; with ``cache``, compiled programs
    are kept in (and loaded from) that folder."""
    imported = time.perf_counter() - _STARTED
    if cache:
        pigp.compilation_cache(cache)
    X_u = np.array(
        [[x, 0.0] for x in np.linspace(0, 1, 8)]
        + [[b, t] for b in (0.0, 1.0) for t in np.linspace(0, 1, 7)[1:]]
    )
    X_f = np.random.default_rng(0).uniform(size=(30, 2))
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # noqa: E731
    data = (X_u, u(X_u), X_f, (np.pi**2 - 1) * u(X_f))
    X, _ = pigp.plotting.grid(50)
    new = lambda: pigp.PIGP(
        pigp.kernels.SquaredExponential(),  # noqa: E731
        pigp.operators.heat(diffusivity=1.0),
        noise_u=1e-6,
        noise_f=1e-6,
    )
    times = {}
    model = new()
    for name, target in (
        ("first_fit_s", model),
        ("second_fit_s", model),
        ("new_model_fit_s", new()),
    ):
        start = time.perf_counter()
        target.fit(*data)
        times[name] = time.perf_counter() - start
    error = float(np.linalg.norm(model.predict(X)[0] - u(X)) / np.linalg.norm(u(X)))
    return {
        "import_s": imported,
        **times,
        "relative_l2": error,
        "first_over_second": times["first_fit_s"] / times["second_fit_s"],
    }


def raissi_kernels() -> list:
    """In this (fresh) process: fit times and errors of the kernels on Raissi's problem."""
    import raissi_inverse

    X, _ = pigp.plotting.grid(50)
    u = raissi_inverse.solution(X)[0]
    kernels = {**raissi_inverse.KERNELS, "auto": lambda: "auto"}
    rows = []
    for seed in (0, 1):
        X_u, X_f = raissi_inverse.design(seed)
        for name, make in kernels.items():
            alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
            model = pigp.PIGP(
                make(), pigp.operators.heat(diffusivity=alpha), noise_u=1e-3, noise_f=1e-3
            )
            start = time.perf_counter()
            model.fit(X_u, raissi_inverse.solution(X_u)[0], X_f, raissi_inverse.solution(X_f)[1])
            seconds = time.perf_counter() - start
            error = float(np.linalg.norm(model.predict(X)[0] - u) / np.linalg.norm(u))
            rows.append(
                {
                    "seed": seed,
                    "kernel": name,
                    "chosen": type(model.kernel).__name__,
                    "fit_s": seconds,
                    "iterations": len(model.history),
                    "relative_l2": error,
                    "alpha_error": abs(float(alpha.numpy()) - 1.0),
                    "log_marginal_likelihood": model.log_marginal_likelihood(),
                }
            )
    return rows


def _cell(value, width, digits=3):
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}g}"


def print_table(rows):
    """Two tables: the step against its floors and GPflow, then the parts."""

    def ms(value):
        return None if value is None else 1e3 * value

    print(
        f"{'dtype':>7} {'N':>5} {'step ms':>9} {'LAPACK ms':>9} {'step/LAPACK':>11} "
        f"{'GPflow ms':>9} {'step/GPflow':>11} {'peak MiB':>9}"
    )
    for r in rows:
        print(
            f"{r['dtype']:>7} {r['N']:>5} {_cell(ms(r['step_s']), 9)} "
            f"{_cell(ms(r['lapack_floor_s']), 9)} {_cell(r['step_over_lapack'], 11)} "
            f"{_cell(ms(r['gpflow_step_s']), 9)} {_cell(r['step_over_gpflow'], 11)} "
            f"{r['peak_rss_mib']:>9.0f}"
        )
    print(
        f"\n{'dtype':>7} {'N':>5} {'assembly ms':>11} {'closed ms':>9} {'asm/closed':>10} "
        f"{'TF floor ms':>11} {'predict 1e4 ms':>14}"
    )
    for r in rows:
        print(
            f"{r['dtype']:>7} {r['N']:>5} {_cell(ms(r['assembly_s']), 11)} "
            f"{_cell(ms(r['closed_form_s']), 9)} {_cell(r['assembly_over_closed_form'], 10)} "
            f"{_cell(ms(r['tf_floor_s']), 11)} {_cell(ms(r['predict_1e4_s']), 14)}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500, 1000, 2000, 4000])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--predict", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--skip-accuracy", action="store_true", help="skip the time-to-accuracy comparison"
    )
    parser.add_argument("--row", nargs=2, metavar=("N", "DTYPE"), help=argparse.SUPPRESS)
    parser.add_argument("--cold-start", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compilation-cache", help=argparse.SUPPRESS)
    parser.add_argument("--raissi-kernels", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="results/performance.json")
    args = parser.parse_args()
    if args.row:  # one row, in a process of its own
        n = int(args.row[0])
        print(json.dumps(measure(n, args.row[1], np.random.default_rng(n))))
        return
    if args.cold_start:
        print(json.dumps(cold_start(args.compilation_cache)))
        return
    if args.raissi_kernels:
        print(json.dumps(raissi_kernels()))
        return
    rows = []
    for dtype in args.dtypes:
        for n in sorted(args.sizes):
            rows.append(in_fresh_process("--row", str(n), dtype))
            print_table(rows[-1:])
    print()
    print_table(rows)
    cold = in_fresh_process("--cold-start")
    print(
        f"\ncold start (fresh process, README quick start): import {cold['import_s']:.2f} s, "
        f"first fit {cold['first_fit_s']:.2f} s, second fit {cold['second_fit_s']:.2f} s, "
        f"a second new model {cold['new_model_fit_s']:.2f} s; "
        f"relative L2 of u {cold['relative_l2']:.2g}"
    )
    with tempfile.TemporaryDirectory() as folder:
        in_fresh_process("--cold-start", "--compilation-cache", folder)  # fills the folder
        cold["with_compilation_cache"] = cached = in_fresh_process(
            "--cold-start", "--compilation-cache", folder
        )
    print(
        f"the same with pigp.compilation_cache filled by an earlier process: first fit "
        f"{cached['first_fit_s']:.2f} s, second fit {cached['second_fit_s']:.2f} s; "
        f"relative L2 of u {cached['relative_l2']:.2g}"
    )
    kernels = in_fresh_process("--raissi-kernels")
    print(
        f"\n{'seed':>4} {'kernel':>20} {'chosen':>18} {'fit s':>7} {'rel L2 u':>9} {'|alpha-1|':>9}"
    )
    for r in kernels:
        print(
            f"{r['seed']:>4} {r['kernel']:>20} {r['chosen']:>18} {r['fit_s']:>7.2f} "
            f"{r['relative_l2']:>9.2e} {r['alpha_error']:>9.2e}"
        )
    result = {
        "rows": rows,
        "cold_start": cold,
        "raissi_kernels": kernels,
        "seed_adam_steps_per_second": seed_steps_per_second(),
        "gpflow": _version("gpflow"),
        "tensorflow": tf.__version__,
    }
    print(f"\nseed problem (50 points): {result['seed_adam_steps_per_second']:.0f} Adam steps/s")
    result["prediction"] = prediction_scaling(args.predict)
    print(f"\n{'points':>9} {'seconds':>9} {'us/point':>9} {'finite':>7} {'peak MiB':>9}")
    for r in result["prediction"]:
        print(
            f"{r['points']:>9} {r['seconds']:>9.3f} {r['microseconds_per_point']:>9.2f} "
            f"{str(r['finite']):>7} {r['peak_rss_mib']:>9.0f}"
        )
    if not args.skip_accuracy:
        result["time_to_accuracy"] = accuracy = time_to_accuracy()
        print(f"\ncore heat example, time to relative L2 <= {accuracy['target']:g}:")
        for name in ("adam", "default"):
            a = accuracy[name]
            seconds = "not reached" if a["seconds"] is None else f"{a['seconds']:.2f} s"
            print(
                f"  {name:>8}: {seconds} (relative L2 {a['relative_l2']:.3g} "
                f"after {a['steps']} steps)"
            )
    write_json(args.out, result)


def _version(name):
    try:
        return __import__(name).__version__
    except ImportError:
        return None


if __name__ == "__main__":
    main()
