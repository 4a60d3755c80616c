"""``FitPlan``: every number and setting of how a model is fitted, in one frozen value.

A plan is data: ``fit(..., plan=FitPlan(noise_restart=None))`` changes one stage for
one fit, and nothing global changes. The defaults are the measured ones (the
performance and reliability pages say where each comes from). Each field belongs to
one stage of the fit (``pigp.fitting.run``, ``noise``, ``kernel_choice``,
``gauss_newton``); a new stage adds its field here and reads it there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FitPlan", "Training", "Solver", "default_plan", "defaults"]

OPTIMIZERS = ("adam", "lbfgs", "adam+lbfgs")
LEARN = ("auto", "until", "first", "always", "never")
LIKELIHOODS = ("auto", "joint", "conditional")


def _integer(value, least: int) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= least


def _number(value) -> bool:
    return isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)


def _positive(value) -> bool:
    return _number(value) and 0 < value < math.inf


def _check_optional(name: str, value, test, expected: str) -> None:
    if value is not None and not test(value):
        raise ValueError(f"{name}: expected {expected} or None, got {value!r}")


@dataclass(frozen=True)
class Training:
    """One training run: ``steps`` of ``optimizer`` at ``learning_rate``.

    Args:
        steps: Adam steps (``"adam"``, or at most that many with ``"adam+lbfgs"``),
            or L-BFGS-B iterations (``"lbfgs"``); 0 trains nothing.
        learning_rate: Adam's step size on the unconstrained variables.
        optimizer: ``"adam"``, ``"lbfgs"`` or ``"adam+lbfgs"``.
    """

    steps: int = 2000
    learning_rate: float = 0.02
    optimizer: str = "adam+lbfgs"

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"optimizer: expected 'adam', 'lbfgs' or 'adam+lbfgs', got {self.optimizer!r}"
            )
        if not _integer(self.steps, 0):
            raise ValueError(f"steps: expected a non-negative integer, got {self.steps!r}")
        if not _positive(self.learning_rate):
            raise ValueError(
                f"learning_rate: expected a positive number, got {self.learning_rate!r}"
            )


@dataclass(frozen=True)
class Solver:
    """Gauss-Newton's settings for a nonlinear equation (``pigp.fitting.gauss_newton``).

    Args:
        iterations: the most iterations (per stage).
        tolerance: stop when the relative change of u at the collocation points falls
            below it.
        learn: when the parameters are learned: ``"auto"``, ``"until"``, ``"first"``,
            ``"always"`` or ``"never"``.
        learn_points: with more values than this, Gauss-Newton first runs, learning, on
            the collocation points cut to this many values in all, then on all of them;
            None: all points from the start.
        likelihood: ``"joint"``, ``"conditional"`` or ``"auto"`` (``PIGP.fit``).
        learn_near: ``learn="auto"``: the parameters are learned at an iteration whose
            linearisation point moved by less than this (relative change of u) in the
            step before: near a fixed point of the current parameters.
        learn_phases: ``learn="auto"``: at most this many learning phases; learning
            stops sooner, after a phase whose step changed u by less than
            ``learn_until``.
        learn_until: ``learn="until"``: the parameters are learned at each iteration
            until the relative change of the solution falls below this.
    """

    iterations: int = 30
    tolerance: float = 1e-5
    learn: str = "auto"
    learn_points: int | None = 1200
    likelihood: str = "auto"
    learn_near: float = 1e-2
    learn_phases: int = 3
    learn_until: float = 1e-3

    def __post_init__(self):
        if self.likelihood not in LIKELIHOODS:
            raise ValueError(
                "solver['likelihood']: expected 'auto', 'joint' or 'conditional', got "
                f"{self.likelihood!r}"
            )
        if self.learn_points is not None and not _integer(self.learn_points, 1):
            raise ValueError(
                "solver['learn_points']: expected a positive integer or None, got "
                f"{self.learn_points!r}"
            )
        if not _integer(self.iterations, 1):
            raise ValueError(
                f"solver['iterations']: expected an integer >= 1, got {self.iterations!r}"
            )
        if not _positive(self.tolerance):
            raise ValueError(
                f"solver['tolerance']: expected a positive number, got {self.tolerance!r}"
            )
        if self.learn not in LEARN:
            raise ValueError(
                "solver['learn']: expected 'auto', 'until', 'first', 'always' or 'never', "
                f"got {self.learn!r}"
            )
        for name in ("learn_near", "learn_until"):
            if not _positive(getattr(self, name)):
                raise ValueError(
                    f"solver[{name!r}]: expected a positive number, got {getattr(self, name)!r}"
                )
        if not _integer(self.learn_phases, 1):
            raise ValueError(
                f"solver['learn_phases']: expected an integer >= 1, got {self.learn_phases!r}"
            )

    @classmethod
    def updated(cls, solver: Solver, changes) -> Solver:
        """``solver`` with the entries of the dict ``changes`` (``fit``'s ``solver=``)."""
        if changes is None:
            return solver
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(changes) - set(names)) if isinstance(changes, dict) else None
        if unknown is None or unknown:
            raise ValueError(
                f"solver: expected a dict with keys among {sorted(names)}, got {changes!r}"
            )
        return dataclasses.replace(solver, **changes)


@dataclass(frozen=True)
class FitPlan:
    """How ``fit`` fits: the training runs, and the settings of each later stage.

    Args:
        training: a linear model's training (``fit``'s ``steps``, ``learning_rate``
            and ``optimizer`` override it).
        nonlinear_training: each learning phase of a nonlinear equation's
            Gauss-Newton iterations (warm from the previous phase).
        fields_training: a linear model of several latent fields' training, whose
            every step costs many derivatives of each field's kernel; None: ``training``.
            L-BFGS-B alone by default: on two-field plane elasticity of 480 values
            (``benchmarks/elasticity.py``) it took 20 s to a log marginal likelihood
            32 nats higher than the default schedule reached in 241 s (1478 Adam steps).
        solver: Gauss-Newton's settings (``fit``'s ``solver=`` overrides entries).
        adam_stall: with ``"adam+lbfgs"``, Adam hands over to L-BFGS-B at a multiple
            of 250 steps once those steps lowered the loss by less than this fraction
            of all Adam lowered it and by less than ``adam_stall_nats``; None runs
            all of the steps.
        adam_stall_nats: the second condition of ``adam_stall`` (None: none).
        adam_probe_nats: where only ``adam_stall_nats`` keeps Adam going, L-BFGS-B
            probes hand over once two in a row end within this many nats; None: no
            probes.
        exact_evidence: a data set whose noise was not given is treated as exact
            where that costs at most this many nats of log marginal likelihood (the
            rest refitted); None keeps every such noise learned.
        exact_refit: at most this many L-BFGS-B iterations refit the rest for a set
            tried exact.
        exact_refit_rate: the refit also ends once its last ``exact_refit_window``
            iterations closed less than this fraction of the gap still left to
            ``exact_evidence``; None refits to convergence or ``exact_refit``.
        exact_refit_window: see ``exact_refit_rate``.
        noise_restart: where a learned noise variance ends above this fraction of
            its data's (standardised) mean square, the fit runs once more from the
            same start with every learned noise ``noise_restart_start`` times lower;
            the better fit is kept (``model.noise_restart``). None: no restart.
        noise_restart_start: see ``noise_restart``.
        coefficient_restart_start: where the restart leaves the data noisy, a third
            start with the operator's coefficients this fraction of their start
            (above their bounds). None: no third start.
        noise_floor: ``sample``'s default floor under noise variances that ``fit``
            decided (standardised units).
        noise_warning: ``fit`` warns where a learned noise variance exceeds this
            fraction of its data's mean square.
    """

    training: Training = field(default_factory=Training)
    nonlinear_training: Training = field(
        default_factory=lambda: Training(steps=50, learning_rate=0.02, optimizer="lbfgs")
    )
    fields_training: Training | None = field(
        default_factory=lambda: Training(steps=1000, optimizer="lbfgs")
    )
    solver: Solver = field(default_factory=Solver)
    adam_stall: float | None = 0.05
    adam_stall_nats: float | None = 1.0
    adam_probe_nats: float | None = 0.01
    exact_evidence: float | None = 2.0
    exact_refit: int = 100
    exact_refit_rate: float | None = 0.1
    exact_refit_window: int = 5
    noise_restart: float | None = 0.01
    noise_restart_start: float = 0.1
    coefficient_restart_start: float | None = 0.1
    noise_floor: float = 1e-4
    noise_warning: float = 0.1

    def __post_init__(self):
        if self.fields_training is not None and not isinstance(self.fields_training, Training):
            raise ValueError(
                "plan.fields_training: expected a pigp.fitting.Training or None, got "
                f"{self.fields_training!r}"
            )
        for name in ("training", "nonlinear_training"):
            if not isinstance(getattr(self, name), Training):
                raise ValueError(
                    f"plan.{name}: expected a pigp.fitting.Training, got {getattr(self, name)!r}"
                )
        if not isinstance(self.solver, Solver):
            raise ValueError(f"plan.solver: expected a pigp.fitting.Solver, got {self.solver!r}")
        for name in (
            "adam_stall",
            "adam_stall_nats",
            "adam_probe_nats",
            "exact_evidence",
            "exact_refit_rate",
        ):
            _check_optional(f"plan.{name}", getattr(self, name), _positive, "a positive number")
        _check_optional("plan.noise_restart", self.noise_restart, _positive, "a positive fraction")
        _check_optional(
            "plan.coefficient_restart_start",
            self.coefficient_restart_start,
            lambda v: _number(v) and 0 < v < 1,
            "a number in (0, 1)",
        )
        for name in ("noise_floor", "noise_warning"):
            if not _positive(getattr(self, name)):
                raise ValueError(
                    f"plan.{name}: expected a positive number, got {getattr(self, name)!r}"
                )
        if not (_number(self.noise_restart_start) and 0 < self.noise_restart_start < 1):
            raise ValueError(
                "plan.noise_restart_start: expected a number in (0, 1), got "
                f"{self.noise_restart_start!r}"
            )
        for name in ("exact_refit", "exact_refit_window"):
            if not _integer(getattr(self, name), 1):
                raise ValueError(
                    f"plan.{name}: expected an integer >= 1, got {getattr(self, name)!r}"
                )

    def replace(self, **changes) -> FitPlan:
        """A copy with ``changes`` (checked as a new plan)."""
        return dataclasses.replace(self, **changes)

    def training_for(
        self, nonlinear: bool, steps=None, learning_rate=None, optimizer=None, fields: int = 1
    ) -> Training:
        """The training of a linear (or nonlinear) fit of a model of ``fields`` latent
        fields, with ``fit``'s arguments that are not None in place of the plan's. With
        several fields, an ``optimizer`` given picks the one-field ``training`` (its
        steps and learning rate) with that optimizer, else ``fields_training``."""
        if nonlinear:
            base = self.nonlinear_training
        elif fields > 1 and self.fields_training is not None and optimizer is None:
            base = self.fields_training
        else:
            base = self.training
        changes = {
            name: value
            for name, value in (
                ("steps", steps),
                ("learning_rate", learning_rate),
                ("optimizer", optimizer),
            )
            if value is not None
        }
        return dataclasses.replace(base, **changes) if changes else base


_default = [FitPlan()]


def default_plan() -> FitPlan:
    """The plan of a ``fit`` given none: ``FitPlan()``, or the one ``defaults`` set."""
    return _default[-1]


@contextlib.contextmanager
def defaults(plan: FitPlan):
    """Within the block, a ``fit`` given no ``plan=`` uses ``plan``: for code that fits
    models it does not construct (an example's ``run``, a benchmark's case)."""
    if not isinstance(plan, FitPlan):
        raise ValueError(f"plan: expected a pigp.fitting.FitPlan, got {plan!r}")
    _default.append(plan)
    try:
        yield plan
    finally:
        _default.remove(plan)
