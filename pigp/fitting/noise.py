"""The noise stages of a fit: the restart from quieter noises, and the exact decision.

Both run after training (``pigp.fitting.run.fit_linear``) and read their numbers from
the ``FitPlan``; both write what they found into the ``FitReport``.

- ``restart_if_noisy`` (``plan.noise_restart``): where a learned noise explains more
  than that fraction of its data's mean square, fit again from the same start with
  the learned noises lower, and, where that leaves the data noisy, with the operator's
  coefficients lower too; keep the best fit that calls the data less noise.
- ``decide_exact`` (``plan.exact_evidence``): a data set whose noise the user did not
  give is treated as exact where that costs at most that many nats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._warnings import warn
from ..data import pin_exact
from . import training
from .plan import FitPlan
from .report import FitReport, NoiseChoice, NoiseRestart
from .state import Snapshot, restored_on_interrupt

__all__ = [
    "noise_fraction",
    "restart_if_noisy",
    "decide_exact",
    "warn_if_noise_explains_data",
]


def lower_start(parameters, factor: float) -> None:
    """Start each of ``parameters`` (each object once, however often listed) ``factor``
    of the way from its lower bound to its current value."""
    for p in {id(p): p for p in parameters}.values():
        p.assign(p.lower + factor * (p.numpy() - p.lower))


def noise_fraction(model, s) -> float | None:
    """Data set ``s``'s noise variance as a fraction of its standardised mean square;
    None where the data are all zero, or zero up to rounding (a root mean square below
    1e-10 standardised units, e.g. sin(pi) at a wall)."""
    scale = float(np.mean(np.square(s.y / model.y_scale)))
    return float(s.noise.numpy()) / scale if scale > 1e-20 else None


@dataclass(frozen=True)
class _Refit:
    """One of the restarts."""

    loss: float
    evidence: float  # the log marginal likelihood: the loss without the priors' terms
    snapshot: Snapshot
    histories: tuple  # (Adam's, L-BFGS-B's)
    better: bool  # a lower loss than the first fit's, and quieter where it was loud
    loud: bool  # still above plan.noise_restart where the first fit was


def restart_if_noisy(
    model, objective, Xs, y, start: Snapshot, optimise, adam, lbfgs, plan: FitPlan, report
) -> tuple:
    """``plan.noise_restart``: where a learned noise explains more than that fraction of
    its data's mean square, fit once more from ``start`` with every learned noise
    started ``plan.noise_restart_start`` times lower (above its lower bound); where that
    leaves the data noisy, once more with the coefficients started lower too
    (``plan.coefficient_restart_start``). Keep the fit of lowest loss among those whose
    noises that set it off are lower than the first's; ``report.noise_restart`` says
    what was found.

    Args:
        model: the model being fitted (``data``, ``y_scale``,
            ``trainable_coefficients()``).
        objective: its objective; Xs, y: the data's tensors.
        start: the variables' values before the first fit.
        optimise: ``optimise(adam_history, lbfgs_history)`` trains from the current values.
        adam, lbfgs: the first fit's histories.
        plan: the ``FitPlan``; report: the ``FitReport`` to fill.

    Returns:
        The kept fit's histories ``(adam, lbfgs)``.
    """
    if plan.noise_restart is None:
        return adam, lbfgs
    learned = [s for s in model.data.sets if s.noise.trainable]

    def noise_fractions():
        fractions = {s.name: noise_fraction(model, s) for s in learned}
        return {name: f for name, f in fractions.items() if f is not None}

    before = noise_fractions()
    loud = [name for name, fraction in before.items() if fraction > plan.noise_restart]
    if not loud:
        return adam, lbfgs
    y_numpy = y.numpy()
    penalty = float(objective.penalty().numpy())  # 0 without priors
    first_loss = float(objective.loss(Xs, y_numpy))
    first = Snapshot(objective.variables)
    coefficients = [p for _, p in model.trainable_coefficients()]

    def refit(scale_coefficients: bool) -> _Refit:
        """A fit from ``start``, the learned noises (and the coefficients) lower."""
        start.restore()
        lower_start([s.noise for s in learned], plan.noise_restart_start)  # shared: once
        if scale_coefficients:
            lower_start(coefficients, plan.coefficient_restart_start)
        histories = training.History(), training.History()
        # Back to the first fit on interrupt, whose histories are recorded on the way out.
        with restored_on_interrupt(first):
            optimise(*histories)
        loss = float(objective.loss(Xs, y_numpy))
        after = noise_fractions()
        return _Refit(
            loss,
            # The penalty of these values, which may differ from the first's.
            float(objective.penalty().numpy()) - loss,
            Snapshot(objective.variables),
            histories,
            # Kept-able where it fits better and calls less of those data noise: a
            # lower loss with louder noise is the collapse onto data of zeros fitted
            # exactly, whose likelihood grows without bound
            # (``warn_if_noise_explains_data``).
            math.isfinite(loss)
            and loss < first_loss
            and all(after[name] < before[name] for name in loud),
            any(after[name] > plan.noise_restart for name in loud),
        )

    fits = {"restart": refit(False)}
    restart = fits["restart"]
    if (
        plan.coefficient_restart_start is not None
        and coefficients
        and (restart.loud or not restart.better)
    ):
        fits["coefficients"] = refit(True)
    better = {label: fit for label, fit in fits.items() if fit.better}
    kept = min(better, key=lambda label: better[label].loss) if better else "first"
    third = fits.get("coefficients")
    report.noise_restart = NoiseRestart(
        tuple(loud),
        penalty - first_loss,
        restart.evidence,
        kept,
        None if third is None else third.evidence,
    )
    if kept == "first":
        first.restore()
        return adam, lbfgs
    fits[kept].snapshot.restore()
    return fits[kept].histories


def _refit_stop(learned: float, plan: FitPlan):
    """``minimize_lbfgs``'s ``stop`` for a refit of a set tried exact: the refit's loss
    is ``-log p(y)``, so ``learned + loss`` is the gap to the learned noise's value;
    stop where the last ``plan.exact_refit_window`` iterations closed less than
    ``plan.exact_refit_rate`` of what is left of it above ``plan.exact_evidence``."""
    if plan.exact_refit_rate is None:
        return None
    window, rate, evidence = plan.exact_refit_window, plan.exact_refit_rate, plan.exact_evidence

    def stop(losses) -> bool:
        if len(losses) <= window:
            return False
        left = learned + losses[-1] - evidence
        closed = losses[-1 - window] - losses[-1]
        return left > 0 and closed < rate * left

    return stop


def decide_exact(model, Xs, y, history, plan: FitPlan, report: FitReport) -> None:
    """Treat as exact each data set whose noise ``fit`` decides, where that costs at
    most ``plan.exact_evidence`` nats of log marginal likelihood; record the figures in
    ``report.noise_choice``. The other parameters are refitted by L-BFGS-B only where
    the noise at 0 alone costs more (a refit can only raise the exact model's value).
    An interrupt inside a trial (a noise pinned at 0, a refit half done) goes back to
    the fit's best parameters, which an interrupted fit promises to keep."""
    if plan.exact_evidence is None:
        return
    candidates = [s for s in model.data.sets if s.noise_decided_by_fit and s.noise.trainable]
    if not candidates:
        return
    objective = model.objective()
    learned = model.log_marginal_likelihood()
    with restored_on_interrupt(Snapshot(objective.variables)):
        exact_sets = []
        for s in candidates:
            saved = Snapshot(objective.variables)
            # Tried at 0 inside the same objective (the noise's variable held), so the
            # refit reuses its compiled programs.
            pin_exact(s.noise, fix=False)
            trial = training.History()
            exact = model.log_marginal_likelihood()
            if not (math.isfinite(exact) and exact >= learned - plan.exact_evidence):
                held = [t.noise.unconstrained for t in (*exact_sets, s)]
                training.minimize_lbfgs(
                    objective,
                    Xs,
                    y,
                    plan.exact_refit,
                    trial,
                    fixed=held,
                    stop=_refit_stop(learned, plan),
                )
                exact = model.log_marginal_likelihood()
            keep = math.isfinite(exact) and exact >= learned - plan.exact_evidence
            report.noise_choice[s.name] = NoiseChoice(
                learned, exact, "exact" if keep else "learned"
            )
            if keep:
                exact_sets.append(s)
                history.losses.extend(trial.losses)
                history.evaluations.extend(trial.evaluations)
            else:
                saved.restore()
        for s in exact_sets:
            s.noise.trainable = False


def called_noise(model, plan: FitPlan) -> dict:
    """``{name: share}`` of the data sets whose learned noise exceeds
    ``plan.noise_warning`` of their mean square in ``model``'s current fit (the fits
    ``fit`` warns of), with that fraction."""
    found = {}
    for s in model.data.sets:
        share = noise_fraction(model, s)
        if s.noise.trainable and share is not None and share > plan.noise_warning:
            found[s.name] = share
    return found


def counted_zeros(model, plan: FitPlan) -> list:
    """The names of the data sets that are all zero, fitted (near) exactly and counted
    as evidence (not conditioned on): the sets whose density can decide a fit."""
    return [
        s.name
        for s in model.data.sets
        if not s.condition and not np.any(s.y) and float(s.noise.numpy()) <= plan.noise_floor * 1e-2
    ]


def warn_if_noise_explains_data(model, plan: FitPlan) -> None:
    """Warn when a learned noise variance exceeds ``plan.noise_warning`` of its data's
    mean square.

    Maximising the marginal likelihood can settle on "the data are noise" (a large
    noise variance, the field left at the prior mean) when the kernel cannot fit the
    data, e.g. a fast initial transient next to slow dynamics.
    """
    zeros = counted_zeros(model, plan)
    for name, share in called_noise(model, plan).items():
        cause = (
            "explaining those data as noise. If they are not that noisy, try other "
            "initial lengthscales, a smaller initial noise, or a kernel that fits the "
            "field (e.g. a sum of two kernels for two scales)"
        )
        if zeros:
            cause = (
                f"explaining those data as noise. The {zeros} data are all zero and "
                "fitted (near) exactly: their likelihood grows without bound as the "
                "kernel variance shrinks, so a field of zeros with the other data "
                "called noise wins. Condition on them instead of counting them as "
                "evidence (pigp.Observations(X, zeros, operator, 0, name, "
                "condition=True)), or fix the noise of the "
                f"{name!r} data at its known level (pigp.Parameter(variance, "
                "trainable=False), standardised units)"
            )
        warn(
            f"fit: the learned noise variance of the {name!r} data is "
            f"{share:.0%} of their mean square: the model may be {cause}"
        )
