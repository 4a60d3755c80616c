"""Systems of PDEs with several latent fields: errors against closed forms, and the
same sensors without the physics (independent GPs) and with a PINN.

    python benchmarks/systems.py --out benchmarks/results/systems.json
    .venv-peers/bin/python benchmarks/systems.py --problems pinn   # DeepXDE, PyTorch

Problems (pigp.experiments.systems has the closed forms and designs):

- ``stokes``: stream function psi and pressure p (continuity exact), 50 velocity
  sensors with 1% noise, both momentum equations at 200 collocation points, no
  pressure data, nu learned from 1 with its Laplace interval;
- ``stokes-velocity``: the same data with fields u, v, p and continuity as exact data
  at the collocation points;
- ``independent``: a GP on each velocity component's sensors alone;
- ``pinn``: DeepXDE's PINN (3 x 50 tanh, Adam then L-BFGS) on the same data, nu
  learned;
- ``floor``: what the Stokes design leaves to the sensors. The equations hold for the
  closed form plus any homogeneous Stokes flow (the curl of a biharmonic stream
  function, with its pressure), and no boundary data fix those. The rows fit the
  closed form plus the curls of the biharmonic polynomials of degree <= 3 (9 flows)
  or <= 4 (13) to the noisy sensors by least squares: the least error of any
  estimator that is unbiased in those flows' sizes (Gauss-Markov), a floor for
  every method that is not told them, physics-informed or not;
- ``curl``: a divergence-free field from 30 noisy sensors, stream-function model
  against independent GPs on u and v: errors, the divergence of the posterior mean,
  95% band coverage;
- ``reaction-diffusion``: u_t = D u_xx - u + v/2, v_t = D v_xx + u/2 - v, u at 100
  points with 1% noise, both equations at 100 collocation points, u = v = 0 at x = 0
  and 1, v inferred with no data inside: the zeros counted as evidence with the
  noise level known, and conditioned on (``Observations(condition=True)``) with the
  noise learned; against a GP on the u data (and u's boundary zeros) alone.

Errors are relative L2 on a 50 x 50 grid (p less its mean).
"""

import argparse
import time

import numpy as np
from common import print_row, write_json

from pigp.experiments import systems
from pigp.experiments.report import relative_l2

GRID = systems.unit_grid(50)


def _fit(model, **arguments) -> float:
    start = time.perf_counter()
    model.fit(**arguments)
    return time.perf_counter() - start


#: Points per wall in the rows with walls (u = 0 on x = 0, 1; v = 0 on y = 0, 1).
WALLS = 40


def stokes_row(seed: int, formulation: str, walls: int = 0) -> dict:
    design = systems.stokes_design(seed=seed, walls=walls)
    model, observations, viscosity = systems.stokes_model(design, formulation)
    seconds = _fit(
        model, observations=observations, steps=systems.STOKES_STEPS, optimizer="adam+lbfgs"
    )
    start = time.perf_counter()
    std = float(model.parameter_uncertainty()["operator.viscosity"])
    laplace_seconds = time.perf_counter() - start
    errors = systems.stokes_errors(model, GRID, formulation)
    value = float(viscosity.numpy())
    return {
        "problem": ("stokes" if formulation == "stream" else "stokes-velocity")
        + ("-walls" if walls else ""),
        "seed": seed,
        "u": errors["u"]["relative_l2"],
        "v": errors["v"]["relative_l2"],
        "p": errors["p"]["relative_l2"],
        "coverage_u": errors["u"]["coverage_95"],
        "coverage_v": errors["v"]["coverage_95"],
        "nu": value,
        "nu_std": std,
        "nu_error": abs(value - systems.VISCOSITY) / systems.VISCOSITY,
        "interval_holds": bool(abs(value - systems.VISCOSITY) <= 1.959964 * std),
        "seconds": seconds,
        "laplace_seconds": laplace_seconds,
    }


def _independent(X, y, kernel=None):
    """A plain GP on one component's data (default fit)."""
    import pigp

    model = pigp.PIGP(kernel or pigp.kernels.SquaredExponential(), pigp.Identity)
    seconds = _fit(model, X_u=X, y_u=y)
    return model, seconds


def _independent_rows(problem: str, seed: int, design: dict, truth: dict) -> tuple:
    """``(row, models)``: a plain GP on each velocity component's sensors (and its wall
    zeros, where the design has them, exact), their errors and band coverage on the
    grid, and the models by component."""
    row, models = {"problem": problem, "seed": seed, "seconds": 0.0}, {}
    for name in ("u", "v"):
        X, y = design["X_s"], design[f"y_{name}"]
        if f"X_wall_{name}" in design:
            import pigp

            wall = design[f"X_wall_{name}"]
            models[name] = pigp.PIGP(pigp.kernels.SquaredExponential(), pigp.Identity)
            seconds = _fit(
                models[name],
                X_u=X,
                y_u=y,
                observations=[pigp.Observations(wall, np.zeros(len(wall)), noise=0)],
            )
        else:
            models[name], seconds = _independent(X, y)
        mean, var = models[name].predict(GRID)
        row[name] = relative_l2(mean, truth[name])
        row[f"coverage_{name}"] = float(
            np.mean(np.abs(mean - truth[name]) <= 1.959964 * np.sqrt(var))
        )
        row["seconds"] += seconds
    return row, models


def independent_row(seed: int, walls: int = 0) -> dict:
    design = systems.stokes_design(seed=seed, walls=walls)
    name = "independent-walls" if walls else "independent"
    return _independent_rows(name, seed, design, systems.stokes_solution(GRID))[0]


def biharmonic_flows(degree: int) -> list:
    """The stream functions of the homogeneous Stokes flows that are polynomials of
    degree 1 to ``degree``: a basis of the biharmonic polynomials ``psi`` (``laplacian^2
    psi = 0``) less the constants, as coefficient arrays ``c[i, j]`` of ``x^i y^j``."""
    from scipy.linalg import null_space

    flows = []
    for n in range(1, degree + 1):
        # psi = sum_i a_i x^i y^(n-i); laplacian^2 = d_x^4 + 2 d_x^2 d_y^2 + d_y^4 maps
        # it to the monomials x^k y^(n-4-k).
        rows = max(n - 3, 0)
        M = np.zeros((rows, n + 1))
        for i in range(n + 1):
            j = n - i
            for dx, weight in ((4, 1), (2, 2), (0, 1)):
                dy = 4 - dx
                if i >= dx and j >= dy:
                    falling = np.prod(np.arange(i - dx + 1, i + 1)) * np.prod(
                        np.arange(j - dy + 1, j + 1)
                    )
                    M[i - dx, i] += weight * falling
        basis = null_space(M) if rows else np.eye(n + 1)
        for column in basis.T:
            c = np.zeros((degree + 1, degree + 1))
            for i in range(n + 1):
                c[i, n - i] = column[i]
            flows.append(c)
    return flows


def _flow_velocity(c: np.ndarray, X: np.ndarray) -> tuple:
    """``(u, v) = (psi_y, -psi_x)`` at X for the stream function with coefficients c."""
    u, v = np.zeros(len(X)), np.zeros(len(X))
    for i, j in zip(*np.nonzero(c)):
        if j:
            u += c[i, j] * j * X[:, 0] ** i * X[:, 1] ** (j - 1)
        if i:
            v -= c[i, j] * i * X[:, 0] ** (i - 1) * X[:, 1] ** j
    return u, v


def floor_rows(seed: int, walls: int = 0) -> list:
    """Least squares over the low-degree homogeneous Stokes flows (module docstring);
    with ``walls``, over those of them that do not cross the wall points (the walls'
    zeros are exact constraints: the sizes lie in the null space of the flows' normal
    velocity there)."""
    from scipy.linalg import null_space

    design = systems.stokes_design(seed=seed, walls=walls)
    at_sensors, truth = systems.stokes_solution(design["X_s"]), systems.stokes_solution(GRID)
    rows = []
    for degree in (3, 4):
        flows = biharmonic_flows(degree)
        at_sensor = [_flow_velocity(c, design["X_s"]) for c in flows]
        A = np.r_[np.stack([u for u, _ in at_sensor], 1), np.stack([v for _, v in at_sensor], 1)]
        residual = np.r_[design["y_u"] - at_sensors["u"], design["y_v"] - at_sensors["v"]]
        basis = np.eye(len(flows))
        if walls:
            across = np.r_[
                np.stack([_flow_velocity(c, design["X_wall_u"])[0] for c in flows], 1),
                np.stack([_flow_velocity(c, design["X_wall_v"])[1] for c in flows], 1),
            ]
            basis = null_space(across)
        sizes = basis @ np.linalg.lstsq(A @ basis, residual, rcond=None)[0]
        on_grid = [_flow_velocity(c, GRID) for c in flows]
        u = sum(s * flow[0] for s, flow in zip(sizes, on_grid))
        v = sum(s * flow[1] for s, flow in zip(sizes, on_grid))
        rows.append(
            {
                "problem": f"floor, {len(flows)} flows" + (", walls" if walls else ""),
                "seed": seed,
                "flows": len(flows),
                "free_flows": int(basis.shape[1]),
                "u": float(np.linalg.norm(u) / np.linalg.norm(truth["u"])),
                "v": float(np.linalg.norm(v) / np.linalg.norm(truth["v"])),
            }
        )
    return rows


def pinn_row(seed: int, adam: int, lbfgs: int) -> dict:
    """DeepXDE on the Stokes data: outputs (u, v, p), the momentum and continuity
    residuals at the collocation points, the velocity sensors as point data, nu a
    trainable variable from 1."""
    import contextlib
    import io
    import os

    os.environ.setdefault("DDE_BACKEND", "pytorch")
    import deepxde as dde
    import torch

    design = systems.stokes_design(seed=seed)
    dde.config.set_default_float("float64")
    dde.config.set_random_seed(seed)
    nu = dde.Variable(1.0)
    pi = np.pi

    def residual(x, y):
        u_xx = dde.grad.hessian(y, x, component=0, i=0, j=0)
        u_yy = dde.grad.hessian(y, x, component=0, i=1, j=1)
        v_xx = dde.grad.hessian(y, x, component=1, i=0, j=0)
        v_yy = dde.grad.hessian(y, x, component=1, i=1, j=1)
        u_x = dde.grad.jacobian(y, x, i=0, j=0)
        v_y = dde.grad.jacobian(y, x, i=1, j=1)
        p_x = dde.grad.jacobian(y, x, i=2, j=0)
        p_y = dde.grad.jacobian(y, x, i=2, j=1)
        sx, cx = torch.sin(pi * x[:, :1]), torch.cos(pi * x[:, :1])
        sy, cy = torch.sin(pi * x[:, 1:]), torch.cos(pi * x[:, 1:])
        g_x = pi * sx * cy * (2 * pi**2 * systems.VISCOSITY - 1)
        g_y = -pi * cx * sy * (2 * pi**2 * systems.VISCOSITY + 1)
        return [
            -nu * (u_xx + u_yy) + p_x - g_x,
            -nu * (v_xx + v_yy) + p_y - g_y,
            u_x + v_y,
        ]

    geometry = dde.geometry.Rectangle([0, 0], [1, 1])
    conditions = [
        dde.icbc.PointSetBC(design["X_s"], design["y_u"][:, None], component=0),
        dde.icbc.PointSetBC(design["X_s"], design["y_v"][:, None], component=1),
    ]
    data = dde.data.PDE(
        geometry, residual, conditions, num_domain=0, num_boundary=0, anchors=design["X_c"]
    )
    model = dde.Model(data, dde.nn.FNN([2] + [50] * 3 + [3], "tanh", "Glorot normal"))
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        model.compile("adam", lr=1e-3, external_trainable_variables=[nu])
        model.train(iterations=adam, display_every=adam)
        dde.optimizers.set_LBFGS_options(maxiter=lbfgs)
        model.compile("L-BFGS", external_trainable_variables=[nu])
        model.train(display_every=lbfgs)
    seconds = time.perf_counter() - start
    prediction = model.predict(GRID)
    truth = systems.stokes_solution(GRID)
    p = prediction[:, 2]
    value = float(nu.detach().numpy())
    return {
        "problem": "pinn",
        "seed": seed,
        "u": relative_l2(prediction[:, 0], truth["u"]),
        "v": relative_l2(prediction[:, 1], truth["v"]),
        "p": relative_l2(p - p.mean(), truth["p"] - truth["p"].mean()),
        "nu": value,
        "nu_error": abs(value - systems.VISCOSITY) / systems.VISCOSITY,
        "seconds": seconds,
        "adam": adam,
        "lbfgs_max": lbfgs,
    }


def curl_rows(seed: int) -> list:
    import pigp
    from pigp.operators import D, field

    design = systems.curl_design(seed=seed)
    truth = systems.curl_solution(GRID)
    psi = field("psi")
    u, v = (D("y") @ psi).with_dims("x", "y"), (-(D("x") @ psi)).with_dims("x", "y")
    model = pigp.PIGP({"psi": pigp.kernels.SquaredExponential()}, u, dims=("x", "y"))
    seconds = _fit(
        model,
        observations=[
            pigp.Observations(design["X_s"], design["y_u"], u, name="sensors_u"),
            pigp.Observations(design["X_s"], design["y_v"], v, name="sensors_v"),
        ],
    )
    stream = {"problem": "curl stream function", "seed": seed, "seconds": seconds}
    gradients = {}
    for name, operator in (("u", u), ("v", v)):
        mean, var = model.predict(GRID, output=operator)
        stream[name] = relative_l2(mean, truth[name])
        stream[f"coverage_{name}"] = float(
            np.mean(np.abs(mean - truth[name]) <= 1.959964 * np.sqrt(var))
        )
        for column in ("x", "y"):
            gradients[name + column] = model.predict(GRID, output=D(column) @ operator)[0]
    scale = max(np.max(np.abs(g)) for g in gradients.values())
    stream["divergence"] = float(np.max(np.abs(gradients["ux"] + gradients["vy"])) / scale)

    plain, singles = _independent_rows("curl independent", seed, design, truth)
    for name, single in singles.items():
        for column in ("x", "y"):
            derivative = pigp.operators.D(0 if column == "x" else 1)
            gradients[name + column] = single.predict(GRID, output=derivative)[0]
    scale = max(np.max(np.abs(g)) for g in gradients.values())
    plain["divergence"] = float(np.max(np.abs(gradients["ux"] + gradients["vy"])) / scale)
    return [stream, plain]


def reaction_diffusion_rows(seed: int) -> list:
    """The coupled pair two ways, and one GP on u's data: (1) the equations' and the
    boundaries' zeros counted as evidence, the sensors' noise fixed at its known level
    (learned, the zeros' likelihood grows without bound as the kernel variances shrink
    and the fit falls to u = v = 0); (2) the zeros conditioned on
    (``Observations(condition=True)``), the sensors' noise learned."""
    import pigp

    design = systems.reaction_diffusion_design(seed=seed)
    ops = systems.reaction_diffusion_operators()
    truth = systems.reaction_diffusion_solution(GRID)
    zeros = np.zeros(len(design["X_c"]))
    boundary = np.zeros(len(design["X_b"]))
    zero_sets = [
        (design["X_c"], zeros, ops["equation_u"], "equation_u"),
        (design["X_c"], zeros, ops["equation_v"], "equation_v"),
        (design["X_b"], boundary, ops["u"], "boundary_u"),
        (design["X_b"], boundary, ops["v"], "boundary_v"),
    ]
    rows = []
    for condition in (False, True):
        kernels = {name: pigp.kernels.SquaredExponential() for name in ("u", "v")}
        model = pigp.PIGP(kernels, ops["equation_u"], dims=("x", "t"))
        # Known level, standardised: u's data are divided by their root mean square.
        noise = None if condition else pigp.Parameter(0.01**2, trainable=False)
        seconds = _fit(
            model,
            observations=[
                pigp.Observations(design["X_s"], design["y_u"], ops["u"], noise, "sensors_u"),
                *(
                    pigp.Observations(X, y, operator, 0, name, condition=condition)
                    for X, y, operator, name in zero_sets
                ),
            ],
            steps=300,
            optimizer="adam+lbfgs",
        )
        problem = "reaction-diffusion" + (" conditioned" if condition else "")
        row = {"problem": problem, "seed": seed, "seconds": seconds}
        for name in ("u", "v"):
            mean, var = model.predict(GRID, output=name)
            row[name] = relative_l2(mean, truth[name])
            row[f"coverage_{name}"] = float(
                np.mean(np.abs(mean - truth[name]) <= 1.959964 * np.sqrt(var))
            )
        if condition:
            learned = model.parameter_values()["sensors_u.noise"] * model.y_scale**2
            row["noise_std_learned"] = float(np.sqrt(learned))
            row["noise_std_true"] = float(design["noise_std"])
        rows.append(row)
    single, seconds = _independent(
        np.r_[design["X_s"], design["X_b"]], np.r_[design["y_u"], boundary]
    )
    mean, var = single.predict(GRID)
    plain = {
        "problem": "reaction-diffusion u alone",
        "seed": seed,
        "u": relative_l2(mean, truth["u"]),
        "coverage_u": float(np.mean(np.abs(mean - truth["u"]) <= 1.959964 * np.sqrt(var))),
        "seconds": seconds,
    }
    return [*rows, plain]


COLUMNS = (
    ("u", "{:9.2e}"),
    ("v", "{:9.2e}"),
    ("p", "{:9.2e}"),
    ("nu", "{:8.5f}"),
    ("nu_std", "{:8.1e}"),
    ("interval_holds", "{!s:>6}"),
    ("divergence", "{:9.1e}"),
    ("coverage_u", "{:6.2f}"),
    ("coverage_v", "{:6.2f}"),
    ("seconds", "{:7.1f}"),
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--problems",
        nargs="*",
        default=["stokes", "independent", "curl", "reaction-diffusion"],
        help="among stokes, stokes-velocity, independent, floor, pinn, curl, "
        "reaction-diffusion; stokes, stokes-velocity, independent and floor with -walls "
        f"added: with {WALLS} exact points on each wall where the flow does not cross it",
    )
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--adam", type=int, default=10000, help="the PINN's Adam steps")
    parser.add_argument("--lbfgs", type=int, default=5000, help="the PINN's L-BFGS steps")
    parser.add_argument("--out", default="benchmarks/results/systems.json")
    args = parser.parse_args()
    header = ["problem".ljust(28), "seed"] + [key for key, _ in COLUMNS]
    print(" ".join(header), flush=True)
    rows = []
    for seed in range(args.seeds):
        for problem in args.problems:
            walls = WALLS if problem.endswith("-walls") else 0
            problem = problem.removesuffix("-walls")
            if problem in ("stokes", "stokes-velocity"):
                new = [stokes_row(seed, "stream" if problem == "stokes" else "velocity", walls)]
            elif problem == "independent":
                new = [independent_row(seed, walls)]
            elif problem == "pinn":
                new = [pinn_row(seed, args.adam, args.lbfgs)]
            elif problem == "floor":
                new = floor_rows(seed, walls)
            elif problem == "curl":
                new = curl_rows(seed)
            elif problem == "reaction-diffusion":
                new = reaction_diffusion_rows(seed)
            else:
                raise SystemExit(f"unknown problem {problem!r}")
            for row in new:
                print_row(row, COLUMNS, 28)
            rows += new
    write_json(args.out, {"rows": rows, "problems": args.problems, "seeds": args.seeds})


if __name__ == "__main__":
    main()
