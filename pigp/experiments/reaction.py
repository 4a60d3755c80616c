"""Reaction-diffusion inverse problems: a coefficient of a nonlinear reaction term
learned from noisy values of u, with the equation at collocation points and initial
and boundary values.

- ``fisher_kpp``: ``u_t = 0.01 u_xx + r u (1 - u)``, r = 2, a bump
  ``u(x, 0) = 0.1 + 0.8 exp(-((x - 0.3) / 0.1)^2)`` growing and spreading on
  [0, 1] x [0, 1] (no flux through the ends);
- ``allen_cahn``: ``u_t = 0.01 u_xx + a (u - u^3)``, a = 2, from
  ``u(x, 0) = x^2 cos(pi x)`` on [-1, 1] x [0, 1] (periodic in x), the phases
  separating into fronts;
- ``zeldovich``: ``u_t = D u_xx + k u^2 (1 - u)``, D = 0.01 and k = 5 both learned,
  an ignition front from ``u(x, 0) = 0.9 / (1 + exp((x - 0.2) / 0.05))`` (no flux).

The references are method-of-lines solutions (second-order differences on 801 points,
LSODA at tolerances 1e-10) interpolated by bicubic splines. ``design`` draws the data
as ``benchmarks/reaction_inverse.py`` uses them.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["PROBLEMS", "reference", "design", "equation"]

#: name: (true coefficients, diffusivity if known, x range, t range, boundary kind)
PROBLEMS = {
    "fisher_kpp": {"truth": {"r": 2.0}, "x": (0.0, 1.0), "t": (0.0, 1.0), "walls": "no flux"},
    "allen_cahn": {"truth": {"a": 2.0}, "x": (-1.0, 1.0), "t": (0.0, 1.0), "walls": "periodic"},
    "zeldovich": {
        "truth": {"D": 0.01, "k": 5.0},
        "x": (0.0, 1.0),
        "t": (0.0, 1.0),
        "walls": "no flux",
    },
}


def _initial(name: str, x):
    if name == "fisher_kpp":
        return 0.1 + 0.8 * np.exp(-(((x - 0.3) / 0.1) ** 2))
    if name == "allen_cahn":
        return x**2 * np.cos(np.pi * x)
    return 0.9 / (1 + np.exp((x - 0.2) / 0.05))


def _reaction(name: str, u, truth: dict):
    if name == "fisher_kpp":
        return truth["r"] * u * (1 - u)
    if name == "allen_cahn":
        return truth["a"] * (u - u**3)
    return truth["k"] * u**2 * (1 - u)


@functools.lru_cache(maxsize=8)
def _spline(name: str, points: int = 801):
    from scipy.integrate import solve_ivp
    from scipy.interpolate import RectBivariateSpline

    problem = PROBLEMS[name]
    truth = problem["truth"]
    diffusivity = truth.get("D", 0.01)
    (x0, x1), (t0, t1) = problem["x"], problem["t"]
    periodic = problem["walls"] == "periodic"
    x = np.linspace(x0, x1, points)
    h = x[1] - x[0]

    def rhs(_, u):
        if periodic:  # the last point is the first
            v = u[:-1]
            lap = (np.roll(v, -1) - 2 * v + np.roll(v, 1)) / h**2
            lap = np.append(lap, lap[0])
        else:
            lap = np.empty_like(u)
            lap[1:-1] = (u[2:] - 2 * u[1:-1] + u[:-2]) / h**2
            lap[0] = 2 * (u[1] - u[0]) / h**2
            lap[-1] = 2 * (u[-2] - u[-1]) / h**2
        return diffusivity * lap + _reaction(name, u, truth)

    times = np.linspace(t0, t1, 401)
    solution = solve_ivp(
        rhs, (t0, t1), _initial(name, x), t_eval=times, method="LSODA", rtol=1e-10, atol=1e-12
    )
    return RectBivariateSpline(x, times, solution.y, kx=3, ky=3)


def reference(name: str, X) -> np.ndarray:
    """The reference u at points ``X`` (n, 2) of columns (x, t)."""
    X = np.asarray(X, dtype=np.float64)
    return _spline(name).ev(X[:, 0], X[:, 1])


def design(name: str, values: int = 150, collocation: int = 400, noise: float = 0.01, seed=0):
    """The data of an inverse problem: ``values`` u values at random points with
    Gaussian noise of std ``noise`` times their RMS, the equation (``f = 0``) at
    ``collocation`` random points, 20 exact values on t = 0 and 20 on each wall.

    Returns:
        dict: ``X_u, y_u, X_f, y_f, X_b, y_b`` and ``noise_std`` (data units).
    """
    problem = PROBLEMS[name]
    (x0, x1), (t0, t1) = problem["x"], problem["t"]
    rng = np.random.default_rng(seed)

    def inside(n):
        return np.c_[rng.uniform(x0, x1, n), rng.uniform(t0, t1, n)]

    X_u = inside(values)
    clean = reference(name, X_u)
    std = noise * float(np.sqrt(np.mean(clean**2)))
    X_f = inside(collocation)
    s = np.linspace(0, 1, 20)
    X_b = np.concatenate(
        [
            np.c_[x0 + (x1 - x0) * s, t0 + 0 * s],
            np.c_[x0 + 0 * s, t0 + (t1 - t0) * s],
            np.c_[x1 + 0 * s, t0 + (t1 - t0) * s],
        ]
    )
    return {
        "X_u": X_u,
        "y_u": clean + std * rng.standard_normal(values),
        "X_f": X_f,
        "y_f": np.zeros(collocation),
        "X_b": X_b,
        "y_b": reference(name, X_b),
        "noise_std": std,
    }


def _fisher_kpp(v, p):
    return v["t"] - 0.01 * v["xx"] - p["r"] * v["u"] * (1 - v["u"])


def _allen_cahn(v, p):
    return v["t"] - 0.01 * v["xx"] - p["a"] * (v["u"] - v["u"] ** 3)


def _zeldovich(v, p):
    return v["t"] - p["D"] * v["xx"] - p["k"] * v["u"] ** 2 * (1 - v["u"])


def equation(name: str, start: dict):
    """The problem's equation with its unknown coefficients as positive
    ``pigp.Parameter``s started at ``start`` (``{name: value}``)."""
    import pigp
    from pigp.operators import D, Identity, nonlinear

    residual = {"fisher_kpp": _fisher_kpp, "allen_cahn": _allen_cahn, "zeldovich": _zeldovich}
    parameters = {k: pigp.Parameter(float(v), positive=True) for k, v in start.items()}
    features = {"u": Identity, "t": D("t"), "xx": D("x", 2)}
    return nonlinear(residual[name], features, parameters).with_dims("x", "t")
