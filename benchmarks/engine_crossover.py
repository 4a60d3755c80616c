"""Where the sparse engine starts to pay: ``PIGP(..., engine="dense")`` against
``engine="cholesky"`` on the same nonlinear problem, by N.

-Lap u + u^3 = f with Chen et al.'s u (``pigp.experiments.nonlinear``) on an n x n
interior grid of the unit square with u given on its boundary (4(n + 1) points), the
kernel held (Matérn 7/2, variance 1, lengthscale 0.3: nothing to learn, so both fits
are Gauss-Newton alone), each (engine, n) in a fresh process (its peak memory its own).
The time is ``fit`` and ``predict`` at 1,000 random points; the error is u's relative
L2 at those points against the exact u.

    python benchmarks/engine_crossover.py --grids 20 40 --out build/benchmarks/x.json
"""

import argparse
import json
import time

from common import in_fresh_process, peak_gb, unit_square_grid, write_json

ENGINES = ("dense", "cholesky")


def run(engine: str, n: int) -> dict:
    import numpy as np

    import pigp
    from pigp.experiments.nonlinear import _elliptic_forcing, elliptic_equation, elliptic_solution

    boundary, interior = unit_square_grid(n)
    kernel = pigp.kernels.Matern72(
        variance=pigp.Parameter(1.0, positive=True, trainable=False),
        lengthscales=pigp.Parameter([0.3, 0.3], positive=True, trainable=False),
    )
    X = np.random.default_rng(0).uniform(size=(1000, 2))
    start = time.perf_counter()
    model = pigp.PIGP(kernel, elliptic_equation(), engine=engine)
    model.fit(boundary, elliptic_solution(boundary), interior, _elliptic_forcing(interior))
    fitted = time.perf_counter() - start
    mean, _ = model.predict(X)
    seconds = time.perf_counter() - start
    truth = elliptic_solution(X)
    return {
        "engine": engine,
        "interior": len(interior),
        "values": len(interior) + len(boundary),
        "fit_seconds": fitted,
        "seconds": seconds,
        "relative_l2": float(np.linalg.norm(mean - truth) / np.linalg.norm(truth)),
        "gauss_newton_steps": len(model.gauss_newton),
        "peak_gb": peak_gb(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", nargs="*", type=int, default=[20, 30, 40, 50, 60, 80, 100])
    parser.add_argument("--engines", nargs="*", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # a child's (engine, n)
    parser.add_argument("--out", default="build/benchmarks/engine_crossover.json")
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run(args.one[0], int(args.one[1]))))
        return
    rows = []
    print(f"{'engine':>9} {'interior':>9} {'error':>9} {'fit s':>7} {'total s':>8} {'peak GB':>8}")
    for n in args.grids:
        for engine in args.engines:
            row = in_fresh_process([__file__, "--one", engine, str(n)])
            rows.append(row)
            print(
                f"{engine:>9} {row['interior']:>9} {row['relative_l2']:9.2e} "
                f"{row['fit_seconds']:7.1f} {row['seconds']:8.1f} {row['peak_gb']:8.2f}",
                flush=True,
            )
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
