"""Nonlinear PDEs by Gauss-Newton kernel collocation, and a conductivity that varies in space.

Every error is against an independent reference computed here: a closed form, or
Burgers' Cole-Hopf solution by Gauss-Hermite quadrature (300 nodes). Default
settings of ``pigp.PIGP`` throughout (``pigp.fitting.Solver``), a
squared-exponential kernel from the starting lengthscales named below; Burgers'
forward problems also with a rational-quadratic kernel and with ``pigp burgers``'s
rational quadratic on x warped around the front (``--kernels``), each on the
designs of ``--burgers-seeds``.

- ``elliptic``: ``-laplacian u + u^3 = f`` on [0, 1]^2, Dirichlet,
  ``u = sin(pi x) sin(pi y) + 2 sin(4 pi x) sin(4 pi y)``; 900 random interior
  and 124 boundary points (Chen, Hosseini, Owhadi, Stuart, J. Comput. Phys. 447,
  2021); RMS error on a 100 x 100 grid. Start: lengthscales 0.2.
- ``burgers``: ``u_t + u u_x - 0.02 u_xx = 0``, ``u(x, 0) = -sin(pi x)``,
  ``u(+-1, t) = 0`` on [-1, 1] x [0, 1]; 1000 + 200 and 2400 + 200 random
  interior + boundary points; RMS error on a 101 x 51 grid. Start: lengthscales
  (0.05, 0.3) at 1000 points, (0.04, 0.3) at 2400.
- ``inverse``: nu learned from a start of 0.1 (truth 0.02) from 300 scattered u
  values with 1% noise (its variance given: the noise level is known) plus the
  equation at 1000 collocation points (``--inverse-interior``) and the 200
  boundary values, default settings (``likelihood="auto"``, here
  ``"conditional"``: the kernel learned with nu by the joint marginal likelihood,
  then nu once more by the u data's likelihood given the equation and the
  boundary values, the kernel held); nu, its Laplace std and whether
  nu +- 1.96 std holds 0.02; ``--seeds`` seeds; the squared exponential from
  (0.05, 0.3), or ``--inverse-kernel``.
- ``inverse-joint``: the same, everything by the joint marginal likelihood
  (``solver={"likelihood": "joint"}``).
- ``pinn``: DeepXDE's PINN on the same 1000 + 200 Burgers points (its Burgers
  example's recipe: a 2-20-20-20-1 tanh network, Adam at 1e-3 for ``--adam``
  iterations, then L-BFGS), error and wall time; needs the ``peers`` extra.
- ``pinn-fine``: the same on the 2400 + 200 points of ``burgers-fine``.
- ``darcy``: ``-div(a grad u) = f`` on [0, 1]^2 with a known
  ``a = 1 + 0.5 sin(2 pi x) sin(2 pi y)``, ``u = sin(pi x) sin(pi y)``, written out
  (``-a (u_xx + u_yy) - a_x u_x - a_y u_y``; the conductivity evaluated at the
  points, never differentiated): forward (relative L2 on a 50 x 50 grid) and
  with a scalar factor k of a learned (truth 1, start 2) from 50 u values with
  1% noise.

    python benchmarks/nonlinear.py --out results/nonlinear.json
    python benchmarks/nonlinear.py --problems burgers burgers-fine --burgers-seeds 0 1 2 3 4
    .venv-peers/bin/python benchmarks/nonlinear.py --problems pinn ...   # with DeepXDE
"""

import argparse
import time

import numpy as np
import tensorflow as tf
from common import print_row, write_json

import pigp
from pigp.experiments.nonlinear import (
    burgers_design,
    burgers_equation,
    burgers_kernel,
    burgers_reference,
    elliptic_design,
    elliptic_equation,
    elliptic_solution,
    rectangle_grid,
)
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


BURGERS_GRID = rectangle_grid((-1, 0), (1, 1), (101, 51))


def _rms(mean, truth) -> float:
    return float(np.sqrt(np.mean((mean - truth) ** 2)))


def _gauss_newton(model) -> dict:
    steps = model.gauss_newton
    return {
        "iterations": len(steps),
        "learning_phases": int(sum(s.learned for s in steps)),
        "last_change": steps[-1].change,
        "stages": sorted({s.points for s in steps}),
    }


def elliptic_row(seed: int) -> dict:
    design = elliptic_design(900, 124, seed)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.2]), elliptic_equation())
    start = time.perf_counter()
    model.fit(design["X_b"], design["y_b"], design["X_f"], design["y_f"])
    seconds = time.perf_counter() - start
    X = rectangle_grid((0, 0), (1, 1), (100, 100))
    mean, _ = model.predict(X)
    return {
        "problem": "elliptic 900+124",
        "seed": seed,
        "rms_error": _rms(mean, elliptic_solution(X)),
        "seconds": seconds,
        "lengthscales": model.parameter_values()["kernel.lengthscales"].tolist(),
        **_gauss_newton(model),
    }


def _front(lengthscale_x: float):
    """``pigp burgers``'s kernel (``burgers_kernel``): the rational quadratic on x
    warped by ``tanh_front`` at x = 0, where the characteristics of ``-sin(pi x)``
    meet (strength 0.5, width 0.05 to start, both learned); x's lengthscale in the
    warped coordinate starts at 0.2 whatever ``lengthscale_x``."""
    return burgers_kernel()


#: --kernels: name -> (kernel from the starting lengthscale of x, label for the table)
KERNELS = {
    "squared_exponential": (
        lambda ell: pigp.kernels.SquaredExponential(lengthscales=[ell, 0.3]),
        "SE",
    ),
    "rational_quadratic": (
        lambda ell: pigp.kernels.RationalQuadratic(lengthscales=[ell, 0.3]),
        "RQ",
    ),
    "rational_quadratic_front": (_front, "RQ front"),
    "rational_quadratic_forming": (
        lambda ell: burgers_kernel(forming=True),
        "RQ forming front",
    ),
    "rational_quadratic_steepening": (
        lambda ell: burgers_kernel(steepening=True),
        "RQ steepening front",
    ),
}


def _lengthscales(model) -> list:
    values = model.parameter_values()
    key = "kernel.lengthscales" if "kernel.lengthscales" in values else "kernel.kernel.lengthscales"
    return values[key].tolist()


def burgers_row(seed: int, interior: int, lengthscale_x: float, kernel: str) -> dict:
    design = burgers_design(interior, 200, seed)
    build, label = KERNELS[kernel]
    model = pigp.PIGP(build(lengthscale_x), burgers_equation(0.02))
    start = time.perf_counter()
    model.fit(design["X_b"], design["y_b"], design["X_f"], design["y_f"])
    seconds = time.perf_counter() - start
    mean, _ = model.predict(BURGERS_GRID)
    return {
        "problem": f"burgers {interior}+200 {label}",
        "seed": seed,
        "kernel": kernel,
        "rms_error": _rms(mean, burgers_reference(BURGERS_GRID)),
        "seconds": seconds,
        "lengthscales": _lengthscales(model),
        **_gauss_newton(model),
    }


def inverse_row(
    seed: int, likelihood: str = "auto", interior: int = 1000, kernel: str = "squared_exponential"
) -> dict:
    design = burgers_design(interior, 200, seed)
    rng = np.random.default_rng(seed + 100)
    X_u = np.c_[rng.uniform(-1, 1, 300), rng.uniform(0, 1, 300)]
    clean = burgers_reference(X_u)
    y_u = clean + 0.01 * np.sqrt(np.mean(clean**2)) * rng.standard_normal(300)
    nu = pigp.Parameter(0.1, positive=True)
    # The noise level is known (1% of the RMS): its variance is given, not learned, in
    # the standardised units of the fit (the u data divided by their RMS, y_scale).
    noise_std = 0.01 * np.sqrt(np.mean(clean**2)) / np.sqrt(np.mean(y_u**2))
    noise = pigp.Parameter(noise_std**2, trainable=False)
    model = pigp.PIGP(KERNELS[kernel][0](0.05), burgers_equation(nu), noise_u=noise)
    boundary = pigp.Observations(design["X_b"], design["y_b"], name="boundary")
    start = time.perf_counter()
    model.fit(
        X_u,
        y_u,
        design["X_f"],
        design["y_f"],
        observations=[boundary],
        solver={"likelihood": likelihood},
    )
    seconds = time.perf_counter() - start
    value = model.parameter_values()["operator.nu"]
    std = float(model.parameter_uncertainty()["operator.nu"])
    mean, _ = model.predict(BURGERS_GRID)
    return {
        "problem": "inverse burgers"
        + ("" if likelihood == "auto" else f" {likelihood}")
        + ("" if kernel == "squared_exponential" else f" {KERNELS[kernel][1]}"),
        "seed": seed,
        "kernel": kernel,
        "interior": interior,
        "nu": value,
        "nu_relative_error": abs(value - 0.02) / 0.02,
        "nu_std": std,
        "interval_holds": bool(abs(value - 0.02) <= 1.959964 * std),
        "rms_error": _rms(mean, burgers_reference(BURGERS_GRID)),
        "seconds": seconds,
        "held": list(model.held),
        **_gauss_newton(model),
    }


def pinn_row(seed: int, interior: int, adam: int, lbfgs: int) -> dict:
    """DeepXDE's PINN on the same Burgers points: the PDE residual at the interior
    points, the boundary and initial values as point data."""
    import contextlib
    import io
    import os

    os.environ.setdefault("DDE_BACKEND", "pytorch")
    import deepxde as dde

    design = burgers_design(interior, 200, seed)
    dde.config.set_default_float("float64")
    dde.config.set_random_seed(seed)

    def residual(x, y):
        u_x = dde.grad.jacobian(y, x, i=0, j=0)
        u_t = dde.grad.jacobian(y, x, i=0, j=1)
        u_xx = dde.grad.hessian(y, x, i=0, j=0)
        return u_t + y * u_x - 0.02 * u_xx

    geometry = dde.geometry.GeometryXTime(
        dde.geometry.Interval(-1, 1), dde.geometry.TimeDomain(0, 1)
    )
    condition = dde.icbc.PointSetBC(design["X_b"], design["y_b"][:, None])
    data = dde.data.TimePDE(
        geometry, residual, [condition], num_domain=0, num_boundary=0, anchors=design["X_f"]
    )
    model = dde.Model(data, dde.nn.FNN([2] + [20] * 3 + [1], "tanh", "Glorot normal"))
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        model.compile("adam", lr=1e-3)
        model.train(iterations=adam, display_every=adam)
        dde.optimizers.set_LBFGS_options(maxiter=lbfgs)
        model.compile("L-BFGS")
        model.train(display_every=lbfgs)
    seconds = time.perf_counter() - start
    mean = model.predict(BURGERS_GRID)[:, 0]
    return {
        "problem": f"pinn burgers {interior}+200",
        "seed": seed,
        "rms_error": _rms(mean, burgers_reference(BURGERS_GRID)),
        "seconds": seconds,
        "adam": adam,
        "lbfgs_max": lbfgs,
    }


COLUMNS = (
    ("rms_error", "{:10.2e}"),
    ("nu", "{:10.5f}"),
    ("nu_std", "{:9.1e}"),
    ("interval_holds", "{!s:>6}"),
    ("iterations", "{:5d}"),
    ("seconds", "{:8.1f}"),
)


def _print(row: dict) -> None:
    print_row(row, COLUMNS, 22)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--problems",
        nargs="*",
        default=["elliptic", "burgers", "burgers-fine", "inverse", "pinn", "darcy"],
        help="among elliptic, burgers, burgers-fine, inverse, inverse-joint, pinn, "
        "pinn-fine, darcy",
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds of inverse")
    parser.add_argument(
        "--inverse-interior", type=int, default=1000, help="inverse's collocation points"
    )
    parser.add_argument(
        "--burgers-seeds",
        nargs="*",
        type=int,
        default=[0],
        help="the seeds (designs) of burgers, burgers-fine and pinn",
    )
    parser.add_argument(
        "--kernels",
        nargs="*",
        default=["squared_exponential", "rational_quadratic"],
        choices=sorted(KERNELS),
        help="kernels of burgers and burgers-fine",
    )
    parser.add_argument(
        "--inverse-kernel",
        default="squared_exponential",
        choices=sorted(KERNELS),
        help="the kernel of inverse and inverse-joint",
    )
    parser.add_argument("--darcy-seeds", type=int, default=3)
    parser.add_argument("--interior", type=int, default=200, help="Darcy's interior points")
    parser.add_argument("--boundary", type=int, default=40, help="Darcy's boundary points")
    parser.add_argument("--adam", type=int, default=15000, help="PINN Adam iterations")
    parser.add_argument("--lbfgs", type=int, default=3000, help="PINN L-BFGS iterations (max)")
    parser.add_argument("--out", default="results/nonlinear.json")
    args = parser.parse_args()
    results = {"settings": vars(args)}
    print(
        f"{'problem':<22} {'seed':>4} {'rms err':>10} {'nu':>10} {'nu std':>9} {'holds':>6} "
        f"{'iter':>5} {'s':>8}"
    )
    rows = []
    for name in args.problems:
        if name == "elliptic":
            found = [elliptic_row(0)]
        elif name in ("burgers", "burgers-fine"):
            interior, start = (1000, 0.05) if name == "burgers" else (2400, 0.04)
            found = (
                burgers_row(seed, interior, start, kernel)
                for kernel in args.kernels
                for seed in args.burgers_seeds
            )
        elif name in ("inverse", "inverse-joint"):
            likelihood = "auto" if name == "inverse" else "joint"
            found = (
                inverse_row(seed, likelihood, args.inverse_interior, args.inverse_kernel)
                for seed in range(args.seeds)
            )
        elif name in ("pinn", "pinn-fine"):
            interior = 1000 if name == "pinn" else 2400
            found = (pinn_row(seed, interior, args.adam, args.lbfgs) for seed in args.burgers_seeds)
        elif name == "darcy":
            continue
        else:
            raise SystemExit(f"--problems: unknown {name!r}")
        for row in found:  # each row printed as soon as it is computed
            _print(row)
            rows.append(row)
    results["rows"] = rows
    if "darcy" in args.problems:
        print(
            f"\n{'seed':>4} {'forward u err':>14} {'fit s':>7} {'k':>10} {'k std':>9} "
            f"{'inverse u err':>14} {'fit s':>7}"
        )
        results["darcy"] = []
        for seed in range(args.darcy_seeds):
            row = darcy_rows(seed, args.interior, args.boundary)
            results["darcy"].append(row)
            print(
                f"{seed:4d} {row['forward_u_error']:14.3g} {row['forward_seconds']:7.1f} "
                f"{row['k']:10.6f} {row['k_std']:9.2g} {row['inverse_u_error']:14.3g} "
                f"{row['inverse_seconds']:7.1f}",
                flush=True,
            )
    write_json(args.out, results)


if __name__ == "__main__":
    main()
