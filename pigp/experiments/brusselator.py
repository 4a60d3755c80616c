"""A nonlinear reaction-diffusion system in time: the Brusselator, by space-time collocation.

Two species u, v on x in [0, 1], t in [0, T] (Prigogine & Lefever, J. Chem. Phys. 48,
1968), each with a Gaussian-process prior over (x, t):

    u_t - d u_xx - a + (b + 1) u - u^2 v = 0,
    v_t - d v_xx - b u + u^2 v = 0,

a system of two nonlinear equations in the features of two fields, solved by
Gauss-Newton at collocation points of the space-time rectangle
(``pigp.operators.nonlinear`` with a residual of two tensors). The data are the initial
state, u = a + s sin(pi x) and v = b / a - s sin(pi x), and the walls held at the
homogeneous state (u = a, v = b / a). With b > 1 + a^2 (the default a = 1, b = 3) that
state is unstable without diffusion, and the species oscillate.

``brusselator_reference`` integrates the same system by the method of lines (second-order
central differences on a fine grid, SciPy's BDF at tight tolerances): the reference the
collocation is measured against.
"""

from __future__ import annotations

import time

import numpy as np

from .report import relative_l2

__all__ = [
    "brusselator",
    "brusselator_residual",
    "brusselator_initial",
    "brusselator_reference",
    "brusselator_design",
    "brusselator_fit",
    "A",
    "B",
    "DIFFUSION",
    "AMPLITUDE",
    "FINAL_TIME",
]

A, B, DIFFUSION, AMPLITUDE, FINAL_TIME = 1.0, 3.0, 0.02, 0.5, 2.0


def brusselator_residual(v, p):
    """The two species' equations at the features ``v`` and parameters ``p``."""
    feed = v["u"] ** 2 * v["v"]
    first = v["u_t"] - p["d"] * v["u_xx"] - p["a"] + (p["b"] + 1.0) * v["u"] - feed
    second = v["v_t"] - p["d"] * v["v_xx"] - p["b"] * v["u"] + feed
    return first, second


def brusselator(a=A, b=B, d=DIFFUSION):
    """The Brusselator in the fields ``u``, ``v`` over the columns ``x``, ``t``: a
    ``Nonlinear`` system of two equations; ``a``, ``b``, ``d`` numbers or
    ``pigp.Parameter``s to learn."""
    from ..operators import D, field, nonlinear

    u, v = field("u"), field("v")
    features = {
        "u": u,
        "v": v,
        "u_t": D("t") @ u,
        "v_t": D("t") @ v,
        "u_xx": D("x", 2) @ u,
        "v_xx": D("x", 2) @ v,
    }
    return nonlinear(brusselator_residual, features, {"a": a, "b": b, "d": d}).with_dims("x", "t")


def brusselator_initial(x, a: float = A, b: float = B, amplitude: float = AMPLITUDE) -> tuple:
    """The initial state ``(u, v)`` at abscissae ``x``: the homogeneous state, perturbed
    by ``amplitude sin(pi x)`` (up in u, down in v); it meets the walls' values."""
    bump = amplitude * np.sin(np.pi * np.asarray(x, np.float64))
    return a + bump, b / a - bump


def brusselator_reference(
    x, t, points: int = 2001, a: float = A, b: float = B, d: float = DIFFUSION
) -> tuple:
    """``(u, v)`` on the grid ``x`` (n_x,) by ``t`` (n_t,), arrays (n_t, n_x), by the
    method of lines: second-order central differences at ``points`` equally spaced
    abscissae (walls included; each ``x`` is placed at the nearest of them, so choose
    ``points`` such that they are among them), SciPy's BDF with a relative tolerance of
    1e-10 and an absolute of 1e-12, its dense output read at each ``t``."""
    import scipy.sparse as sp
    from scipy.integrate import solve_ivp

    grid = np.linspace(0.0, 1.0, points)
    h = grid[1] - grid[0]
    inner = grid[1:-1]
    u0, v0 = brusselator_initial(inner, a, b)
    m = len(inner)
    wall_u, wall_v = a, b / a

    def rates(_, state):
        u, v = state[:m], state[m:]
        uu = np.concatenate([[wall_u], u, [wall_u]])
        vv = np.concatenate([[wall_v], v, [wall_v]])
        u_xx = (uu[:-2] - 2 * u + uu[2:]) / h**2
        v_xx = (vv[:-2] - 2 * v + vv[2:]) / h**2
        feed = u * u * v
        return np.concatenate([d * u_xx + a - (b + 1.0) * u + feed, d * v_xx + b * u - feed])

    band = sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(m, m))
    coupling = sp.eye(m)
    sparsity = sp.bmat([[band, coupling], [coupling, band]])
    solution = solve_ivp(
        rates,
        (0.0, float(np.max(t))),
        np.concatenate([u0, v0]),
        method="BDF",
        jac_sparsity=sparsity,
        rtol=1e-10,
        atol=1e-12,
        dense_output=True,
    )
    if not solution.success:
        raise RuntimeError(f"brusselator_reference: the integration failed: {solution.message}")
    states = solution.sol(np.asarray(t, np.float64)).T  # (n_t, 2 m)
    full_u = np.concatenate(
        [np.full((len(states), 1), wall_u), states[:, :m], np.full((len(states), 1), wall_u)], 1
    )
    full_v = np.concatenate(
        [np.full((len(states), 1), wall_v), states[:, m:], np.full((len(states), 1), wall_v)], 1
    )
    at = np.rint(np.asarray(x, np.float64) / h).astype(int)
    return full_u[:, at], full_v[:, at]


def brusselator_design(n_x: int = 12, n_t: int = 12, final: float = FINAL_TIME) -> tuple:
    """``(X_f, X_0, X_w)``: an ``n_x`` x ``n_t`` grid of collocation points inside the
    space-time rectangle (t up to ``final`` included), ``n_x + 2`` initial points on
    t = 0 (walls included) and ``n_t`` points on each wall."""
    xs = np.linspace(0.0, 1.0, n_x + 2)[1:-1]
    ts = np.linspace(0.0, final, n_t + 1)[1:]
    X_f = np.stack(np.meshgrid(xs, ts), axis=-1).reshape(-1, 2)
    x0 = np.linspace(0.0, 1.0, n_x + 2)
    X_0 = np.stack([x0, np.zeros_like(x0)], axis=1)
    X_w = np.concatenate([np.stack([np.full_like(ts, wall), ts], axis=1) for wall in (0.0, 1.0)])
    return X_f, X_0, X_w


def brusselator_fit(
    n_x: int = 12,
    n_t: int = 12,
    final: float = FINAL_TIME,
    kernel=None,
    test: int = 41,
    verbose: bool = False,
) -> tuple:
    """Fit the Brusselator from its initial state and walls at ``n_x`` x ``n_t``
    collocation points, and compare with the method of lines on a ``test`` x ``test``
    grid of the rectangle.

    Returns:
        ``(model, result)``: the fitted ``pigp.PIGP`` and a dict with u's and v's relative
        L2 errors and the shares of the test grid inside their 95% bands, the fit's
        seconds, the number of values and the Gauss-Newton iterations.
    """
    import pigp
    from pigp.operators import field

    X_f, X_0, X_w = brusselator_design(n_x, n_t, final)
    u_0, v_0 = brusselator_initial(X_0[:, 0])
    observations = [
        pigp.Observations(X_0, u_0, field("u"), name="u_initial"),
        pigp.Observations(X_0, v_0, field("v"), name="v_initial"),
        pigp.Observations(X_w, np.full(len(X_w), A), field("u"), name="u_walls"),
        pigp.Observations(X_w, np.full(len(X_w), B / A), field("v"), name="v_walls"),
    ]
    kernel = kernel or pigp.kernels.SquaredExponential
    model = pigp.PIGP({"u": kernel(), "v": kernel()}, brusselator())
    start = time.perf_counter()
    model.fit(X_f=X_f, y_f=np.zeros((len(X_f), 2)), observations=observations, verbose=verbose)
    seconds = time.perf_counter() - start
    xs, ts = np.linspace(0.0, 1.0, test), np.linspace(0.0, final, test)
    exact = dict(zip("uv", brusselator_reference(xs, ts, points=50 * (test - 1) + 1)))
    X = np.stack(np.meshgrid(xs, ts), axis=-1).reshape(-1, 2)
    result = {"seconds": seconds, "values": int(sum(model.data.sizes))}
    result["gauss_newton"] = len(model.gauss_newton)
    result["converged"] = bool(model.gauss_newton[-1].change < 1e-5)
    for name in "uv":
        truth = exact[name].reshape(-1)
        mean, var = model.predict(X, name)
        result[f"error_{name}"] = relative_l2(mean, truth)
        inside = np.abs(mean - truth) <= 1.959964 * np.sqrt(var)
        result[f"coverage_{name}"] = float(np.mean(inside))
    return model, result
