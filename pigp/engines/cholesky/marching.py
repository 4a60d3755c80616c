"""Evolution equations by space-time collocation in time windows: ``march``.

Gauss-Newton over the whole space-time domain at once has to find every phase of an
evolution at the same time, and from ``u = 0`` it may not find it at all (Allen-Cahn with
``eps = 1e-4`` at 12,800 points: 0.43 from the reference after 25 steps, not converged).
``march`` solves one window ``[t_k, t_k+1]`` after another: each window is a collocation
problem of its own (``collocation.gauss_newton``), its data the state at ``t_k`` (the
initial state, or the last window's solution at its final time) and the walls' values
inside the window; the equation holds at the space points times the window's times.
Each window's factor is small, and Gauss-Newton starts near the solution of a short
time.

The window's posterior is the GP's given its own data, so the uncertainty of the state
handed over is not carried on: ``march`` returns means.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ... import _validation as validate
from .collocation import gauss_newton

__all__ = ["march", "Marching"]


@dataclass
class Marching:
    """The solution of ``march``.

    Attributes:
        times: array (n_t,): every time of the equation's points, window after window.
        u: array (n_t, n_s): the solution at the space points at each of ``times``.
        steps: the number of Gauss-Newton steps of each window.
        converged: whether each window's Gauss-Newton converged.
        seconds: the time of each window.
        pcg: the conjugate-gradient iterations of each window's solves.
    """

    times: np.ndarray
    u: np.ndarray
    steps: list = field(default_factory=list)
    converged: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    pcg: list = field(default_factory=list)


def march(
    equation,
    kernel,
    space,
    walls,
    initial,
    wall_values,
    windows,
    times_per_window: int,
    forcing=None,
    rho: float = 5.0,
    nugget: float = 1e-12,
    tolerance: float = 1e-8,
    iterations: int = 30,
) -> Marching:
    """Solve an evolution equation ``F(L_1 u, ..., L_m u) = forcing`` in (space, t)
    window by window.

    Args:
        equation: a ``pigp.operators.Nonlinear`` of one field, its last input column the
            time (as ``collocation.gauss_newton`` takes it).
        kernel: the prior covariance of u over (space, t) (a Matérn screens).
        space: array (n_s, d_s): the space points where the equation holds.
        walls: array (n_w, d_s): the boundary points of space where u is given.
        initial: array (n_w + n_s,): u at ``walls`` then ``space`` at the first time.
        wall_values: ``t -> array (n_w,)``: u at ``walls`` at time ``t``.
        windows: array (K + 1,): the windows' edges in time, increasing.
        times_per_window: the equation's times in each window: equally spaced, the
            window's end included and its start (where the state is given) not.
        forcing: ``(X) -> array (n,)`` for points ``X`` (n, d_s + 1), or None (zero).
        rho, nugget, tolerance, iterations: ``collocation.gauss_newton``'s, per window.

    Returns:
        A ``Marching``.
    """
    space = validate.as_inputs("space", space)
    walls = validate.as_inputs("walls", walls, space.shape[1])
    n_s, n_w = len(space), len(walls)
    state = validate.as_targets("initial", initial, n_w + n_s, "walls and space")
    windows = np.asarray(windows, np.float64).reshape(-1)
    if len(windows) < 2 or not np.all(np.isfinite(windows)) or np.any(np.diff(windows) <= 0):
        raise ValueError(
            f"windows: expected at least two increasing finite times, got {windows.tolist()}"
        )
    if not (isinstance(times_per_window, (int, np.integer)) and times_per_window >= 1):
        raise ValueError(f"times_per_window: expected an integer >= 1, got {times_per_window!r}")
    result = Marching(np.zeros(0), np.zeros((0, n_s)))
    times, rows = [], []
    for start, stop in zip(windows[:-1], windows[1:]):
        clock = time.perf_counter()
        t = start + (stop - start) * np.arange(1, times_per_window + 1) / times_per_window
        interior = np.concatenate([np.c_[space, np.full(n_s, s)] for s in t])
        at_walls = np.concatenate([np.c_[walls, np.full(n_w, s)] for s in t])
        values_at_walls = np.concatenate([_wall(wall_values, s, n_w) for s in t])
        boundary = np.concatenate(
            [np.c_[walls, np.full(n_w, start)], np.c_[space, np.full(n_s, start)], at_walls]
        )
        values = np.concatenate([state, values_at_walls])
        f = np.zeros(len(interior)) if forcing is None else np.asarray(forcing(interior))
        solution = gauss_newton(
            equation,
            kernel,
            boundary,
            values,
            interior,
            f,
            rho=rho,
            nugget=nugget,
            tolerance=tolerance,
            iterations=iterations,
        )
        u = solution.u[len(boundary) :].reshape(times_per_window, n_s)
        times.append(t)
        rows.append(u)
        state = np.concatenate([values_at_walls[-n_w:] if n_w else np.zeros(0), u[-1]])
        result.steps.append(len(solution.steps))
        result.converged.append(bool(solution.converged))
        result.seconds.append(time.perf_counter() - clock)
        result.pcg.append(list(solution.engine.timings.iterations))
    result.times, result.u = np.concatenate(times), np.concatenate(rows)
    return result


def _wall(wall_values, t: float, n_w: int) -> np.ndarray:
    values = np.asarray(wall_values(t), np.float64).reshape(-1)
    if values.shape != (n_w,) or not np.all(np.isfinite(values)):
        raise ValueError(
            f"wall_values: expected {n_w} finite values at t = {t:g}, got {values.tolist()}"
        )
    return values
