"""A nonlinear reaction-diffusion system in time: the Brusselator by space-time
collocation over two fields, against the method of lines.

    python benchmarks/brusselator.py --out benchmarks/results/brusselator.json

``pigp.experiments.brusselator`` has the system, the design and the reference:
u_t = d u_xx + a - (b + 1) u + u^2 v and v_t = d v_xx + b u - u^2 v on [0, 1] x [0, 2]
with a = 1, b = 3, d = 0.02, u = 1 + 0.5 sin(pi x) and v = 3 - 0.5 sin(pi x) at t = 0
and the walls held at (1, 3). Fields u and v with a squared-exponential kernel each
(hyper-parameters learned, the default plan), the two equations at an n x n grid of
collocation points, the initial state at n + 2 points and each wall at n. The reference
is second-order central differences at 2,001 abscissae integrated by SciPy's BDF (rtol
1e-10; at 1,001 abscissae it differs by 2.4e-7 at most, so its own error is near 6e-8).
Relative L2 errors of u and v and the shares of a 41 x 41 grid of the rectangle inside
their 95% bands; each size in a fresh process (its peak memory its own).
"""

import argparse
import json
import sys

from common import in_fresh_process, peak_gb, print_row, write_json

COLUMNS = (
    ("values", "{:6d}"),
    ("error_u", "{:9.2e}"),
    ("error_v", "{:9.2e}"),
    ("coverage_u", "{:6.3f}"),
    ("coverage_v", "{:6.3f}"),
    ("gauss_newton", "{:4d}"),
    ("converged", "{!s:>6}"),
    ("seconds", "{:8.1f}"),
    ("peak_gb", "{:6.2f}"),
)


def row(n: int) -> dict:
    from pigp.experiments.brusselator import brusselator_fit

    _, result = brusselator_fit(n, n)
    return {"problem": f"brusselator {n}x{n}", "seed": 0, "n": n, **result, "peak_gb": peak_gb()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[12, 16, 20])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child's run
    parser.add_argument("--out", default="benchmarks/results/brusselator.json")
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(row(args.one)))
        return
    print(" ".join(["problem".ljust(20), "seed"] + [k for k, _ in COLUMNS]), flush=True)
    rows = []
    for n in args.sizes:
        rows.append(in_fresh_process([sys.argv[0], "--one", str(n)]))
        print_row(rows[-1], COLUMNS, 20)
        write_json(args.out, {"rows": rows, "sizes": args.sizes})


if __name__ == "__main__":
    main()
