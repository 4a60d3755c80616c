"""pigp against what a user would otherwise pick: a plain GP, a PINN, a numerical solver.

On the same data and the same 50 x 50 test grid of [0, 1]^2:

  pigp    PIGP with a squared-exponential kernel and default settings
          (2000 Adam steps, then L-BFGS-B).
  gpflow  GPflow's GPR with an RBF kernel on the u data alone (no physics),
          trained with gpflow.optimizers.Scipy (L-BFGS-B): what the physics adds.
  pinn    A physics-informed neural network with DeepXDE (PyTorch backend): a
          2-32-32-32-1 tanh network, loss = mean squared misfit of the u data +
          mean squared residual u_t - alpha u_xx - f at the same f points; no
          other collocation points (f is data, known only there). DeepXDE's usual
          recipe: Adam (learning rate 1e-3, 10000 iterations), then L-BFGS
          (at most 3000 iterations, DeepXDE's gtol 1e-8; its default cap of 15000
          made one small case run for over 15 minutes).

Problems (noise-free data):
  heat        the core example: u = e^-t sin(pi x), 20 u points on t = 0, x = 0,
              x = 1 and 30 f points from a Latin hypercube.
  seed        the original question's layout: 20 u and 30 f points on x = t.
  raissi      Raissi et al.'s inverse problem: u = e^-t sin(2 pi x), 20 u and 20 f
              Latin-hypercube points, alpha learned from 2 (pigp gives a Laplace std).
  forcing     u_t = u_xx + f with a Gaussian-bump source f = exp(-(x - 0.4)^2 / 0.1)
              (1 + sin 4t), starting from rest, u = 0 at x = 0, 1: no closed form;
              the truth is a Crank-Nicolson solution on 490 x 4900 steps (its
              difference from one at half the resolution is reported).
  heat-N      the core example with N = 10 ... 200 data points (40% u, 60% f).

Metrics: relative L2 error of u on the grid, |alpha - 1| where learned, wall
time to train (a fresh model each, compilation included), and the 95% band
coverage for the methods that give an uncertainty.

    pip install ".[peers]"          # GPflow, DeepXDE, PyTorch (their own environment)
    python benchmarks/peers.py --out results/peers.json
"""

import argparse
import contextlib
import io
import os
import time

os.environ.setdefault("DDE_BACKEND", "pytorch")

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
from common import write_json  # noqa: E402
from raissi_inverse import design as raissi_design  # noqa: E402
from raissi_inverse import solution as raissi_solution  # noqa: E402
from scipy.stats import qmc  # noqa: E402

import pigp  # noqa: E402
import pigp.experiments  # noqa: E402
import pigp.plotting  # noqa: E402
from pigp.experiments import heat_solution  # noqa: E402

GRID, _ = pigp.plotting.grid(50)


# ----- problems ------------------------------------------------------------------------
def heat_design(n, seed=0):
    """``n`` points: 40% u on t = 0, x = 0, x = 1 (random positions), 60% f inside."""
    rng = np.random.default_rng(seed)
    n_u = max(2, int(round(0.4 * n)))
    n_f = n - n_u
    lines = rng.integers(0, 3, n_u)
    s = rng.uniform(size=n_u)
    X_u = np.where(
        lines[:, None] == 0,
        np.stack([s, 0 * s], 1),
        np.where(lines[:, None] == 1, np.stack([0 * s, s], 1), np.stack([1 + 0 * s, s], 1)),
    )
    X_f = qmc.LatinHypercube(d=2, seed=seed).random(n_f)
    return X_u, X_f


def problem_heat(n=None):
    if n is None:
        X_u, X_f = pigp.experiments.heat_design(0)
        name = "heat"
    else:
        X_u, X_f = heat_design(n)
        name = f"heat-{n}"
    return dict(
        name=name,
        X_u=X_u,
        y_u=heat_solution(X_u)[0],
        X_f=X_f,
        y_f=heat_solution(X_f)[1],
        truth=heat_solution(GRID)[0],
        alpha=None,
    )


def problem_seed():
    g20, g30 = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
    X_u, X_f = np.stack([g20, g20], 1), np.stack([g30, g30], 1)
    return dict(
        name="seed",
        X_u=X_u,
        y_u=heat_solution(X_u)[0],
        X_f=X_f,
        y_f=heat_solution(X_f)[1],
        truth=heat_solution(GRID)[0],
        alpha=None,
    )


def problem_raissi():
    X_u, X_f = raissi_design(0)
    return dict(
        name="raissi",
        X_u=X_u,
        y_u=raissi_solution(X_u)[0],
        X_f=X_f,
        y_f=raissi_solution(X_f)[1],
        truth=raissi_solution(GRID)[0],
        alpha=2.0,
    )


def bump_forcing(X):
    return np.exp(-np.square(X[:, 0] - 0.4) / 0.1) * (1 + np.sin(4 * X[:, 1]))


def crank_nicolson(nx, nt):
    """u_t = u_xx + f on [0, 1]^2, u = 0 at t = 0, x = 0 and x = 1: values at all nodes."""
    x, dt = np.linspace(0, 1, nx + 1), 1.0 / nt
    h = x[1] - x[0]
    inner = x[1:-1]
    r = dt / (2 * h * h)
    m = len(inner)
    banded = np.zeros((3, m))
    banded[0, 1:], banded[1], banded[2, :-1] = -r, 1 + 2 * r, -r
    u = np.zeros(m)
    out = np.zeros((nt + 1, nx + 1))
    f_now = bump_forcing(np.stack([inner, np.zeros(m)], 1))
    for n in range(nt):
        f_next = bump_forcing(np.stack([inner, np.full(m, (n + 1) * dt)], 1))
        rhs = (1 - 2 * r) * u
        rhs[1:] += r * u[:-1]
        rhs[:-1] += r * u[1:]
        rhs += 0.5 * dt * (f_now + f_next)
        u = scipy.linalg.solve_banded((1, 1), banded, rhs)
        out[n + 1, 1:-1] = u
        f_now = f_next
    return out


def problem_forcing():
    fine = crank_nicolson(490, 4900)[::100, ::10]  # nodes at multiples of 1/49
    coarse = crank_nicolson(245, 2450)[::50, ::5]
    truth = fine.reshape(-1)  # [t, x] rows = the grid's order
    X_u, X_f = pigp.experiments.heat_design(0)
    y_u = np.zeros(len(X_u))
    return dict(
        name="forcing",
        X_u=X_u,
        y_u=y_u,
        X_f=X_f,
        y_f=bump_forcing(X_f),
        truth=truth,
        alpha=None,
        truth_error=float(np.linalg.norm(coarse - fine) / np.linalg.norm(fine)),
    )


# ----- methods ---------------------------------------------------------------------------
def coverage(mean, var, truth):
    return pigp.experiments.accuracy(mean, np.maximum(var, 0.0), truth)["coverage_95"]


def fit_pigp(p, kernel):
    """Fit ``kernel`` to problem ``p`` with default settings (alpha learned where the
    problem has a start for it): ``(model, alpha, fit seconds, mean, var on GRID)``."""
    alpha = (
        1.0 if p["alpha"] is None else pigp.Parameter(p["alpha"], positive=True, name="diffusivity")
    )
    model = pigp.PIGP(kernel, pigp.operators.heat(diffusivity=alpha), noise_u=1e-3, noise_f=1e-3)
    start = time.perf_counter()
    model.fit(p["X_u"], p["y_u"], p["X_f"], p["y_f"])
    seconds = time.perf_counter() - start
    mean, var = model.predict(GRID)
    return model, alpha, seconds, mean, var


def run_pigp(p):
    model, alpha, seconds, mean, var = fit_pigp(p, pigp.kernels.SquaredExponential())
    out = {"seconds": seconds, "mean": mean, "coverage_95": coverage(mean, var, p["truth"])}
    if p["alpha"] is not None:
        out["alpha"] = float(alpha.numpy())
        out["alpha_std"] = float(model.parameter_uncertainty()["operator.diffusivity"])
    return out


def run_gpflow(p):
    import gpflow

    gpflow.config.set_default_float(np.float64)
    X, y = p["X_u"], p["y_u"][:, None]
    model = gpflow.models.GPR(
        (X, y),
        kernel=gpflow.kernels.SquaredExponential(lengthscales=[0.5, 0.5]),
        noise_variance=1e-3,
    )
    gpflow.utilities.set_trainable(model.likelihood.variance, True)
    start = time.perf_counter()
    gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables)
    seconds = time.perf_counter() - start
    mean, var = (t.numpy()[:, 0] for t in model.predict_f(GRID))
    return {"seconds": seconds, "mean": mean, "coverage_95": coverage(mean, var, p["truth"])}


def run_pinn(p, adam_iterations, lbfgs_iterations, seed=0):
    import deepxde as dde
    import torch

    dde.config.set_default_float("float64")
    dde.config.set_random_seed(seed)
    alpha = dde.Variable(p["alpha"]) if p["alpha"] is not None else 1.0

    def residual(x, y, X):
        return dde.grad.jacobian(y, x, i=0, j=1) - alpha * dde.grad.hessian(y, x, i=0, j=0)

    geometry = dde.geometry.GeometryXTime(
        dde.geometry.Interval(0, 1), dde.geometry.TimeDomain(0, 1)
    )
    conditions = [
        dde.icbc.PointSetBC(p["X_u"], p["y_u"][:, None]),
        dde.icbc.PointSetOperatorBC(p["X_f"], p["y_f"][:, None], residual),
    ]
    data = dde.data.PDE(geometry, None, conditions, num_domain=0, num_boundary=0)
    model = dde.Model(data, dde.nn.FNN([2] + [32] * 3 + [1], "tanh", "Glorot normal"))
    extra = [alpha] if p["alpha"] is not None else None

    class StopWhenStalled(dde.callbacks.Callback):
        """End L-BFGS once an outer step makes no iteration. With the PyTorch
        backend, a step whose starting gradient is already below PyTorch's
        tolerance returns without iterating, and DeepXDE's loop (which stops on
        exactly one iteration) would call it forever: seen with 4 u + 6 f points."""

        def __init__(self):
            super().__init__()
            self.last = -1

        def on_epoch_end(self):
            n_iter = self.model.opt.state_dict()["state"][0]["n_iter"]
            if n_iter == self.last:
                self.model.stop_training = True
            self.last = n_iter

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        model.compile("adam", lr=1e-3, external_trainable_variables=extra)
        model.train(iterations=adam_iterations, display_every=adam_iterations)
        dde.optimizers.set_LBFGS_options(maxiter=lbfgs_iterations)
        model.compile("L-BFGS", external_trainable_variables=extra)
        model.train(display_every=lbfgs_iterations, callbacks=[StopWhenStalled()])
    seconds = time.perf_counter() - start
    mean = model.predict(GRID)[:, 0]
    out = {"seconds": seconds, "mean": mean, "coverage_95": None}
    if p["alpha"] is not None:
        out["alpha"] = float(alpha.detach().numpy() if isinstance(alpha, torch.Tensor) else alpha)
    return out


# ----- the table -------------------------------------------------------------------------
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 20, 50, 100, 200])
    parser.add_argument("--adam", type=int, default=10000, help="PINN Adam iterations")
    parser.add_argument("--lbfgs", type=int, default=3000, help="PINN L-BFGS iterations (max)")
    parser.add_argument(
        "--problems",
        nargs="*",
        default=["heat", "seed", "raissi", "forcing"],
        help="which of heat, seed, raissi, forcing to run (besides --sizes)",
    )
    parser.add_argument("--out", default="results/peers.json")
    args = parser.parse_args()

    makers = {
        "heat": problem_heat,
        "seed": problem_seed,
        "raissi": problem_raissi,
        "forcing": problem_forcing,
    }
    problems = [makers[name]() for name in args.problems] + [problem_heat(n) for n in args.sizes]
    methods = {
        "pigp": run_pigp,
        "gpflow": run_gpflow,
        "pinn": lambda p: run_pinn(p, args.adam, args.lbfgs),
    }
    rows = []
    print(
        f"{'problem':<10} {'n_u':>4} {'n_f':>4} {'method':<7} {'rel L2 u':>9} {'|alpha-1|':>9} "
        f"{'seconds':>8} {'cover95':>7}",
        flush=True,
    )
    for p in problems:
        for name, method in methods.items():
            result = method(p)
            mean = result.pop("mean")
            row = {
                "problem": p["name"],
                "n_u": len(p["X_u"]),
                "n_f": len(p["X_f"]),
                "method": name,
                "relative_l2": float(
                    np.linalg.norm(mean - p["truth"]) / np.linalg.norm(p["truth"])
                ),
                **result,
            }
            if "truth_error" in p:
                row["truth_relative_error"] = p["truth_error"]
            if "alpha" in row:
                row["alpha_error"] = abs(row["alpha"] - 1.0)
            rows.append(row)
            alpha = f"{row['alpha_error']:>9.2e}" if "alpha_error" in row else f"{'-':>9}"
            cover = "-" if row["coverage_95"] is None else f"{row['coverage_95']:.3f}"
            print(
                f"{p['name']:<10} {row['n_u']:>4} {row['n_f']:>4} {name:<7} "
                f"{row['relative_l2']:>9.2e} {alpha} {row['seconds']:>8.1f} {cover:>7}",
                flush=True,
            )
            save(args, {"rows": rows})  # partial results survive a stop
    for p in problems:
        if "truth_error" in p:
            print(
                f"\nCrank-Nicolson truth: relative difference from half resolution "
                f"{p['truth_error']:.1e}"
            )
    summary = []
    for p in problems:
        by = {r["method"]: r for r in rows if r["problem"] == p["name"]}
        summary.append(
            {
                "problem": p["name"],
                "error_vs_pinn": by["pigp"]["relative_l2"] / by["pinn"]["relative_l2"],
                "error_vs_gpflow": by["pigp"]["relative_l2"] / by["gpflow"]["relative_l2"],
                "speedup_vs_pinn": by["pinn"]["seconds"] / by["pigp"]["seconds"],
            }
        )
    print(
        f"\n{'problem':<10} {'pigp/pinn error':>16} {'pigp/gpflow error':>18} "
        f"{'pinn/pigp time':>15}"
    )
    for s in summary:
        print(
            f"{s['problem']:<10} {s['error_vs_pinn']:>16.2e} {s['error_vs_gpflow']:>18.2e} "
            f"{s['speedup_vs_pinn']:>15.1f}"
        )
    save(args, {"rows": rows, "summary": summary})
    plot(rows, args)


def save(args, result):
    result["pinn_recipe"] = {
        "network": "2-32-32-32-1 tanh",
        "adam_iterations": args.adam,
        "adam_lr": 1e-3,
        "lbfgs_max_iterations": args.lbfgs,
        "extra_collocation_points": 0,
    }
    write_json(args.out, result)


def plot(rows, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for method, marker in (("pigp", "o"), ("pinn", "s"), ("gpflow", "^")):
        points = sorted(
            (r["n_u"] + r["n_f"], r["relative_l2"])
            for r in rows
            if r["problem"].startswith("heat-") and r["method"] == method
        )
        if points:
            ax.loglog(*zip(*points), marker=marker, label=method)
    ax.set_xlabel("number of data points (40% u, 60% f)")
    ax.set_ylabel("relative L2 error of u")
    ax.set_title("heat equation: error against data")
    ax.legend()
    figure = os.path.splitext(args.out)[0] + "_error_vs_data.png"
    fig.savefig(figure, dpi=110)
    print(f"figure: {figure}")


if __name__ == "__main__":
    main()
