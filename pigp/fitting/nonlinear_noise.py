"""Which data a nonlinear fit treats as exact: ``fit_deciding_noise``.

A data set whose noise the user did not give is exact in a Gauss-Newton fit
(``pigp.fitting.gauss_newton.fit_nonlinear``): the marginal likelihood of a linearised
model can otherwise explain boundary data as noise and settle on a trivial solution.
Noisy data passed that way are then interpolated: the kernel's lengthscales shrink
towards the data's spacing and an equation's coefficient is pulled off its value with
an interval that does not hold it.

Where the equation has a coefficient to learn, the data decide, as ``noise_choice``
does for linear models (``pigp.fitting.noise.decide_exact``): the fit runs with those
sets exact and again with their noise learned, both from the same start, and the
likelihood of those sets given the equation and the other data, ``log p(y_U | y_C)``,
at each converged linearisation is compared; the sets stay exact unless the learned
noise gains more than ``plan.exact_evidence`` nats, and stay exact where the trial with
their noise learned calls one of them noise (a learned noise above ``plan.noise_warning``
of its mean square), with a warning. ``report.noise_choice`` holds the figures. A fit
that keeps such sets exact warns and names them where the coefficients of the trial with
their noise learned lie outside the kept fit's 95% intervals, where it ends with a
lengthscale below the data's spacing, or where Gauss-Newton did not converge and a
coefficient ended at a fraction of its start.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import scipy.spatial

from .._warnings import warn
from ..data import Data
from ..structure import _unique, covariance_parameters
from .gauss_newton import _replay, fit_nonlinear
from .noise import called_noise
from .plan import FitPlan, Solver, Training
from .report import FitReport, NoiseChoice
from .state import Held

__all__ = ["fit_deciding_noise", "COLLAPSED", "SHRUNK"]

#: The noise variance (standardised) the trial with learned noise starts from: the start
#: the nonlinear examples pass (the linear models' ``NOISE_START``, 1e-3, lets a
#: Gauss-Newton fit explain the data as noise).
START = 1e-4

#: Two fits' coefficients that differ by less than this fraction agree, whatever the
#: kept interval (exact data can give an interval of 1e-4 relative).
MATERIAL = 0.01

#: A coefficient below this fraction of its start (in absolute value) at a fit whose
#: Gauss-Newton did not converge is reported, with the sets taken as exact.
SHRUNK = 0.2

#: A lengthscale below this fraction of the data's spacing (the median distance from a
#: data point to its nearest other) is reported as collapsed.
COLLAPSED = 1.0


def _undeclared(data: Data) -> list:
    """The data sets (not the equation's) whose noise the fit decides."""
    return [s for s in data.sets if s.noise_decided_by_fit and s.name != "f"]


def _evidence(model, names) -> float:
    """``log p(y_U | y_C)`` at the model's last linearisation: the likelihood of the
    sets ``names`` (U) given the equation and every other set (C, conditioned on).
    Counted as evidence, the equation's zeros can outweigh the data (their density
    grows without bound as the kernel's variance shrinks); given, they cannot."""
    data = model.data
    model.data = Data(
        tuple(dataclasses.replace(s, condition=s.name not in names) for s in data.sets),
        data.y_scale,
    )
    try:
        return float(model.log_marginal_likelihood())
    finally:
        model.data = data


def _fit_recorded(model, data, plan, run, solver, verbose, callback, names) -> tuple:
    """``fit_nonlinear`` with its warnings recorded: ``(report, warnings, evidence)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = fit_nonlinear(model, data, plan, run, solver, verbose, callback)
    evidence = _evidence(model, names)
    return report, caught, evidence if math.isfinite(evidence) else -math.inf


def fit_deciding_noise(
    model,
    data: Data,
    plan: FitPlan,
    run: Training | None = None,
    solver: Solver | None = None,
    verbose: bool | None = None,
    callback=None,
) -> FitReport:
    """Fit ``model`` (a nonlinear equation) to ``data`` by Gauss-Newton, the data of
    undeclared noise exact or noisy as their evidence decides (module docstring).

    Returns:
        The report the model adopted; ``noise_choice`` holds, per set decided, the
        likelihood of the sets decided given the rest (``log p(y_U | y_C)``) with
        their noise learned and exact, and which was kept.
    """
    solver = plan.solver if solver is None else solver
    undeclared = _undeclared(data)
    learns = any(p.trainable for p in model.operator.parameters)
    coefficients = {id(p): float(np.ravel(p.numpy())[0]) for p in model.operator.parameters}
    if not (undeclared and learns and plan.exact_evidence is not None and solver.learn != "never"):
        report = fit_nonlinear(model, data, plan, run, solver, verbose, callback)
        _warn_if_interpolating(model, data, undeclared, coefficients)
        return report
    parameters = _unique(
        [*covariance_parameters(model.kernel, data.sets), *model.operator.parameters]
    )
    start = Held(parameters)
    names = {s.name for s in undeclared}
    exact_report, exact_warnings, exact = _fit_recorded(
        model, data, plan, run, solver, verbose, callback, names
    )
    exact_state, exact_data = Held(parameters), model.data
    start.restore()
    noisy_data = Data(
        tuple(
            dataclasses.replace(s, noise_decided_by_fit=False) if s in undeclared else s
            for s in data.sets
        ),
        data.y_scale,
    )
    for s in undeclared:
        s.noise.trainable = True
        s.noise.assign(np.full(s.noise.shape, START))
    try:
        noisy_report, noisy_warnings, learned = _fit_recorded(
            model, noisy_data, plan, run, solver, verbose, callback, names
        )
    except (ValueError, FloatingPointError, np.linalg.LinAlgError):
        noisy_report, learned = None, -math.inf
    noisy_values = _coefficients(model) if noisy_report is not None else {}
    # A trial that calls a decided set noise has not found noisy data: it has given up
    # on them (Kovasznay's walls at 27% of their mean square, nu at 0, u 99% off).
    given_up = {} if noisy_report is None else called_noise(model, plan)
    given_up = {n: share for n, share in given_up.items() if n in names}
    evidence_for_noise = learned > exact + plan.exact_evidence
    keep_exact = bool(given_up) or not evidence_for_noise
    if keep_exact:
        exact_state.restore()
        model.data = exact_data
        report, caught = exact_report, exact_warnings
    else:
        report, caught = noisy_report, noisy_warnings
    model.adopt(report)
    for s in undeclared:
        report.noise_choice[s.name] = NoiseChoice(
            float(learned), float(exact), "exact" if keep_exact else "learned"
        )
    _replay(caught)
    if given_up and evidence_for_noise:
        shares = ", ".join(f"{n!r} {share:.0%}" for n, share in sorted(given_up.items()))
        warn(
            f"fit: the data sets {sorted(given_up)} were passed without a noise; fitted "
            f"with their noise learned, it came out a large share of their mean square "
            f"({shares}), so they are kept exact although that fit's likelihood was "
            f"higher ({learned:.1f} against {exact:.1f} nats). Give their noise if they "
            "are noisy (Observations(..., noise=variance); 0 for exact data)"
        )
    if keep_exact:
        # Kept exact, noisy data would be interpolated: say so where it matters.
        _warn_if_it_depends(model, undeclared, noisy_values)
        _warn_if_interpolating(model, data, undeclared, coefficients)
    return report


def _coefficients(model) -> dict:
    """The equation's trainable coefficients' values, by their names in the model."""
    learned = {id(p) for p in model.operator.parameters if p.trainable}
    return {
        name: float(np.ravel(p.numpy())[0])
        for name, p in model.parameters_by_name().items()
        if id(p) in learned
    }


def _warn_if_it_depends(model, undeclared: list, other: dict) -> None:
    """Warn, naming ``undeclared`` (kept exact), where a coefficient of the trial with
    their noise learned (``other``) lies outside the kept fit's 95% interval and more
    than ``MATERIAL`` from it: the answer depends on the noise the user did not give."""
    if not other:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        intervals = model.parameter_intervals()
    kept = _coefficients(model)
    outside = []
    for name, value in other.items():
        low, high = (float(np.ravel(b)[0]) for b in intervals.get(name, (np.nan, np.nan)))
        mine = kept[name]
        if not low <= value <= high and abs(value - mine) > MATERIAL * abs(mine):
            outside.append(
                f"{name} {mine:.4g} [{low:.4g}, {high:.4g}]; with the other, {value:.4g}"
            )
    if outside:
        names = [s.name for s in undeclared]
        warn(
            f"fit: the data sets {names} were passed without a noise; fitted exact (kept "
            "by their likelihood given the equation) and noisy, the equation's "
            f"coefficients disagree beyond the kept interval ({'; '.join(outside)}). "
            "The answer depends on their noise: give it (Observations(..., "
            "noise=variance) or noise_u=; a positive number is a start to learn from)"
        )


def _spacing(data: Data) -> float:
    """The median distance from a data point to its nearest other, over every set's
    points (each point once)."""
    X = np.unique(np.concatenate([s.X for s in data.sets]), axis=0)
    if len(X) < 2:
        return 0.0
    distances, _ = scipy.spatial.cKDTree(X).query(X, k=2)
    return float(np.median(distances[:, 1]))


def _warn_if_interpolating(model, data: Data, undeclared: list, coefficients: dict) -> None:
    """Warn, naming ``undeclared``, where the fit that took them as exact shows what
    noisy data taken as exact do: a learned lengthscale below the data's spacing, or
    Gauss-Newton not converged with a coefficient at a fraction of its start."""
    if not undeclared:
        return
    signs = []
    spacing = _spacing(data)
    for name, p in model.kernel.parameters.items():
        if not (name.endswith("lengthscales") and p.trainable):
            continue
        values = np.ravel(p.numpy())
        if spacing > 0 and np.any(values < COLLAPSED * spacing):
            signs.append(
                f"the kernel's {name} learned {np.round(values, 4).tolist()}, below the "
                f"data's spacing {spacing:.3g}"
            )
    steps = model.gauss_newton
    converged = bool(steps) and math.isfinite(steps[-1].change) and steps[-1].change < 1e-3
    if not converged:
        for name, p in model.operator.parameters_by_name.items():
            begun = coefficients.get(id(p))
            value = float(np.ravel(p.numpy())[0])
            if p.trainable and begun and abs(value) < SHRUNK * abs(begun):
                signs.append(
                    f"the coefficient {name!r} ended at {value:.3g} from {begun:.3g} with "
                    "Gauss-Newton not converged"
                )
    if signs:
        names = [s.name for s in undeclared]
        warn(
            f"fit: the data sets {names} were passed without a noise and are fitted as "
            f"exact, and {'; '.join(signs)}: noisy data fitted as exact look like this. "
            "Give each set's noise (Observations(..., noise=variance) or noise_u=; a "
            "positive number is a start to learn from)"
        )
