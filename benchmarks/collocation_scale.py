"""The sparse inverse-Cholesky engine on -Lap u + u^3 = f: error, time and memory by N.

Chen, Hosseini, Owhadi & Stuart's u = sin(pi x) sin(pi y) + 2 sin(4 pi x) sin(4 pi y) on
the unit square, Dirichlet data on an n x n interior grid's boundary (4(n + 1) points),
the equation at the n^2 interior points, Matérn 7/2 with lengthscale 0.3, Gauss-Newton
from u = 0 until the solution changes by less than 1e-8 (``pigp.engines.cholesky``).
Each size runs in a fresh process (its peak memory is its own).

    python benchmarks/collocation_scale.py --grids 100 200 --out build/benchmarks/c.json
"""

import argparse
import json
import time

from common import in_fresh_process, peak_gb, unit_square_grid, write_json


def solve(n: int, rho: float, nugget: float, supernode: float) -> dict:
    import numpy as np

    import pigp
    from pigp.engines.cholesky.collocation import Collocation, Features
    from pigp.experiments.nonlinear import _elliptic_forcing, elliptic_solution
    from pigp.operators import D, Identity

    boundary, interior = unit_square_grid(n)
    features = Features(
        np.concatenate([boundary, interior]),
        len(boundary),
        [Identity.resolve(2), (D(0, 2) + D(1, 2)).resolve(2)],
    )
    kernel = pigp.kernels.Matern72(lengthscales=[0.3, 0.3])
    start = time.perf_counter()
    engine = Collocation(kernel, features, rho=rho, nugget=nugget, supernode=supernode)
    truth = elliptic_solution(interior)
    f = _elliptic_forcing(interior)
    u = np.zeros(len(interior))
    steps = 0
    while steps < 10:
        steps += 1
        coefficients = np.stack([3 * u**2, -np.ones(len(u))], 1)
        mean = engine.solve(
            coefficients, np.concatenate([elliptic_solution(boundary), f + 2 * u**3])
        )
        new = engine.values(mean)[len(boundary) :]
        change = np.linalg.norm(new - u) / np.linalg.norm(new)
        u = new
        if change < 1e-8:
            break
    t = engine.timings
    return {
        "interior": len(interior),
        "measurements": len(engine.points),
        "rho": rho,
        "nugget": nugget,
        "supernode": supernode,
        "relative_l2": float(np.linalg.norm(u - truth) / np.linalg.norm(truth)),
        "gauss_newton_steps": steps,
        "seconds": time.perf_counter() - start,
        "pattern_seconds": t.pattern,
        "factor_seconds": t.factor,
        "reduced_factor_seconds": t.reduced_factor,
        "pcg_seconds": t.pcg,
        "pcg_iterations": t.iterations,
        "factor_entries_per_column": engine.factor.nnz() / len(engine.points),
        "peak_gb": peak_gb(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", nargs="*", type=int, default=[100], help="n: n^2 interior")
    parser.add_argument("--rho", type=float, default=5.0)
    parser.add_argument("--nugget", type=float, default=1e-12)
    parser.add_argument("--supernode", type=float, default=1.3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child's grid
    parser.add_argument("--out", default="build/benchmarks/collocation_scale.json")
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(solve(args.one, args.rho, args.nugget, args.supernode)))
        return
    rows = []
    print(
        f"{'interior':>9} {'error':>9} {'total s':>8} {'factor s':>8} {'pcg s':>7} "
        f"{'its/step':>9} {'peak GB':>8}",
        flush=True,
    )
    for n in args.grids:
        row = in_fresh_process(
            [__file__, "--one", str(n), "--rho", str(args.rho), "--nugget", str(args.nugget)]
            + ["--supernode", str(args.supernode)]
        )
        rows.append(row)
        its = row["pcg_iterations"]
        print(
            f"{row['interior']:>9} {row['relative_l2']:9.2e} {row['seconds']:8.1f} "
            f"{row['factor_seconds']:8.1f} {row['pcg_seconds']:7.1f} "
            f"{min(its):>4}-{max(its):<4} {row['peak_gb']:8.2f}",
            flush=True,
        )
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
