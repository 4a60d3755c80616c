"""Calibration of the uncertainty in a PDE coefficient: Laplace against NUTS.

Problem families (``--family``), each an inverse heat problem ``u_t = alpha u_xx + f``
on [0, 1]^2 with alpha learned from 2 and Gaussian noise of ``--noise`` times each
set's root mean square on u and f:

- ``raissi``: Raissi et al.'s (u = exp(-t) sin(2 pi x), alpha = 1; 20 u and 20 f
  Latin-hypercube points);
- ``everyday``: ``benchmarks/everyday.py``'s (u = sin(pi x) cos(pi t) + x (1 - x) / 2,
  alpha = 0.5; 20 u and 20 f uniform random points);
- ``cosine``: u = exp(-t) cos(2 pi x) + x t, alpha = 0.2; 20 u and 20 f uniform
  random points;
- ``slow``: u = exp(-2 t) sin(pi x) + x^2 t, alpha = 0.05 (the diffusion a small part
  of f); 20 u and 20 f uniform random points.

``raissi`` keeps its recorded settings (both noise variances given as parameters
from 1e-3, ``--noise-floor`` bounding them from below, for the noise-free case); the
other families follow the documented default workflow: no noise given (``fit``
decides), ``--kernel`` (``squared_exponential``, ``matern52``, ``spectral_mixture``,
``decaying``: ``Decaying(SquaredExponential())``, an amplitude exp(-rate t) learned,
or ``auto``), ``fit()``, ``parameter_uncertainty()``, ``sample()``. One design and
noise draw per seed. For each seed: the 95% interval of alpha from the Laplace
approximation (ML-II +- 1.96 std) and from NUTS (``model.sample`` with its defaults:
4 chains x 1000 draws after 500 burn-in, the 2.5% and 97.5% quantiles; ``--no-nuts``
skips it), whether each contains the truth, their widths, u's relative L2 error and
95% band coverage on a 50 x 50 grid (ML-II's predictive against the mixture over 100
thinned draws), the largest R-hat, alpha's ESS per second, the divergences and the
wall times. Prints a table, writes JSON.

    python benchmarks/calibration.py --seeds 20 --noise 0.01 --out results/calibration.json
    python benchmarks/calibration.py --family everyday --noise 0.05 --no-nuts

``--alpha-prior lognormal`` samples alpha under a log-normal of scale 2 centred on its
fitted value (``sample``'s default for a coefficient before b63e585) instead of
``sample``'s default, a normal centred on it with std ``max(alpha, 1)``, cut at 0;
``--alpha-prior normal`` gives that normal as alpha's own prior (the runs that led to the
default; the same density, sampled through another program).
``--target-accept P`` passes ``target_accept=P`` to ``sample`` (default 0.8).
``--only S ...`` runs those seeds alone (their rows as in a full run).

``--keep-nuts FILE`` refits every seed and recomputes the Laplace columns, keeping the
NUTS rows of an earlier run (``FILE``) of the same family, noise and kernel: it stops
unless each fit reproduces that run's estimate of alpha to 1e-4 (relative: far inside
the NUTS intervals, which are percents wide), so that the kept NUTS rows sampled the
same fitted model to that precision; each kept row records the estimate it sampled at.
"""

import argparse
import dataclasses
import json
import time
import warnings

import numpy as np
from common import write_json
from everyday import solution as everyday_solution
from raissi_inverse import design
from raissi_inverse import solution as raissi_solution

import pigp


def cosine_solution(X):
    x, t = X[:, 0], X[:, 1]
    u = np.exp(-t) * np.cos(2 * np.pi * x) + x * t
    u_t = -np.exp(-t) * np.cos(2 * np.pi * x) + x
    u_xx = -4 * np.pi**2 * np.exp(-t) * np.cos(2 * np.pi * x)
    return u, u_t - 0.2 * u_xx


def slow_solution(X):
    x, t = X[:, 0], X[:, 1]
    u = np.exp(-2 * t) * np.sin(np.pi * x) + x**2 * t
    u_t = -2 * np.exp(-2 * t) * np.sin(np.pi * x) + x**2
    u_xx = -(np.pi**2) * np.exp(-2 * t) * np.sin(np.pi * x) + 2 * t
    return u, u_t - 0.05 * u_xx


#: family -> (solution, true alpha)
FAMILIES = {
    "raissi": (raissi_solution, 1.0),
    "everyday": (everyday_solution, 0.5),
    "cosine": (cosine_solution, 0.2),
    "slow": (slow_solution, 0.05),
}

KERNELS = {
    "squared_exponential": pigp.kernels.SquaredExponential,
    "matern52": pigp.kernels.Matern52,
    "spectral_mixture": lambda: pigp.kernels.SpectralMixture(1),
    "decaying": lambda: pigp.kernels.Decaying(pigp.kernels.SquaredExponential()),
    "auto": lambda: "auto",
}


def problem(family: str, seed: int, noise: float) -> tuple:
    """``(X_u, y_u, X_f, y_f)`` of a family's seed, noise added."""
    solution = FAMILIES[family][0]
    if family == "raissi":
        X_u, X_f = design(seed)
        rng = np.random.default_rng(seed)
    else:
        rng = np.random.default_rng(seed)
        X_u, X_f = rng.uniform(0, 1, (20, 2)), rng.uniform(0, 1, (20, 2))
    y_u, y_f = solution(X_u)[0], solution(X_f)[1]
    y_u = y_u + noise * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(len(y_u))
    y_f = y_f + noise * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(len(y_f))
    return X_u, y_u, X_f, y_f


def heat_model(family: str, kernel: str = "squared_exponential", floor: float = 0.0):
    """``(model, alpha)``: a family's model before ``fit``, alpha learned from 2. Raissi's
    keeps its recorded settings (both noise variances parameters from 1e-3, bounded
    below by ``floor``); the others leave the noise to ``fit``."""
    alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
    if family == "raissi":
        noises = {n: pigp.Parameter(1e-3, lower=floor, name=n) for n in ("noise_u", "noise_f")}
    else:
        noises = {}
    return pigp.PIGP(KERNELS[kernel](), pigp.operators.heat(diffusivity=alpha), **noises), alpha


def case(
    seed: int,
    noise: float,
    floor: float = 0.0,
    family: str = "raissi",
    kernel: str = "squared_exponential",
    nuts: bool | dict = True,
    alpha_prior: str = "default",
    target_accept: float = 0.8,
) -> dict:
    """One seed's row. ``nuts``: sample with NUTS, or not, or a recorded NUTS row to keep.
    ``alpha_prior``: ``"default"`` (``sample``'s: a normal centred on the fitted alpha,
    std ``max(alpha, 1)``, cut at 0), ``"normal"`` (that normal given to alpha after
    the fit as its own prior) or ``"lognormal"`` (a log-normal of scale 2 centred on the
    fitted alpha, given so: ``sample``'s default before b63e585)."""
    solution, truth = FAMILIES[family]
    X_u, y_u, X_f, y_f = problem(family, seed, noise)
    model, alpha = heat_model(family, kernel, floor)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_u, y_u, X_f, y_f)
    fit_seconds = time.perf_counter() - start
    if alpha_prior in ("normal", "lognormal"):
        import tensorflow_probability as tfp

        value = float(alpha.numpy())
        alpha.prior = (
            tfp.distributions.TruncatedNormal(
                np.float64(value), np.float64(max(value, 1.0)), np.float64(0.0), np.float64(np.inf)
            )
            if alpha_prior == "normal"
            else tfp.distributions.LogNormal(np.float64(np.log(value)), np.float64(2.0))
        )
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
        low, high = model.parameter_intervals()["operator.diffusivity"]
        estimate = float(alpha.numpy())
        laplace = {
            "estimate": estimate,
            "low": low,
            "high": high,
            "std": std,
            "delta_low": estimate - 1.959964 * std,
            "delta_high": estimate + 1.959964 * std,
            "delta_contains_truth": bool(abs(estimate - truth) <= 1.959964 * std),
            **accuracy(*model.predict(X)),
        }
        results = {"laplace": laplace}
        if isinstance(nuts, dict):  # a recorded NUTS row: keep it
            results["nuts"] = nuts
        elif nuts:
            start = time.perf_counter()
            samples = model.sample(seed=seed, target_accept=target_accept)
            sample_seconds = time.perf_counter() - start
            draws = samples["operator.diffusivity"].ravel()
            low, high = np.quantile(draws, [0.025, 0.975])
            results["nuts"] = {
                "mean": float(draws.mean()),
                "low": float(low),
                "high": float(high),
                **accuracy(*model.predict(X, samples=samples, max_draws=100)),
                "max_rhat": max(float(np.max(r)) for r in samples.rhat.values()),
                "alpha_ess_per_second": float(samples.ess["operator.diffusivity"]) / sample_seconds,
                "divergences": samples.divergences,
                "seconds": sample_seconds,
            }
    for result in results.values():
        result["contains_truth"] = bool(result["low"] <= truth <= result["high"])
        result["width"] = result["high"] - result["low"]
    return {
        "seed": seed,
        "family": family,
        "kernel": kernel,
        "kernel_fitted": type(model.kernel).__name__,
        "kernel_choice": {k: float(v) for k, v in model.kernel_choice.items()},
        "rate": float(model.kernel.rate.numpy()) if hasattr(model.kernel, "rate") else None,
        "evidence": model.log_marginal_likelihood(),
        "noise_restart": None
        if model.noise_restart is None
        else dataclasses.asdict(model.noise_restart),
        "noise": noise,
        "noise_floor": floor,
        "fit_seconds": fit_seconds,
        **results,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), default="raissi")
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="squared_exponential")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--only", type=int, nargs="+", help="run these seeds only (of range(--seeds))"
    )
    parser.add_argument("--noise", type=float, default=0.01)
    parser.add_argument(
        "--noise-floor", type=float, default=0.0, help="lower bound of both noise variances"
    )
    parser.add_argument("--no-nuts", action="store_true", help="Laplace intervals only")
    parser.add_argument("--keep-nuts", help="a JSON of an earlier run whose NUTS rows to keep")
    parser.add_argument(
        "--alpha-prior",
        choices=("default", "normal", "lognormal"),
        default="default",
        help="NUTS's prior on alpha (see case)",
    )
    parser.add_argument("--target-accept", type=float, default=0.8, help="NUTS's target acceptance")
    parser.add_argument("--out", default="results/calibration.json")
    args = parser.parse_args()
    rows = []
    print(
        f"{'seed':>4} {'alpha':>9} {'Laplace in':>10} {'width':>8} {'NUTS in':>8} {'width':>8} "
        f"{'u L2':>8} {'u cov ML':>8} {'u cov NUTS':>10} {'R-hat':>6} {'div':>4} {'NUTS s':>7}"
    )
    kept = None
    if args.keep_nuts:
        with open(args.keep_nuts) as f:
            kept = json.load(f)["rows"]
    if args.only and args.keep_nuts:
        raise SystemExit("--only and --keep-nuts: choose one")
    for seed in args.only or range(args.seeds):
        nuts = not args.no_nuts
        if kept is not None:
            earlier = kept[seed]
            if (earlier["seed"], earlier.get("family", "raissi"), earlier["noise"]) != (
                seed,
                args.family,
                args.noise,
            ):
                raise SystemExit(f"--keep-nuts: row {seed} of {args.keep_nuts} is another case")
            nuts = earlier.get("nuts", False)
        r = case(
            seed,
            args.noise,
            args.noise_floor,
            args.family,
            args.kernel,
            nuts,
            args.alpha_prior,
            args.target_accept,
        )
        r["alpha_prior"] = args.alpha_prior
        r["target_accept"] = args.target_accept
        if kept is not None:
            before, now = kept[seed]["laplace"]["estimate"], r["laplace"]["estimate"]
            r["nuts"]["fitted_estimate"] = before  # the fit NUTS sampled
            if abs(now - before) > 1e-4 * abs(before):
                raise SystemExit(
                    f"--keep-nuts: seed {seed} fitted alpha {now!r}, the kept run {before!r}"
                )
        rows.append(r)
        la, nu = r["laplace"], r.get("nuts")
        line = (
            f"{seed:>4} {la['estimate']:>9.5f} {str(la['contains_truth']):>10} {la['width']:>8.2e} "
        )
        if nu is None:
            line += f"{'-':>8} {'-':>8} {la['relative_l2']:>8.2e} {la['coverage_95']:>8.3f}"
        else:
            line += (
                f"{str(nu['contains_truth']):>8} {nu['width']:>8.2e} {la['relative_l2']:>8.2e} "
                f"{la['coverage_95']:>8.3f} {nu['coverage_95']:>10.3f} {nu['max_rhat']:>6.3f} "
                f"{nu['divergences']:>4} {nu['seconds']:>7.1f}"
            )
        print(line, flush=True)
    summary = {
        "family": args.family,
        "kernel": args.kernel,
        "noise": args.noise,
        "target_accept": args.target_accept,
        "laplace_contains": sum(r["laplace"]["contains_truth"] for r in rows),
        "laplace_u_coverage_pooled": float(np.mean([r["laplace"]["coverage_95"] for r in rows])),
        "max_u_relative_l2": max(r["laplace"]["relative_l2"] for r in rows),
    }
    text = (
        f"\nalpha's 95% interval contains the truth: Laplace "
        f"{summary['laplace_contains']}/{len(rows)}"
    )
    summary["laplace_delta_contains"] = sum(r["laplace"]["delta_contains_truth"] for r in rows)
    if all("nuts" in r for r in rows):
        summary.update(
            nuts_contains=sum(r["nuts"]["contains_truth"] for r in rows),
            nuts_u_coverage_pooled=float(np.mean([r["nuts"]["coverage_95"] for r in rows])),
            max_rhat=max(r["nuts"]["max_rhat"] for r in rows),
            max_nuts_seconds=max(r["nuts"]["seconds"] for r in rows),
        )
        text += (
            f", NUTS {summary['nuts_contains']}/{len(rows)}; u band coverage pooled: "
            f"ML-II {summary['laplace_u_coverage_pooled']:.3f}, NUTS "
            f"{summary['nuts_u_coverage_pooled']:.3f}; max R-hat {summary['max_rhat']:.3f}; "
            f"slowest NUTS run {summary['max_nuts_seconds']:.1f} s"
        )
    print(text)
    write_json(args.out, {"rows": rows, "summary": summary})


if __name__ == "__main__":
    main()
