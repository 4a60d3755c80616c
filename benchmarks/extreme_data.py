"""Extreme but valid data: what a default fit gives, or the error it raises.

Cases (the heat problem u = e^-t sin(pi x), 20 u and 30 f points unless said):
inputs scaled to [0, 1e-3] and [0, 1e4] (u and f rescaled to stay a solution),
targets scaled to 1e-8 and 1e8, 1 u point and no f points, 5000 points
(2500 u + 2500 f, 3 Adam steps: the step is a 5000 x 5000 factorisation).
The same cases are asserted in tests/test_reliability.py.

    python benchmarks/extreme_data.py --out results/extreme_data.json
"""

import argparse
import time
import warnings

import numpy as np
from common import write_json

import pigp
from pigp.experiments import heat_design, heat_solution, relative_l2


def scaled_heat(scale_x, scale_y):
    X_u, X_f = heat_design(0, 30)
    u = lambda X: np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])  # noqa: E731
    f = lambda X: scale_y * u(X) * (-1.0 / scale_x + np.pi**2 / scale_x**2)  # noqa: E731
    X = np.random.default_rng(1).uniform(size=(200, 2))
    return (scale_x * X_u, scale_y * u(X_u), scale_x * X_f, f(X_f)), {}, scale_x * X, scale_y * u(X)


def one_point():
    X = np.array([[0.5, 0.0], [0.9, 0.9]])
    return ([[0.5, 0.0]], [1.0]), {}, X, np.array([1.0, np.nan])


def many_points():
    rng = np.random.default_rng(5)
    X_u, X_f = rng.uniform(size=(2500, 2)), rng.uniform(size=(2500, 2))
    X = rng.uniform(size=(500, 2))
    return (
        (X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1]),
        {"steps": 3, "optimizer": "adam"},
        X,
        heat_solution(X)[0],
    )


CASES = {
    "inputs in [0, 1e-3]": lambda: scaled_heat(1e-3, 1.0),
    "inputs in [0, 1e4]": lambda: scaled_heat(1e4, 1.0),
    "targets of size 1e-8": lambda: scaled_heat(1.0, 1e-8),
    "targets of size 1e8": lambda: scaled_heat(1.0, 1e8),
    "1 u point, 0 f points": one_point,
    "5000 points": many_points,
}


def run(name):
    data, options, X, truth = CASES[name]()
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), noise_u=1e-3, noise_f=1e-3
    )
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(*data, **options)
            mean, var = model.predict(X)
        except ValueError as error:
            return {"case": name, "outcome": f"ValueError: {error}"}
    known = np.isfinite(truth)
    return {
        "case": name,
        "outcome": "fitted",
        "seconds": time.perf_counter() - start,
        "finite": bool(np.all(np.isfinite(mean)) and np.all(np.isfinite(var))),
        "relative_l2": relative_l2(mean[known], truth[known]),
        "warnings": sorted({str(w.message) for w in caught}),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/extreme_data.json")
    args = parser.parse_args()
    rows = [run(name) for name in CASES]
    print(
        f"{'case':<24} {'outcome':<8} {'finite':>6} {'rel. L2 of u':>13} {'seconds':>8}  warnings"
    )
    for r in rows:
        if r["outcome"] != "fitted":
            print(f"{r['case']:<24} {r['outcome']}")
            continue
        print(
            f"{r['case']:<24} {r['outcome']:<8} {str(r['finite']):>6} {r['relative_l2']:>13.3g} "
            f"{r['seconds']:>8.1f}  {'; '.join(r['warnings']) or '-'}"
        )
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
