"""Do intervals and bands hold beyond the single-field heat family? Twenty seeds of four
model kinds, each fitted as the docs' default workflow writes it.

    python benchmarks/calibration_kinds.py --seeds 20
    python benchmarks/calibration_kinds.py --kinds fields --seeds 3

Kinds (one design and noise draw per seed; noise is Gaussian with std a share of each
set's root mean square):

- ``fields``: two fields, ``u_t = D u_xx - a u + c v`` and ``v_t = D v_xx + c u - a v``
  (D = 0.1, a = 1 and c = 0.5 learned from 0.5 and 0.2), the closed form of
  ``pigp.experiments.systems.reaction_diffusion_solution``; 120 values each of u and v
  at 1% noise and both equations (zero, exact) at 120 collocation points, 480 values;
  a squared exponential per field; the equations conditioned on
  (``condition=True``), as the guide says for a homogeneous equation with noisy
  sensors. ``fields-counted``: the same with the equations' zeros counted as evidence.
- ``sparse``: ``SparsePIGP`` (M = 64) on u_t = alpha u_xx + f in (x, t), alpha = 0.1
  learned from 0.2, u three modes in x (``benchmarks/heat_large.py``'s problem), 600 u
  and 600 f values at 1% noise; Matern 5/2.
- ``nonlinear``: Fisher-KPP's r (``pigp.experiments.reaction``), learned from 1 by
  Gauss-Newton: 150 u values at 1% noise, the equation at 400 points, 60 exact initial
  and wall values; a squared exponential, u's noise learned.
- ``coefficient``: 1-D Darcy, ``-(a u')' = f`` with ``a = exp(theta x)`` (theta = 1.2
  learned from 0.5, read only inside a and a'), u = sin(pi x): 10 u values at 1% noise,
  f at 25 points at 1%; a squared exponential.

Each row: the coefficients, their 95% Laplace intervals (``parameter_intervals``) and
whether they hold the truth (an infinite interval, of a coefficient the fit left at a
bound, does not count as holding), u's relative L2 error and the share of a grid inside u's
95% band (``predict``'s variance), the warnings the fit gave, and the time. The summary
counts intervals that hold over the seeds and gives the band coverage's median and
mean (the band holds the truth at one seed's every point at once where a coefficient's
error dominates, so a seed's coverage is near 1 or near 0 and the mean over seeds is
what a 95% band should reach).
"""

import argparse
import time
import warnings

import numpy as np
from common import peak_gb, write_json

from pigp.experiments.report import accuracy
from pigp.experiments.systems import unit_grid

Z95 = 1.959964
#: u's grid: 50 x 50 points of [0, 1]^2, columns (x, t).
GRID = unit_grid(50)


def _noisy(values, share, rng):
    return values + share * float(np.sqrt(np.mean(values**2))) * rng.standard_normal(values.shape)


def _key(values: dict, name: str) -> str:
    (key,) = [k for k in values if k.split(".")[-1] == name]
    return key


def _coefficients(model, truth: dict) -> dict:
    values, intervals = model.parameter_values(), model.parameter_intervals()
    out = {}
    for name, true in truth.items():
        key = _key(values, name)
        low, high = (float(v) for v in intervals[key])
        value = float(np.asarray(values[key]))
        out[name] = {
            "value": value,
            "low": low,
            "high": high,
            "holds": bool(low <= true <= high and np.isfinite(high - low)),
            "relative_error": abs(value - true) / abs(true),
            "sigmas": (value - true) / ((high - low) / (2 * Z95)),
        }
    return out


def _band(mean, var, truth) -> dict:
    found = accuracy(mean, var, truth)
    return {"relative_l2": found["relative_l2"], "coverage": found["coverage_95"]}


def fields(seed: int, conditioned: bool = True) -> tuple:
    from scipy.stats import qmc

    import pigp
    from pigp.experiments import systems

    rng = np.random.default_rng(seed)
    X_s = rng.uniform(0, 1, (120, 2))
    X_c = qmc.Halton(2, scramble=True, seed=seed).random(120)
    truth = systems.reaction_diffusion_solution(X_s)
    a = pigp.Parameter(0.5, positive=True, name="a")
    c = pigp.Parameter(0.2, positive=True, name="c")
    ops = systems.reaction_diffusion_operators(0.1, decay=a, coupling=c)
    kernels = {name: pigp.kernels.SquaredExponential() for name in ("u", "v")}
    model = pigp.PIGP(kernels, ops["equation_u"], dims=("x", "t"))
    zeros = np.zeros(len(X_c))
    observations = [
        pigp.Observations(X_s, _noisy(truth["u"], 0.01, rng), ops["u"], name="sensors_u"),
        pigp.Observations(X_s, _noisy(truth["v"], 0.01, rng), ops["v"], name="sensors_v"),
        *(
            pigp.Observations(X_c, zeros, ops[name], 0, name, condition=conditioned)
            for name in ("equation_u", "equation_v")
        ),
    ]
    model.fit(observations=observations)
    mean, var = model.predict(GRID, output="u")
    exact = systems.reaction_diffusion_solution(GRID)["u"]
    return model, {"a": 1.0, "c": 0.5}, _band(mean, var, exact)


def sparse(seed: int) -> tuple:
    import heat_large

    import pigp

    X_u, y_u, X_f, y_f = heat_large.data(1200, 1, seed=seed)
    alpha = pigp.Parameter(0.2, positive=True, name="alpha")
    model = pigp.SparsePIGP(pigp.kernels.Matern52(), heat_large.operator(alpha, 1), num_inducing=64)
    model.fit(X_u, y_u, X_f, y_f)
    mean, var = model.predict(GRID)
    return model, {"alpha": heat_large.ALPHA}, _band(mean, var, heat_large.solution(GRID)[0])


def nonlinear(seed: int) -> tuple:
    import pigp
    from pigp.experiments import reaction

    data = reaction.design("fisher_kpp", seed=seed)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.3]),
        reaction.equation("fisher_kpp", {"r": 1.0}),
        noise_u=1e-4,
    )
    boundary = pigp.Observations(data["X_b"], data["y_b"], name="boundary")
    model.fit(data["X_u"], data["y_u"], data["X_f"], data["y_f"], observations=[boundary])
    mean, var = model.predict(GRID)
    return model, {"r": 2.0}, _band(mean, var, reaction.reference("fisher_kpp", GRID))


def coefficient(seed: int) -> tuple:
    import tensorflow as tf

    import pigp
    from pigp.operators import D

    truth = 1.2
    theta = pigp.Parameter(0.5, name="theta")
    a = lambda X: tf.exp(theta.value(X.dtype) * X[:, 0])  # noqa: E731
    a_x = lambda X: theta.value(X.dtype) * a(X)  # noqa: E731
    darcy = (-(a * D("x", 2)) - a_x * D("x")).with_dims("x")
    rng = np.random.default_rng(seed)
    x_u = rng.uniform(size=(10, 1))
    x_f = np.linspace(0, 1, 25)[:, None]
    x = x_f[:, 0]
    f = np.exp(truth * x) * (np.pi**2 * np.sin(np.pi * x) - truth * np.pi * np.cos(np.pi * x))
    y_u = _noisy(np.sin(np.pi * x_u[:, 0]), 0.01, rng)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), darcy)
    model.fit(x_u, y_u, x_f, _noisy(f, 0.01, rng))
    grid = np.linspace(0, 1, 201)[:, None]
    mean, var = model.predict(grid)
    return model, {"theta": truth}, _band(mean, var, np.sin(np.pi * grid[:, 0]))


KINDS = {
    "fields": fields,
    "fields-counted": lambda seed: fields(seed, conditioned=False),
    "sparse": sparse,
    "nonlinear": nonlinear,
    "coefficient": coefficient,
}


def row(kind: str, seed: int) -> dict:
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, truth, band = KINDS[kind](seed)
        coefficients = _coefficients(model, truth)
    return {
        "kind": kind,
        "seed": seed,
        "coefficients": coefficients,
        **band,
        "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught}),
        "seconds": time.perf_counter() - start,
    }


def summary(rows: list) -> dict:
    out = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [r for r in rows if r["kind"] == kind]
        coverage = np.array([r["coverage"] for r in mine])
        out[kind] = {
            "seeds": len(mine),
            "holds": {
                name: int(sum(r["coefficients"][name]["holds"] for r in mine))
                for name in mine[0]["coefficients"]
            },
            "coverage_median": float(np.median(coverage)),
            "coverage_mean": float(np.mean(coverage)),
            "coverage_in_0.8_0.99": int(np.sum((coverage >= 0.8) & (coverage <= 0.99))),
            "relative_l2_median": float(np.median([r["relative_l2"] for r in mine])),
            "seconds_median": float(np.median([r["seconds"] for r in mine])),
        }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--out", default="benchmarks/results/calibration_kinds.json")
    args = parser.parse_args()
    rows = []
    for kind in args.kinds:
        for seed in range(args.first, args.first + args.seeds):
            r = row(kind, seed)
            rows.append(r)
            cells = "  ".join(
                f"{n} {c['value']:.4g} [{c['low']:.4g}, {c['high']:.4g}] {c['sigmas']:+.1f}sd"
                for n, c in r["coefficients"].items()
            )
            print(
                f"{kind:<12}{seed:>4}  {cells}  u {r['relative_l2']:.2e} band {r['coverage']:.3f}"
                f"  {r['seconds']:.0f} s  warnings {len(r['warnings'])}",
                flush=True,
            )
            write_json(args.out, {"rows": rows, "summary": summary(rows), "peak_gb": peak_gb()})
    print()
    for kind, s in summary(rows).items():
        print(kind, s)


if __name__ == "__main__":
    main()
