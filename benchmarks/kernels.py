"""Kernels compared on the heat-equation problems of ``peers.py``.

For each problem (same data and 50 x 50 grid as ``peers.py``), fit a
squared exponential, a one- and a two-component spectral mixture with
default settings and report the relative L2 error of u, the 95% coverage,
the log marginal likelihood the fit reached and the fit time. The log
marginal likelihood is what a user can compare without the truth.

    python benchmarks/kernels.py --out results/kernels.json
"""

import argparse
import warnings

import numpy as np
from common import write_json
from peers import coverage, fit_pigp, problem_forcing, problem_heat, problem_raissi, problem_seed

import pigp

KERNELS = {
    "squared_exponential": pigp.kernels.SquaredExponential,
    "spectral_mixture_1": lambda: pigp.kernels.SpectralMixture(1),
    "spectral_mixture_2": lambda: pigp.kernels.SpectralMixture(2),
}
PROBLEMS = {
    "heat": problem_heat,
    "seed": problem_seed,
    "raissi": problem_raissi,
    "forcing": problem_forcing,
    "heat-20": lambda: problem_heat(20),
    "heat-50": lambda: problem_heat(50),
}


def run(problem: dict, kernel: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noise-explains-data warnings: in the table
        model, alpha, seconds, mean, var = fit_pigp(problem, KERNELS[kernel]())
    truth = problem["truth"]
    row = {
        "problem": problem["name"],
        "kernel": kernel,
        "relative_l2": float(np.linalg.norm(mean - truth) / np.linalg.norm(truth)),
        "coverage_95": coverage(mean, var, truth),
        "log_marginal_likelihood": model.log_marginal_likelihood(),
        "fit_seconds": seconds,
    }
    if problem["alpha"] is not None:
        row["alpha_error"] = abs(float(alpha.numpy()) - 1.0)
    if kernel.startswith("spectral"):
        row["frequencies"] = model.kernel.frequencies.numpy().tolist()
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--out", default="results/kernels.json")
    args = parser.parse_args()
    rows = []
    print(
        f"{'problem':<8} {'kernel':<20} {'rel L2 u':>9} {'cover95':>7} {'log ML':>8} {'fit s':>6}"
        f"  learned frequencies"
    )
    for name in args.problems:
        problem = PROBLEMS[name]()
        for kernel in KERNELS:
            r = run(problem, kernel)
            rows.append(r)
            frequencies = np.round(r.get("frequencies", []), 3).tolist()
            print(
                f"{r['problem']:<8} {kernel:<20} {r['relative_l2']:>9.2e} {r['coverage_95']:>7.3f} "
                f"{r['log_marginal_likelihood']:>8.1f} {r['fit_seconds']:>6.1f}  "
                f"{frequencies if frequencies else ''}",
                flush=True,
            )
    write_json(args.out, {"rows": rows})


if __name__ == "__main__":
    main()
