"""PDEs beyond constant coefficients: a 2-D Darcy problem with a conductivity that varies in space.

``-div(a grad u) = f`` on [0, 1]^2, written out as ``-a (u_xx + u_yy) - a_x u_x - a_y u_y``
(the conductivity is evaluated at the points, never differentiated), with

    a(x, y) = 1 + 0.5 sin(2 pi x) sin(2 pi y),   u(x, y) = sin(pi x) sin(pi y),

f from the closed form, Dirichlet values u = 0 on the boundary.

- forward: f at ``--interior`` random interior points and u at ``--boundary`` boundary
  points, default settings; the relative L2 error of u on a 50 x 50 grid against the closed form;
- inverse: ``-div(k a grad u) = f`` with the scalar k learned (truth 1, start 2) from u at 50
  interior points with 1% noise plus the same f data; k, its Laplace std and u's error.

    python benchmarks/nonlinear.py --out results/nonlinear.json

Gauss-Newton for nonlinear equations (Burgers, -Laplace u + u^3 = f) is not here yet.
"""

import argparse
import time

import numpy as np
import tensorflow as tf
from _output import write_json

import pigp
from pigp.operators import D


def conductivity(X):
    return 1.0 + 0.5 * tf.sin(2 * np.pi * X[:, 0]) * tf.sin(2 * np.pi * X[:, 1])


def conductivity_x(X):
    return np.pi * tf.cos(2 * np.pi * X[:, 0]) * tf.sin(2 * np.pi * X[:, 1])


def conductivity_y(X):
    return np.pi * tf.sin(2 * np.pi * X[:, 0]) * tf.cos(2 * np.pi * X[:, 1])


def solution(X):
    return np.sin(np.pi * X[:, 0]) * np.sin(np.pi * X[:, 1])


def forcing(X):
    """f = -(a (u_xx + u_yy) + a_x u_x + a_y u_y) for the closed forms above."""
    x, y = X[:, 0], X[:, 1]
    a = 1 + 0.5 * np.sin(2 * np.pi * x) * np.sin(2 * np.pi * y)
    a_x = np.pi * np.cos(2 * np.pi * x) * np.sin(2 * np.pi * y)
    a_y = np.pi * np.sin(2 * np.pi * x) * np.cos(2 * np.pi * y)
    u = np.sin(np.pi * x) * np.sin(np.pi * y)
    u_x = np.pi * np.cos(np.pi * x) * np.sin(np.pi * y)
    u_y = np.pi * np.sin(np.pi * x) * np.cos(np.pi * y)
    return -(a * (-2 * np.pi**2 * u) + a_x * u_x + a_y * u_y)


def darcy(scale=1.0):
    """``-div(k a grad u)`` written out; ``scale`` is k (a number or a Parameter)."""
    return (
        -scale * (conductivity * (D(0, 2) + D(1, 2)))
        - scale * (conductivity_x * D(0))
        - scale * (conductivity_y * D(1))
    )


def boundary_points(count, rng):
    t = rng.uniform(size=count)
    side = rng.integers(0, 4, size=count)
    return np.stack(
        [
            np.where(side == 0, 0.0, np.where(side == 1, 1.0, t)),
            np.where(side == 2, 0.0, np.where(side == 3, 1.0, t)),
        ],
        axis=1,
    )


def relative_error(model, X):
    mean, _ = model.predict(X)
    return float(np.linalg.norm(mean - solution(X)) / np.linalg.norm(solution(X)))


def darcy_rows(seed: int, interior: int, boundary: int) -> dict:
    rng = np.random.default_rng(seed)
    X_f = rng.uniform(size=(interior, 2))
    X_b = boundary_points(boundary, rng)
    X, _ = pigp.plotting.grid(50)
    row = {"seed": seed, "interior": interior, "boundary": boundary}

    model = pigp.PIGP(pigp.kernels.SquaredExponential(), darcy())
    start = time.perf_counter()
    model.fit(X_b, np.zeros(boundary), X_f, forcing(X_f))
    row["forward_seconds"] = time.perf_counter() - start
    row["forward_u_error"] = relative_error(model, X)

    X_u = rng.uniform(size=(50, 2))
    y_u = solution(X_u) * (1 + 0.01 * rng.standard_normal(50))
    k = pigp.Parameter(2.0, name="k")
    inverse = pigp.PIGP(pigp.kernels.SquaredExponential(), darcy(k))
    start = time.perf_counter()
    inverse.fit(
        X_u,
        y_u,
        X_f,
        forcing(X_f),
        observations=[pigp.Observations(X_b, np.zeros(boundary), name="boundary")],
    )
    row["inverse_seconds"] = time.perf_counter() - start
    row["k"] = inverse.parameter_values()["operator.k"]
    row["k_std"] = float(inverse.parameter_uncertainty()["operator.k"])
    row["inverse_u_error"] = relative_error(inverse, X)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--interior", type=int, default=200)
    parser.add_argument("--boundary", type=int, default=40)
    parser.add_argument("--out", default="results/nonlinear.json")
    args = parser.parse_args()
    rows = []
    print(
        f"{'seed':>4} {'forward u err':>14} {'fit s':>7} {'k':>10} {'k std':>9} "
        f"{'inverse u err':>14} {'fit s':>7}"
    )
    for seed in range(args.seeds):
        row = darcy_rows(seed, args.interior, args.boundary)
        rows.append(row)
        print(
            f"{seed:4d} {row['forward_u_error']:14.3g} {row['forward_seconds']:7.1f} "
            f"{row['k']:10.6f} {row['k_std']:9.2g} {row['inverse_u_error']:14.3g} "
            f"{row['inverse_seconds']:7.1f}",
            flush=True,
        )
    write_json(args.out, {"darcy": rows, "settings": vars(args)})


if __name__ == "__main__":
    main()
