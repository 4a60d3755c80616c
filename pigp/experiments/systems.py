"""Systems of linear PDEs: several latent fields under one prior, with closed forms.

- ``stokes``: ``-nu laplacian(u, v) + grad p = g``, ``u_x + v_y = 0`` on [0, 1]^2 with
  the stream function ``psi = sin(pi x) sin(pi y)`` (``u = psi_y``, ``v = -psi_x``),
  the pressure ``p = cos(pi x) cos(pi y)`` and ``nu = 0.1``; the velocity measured
  at scattered sensors with 1% noise, the momentum equations at collocation points,
  no pressure data; ``nu`` learned from a start of 1.
- ``divergence_free``: a velocity field from a stream function, measured at 30
  noisy sensors, reconstructed as the curl of a stream-function GP.
- ``reaction_diffusion``: a linear pair ``u_t = D u_xx - u + v / 2``,
  ``v_t = D v_xx + u / 2 - v`` on [0, 1] x [0, 1], u measured inside, v inferred from
  the equations and u = v = 0 at x = 0 and 1.

Each model is ``pigp.PIGP`` with a dict of squared-exponential kernels, one per
field.
"""

from __future__ import annotations

import time

import numpy as np

from .report import accuracy, figure, finish, jsonable, relative_l2

__all__ = [
    "SYSTEMS",
    "stokes_solution",
    "stokes_design",
    "stokes_operators",
    "stokes_model",
    "stokes_errors",
    "curl_solution",
    "curl_design",
    "reaction_diffusion_solution",
    "reaction_diffusion_design",
    "reaction_diffusion_operators",
]

PI = np.pi
#: Stokes' viscosity.
VISCOSITY = 0.1
#: The reaction-diffusion pair's diffusivity.
DIFFUSIVITY = 0.1


def unit_grid(side: int) -> np.ndarray:
    """``side x side`` points on [0, 1]^2, x varying fastest, shape (side^2, 2)."""
    s = np.linspace(0.0, 1.0, side)
    x, y = np.meshgrid(s, s)
    return np.c_[x.ravel(), y.ravel()]


def _noisy(values: np.ndarray, noise: float, rng, scale: float) -> np.ndarray:
    return values + noise * scale * rng.standard_normal(values.shape)


# ----- Stokes ------------------------------------------------------------------------
def stokes_solution(X, viscosity: float = VISCOSITY) -> dict:
    """The closed form at X (n, 2): ``{"psi", "u", "v", "p", "g_x", "g_y"}``, the body
    force ``g = -nu laplacian(u, v) + grad p``."""
    sx, cx = np.sin(PI * X[:, 0]), np.cos(PI * X[:, 0])
    sy, cy = np.sin(PI * X[:, 1]), np.cos(PI * X[:, 1])
    u, v = PI * sx * cy, -PI * cx * sy
    p_x, p_y = -PI * sx * cy, -PI * cx * sy
    # laplacian(u) = -2 pi^2 u, the same for v.
    return {
        "psi": sx * sy,
        "u": u,
        "v": v,
        "p": cx * cy,
        "g_x": 2 * PI**2 * viscosity * u + p_x,
        "g_y": 2 * PI**2 * viscosity * v + p_y,
    }


def stokes_design(
    sensors: int = 50, collocation: int = 200, noise: float = 0.01, seed: int = 0, walls: int = 0
) -> dict:
    """Velocity sensors (uniform random) with Gaussian noise of ``noise`` times the
    velocity's root mean square, and collocation points (a scrambled Halton sequence)
    with the body force there; with ``walls``, that many evenly spaced points on each
    wall where the flow does not cross it: u = 0 on x = 0 and x = 1 (``X_wall_u``), v = 0
    on y = 0 and y = 1 (``X_wall_v``)."""
    from scipy.stats import qmc

    rng = np.random.default_rng(seed)
    X_s = rng.uniform(0, 1, (sensors, 2))
    X_c = qmc.Halton(2, scramble=True, seed=seed).random(collocation)
    at_sensors, at_collocation = stokes_solution(X_s), stokes_solution(X_c)
    scale = float(np.sqrt(np.mean(at_sensors["u"] ** 2 + at_sensors["v"] ** 2) / 2))
    design = {
        "X_s": X_s,
        "y_u": _noisy(at_sensors["u"], noise, rng, scale),
        "y_v": _noisy(at_sensors["v"], noise, rng, scale),
        "X_c": X_c,
        "g_x": at_collocation["g_x"],
        "g_y": at_collocation["g_y"],
        "noise_std": noise * scale,
    }
    if walls:
        s = (np.arange(walls) + 0.5) / walls
        zero, one = np.zeros(walls), np.ones(walls)
        design["X_wall_u"] = np.r_[np.c_[zero, s], np.c_[one, s]]
        design["X_wall_v"] = np.r_[np.c_[s, zero], np.c_[s, one]]
    return design


def stokes_operators(viscosity, formulation: str = "stream") -> dict:
    """The observed quantities as operators of the latent fields.

    Args:
        viscosity: a number or a ``pigp.Parameter``.
        formulation: ``"stream"``: fields ``psi`` and ``p``, ``u = psi_y``,
            ``v = -psi_x`` (continuity holds exactly); ``"velocity"``: fields ``u``,
            ``v`` and ``p``, continuity an equation among the others.

    Returns:
        ``{"u", "v", "p", "momentum_x", "momentum_y", "continuity"}``: Operators with
        dims ``("x", "y")``.
    """
    from ..operators.linear import D, field

    if formulation == "stream":
        psi = field("psi")
        u, v = D("y") @ psi, -(D("x") @ psi)
    elif formulation == "velocity":
        u, v = field("u"), field("v")
    else:
        raise ValueError(f"formulation: expected 'stream' or 'velocity', got {formulation!r}")
    p = field("p")
    laplacian = D("x", 2) + D("y", 2)
    out = {
        "u": u,
        "v": v,
        "p": p,
        "momentum_x": -(viscosity * laplacian) @ u + D("x") @ p,
        "momentum_y": -(viscosity * laplacian) @ v + D("y") @ p,
        "continuity": D("x") @ u + D("y") @ v,
    }
    return {name: operator.with_dims("x", "y") for name, operator in out.items()}


def stokes_model(design: dict, formulation: str = "stream", viscosity_start: float = 1.0):
    """``(model, observations, viscosity)``: a ``pigp.PIGP`` with a squared-exponential
    kernel per field, the velocity sensors and the momentum equations (and, in the
    velocity formulation, continuity, exact; with the design's walls, the velocity
    across them, exact) as ``pigp.Observations``, and the learnable viscosity."""
    import pigp

    viscosity = pigp.Parameter(viscosity_start, positive=True, name="viscosity")
    ops = stokes_operators(viscosity, formulation)
    names = ("psi", "p") if formulation == "stream" else ("u", "v", "p")
    kernels = {name: pigp.kernels.SquaredExponential() for name in names}
    model = pigp.PIGP(kernels, ops["momentum_x"], dims=("x", "y"))
    X_s, X_c = design["X_s"], design["X_c"]
    observations = [
        pigp.Observations(X_s, design["y_u"], ops["u"], name="sensors_u"),
        pigp.Observations(X_s, design["y_v"], ops["v"], name="sensors_v"),
        pigp.Observations(X_c, design["g_x"], ops["momentum_x"], name="momentum_x"),
        pigp.Observations(X_c, design["g_y"], ops["momentum_y"], name="momentum_y"),
    ]
    if formulation == "velocity":
        observations.append(
            pigp.Observations(X_c, np.zeros(len(X_c)), ops["continuity"], name="continuity")
        )
    for name in ("u", "v"):
        if f"X_wall_{name}" in design:  # exact: the walls are known, not measured
            X = design[f"X_wall_{name}"]
            observations.append(
                pigp.Observations(X, np.zeros(len(X)), ops[name], noise=0, name=f"wall_{name}")
            )
    return model, observations, viscosity


def stokes_errors(model, X, formulation: str = "stream") -> dict:
    """Relative L2 errors of u, v and p (p and its estimate each less their mean: the
    data fix the pressure up to a constant) at X, and the 95% band coverage of u."""
    truth = stokes_solution(X)
    ops = stokes_operators(VISCOSITY, formulation)
    out = {}
    for name in ("u", "v"):
        mean, var = model.predict(X, output=ops[name])
        out[name] = accuracy(mean, var, truth[name])
    mean, _ = model.predict(X, output="p")
    out["p"] = {"relative_l2": relative_l2(mean - mean.mean(), truth["p"] - truth["p"].mean())}
    return out


def stokes(out: str, seed: int = 0, quick: bool = False, dtype: str = "float64") -> dict:
    """Stokes flow on the unit square: velocity and pressure from velocity sensors.

    -nu laplacian(u, v) + grad p = g, u_x + v_y = 0, with psi = sin(pi x) sin(pi y)
    (u = psi_y, v = -psi_x), p = cos(pi x) cos(pi y), nu = 0.1: u and v measured at
    50 random sensors with 1% noise, both momentum equations at 200 collocation
    points (--quick: 25 and 80, 100 Adam steps), no pressure data. Fields psi and
    p, each with a squared-exponential kernel; nu learned from a start of 1 with
    its Laplace interval. Reports the relative L2 errors of u, v and p (less its mean) on a
    50 x 50 grid, nu, and the time.
    """
    from .. import plotting

    sensors, collocation, steps = (25, 80, 100) if quick else (50, 200, STOKES_STEPS)
    design = stokes_design(sensors, collocation, seed=seed)
    model, observations, viscosity = stokes_model(design)
    start = time.perf_counter()
    model.fit(observations=observations, steps=steps, optimizer="adam+lbfgs")
    seconds = time.perf_counter() - start
    std = model.parameter_uncertainty()["operator.viscosity"]
    X = unit_grid(50)
    errors = stokes_errors(model, X)
    value = float(viscosity.numpy())
    metrics = {
        "experiment": "stokes",
        "seed": seed,
        "dtype": dtype,
        "sensors": sensors,
        "collocation": collocation,
        "u": errors["u"],
        "v": errors["v"],
        "p_relative_l2": errors["p"]["relative_l2"],
        "viscosity": value,
        "viscosity_std": float(std),
        "viscosity_interval_holds": bool(abs(value - VISCOSITY) <= 1.959964 * std),
        "fit_seconds": seconds,
        "parameters": jsonable(model.parameter_values()),
    }
    X_map = unit_grid(60)
    mean, var = model.predict(X_map, output="p")
    truth = stokes_solution(X_map)["p"]
    shift = np.mean(truth - mean)

    def draw(fig):
        plotting.posterior_maps(
            X_map,
            mean + shift,
            var,
            truth=truth,
            points={"velocity sensors": design["X_s"], "collocation": design["X_c"]},
            axes=fig.subplots(2, 2),
            labels=("x", "y"),
        )
        fig.suptitle("pressure (no pressure data; mean matched to the truth's)")

    figure(out, "pressure.png", draw, (9.0, 7.4))
    return finish(out, metrics)


#: Adam steps before L-BFGS-B in the Stokes fits (the default schedule's 2000 cost a
#: minute there and end at the same optimum: docs/tutorials/fields.py). Adam first, not
#: the several-field default of L-BFGS-B alone (``FitPlan.fields_training``): with the
#: walls, L-BFGS-B alone stopped short on seed 0 (``kernel.psi.variance`` not at a
#: minimum, nu's interval missed 0.1; ``benchmarks/systems.py --problems stokes-walls``).
STOKES_STEPS = 300


# ----- divergence-free reconstruction -------------------------------------------------
def curl_solution(X) -> dict:
    """A divergence-free velocity from ``psi = sin(pi x) sin(2 pi y) / 2 + x y^2``:
    ``{"psi", "u", "v"}`` with ``u = psi_y``, ``v = -psi_x``."""
    x, y = X[:, 0], X[:, 1]
    return {
        "psi": 0.5 * np.sin(PI * x) * np.sin(2 * PI * y) + x * y**2,
        "u": PI * np.sin(PI * x) * np.cos(2 * PI * y) + 2 * x * y,
        "v": -0.5 * PI * np.cos(PI * x) * np.sin(2 * PI * y) - y**2,
    }


def curl_design(sensors: int = 30, noise: float = 0.01, seed: int = 0) -> dict:
    """Random sensors of both velocity components with noise of ``noise`` times the
    velocity's root mean square."""
    rng = np.random.default_rng(seed)
    X_s = rng.uniform(0, 1, (sensors, 2))
    truth = curl_solution(X_s)
    scale = float(np.sqrt(np.mean(truth["u"] ** 2 + truth["v"] ** 2) / 2))
    return {
        "X_s": X_s,
        "y_u": _noisy(truth["u"], noise, rng, scale),
        "y_v": _noisy(truth["v"], noise, rng, scale),
        "noise_std": noise * scale,
    }


# ----- a coupled reaction-diffusion pair -----------------------------------------------
def reaction_diffusion_solution(X, diffusivity: float = DIFFUSIVITY) -> dict:
    """u and v at X (n, 2), columns (x, t), of ``u_t = D u_xx - u + v / 2``,
    ``v_t = D v_xx + u / 2 - v``: the mode sin(pi x) along (1, 1) (decay
    ``D pi^2 + 1/2``) plus half the mode sin(pi x) along (1, -1) (decay
    ``D pi^2 + 3/2``), so u and v decay at different rates."""
    x, t = X[:, 0], X[:, 1]
    first = np.exp(-(diffusivity * PI**2 + 0.5) * t) * np.sin(PI * x)
    second = 0.5 * np.exp(-(diffusivity * PI**2 + 1.5) * t) * np.sin(PI * x)
    return {"u": first + second, "v": first - second}


def reaction_diffusion_operators(diffusivity=DIFFUSIVITY, decay=1.0, coupling=0.5) -> dict:
    """``{"u", "v", "equation_u", "equation_v"}`` with dims ``("x", "t")``, the
    equations written ``u_t - D u_xx + a u - c v = 0`` and ``v_t - D v_xx - c u + a v
    = 0`` with ``a = decay`` and ``c = coupling`` (numbers or ``pigp.Parameter``s; the
    closed form's 1 and 1/2 by default)."""
    from ..operators.linear import D, field

    u, v = field("u"), field("v")
    heat = D("t") - diffusivity * D("x", 2)
    out = {
        "u": u,
        "v": v,
        "equation_u": heat @ u + decay * u - coupling * v,
        "equation_v": heat @ v - coupling * u + decay * v,
    }
    return {name: operator.with_dims("x", "t") for name, operator in out.items()}


def reaction_diffusion_design(
    sensors: int = 100, collocation: int = 100, noise: float = 0.01, seed: int = 0
) -> dict:
    """u at random points with noise of ``noise`` times its root mean square, both
    equations at collocation points (a scrambled Halton sequence), and 10 evenly
    spaced times on each side x = 0 and x = 1 where u = v = 0 (Dirichlet); no value
    of v inside."""
    from scipy.stats import qmc

    rng = np.random.default_rng(seed)
    X_s = rng.uniform(0, 1, (sensors, 2))
    u = reaction_diffusion_solution(X_s)["u"]
    scale = float(np.sqrt(np.mean(u**2)))
    t = np.linspace(0, 1, 10)
    return {
        "X_s": X_s,
        "y_u": _noisy(u, noise, rng, scale),
        "X_c": qmc.Halton(2, scramble=True, seed=seed).random(collocation),
        "X_b": np.r_[np.c_[0 * t, t], np.c_[1 + 0 * t, t]],
        "noise_std": noise * scale,
    }


SYSTEMS = {"stokes": stokes}
