"""Steady incompressible Navier-Stokes by Gauss-Newton collocation over three fields.

The velocity (u, v) and the pressure p each have a Gaussian-process prior; the two
momentum equations and continuity are posed together at the collocation points,

    u u_x + v u_y + p_x - nu (u_xx + u_yy) = 0,
    u v_x + v v_y + p_y - nu (v_xx + v_yy) = 0,
    u_x + v_y = 0,

a system of three nonlinear equations in the features of three fields
(``pigp.operators.nonlinear`` with a residual that returns three tensors). Gauss-Newton
linearises them jointly. No pressure data are given: p is known up to a constant.

- ``kovasznay_solution``: Kovasznay's exact flow behind a grid (Kovasznay, Proc.
  Camb. Phil. Soc. 44, 1948), on DeepXDE's domain [-0.5, 1] x [-0.5, 1.5] at
  Re = 20 (nu = 0.05).
- ``kovasznay_design``: interior collocation points on a grid and the velocity at
  evenly spaced boundary points; ``kovasznay_sensors``: noisy velocity sensors inside.
- ``kovasznay``: the model fitted, with errors against the exact flow.
- ``cavity``: the lid-driven cavity, against the centre-line velocities of Ghia, Ghia
  & Shin (J. Comput. Phys. 48, 1982) at Re = 100.
"""

from __future__ import annotations

import time

import numpy as np

from .report import relative_l2

__all__ = [
    "navier_stokes",
    "navier_stokes_residual",
    "kovasznay_solution",
    "kovasznay_design",
    "kovasznay_sensors",
    "kovasznay",
    "cavity_design",
    "cavity",
    "GHIA_X",
    "GHIA_Y",
    "GHIA_U",
    "GHIA_V",
    "LOWER",
    "UPPER",
]

#: The corners of Kovasznay's domain (DeepXDE's example).
LOWER, UPPER = np.array([-0.5, -0.5]), np.array([1.0, 1.5])


def navier_stokes_residual(v, p):
    """The momentum equations and continuity at the features ``v``, ``p["nu"]``."""
    momentum_x = v["u"] * v["u_x"] + v["v"] * v["u_y"] + v["p_x"] - p["nu"] * v["lap_u"]
    momentum_y = v["u"] * v["v_x"] + v["v"] * v["v_y"] + v["p_y"] - p["nu"] * v["lap_v"]
    return momentum_x, momentum_y, v["u_x"] + v["v_y"]


def navier_stokes(nu):
    """Steady incompressible Navier-Stokes in the fields ``u``, ``v``, ``p`` over the
    columns ``x``, ``y``: a ``Nonlinear`` system of three equations (two momentum, one
    continuity); ``nu`` a number or a ``pigp.Parameter`` to learn."""
    from ..operators import D, field, nonlinear

    u, v, p = field("u"), field("v"), field("p")
    laplacian = D("x", 2) + D("y", 2)
    features = {
        "u": u,
        "v": v,
        "u_x": D("x") @ u,
        "u_y": D("y") @ u,
        "v_x": D("x") @ v,
        "v_y": D("y") @ v,
        "lap_u": laplacian @ u,
        "lap_v": laplacian @ v,
        "p_x": D("x") @ p,
        "p_y": D("y") @ p,
    }
    return nonlinear(navier_stokes_residual, features, {"nu": nu}).with_dims("x", "y")


def kovasznay_solution(X, Re: float = 20.0) -> tuple:
    """Kovasznay's flow at points ``X`` (n, 2): ``(u, v, p)``, arrays (n,)."""
    nu = 1.0 / Re
    lam = 1.0 / (2.0 * nu) - np.sqrt(1.0 / (4.0 * nu**2) + 4.0 * np.pi**2)
    x, y = X[:, 0], X[:, 1]
    e = np.exp(lam * x)
    u = 1.0 - e * np.cos(2.0 * np.pi * y)
    v = lam / (2.0 * np.pi) * e * np.sin(2.0 * np.pi * y)
    return u, v, 0.5 * (1.0 - np.exp(2.0 * lam * x))


def kovasznay_design(interior: int = 20, per_side: int = 20) -> tuple:
    """``(X_f, X_b)``: an ``interior`` x ``interior`` grid strictly inside the domain and
    ``per_side`` evenly spaced points on each side of its boundary."""
    inside = np.linspace(0.0, 1.0, interior + 2)[1:-1]
    xi = LOWER[0] + (UPPER[0] - LOWER[0]) * inside
    yi = LOWER[1] + (UPPER[1] - LOWER[1]) * inside
    X_f = np.stack(np.meshgrid(xi, yi), axis=-1).reshape(-1, 2)
    s = np.linspace(0.0, 1.0, per_side + 1)[:-1]
    (x0, y0), (x1, y1) = LOWER, UPPER
    X_b = np.concatenate(
        [
            np.stack([x0 + (x1 - x0) * s, np.full_like(s, y0)], axis=1),
            np.stack([np.full_like(s, x1), y0 + (y1 - y0) * s], axis=1),
            np.stack([x1 - (x1 - x0) * s, np.full_like(s, y1)], axis=1),
            np.stack([np.full_like(s, x0), y1 - (y1 - y0) * s], axis=1),
        ]
    )
    return X_f, X_b


def kovasznay_sensors(n: int, noise: float, seed: int = 0) -> tuple:
    """``(X, u, v)``: ``n`` uniform random points inside, velocities with Gaussian noise
    of standard deviation ``noise`` times the velocity's root mean square."""
    rng = np.random.default_rng(seed)
    X = LOWER + (UPPER - LOWER) * rng.uniform(size=(n, 2))
    u, v, _ = kovasznay_solution(X)
    u = u + noise * np.sqrt(np.mean(u**2)) * rng.normal(size=n)
    v = v + noise * np.sqrt(np.mean(v**2)) * rng.normal(size=n)
    return X, u, v


def kovasznay(
    interior: int = 20,
    per_side: int = 20,
    nu=0.05,
    sensors: int = 0,
    noise: float = 0.01,
    seed: int = 0,
    test: int = 2000,
    verbose: bool = False,
) -> tuple:
    """Fit Kovasznay's flow from the boundary velocities and the equations (and, with
    ``sensors``, noisy velocities inside, their noise learned).

    Returns:
        ``(model, result)``: the fitted ``pigp.PIGP`` and a dict with the relative L2
        errors of u, v and p (p less its mean) at ``test`` random points, the share
        of those points inside u's and v's 95% bands, the fit's seconds, the number
        of values, the Gauss-Newton iterations and, where ``nu`` is learned, its
        value and 95% Laplace interval.
    """
    import pigp
    from pigp.operators import field

    X_f, X_b = kovasznay_design(interior, per_side)
    u_b, v_b, _ = kovasznay_solution(X_b)
    observations = [
        pigp.Observations(X_b, u_b, field("u"), 0.0, name="u_boundary"),
        pigp.Observations(X_b, v_b, field("v"), 0.0, name="v_boundary"),
    ]
    if sensors:
        X_s, u_s, v_s = kovasznay_sensors(sensors, noise, seed)
        observations += [
            pigp.Observations(X_s, u_s, field("u"), noise=1e-4, name="u_sensors"),
            pigp.Observations(X_s, v_s, field("v"), noise=1e-4, name="v_sensors"),
        ]
    kernel = pigp.kernels.SquaredExponential
    model = pigp.PIGP({"u": kernel(), "v": kernel(), "p": kernel()}, navier_stokes(nu))
    start = time.perf_counter()
    model.fit(X_f=X_f, y_f=np.zeros((len(X_f), 3)), observations=observations, verbose=verbose)
    seconds = time.perf_counter() - start
    rng = np.random.default_rng(12345)
    X = LOWER + (UPPER - LOWER) * rng.uniform(size=(test, 2))
    exact = dict(zip("uvp", kovasznay_solution(X)))
    result = {"seconds": seconds, "values": int(sum(model.data.sizes))}
    result["gauss_newton"] = len(model.gauss_newton)
    for name in "uv":
        mean, var = model.predict(X, name)
        result[f"error_{name}"] = relative_l2(mean, exact[name])
        inside = np.abs(mean - exact[name]) <= 1.959964 * np.sqrt(var)
        result[f"coverage_{name}"] = float(np.mean(inside))
    mean = model.predict(X, "p")[0]
    result["error_p"] = relative_l2(mean - mean.mean(), exact["p"] - exact["p"].mean())
    if isinstance(nu, pigp.Parameter) and nu.trainable:
        low, high = model.parameter_intervals()["operator.nu"]
        result["nu"] = float(nu.numpy())
        result["nu_interval"] = [float(low), float(high)]
    return model, result


#: Ghia, Ghia & Shin (J. Comput. Phys. 48, 387-411, 1982), Re = 100, 400 and 1000: Table I,
#: u on the vertical centre line x = 0.5 at heights y; Table II, v on the horizontal
#: centre line y = 0.5 at abscissae x.
GHIA_Y = np.array(
    [1.0, 0.9766, 0.9688, 0.9609, 0.9531, 0.8516, 0.7344, 0.6172, 0.5, 0.4531, 0.2813,
     0.1719, 0.1016, 0.0703, 0.0625, 0.0547, 0.0]
)  # fmt: skip
GHIA_U = {
    100: np.array(
        [1.0, 0.84123, 0.78871, 0.73722, 0.68717, 0.23151, 0.00332, -0.13641, -0.20581,
         -0.2109, -0.15662, -0.1015, -0.06434, -0.04775, -0.04192, -0.03717, 0.0]
    ),
    400: np.array(
        [1.0, 0.75837, 0.68439, 0.61756, 0.55892, 0.29093, 0.16256, 0.02135, -0.11477,
         -0.17119, -0.32726, -0.24299, -0.14612, -0.10338, -0.09266, -0.08186, 0.0]
    ),
    1000: np.array(
        [1.0, 0.65928, 0.57492, 0.51117, 0.46604, 0.33304, 0.18719, 0.05702, -0.0608,
         -0.10648, -0.27805, -0.38289, -0.2973, -0.2222, -0.20196, -0.18109, 0.0]
    ),
}  # fmt: skip
GHIA_X = np.array(
    [1.0, 0.9688, 0.9609, 0.9531, 0.9453, 0.9063, 0.8594, 0.8047, 0.5, 0.2344, 0.2266,
     0.1563, 0.0938, 0.0781, 0.0703, 0.0625, 0.0]
)  # fmt: skip
GHIA_V = {
    100: np.array(
        [0.0, -0.05906, -0.07391, -0.08864, -0.10313, -0.16914, -0.22445, -0.24533, 0.05454,
         0.17527, 0.17507, 0.16077, 0.12317, 0.1089, 0.10091, 0.09233, 0.0]
    ),
    400: np.array(
        [0.0, -0.12146, -0.15663, -0.19254, -0.22847, -0.23827, -0.44993, -0.38598, 0.05186,
         0.30174, 0.30203, 0.28124, 0.22965, 0.2092, 0.19713, 0.1836, 0.0]
    ),
    1000: np.array(
        [0.0, -0.21388, -0.27669, -0.33714, -0.39188, -0.5155, -0.42665, -0.31966, 0.02526,
         0.32235, 0.33075, 0.37095, 0.32627, 0.30353, 0.29012, 0.27485, 0.0]
    ),
}  # fmt: skip


def cavity_design(interior: int = 20, per_side: int = 20, corner: float | None = None) -> tuple:
    """The lid-driven cavity [0, 1]^2: ``(X_f, X_b, u_b, v_b)``, an ``interior`` x
    ``interior`` grid inside and ``per_side`` points on each wall, u = 1 on the lid
    y = 1 and 0 elsewhere, v = 0 everywhere.

    The lid's velocity jumps from 1 to 0 at its two corners. The walls' points keep
    ``corner`` (default: the interior grid's spacing) away from the lid's corners, so
    that the data jump over that distance and not between two points a rounding
    error apart; the corners themselves carry no data."""
    h = 1.0 / (interior + 1) if corner is None else float(corner)
    inside = np.linspace(0.0, 1.0, interior + 2)[1:-1]
    X_f = np.stack(np.meshgrid(inside, inside), axis=-1).reshape(-1, 2)
    lid = np.linspace(h, 1.0 - h, per_side)
    side = np.linspace(0.0, 1.0 - h, per_side)
    bottom = np.linspace(0.0, 1.0, per_side + 2)[1:-1]
    X_b = np.concatenate(
        [
            np.stack([lid, np.ones_like(lid)], axis=1),
            np.stack([np.zeros_like(side), side], axis=1),
            np.stack([np.ones_like(side), side], axis=1),
            np.stack([bottom, np.zeros_like(bottom)], axis=1),
        ]
    )
    u_b = np.where(X_b[:, 1] == 1.0, 1.0, 0.0)
    return X_f, X_b, u_b, np.zeros(len(X_b))


def cavity(
    re: float = 100.0,
    interior: int = 20,
    per_side: int = 20,
    kernel=None,
    verbose: bool = False,
    solver=None,
    noise_f=None,
    corner: float | None = None,
) -> tuple:
    """Fit the lid-driven cavity at Reynolds number ``re`` (nu = 1 / re) and compare
    with Ghia et al.'s centre lines (Re = 100, 400 and 1000).

    Returns:
        ``(model, result)``: the fitted ``pigp.PIGP`` and a dict with the largest
        deviation from Ghia's u on x = 0.5 and v on y = 0.5 (over their interior
        points), the fit's seconds, the values and the Gauss-Newton iterations.
    """
    import pigp
    from pigp.operators import field

    X_f, X_b, u_b, v_b = cavity_design(interior, per_side, corner)
    observations = [
        pigp.Observations(X_b, u_b, field("u"), name="u_walls"),
        pigp.Observations(X_b, v_b, field("v"), name="v_walls"),
    ]
    kernel = kernel or pigp.kernels.SquaredExponential
    kernels = {"u": kernel(), "v": kernel(), "p": kernel()}
    model = pigp.PIGP(kernels, navier_stokes(1.0 / re), noise_f=noise_f)
    start = time.perf_counter()
    model.fit(
        X_f=X_f,
        y_f=np.zeros((len(X_f), 3)),
        observations=observations,
        verbose=verbose,
        solver=solver,
    )
    result = {"seconds": time.perf_counter() - start, "values": int(sum(model.data.sizes))}
    result["gauss_newton"] = len(model.gauss_newton)
    result["converged"] = bool(model.gauss_newton[-1].change < 1e-5)
    if int(re) in GHIA_U:
        inner = slice(1, -1)
        on_x = np.stack([np.full(len(GHIA_Y), 0.5), GHIA_Y], axis=1)[inner]
        on_y = np.stack([GHIA_X, np.full(len(GHIA_X), 0.5)], axis=1)[inner]
        u = model.predict(on_x, "u")[0]
        v = model.predict(on_y, "v")[0]
        result["max_deviation_u"] = float(np.max(np.abs(u - GHIA_U[int(re)][inner])))
        result["max_deviation_v"] = float(np.max(np.abs(v - GHIA_V[int(re)][inner])))
        result["u_centre"] = u.tolist()
        result["v_centre"] = v.tolist()
    return model, result
