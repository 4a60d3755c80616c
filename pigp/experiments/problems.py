"""Example problems beyond the heat equation, each with an exact solution.

Each is an experiment (``pigp NAME --out DIR --seed S``, or
``python examples/NAME.py``): it draws a design from the seed, fits a model with
default settings, writes ``metrics.json`` and a figure, and prints the metrics:
the relative L2 error of u on a test grid, the 95% band coverage, and every
learned coefficient with its Laplace standard deviation.

- ``poisson1d``: ``u'' = f`` on [0, 1], Dirichlet values at both ends.
- ``advection_diffusion``: ``u_t + c u_x - nu u_xx = f``, c and nu learned.
- ``wave``: ``u_tt - c^2 u_xx = 0``, the speed c learned.
- ``helmholtz2d``: ``u_xx + u_yy + 4 u = f`` on the unit square, Dirichlet data
  on three sides and Neumann data (``u_y``) on the fourth.
- ``heat2d``: ``u_t - (u_xx + u_yy) = f`` in (x, y, t).
"""

from __future__ import annotations

import time

import numpy as np

from .report import MAPS_SIZE, accuracy, figure, finish, jsonable

__all__ = ["PROBLEMS"]


def _lhs(seed: int, n: int, d: int, low=0.0, high=1.0) -> np.ndarray:
    from scipy.stats import qmc

    return low + (high - low) * qmc.LatinHypercube(d=d, seed=seed).random(n)


def _fit_and_report(
    out, name, model, data, X_test, u_test, learned, quick, draw, extra=None, noise=0.0
) -> dict:
    """Fit ``model`` to ``data`` (every target with Gaussian noise of ``noise`` times its
    RMS, drawn from the seed in ``extra``), then report and draw."""
    X_u, y_u, X_f, y_f, observations = _noisy(data, noise, (extra or {}).get("seed", 0))
    steps = 300 if quick else 2000
    start = time.perf_counter()
    model.fit(X_u, y_u, X_f, y_f, observations=observations, steps=steps)
    seconds = time.perf_counter() - start
    mean, var = model.predict(X_test)
    metrics = {
        "experiment": name,
        "steps": steps,
        **(extra or {}),
        "noise": noise,
        "n_u": 0 if X_u is None else len(X_u),
        "n_f": len(X_f),
        "n_boundary": int(sum(len(o.X) for o in observations)),
        **accuracy(mean, var, u_test),
        "fit_seconds": seconds,
        "parameters": jsonable(model.parameter_values()),
    }
    if learned:
        std = model.parameter_uncertainty()
        metrics["learned"] = {
            key: {
                "true": true,
                "start": start_value,
                "estimate": float(model.parameter_values()[key]),
                "abs_error": abs(float(model.parameter_values()[key]) - true),
                "laplace_std": float(std[key]),
            }
            for key, (true, start_value) in learned.items()
        }
    figure(
        out,
        f"{name}.png",
        lambda fig: draw(fig, model, mean, var),
        getattr(draw, "size", (7.0, 4.5)),
    )
    return finish(out, metrics)


def _noisy(data, level: float, seed: int):
    """``data`` with Gaussian noise of ``level`` times each set's RMS on its targets
    (u's drawn first, then f's, then each observation set's)."""
    import pigp

    from .heat import add_noise

    if level == 0:
        return data
    X_u, y_u, X_f, y_f, observations = data
    rng = np.random.default_rng(seed + 7919)
    y_u = None if y_u is None else add_noise(y_u, level, rng)
    y_f = add_noise(y_f, level, rng)
    observations = [
        pigp.Observations(
            o.X,
            add_noise(o.y, level, rng),
            o.operator,
            noise=None if o.noise_decided_by_fit else o.noise,
            name=o.name,
        )
        for o in observations
    ]
    return X_u, y_u, X_f, y_f, observations


def _maps(X, truth, points, labels=("x", "t")):
    from pigp import plotting

    def draw(fig, model, mean, var):
        plotting.posterior_maps(
            X, mean, var, truth=truth, points=points, axes=fig.subplots(2, 2), labels=labels
        )

    draw.size = MAPS_SIZE
    return draw


# ----- 1-D Poisson -----------------------------------------------------------------------
def poisson1d(
    out: str, seed: int = 0, quick: bool = False, dtype: str = "float64", noise: float = 0.0
) -> dict:
    """1-D Poisson u'' = f on [0, 1]: u = sin(2 pi x) + x / 2, f at 12 points, u(0), u(1)."""
    import pigp
    from pigp.operators import D

    u = lambda x: np.sin(2 * np.pi * x) + 0.5 * x  # noqa: E731
    f = lambda x: -4 * np.pi**2 * np.sin(2 * np.pi * x)  # noqa: E731
    X_f = _lhs(seed, 12, 1)
    X_b = np.array([[0.0], [1.0]])
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), D("x", 2), dims=("x",), dtype=dtype)
    x = np.linspace(0, 1, 201)[:, None]

    def draw(fig, model, mean, var):
        ax = fig.subplots()
        std = np.sqrt(var)
        ax.plot(x[:, 0], mean, label="posterior mean")
        ax.fill_between(x[:, 0], mean - 2 * std, mean + 2 * std, alpha=0.3, label="±2σ")
        ax.plot(x[:, 0], u(x[:, 0]), "k--", lw=1, label="exact")
        ax.plot(X_b[:, 0], u(X_b[:, 0]), "ko", label="u data")
        ax.plot(X_f[:, 0], np.interp(X_f[:, 0], x[:, 0], mean), "rx", label="f data at")
        ax.set_xlabel("x")
        ax.legend()

    return _fit_and_report(
        out,
        "poisson1d",
        model,
        (X_b, u(X_b[:, 0]), X_f, f(X_f[:, 0]), []),
        x,
        u(x[:, 0]),
        {},
        quick,
        draw,
        {"seed": seed, "dtype": dtype},
        noise,
    )


# ----- advection-diffusion ---------------------------------------------------------------------
def advection_diffusion(
    out: str, seed: int = 0, quick: bool = False, dtype: str = "float64", noise: float = 0.0
) -> dict:
    """Advection-diffusion u_t + c u_x - nu u_xx = f with c = 1, nu = 0.1 learned from 0.5, 0.5.

    u = e^-t sin(pi x) + x (1 - x) e^(-2t); u at 30 and f at 30 Latin-hypercube points.
    """
    import pigp
    from pigp import plotting
    from pigp.operators import D

    c_true, nu_true = 1.0, 0.1
    u = lambda X: (
        np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0]) + X[:, 0] * (1 - X[:, 0]) * np.exp(-2 * X[:, 1])
    )  # noqa: E731

    def f(X):
        x, t = X[:, 0], X[:, 1]
        u_t = -np.exp(-t) * np.sin(np.pi * x) - 2 * x * (1 - x) * np.exp(-2 * t)
        u_x = np.pi * np.exp(-t) * np.cos(np.pi * x) + (1 - 2 * x) * np.exp(-2 * t)
        u_xx = -(np.pi**2) * np.exp(-t) * np.sin(np.pi * x) - 2 * np.exp(-2 * t)
        return u_t + c_true * u_x - nu_true * u_xx

    c = pigp.Parameter(0.5, name="c")
    nu = pigp.Parameter(0.5, name="nu")
    operator = (D("t") + c * D("x") - nu * D("x", 2)).with_dims("x", "t")
    X_u, X_f = _lhs(seed, 30, 2), _lhs(seed + 1000, 30, 2)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), operator, dtype=dtype)
    X, _ = plotting.grid(50)
    return _fit_and_report(
        out,
        "advection_diffusion",
        model,
        (X_u, u(X_u), X_f, f(X_f), []),
        X,
        u(X),
        {"operator.c": (c_true, 0.5), "operator.nu": (nu_true, 0.5)},
        quick,
        _maps(X, u(X), {"u data": X_u, "f data": X_f}),
        {"seed": seed, "dtype": dtype},
        noise,
    )


# ----- wave ----------------------------------------------------------------------------------
def wave(
    out: str, seed: int = 0, quick: bool = False, dtype: str = "float64", noise: float = 0.0
) -> dict:
    """Wave equation u_tt - c^2 u_xx = 0, c = 0.8 learned from 0.5.

    u = sin(pi x) cos(c pi t) on [0, 1] x [0, 2]; u at 40 Latin-hypercube points,
    the zero residual at 40 more.
    """
    import pigp
    from pigp import plotting
    from pigp.operators import D

    c_true = 0.8
    u = lambda X: np.sin(np.pi * X[:, 0]) * np.cos(c_true * np.pi * X[:, 1])  # noqa: E731
    c = pigp.Parameter(0.5, name="c")
    operator = (D("t", 2) - c**2 * D("x", 2)).with_dims("x", "t")
    scale = np.array([1.0, 2.0])
    X_u, X_f = scale * _lhs(seed, 40, 2), scale * _lhs(seed + 1000, 40, 2)
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), operator, dtype=dtype)
    X, _ = plotting.grid(50, bounds=((0.0, 1.0), (0.0, 2.0)))
    return _fit_and_report(
        out,
        "wave",
        model,
        (X_u, u(X_u), X_f, np.zeros(len(X_f)), []),
        X,
        u(X),
        {"operator.c": (c_true, 0.5)},
        quick,
        _maps(X, u(X), {"u data": X_u, "f data": X_f}),
        {"seed": seed, "dtype": dtype},
        noise,
    )


# ----- 2-D Helmholtz with Dirichlet and Neumann data ----------------------------------------------
def helmholtz2d(
    out: str, seed: int = 0, quick: bool = False, dtype: str = "float64", noise: float = 0.0
) -> dict:
    """2-D Helmholtz u_xx + u_yy + 4 u = f on [0, 1]^2, u = sin(2x) cos(y) + x y.

    f at 40 interior points; Dirichlet values of u on x = 0, x = 1, y = 0 (8 points
    each) and Neumann values u_y on y = 1 (8 points).
    """
    import pigp
    from pigp import plotting
    from pigp.operators import D, Identity

    u = lambda X: np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + X[:, 0] * X[:, 1]  # noqa: E731
    f = lambda X: -np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 4 * X[:, 0] * X[:, 1]  # noqa: E731
    u_y = lambda X: -np.sin(2 * X[:, 0]) * np.sin(X[:, 1]) + X[:, 0]  # noqa: E731
    rng = np.random.default_rng(seed)
    side = lambda: np.sort(rng.uniform(size=8))  # noqa: E731
    X_dirichlet = np.concatenate(
        [
            np.stack([np.zeros(8), side()], 1),
            np.stack([np.ones(8), side()], 1),
            np.stack([side(), np.zeros(8)], 1),
        ]
    )
    X_neumann = np.stack([side(), np.ones(8)], 1)
    X_f = _lhs(seed, 40, 2)
    operator = (D("x", 2) + D("y", 2) + 4.0 * Identity).with_dims("x", "y")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), operator, dtype=dtype)
    observations = [
        pigp.Observations(X_neumann, u_y(X_neumann), D("y").with_dims("x", "y"), name="neumann")
    ]
    X, _ = plotting.grid(50)
    points = {"Dirichlet": X_dirichlet, "f data": X_f, "Neumann": X_neumann}
    return _fit_and_report(
        out,
        "helmholtz2d",
        model,
        (X_dirichlet, u(X_dirichlet), X_f, f(X_f), observations),
        X,
        u(X),
        {},
        quick,
        _maps(X, u(X), points, labels=("x", "y")),
        {"seed": seed, "dtype": dtype},
        noise,
    )


# ----- heat in (x, y, t) --------------------------------------------------------------------------
def heat2d(
    out: str, seed: int = 0, quick: bool = False, dtype: str = "float64", noise: float = 0.0
) -> dict:
    """Heat equation in two space dimensions, u_t - (u_xx + u_yy) = f, columns (x, y, t).

    u = e^-t sin(pi x) sin(pi y); u at 25 points of t = 0 and 40 points on the
    four sides, f = (2 pi^2 - 1) u at 60 interior points; errors on 20 x 20 x 5 points.
    """
    import pigp
    from pigp import plotting
    from pigp.operators import D

    u = lambda X: np.exp(-X[:, 2]) * np.sin(np.pi * X[:, 0]) * np.sin(np.pi * X[:, 1])  # noqa
    rng = np.random.default_rng(seed)
    g = np.linspace(0, 1, 5)
    initial = np.stack([*np.meshgrid(g, g), np.zeros((5, 5))], -1).reshape(-1, 3)
    sides = rng.uniform(size=(40, 3))
    sides[:10, 0], sides[10:20, 0], sides[20:30, 1], sides[30:, 1] = 0.0, 1.0, 0.0, 1.0
    X_u = np.concatenate([initial, sides])
    X_f = _lhs(seed, 60, 3)
    operator = (D("t") - D("x", 2) - D("y", 2)).with_dims("x", "y", "t")
    model = pigp.PIGP(pigp.kernels.SquaredExponential(), operator, dtype=dtype)
    g20 = np.linspace(0, 1, 20)
    X = np.stack(np.meshgrid(g20, g20, np.linspace(0, 1, 5), indexing="ij"), -1).reshape(-1, 3)

    def draw(fig, model, mean, var):
        X2, _ = plotting.grid(50)
        axes = fig.subplots(2, 2).ravel()
        axes[3].set_axis_off()
        for ax, t in zip(axes, (0.0, 0.5, 1.0)):
            P = np.column_stack([X2, np.full(len(X2), t)])
            m, _ = model.predict(P)
            plotting.field(
                X2, np.abs(m - u(P)), ax, f"|error| at t = {t:g}", cmap="magma", labels=("x", "y")
            )

    draw.size = MAPS_SIZE
    return _fit_and_report(
        out,
        "heat2d",
        model,
        (X_u, u(X_u), X_f, (2 * np.pi**2 - 1) * u(X_f), []),
        X,
        u(X),
        {},
        quick,
        draw,
        {"seed": seed, "dtype": dtype},
        noise,
    )


PROBLEMS = {
    "poisson1d": poisson1d,
    "advection_diffusion": advection_diffusion,
    "wave": wave,
    "helmholtz2d": helmholtz2d,
    "heat2d": heat2d,
}
