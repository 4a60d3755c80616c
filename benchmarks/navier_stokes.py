"""Steady Navier-Stokes (Kovasznay flow, Re = 20): pigp's three-field Gauss-Newton
against the exact flow, and DeepXDE's PINN on the same points.

    python benchmarks/navier_stokes.py --out benchmarks/results/navier_stokes.json
    python benchmarks/navier_stokes.py --problems cavity --cavity-re 400 1000 \
        --cavity-sizes 30 40 --cavity-lengthscale 0.15 \
        --out benchmarks/results/navier_stokes_cavity_re.json
    .venv-peers/bin/python benchmarks/navier_stokes.py --problems pinn \
        --out benchmarks/results/navier_stokes_pinn.json   # DeepXDE, PyTorch

Problems (``pigp.experiments.navier_stokes`` has the flow, the equations and the design):

- ``forward``: fields u, v, p with a squared-exponential kernel each; the two momentum
  equations and continuity at an n x n interior grid, the exact velocities at n points
  on each side of the boundary, no pressure data; nu = 0.05 known. Relative L2 errors
  of u, v and p (p less its mean) at 2,000 random points, and the share of those
  points inside u's and v's 95% bands.
- ``inverse``: the same at a 12 x 12 grid with 50 random velocity sensors inside at
  1% noise (noise learned), nu learned from 0.1: nu, its 95% Laplace interval, whether
  it holds 0.05, one row per seed.
- ``cavity``: the lid-driven cavity at Re = 100 (``--cavity-re`` for 400 and 1000; u = 1
  on the lid, 0 on the other
  walls; v = 0), fields u, v, p with Matérn 7/2 kernels of lengthscale 0.3 held fixed
  (learned, the marginal likelihood of a Gauss-Newton step prefers a flow hidden
  between the collocation points: u a function of y alone, v = 0), at n x n interior
  grids; the wall points keep one spacing away from the lid's corners, where the
  velocity jumps. The largest deviation from Ghia, Ghia & Shin's centre-line velocities
  (J. Comput. Phys. 48, 1982, Tables I-II; their interior points).
- ``cavity-pinn``: DeepXDE's PINN on the points of the largest cavity size.
- ``pinn``: DeepXDE's PINN (DeepXDE's Kovasznay example's network, 4 x 50 tanh;
  Adam at 1e-3, then L-BFGS) on the points of the largest ``forward`` size: the three
  equations at the interior grid, u and v at the boundary points, nu known.
"""

import argparse
import contextlib
import io
import os
import time

import numpy as np
from common import peak_gb, print_row, write_json

from pigp.experiments.navier_stokes import (
    LOWER,
    UPPER,
    kovasznay,
    kovasznay_design,
    kovasznay_solution,
)
from pigp.experiments.report import relative_l2

COLUMNS = (
    ("error_u", "{:9.2e}"),
    ("error_v", "{:9.2e}"),
    ("error_p", "{:9.2e}"),
    ("coverage_u", "{:6.3f}"),
    ("coverage_v", "{:6.3f}"),
    ("nu", "{:9.5f}"),
    ("max_deviation_u", "{:8.4f}"),
    ("max_deviation_v", "{:8.4f}"),
    ("interval_holds", "{!s:>6}"),
    ("gauss_newton", "{:4d}"),
    ("seconds", "{:8.1f}"),
)


def forward_row(n: int) -> dict:
    _, result = kovasznay(n, n)
    return {"problem": f"forward {n}x{n}+{4 * n}", "seed": 0, **result, "peak_gb": peak_gb()}


def inverse_row(seed: int, n: int = 12, sensors: int = 50) -> dict:
    import pigp

    nu = pigp.Parameter(0.1, positive=True)
    _, result = kovasznay(n, n, nu=nu, sensors=sensors, noise=0.01, seed=seed)
    low, high = result["nu_interval"]
    return {
        "problem": f"inverse {n}x{n}+{4 * n}, {sensors} sensors",
        "seed": seed,
        **result,
        "interval_holds": bool(low <= 0.05 <= high),
    }


def cavity_row(n: int, re: float = 100.0, lengthscale: float = 0.3) -> dict:
    import functools

    import pigp
    from pigp.experiments.navier_stokes import cavity

    kernel = functools.partial(pigp.kernels.Matern72, lengthscales=[lengthscale] * 2)
    _, result = cavity(re, n, n, kernel=kernel, solver={"learn": "never", "iterations": 40})
    return {
        "problem": f"cavity {n}x{n}+{4 * n}",
        "seed": 0,
        "re": re,
        "lengthscale": lengthscale,
        **result,
        "peak_gb": peak_gb(),
    }


def _pinn_train(model, adam: int, lbfgs: int) -> float:
    import deepxde as dde

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        model.compile("adam", lr=1e-3)
        model.train(iterations=adam, display_every=adam)
        dde.optimizers.set_LBFGS_options(maxiter=lbfgs)
        model.compile("L-BFGS")
        model.train(display_every=lbfgs)
    return time.perf_counter() - start


def _pinn_residual(nu: float):
    import deepxde as dde

    def residual(x, y):
        u, v = y[:, 0:1], y[:, 1:2]
        u_x = dde.grad.jacobian(y, x, i=0, j=0)
        u_y = dde.grad.jacobian(y, x, i=0, j=1)
        v_x = dde.grad.jacobian(y, x, i=1, j=0)
        v_y = dde.grad.jacobian(y, x, i=1, j=1)
        p_x = dde.grad.jacobian(y, x, i=2, j=0)
        p_y = dde.grad.jacobian(y, x, i=2, j=1)
        lap_u = dde.grad.hessian(y, x, component=0, i=0, j=0) + dde.grad.hessian(
            y, x, component=0, i=1, j=1
        )
        lap_v = dde.grad.hessian(y, x, component=1, i=0, j=0) + dde.grad.hessian(
            y, x, component=1, i=1, j=1
        )
        return [
            u * u_x + v * u_y + p_x - nu * lap_u,
            u * v_x + v * v_y + p_y - nu * lap_v,
            u_x + v_y,
        ]

    return residual


def cavity_pinn_row(n: int, adam: int, lbfgs: int, seed: int = 0) -> dict:
    os.environ.setdefault("DDE_BACKEND", "pytorch")
    import deepxde as dde

    from pigp.experiments.navier_stokes import GHIA_U, GHIA_V, GHIA_X, GHIA_Y, cavity_design

    dde.config.set_default_float("float64")
    dde.config.set_random_seed(seed)
    X_f, X_b, u_b, v_b = cavity_design(n, n)
    geometry = dde.geometry.Rectangle([0.0, 0.0], [1.0, 1.0])
    conditions = [
        dde.icbc.PointSetBC(X_b, u_b[:, None], component=0),
        dde.icbc.PointSetBC(X_b, v_b[:, None], component=1),
    ]
    data = dde.data.PDE(
        geometry, _pinn_residual(0.01), conditions, num_domain=0, num_boundary=0, anchors=X_f
    )
    model = dde.Model(data, dde.nn.FNN([2] + [50] * 4 + [3], "tanh", "Glorot normal"))
    seconds = _pinn_train(model, adam, lbfgs)
    inner = slice(1, -1)
    on_x = np.stack([np.full(len(GHIA_Y), 0.5), GHIA_Y], axis=1)[inner]
    on_y = np.stack([GHIA_X, np.full(len(GHIA_X), 0.5)], axis=1)[inner]
    u = model.predict(on_x)[:, 0]
    v = model.predict(on_y)[:, 1]
    return {
        "problem": f"cavity-pinn {n}x{n}+{4 * n}",
        "seed": seed,
        "max_deviation_u": float(np.max(np.abs(u - GHIA_U[100][inner]))),
        "max_deviation_v": float(np.max(np.abs(v - GHIA_V[100][inner]))),
        "u_centre": u.tolist(),
        "v_centre": v.tolist(),
        "seconds": seconds,
        "adam": adam,
        "lbfgs_max": lbfgs,
    }


def pinn_row(n: int, adam: int, lbfgs: int, seed: int = 0) -> dict:
    os.environ.setdefault("DDE_BACKEND", "pytorch")
    import deepxde as dde

    dde.config.set_default_float("float64")
    dde.config.set_random_seed(seed)
    X_f, X_b = kovasznay_design(n, n)
    u_b, v_b, _ = kovasznay_solution(X_b)

    geometry = dde.geometry.Rectangle(LOWER.tolist(), UPPER.tolist())
    conditions = [
        dde.icbc.PointSetBC(X_b, u_b[:, None], component=0),
        dde.icbc.PointSetBC(X_b, v_b[:, None], component=1),
    ]
    data = dde.data.PDE(
        geometry, _pinn_residual(0.05), conditions, num_domain=0, num_boundary=0, anchors=X_f
    )
    model = dde.Model(data, dde.nn.FNN([2] + [50] * 4 + [3], "tanh", "Glorot normal"))
    seconds = _pinn_train(model, adam, lbfgs)
    X = LOWER + (UPPER - LOWER) * np.random.default_rng(12345).uniform(size=(2000, 2))
    exact = kovasznay_solution(X)
    out = model.predict(X)
    p = out[:, 2] - out[:, 2].mean()
    return {
        "problem": f"pinn {n}x{n}+{4 * n}",
        "seed": seed,
        "error_u": relative_l2(out[:, 0], exact[0]),
        "error_v": relative_l2(out[:, 1], exact[1]),
        "error_p": relative_l2(p, exact[2] - exact[2].mean()),
        "seconds": seconds,
        "adam": adam,
        "lbfgs_max": lbfgs,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="*", default=["forward", "inverse", "cavity"])
    parser.add_argument("--sizes", type=int, nargs="*", default=[12, 20], help="forward grids")
    parser.add_argument(
        "--cavity-sizes", type=int, nargs="*", default=[20, 30], help="cavity grids"
    )
    parser.add_argument(
        "--cavity-re", type=float, nargs="*", default=[100.0], help="cavity Reynolds numbers"
    )
    parser.add_argument(
        "--cavity-lengthscale", type=float, default=0.3, help="the cavity kernels' lengthscale"
    )
    parser.add_argument("--seeds", type=int, default=5, help="inverse seeds")
    parser.add_argument("--adam", type=int, default=10000, help="the PINN's Adam steps")
    parser.add_argument("--lbfgs", type=int, default=5000, help="the PINN's L-BFGS steps")
    parser.add_argument("--out", default="benchmarks/results/navier_stokes.json")
    args = parser.parse_args()
    print(" ".join(["problem".ljust(32), "seed"] + [k for k, _ in COLUMNS]), flush=True)
    rows = []
    for problem in args.problems:
        if problem == "forward":
            new = (forward_row(n) for n in args.sizes)
        elif problem == "inverse":
            new = (inverse_row(seed) for seed in range(args.seeds))
        elif problem == "cavity":
            new = (
                cavity_row(n, re, args.cavity_lengthscale)
                for re in args.cavity_re
                for n in args.cavity_sizes
            )
        elif problem == "cavity-pinn":
            new = (cavity_pinn_row(max(args.cavity_sizes), args.adam, args.lbfgs),)
        elif problem == "pinn":
            new = (pinn_row(max(args.sizes), args.adam, args.lbfgs),)
        else:
            raise SystemExit(f"unknown problem {problem!r}")
        for row in new:
            print_row(row, COLUMNS, 32)
            rows.append(row)
            write_json(args.out, {"rows": rows, "problems": args.problems})


if __name__ == "__main__":
    main()
