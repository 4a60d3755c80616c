"""The heat equation ``u_t = u_xx + f`` on [0, 1]^2: the main experiment and the seed's layout.

``heat`` fits the well-posed design (u on the initial and boundary lines, f inside),
noise-free and with 1% noise; ``seed`` the original question's layout (all points
on the diagonal x = t).
"""

from __future__ import annotations

import time

import numpy as np

from .report import MAPS_SIZE, accuracy, figure, finish, jsonable, relative_l2

__all__ = [
    "heat_solution",
    "heat_design",
    "add_noise",
    "noisy_heat_data",
    "heat",
    "seed",
    "EXPERIMENTS",
]


# ----- the problem ----------------------------------------------------------------------
def heat_solution(X):
    """``u = e^-t sin(pi x)`` and ``f = u_t - u_xx = (pi^2 - 1) e^-t sin(pi x)``."""
    X = np.asarray(X, dtype=np.float64)
    u = np.exp(-X[:, 1]) * np.sin(np.pi * X[:, 0])
    return u, (np.pi**2 - 1.0) * u


def heat_design(seed: int, n_f: int = 30):
    """u at 20 points on t = 0 (8), x = 0 (6) and x = 1 (6); f at ``n_f`` interior
    points from a Latin hypercube drawn with ``seed``."""
    from scipy.stats import qmc

    t_side = np.linspace(0.0, 1.0, 7)[1:]
    X_u = np.concatenate(
        [
            np.stack([np.linspace(0.0, 1.0, 8), np.zeros(8)], axis=1),
            np.stack([np.zeros(6), t_side], axis=1),
            np.stack([np.ones(6), t_side], axis=1),
        ]
    )
    X_f = qmc.LatinHypercube(d=2, seed=seed).random(n_f)
    return X_u, X_f


def add_noise(y, level: float, rng) -> np.ndarray:
    """``y`` plus Gaussian noise of standard deviation ``level * rms(y)``."""
    if level <= 0:
        return y
    return y + level * np.sqrt(np.mean(np.square(y))) * rng.standard_normal(y.shape)


# ----- experiments ----------------------------------------------------------------------
def _fit_timed(model, *args, **kwargs) -> float:
    start = time.perf_counter()
    model.fit(*args, **kwargs)
    return time.perf_counter() - start


def noisy_heat_data(X_u, X_f, level: float, rng):
    """``(y_u, y_f)``: the heat solution at ``X_u`` and its f at ``X_f``, each with
    Gaussian noise of ``level`` times its RMS (u's drawn first)."""
    return (
        add_noise(heat_solution(X_u)[0], level, rng),
        add_noise(heat_solution(X_f)[1], level, rng),
    )


def _heat_case(X_u, X_f, level, rng, steps, dtype="float64"):
    import pigp

    y_u, y_f = noisy_heat_data(X_u, X_f, level, rng)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(diffusivity=1.0), dtype=dtype
    )
    seconds = _fit_timed(model, X_u, y_u, X_f, y_f, steps=steps)
    return model, seconds


def heat(out: str, seed: int = 0, quick: bool = False, dtype: str = "float64") -> dict:
    """The heat equation u_t = u_xx + f on [0, 1]^2, noise-free and with 1% noise.

    The noisy case is repeated over 5 draws (f designs and noise from seeds
    seed, ..., seed + 4): a 95% band's coverage of one grid is a noisy statistic,
    since the errors at neighbouring grid points are correlated, so the pooled
    coverage over the draws is reported beside each draw's.
    """
    from pigp import plotting

    steps = 300 if quick else 2000
    draws = 1 if quick else 5
    X, _ = plotting.grid(50)
    u_true, _ = heat_solution(X)
    X_u, X_f = heat_design(seed)
    metrics = {
        "experiment": "heat",
        "seed": seed,
        "dtype": dtype,
        "steps": steps,
        "n_u": len(X_u),
        "n_f": len(X_f),
        "grid": "50x50",
    }
    points = {"u data": X_u, "f data": X_f}

    model, seconds = _heat_case(X_u, X_f, 0.0, None, steps, dtype)
    mean, var = model.predict(X)
    metrics["noise_free"] = {
        **accuracy(mean, var, u_true),
        "final_loss": float(model.history[-1]),
        "fit_seconds": seconds,
        "parameters": jsonable(model.parameter_values()),
    }
    figure(
        out,
        "heat_noise_free.png",
        lambda fig: plotting.posterior_maps(
            X, mean, var, truth=u_true, points=points, axes=fig.subplots(2, 2)
        ),
        MAPS_SIZE,
    )

    runs = []
    for draw in range(seed, seed + draws):
        X_u, X_f = heat_design(draw)
        model, seconds = _heat_case(X_u, X_f, 0.01, np.random.default_rng(draw), steps, dtype)
        mean, var = model.predict(X)
        runs.append(
            {
                "seed": draw,
                **accuracy(mean, var, u_true),
                "final_loss": float(model.history[-1]),
                "fit_seconds": seconds,
                "parameters": jsonable(model.parameter_values()),
            }
        )
        if draw == seed:
            first, first_mean, first_var = model, mean, var
    metrics["noise_1pct"] = {
        "draws": runs,
        "max_relative_l2": max(r["relative_l2"] for r in runs),
        "pooled_coverage_95": float(np.mean([r["coverage_95"] for r in runs])),
    }
    points = {"u data": heat_design(seed)[0], "f data": heat_design(seed)[1]}
    figure(
        out,
        "heat_noise_1pct.png",
        lambda fig: plotting.posterior_maps(
            X, first_mean, first_var, truth=u_true, points=points, axes=fig.subplots(2, 2)
        ),
        MAPS_SIZE,
    )

    def slices(fig):
        ax = fig.subplots()
        for t in (0.25, 0.75):
            plotting.slice_at(first, t, ax=ax, truth=lambda P: heat_solution(P)[0])

    figure(out, "heat_slices.png", slices, (6, 4))
    figure(
        out,
        "heat_training.png",
        lambda fig: plotting.training_curve(first.history, fig.subplots()),
        (6, 4),
    )
    return finish(out, metrics)


def seed(out: str, seed: int = 0, quick: bool = False, dtype: str = "float64") -> dict:
    """The original question's layout: 20 u and 30 f points on the diagonal x = t.

    Starts from the question's hyper-parameters (amplitude softplus(0.5), inverse
    squared lengthscales softplus(-1), softplus(-3)), predicts u on the 20-point
    grid, f on the 30-point grid and both on a dense grid, and measures how the
    posterior std and error grow away from the diagonal the data lie on.
    """
    import pigp
    from pigp import plotting
    from pigp.parameters import softplus

    steps = 300 if quick else 2000
    grid_u = np.linspace(0.0, 1.0, 20)
    grid_f = np.linspace(0.0, 1.0, 30)
    X_u, X_f = np.stack([grid_u, grid_u], 1), np.stack([grid_f, grid_f], 1)
    y_u, y_f = heat_solution(X_u)[0], heat_solution(X_f)[1]
    kernel = pigp.kernels.SquaredExponential.from_weights(softplus(0.5), softplus([-1.0, -3.0]))
    model = pigp.PIGP(kernel, pigp.operators.heat(diffusivity=1.0), dtype=dtype)
    initial = jsonable(model.parameter_values())
    seconds = _fit_timed(model, X_u, y_u, X_f, y_f, steps=steps)

    mean_u, var_u = model.predict(X_u)
    mean_f, var_f = model.predict(X_f, output="f")
    X, _ = plotting.grid(50)
    u_true, f_true = heat_solution(X)
    mean, var = model.predict(X)
    distance = np.abs(X[:, 0] - X[:, 1]) / np.sqrt(2.0)  # from the line x = t
    bands = {
        "on_diagonal(d<0.05)": distance < 0.05,
        "near(0.05<=d<0.2)": (distance >= 0.05) & (distance < 0.2),
        "far(d>=0.2)": distance >= 0.2,
    }
    metrics = {
        "experiment": "seed",
        "seed": seed,
        "dtype": dtype,
        "steps": steps,
        "n_u": 20,
        "n_f": 30,
        "initial_parameters": initial,
        "parameters": jsonable(model.parameter_values()),
        "fit_seconds": seconds,
        "final_loss": float(model.history[-1]),
        "u_on_20_grid": {
            "relative_l2": relative_l2(mean_u, y_u),
            "max_posterior_std": float(np.sqrt(var_u.max())),
        },
        "f_on_30_grid": {
            "relative_l2": relative_l2(mean_f, y_f),
            "max_posterior_std": float(np.sqrt(var_f.max())),
        },
        "dense_grid": accuracy(mean, var, u_true),
        "by_distance_from_diagonal": {
            name: {
                "relative_l2": relative_l2(mean[m], u_true[m]),
                "mean_posterior_std": float(np.sqrt(var[m]).mean()),
                "points": int(m.sum()),
            }
            for name, m in bands.items()
        },
    }
    points = {"u data": X_u, "f data": X_f}
    figure(
        out,
        "seed_posterior.png",
        lambda fig: plotting.posterior_maps(
            X, mean, var, truth=u_true, points=points, axes=fig.subplots(2, 2)
        ),
        MAPS_SIZE,
    )

    def profile(fig):
        ax = fig.subplots()
        order = np.argsort(distance)
        ax.semilogy(distance[order], np.sqrt(var[order]), ".", ms=2, label="posterior std of u")
        ax.semilogy(distance[order], np.abs(mean - u_true)[order], ".", ms=2, label="|error| of u")
        ax.set_xlabel("distance from the diagonal x = t")
        ax.legend()

    figure(out, "seed_distance.png", profile, (6, 4))
    return finish(out, metrics)


EXPERIMENTS = {"heat": heat, "seed": seed}
