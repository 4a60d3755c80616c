"""Large data: the sparse variational PIGP from 10^4 to 10^6 values, beside GPflow's SVGP
and the exact PIGP.

The heat problem u = e^-t sin(pi x), f = u_t - u_xx = (pi^2 - 1) u on [0, 1]^2, both
observed with Gaussian noise of 1% of their RMS. Errors on a 100 x 100 grid.

  sensor-rich   N u values scattered uniformly over space-time plus 10^4 f values,
                N = 10^4, 10^5, 10^6, M = 128, 256, 512 inducing points, minibatches
                of 1024 values.
  physics-rich  u only on the lines t = 0, x = 0, x = 1 (10^3 values) and 10^5 f
                values inside, M = 512.

Methods, each case in a fresh process (its peak resident memory is the process's):

  sparse   pigp.SparsePIGP, SE kernel, defaults (warm start by L-BFGS on Titsias's
           bound of 2048 values, then Adam on the parameters and natural-gradient
           steps of q, then q at its optimum by one pass over the data).
  svgp     GPflow's SVGP, RBF kernel, Gaussian likelihood, whitened, on the u values
           only (no physics): natural-gradient steps (gamma 0.1) for q and Adam
           (0.01) for the rest, GPflow's recommended recipe; the same inducing
           points (k-means) and batch size; run in the `peers` environment.
  exact    pigp.PIGP on 4000 of the values (3000 u + 1000 f; physics-rich: all
           1000 u + 3000 f), L-BFGS-B (at most 100 iterations).

Both stochastic methods stop when the mean minibatch loss of the last 250 steps
no longer improves on the previous 250 by more than two standard errors (at
least 500 and at most 3000 steps). "step" is the mean time of a minibatch step
(compiled loop, no evaluation), "epoch" N/B of them; "time" is the whole fit,
warm start, compilation and final pass included. The "u-only step" rows time
both stochastic methods on minibatches of u values alone (N = 10^6, M = 512).

    python benchmarks/scale.py --peers-python .venv-peers/bin/python --out results/scale.json
    python benchmarks/scale.py --quick      # small sizes, a minute
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW, MIN_STEPS, MAX_STEPS, BATCH = 250, 500, 3000, 1024


# ----- the problem ----------------------------------------------------------------------
def heat(X):
    u = np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
    return u, (np.pi**2 - 1.0) * u


def noisy(y, rng, level=0.01):
    return y + level * np.sqrt(np.mean(y**2)) * rng.standard_normal(len(y))


def problem(regime, n, seed=0):
    rng = np.random.default_rng(seed)
    if regime == "sensor":
        X_u = rng.random((n, 2))
        X_f = rng.random((10_000, 2))
    else:
        t = np.linspace(0.0, 1.0, 301)[1:]
        X_u = np.concatenate(
            [
                np.stack([np.linspace(0.0, 1.0, 400), np.zeros(400)], axis=1),
                np.stack([np.zeros(300), t], axis=1),
                np.stack([np.ones(300), t], axis=1),
            ]
        )
        X_f = rng.random((n, 2))
    return X_u, noisy(heat(X_u)[0], rng), X_f, noisy(heat(X_f)[1], rng)


def grid():
    x = np.linspace(0.0, 1.0, 100)
    X = np.stack(np.meshgrid(x, x), axis=-1).reshape(-1, 2)
    return X, heat(X)[0]


def scores(mean, var):
    X, truth = grid()
    return {
        "relative_l2": float(np.linalg.norm(mean - truth) / np.linalg.norm(truth)),
        "coverage": float(np.mean(np.abs(mean - truth) <= 1.96 * np.sqrt(np.maximum(var, 0)))),
    }


def converged(losses):
    """The last window's mean no longer improves on the previous one by 2 standard errors."""
    if len(losses) < max(MIN_STEPS, 2 * WINDOW):
        return False
    last, before = np.asarray(losses[-WINDOW:]), np.asarray(losses[-2 * WINDOW : -WINDOW])
    error = np.sqrt((last.var() + before.var()) / WINDOW)
    return before.mean() - last.mean() < 2.0 * error


def peak_rss_gib():
    import pigp

    return pigp.memory.peak_bytes() / 2**30


# ----- one case in this process ---------------------------------------------------------
def run_sparse(case):
    import pigp
    from pigp import kernels, operators

    X_u, y_u, X_f, y_f = problem(case["regime"], case["n"])
    if case.get("u_only"):
        X_f = y_f = None
    model = pigp.SparsePIGP(
        kernels.SquaredExponential(), operators.heat(1.0), num_inducing=case["m"]
    )
    marks = []

    def callback(step, loss, model):
        marks.append((step, time.perf_counter()))
        return case.get("steps") is None and converged(model.history)

    start = time.perf_counter()
    model.fit(
        X_u, y_u, X_f, y_f, method="stochastic", steps=case.get("steps") or MAX_STEPS,
        batch_size=BATCH, callback=callback,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    mean, var = model.predict(grid()[0])
    step = (marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0])
    return {
        **scores(mean, var),
        "seconds": seconds,
        "steps": len(model.history),
        "step_seconds": step,
        "parameters": {k: np.asarray(v).tolist() for k, v in model.parameter_values().items()},
    }


def run_svgp(case):
    import gpflow
    import tensorflow as tf
    import tf_keras

    from pigp.engines.variational.model import inducing_points

    X_u, y_u, _, _ = problem(case["regime"], case["n"])
    scale = np.sqrt(np.mean(y_u**2))
    y = (y_u / scale)[:, None]
    start = time.perf_counter()
    Z = inducing_points(X_u, case["m"], 0)
    model = gpflow.models.SVGP(
        gpflow.kernels.SquaredExponential(lengthscales=0.5 * np.ptp(X_u, axis=0)),
        gpflow.likelihoods.Gaussian(variance=1e-3),
        Z,
        num_data=len(X_u),
        whiten=True,
    )
    gpflow.set_trainable(model.q_mu, False)
    gpflow.set_trainable(model.q_sqrt, False)
    gpflow.set_trainable(model.inducing_variable, False)
    natural = gpflow.optimizers.NaturalGradient(gamma=0.1)
    adam = tf_keras.optimizers.Adam(0.01)
    data = (
        tf.data.Dataset.from_tensor_slices((X_u, y))
        .repeat()
        .shuffle(min(len(X_u), 100_000), seed=0)
        .batch(BATCH, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
    iterator = iter(data)

    @tf.function
    def steps(n):
        losses = tf.TensorArray(tf.float64, size=n)
        for i in tf.range(n):
            batch = next(iterator)

            def loss(batch=batch):
                return model.training_loss(batch)

            natural.minimize(loss, [(model.q_mu, model.q_sqrt)])
            adam.minimize(loss, model.trainable_variables)
            losses = losses.write(i, loss())
        return losses.stack()

    @tf.function
    def evaluate():
        return model.training_loss(next(iterator))

    history, marks = [], []
    limit = case.get("steps") or MAX_STEPS
    while len(history) < limit:
        history.extend(steps(tf.constant(WINDOW)).numpy().tolist())
        marks.append((len(history), time.perf_counter()))
        if case.get("steps") is None and converged(history):
            break
    seconds = time.perf_counter() - start
    mean, var = model.predict_f(grid()[0])
    step = (marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0])
    # Its loss evaluates the ELBO once more per step (on another batch) for the record:
    # time that apart so the step compares like with like.
    evaluate()
    t = time.perf_counter()
    for _ in range(20):
        evaluate()
    step -= (time.perf_counter() - t) / 20
    return {
        **scores(mean.numpy()[:, 0] * scale, var.numpy()[:, 0] * scale**2),
        "seconds": seconds,
        "steps": len(history),
        "step_seconds": step,
    }


def run_exact(case):
    import pigp
    from pigp import kernels, operators

    X_u, y_u, X_f, y_f = problem(case["regime"], case["n"])
    rng = np.random.default_rng(1)
    n_u = min(len(X_u), 3000)
    i_u = rng.choice(len(X_u), n_u, replace=False)
    i_f = rng.choice(len(X_f), 4000 - n_u, replace=False)
    model = pigp.PIGP(kernels.SquaredExponential(), operators.heat(1.0), noise_u=1e-3, noise_f=1e-3)
    start = time.perf_counter()
    model.fit(X_u[i_u], y_u[i_u], X_f[i_f], y_f[i_f], optimizer="lbfgs", steps=100)
    seconds = time.perf_counter() - start
    mean, var = model.predict(grid()[0])
    return {**scores(mean, var), "seconds": seconds, "steps": len(model.history)}


RUNNERS = {"sparse": run_sparse, "svgp": run_svgp, "exact": run_exact}


# ----- the whole benchmark ----------------------------------------------------------------
def cases(quick):
    sizes = [10_000] if quick else [10_000, 100_000, 1_000_000]
    ms = [64] if quick else [128, 256, 512]
    out = []
    for n in sizes:
        for m in ms:
            out.append({"method": "sparse", "regime": "sensor", "n": n, "m": m})
            out.append({"method": "svgp", "regime": "sensor", "n": n, "m": m})
    out.append({"method": "exact", "regime": "sensor", "n": sizes[-1]})
    n_physics, m_physics = (10_000, 64) if quick else (100_000, 512)
    for method in ("sparse", "svgp"):
        out.append({"method": method, "regime": "physics", "n": n_physics, "m": m_physics})
    out.append({"method": "exact", "regime": "physics", "n": n_physics})
    n_step, m_step = (10_000, 64) if quick else (1_000_000, 512)
    for method in ("sparse", "svgp"):
        out.append(
            {"method": method, "regime": "sensor", "n": n_step, "m": m_step, "u_only": True,
             "steps": 500}
        )  # fmt: skip
    return out


def run_case(case, python, timeout):
    command = [python, os.path.abspath(__file__), "--case", json.dumps(case)]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**case, "error": f"timed out after {timeout} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {**case, "error": done.stderr[-2000:]}
    return {**case, **json.loads(lines[-1]), "process_seconds": time.perf_counter() - start}


def table(rows):
    header = (
        f"{'regime':8} {'method':7} {'N':>9} {'M':>4} {'rel L2 u':>9} {'cover':>6} "
        f"{'time s':>7} {'steps':>6} {'step ms':>8} {'epoch s':>8} {'RSS GiB':>8}"
    )
    lines = [header]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['regime']:8} {r['method']:7} {r['n']:>9} error: {r['error'][-200:]}")
            continue
        n_values = r["n"] + (10_000 if r["regime"] == "sensor" else 1000)
        if r["method"] == "svgp":
            n_values = r["n"] if r["regime"] == "sensor" else 1000
        if r.get("u_only"):
            n_values = r["n"]
        step = r.get("step_seconds")
        lines.append(
            f"{r['regime']:8} {r['method'] + ('/u' if r.get('u_only') else ''):7} "
            f"{r['n']:>9} {r.get('m', '-'):>4} {r['relative_l2']:>9.2e} {r['coverage']:>6.3f} "
            f"{r['seconds']:>7.1f} {r['steps']:>6} "
            + (
                f"{1e3 * step:>8.1f} {step * n_values / BATCH:>8.1f}"
                if step
                else f"{'-':>8} {'-':>8}"
            )
            + f" {r['peak_rss_gib']:>8.2f}"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", help="run one case (JSON) in this process and print JSON")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peers-python", help="a Python with GPflow (the peers extra)")
    parser.add_argument("--only", help="run only the cases of this method")
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--out", default="results/scale.json")
    args = parser.parse_args()
    if args.case:
        case = json.loads(args.case)
        result = RUNNERS[case["method"]](case)
        print(json.dumps({**result, "peak_rss_gib": peak_rss_gib()}))
        return
    rows = []
    for case in cases(args.quick):
        if args.only and case["method"] != args.only:
            continue
        python = sys.executable
        if case["method"] == "svgp":
            if not args.peers_python:
                continue
            python = args.peers_python
        rows.append(run_case(case, python, args.timeout))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(rows))
    from common import write_json

    write_json(args.out, {"batch_size": BATCH, "rows": rows})


if __name__ == "__main__":
    main()
