"""Two fields at 480 values: plane linear elasticity, its time and peak memory.

Displacements u, v on [0, 1]^2 (a kernel each), Lame coefficients lam and mu learned;
the Navier-Cauchy equations

    (lam + 2 mu) u_xx + mu u_yy + (lam + mu) v_xy = f_x
    mu v_xx + (lam + 2 mu) v_yy + (lam + mu) u_xy = f_y

at 160 points each, u and v at 80 sensors each (1% noise): 480 values. Manufactured
u = sin(pi x) cos(pi y), v = cos(pi x) sin(pi y) / 2 with lam = 1, mu = 0.5. Each
stage runs in its own fresh process so that its peak resident memory is its own:
``fit`` and then ``parameter_uncertainty``, with the process's peak
(``pigp.memory.peak_bytes``) after each, against ``pigp.memory``'s estimate.

    python benchmarks/elasticity.py --out benchmarks/results/elasticity.json
    python benchmarks/elasticity.py --optimizer adam+lbfgs \
        --out benchmarks/results/elasticity_adam.json
"""

import argparse
import json
import subprocess
import sys
import time

import numpy as np

LAM, MU, A = 1.0, 0.5, np.pi


def solution(X) -> dict:
    x, y = X[:, 0], X[:, 1]
    u, v = np.sin(A * x) * np.cos(A * y), 0.5 * np.cos(A * x) * np.sin(A * y)
    u_xy, v_xy = (
        -(A**2) * np.cos(A * x) * np.sin(A * y),
        -0.5 * A**2 * np.sin(A * x) * np.cos(A * y),
    )
    f_x = (LAM + 2 * MU) * (-(A**2) * u) + MU * (-(A**2) * u) + (LAM + MU) * v_xy
    f_y = MU * (-(A**2) * v) + (LAM + 2 * MU) * (-(A**2) * v) + (LAM + MU) * u_xy
    return {"u": u, "v": v, "f_x": f_x, "f_y": f_y}


def model_and_data(seed: int = 0, sensors: int = 80, collocation: int = 160):
    import pigp
    from pigp.operators import D, field

    rng = np.random.default_rng(seed)
    X_s, X_c = rng.uniform(size=(sensors, 2)), rng.uniform(size=(collocation, 2))
    truth_s, truth_c = solution(X_s), solution(X_c)
    lam = pigp.Parameter(2.0, positive=True, name="lam")
    mu = pigp.Parameter(1.0, positive=True, name="mu")
    u, v = field("u"), field("v")
    xx, yy, xy = D("x", 2), D("y", 2), D({"x": 1, "y": 1})
    momentum_x = ((lam + 2 * mu) * xx + mu * yy) @ u + ((lam + mu) * xy) @ v
    momentum_y = (mu * xx + (lam + 2 * mu) * yy) @ v + ((lam + mu) * xy) @ u
    ops = {
        name: op.with_dims("x", "y")
        for name, op in (("u", u), ("v", v), ("momentum_x", momentum_x), ("momentum_y", momentum_y))
    }

    def noisy(y):
        return y + 0.01 * np.sqrt(np.mean(y**2)) * rng.standard_normal(len(y))

    observations = [
        pigp.Observations(X_s, noisy(truth_s["u"]), ops["u"], name="sensors_u"),
        pigp.Observations(X_s, noisy(truth_s["v"]), ops["v"], name="sensors_v"),
        pigp.Observations(X_c, truth_c["f_x"], ops["momentum_x"], name="momentum_x"),
        pigp.Observations(X_c, truth_c["f_y"], ops["momentum_y"], name="momentum_y"),
    ]
    kernels = {"u": pigp.kernels.SquaredExponential(), "v": pigp.kernels.SquaredExponential()}
    model = pigp.PIGP(kernels, ops["momentum_x"], dims=("x", "y"))
    return model, observations


def peak_gb() -> float:
    import pigp

    return pigp.memory.peak_bytes() / 1e9


def stage(which: str, seed: int, optimizer: str | None = None) -> dict:
    """One process: fit (and Laplace where asked), the peaks after each."""
    import warnings

    import pigp

    model, observations = model_and_data(seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(observations=observations, optimizer=optimizer)
    out = {"fit_seconds": time.perf_counter() - start, "peak_after_fit_gb": peak_gb()}
    out["log_marginal_likelihood"] = float(model.log_marginal_likelihood())
    values = model.parameter_values()
    out.update(lam=values["operator.lam"], mu=values["operator.mu"], iterations=len(model.history))
    G = np.stack(np.meshgrid(np.linspace(0, 1, 30), np.linspace(0, 1, 30)), -1).reshape(-1, 2)
    truth = solution(G)
    for name in ("u", "v"):
        mean, var = model.predict(G, output=name)
        error = np.abs(mean - truth[name])
        out[f"{name}_relative_l2"] = float(np.linalg.norm(error) / np.linalg.norm(truth[name]))
        out[f"{name}_coverage_95"] = float(np.mean(error <= 1.96 * np.sqrt(var)))
    if which == "laplace":
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            std = model.parameter_uncertainty()
        out["laplace_seconds"] = time.perf_counter() - start
        out["peak_after_laplace_gb"] = peak_gb()
        out["std_lam"], out["std_mu"] = std["operator.lam"], std["operator.mu"]
        out["fit_and_laplace_seconds"] = out["fit_seconds"] + out["laplace_seconds"]
    out["estimate_gb"] = pigp.memory.fit_bytes(sum(model.data.sizes), 2) / 1e9
    out["optimizer"] = optimizer or "default"
    out["values"] = sum(model.data.sizes)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/elasticity.json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stage", choices=["fit", "laplace"], default=None)
    parser.add_argument(
        "--optimizer",
        default=None,
        choices=["adam", "lbfgs", "adam+lbfgs"],
        help="fit's optimizer (default: the plan's, L-BFGS-B alone for several fields)",
    )
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.seed, args.optimizer)))
        return
    done = subprocess.run(
        [sys.executable, __file__, "--stage", "laplace", "--seed", str(args.seed)]
        + (["--optimizer", args.optimizer] if args.optimizer else []),
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for key, value in result.items():
        print(f"{key:>22}: {value:.4g}" if isinstance(value, float) else f"{key:>22}: {value}")
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from common import write_json

    write_json(args.out, result)


if __name__ == "__main__":
    main()
