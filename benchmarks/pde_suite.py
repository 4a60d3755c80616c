"""Every example problem, over several seeds: relative L2 of u and learned coefficients.

Runs the problems of ``pigp.experiments.problems`` (1-D Poisson, advection-diffusion with c
and nu learned, wave with c learned, 2-D Helmholtz with Dirichlet and Neumann
data, heat in (x, y, t)) with default settings, each on designs drawn from seeds
0 .. S-1, and prints one row per problem and seed.

    python benchmarks/pde_suite.py --seeds 3 --out results/pde_suite.json
"""

import argparse
import contextlib
import io
import tempfile

from common import write_json

from pigp.experiments.problems import PROBLEMS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--out", default="results/pde_suite.json")
    args = parser.parse_args()
    rows = []
    print(
        f"{'problem':<20} {'seed':>4} {'rel L2 u':>9} {'cover95':>7} {'fit s':>6}  learned "
        "(estimate, |error|, Laplace std)"
    )
    for name in args.problems:
        for seed in range(args.seeds):
            with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
                metrics = PROBLEMS[name](out, seed=seed, dtype=args.dtype)
            learned = metrics.get("learned", {})
            rows.append(
                {
                    "problem": name,
                    "seed": seed,
                    "dtype": args.dtype,
                    "relative_l2": metrics["relative_l2"],
                    "coverage_95": metrics["coverage_95"],
                    "fit_seconds": metrics["fit_seconds"],
                    "learned": learned,
                }
            )
            text = "; ".join(
                f"{k.split('.')[-1]} = {v['estimate']:.6f} ({v['abs_error']:.1e}, "
                f"{v['laplace_std']:.1e})"
                for k, v in learned.items()
            )
            print(
                f"{name:<20} {seed:>4} {metrics['relative_l2']:>9.2e} "
                f"{metrics['coverage_95']:>7.3f} {metrics['fit_seconds']:>6.1f}  {text or '-'}",
                flush=True,
            )
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
