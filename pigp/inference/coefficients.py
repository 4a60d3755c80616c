"""What the uncertainty of an equation's learned coefficients adds to its bands.

A fit predicts from the posterior at the fitted coefficients ``theta`` (of the last
linearisation, for a Gauss-Newton fit): that variance is the field's given ``theta``,
and leaves out how far the solution itself moves with ``theta``. To first order (the
law of total variance over the coefficients' Laplace posterior ``N(theta, Sigma)``),

    var(L u(x)) = var(L u(x) | theta) + J(x) Sigma J(x)',
    J(x)_k = (m(x; theta + h_k e_k) - m(x; theta)) / h_k,

``m(x; theta')`` the posterior mean of the same linearisation with the coefficients at
``theta'`` (its operator, and its right-hand side where a coefficient moves it:
``pigp.operators.linearisation.Linearisation.target_shift``), and ``h_k`` the standard
deviation of entry ``k``. For a linear equation that is the posterior mean with the
kernel's blocks made at ``theta + h_k e_k``; for a nonlinear one, one Gauss-Newton step
from the fitted solution: the derivative of the converged solution where the step's own
dependence on the point it linearises at is small, as it is near a solution
Gauss-Newton converges to quickly. ``Sigma`` is the block of the coefficients in the
Laplace covariance of every trained parameter (``pigp.inference.laplace.covariance``),
mapped to their values by the delta method; an entry held fixed there adds nothing.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._tensorflow import tf
from .._warnings import warn
from . import laplace

__all__ = ["learned_coefficients", "coefficient_covariance", "coefficient_sensitivity"]


def learned_coefficients(model) -> list:
    """``[(name, Parameter)]``: the model's trained parameters that its equation, or
    the operator of one of its data sets, reads."""
    read = list(getattr(model.operator, "parameters", ()))
    for s in getattr(model.data, "sets", ()):
        read.extend(getattr(s.operator, "parameters", ()))
    return [(n, p) for n, p in model.trainable_parameters() if any(p is q for q in read)]


def coefficient_covariance(model) -> tuple:
    """``(entries, Sigma)``: the learned coefficients' entries ``[(Parameter, index)]``
    whose Laplace variance is finite, and their covariance (values, not the
    unconstrained variables), kept on the model until a parameter or the data change."""
    key = model._values()
    cached = getattr(model, "_coefficient_covariance", None)
    if cached is not None and cached[2] is model.data and len(cached[0]) == len(key):
        if all(np.array_equal(a, b) for a, b in zip(cached[0], key)):
            return cached[1]
    parameters = model.trainable_parameters()
    wanted = {id(p) for _, p in learned_coefficients(model)}
    entries, places, slopes, offset = [], [], [], 0
    for _, p in parameters:
        size = int(np.prod(p.shape))
        if id(p) in wanted:
            with tf.GradientTape() as tape:
                value = tf.reshape(p.value(), [-1])
            slope = tape.jacobian(value, p.unconstrained)
            slope = np.diag(np.reshape(slope.numpy(), (size, size))).copy()
            for i in range(size):
                entries.append((p, i))
                places.append(offset + i)
                slopes.append(slope[i])
        offset += size
    result = ([], np.zeros((0, 0)))
    if entries:
        # The Laplace's own warnings concern every parameter (parameter_uncertainty gives
        # them); predict says only what leaves its band without a coefficient.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            H_inv = laplace.covariance(
                model.objective(), *model.data.tensors(model.dtype), parameters, "predict"
            )
        block = H_inv[np.ix_(places, places)]
        finite = np.isfinite(np.diag(block))
        if not finite.all():
            named = {id(p): name for name, p in parameters}
            names = sorted({named[id(p)] for (p, _), ok in zip(entries, finite) if not ok})
            warn(
                f"predict: the Laplace variance of {names} is not finite "
                "(model.parameter_uncertainty() says why), so the band leaves out their "
                "uncertainty"
            )
        S = np.asarray(slopes)[finite]
        block = block[np.ix_(finite, finite)]
        result = ([e for e, ok in zip(entries, finite) if ok], S[:, None] * block * S[None, :])
    model._coefficient_covariance = (
        tuple(np.array(v, copy=True) for v in key),
        result,
        model.data,  # a new fit (new data, the same values) computes it again
    )
    return result


def coefficient_sensitivity(model, base: np.ndarray, moved_mean) -> tuple:
    """``(J, Sigma)``: ``J`` (n, K) the change of the standardised posterior mean per
    unit of each learned coefficient entry (one step of size its standard deviation),
    ``Sigma`` (K, K) their covariance. ``base`` is the mean at the fitted values and
    ``moved_mean()`` the mean of the model's data as they are at the parameters' current
    values, the targets moved where a coefficient moves them. The parameters are
    restored."""
    entries, Sigma = coefficient_covariance(model)
    columns = []
    for k, (p, i) in enumerate(entries):
        h = float(np.sqrt(Sigma[k, k]))
        if not h > 0:
            columns.append(np.zeros_like(base))
            continue
        saved = p.unconstrained.numpy().copy()
        value = np.array(p.numpy(), dtype=np.float64, copy=True)
        value.reshape(-1)[i] += h
        try:
            p.assign(value)
            moved = moved_mean()
        finally:
            p.unconstrained.assign(saved)
        columns.append((moved - base) / h)
    if not columns:
        return np.zeros((0, 0)), Sigma
    return np.stack(columns, axis=1), Sigma
