"""Reaction coefficients learned by Gauss-Newton from noisy u: found, or said not found.

Three problems of ``pigp.experiments.reaction`` (Fisher-KPP's r, Allen-Cahn's a,
Zeldovich's D and k), each from starts at 0.25, 0.5 and 2 times the truth (r = 2 from
0.5, 1 and 4): 150 u values with 1% noise, the equation at 400 points, 60 exact
initial and wall values; a squared exponential from lengthscales (0.2, 0.3) and u's
noise learned from 1e-4, as a user following the Burgers tutorial would write it.
Each row: the learned coefficients, their 95% Laplace intervals and whether they hold
the truth, u's relative L2 error on a 50 x 50 grid and its band's coverage, the learned
noise std against the true one, the coefficients the fit reported as not identified,
and the time.

``--frozen`` reruns the same fits with the linearised equation's right-hand side held
at each linearisation while the coefficients are learned (how fits ran before the
right-hand side moved with them; see ``pigp.operators.linearisation.Linearisation.target_shift``).

    python benchmarks/reaction_inverse.py --out benchmarks/results/reaction_inverse.json
"""

import argparse
import time
import warnings

import numpy as np
from common import write_json

STARTS = (0.25, 0.5, 2.0)


def run(name: str, factor: float, seed: int = 0, frozen: bool = False) -> dict:
    import pigp
    from pigp.experiments import reaction

    if frozen:
        from pigp.operators.linearisation import Linearisation

        Linearisation.moves_target = property(lambda self: False)
    truth = reaction.PROBLEMS[name]["truth"]
    data = reaction.design(name, seed=seed)
    equation = reaction.equation(name, {k: factor * v for k, v in truth.items()})
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.3]), equation, noise_u=1e-4
    )
    boundary = pigp.Observations(data["X_b"], data["y_b"], name="boundary")
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(data["X_u"], data["y_u"], data["X_f"], data["y_f"], observations=[boundary])
        intervals = model.parameter_intervals()
    seconds = time.perf_counter() - start
    values = model.parameter_values()
    (x0, x1), (t0, t1) = reaction.PROBLEMS[name]["x"], reaction.PROBLEMS[name]["t"]
    g = np.linspace(0, 1, 50)
    X = np.array([[x0 + (x1 - x0) * a, t0 + (t1 - t0) * b] for a in g for b in g])
    mean, var = model.predict(X)
    exact = reaction.reference(name, X)
    row = {
        "problem": name,
        "start": factor,
        "seed": seed,
        "frozen": frozen,
        "u_relative_l2": float(np.linalg.norm(mean - exact) / np.linalg.norm(exact)),
        "band_coverage": float(np.mean(np.abs(mean - exact) <= 1.96 * np.sqrt(var))),
        "noise_std": float(np.sqrt(values["noise_u"]) * model.y_scale),  # data units
        "true_noise_std": data["noise_std"],
        "unidentified": dict(model.unidentified),
        "held": list(model.held),
        "noise_restart": None
        if model.noise_restart is None
        else [model.noise_restart.first, model.noise_restart.restart, model.noise_restart.kept],
        "warnings": [str(w.message) for w in caught],
        "seconds": seconds,
        "coefficients": {},
    }
    for k, true in truth.items():
        value = float(values[f"operator.{k}"])
        low, high = (float(v) for v in intervals[f"operator.{k}"])
        row["coefficients"][k] = {
            "truth": true,
            "value": value,
            "relative_error": value / true - 1,
            "interval": [low, high],
            "holds": bool(low <= true <= high),
        }
    return row


def show(row: dict) -> None:
    parts = [
        f"{k} {c['value']:.4f} [{c['interval'][0]:.4f}, {c['interval'][1]:.4f}]"
        f"{' holds' if c['holds'] else ' MISSES'}"
        for k, c in row["coefficients"].items()
    ]
    print(
        f"{row['problem']:<11} start x{row['start']:<4g} {'frozen ' if row['frozen'] else ''}"
        f"{'; '.join(parts)}; u {row['u_relative_l2']:.2e}, band {row['band_coverage']:.0%}, "
        f"noise std {row['noise_std']:.1e} (true {row['true_noise_std']:.1e})"
        f"{', NOT IDENTIFIED' if row['unidentified'] else ''}, {row['seconds']:.0f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=["fisher_kpp", "allen_cahn", "zeldovich"])
    parser.add_argument("--starts", nargs="+", type=float, default=list(STARTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frozen", action="store_true")
    parser.add_argument("--out", default="benchmarks/results/reaction_inverse.json")
    args = parser.parse_args()
    rows = []
    for name in args.problems:
        for factor in args.starts:
            rows.append(run(name, factor, args.seed, args.frozen))
            show(rows[-1])
            write_json(args.out, {"rows": rows})


if __name__ == "__main__":
    main()
