"""Numbers a refactoring must not change: write them, or compare two runs bit for bit.

Fits, with default settings: the heat example's noise-free case and its 1%-noise
draw of seed 0, the seed's diagonal layout, and Raissi et al.'s inverse problem
(seed 0, alpha learned from 2); records every parameter value, the posterior mean
and variance of u (and f where the experiment reports it) on the 50 x 50 grid,
and the Laplace std of alpha.

    python benchmarks/fingerprint.py --out before.npz      # on the old code
    python benchmarks/fingerprint.py --out after.npz --compare before.npz
"""

import argparse
import time

import numpy as np
from scipy.stats import qmc

import pigp
from pigp.experiments import heat_design, heat_solution, noisy_heat_data
from pigp.parameters import softplus
from pigp.plotting import grid


def fingerprint() -> dict:
    out = {}
    X, _ = grid(50)

    def record(name, model, outputs=("u",)):
        for key, value in model.parameter_values().items():
            out[f"{name}/param/{key}"] = np.asarray(value)
        for output in outputs:
            out[f"{name}/mean_{output}"], out[f"{name}/var_{output}"] = model.predict(X, output)

    def new(kernel=None, diffusivity=1.0):
        return pigp.PIGP(
            kernel or pigp.kernels.SquaredExponential(),
            pigp.operators.heat(diffusivity),
            noise_u=1e-3,
            noise_f=1e-3,
        )

    X_u, X_f = heat_design(0)
    record("heat", new().fit(X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1]), ("u", "f"))
    y_u, y_f = noisy_heat_data(X_u, X_f, 0.01, np.random.default_rng(0))
    record("heat_noisy", new().fit(X_u, y_u, X_f, y_f))
    g_u, g_f = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
    X_u, X_f = np.stack([g_u, g_u], 1), np.stack([g_f, g_f], 1)
    kernel = pigp.kernels.SquaredExponential.from_weights(softplus(0.5), softplus([-1.0, -3.0]))
    record(
        "seed", new(kernel).fit(X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1]), ("u", "f")
    )
    sampler = qmc.LatinHypercube(d=2, seed=0)
    X_u, X_f = sampler.random(20), sampler.random(20)
    u = lambda P: np.exp(-P[:, 1]) * np.sin(2 * np.pi * P[:, 0])  # noqa: E731
    model = new(diffusivity=pigp.Parameter(2.0, positive=True, name="diffusivity"))
    model.fit(X_u, u(X_u), X_f, (4 * np.pi**2 - 1) * u(X_f))
    record("raissi", model)
    out["raissi/std_alpha"] = np.asarray(model.parameter_uncertainty()["operator.diffusivity"])
    out["raissi/u_error"] = np.asarray(
        np.linalg.norm(out["raissi/mean_u"] - u(X)) / np.linalg.norm(u(X))
    )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="fingerprint.npz")
    parser.add_argument("--compare", default=None, help="an earlier run's file")
    args = parser.parse_args()
    start = time.perf_counter()
    values = fingerprint()
    np.savez(args.out, **values)
    alpha = float(values["raissi/param/operator.diffusivity"])
    print(
        f"{len(values)} arrays in {time.perf_counter() - start:.1f} s; Raissi seed 0: "
        f"|alpha - 1| = {abs(alpha - 1):.6g} (Laplace std {float(values['raissi/std_alpha']):.6g}),"
        f" u error {float(values['raissi/u_error']):.6g}"
    )
    if args.compare:
        before = np.load(args.compare)
        keys = sorted(set(before.files) | set(values))
        differ = [
            k
            for k in keys
            if k not in before.files or k not in values or not np.array_equal(before[k], values[k])
        ]
        print(
            f"compared with {args.compare}: {len(keys) - len(differ)} of {len(keys)} "
            "bit-identical" + "".join(f"\n  differs: {k}" for k in differ)
        )


if __name__ == "__main__":
    main()
