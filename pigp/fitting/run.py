"""One training run of a linear model, and the state a fit changes.

``fit_linear(model, data, plan, ...)`` sets the model's data, trains the parameters
(Adam, L-BFGS-B or both, ``plan.training``), runs the noise stages
(``pigp.fitting.noise``) and returns the ``FitReport``. It owns what a run does to
the model: the objective of the data, the snapshots of the variables and their
restoration when a stage is abandoned or interrupted (``pigp.fitting.state``), and
the data the model is left with.

The model is passed in and used through its public face (``data``, ``objective()``,
``posterior()``, ``log_marginal_likelihood()``, ``trainable_parameters()``,
``trainable_coefficients()``, ``y_scale``, ``dtype``): this package never imports
``pigp.engines.dense.model``.
"""

from __future__ import annotations

import numpy as np

from .._warnings import warn
from ..data import unpin
from . import noise, training
from .plan import FitPlan, Training
from .report import FitReport
from .state import Snapshot

__all__ = ["fit_linear", "train", "warn_at_bounds"]


def train(model, objective, Xs, y, run: Training, plan: FitPlan, callback, verbose, adam, lbfgs):
    """``run`` from the current values, recording into the ``History`` objects ``adam``
    and ``lbfgs`` (so that an interrupted run's are kept)."""
    if run.optimizer in ("adam", "adam+lbfgs"):
        stall = plan.adam_stall if run.optimizer == "adam+lbfgs" else None
        progress = training.progress_bar(int(run.steps), verbose)
        wrapped = None if callback is None else (lambda done, loss: callback(done, loss, model))
        try:
            training.minimize_adam(
                objective,
                Xs,
                y,
                int(run.steps),
                training.Adam(float(run.learning_rate)),
                wrapped,
                progress,
                adam,
                stall,
                plan.adam_stall_nats,
                plan.adam_probe_nats,
            )
        finally:
            if progress is not None:
                progress.close()
    if run.optimizer in ("lbfgs", "adam+lbfgs"):
        iterations = int(run.steps) if run.optimizer == "lbfgs" or run.steps == 0 else 1000
        training.minimize_lbfgs(objective, Xs, y, iterations, lbfgs)


def fit_linear(
    model,
    data,
    plan: FitPlan,
    run: Training | None = None,
    verbose: bool = False,
    callback=None,
    report: FitReport | None = None,
) -> FitReport:
    """Fit ``model`` to the validated ``data``: set them, learn, compute the posterior.

    Args:
        model: a ``pigp.PIGP`` (its public methods only).
        data: a validated ``pigp.data.Data``.
        plan: the ``FitPlan``.
        run: the training (default ``plan.training``).
        verbose: a progress bar over Adam's steps.
        callback: ``callback(step, loss, model)`` every 250 Adam steps.
        report: the ``FitReport`` to fill (a new one by default).

    Returns:
        The report, which the model adopts (``model.adopt``) as the run starts, so that
        an interrupted fit leaves its histories there. On ``KeyboardInterrupt`` the
        parameters of the lowest loss seen are kept, the posterior computed, and a
        ``RuntimeWarning`` says so.
    """
    run = plan.training if run is None else run
    report = FitReport() if report is None else report
    model.adopt(report)
    model.data = data
    report.history, report.lbfgs_evaluations, report.rejected_steps = [], [], []
    report.noise_choice, report.noise_restart = {}, None
    for s in data.sets:  # an earlier fit may have found them exact: learn again
        if s.noise_decided_by_fit:
            unpin(s.noise)
    objective = model.objective()
    Xs, y = data.tensors(model.dtype)
    start = Snapshot(objective.variables)
    starts = {id(p): np.abs(p.numpy()) for p in _coefficients(model)}

    def optimise(adam, lbfgs):
        train(model, objective, Xs, y, run, plan, callback, verbose, adam, lbfgs)

    adam, lbfgs = training.History(), training.History()
    try:
        optimise(adam, lbfgs)
        if run.steps > 0:
            adam, lbfgs = noise.restart_if_noisy(
                model, objective, Xs, y, start, optimise, adam, lbfgs, plan, report
            )
            noise.decide_exact(model, Xs, y, lbfgs, plan, report)
    except KeyboardInterrupt:
        report.record(adam, lbfgs)
        model.posterior()
        warn(f"fit interrupted after {len(report.history)} steps; kept the best parameters so far")
        # A new exception: the traceback ends here, not deep inside TensorFlow or SciPy.
        raise KeyboardInterrupt from None
    report.record(adam, lbfgs)
    model.posterior()
    if report.rejected_steps:
        warn(
            f"fit: {len(report.rejected_steps)} of {run.steps} steps had a non-finite "
            "loss or gradient and were skipped (see model.rejected_steps)"
        )
    if run.steps > 0:
        noise.warn_if_noise_explains_data(model, plan)
        warn_at_bounds(model, noise.counted_zeros(model, plan), starts)
    return report


def _coefficients(model) -> list:
    """The parameters of the data sets' operators (the equation's coefficients)."""
    found = {id(p): p for s in model.data.sets for c, *_ in s.terms for p in c.parameters}
    return list(found.values())


def warn_at_bounds(model, zeros=(), starts=None) -> None:
    """Warn about coefficients of operators that ended the fit at the lower bound of
    a positive parameter (the data may ask for a value beyond it); ``zeros``, the
    names of all-zero sets fitted exactly and counted as evidence, are named as a
    likely cause, and with them a coefficient that fell below 1% of its start in
    ``starts`` (``{id(parameter): |start|}``) is warned of too."""
    coefficients = {id(p) for p in _coefficients(model)}
    trained = [(n, p) for n, p in model.trainable_parameters() if id(p) in coefficients]
    stuck = [name for name, p in trained if p.at_bound()]
    starts = {} if starts is None or not zeros else starts
    fell = [
        name
        for name, p in trained
        if name not in stuck
        and id(p) in starts
        and np.all(np.abs(p.numpy()) < 1e-2 * np.maximum(starts[id(p)], 1e-300))
    ]
    if not stuck and not fell:
        return
    said = []
    if stuck:
        said.append(
            f"{', '.join(stuck)} ended at the lower bound of a positive parameter: the data "
            "may ask for a value below it. A coefficient is signed unless made positive: "
            "pass pigp.Parameter(value) or Parameter(value, positive=False) to lift the bound"
        )
    if fell:
        own = "its" if len(fell) == 1 else "their"
        said.append(f"{', '.join(fell)} fell below 1% of {own} start")
    warn(
        "fit: "
        + "; ".join(said)
        + (
            f". The {zeros} data are all zero, exact and counted as evidence: their "
            "density can pull the coefficients and the kernel to a degenerate fit "
            "(two fields with noisy sensors went to a = c = 0, u 24% off); condition "
            "on them instead, pigp.Observations(X, zeros, operator, 0, name, "
            "condition=True)"
            if zeros
            else ""
        )
    )
