"""``FitReport``: what a fit did, as one value the model adopts and ``save`` writes.

The report is filled by the fit's stages (``pigp.fitting.run``, ``noise``,
``kernel_choice``, ``gauss_newton``) and then belongs to the model: ``model.history``,
``model.noise_choice`` and the rest are its fields. ``to_config`` / ``from_config``
give it as JSON, so a saved model keeps all of it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

__all__ = ["FitReport", "NoiseChoice", "NoiseRestart", "Step"]


@dataclass(frozen=True)
class NoiseChoice:
    """What ``fit`` found for a data set whose noise it decided.

    Attributes:
        learned: the log marginal likelihood with the noise variance learned.
        exact: the same with the data exact (variance 0), the rest refitted where
            the exact model at the learned values fell short (the refit ends once it
            stops closing the gap: ``FitPlan.exact_refit_rate``; a lower bound on what
            a refit to convergence would reach).
        kept: ``"exact"`` or ``"learned"``.
    """

    learned: float
    exact: float
    kept: str


@dataclass(frozen=True)
class NoiseRestart:
    """What ``fit``'s second start found (``FitPlan.noise_restart``).

    Attributes:
        sets: the data sets whose learned noise set off the restart.
        first: the log marginal likelihood of the first fit.
        restart: the same of the fit from the quieter start.
        kept: ``"first"``, ``"restart"`` or ``"coefficients"`` (the highest of those
            that also call the data less noise than the first; with priors, the
            highest log posterior density).
        coefficients: the log marginal likelihood of the third start, from the
            quieter noises and coefficients ``FitPlan.coefficient_restart_start`` of
            their start, where the restart left the data noisy; else None.
    """

    sets: tuple
    first: float
    restart: float
    kept: str
    coefficients: float | None = None


@dataclass(frozen=True)
class Step:
    """One Gauss-Newton iteration (``pigp.fitting.gauss_newton``).

    Attributes:
        iteration: 1, 2, ...
        change: the relative change of u at the collocation points,
            ``||u_new - u_old|| / ||u_new||``; with several fields, the largest such
            change of the equation's features acting on one field (or set of fields).
        residual: the root mean square of ``F(v) - f`` at the collocation points after
            the step (its linearisation's error).
        damping: the fraction of the step taken (1 for a full step).
        learned: whether the parameters were learned at this iteration.
        loss: the linearised model's negative log marginal likelihood after it
            (``-log p(y_N | y_C)`` in a conditional fit's second stage, see
            ``PIGP.fit``'s ``solver``).
        points: the collocation points it conditioned on (fewer than given in the
            first stage, see ``Solver.learn_points``).
    """

    iteration: int
    change: float
    residual: float
    damping: float
    learned: bool
    loss: float
    points: int


def _number(value) -> float | str:
    """A float as JSON keeps it: ``inf`` and ``nan`` as strings."""
    value = float(value)
    return value if math.isfinite(value) else repr(value)


@dataclass
class FitReport:
    """Everything one ``fit`` found besides the parameter values.

    Attributes:
        history: the loss at every optimiser iteration (Adam steps, then L-BFGS-B
            iterations; for a nonlinear equation, every learning phase's in turn).
        lbfgs_evaluations: every loss L-BFGS-B evaluated, line searches included.
        rejected_steps: indices into ``history`` of Adam steps whose loss or gradient
            was not finite and were skipped.
        noise_choice: ``{set name: NoiseChoice}`` for each set whose noise ``fit``
            decided.
        noise_restart: a ``NoiseRestart`` where a learned noise set off a second
            start, else None.
        kernel_choice: ``{kernel name: log marginal likelihood}`` of ``"auto"``'s
            candidates (empty otherwise).
        gauss_newton: a nonlinear equation's iterations, ``[Step]``.
        held: names of parameters a conditional Gauss-Newton fit held (not trainable
            until the next ``fit``).
        unidentified: ``{name: why}`` for each coefficient of a nonlinear equation the
            fit could not identify (``pigp.fitting.gauss_newton``), with a warning.
        engine: which engine ran and with what: ``{}`` for the dense one, else
            ``{"name": "cholesky", "rho": ..., "learn_rho": ..., "supernode": ...,
            "nugget": ..., "measurements": N, "entries_per_column": ... and
            "log_likelihood": the Vecchia log-likelihood at the end, both of the
            pattern at ``learn_rho``, "seconds": ...}`` (``pigp.engines.cholesky``).
    """

    history: list = field(default_factory=list)
    lbfgs_evaluations: list = field(default_factory=list)
    rejected_steps: list = field(default_factory=list)
    noise_choice: dict = field(default_factory=dict)
    noise_restart: NoiseRestart | None = None
    kernel_choice: dict = field(default_factory=dict)
    gauss_newton: list = field(default_factory=list)
    held: tuple = ()
    unidentified: dict = field(default_factory=dict)
    engine: dict = field(default_factory=dict)

    def record(self, adam, lbfgs) -> None:
        """The histories of one training run: Adam's steps, then L-BFGS-B's iterations."""
        self.history = adam.losses + lbfgs.losses
        self.rejected_steps = list(adam.rejected)
        self.lbfgs_evaluations = list(lbfgs.evaluations)

    def to_config(self) -> dict:
        """The report as JSON-compatible values (``from_config`` reads them back)."""
        restart = self.noise_restart
        return {
            "history": [_number(v) for v in self.history],
            "lbfgs_evaluations": [_number(v) for v in self.lbfgs_evaluations],
            "rejected_steps": [int(i) for i in self.rejected_steps],
            "noise_choice": {
                name: [_number(c.learned), _number(c.exact), c.kept]
                for name, c in self.noise_choice.items()
            },
            "noise_restart": None
            if restart is None
            else {
                "sets": list(restart.sets),
                "first": _number(restart.first),
                "restart": _number(restart.restart),
                "kept": restart.kept,
                "coefficients": None
                if restart.coefficients is None
                else _number(restart.coefficients),
            },
            "kernel_choice": {name: _number(v) for name, v in self.kernel_choice.items()},
            "gauss_newton": [
                [
                    int(s.iteration),
                    _number(s.change),
                    _number(s.residual),
                    _number(s.damping),
                    bool(s.learned),
                    _number(s.loss),
                    int(s.points),
                ]
                for s in self.gauss_newton
            ],
            "held": list(self.held),
            "unidentified": dict(self.unidentified),
            "engine": {k: v if isinstance(v, str) else _number(v) for k, v in self.engine.items()},
        }

    @classmethod
    def from_config(cls, config: dict) -> FitReport:
        """The inverse of ``to_config``."""
        restart = config.get("noise_restart")
        if restart is not None:
            coefficients = restart.get("coefficients")
            restart = NoiseRestart(
                tuple(restart["sets"]),
                float(restart["first"]),
                float(restart["restart"]),
                str(restart["kept"]),
                None if coefficients is None else float(coefficients),
            )
        return cls(
            history=[float(v) for v in config.get("history", [])],
            lbfgs_evaluations=[float(v) for v in config.get("lbfgs_evaluations", [])],
            rejected_steps=[int(i) for i in config.get("rejected_steps", [])],
            noise_choice={
                name: NoiseChoice(float(learned), float(exact), str(kept))
                for name, (learned, exact, kept) in config.get("noise_choice", {}).items()
            },
            noise_restart=restart,
            kernel_choice={k: float(v) for k, v in config.get("kernel_choice", {}).items()},
            gauss_newton=[
                Step(int(i), float(c), float(r), float(d), bool(lr), float(lo), int(p))
                for i, c, r, d, lr, lo, p in config.get("gauss_newton", [])
            ],
            held=tuple(str(n) for n in config.get("held", [])),
            unidentified={str(k): str(v) for k, v in config.get("unidentified", {}).items()},
            engine={
                str(k): v if isinstance(v, str) and k in ("name", "learn") else float(v)
                for k, v in config.get("engine", {}).items()
            },
        )

    def copy(self) -> FitReport:
        """A copy whose lists and dicts are its own."""
        return dataclasses.replace(
            self,
            history=list(self.history),
            lbfgs_evaluations=list(self.lbfgs_evaluations),
            rejected_steps=list(self.rejected_steps),
            noise_choice=dict(self.noise_choice),
            kernel_choice=dict(self.kernel_choice),
            gauss_newton=list(self.gauss_newton),
            unidentified=dict(self.unidentified),
            engine=dict(self.engine),
        )
