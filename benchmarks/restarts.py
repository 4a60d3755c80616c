"""Which default fits ``fit``'s restarts change: the calibration families, with and without.

Fits the documented default workflow (``benchmarks/calibration.py``'s ``heat_model``: a
squared exponential, alpha learned from 2, the noises left to ``fit``) on the everyday,
cosine and slow families, noise-free, at 1% and at 5% noise, 20 seeds each, twice: as
``fit`` does today, and with the third start off (``FitPlan(coefficient_restart_start=
None``: the coefficients started where the user started them in every start). For each fit:
alpha, the log marginal likelihood and what ``model.noise_restart`` recorded; then the fits
that differ. Prints a table, writes JSON.

    python benchmarks/restarts.py --out results/restarts.json
"""

import argparse
import warnings

import numpy as np
from _output import write_json
from calibration import heat_model, problem

from pigp.fitting import FitPlan

FAMILIES = ("everyday", "cosine", "slow")
NOISES = (0.0, 0.01, 0.05)


def fit(family: str, noise: float, seed: int, plan: FitPlan) -> dict:
    X_u, y_u, X_f, y_f = problem(family, seed, noise)
    model, alpha = heat_model(family)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_u, y_u, X_f, y_f, plan=plan)
    restart = model.noise_restart
    return {
        "family": family,
        "noise": noise,
        "seed": seed,
        "alpha": float(alpha.numpy()),
        "log_marginal_likelihood": float(model.log_marginal_likelihood()),
        "restart": None
        if restart is None
        else {
            "sets": list(restart.sets),
            "first": restart.first,
            "restart": restart.restart,
            "coefficients": restart.coefficients,
            "kept": restart.kept,
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", default="results/restarts.json")
    args = parser.parse_args()
    runs = {}
    for label, plan in (
        ("today", FitPlan()),
        ("no third start", FitPlan(coefficient_restart_start=None)),
    ):
        runs[label] = [
            fit(family, noise, seed, plan)
            for family in FAMILIES
            for noise in NOISES
            for seed in range(args.seeds)
        ]
    restarted = [r for r in runs["today"] if r["restart"] is not None]
    third = [r for r in restarted if r["restart"]["coefficients"] is not None]
    differ = []
    for now, before in zip(runs["today"], runs["no third start"]):
        same_alpha = np.isclose(now["alpha"], before["alpha"], rtol=1e-6, atol=0)
        same_evidence = np.isclose(
            now["log_marginal_likelihood"], before["log_marginal_likelihood"], rtol=0, atol=1e-6
        )
        if not (same_alpha and same_evidence):
            differ.append({"today": now, "no third start": before})
    print(
        f"{len(runs['today'])} fits; {len(restarted)} restarted; {len(third)} ran the third start"
    )
    print(f"{'family':>9} {'noise':>5} {'seed':>4} {'alpha':>9} {'LML':>9} {'kept':>12}")
    for r in restarted:
        print(
            f"{r['family']:>9} {r['noise']:>5} {r['seed']:>4} {r['alpha']:>9.5f} "
            f"{r['log_marginal_likelihood']:>9.2f} {r['restart']['kept']:>12}"
        )
    print(f"fits that differ without the third start: {len(differ)}")
    for d in differ:
        a, b = d["today"], d["no third start"]
        print(
            f"  {a['family']} {a['noise']} seed {a['seed']}: alpha {b['alpha']:.5f} -> "
            f"{a['alpha']:.5f}, LML {b['log_marginal_likelihood']:.2f} -> "
            f"{a['log_marginal_likelihood']:.2f}"
        )
    write_json(args.out, {"seeds": args.seeds, "differ": differ, **runs})


if __name__ == "__main__":
    main()
