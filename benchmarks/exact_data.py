"""How a noise the user does not give is decided: the choices, on every example problem.

Each problem is fitted noise-free and with 1% Gaussian noise (of each data set's RMS) under
each choice of default for a noise variance the user did not give:

- ``learned 1e-3``: learned from 1e-3 (pigp's default before exact data were decided);
- ``learned 1e-6``: learned from a lower start;
- ``prior``: learned from 1e-3 under a half-Cauchy prior of scale 1e-3 on the variance
  (standardised units), so a flat likelihood leaves it near 0;
- ``decided``: learned from 1e-3, then each set treated as exact where that costs at most
  ``EXACT_EVIDENCE`` nats of log marginal likelihood (``pigp.fitting.noise``; today's
  default).

The problems: the five of ``pigp.experiments.problems`` (seed 0), the heat example's design
(u on three sides, f at 30 points), ``u'' - 4u = f`` on [0, 1] with u at both ends and f at
15 points, and ``u_t + c u_x - nu u_xx = 0`` with c = -0.5 and nu = 0.1 learned (30 u and
30 f points). Errors against the exact solutions; prints a table and writes JSON.

    python benchmarks/exact_data.py --out results/exact_data.json

``--cost`` measures instead what the decision costs: new models of one structure fitted on the
heat example's design (noise-free and 1% noise), with and without the decision, alternately,
after a warm-up (``--out results/exact_data_cost.json``).
"""

import argparse
import contextlib
import io
import tempfile
import time

import numpy as np
from common import write_json

import pigp
from pigp import data as pigp_data
from pigp.experiments import add_noise, heat_design, heat_solution
from pigp.experiments.problems import PROBLEMS
from pigp.experiments.report import accuracy
from pigp.fitting import FitPlan, defaults
from pigp.operators import D, Identity

CHOICES = ("learned 1e-3", "learned 1e-6", "prior", "decided")


@contextlib.contextmanager
def choice(name: str):
    """pigp's defaults set to ``name``'s within the block."""
    saved = (pigp_data.NOISE_START, pigp_data.noise_parameter)
    original = pigp_data.noise_parameter
    # The choices it replaced, as they were: no exact decision and one start (today's
    # default restarts a fit whose learned noise explains over 1% of its data,
    # ``FitPlan.noise_restart``).
    plan = FitPlan() if name == "decided" else FitPlan(exact_evidence=None, noise_restart=None)
    pigp_data.NOISE_START = 1e-6 if name == "learned 1e-6" else 1e-3
    if name == "prior":
        import tensorflow_probability as tfp

        def with_prior(noise, label):
            if noise is not None:
                return original(noise, label)
            prior = tfp.distributions.HalfCauchy(np.float64(0.0), np.float64(1e-3))
            return pigp.Parameter(1e-3, positive=True, name=label, prior=prior), False

        pigp_data.noise_parameter = with_prior
        import pigp.engines.model as base

        base.noise_parameter = with_prior
    try:
        with defaults(plan):
            yield
    finally:
        pigp_data.NOISE_START, pigp_data.noise_parameter = saved
        import pigp.engines.model as base

        base.noise_parameter = saved[1]


def _fit(model, data, X, truth, level, seed):
    X_u, y_u, X_f, y_f = data
    rng = np.random.default_rng(seed + 7919)
    y_u, y_f = add_noise(y_u, level, rng), add_noise(y_f, level, rng)
    start = time.perf_counter()
    model.fit(X_u, y_u, X_f, y_f)
    seconds = time.perf_counter() - start
    mean, var = model.predict(X)
    return {**accuracy(mean, var, truth), "fit_seconds": seconds}


def heat(level):
    X_u, X_f = heat_design(0)
    g = np.linspace(0, 1, 50)
    X = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
    data = (X_u, heat_solution(X_u)[0], X_f, heat_solution(X_f)[1])
    return _fit(model, data, X, heat_solution(X)[0], level, 0)


def reaction1d(level):
    u = lambda x: np.sin(3 * x) + x**2
    f = lambda x: -9 * np.sin(3 * x) + 2 - 4 * u(x)
    X_b, X_f = np.array([[0.0], [1.0]]), np.linspace(0, 1, 15)[:, None]
    x = np.linspace(0, 1, 201)[:, None]
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D("x", 2) - 4.0 * Identity, dims=("x",))
    data = (X_b, u(X_b[:, 0]), X_f, f(X_f[:, 0]))
    return _fit(model, data, x, u(x[:, 0]), level, 0)


def advection_negative(level):
    from scipy.stats import qmc

    c_true, nu_true, k = -0.5, 0.1, np.pi
    u = lambda X: np.exp(-nu_true * k**2 * X[:, 1]) * np.sin(k * (X[:, 0] - c_true * X[:, 1]))
    X_u = qmc.LatinHypercube(d=2, seed=0).random(30)
    X_f = qmc.LatinHypercube(d=2, seed=1000).random(30)
    c, nu = pigp.Parameter(1.0, name="c"), pigp.Parameter(0.5, name="nu")
    operator = (D("t") + c * D("x") - nu * D("x", 2)).with_dims("x", "t")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), operator)
    g = np.linspace(0, 1, 50)
    X = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    out = _fit(model, (X_u, u(X_u), X_f, np.zeros(30)), X, u(X), level, 0)
    out["c"] = float(c.numpy())
    return out


def example(name):
    def run(level):
        with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
            metrics = PROBLEMS[name](out, seed=0, noise=level)
        return {k: metrics[k] for k in ("relative_l2", "coverage_95", "fit_seconds")}

    return run


CASES = {
    **{name: example(name) for name in PROBLEMS},
    "heat": heat,
    "reaction1d": reaction1d,
    "advection_negative": advection_negative,
}


def cost(repeats: int = 3) -> dict:
    """Median fit seconds of new heat models with the decision and without it (``learned
    1e-3``), alternately in this process, after one warm-up fit of each."""
    X_u, X_f = heat_design(0)
    out = {}
    for level in (0.0, 0.01):
        rng = np.random.default_rng(0)
        y_u = add_noise(heat_solution(X_u)[0], level, rng)
        y_f = add_noise(heat_solution(X_f)[1], level, rng)
        times = {"learned 1e-3": [], "decided": []}
        for repeat in range(repeats + 1):
            for name in times:
                with choice(name):
                    model = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0))
                    start = time.perf_counter()
                    model.fit(X_u, y_u, X_f, y_f)
                    if repeat:  # the first round compiles
                        times[name].append(time.perf_counter() - start)
        out[str(level)] = {name: float(np.median(t)) for name, t in times.items()}
        print(f"noise {level}: " + ", ".join(f"{k} {v:.2f} s" for k, v in out[str(level)].items()))
    return out


def main():
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # retracing notices of the many models
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--choices", nargs="+", default=list(CHOICES))
    parser.add_argument("--levels", nargs="+", type=float, default=[0.0, 0.01])
    parser.add_argument("--out", default="results/exact_data.json")
    parser.add_argument("--cost", action="store_true", help="time the decision instead")
    args = parser.parse_args()
    if args.cost:
        write_json(args.out, cost())
        return
    rows = []
    print(
        f"{'problem':<20} {'noise':>5} {'choice':<13} {'rel L2 u':>9} {'cover95':>7} {'fit s':>6}"
    )
    for case in args.cases:
        for level in args.levels:
            for name in args.choices:
                with choice(name):
                    result = CASES[case](level)
                rows.append({"problem": case, "noise": level, "choice": name, **result})
                print(
                    f"{case:<20} {level:>5.2f} {name:<13} {result['relative_l2']:>9.2e} "
                    f"{result['coverage_95']:>7.3f} {result['fit_seconds']:>6.1f}",
                    flush=True,
                )
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
