"""Noisy data passed without a noise to a nonlinear inverse problem: does the fit find
the coefficient, with an interval that holds, or say to give the noise?

    python benchmarks/nonlinear_noise.py --out benchmarks/results/nonlinear_noise.json

Each problem's u values carry Gaussian noise and are passed as ``X_u, y_u`` with no
``noise_u`` (and the initial and boundary values exact, also without a noise), as a user
who forgot the noise would write it. pigp fits the sets exact and with their noise
learned and keeps what the evidence says (``pigp.fitting.nonlinear_noise``); the row
records which it kept, the coefficient and its 95% Laplace interval, and any warning.

- ``burgers``: u_t + u u_x = nu u_xx, nu = 0.05 learned from 0.1; 120 u values at 0.5%
  noise, 250 collocation points, 60 boundary and initial values
  (``pigp.experiments.nonlinear``).
- ``fisher_kpp``: u_t = 0.01 u_xx + r u (1 - u), r = 2 learned from 1; 150 u values at 1%
  noise, 400 collocation points (``pigp.experiments.reaction``).
- ``allen_cahn``: u_t = 0.01 u_xx + a (u - u^3), a = 2 learned from 1; the same design.
"""

import argparse
import time
import warnings

import numpy as np
from common import write_json

import pigp
from pigp.experiments import reaction
from pigp.experiments.nonlinear import burgers_design, burgers_equation, burgers_reference


def burgers(seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    design = burgers_design(250, 60, seed)
    X_u = np.c_[rng.uniform(-1, 1, 120), rng.uniform(0, 1, 120)]
    clean = burgers_reference(X_u, 0.05)
    y_u = clean + 0.005 * np.std(clean) * rng.normal(size=len(clean))
    y_b = burgers_reference(design["X_b"], 0.05)
    nu = pigp.Parameter(0.1, positive=True)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.3]), burgers_equation(nu)
    )
    data = dict(X_u=X_u, y_u=y_u, X_f=design["X_f"], y_f=np.zeros(len(design["X_f"])))
    boundary = pigp.Observations(design["X_b"], y_b, name="boundary")
    return model, data, [boundary], "operator.nu", 0.05


def reaction_problem(name: str, seed: int) -> tuple:
    data = reaction.design(name, seed=seed)
    ((key, truth),) = reaction.PROBLEMS[name]["truth"].items()
    equation = reaction.equation(name, {key: 1.0})
    model = pigp.PIGP(pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.3]), equation)
    boundary = pigp.Observations(data["X_b"], data["y_b"], name="boundary")
    arguments = {k: data[k] for k in ("X_u", "y_u", "X_f", "y_f")}
    return model, arguments, [boundary], f"operator.{key}", truth


def row(problem: str, seed: int) -> dict:
    if problem == "burgers":
        model, data, observations, name, truth = burgers(seed)
    else:
        model, data, observations, name, truth = reaction_problem(problem, seed)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(**data, observations=observations)
        low, high = model.parameter_intervals()[name]
    seconds = time.perf_counter() - start
    value = float(model.parameter_values()[name])
    choice = model.noise_choice.get("u")
    said = [str(w.message) for w in caught if "without a noise" in str(w.message)]
    return {
        "problem": problem,
        "seed": seed,
        "truth": truth,
        "value": value,
        "relative_error": abs(value - truth) / truth,
        "interval": [float(low), float(high)],
        "holds": bool(low <= truth <= high),
        "kept": None if choice is None else choice.kept,
        "evidence_learned": None if choice is None else choice.learned,
        "evidence_exact": None if choice is None else choice.exact,
        "noise_std": float(np.sqrt(model.parameter_values()["noise_u"]) * model.y_scale),
        "warned": said,
        "unidentified": dict(model.unidentified),
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="*", default=["burgers", "fisher_kpp", "allen_cahn"])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/nonlinear_noise.json")
    args = parser.parse_args()
    rows = []
    print(f"{'problem':<12} seed {'value':>9} {'interval':>22} holds kept     warned seconds")
    for seed in range(args.seeds):
        for problem in args.problems:
            r = row(problem, seed)
            low, high = r["interval"]
            print(
                f"{problem:<12} {seed:>4} {r['value']:9.5f} [{low:9.5f}, {high:9.5f}] "
                f"{r['holds']!s:>5} {r['kept']!s:<8} {bool(r['warned'])!s:>6} {r['seconds']:7.1f}",
                flush=True,
            )
            rows.append(r)
            write_json(args.out, {"rows": rows, "problems": args.problems, "seeds": args.seeds})


if __name__ == "__main__":
    main()
