"""Calibration of the uncertainty in a PDE coefficient: Laplace against NUTS.

Raissi et al.'s inverse heat problem (u = exp(-t) sin(2 pi x), u_t = alpha u_xx + f,
alpha = 1; 20 u and 20 f Latin-hypercube points, alpha learned from 2), with 1%
Gaussian noise (``--noise 0.01``; ``--noise 0`` for the noise-free case, where
``--noise-floor 1e-4`` bounds both noise variances from below), SE kernel,
default settings, one design and noise draw per seed. For each seed: the 95%
interval of alpha from the Laplace approximation (ML-II +- 1.96 std) and from NUTS
(``model.sample`` with its defaults: 4 chains x 1000 draws after 500 burn-in, the
2.5% and 97.5% quantiles), whether each contains 1, their widths, u's relative L2
error and 95% band coverage on a 50 x 50 grid (ML-II's predictive against the
mixture over 100 thinned draws), the largest R-hat, alpha's ESS per second, the
divergences and the wall times. Prints a table, writes JSON.

    python benchmarks/calibration.py --seeds 20 --noise 0.01 --out results/calibration.json
"""

import argparse
import time
import warnings

import numpy as np
from _output import write_json
from raissi_inverse import design, solution

import pigp


def case(seed: int, noise: float, floor: float = 0.0) -> dict:
    X_u, X_f = design(seed)
    rng = np.random.default_rng(seed)
    y_u, y_f = solution(X_u)[0], solution(X_f)[1]
    y_u = y_u + noise * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(len(y_u))
    y_f = y_f + noise * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(len(y_f))
    alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
    noises = {name: pigp.Parameter(1e-3, lower=floor, name=name) for name in ("noise_u", "noise_f")}
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(diffusivity=alpha), **noises
    )
    start = time.perf_counter()
    model.fit(X_u, y_u, X_f, y_f)
    fit_seconds = time.perf_counter() - start
    X, _ = pigp.plotting.grid(50)
    u = solution(X)[0]

    def accuracy(mean, var):
        return {
            "relative_l2": float(np.linalg.norm(mean - u) / np.linalg.norm(u)),
            "coverage_95": float(np.mean(np.abs(mean - u) <= 1.959964 * np.sqrt(var))),
        }

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        std = float(model.parameter_uncertainty()["operator.diffusivity"])
        estimate = float(alpha.numpy())
        laplace = {
            "estimate": estimate,
            "low": estimate - 1.959964 * std,
            "high": estimate + 1.959964 * std,
            **accuracy(*model.predict(X)),
        }
        start = time.perf_counter()
        samples = model.sample(seed=seed)
        sample_seconds = time.perf_counter() - start
        draws = samples["operator.diffusivity"].ravel()
        low, high = np.quantile(draws, [0.025, 0.975])
        nuts = {
            "mean": float(draws.mean()),
            "low": float(low),
            "high": float(high),
            **accuracy(*model.predict(X, samples=samples, max_draws=100)),
            "max_rhat": max(float(np.max(r)) for r in samples.rhat.values()),
            "alpha_ess_per_second": float(samples.ess["operator.diffusivity"]) / sample_seconds,
            "divergences": samples.divergences,
            "seconds": sample_seconds,
        }
    for result in (laplace, nuts):
        result["contains_truth"] = bool(result["low"] <= 1.0 <= result["high"])
        result["width"] = result["high"] - result["low"]
    return {
        "seed": seed,
        "noise": noise,
        "noise_floor": floor,
        "fit_seconds": fit_seconds,
        "laplace": laplace,
        "nuts": nuts,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.01)
    parser.add_argument(
        "--noise-floor", type=float, default=0.0, help="lower bound of both noise variances"
    )
    parser.add_argument("--out", default="results/calibration.json")
    args = parser.parse_args()
    rows = []
    print(
        f"{'seed':>4} {'Laplace in':>10} {'width':>8} {'NUTS in':>8} {'width':>8} "
        f"{'u cov ML':>8} {'u cov NUTS':>10} {'R-hat':>6} {'div':>4} {'NUTS s':>7}"
    )
    for seed in range(args.seeds):
        r = case(seed, args.noise, args.noise_floor)
        rows.append(r)
        la, nu = r["laplace"], r["nuts"]
        print(
            f"{seed:>4} {str(la['contains_truth']):>10} {la['width']:>8.2e} "
            f"{str(nu['contains_truth']):>8} {nu['width']:>8.2e} {la['coverage_95']:>8.3f} "
            f"{nu['coverage_95']:>10.3f} {nu['max_rhat']:>6.3f} {nu['divergences']:>4} "
            f"{nu['seconds']:>7.1f}",
            flush=True,
        )
    summary = {
        "laplace_contains": sum(r["laplace"]["contains_truth"] for r in rows),
        "nuts_contains": sum(r["nuts"]["contains_truth"] for r in rows),
        "laplace_u_coverage_pooled": float(np.mean([r["laplace"]["coverage_95"] for r in rows])),
        "nuts_u_coverage_pooled": float(np.mean([r["nuts"]["coverage_95"] for r in rows])),
        "max_rhat": max(r["nuts"]["max_rhat"] for r in rows),
        "max_nuts_seconds": max(r["nuts"]["seconds"] for r in rows),
    }
    print(
        f"\nalpha's 95% interval contains 1: Laplace {summary['laplace_contains']}/{len(rows)}, "
        f"NUTS {summary['nuts_contains']}/{len(rows)}; u band coverage pooled: "
        f"ML-II {summary['laplace_u_coverage_pooled']:.3f}, NUTS "
        f"{summary['nuts_u_coverage_pooled']:.3f}; max R-hat {summary['max_rhat']:.3f}; "
        f"slowest NUTS run {summary['max_nuts_seconds']:.1f} s"
    )
    write_json(args.out, {"rows": rows, "summary": summary})


if __name__ == "__main__":
    main()
