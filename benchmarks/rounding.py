"""How far do the reported figures move when the data change in their last digits?

The noise-free fits of the README (Raissi et al.'s inverse problem, both kernels,
and the question's diagonal layout) drive the noise variances to their floor,
where the log marginal likelihood is set by the conditioning of K. Which of their
optima the optimiser reaches then depends on rounding. This script refits each
case with the data multiplied by ``1 + 1e-15 z`` (z standard normal, a few units
in the last place; replicate 0 unchanged) and reports the spread of each figure.
It runs against whichever pigp is imported, so two versions of the code can be
compared on the same perturbations (``--compare`` another run's JSON: pooled
medians and maxima per kernel, and in how many fits this run's figure is lower).

    python benchmarks/rounding.py --replicates 5 --out results/rounding.json
    PYTHONPATH=OTHER_CHECKOUT python benchmarks/rounding.py --out results/other.json
    python benchmarks/rounding.py --compare results/other.json --against results/rounding.json
"""

import argparse
import json
import os
import subprocess
import time

import numpy as np
from common import write_json
from raissi_inverse import KERNELS, fit

import pigp
from pigp.experiments import accuracy, heat_solution, relative_l2
from pigp.plotting import grid

RELATIVE = 1e-15


def perturbed(values, replicate: int, stream: int):
    """``values * (1 + 1e-15 z)``; replicate 0 returns them unchanged."""
    if replicate == 0:
        return values
    z = np.random.default_rng([replicate, stream]).standard_normal(values.shape)
    return values * (1.0 + RELATIVE * z)


def raissi(kernel: str, seed: int, replicate: int) -> dict:
    model, alpha, seconds, error = fit(
        seed,
        KERNELS[kernel](),
        lambda y_u, y_f: (perturbed(y_u, replicate, 0), perturbed(y_f, replicate, 1)),
    )
    return {
        "case": f"raissi {kernel} seed {seed}",
        "replicate": replicate,
        "alpha_error": abs(float(alpha.numpy()) - 1.0),
        "u_relative_l2": error,
        "log_marginal_likelihood": model.log_marginal_likelihood(),
        "fit_seconds": seconds,
    }


def diagonal(replicate: int) -> dict:
    """The question's layout (``pigp.experiments.heat.seed``'s fit)."""
    from pigp.parameters import softplus

    line_u, line_f = np.linspace(0.0, 1.0, 20), np.linspace(0.0, 1.0, 30)
    X_u, X_f = np.stack([line_u, line_u], 1), np.stack([line_f, line_f], 1)
    y_u = perturbed(heat_solution(X_u)[0], replicate, 0)
    y_f = perturbed(heat_solution(X_f)[1], replicate, 1)
    kernel = pigp.kernels.SquaredExponential.from_weights(softplus(0.5), softplus([-1.0, -3.0]))
    model = pigp.PIGP(kernel, pigp.operators.heat(diffusivity=1.0), noise_u=1e-3, noise_f=1e-3)
    start = time.perf_counter()
    model.fit(X_u, y_u, X_f, y_f)
    seconds = time.perf_counter() - start
    X, _ = grid(50)
    mean, var = model.predict(X)
    u_true = heat_solution(X)[0]
    far = np.abs(X[:, 0] - X[:, 1]) / np.sqrt(2.0) >= 0.2
    return {
        "case": "diagonal layout",
        "replicate": replicate,
        "u_relative_l2": relative_l2(model.predict(X_u)[0], heat_solution(X_u)[0]),
        "f_relative_l2": relative_l2(model.predict(X_f, output="f")[0], heat_solution(X_f)[1]),
        "far_relative_l2": relative_l2(mean[far], u_true[far]),
        "coverage": accuracy(mean, var, u_true)["coverage_95"],
        "log_marginal_likelihood": model.log_marginal_likelihood(),
        "fit_seconds": seconds,
    }


FIGURES = (
    "alpha_error",
    "u_relative_l2",
    "f_relative_l2",
    "far_relative_l2",
    "coverage",
    "log_marginal_likelihood",
)


def commit() -> str:
    """The git commit of the imported pigp's checkout ("" outside one)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(pigp.__file__)))
    try:
        run = subprocess.run(
            ["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        return ""
    return run.stdout.strip() if run.returncode == 0 else ""


def compare(other_path: str, this_path: str) -> None:
    """Pooled over seeds and replicates: median and max of each figure in both runs,
    and in how many fits (same case and replicate) ``this`` is lower."""
    other, this = (json.load(open(p))["rows"] for p in (other_path, this_path))
    head = ("kernel", "figure", "other med", "max", "this med", "max", "this lower")
    print(f"{head[0]:<28} {head[1]:<24} " + " ".join(f"{h:>10}" for h in head[2:]))
    for kernel in dict.fromkeys(r["case"].split(" seed")[0] for r in this):
        for f in FIGURES:
            pairs = [
                (a[f], b[f])
                for a in other
                for b in this
                if f in b
                and a["case"] == b["case"]
                and a["replicate"] == b["replicate"]
                and b["case"].split(" seed")[0] == kernel
            ]
            if not pairs:
                continue
            a, b = np.array(pairs).T
            figures = (np.median(a), a.max(), np.median(b), b.max())
            lower = f"{int((b < a).sum())}/{len(a)}"
            cells = " ".join(f"{v:>10.3e}" for v in figures)
            print(f"{kernel:<28} {f:<24} {cells} {lower:>10}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--cases", nargs="*", default=["squared_exponential", "spectral_mixture", "diagonal"]
    )
    parser.add_argument("--out", default="results/rounding.json")
    parser.add_argument("--compare", help="another run's JSON: compare it with --against")
    parser.add_argument("--against", default="results/rounding.json")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare, args.against)
        return
    rows = []
    for case in args.cases:
        for seed in range(1 if case == "diagonal" else args.seeds):
            for r in range(args.replicates):
                row = diagonal(r) if case == "diagonal" else raissi(case, seed, r)
                print(
                    {k: (round(v, 10) if isinstance(v, float) else v) for k, v in row.items()},
                    flush=True,
                )
                rows.append(row)
    summary = {}
    for name in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == name]
        summary[name] = {
            f: {
                "unperturbed": mine[0][f],
                "min": min(r[f] for r in mine),
                "max": max(r[f] for r in mine),
            }
            for f in FIGURES
            if f in mine[0]
        }
    print(f"{'case':<36} {'figure':<24} {'unperturbed':>12} {'min':>10} {'max':>10}")
    for name, figures in summary.items():
        for f, v in figures.items():
            print(
                f"{name:<36} {f:<24} {v['unperturbed']:>12.3e} {v['min']:>10.3e} {v['max']:>10.3e}"
            )
    write_json(
        args.out,
        {
            "pigp": pigp.__file__,
            "commit": commit(),
            "relative": RELATIVE,
            "rows": rows,
            "summary": summary,
        },
    )


if __name__ == "__main__":
    main()
