"""Nonlinear PDEs solved by Gauss-Newton kernel collocation, with their references.

- ``elliptic``: ``-laplacian u + u^3 = f`` on [0, 1]^2, Dirichlet data,
  ``u = sin(pi x) sin(pi y) + 2 sin(4 pi x) sin(4 pi y)`` (Chen, Hosseini, Owhadi
  and Stuart, J. Comput. Phys. 447, 2021): random interior collocation points
  and evenly spaced boundary points; error on a 100 x 100 grid.
- ``burgers``: ``u_t + u u_x - nu u_xx = 0``, nu = 0.02, x in [-1, 1], t in [0, 1],
  ``u(x, 0) = -sin(pi x)``, ``u(+-1, t) = 0``; the reference by the Cole-Hopf
  transform with Gauss-Hermite quadrature; error on a 101 x 51 grid.

Both fit ``pigp.PIGP`` with a squared-exponential kernel and the default
Gauss-Newton settings (``pigp.fitting.Solver``).
"""

from __future__ import annotations

import time

import numpy as np

from .report import accuracy, figure, finish, jsonable

__all__ = [
    "NONLINEAR",
    "elliptic_solution",
    "elliptic_design",
    "elliptic_equation",
    "burgers_reference",
    "burgers_design",
    "burgers_equation",
    "rectangle_grid",
]

PI = np.pi


# ----- -laplacian u + u^3 = f ---------------------------------------------------------------
def elliptic_solution(X) -> np.ndarray:
    x, y = X[:, 0], X[:, 1]
    return np.sin(PI * x) * np.sin(PI * y) + 2 * np.sin(4 * PI * x) * np.sin(4 * PI * y)


def _elliptic_forcing(X) -> np.ndarray:
    x, y = X[:, 0], X[:, 1]
    laplacian = -2 * PI**2 * np.sin(PI * x) * np.sin(PI * y) - 64 * PI**2 * np.sin(
        4 * PI * x
    ) * np.sin(4 * PI * y)
    return -laplacian + elliptic_solution(X) ** 3


def elliptic_design(interior: int = 900, boundary: int = 124, seed: int = 0) -> dict:
    """Random interior points (f there) and ``boundary`` evenly spaced boundary points
    (u there), as in Chen et al.'s setup."""
    rng = np.random.default_rng(seed)
    X_f = rng.uniform(0, 1, (interior, 2))
    side = boundary // 4
    s = np.linspace(0, 1, side, endpoint=False)
    X_b = np.concatenate(
        [np.c_[s, 0 * s], np.c_[1 + 0 * s, s], np.c_[1 - s, 1 + 0 * s], np.c_[0 * s, 1 - s]]
    )
    return {
        "X_b": X_b,
        "y_b": elliptic_solution(X_b),
        "X_f": X_f,
        "y_f": _elliptic_forcing(X_f),
    }


def _cube(v, p):
    return -v["lap"] + v["u"] ** 3


def elliptic_equation():
    """``-laplacian u + u^3`` as a ``pigp.operators.nonlinear`` equation."""
    from pigp.operators import Identity, laplacian, nonlinear

    return nonlinear(_cube, {"u": Identity, "lap": laplacian("x", "y")}).with_dims("x", "y")


# ----- Burgers -------------------------------------------------------------------------------
def burgers_reference(X, nu: float = 0.02, quadrature: int = 300) -> np.ndarray:
    """Burgers' ``u(x, t)`` with ``u(x, 0) = -sin(pi x)``, ``u(+-1, t) = 0``, by the
    Cole-Hopf transform: ``u = -int sin(pi(x - s)) g(x - s) e^{-s^2/4 nu t} ds /
    int g(x - s) e^{-s^2/4 nu t} ds``, ``g(y) = exp(-cos(pi y) / (2 pi nu))``, each
    integral by Gauss-Hermite quadrature in ``s = sqrt(4 nu t) z``."""
    X = np.asarray(X, dtype=np.float64)
    z, w = np.polynomial.hermite.hermgauss(quadrature)
    x, t = X[:, :1], X[:, 1:]
    y = x - np.sqrt(4 * nu * np.maximum(t, 1e-300)) * z[None, :]
    exponent = -np.cos(PI * y) / (2 * PI * nu)
    g = np.exp(exponent - exponent.max(axis=1, keepdims=True))
    u = -(w * np.sin(PI * y) * g).sum(axis=1) / (w * g).sum(axis=1)
    return np.where(X[:, 1] == 0, -np.sin(PI * X[:, 0]), u)


def burgers_design(interior: int = 1000, boundary: int = 200, seed: int = 0) -> dict:
    """Random interior collocation points (``f = 0`` there) and ``boundary`` random
    points: half on ``t = 0`` (``-sin(pi x)``), a quarter on each wall (0)."""
    rng = np.random.default_rng(seed)
    X_f = np.c_[rng.uniform(-1, 1, interior), rng.uniform(0, 1, interior)]
    initial = boundary // 2
    wall = (boundary - initial) // 2
    other = boundary - initial - wall
    X_b = np.concatenate(
        [
            np.c_[rng.uniform(-1, 1, initial), np.zeros(initial)],
            np.c_[-np.ones(wall), rng.uniform(0, 1, wall)],
            np.c_[np.ones(other), rng.uniform(0, 1, other)],
        ]
    )
    y_b = np.where(X_b[:, 1] == 0, -np.sin(PI * X_b[:, 0]), 0.0)
    return {"X_b": X_b, "y_b": y_b, "X_f": X_f, "y_f": np.zeros(interior)}


def _burgers(v, p):
    return v["t"] + v["u"] * v["x"] - p["nu"] * v["xx"]


def burgers_equation(nu):
    """``u_t + u u_x - nu u_xx`` on columns ``(x, t)``; ``nu`` a number or a Parameter."""
    import pigp
    from pigp.operators import D, Identity, nonlinear

    if not isinstance(nu, pigp.Parameter):
        nu = pigp.Parameter(float(nu), trainable=False)
    features = {"u": Identity, "t": D("t"), "x": D("x"), "xx": D("x", 2)}
    return nonlinear(_burgers, features, {"nu": nu}).with_dims("x", "t")


def burgers_kernel(steepening: bool = False, forming: bool = False):
    """The rational quadratic on x warped around the front at x = 0 (``tanh_front``,
    strength 0.5 and width 0.05 to start), lengthscales (0.2, 0.3) to start (x's
    in the warped coordinate). ``steepening``: the warp's width shrinks in time
    (``steepening_front``, width ``0.15 exp(-rate t)`` and rate 0.5 to start), as the
    front does. ``forming``: the width settles from 5 times its value at t = 0 to
    its value (``forming_front``, width 0.05 and rate 5 to start), as the front forms
    (by t = 1/pi for -sin(pi x)) and then keeps its width."""
    import pigp

    def warped_by_time(warp, start):
        return pigp.kernels.Warped(
            pigp.kernels.RationalQuadratic(lengthscales=[0.2, 0.3]),
            [warp, None],
            start,
            inputs=[(0, 1), None],
        )

    if forming:
        return warped_by_time(
            pigp.kernels.forming_front, {"strength": 0.5, "width": 0.05, "rate": 5.0}
        )
    if steepening:
        return warped_by_time(
            pigp.kernels.steepening_front, {"strength": 0.5, "width": 0.15, "rate": 0.5}
        )
    return pigp.kernels.Warped(
        pigp.kernels.RationalQuadratic(lengthscales=[0.2, 0.3]),
        [pigp.kernels.tanh_front, None],
        {"strength": 0.5, "width": 0.05},
    )


def rectangle_grid(low, high, counts) -> np.ndarray:
    """The points of a grid of ``counts`` per column from ``low`` to ``high``."""
    axes = [np.linspace(a, b, n) for a, b, n in zip(low, high, counts)]
    return np.stack([g.ravel() for g in np.meshgrid(*axes)], axis=1)


def _solve(out, name, model, design, X_test, reference, extra, labels, bounds):
    from pigp import plotting

    truth = reference(X_test)
    start = time.perf_counter()
    model.fit(design["X_b"], design["y_b"], design["X_f"], design["y_f"])
    seconds = time.perf_counter() - start
    mean, var = model.predict(X_test)
    metrics = {
        "experiment": name,
        **extra,
        "n_f": len(design["X_f"]),
        "n_boundary": len(design["X_b"]),
        **accuracy(mean, var, truth),
        "rms_error": float(np.sqrt(np.mean((mean - truth) ** 2))),
        "fit_seconds": seconds,
        "gauss_newton_iterations": len(model.gauss_newton),
        "learning_phases": int(sum(s.learned for s in model.gauss_newton)),
        "last_change": model.gauss_newton[-1].change,
        "parameters": jsonable(model.parameter_values()),
    }

    X_map, _ = plotting.grid(60, bounds)
    mean_map, var_map = model.predict(X_map)

    def draw(fig):
        plotting.posterior_maps(
            X_map,
            mean_map,
            var_map,
            truth=reference(X_map),
            points={"boundary": design["X_b"], "collocation": design["X_f"]},
            axes=fig.subplots(2, 2),
            labels=labels,
        )

    figure(out, f"{name}.png", draw, (9.0, 7.4))
    return finish(out, metrics)


def elliptic(out: str, seed: int = 0, quick: bool = False, dtype: str = "float64") -> dict:
    """-laplacian u + u^3 = f on the unit square by Gauss-Newton collocation.

    Chen et al.'s problem: u = sin(pi x) sin(pi y) + 2 sin(4 pi x) sin(4 pi y),
    900 random interior points with f and 124 boundary points with u (--quick:
    200 and 40); squared-exponential kernel, hyper-parameters learned by the
    linearised model's marginal likelihood. Reports the RMS and relative L2 error
    on a 100 x 100 grid (50 x 50 with --quick), the Gauss-Newton iterations and
    the time.
    """
    import pigp

    interior, boundary, side = (200, 40, 50) if quick else (900, 124, 100)
    design = elliptic_design(interior, boundary, seed)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(lengthscales=[0.2, 0.2]), elliptic_equation(), dtype=dtype
    )
    X = rectangle_grid((0, 0), (1, 1), (side, side))
    extra = {"seed": seed, "dtype": dtype}
    return _solve(
        out, "elliptic", model, design, X, elliptic_solution, extra, ("x", "y"), ((0, 1), (0, 1))
    )


def burgers(out: str, seed: int = 0, quick: bool = False, dtype: str = "float64") -> dict:
    """Burgers' equation u_t + u u_x - 0.02 u_xx = 0 by Gauss-Newton collocation.

    x in [-1, 1], t in [0, 1], u(x, 0) = -sin(pi x), u(+-1, t) = 0: 1000 random
    interior collocation points and 200 boundary points (--quick: 300 and 80,
    with nu = 0.1); a rational-quadratic kernel (a scale mixture of squared
    exponentials) on x warped by ``pigp.kernels.tanh_front`` around x = 0, where
    the characteristics of -sin(pi x) meet and the front forms: short
    lengthscales at the front, long ones elsewhere (``burgers_kernel``). Its
    lengthscales, its shape and the warp's strength and width are learned by the
    linearised model's marginal likelihood (``benchmarks/nonlinear.py`` compares
    it with the plain squared exponential and rational quadratic, seeds 0-4).
    Reports the RMS error
    against the Cole-Hopf solution on a 101 x 51 grid, the Gauss-Newton
    iterations and the time.
    """
    import pigp

    interior, boundary, nu = (300, 80, 0.1) if quick else (1000, 200, 0.02)
    design = burgers_design(interior, boundary, seed)
    model = pigp.PIGP(burgers_kernel(), burgers_equation(nu), dtype=dtype)
    X = rectangle_grid((-1, 0), (1, 1), (101, 51))
    extra = {"seed": seed, "dtype": dtype, "nu": nu}
    return _solve(
        out,
        "burgers",
        model,
        design,
        X,
        lambda points: burgers_reference(points, nu),
        extra,
        ("x", "t"),
        ((-1, 1), (0, 1)),
    )


NONLINEAR = {"elliptic": elliptic, "burgers": burgers}
