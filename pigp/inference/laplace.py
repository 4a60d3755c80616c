"""Laplace uncertainty of the parameters from the objective's curvature.

At a minimum of the loss in the unconstrained variables ``v``, the Hessian
``H`` gives their approximate posterior covariance ``H^-1``; the delta method
maps it to the constrained values: ``std = |d value / d v| sqrt(diag H^-1)``.
``laplace_intervals`` maps the quantiles of the Gaussian in ``v`` through each
parameter's transform instead: intervals that stay inside a parameter's support.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.stats

from .._tensorflow import tf
from .._warnings import warn
from ..kernels.library import Fields

__all__ = ["laplace", "laplace_intervals"]


def hessian(objective, Xs, y) -> np.ndarray:
    """The loss Hessian in the objective's variables, flattened and symmetrised.

    By nested tapes below ``pigp.kernels.covariance.LARGE_FROM`` values; from there, where a
    step factorises ``K`` with LAPACK, by central differences of the gradient
    (``difference_hessian``): 2 P steps for P entries, where the nested tapes'
    program through the blocks of high-order operators took a minute to compile.
    """
    return hessian_and_gradient(objective, Xs, y)[0]


def hessian_and_gradient(objective, Xs, y) -> tuple:
    """``(hessian(...), the loss gradient)`` in the objective's variables, flattened;
    on the nested tapes' path from the one program that computes both. A model of
    several fields takes the differences of the gradient too: the nested tapes through
    the blocks of two fields' second-order operators held 5.8-6.5 GB at 480 values
    (``benchmarks/elasticity.py``), where a gradient needs a few hundred MB. So does an
    objective with ``hessian_by_differences`` (a sparse model's bound: the nested tapes
    took the peak of 3,000 values of 2-D heat at M = 256 from the fit's 1.41 GB to
    4.66 GB, and the differences keep it at the fit's, in a tenth of the time, the
    interval of the diffusivity moved by 3e-9)."""
    several = isinstance(getattr(objective.structure, "kernel", None), Fields)
    by_differences = bool(getattr(objective, "hessian_by_differences", False))
    if several or by_differences or objective.backend(int(y.shape[0])) == "lapack":
        _, grads = objective.loss_and_gradient(Xs, y)
        gradient = np.concatenate([np.ravel(g.numpy()) for g in grads])
        return difference_hessian(objective, Xs, y), gradient
    # As one graph (not op by op): 2.6x faster for a spectral mixture's blocks.
    compute = objective.program(
        "hessian",
        lambda: tf.function(functools.partial(_hessian, objective), autograph=False),
    )
    H, gradient = (t.numpy() for t in compute(Xs, y, objective.unconstrained))
    return 0.5 * (H + H.T), gradient


def difference_hessian(objective, Xs, y, step: float = 1e-3) -> np.ndarray:
    """The loss Hessian by central differences of the exact gradient, symmetrised:
    column ``j`` is ``(g(v + h e_j) - g(v - h e_j)) / 2h`` with ``h = step * max(1,
    |v_j|)``. The gradient's round-off, large where ``K`` is ill-conditioned, is
    divided by ``h``: on a 500-value Stokes fit, ``step`` 1e-3 agreed with the nested
    tapes to 4e-4 of the largest entry, 1e-4 to 3e-3 and 1e-5 to 3e-2. The variables
    are restored after."""
    variables = list(objective.variables)
    start = [v.numpy() for v in variables]
    centre = np.concatenate([np.ravel(s) for s in start])

    def gradient(flat):
        offset = 0
        for v, s in zip(variables, start):
            v.assign(np.reshape(flat[offset : offset + s.size], s.shape))
            offset += s.size
        _, grads = objective.loss_and_gradient(Xs, y)
        return np.concatenate([np.ravel(g.numpy()) for g in grads])

    columns = []
    try:
        for j in range(centre.size):
            shift = np.zeros_like(centre)
            shift[j] = step * max(1.0, abs(centre[j]))
            columns.append((gradient(centre + shift) - gradient(centre - shift)) / (2 * shift[j]))
    finally:
        for v, s in zip(variables, start):
            v.assign(s)
    H = np.stack(columns, axis=1)
    return 0.5 * (H + H.T)


def _hessian(objective, Xs, y, unconstrained):
    variables = objective.trained_of(unconstrained)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(variables)
        with tf.GradientTape() as inner:
            inner.watch(variables)
            loss = tf.cast(objective.nll(Xs, y, unconstrained), tf.float64)
        grads = inner.gradient(loss, variables, unconnected_gradients="zero")
        flat = tf.concat([tf.reshape(tf.cast(g, tf.float64), [-1]) for g in grads], 0)
    rows = outer.jacobian(flat, variables, unconnected_gradients="zero")
    H = tf.concat([tf.reshape(tf.cast(h, tf.float64), [flat.shape[0], -1]) for h in rows], axis=1)
    return H, flat


def _variances(objective, Xs, y, parameters, caller: str) -> np.ndarray:
    """``diag H^-1`` in the unconstrained variables, flattened; ``inf`` for the
    entries held fixed (``laplace`` says which and why; ``caller`` opens the warnings)."""
    return np.diag(covariance(objective, Xs, y, parameters, caller)).copy()


def covariance(objective, Xs, y, parameters, caller: str) -> np.ndarray:
    """``H^-1`` in the unconstrained variables, flattened (entries in the order of
    ``parameters``): the inverse over the entries the loss curves in, ``inf`` on the
    diagonal and 0 off it for those held fixed (``laplace`` says which and why)."""
    H, gradient = hessian_and_gradient(objective, Xs, y)
    entries = [
        f"{name}[{i}]" if p.shape != () else name
        for name, p in parameters
        for i in range(int(np.prod(p.shape)))
    ]
    # Hold the entries with the most non-finite values, one at a time, until the rest of
    # H is finite (one entry's NaN reaches every row through its column).
    finite = np.ones(len(H), bool)
    while not np.all(np.isfinite(H[np.ix_(finite, finite)])):
        bad = (~np.isfinite(H[np.ix_(finite, finite)])).sum(axis=1)
        finite[np.flatnonzero(finite)[np.argmax(bad)]] = False
    if not finite.all():
        warn(
            f"{caller}: the loss Hessian is not finite along "
            f"{', '.join(e for e, ok in zip(entries, finite) if not ok)} (the covariance "
            "is near singular there); held fixed, std reported as inf, the other stds "
            "are conditional on it",
        )
    diagonal = np.abs(np.diag(H))
    scale = diagonal[finite].max() if finite.any() else 0.0
    curved = finite & (diagonal > 1e-12 * scale) & (scale > 0)
    # At a bound the data push beyond, the loss keeps falling as the variable goes to
    # -inf: its Gaussian in the variable describes no optimum (and would put a
    # vanishing std on the value).
    curved &= ~_beyond_bounds(parameters, gradient, np.diag(H))
    held = []
    while curved.any():
        values, vectors = np.linalg.eigh(H[np.ix_(curved, curved)])
        if values[0] > 1e-12 * abs(values[-1]):
            break
        worst = np.flatnonzero(curved)[np.argmax(np.abs(vectors[:, 0]))]
        curved[worst] = False
        held.append(entries[worst])
    if not curved.any():
        warn(
            f"{caller}: the loss Hessian is not positive definite in any "
            "parameter (the parameters are not at a minimum, or the fit has "
            "degenerated: see model.parameter_values()); every std reported as inf",
        )
    elif held:
        warn(
            f"{caller}: the loss curves down or is flat along "
            f"{', '.join(held)} (not at a strict minimum there); held fixed, "
            f"std reported as inf, the other stds are conditional on it",
        )
    out = np.zeros_like(H)
    np.fill_diagonal(out, np.inf)
    if curved.any():
        out[np.ix_(curved, curved)] = np.linalg.inv(H[np.ix_(curved, curved)])
    return out


def _beyond_bounds(parameters, gradient: np.ndarray, curvature: np.ndarray) -> np.ndarray:
    """Flattened mask of the entries of positive parameters at their lower bound
    (``Parameter.at_bound``) whose optimum lies beyond it: in the value ``c`` the loss
    still rises there (``dL/dc > 0``) and a Newton step would cross the bound
    (``dL/dc >= (c - lower) d2L/dc2``, or no positive curvature). ``gradient`` and
    ``curvature``: the loss gradient and the Hessian's diagonal in the variables."""
    beyond = np.zeros(len(curvature), bool)
    offset = 0
    for _, p in parameters:
        size = int(np.prod(p.shape))
        if p.at_bound():
            v = tf.constant(p.unconstrained.numpy())
            with tf.GradientTape() as second:
                second.watch(v)
                with tf.GradientTape() as first:
                    first.watch(v)
                    value = p.forward(v)
                slope = first.gradient(value, v)
            bend = second.gradient(slope, v).numpy().reshape(-1)
            slope = slope.numpy().reshape(-1)
            gap = (value.numpy() - p.lower).reshape(-1)
            part = slice(offset, offset + size)
            with np.errstate(divide="ignore", invalid="ignore"):
                rise = gradient[part] / slope  # dL/dc
                bending = (curvature[part] - rise * bend) / slope**2  # d2L/dc2
                beyond[part] = (
                    p.entries_at_bound() & (rise > 0) & ((bending <= 0) | (rise >= gap * bending))
                )
        offset += size
    return beyond


def laplace(objective, Xs, y, parameters, bounded=None) -> dict:
    """Posterior standard deviations of the parameters by the Laplace approximation.

    Args:
        objective: a ``pigp.engines.dense.objective.Objective``, whose variables are the
            unconstrained variables of ``parameters``, in that order.
        Xs: the inputs of each data set.
        y: the standardised targets, all data sets stacked.
        parameters: ``[(name, Parameter)]``, the trainable parameters.
        bounded: those of ``parameters`` to warn about when they sit at the lower
            bound of a positive parameter with an infinite std (default: all); a
            kernel's frequency at 0 is no such case.

    Returns:
        dict: ``{name: std}``, floats for scalars and arrays for vectors; ``inf`` for an
        entry held fixed (see below).

    Directions without curvature (a noise variance collapsed towards 0, where the
    softplus is flat) are held fixed. Where the rest is not positive definite (the
    optimiser stopped on a ridge or a saddle), the entry that loads most on the
    direction of lowest curvature is held fixed too, one at a time, with a
    ``RuntimeWarning`` naming it; the other stds are then conditional on it.

    Entries where the Hessian is not finite are held fixed the same way (those with
    the most non-finite values first, until the rest is finite; a ``RuntimeWarning``
    names them), and so are entries of positive parameters at their lower bound
    where the data ask for a value beyond it (the loss still rises with the value
    there: no Gaussian in the variable describes that optimum). Nothing raises:
    where no entry is left, every std is ``inf`` and the warning says why.
    """
    variance = _variances(objective, Xs, y, parameters, "parameter_uncertainty")
    out, offset = {}, 0
    for name, p in parameters:
        size = int(np.prod(p.shape))
        with tf.GradientTape() as tape:
            value = tf.reduce_sum(p.value())
        slope = tape.gradient(value, p.unconstrained).numpy().reshape(-1)
        part = variance[offset : offset + size]
        # No curvature is an infinite std, also where the value has stopped moving with
        # its variable (a noise variance rounded to 0: slope 0, and 0 * inf is NaN).
        with np.errstate(invalid="ignore"):
            std = np.where(np.isinf(part), np.inf, np.abs(slope) * np.sqrt(part))
        out[name] = float(std[0]) if p.shape == () else std.reshape(p.shape)
        offset += size
    _warn_at_bounds(parameters, variance, bounded, "parameter_uncertainty")
    return out


def laplace_intervals(objective, Xs, y, parameters, level: float = 0.95, bounded=None) -> dict:
    """Central ``level`` intervals of the parameters by the Laplace approximation in the
    unconstrained variables: ``v +- z sqrt(diag H^-1)`` (``z`` the normal quantile),
    each end mapped through the parameter's transform. A positive parameter's
    interval stays above its lower bound and is wider above the value than below
    it, as the posterior of a scale is; where the Gaussian in ``v`` is a fair
    approximation, so are its quantiles, which the delta method's ``value +- z std``
    is not for a parameter whose std is of the order of its value. Entries held
    fixed (see ``laplace``) get the whole support: ``(lower, inf)`` for a positive
    parameter, ``(-inf, inf)`` otherwise.

    Returns:
        dict: ``{name: (low, high)}``, floats for scalars and arrays for vectors.
    """
    variance = _variances(objective, Xs, y, parameters, "parameter_intervals")
    z = float(scipy.stats.norm.ppf(0.5 + 0.5 * level))
    out, offset = {}, 0
    for name, p in parameters:
        size = int(np.prod(p.shape))
        centre = p.unconstrained.numpy().reshape(-1)
        spread = z * np.sqrt(variance[offset : offset + size])  # inf where held fixed
        ends = []
        for sign in (-1.0, 1.0):
            end = p.forward(centre + sign * spread).numpy()
            ends.append(float(end[0]) if p.shape == () else end.reshape(p.shape))
        out[name] = tuple(ends)
        offset += size
    _warn_at_bounds(parameters, variance, bounded, "parameter_intervals")
    return out


def _warn_at_bounds(parameters, variance, bounded, caller: str) -> None:
    """Warn about positive parameters (among ``bounded``; all where None) at their
    lower bound with an entry held fixed (an infinite ``variance``, flattened in the
    order of ``parameters``)."""
    sizes = [int(np.prod(p.shape)) for _, p in parameters]
    held = np.split(np.isinf(variance), np.cumsum(sizes)[:-1])
    stuck = [
        name
        for (name, p), h in zip(parameters, held)
        if (bounded is None or p in bounded) and p.at_bound() and h.any()
    ]
    if stuck:
        warn(
            f"{caller}: {', '.join(stuck)} sit at the lower bound of a "
            "positive parameter, where the std is inf: the data may ask for a value "
            "beyond it. For a coefficient, lift the bound: pigp.Parameter(value) (signed "
            "in an operator) or Parameter(value, positive=False), or a smaller lower=; "
            "a noise variance at 0 says the data look exact: pass noise=0 to treat them so",
        )
