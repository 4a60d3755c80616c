"""Figures for fitted models: posterior maps, slices with bands, training curves.

Every function takes an optional matplotlib ``ax``, returns the axes it drew
on, and works headless (select the Agg backend before importing pyplot, as the
experiments do, or set ``MPLBACKEND=Agg``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["grid", "field", "posterior_maps", "slice_at", "training_curve", "traces", "posterior"]


def grid(n: int = 50, bounds=((0.0, 1.0), (0.0, 1.0))):
    """An ``n x n`` grid over two input columns.

    Returns:
        ``(X, shape)``: points of shape (n*n, 2), row-major with column 0 varying
        fastest, and the ``(n, n)`` shape to reshape values into ``[t_index, x_index]``.
    """
    (a0, b0), (a1, b1) = bounds
    g0, g1 = np.linspace(a0, b0, n), np.linspace(a1, b1, n)
    G0, G1 = np.meshgrid(g0, g1)
    return np.stack([G0.ravel(), G1.ravel()], axis=1), G0.shape


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def field(
    X,
    values,
    ax=None,
    title: str | None = None,
    cmap: str = "viridis",
    labels=("x", "t"),
    points=None,
    colorbar: bool = True,
):
    """A heat map of values on a grid of 2-D points, with data points overlaid.

    Args:
        X: grid points of shape (n*n, 2) from ``grid``.
        values: shape (n*n,).
        points: ``{label: array of shape (k, 2)}`` drawn as markers, e.g.
            ``{"u data": X_u, "f data": X_f}``.
    """
    ax = _axes(ax)
    X = np.asarray(X)
    n = int(round(np.sqrt(len(X))))
    extent = (X[:, 0].min(), X[:, 0].max(), X[:, 1].min(), X[:, 1].max())
    image = ax.imshow(
        np.asarray(values).reshape(n, n), origin="lower", extent=extent, aspect="auto", cmap=cmap
    )
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    for (label, P), marker in zip((points or {}).items(), ("o", "X", "s", "^", "d")):
        P = np.asarray(P)
        style = (
            {"edgecolors": "black", "c": "white"}
            if marker == "o"
            else {"edgecolors": "white", "c": "red"}
        )
        # Not clipped: data on the boundary lines show whole, on the edge of the map.
        ax.scatter(
            P[:, 0],
            P[:, 1],
            marker=marker,
            s=36,
            linewidths=0.8,
            label=label,
            clip_on=False,
            zorder=3,
            **style,
        )
    if points:
        ax.legend(loc="upper right", fontsize=9, framealpha=0.8)
    ax.set_xlabel(labels[0], fontsize=11)
    ax.set_ylabel(labels[1], fontsize=11)
    ax.tick_params(labelsize=10)
    if title:
        ax.set_title(title, fontsize=12)
    return ax


def posterior_maps(X, mean, var, truth=None, points=None, axes=None, labels=("x", "t")):
    """Maps of the posterior mean and standard deviation and, given ``truth``, of the
    truth and the absolute error, with the data points on each.

    Without ``axes`` a new figure holds them in a grid two panels wide (mean and
    truth side by side, then std and error), legible at the width of a page or a
    notebook; pass ``axes`` (any array of at least 2, or 4 with ``truth``, axes) for
    another layout.

    Returns:
        The flat array of axes drawn on.
    """
    import matplotlib.pyplot as plt

    panels = 4 if truth is not None else 2
    if axes is None:
        _, axes = plt.subplots(
            panels // 2, 2, figsize=(9.0, 3.7 * (panels // 2)), constrained_layout=True
        )
    axes = np.ravel(axes)
    if len(axes) < panels:
        raise ValueError(
            f"axes: {panels} axes are needed ({'with' if truth is not None else 'without'}"
            f" truth), got {len(axes)}"
        )
    std = np.sqrt(np.maximum(var, 0.0))
    maps = [(mean, "posterior mean", "viridis"), (std, "posterior std", "magma")]
    if truth is not None:
        truth = np.asarray(truth)
        maps = [
            maps[0],
            (truth, "truth", "viridis"),
            maps[1],
            (np.abs(np.asarray(mean) - truth), "absolute error", "magma"),
        ]
    for ax, (values, title, cmap) in zip(axes, maps):
        field(X, values, ax, title, cmap=cmap, points=points, labels=labels)
    return axes[:panels]


def slice_at(
    model,
    t: float,
    x=None,
    truth=None,
    ax=None,
    output: str = "u",
    column: int = 1,
    label: str = "t",
):
    """The posterior along x at a fixed ``t`` (column 1), with a ±2σ band and the truth.

    Args:
        model: a fitted ``pigp.PIGP`` on 2-D inputs.
        t: the value of the fixed column.
        x: the values of the free column (default 200 points on [0, 1]).
        truth: a function of points (n, 2) -> (n,), drawn dashed.
    """
    ax = _axes(ax)
    x = np.linspace(0.0, 1.0, 200) if x is None else np.asarray(x, dtype=np.float64)
    X = np.zeros((len(x), 2))
    X[:, 1 - column], X[:, column] = x, t
    mean, var = model.predict(X, output=output)
    std = np.sqrt(var)
    (line,) = ax.plot(x, mean, label=f"mean, {label} = {t:g}")
    ax.fill_between(
        x, mean - 2 * std, mean + 2 * std, color=line.get_color(), alpha=0.25, label="±2σ"
    )
    if truth is not None:
        ax.plot(x, truth(X), "k--", lw=1, label="truth")
    ax.set_xlabel("x" if column == 1 else "t")
    ax.set_ylabel(output)
    ax.legend(fontsize="small")
    return ax


def training_curve(history, ax=None, rejected=()):
    """The loss (negative log marginal likelihood) against the step."""
    ax = _axes(ax)
    history = np.asarray(history, dtype=np.float64)
    ax.plot(np.arange(len(history)), history, lw=1)
    rejected = np.asarray(rejected, dtype=int)
    if rejected.size:
        ax.plot(rejected, np.full(rejected.size, np.nanmin(history)), "rx", label="skipped steps")
        ax.legend()
    ax.set_xlabel("step")
    ax.set_ylabel("negative log marginal likelihood")
    return ax


def traces(samples, name: str, ax=None, element: int | None = None):
    """The draws of one parameter against the draw index, one line per chain.

    Args:
        samples: a ``pigp.Samples``.
        name: a parameter name of ``samples``.
        element: for a vector parameter, which element (default 0).
    """
    ax = _axes(ax)
    values = np.asarray(samples[name])
    values = values.reshape(values.shape[0], values.shape[1], -1)[:, :, element or 0]
    for chain, line in enumerate(values):
        ax.plot(line, lw=0.6, alpha=0.8, label=f"chain {chain}")
    label = name if element is None else f"{name}[{element}]"
    ax.set_xlabel("draw")
    ax.set_ylabel(label)
    ax.legend(fontsize=8, ncol=min(4, len(values)))
    return ax


def posterior(
    samples,
    name: str,
    ax=None,
    element: int | None = None,
    laplace=None,
    truth=None,
    bins: int = 50,
):
    """A histogram of one parameter's draws (all chains), with the Laplace Gaussian
    ``laplace = (mean, std)`` and a ``truth`` line if given."""
    ax = _axes(ax)
    values = np.asarray(samples[name])
    values = values.reshape(values.shape[0] * values.shape[1], -1)[:, element or 0]
    ax.hist(values, bins=bins, density=True, alpha=0.6, label="NUTS draws")
    if laplace is not None:
        mean, std = laplace
        x = np.linspace(min(values.min(), mean - 4 * std), max(values.max(), mean + 4 * std), 400)
        ax.plot(
            x,
            np.exp(-0.5 * ((x - mean) / std) ** 2) / (std * np.sqrt(2 * np.pi)),
            "k-",
            lw=1.2,
            label="Laplace",
        )
    if truth is not None:
        ax.axvline(truth, color="red", ls="--", lw=1, label="truth")
    ax.set_xlabel(name if element is None else f"{name}[{element}]")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    return ax
