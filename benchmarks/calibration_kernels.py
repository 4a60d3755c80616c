"""Which kernel the evidence prefers on the calibration's families, and its Laplace intervals.

For each family and noise of ``benchmarks/calibration.py`` (Raissi's at 1% only, with
the documented default workflow like the others here: noise left to ``fit``), 20 seeds,
the same data as there: ``fit`` with a squared exponential, a one-component spectral
mixture and ``Decaying(SquaredExponential())`` (an amplitude exp(-rate t) with the
rate learned), each from alpha = 2. Per kernel: how many ``parameter_intervals()``
(Laplace) hold the truth, the median fitted alpha, u's median relative L2 error on a
50 x 50 grid, the median fit time (seed 0's fits compile their programs), and how
often its log marginal likelihood is the highest of the three. Prints a table, writes
JSON (every fit's alpha, interval, evidence, error, time and, for ``Decaying``, rate).

    python benchmarks/calibration_kernels.py --out results/calibration_kernels.json
"""

import argparse
import time
import warnings

import numpy as np
from _output import write_json
from calibration import FAMILIES, KERNELS, problem

import pigp

COMPARED = ("squared_exponential", "spectral_mixture", "decaying")
ROWS = (
    ("raissi", 0.01),
    ("everyday", 0.01),
    ("everyday", 0.05),
    ("cosine", 0.01),
    ("cosine", 0.05),
    ("slow", 0.01),
    ("slow", 0.05),
)


def fit(kernel: str, family: str, seed: int, noise: float, X: np.ndarray, u: np.ndarray):
    """One kernel's fit of one seed: a dict of what the table reports."""
    alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
    model = pigp.PIGP(KERNELS[kernel](), pigp.operators.heat(alpha))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(*problem(family, seed, noise))
        seconds = time.perf_counter() - start
        low, high = model.parameter_intervals()["operator.diffusivity"]
    mean, _ = model.predict(X)
    truth = FAMILIES[family][1]
    return {
        "alpha": float(alpha.numpy()),
        "low": float(low),
        "high": float(high),
        "contains_truth": bool(low <= truth <= high),
        "evidence": model.log_marginal_likelihood(),
        "relative_l2": float(np.linalg.norm(mean - u) / np.linalg.norm(u)),
        "fit_seconds": seconds,
        "rate": float(model.kernel.rate.numpy()) if kernel == "decaying" else None,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", default="results/calibration_kernels.json")
    args = parser.parse_args()
    X, _ = pigp.plotting.grid(50)
    results = []
    print(
        f"{'family':>9} {'noise':>5} {'kernel':>20} {'holds':>6} {'median α':>9} "
        f"{'u L2':>8} {'fit s':>6} {'best evidence':>13}"
    )
    for family, noise in ROWS:
        u = FAMILIES[family][0](X)[0]
        fits = {k: [fit(k, family, s, noise, X, u) for s in range(args.seeds)] for k in COMPARED}
        evidence = np.array([[f["evidence"] for f in fits[k]] for k in COMPARED])
        best = np.bincount(evidence.argmax(axis=0), minlength=len(COMPARED))
        for k, wins in zip(COMPARED, best):
            rows = fits[k]
            summary = {
                "family": family,
                "noise": noise,
                "kernel": k,
                "contains_truth": sum(f["contains_truth"] for f in rows),
                "median_alpha": float(np.median([f["alpha"] for f in rows])),
                "median_relative_l2": float(np.median([f["relative_l2"] for f in rows])),
                "median_fit_seconds": float(np.median([f["fit_seconds"] for f in rows])),
                "highest_evidence": int(wins),
                "fits": rows,
            }
            results.append(summary)
            print(
                f"{family:>9} {noise:>5.0%} {k:>20} {summary['contains_truth']:>3}/{len(rows):<2} "
                f"{summary['median_alpha']:>9.4f} {summary['median_relative_l2']:>8.2e} "
                f"{summary['median_fit_seconds']:>6.2f} {wins:>10}/{len(rows)}",
                flush=True,
            )
    write_json(args.out, {"seeds": args.seeds, "rows": results})


if __name__ == "__main__":
    main()
