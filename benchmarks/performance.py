"""Where the time goes: Gram assembly, a training step, and the floors beside them.

For N = N_u + N_f points (half u, half f) of the heat problem, in one run:
  assembly       the compiled (XLA) tape-derived joint covariance
  closed_form    the same matrix from hand-derived SE heat blocks (NumPy)
  step           one training step: loss and gradient, compiled (XLA)
  lapack_floor   SciPy cho_factor + LAPACK dpotri of an N x N SPD matrix
  tf_floor       TF Cholesky, solve, log-det and their autodiff gradient, fixed matrix
plus Adam steps per second on the seed's 50-point problem.

    python benchmarks/performance.py --sizes 50 500 1000 2000 --out results/performance.json
"""

import argparse
import json
import os
import time

import numpy as np
import scipy.linalg
import tensorflow as tf

import pigp


def best_of(function, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def closed_form_joint(X_u, X_f, variance, lx, lt, alpha):
    def parts(A, B):
        rx = A[:, None, 0] - B[None, :, 0]
        rt = A[:, None, 1] - B[None, :, 1]
        return rx, rt, variance * np.exp(-rx ** 2 / (2 * lx ** 2) - rt ** 2 / (2 * lt ** 2))

    _, _, Kuu = parts(X_u, X_u)
    rx, rt, k = parts(X_u, X_f)
    Kuf = k * (rt / lt ** 2) - alpha * k * (rx ** 2 / lx ** 4 - 1 / lx ** 2)
    rx, rt, k = parts(X_f, X_f)
    Kff = k * (1 / lt ** 2 - rt ** 2 / lt ** 4) \
        + alpha ** 2 * k * (rx ** 4 / lx ** 8 - 6 * rx ** 2 / lx ** 6 + 3 / lx ** 4)
    return np.block([[Kuu, Kuf], [Kuf.T, Kff]])


def measure(n: int, rng) -> dict:
    X_u, X_f = rng.uniform(size=(n // 2, 2)), rng.uniform(size=(n - n // 2, 2))
    y_u, y_f = np.sin(3 * X_u[:, 0]), np.cos(2 * X_f[:, 1])
    model = pigp.PIGP(pigp.kernels.SquaredExponential(1.0, [0.3, 0.5]), pigp.operators.heat(1.0),
                      noise_u=1e-2, noise_f=1e-2)
    model.fit(X_u, y_u, X_f, y_f, steps=0, optimizer="adam")
    Xs, ys = model._data_tensors()
    variables = model._trainable()
    assemble = tf.function(model._joint, jit_compile=True)

    def loss_and_gradient(Xs, ys):
        with tf.GradientTape() as tape:
            loss = model._nll(Xs, ys)
        return loss, tape.gradient(loss, variables)
    step = tf.function(loss_and_gradient, jit_compile=True)
    assemble(Xs)
    step(Xs, ys)

    K = assemble(Xs).numpy()
    Kt = tf.constant(K)
    y = tf.constant(np.r_[y_u, y_f][:, None])

    def tf_floor():
        with tf.GradientTape() as tape:
            tape.watch(Kt)
            chol = tf.linalg.cholesky(Kt)
            a = tf.linalg.cholesky_solve(chol, y)
            loss = 0.5 * tf.reduce_sum(y * a) + tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)))
        return tape.gradient(loss, Kt).numpy()

    def lapack_floor():
        c, lower = scipy.linalg.cho_factor(K, lower=True, check_finite=False)
        scipy.linalg.lapack.dpotri(c, lower=1)

    return {
        "N": n,
        "assembly_s": best_of(lambda: assemble(Xs).numpy()),
        "closed_form_s": best_of(lambda: closed_form_joint(X_u, X_f, 1.0, 0.3, 0.5, 1.0)),
        "step_s": best_of(lambda: [t.numpy() for t in tf.nest.flatten(step(Xs, ys))]),
        "lapack_floor_s": best_of(lapack_floor),
        "tf_floor_s": best_of(tf_floor),
    }


def seed_steps_per_second() -> float:
    g20, g30 = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
    X_u, X_f = np.stack([g20, g20], 1), np.stack([g30, g30], 1)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    model.fit(X_u, np.sin(X_u[:, 0]), X_f, np.cos(X_f[:, 0]), steps=250, optimizer="adam")
    start = time.perf_counter()
    model.fit(X_u, np.sin(X_u[:, 0]), X_f, np.cos(X_f[:, 0]), steps=2000, optimizer="adam")
    return 2000 / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500, 1000, 2000])
    parser.add_argument("--out", default="results/performance.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = [measure(n, rng) for n in args.sizes]
    keys = ["assembly_s", "closed_form_s", "step_s", "lapack_floor_s", "tf_floor_s"]
    print(f"{'N':>6} " + " ".join(f"{k:>15}" for k in keys) + f" {'step/lapack':>12}")
    for r in rows:
        print(f"{r['N']:>6} " + " ".join(f"{r[k]:>15.4g}" for k in keys)
              + f" {r['step_s'] / r['lapack_floor_s']:>12.2f}")
    rate = seed_steps_per_second()
    print(f"seed problem (50 points): {rate:.0f} Adam steps per second")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump({"rows": rows, "seed_adam_steps_per_second": rate}, handle, indent=2)


if __name__ == "__main__":
    main()
