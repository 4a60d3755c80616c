"""The physics-informed GP: a GP prior on u, conditioned on data of u and of L u.

``PIGP`` wires the parts together: the data sets (``pigp.data``), the
joint covariance (``pigp.covariance``), the objective (``pigp.objective``),
the optimisers (``pigp.training``), the posterior snapshot
(``pigp.posterior``), Laplace uncertainty (``pigp.uncertainty``) and the
file format (``pigp.io``). Notation: docs/notation.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
import warnings
from dataclasses import dataclass

import numpy as np

from . import _validation as check
from . import io, memory, training
from ._tensorflow import tf
from .base import Model, check_training, progress_bar, representable
from .covariance import block, block_diag, check_smoothness
from .data import Data, pin_exact, unpin
from .kernels import SpectralMixture, SquaredExponential
from .objective import Objective
from .operators import Nonlinear
from .parameters import Parameter, substituted
from .posterior import CHUNK, Posterior
from .structure import data_parameters, program
from .uncertainty import laplace, laplace_intervals

__all__ = ["PIGP"]

#: The kernels ``PIGP(kernel="auto")`` chooses from, by name.
AUTO_KERNELS = {
    "SquaredExponential": lambda: SquaredExponential(),
    "SpectralMixture": lambda: SpectralMixture(1),
}

#: A data set whose noise was not given is treated as exact (its noise variance fixed at
#: 0, only the jitter left) when that costs at most this many nats of log marginal
#: likelihood against the learned noise, the other parameters refitted (L-BFGS-B); None
#: keeps every such noise learned. On a flat likelihood the learned noise is set by
#: the start, not the data, and trades exact values for a misfit.
EXACT_EVIDENCE = 2.0

#: At most this many L-BFGS-B iterations refit the other parameters of a data set tried
#: exact; a set still short of ``EXACT_EVIDENCE`` then keeps its learned noise (the
#: behaviour without the decision), so noisy data do not pay for a full refit.
EXACT_REFIT = 100

#: A refit of a data set tried exact also ends (the set keeps its learned noise) once
#: its last ``EXACT_REFIT_WINDOW`` iterations closed less than this fraction of the
#: gap still left to ``EXACT_EVIDENCE``: at that rate it would need more than ten
#: times as many iterations again. None refits to convergence or ``EXACT_REFIT``.
EXACT_REFIT_RATE = 0.1
EXACT_REFIT_WINDOW = 5

#: Where a data set's learned noise variance (left to ``fit``, or started by the user)
#: ends above this fraction of its (standardised) mean square, the fit is run once more
#: from the same start with every learned noise started ``NOISE_RESTART_START`` times
#: lower (its distance above its lower bound), and that fit is kept where its loss and
#: those noises are lower (``model.noise_restart``): from its start the marginal
#: likelihood can settle on "these data are noise" (the field smooth, a coefficient near
#: its start) where a fit from a quieter start finds the data explained by the field,
#: many nats higher. None: no restart.
NOISE_RESTART = 0.01
NOISE_RESTART_START = 0.1

#: Where the quieter start (``NOISE_RESTART``) still leaves a set's noise above that
#: fraction, or is not kept, and the operator has trainable coefficients, the fit is run
#: a third time from the quieter start with every coefficient started this fraction of
#: its start (of its distance above its lower bound): a coefficient started far above
#: its value can hold the fit in "these data are noise" whatever the noises' start
#: (the ``slow`` calibration family on exact data, seed 15: alpha 3.65 from 2 with the
#: u noise at 2.7% of its mean square, 82 nats below the fit from 0.2, alpha 0.0500).
#: Kept by the same rule as the restart. None: no third start.
COEFFICIENT_RESTART_START = 0.1

#: ``sample``'s default floor under noise variances (standardised units) that ``fit``
#: decided (found exact, or learned below it): the sampler draws them above it.
NOISE_FLOOR = 1e-4

#: With ``optimizer="adam+lbfgs"``, Adam hands over to L-BFGS-B early, at a multiple of
#: 250 steps, once those 250 steps lowered the loss by less than this fraction of
#: all that Adam has lowered it (``pigp.training.minimize_adam``'s ``stall``) and by
#: less than ``ADAM_STALL_NATS`` nats; None runs all of ``fit``'s ``steps``.
ADAM_STALL = 0.05
ADAM_STALL_NATS = 1.0

#: Where only ``ADAM_STALL_NATS`` keeps Adam going, L-BFGS-B probes from Adam's point
#: (``pigp.training.minimize_adam``'s ``probe``) hand over once two in a row end within
#: this many nats of each other; None: no probes.
ADAM_PROBE_NATS = 0.01


#: ``fit``'s training defaults: ``steps`` Adam steps at ``learning_rate``, then L-BFGS-B.
TRAINING = {"steps": 2000, "learning_rate": 0.02, "optimizer": "adam+lbfgs"}

#: The same for each learning phase of a nonlinear equation's Gauss-Newton iterations
#: (the linearised model's parameters start warm from the previous phase).
NONLINEAR_TRAINING = {"steps": 50, "learning_rate": 0.02, "optimizer": "lbfgs"}

#: Gauss-Newton's defaults (``fit``'s ``solver``): see ``pigp.nonlinear.solve``.
NONLINEAR_SOLVER = {
    "iterations": 30,
    "tolerance": 1e-5,
    "learn": "auto",
    "learn_points": 1200,
    "likelihood": "auto",
}


def _refit_stop(learned: float):
    """``minimize_lbfgs``'s ``stop`` for a refit of a set tried exact: the refit's loss
    is ``-log p(y)``, so ``learned + loss`` is the gap to the learned noise's value;
    stop where the last ``EXACT_REFIT_WINDOW`` iterations closed less than
    ``EXACT_REFIT_RATE`` of what is left of it above ``EXACT_EVIDENCE``."""
    if EXACT_REFIT_RATE is None:
        return None

    def stop(losses) -> bool:
        if len(losses) <= EXACT_REFIT_WINDOW:
            return False
        left = learned + losses[-1] - EXACT_EVIDENCE
        closed = losses[-1 - EXACT_REFIT_WINDOW] - losses[-1]
        return left > 0 and closed < EXACT_REFIT_RATE * left

    return stop


@dataclass(frozen=True)
class NoiseChoice:
    """What ``fit`` found for a data set whose noise it decided.

    Attributes:
        learned: the log marginal likelihood with the noise variance learned.
        exact: the same with the data exact (variance 0), the rest refitted where
            the exact model at the learned values fell short (the refit ends once it
            stops closing the gap: ``EXACT_REFIT_RATE``; a lower bound on what a
            refit to convergence would reach).
        kept: ``"exact"`` or ``"learned"``.
    """

    learned: float
    exact: float
    kept: str


@dataclass(frozen=True)
class NoiseRestart:
    """What ``fit``'s second start found (``NOISE_RESTART``).

    Attributes:
        sets: the data sets whose learned noise set off the restart.
        first: the log marginal likelihood of the first fit.
        restart: the same of the fit from the quieter start.
        kept: ``"first"``, ``"restart"`` or ``"coefficients"`` (the highest of those
            that also call the data less noise than the first; with priors, the
            highest log posterior density).
        coefficients: the log marginal likelihood of the third start, from the
            quieter noises and coefficients ``COEFFICIENT_RESTART_START`` of their
            start, where the restart left the data noisy; else None.
    """

    sets: tuple
    first: float
    restart: float
    kept: str
    coefficients: float | None = None


@dataclass(frozen=True)
class _Refit:
    """One of ``fit``'s restarts (``PIGP._restart_if_noisy``)."""

    loss: float
    evidence: float  # the log marginal likelihood: the loss without the priors' terms
    values: list  # [(variable, value)]
    histories: tuple  # (Adam's, L-BFGS-B's)
    better: bool  # a lower loss than the first fit's, and quieter where it was loud
    loud: bool  # still above NOISE_RESTART where the first fit was


class PIGP(Model):
    """Physics-informed GP regression for a linear operator ``f = L u``.

    Args:
        kernel: the prior covariance of u, a ``pigp.kernels.Kernel``, or ``"auto"``:
            the first ``fit`` fits a ``SquaredExponential`` and a one-component
            ``SpectralMixture`` from the same start and keeps the one of higher log
            marginal likelihood (``model.kernel_choice`` has both evidences); it
            costs both fits (``AUTO_KERNELS``). A higher marginal likelihood is
            evidence for a model of the data, not a promise of a smaller error:
            the more flexible kernel can fit the data points better and still be
            worse between them. Check the choice against held-out data where
            accuracy matters.
        operator: the operator L, e.g. ``pigp.operators.heat(diffusivity=1.0)``.
        noise_u: the noise variance of the u data, in standardised units. None
            (default): learned from 1e-3 (once more from 1e-4 where it ends above
            ``NOISE_RESTART`` of the data's mean square, the better fit kept:
            ``model.noise_restart``), and after training the data are
            treated as exact (variance 0) where the log marginal likelihood loses
            at most ``EXACT_EVIDENCE`` nats by it (``model.noise_choice`` has the
            figures); ``0``: exact data, not learned; a positive number: the
            initial value, learned (restarted from a tenth of it where it ends above
            ``NOISE_RESTART``, as the default is); a ``pigp.Parameter``
            (``trainable=False`` fixes it; a trainable one is restarted likewise).
        noise_f: the same for the f data.
        dims: column names of X (e.g. ``("x", "t")``) when the operator does not
            declare them.
        dtype: ``"float64"`` (default) or ``"float32"`` (for accelerators).
        jitter: relative diagonal jitter per block (default 1e-12 in float64,
            1e-6 in float32).
        standardize: divide all targets by ``y_scale``, the root mean square of
            the u data (of the first data set when there is none); L is linear,
            so u and f scale alike. The kernel variance and the noise variances
            are then those of the standardised data; predictions and
            ``covariance`` are in data units.

    After ``fit``: ``history`` (the loss at every optimiser iteration: Adam steps,
    then L-BFGS iterations), ``noise_choice`` (for each data set whose noise
    ``fit`` decided: the log marginal likelihood with the noise learned and with
    the data exact, and which was kept), ``noise_restart`` (a ``NoiseRestart`` where a
    learned noise set off a second start, ``NOISE_RESTART``; else None),
    ``lbfgs_evaluations`` (every loss L-BFGS evaluated, its line searches included),
    ``rejected_steps`` (indices into ``history`` of Adam steps whose loss or gradient
    was not finite and were skipped) and ``data`` (the validated data sets, a ``pigp.data.Data``).
    """

    def _kernel_argument(self, kernel):
        self._candidates = ()
        if isinstance(kernel, str):
            if kernel != "auto":
                raise ValueError(
                    f"kernel: expected a pigp.kernels.Kernel or 'auto', got {kernel!r}"
                )
            self._candidates = tuple(make() for make in AUTO_KERNELS.values())
            return self._candidates[0]
        return kernel

    def _start(self) -> None:
        self.kernel_choice: dict = {}
        self.noise_choice: dict = {}
        self.noise_restart: NoiseRestart | None = None
        self.lbfgs_evaluations: list = []
        self.rejected_steps: list = []
        self._objective = None  # rebuilt when the variables or the data sets change
        self._posterior = None  # the last snapshot; used only while current
        self.gauss_newton: list = []  # a nonlinear equation's iterations (pigp.nonlinear.Step)
        self.held: tuple = ()  # names of parameters a conditional Gauss-Newton fit held
        if self.nonlinear and self._candidates:
            raise ValueError(
                "kernel: 'auto' is not available for nonlinear equations; pass a kernel, "
                "e.g. pigp.kernels.SquaredExponential()"
            )

    def objective(self) -> Objective:
        """The negative log marginal likelihood of the fitted data's structure, over
        the trainable parameters' unconstrained variables (``objective.variables``).
        Pass it ``model.data.tensors(model.dtype)``."""
        self._require_data()
        trainable = [p for _, p in self.trainable_parameters()]
        variables = [p.unconstrained for p in trainable]
        signature = Objective.signature_of(variables, self.data.sets, trainable)
        if self._objective is None or self._objective.signature != signature:
            # Cheap: its compiled programs are those of its structure, built once.
            self._objective = Objective(
                self.kernel, self.data.sets, variables, self.jitter, self.dtype, priors=trainable
            )
        return self._objective

    # ----- training -------------------------------------------------------------------
    def fit(
        self,
        X_u=None,
        y_u=None,
        X_f=None,
        y_f=None,
        *,
        observations=(),
        steps: int | None = None,
        learning_rate: float | None = None,
        optimizer: str | None = None,
        verbose: bool = False,
        callback=None,
        solver: dict | None = None,
    ) -> PIGP:
        """Learn the parameters from data by maximising the log marginal likelihood.

        Args:
            X_u: points of u data, array of shape (n_u, d).
            y_u: values of u at ``X_u``, shape (n_u,).
            X_f: points of f data, array of shape (n_f, d).
            y_f: values of ``f = L u`` at ``X_f``, shape (n_f,).
            observations: further ``pigp.Observations`` (boundary, Neumann, ...),
                named other than ``"u"`` and ``"f"``.
            steps: the number of Adam steps from the current parameter values
                (default 2000, ``TRAINING``).
            learning_rate: Adam's step size on the unconstrained variables (0.02).
            optimizer: ``"adam"`` (``steps`` Adam steps), ``"lbfgs"`` (SciPy's
                L-BFGS-B, at most ``steps`` iterations) or ``"adam+lbfgs"`` (up to ``steps``
                Adam steps, fewer where Adam stalls: ``ADAM_STALL``,
                ``ADAM_STALL_NATS``, ``ADAM_PROBE_NATS``; then L-BFGS-B to polish, at most 1000
                iterations; the default). With
                ``steps=0`` nothing is trained: the data are set and the posterior
                computed at the current parameters. After training, each data set
                whose noise was not given is tried exact (its noise fixed at 0, the
                rest refitted by L-BFGS-B) and kept so unless the log marginal
                likelihood drops by more than ``EXACT_EVIDENCE`` (``noise_choice``).
            verbose: show a progress bar with the current loss.
            callback: ``callback(step, loss, model)`` after every 250 Adam steps
                and after the last; returning ``True`` stops Adam early.
            solver: for a nonlinear equation (``pigp.operators.nonlinear``), the
                Gauss-Newton settings (``NONLINEAR_SOLVER`` has the defaults):
                ``iterations`` (most iterations), ``tolerance`` (on the relative
                change of u at the collocation points), ``learn`` (when the
                parameters are learned: ``"auto"``, ``"until"``, ``"first"``,
                ``"always"``, ``"never"``; ``pigp.nonlinear.solve``) and
                ``learn_points`` (with more values than this, Gauss-Newton first runs,
                learning, on the collocation points cut to this many values in all,
                then on all of them with the parameters held; 1200 by default; None:
                all points from the start), ``likelihood`` (what the parameters are
                learned by: ``"joint"``, the marginal likelihood of every data set and
                the linearised equation; ``"conditional"``, that first, then the
                equation's coefficients once more, from that solution, by the
                likelihood of the data with noise given the equation and the exact
                data (``Observations(condition=True)`` on those), the kernel's and the
                noises' parameters held at the joint fit's values (their names in
                ``model.held``: not trainable until the next ``fit``, so that
                ``parameter_uncertainty`` and ``sample`` give the coefficients'
                uncertainty given them); ``"auto"``, the default: ``"conditional"``
                where the equation has a trainable coefficient and a data set has
                noise, else ``"joint"``). There
                ``y_f`` is the right-hand side ``f`` of
                ``N[u] = f`` at the collocation points ``X_f``, and ``steps``,
                ``learning_rate`` and ``optimizer`` apply to each learning phase
                (defaults there: ``NONLINEAR_TRAINING``). ``model.gauss_newton``
                has the iterations (``pigp.nonlinear.Step``).

        Returns:
            self. The parameters left are those of the lowest loss seen.
        """
        defaults = NONLINEAR_TRAINING if self.nonlinear else TRAINING
        steps = defaults["steps"] if steps is None else steps
        learning_rate = defaults["learning_rate"] if learning_rate is None else learning_rate
        optimizer = defaults["optimizer"] if optimizer is None else optimizer
        if optimizer not in ("adam", "lbfgs", "adam+lbfgs"):
            raise ValueError(
                f"optimizer: expected 'adam', 'lbfgs' or 'adam+lbfgs', got {optimizer!r}"
            )
        check_training(steps, learning_rate)
        data = self._prepare(X_u, y_u, X_f, y_f, observations)
        memory.check_fit(sum(data.sizes))
        self._release_held()
        if self.nonlinear:
            return self._solve(data, steps, learning_rate, optimizer, verbose, callback, solver)
        if solver is not None:
            raise ValueError(
                f"solver: Gauss-Newton settings are for nonlinear equations; this model's "
                f"operator is linear, got {solver!r}"
            )
        if self._candidates:
            arguments = dict(
                observations=observations,
                steps=steps,
                learning_rate=learning_rate,
                optimizer=optimizer,
                verbose=verbose,
                callback=callback,
            )
            return self._choose_kernel(data, (X_u, y_u, X_f, y_f), arguments)
        # The kernel checks its shapes against the inputs before creating anything.
        self.kernel.build(np.concatenate([s.X for s in data.sets]))
        # Validated: from here on, state changes.
        return self._train(data, steps, learning_rate, optimizer, verbose, callback)

    def _train(self, data, steps, learning_rate, optimizer, verbose, callback) -> PIGP:
        """``fit`` on validated ``data``: set them, learn, compute the posterior."""
        self.data, self._posterior = data, None
        self.history, self.lbfgs_evaluations, self.rejected_steps = [], [], []
        self.noise_choice, self.noise_restart = {}, None
        for s in data.sets:  # an earlier fit may have found them exact: learn again
            if s.noise_decided_by_fit:
                unpin(s.noise)
        objective = self.objective()
        Xs, y = data.tensors(self.dtype)
        start = [(v, v.numpy()) for v in objective.variables]

        def optimise(adam, lbfgs):
            """Train from the current values, recording into the histories given (so
            that an interrupted run's are kept)."""
            if optimizer in ("adam", "adam+lbfgs"):
                stall = ADAM_STALL if optimizer == "adam+lbfgs" else None
                self._adam(
                    objective,
                    Xs,
                    y,
                    int(steps),
                    float(learning_rate),
                    verbose,
                    callback,
                    adam,
                    stall,
                    ADAM_STALL_NATS,
                )
            if optimizer in ("lbfgs", "adam+lbfgs"):
                iterations = int(steps) if optimizer == "lbfgs" or steps == 0 else 1000
                training.minimize_lbfgs(objective, Xs, y, iterations, lbfgs)

        adam, lbfgs = training.History(), training.History()
        try:
            optimise(adam, lbfgs)
            if steps > 0:
                adam, lbfgs = self._restart_if_noisy(objective, Xs, y, start, optimise, adam, lbfgs)
                self._decide_exact(Xs, y, lbfgs)
        except KeyboardInterrupt:
            self._record(adam, lbfgs)
            self.posterior()
            warnings.warn(
                f"fit interrupted after {len(self.history)} steps; kept the best parameters so far",
                RuntimeWarning,
                stacklevel=2,
            )
            # A new exception: the traceback ends here, not deep inside TensorFlow or SciPy.
            raise KeyboardInterrupt from None
        self._record(adam, lbfgs)
        self.posterior()
        if self.rejected_steps:
            warnings.warn(
                f"fit: {len(self.rejected_steps)} of {steps} steps had a non-finite "
                "loss or gradient and were skipped (see model.rejected_steps)",
                RuntimeWarning,
                stacklevel=2,
            )
        if steps > 0:
            self._warn_if_noise_explains_data()
            self._warn_at_bounds()
        return self

    def _solve(self, data, steps, learning_rate, optimizer, verbose, callback, solver) -> PIGP:
        """``fit`` for a nonlinear equation: Gauss-Newton (``pigp.nonlinear.solve``)."""
        from .nonlinear import _features as features
        from .nonlinear import check_equation, solve

        settings = dict(NONLINEAR_SOLVER)
        if solver is not None:
            unknown = sorted(set(solver) - set(settings)) if isinstance(solver, dict) else None
            if unknown is None or unknown:
                raise ValueError(
                    f"solver: expected a dict with keys among {sorted(settings)}, got {solver!r}"
                )
            settings.update(solver)
        iterations, tolerance, learn, learn_points, likelihood = (
            settings[k] for k in ("iterations", "tolerance", "learn", "learn_points", "likelihood")
        )
        if likelihood not in ("auto", "joint", "conditional"):
            raise ValueError(
                "solver['likelihood']: expected 'auto', 'joint' or 'conditional', got "
                f"{likelihood!r}"
            )
        if learn_points is not None and not (
            isinstance(learn_points, (int, np.integer)) and learn_points >= 1
        ):
            raise ValueError(
                f"solver['learn_points']: expected a positive integer or None, got {learn_points!r}"
            )
        if not (isinstance(iterations, (int, np.integer)) and iterations >= 1):
            raise ValueError(f"solver['iterations']: expected an integer >= 1, got {iterations!r}")
        if not (isinstance(tolerance, (int, float)) and 0 < tolerance < math.inf):
            raise ValueError(f"solver['tolerance']: expected a positive number, got {tolerance!r}")
        if learn not in ("auto", "until", "first", "always", "never"):
            raise ValueError(
                "solver['learn']: expected 'auto', 'until', 'first', 'always' or 'never', "
                f"got {learn!r}"
            )
        if data.get("f") is None:
            raise ValueError(
                "X_f: a nonlinear equation needs collocation points X_f and the right-hand "
                "side y_f there (zeros for N[u] = 0)"
            )
        check_equation(self.operator, self.dtype)
        given = [s.name for s in data.sets if s.condition]
        if given:
            raise ValueError(
                f"observations: condition=True ({given}) is for linear operators; a "
                "nonlinear equation's fit chooses what it conditions on (solver['likelihood'])"
            )
        # Data of undeclared noise will be exact (below); the others keep theirs.
        noisy = [
            s.name
            for s in data.sets
            if not s.noise_decided_by_fit
            and (s.noise.trainable or bool(np.any(s.noise.numpy() > 0)))
        ]
        coefficients = [p for p in self.operator.parameters if p.trainable]
        if likelihood == "auto":
            likelihood = "conditional" if coefficients and noisy and learn != "never" else "joint"
        if likelihood == "conditional" and not noisy:
            raise ValueError(
                "solver['likelihood']: 'conditional' learns from data with noise given the "
                "equation and the exact data; every data set here is exact"
            )
        if likelihood == "conditional" and not coefficients:
            raise ValueError(
                "solver['likelihood']: 'conditional' learns the equation's coefficients "
                "given the rest; the equation has no trainable coefficient"
            )
        for s in data.sets:
            # The marginal likelihood of a linearised model can explain boundary data
            # as noise and settle on a trivial solution: data of undeclared noise are
            # exact (learned noise: pass a positive initial variance).
            if s.noise_decided_by_fit:
                pin_exact(s.noise)

        def flagged(sets, condition: bool) -> Data:
            """``sets`` with ``condition`` set, where asked, on the equation's set and on
            the exact ones (every set but the noisy)."""
            return Data(
                tuple(
                    dataclasses.replace(
                        s,
                        noise_decided_by_fit=False,
                        condition=condition and (s.name == "f" or s.name not in noisy),
                    )
                    for s in sets
                ),
                data.y_scale,
            )

        self.kernel.build(np.concatenate([s.X for s in data.sets]))
        losses = []

        def train(data_k, learn_now):
            self._train(
                data_k, steps if learn_now else 0, learning_rate, optimizer, False, callback
            )
            losses.extend(self.history)

        self.gauss_newton = []
        self.gauss_newton = solve(
            self,
            flagged(data.sets, False),
            train,
            int(iterations),
            float(tolerance),
            learn,
            verbose,
            None if learn_points is None else int(learn_points),
        )
        if likelihood == "conditional":
            # The joint likelihood counts the equation's zeros as evidence, whose
            # prior density pulls the coefficients; the data's likelihood given the
            # equation does not, but learning the kernel by it can collapse (the
            # solution given up as noise): the coefficients alone, from the joint
            # fit, the rest held there.
            held = [
                (name, p)
                for name, p in self.trainable_parameters()
                if not any(p is q for q in coefficients)
            ]
            joint = (self.data, self._objective, self._posterior)
            values = [p.unconstrained.numpy() for p in coefficients]
            start = features(self, data.get("f").X, self.operator)
            for _, p in held:
                p.trainable = False
            self.held = tuple(name for name, _ in held)
            # The second stage's criterion at the joint fit's solution, to compare.
            self.data = flagged(self.data.sets, True)
            before = self.log_marginal_likelihood()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                second = solve(
                    self,
                    flagged(data.sets, True),
                    train,
                    int(iterations),
                    float(tolerance),
                    learn,
                    verbose,
                    None,
                    start,
                )
            change, after = second[-1].change, self.log_marginal_likelihood()
            converged = math.isfinite(change) and change < tolerance
            if converged and not after < before - 1.0:
                self.gauss_newton += second
                for caught_warning in caught:
                    warnings.warn(caught_warning.message, caught_warning.category, stacklevel=3)
            else:
                # A coefficient can run off where the data say little (towards 0, the
                # iterations diverging): the joint fit stands.
                self.data, self._objective, self._posterior = joint
                for p, value in zip(coefficients, values):
                    p.unconstrained.assign(value)
                for _, p in held:
                    p.trainable = True
                self.held = ()
                found = (
                    f"ended {before - after:.3g} nats below its value at the joint fit"
                    if converged
                    else f"did not converge in {iterations} Gauss-Newton iterations (last "
                    f"relative change of u {change:.2e})"
                )
                warnings.warn(
                    "fit: learning the equation's coefficients by the data's likelihood "
                    f"given the equation {found}; kept the joint fit's values "
                    "(solver={'likelihood': 'joint'} stops there)",
                    RuntimeWarning,
                    stacklevel=3,
                )
        self.history = losses
        return self

    def _release_held(self) -> None:
        """Make the parameters an earlier conditional fit held trainable again."""
        if self.held:
            parameters = self.parameters_by_name()
            for name in self.held:
                if name in parameters:
                    parameters[name].trainable = True
            self.held = ()

    @property
    def nonlinear(self) -> bool:
        """Whether the model's equation is nonlinear (``pigp.operators.nonlinear``)."""
        return isinstance(self.operator, Nonlinear)

    def _trainable_coefficients(self) -> list:
        """``[(name, Parameter)]`` of the trainable PDE coefficients: the trainable
        parameters that are neither the kernel's nor a data set's noise."""
        noises = [s.noise for s in self.data.sets]
        return [
            (name, p)
            for name, p in self.trainable_parameters()
            if not name.startswith("kernel.") and not any(p is q for q in noises)
        ]

    def _restart_if_noisy(self, objective, Xs, y, start, optimise, adam, lbfgs) -> tuple:
        """``NOISE_RESTART``: where a learned noise explains more than that fraction of
        its data's mean square, fit once more from ``start`` with every learned noise
        started ``NOISE_RESTART_START`` times lower (above its lower bound);
        where that leaves the data noisy, once more with the coefficients started lower
        too (``COEFFICIENT_RESTART_START``). Keep the fit of lowest loss among those
        whose noises that set it off are lower than the first's. Returns the kept
        fit's histories."""
        if NOISE_RESTART is None:
            return adam, lbfgs
        learned = [s for s in self.data.sets if s.noise.trainable]

        def noise_fractions():
            fractions = {s.name: self._noise_fraction(s) for s in learned}
            return {name: f for name, f in fractions.items() if f is not None}

        before = noise_fractions()
        loud = [name for name, fraction in before.items() if fraction > NOISE_RESTART]
        if not loud:
            return adam, lbfgs
        y_numpy = y.numpy()
        penalty = float(objective.penalty().numpy())  # 0 without priors
        first_loss = float(objective.loss(Xs, y_numpy))
        first = [(v, v.numpy()) for v in objective.variables]
        coefficients = [p for _, p in self._trainable_coefficients()]

        def refit(scale_coefficients: bool) -> _Refit:
            """A fit from ``start``, the learned noises (and the coefficients) lower."""
            for v, value in start:
                v.assign(value)
            for noise in {id(s.noise): s.noise for s in learned}.values():  # shared: once
                lower = noise.lower
                noise.assign(lower + NOISE_RESTART_START * (noise.numpy() - lower))
            if scale_coefficients:
                for p in coefficients:
                    p.assign(p.lower + COEFFICIENT_RESTART_START * (p.numpy() - p.lower))
            histories = training.History(), training.History()
            try:
                optimise(*histories)
            except KeyboardInterrupt:
                # Back to the first fit, whose histories ``fit`` records on the way out.
                for v, value in first:
                    v.assign(value)
                raise
            loss = float(objective.loss(Xs, y_numpy))
            after = noise_fractions()
            return _Refit(
                loss,
                # The penalty of these values, which may differ from the first's.
                float(objective.penalty().numpy()) - loss,
                [(v, v.numpy()) for v in objective.variables],
                histories,
                # Kept-able where it fits better and calls less of those data noise: a
                # lower loss with louder noise is the collapse onto data of zeros fitted
                # exactly, whose likelihood grows without bound
                # (``_warn_if_noise_explains_data``).
                math.isfinite(loss)
                and loss < first_loss
                and all(after[name] < before[name] for name in loud),
                any(after[name] > NOISE_RESTART for name in loud),
            )

        fits = {"restart": refit(False)}
        restart = fits["restart"]
        if (
            COEFFICIENT_RESTART_START is not None
            and coefficients
            and (restart.loud or not restart.better)
        ):
            fits["coefficients"] = refit(True)
        better = {label: fit for label, fit in fits.items() if fit.better}
        kept = min(better, key=lambda label: better[label].loss) if better else "first"
        third = fits.get("coefficients")
        self.noise_restart = NoiseRestart(
            tuple(loud),
            penalty - first_loss,
            restart.evidence,
            kept,
            None if third is None else third.evidence,
        )
        if kept == "first":
            for v, value in first:
                v.assign(value)
            return adam, lbfgs
        for v, value in fits[kept].values:
            v.assign(value)
        return fits[kept].histories

    def _decide_exact(self, Xs, y, history: training.History) -> None:
        """Treat as exact each data set whose noise ``fit`` decides, where that costs at
        most ``EXACT_EVIDENCE`` nats of log marginal likelihood; record the figures in
        ``noise_choice``. The other parameters are refitted by L-BFGS-B only where the
        noise at 0 alone costs more (a refit can only raise the exact model's value)."""
        if EXACT_EVIDENCE is None:
            return
        candidates = [s for s in self.data.sets if s.noise_decided_by_fit and s.noise.trainable]
        if not candidates:
            return
        objective = self.objective()
        learned = self.log_marginal_likelihood()
        before = [(v, v.numpy()) for v in objective.variables]
        try:
            self._try_exact(objective, Xs, y, history, candidates, learned)
        except KeyboardInterrupt:
            # Interrupted inside a trial (a noise pinned at 0, a refit half done): back
            # to the fit's best parameters, which the interrupted fit promises to keep.
            for v, value in before:
                v.assign(value)
            raise

    def _try_exact(self, objective, Xs, y, history, candidates, learned) -> None:
        """``_decide_exact``'s trials, one data set after another."""
        exact_sets = []
        for s in candidates:
            saved = [(v, v.numpy()) for v in objective.variables]
            # Tried at 0 inside the same objective (the noise's variable held), so the
            # refit reuses its compiled programs.
            pin_exact(s.noise, fix=False)
            trial = training.History()
            exact = self.log_marginal_likelihood()
            if not (math.isfinite(exact) and exact >= learned - EXACT_EVIDENCE):
                held = [t.noise.unconstrained for t in (*exact_sets, s)]
                training.minimize_lbfgs(
                    objective, Xs, y, EXACT_REFIT, trial, fixed=held, stop=_refit_stop(learned)
                )
                exact = self.log_marginal_likelihood()
            keep = math.isfinite(exact) and exact >= learned - EXACT_EVIDENCE
            self.noise_choice[s.name] = NoiseChoice(learned, exact, "exact" if keep else "learned")
            if keep:
                exact_sets.append(s)
                history.losses.extend(trial.losses)
                history.evaluations.extend(trial.evaluations)
            else:
                for v, value in saved:
                    v.assign(value)
        for s in exact_sets:
            s.noise.trainable = False

    def _warn_at_bounds(self) -> None:
        """Warn about coefficients of operators that ended the fit at the lower bound of
        a positive parameter (the data may ask for a value beyond it)."""
        coefficients = {id(p) for s in self.data.sets for c, *_ in s.terms for p in c.parameters}
        stuck = [
            name
            for name, p in self.trainable_parameters()
            if id(p) in coefficients and p.at_bound()
        ]
        if stuck:
            warnings.warn(
                f"fit: {', '.join(stuck)} ended at the lower bound of a positive "
                "parameter: the data may ask for a value below it. A coefficient is "
                "signed unless made positive: pass pigp.Parameter(value) or "
                "Parameter(value, positive=False) to lift the bound",
                RuntimeWarning,
                stacklevel=3,
            )

    def _choose_kernel(self, data, arrays, arguments) -> PIGP:
        """``fit`` with each of ``AUTO_KERNELS`` from the same start; keep the one of
        higher log marginal likelihood."""
        for s in data.sets:  # the kernels must accept the data before anything trains
            for candidate in self._candidates:
                check_smoothness(candidate, s.terms, "observations")
        others = data_parameters(data.sets)  # every candidate starts from their values
        start = [(p.unconstrained.numpy(), p.trainable) for p in others]
        fitted = []
        candidates, self._candidates = self._candidates, ()
        try:
            for candidate in candidates:
                for p, (value, trainable) in zip(others, start):
                    p.unconstrained.assign(value)
                    p.trainable = trainable
                self.kernel, self._objective = candidate, None
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    self.fit(*arrays, **arguments)
                fitted.append(
                    (
                        self.log_marginal_likelihood(),
                        candidate,
                        [(p.unconstrained.numpy(), p.trainable) for p in others],
                        (self.history, self.lbfgs_evaluations, self.rejected_steps),
                        caught,
                        (self.noise_choice, self.noise_restart),
                    )
                )
        except BaseException:
            self._candidates = candidates
            raise
        names = list(AUTO_KERNELS)
        self.kernel_choice = {name: f[0] for name, f in zip(names, fitted)}
        best = max(range(len(fitted)), key=lambda i: fitted[i][0])
        lml, kernel, values, histories, caught, choices = fitted[best]
        self.noise_choice, self.noise_restart = choices
        for p, (value, trainable) in zip(others, values):
            p.unconstrained.assign(value)
            p.trainable = trainable
        self.kernel, self._objective, self._posterior = kernel, None, None
        self.history, self.lbfgs_evaluations, self.rejected_steps = histories
        for w in caught:  # the chosen fit's warnings only
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.posterior()
        return self

    def _adam(
        self, objective, Xs, y, steps, learning_rate, verbose, callback, history, stall, nats
    ):
        progress = progress_bar(steps, verbose)
        wrapped = None if callback is None else (lambda done, loss: callback(done, loss, self))
        try:
            training.minimize_adam(
                objective,
                Xs,
                y,
                steps,
                training.Adam(learning_rate),
                wrapped,
                progress,
                history,
                stall,
                nats,
                ADAM_PROBE_NATS,
            )
        finally:
            if progress is not None:
                progress.close()

    def _record(self, adam: training.History, lbfgs: training.History) -> None:
        """The histories of one fit: Adam's steps, then L-BFGS's iterations."""
        self.history = adam.losses + lbfgs.losses
        self.rejected_steps = list(adam.rejected)
        self.lbfgs_evaluations = list(lbfgs.evaluations)

    def _noise_fraction(self, s) -> float | None:
        """Data set ``s``'s noise variance as a fraction of its standardised mean
        square; None where the data are all zero."""
        scale = float(np.mean(np.square(s.y / self.y_scale)))
        return float(s.noise.numpy()) / scale if scale > 0 else None

    def _warn_if_noise_explains_data(self, fraction: float = 0.1):
        """Warn when a learned noise variance exceeds ``fraction`` of its data's mean square.

        Maximising the marginal likelihood can settle on "the data are noise" (a
        large noise variance, the field left at the prior mean) when the kernel
        cannot fit the data, e.g. a fast initial transient next to slow dynamics.
        """
        zeros = [
            s.name
            for s in self.data.sets
            if not s.condition and not np.any(s.y) and float(s.noise.numpy()) <= NOISE_FLOOR * 1e-2
        ]
        for s in self.data.sets:
            share = self._noise_fraction(s)
            if s.noise.trainable and share is not None and share > fraction:
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
                        f"{s.name!r} data at its known level (pigp.Parameter(variance, "
                        "trainable=False), standardised units)"
                    )
                warnings.warn(
                    f"fit: the learned noise variance of the {s.name!r} data is "
                    f"{share:.0%} of their mean square: the model may be {cause}",
                    RuntimeWarning,
                    stacklevel=3,
                )

    def log_marginal_likelihood(self) -> float:
        """``log p(y)`` of the standardised training data at the current parameters
        (without the priors' terms, if any)."""
        objective = self.objective()
        return -(objective.loss(*self._tensors_numpy()) - float(objective.penalty().numpy()))

    def _tensors_numpy(self):
        Xs, y = self.data.tensors(self.dtype)
        return Xs, y.numpy()

    def parameter_uncertainty(self) -> dict:
        """Laplace approximation: posterior standard deviations of the parameters.

        The Hessian ``H`` of the loss in the unconstrained variables at the current
        (fitted) values gives their covariance ``H^-1``; the delta method maps it to
        the constrained values (``std = |d value / d v| sqrt(diag H^-1)``). See
        ``pigp.uncertainty.laplace``.

        Returns:
            dict: ``{name: std}`` for every trainable parameter, floats or arrays;
            ``inf`` for a parameter the loss has no curvature in (e.g. a noise variance that
            collapsed towards 0 on noise-free data), or that the loss curves down
            along, or whose Hessian entries are not finite, which are then held fixed
            with a ``RuntimeWarning`` naming them (every std ``inf`` where none is
            left). A positive parameter at its lower bound with an infinite std gets a
            warning that says how to lift the bound.

        Raises:
            ValueError: before fit.
        """
        objective = self.objective()
        return laplace(
            objective,
            *self.data.tensors(self.dtype),
            self.trainable_parameters(),
            bounded=data_parameters(self.data.sets),
        )

    def parameter_intervals(self, level: float = 0.95) -> dict:
        """Laplace intervals of the parameters: central ``level`` intervals of the
        Gaussian in the unconstrained variables (covariance ``H^-1``, as
        ``parameter_uncertainty``), each end mapped through the parameter's
        transform. A positive parameter's interval (a diffusivity, a lengthscale)
        stays above its lower bound, where ``value +- 1.96 std`` can reach below 0
        once the std is a sizeable part of the value. See ``pigp.uncertainty.
        laplace_intervals``; ``sample`` gives the intervals of the posterior itself.

        Args:
            level: the probability each interval holds, in (0, 1).

        Returns:
            dict: ``{name: (low, high)}`` for every trainable parameter, floats or
            arrays; ``(lower, inf)`` (a positive parameter) or ``(-inf, inf)`` for an
            entry ``parameter_uncertainty`` reports as ``inf``, with the same warnings.

        Raises:
            ValueError: before fit, or for a ``level`` outside (0, 1).
        """
        if not (isinstance(level, (int, float, np.floating)) and 0.0 < float(level) < 1.0):
            raise ValueError(f"level: expected a probability in (0, 1), got {level!r}")
        objective = self.objective()
        return laplace_intervals(
            objective,
            *self.data.tensors(self.dtype),
            self.trainable_parameters(),
            float(level),
            bounded=data_parameters(self.data.sets),
        )

    # ----- the posterior and prediction ------------------------------------------------
    def posterior(self) -> Posterior:
        """The posterior snapshot (``chol``, ``alpha = K^-1 y``) at the current
        parameter values: the last one if no parameter changed since, else a new one."""
        self._require_data()
        values = self._values()
        if self._posterior is None or not self._posterior.is_current(values):
            Xs, y = self._tensors_numpy()
            K = self.objective().gram(Xs)
            self._posterior = Posterior.compute(K, y, values, self.data.sizes, self.data.names)
        return self._posterior

    def _values(self) -> tuple:
        """Every parameter's unconstrained value, and the jitter: what K depends on."""
        return tuple(p.unconstrained.numpy() for p in self.parameters_by_name().values()) + (
            np.float64(self.jitter),
        )

    def _cross(self, terms):
        """``(program, unconstrained)``: the compiled ``(Xc, Xs, unconstrained) -> (K_*y,
        k_**)`` of an output of operator ``terms`` against the data sets, shared by
        structure, and the variables it reads (the covariance parameters', then any of
        ``terms``'s own)."""
        objective = self.objective()
        structure = objective.structure
        extra = structure.extra(terms)
        key = (structure.key, "cross", structure.terms(terms, extra))

        def build():
            parameters = [*structure.parameters, *extra]

            def cross(Xc, Xs, unconstrained):
                with substituted(parameters, unconstrained=unconstrained):
                    Ks = [
                        block(structure.kernel, Xc, X, terms, s.terms)
                        for X, s in zip(Xs, structure.sets)
                    ]
                    return tf.concat(Ks, axis=1), block_diag(structure.kernel, Xc, terms, terms)

            return tf.function(cross, jit_compile=True, autograph=False)

        unconstrained = tuple(p.unconstrained for p in (*structure.parameters, *extra))
        return program(key, build), unconstrained

    def predict(self, X, output="u", full_cov: bool = False, samples=None, max_draws: int = 200):
        """Posterior mean and variance of u (or ``L u``) at points X.

        Args:
            X: array of shape (n, d).
            output: ``"u"``, ``"f"`` (the model's operator applied to u), the name of
                an observation set, or any ``pigp.operators.Operator``.
            full_cov: return the full (n, n) posterior covariance instead of the variance.
            samples: a ``pigp.Samples`` from ``sample``: predict with the mixture over
                its draws instead of the current parameters. The mean is the average
                of the draws' means; the variance is the average of their variances
                plus the variance of their means (the law of total variance; with
                ``full_cov``, the same for covariances).
            max_draws: with ``samples``, use at most this many draws, evenly thinned
                over all chains.

        Returns:
            ``(mean, var)``: arrays of shape (n,) and (n,) (or (n, n) with
            ``full_cov``), in data units. ``var = k_** - diag(K_*y K^-1 K_y*)``,
            with round-off negatives clipped to 0. Computed from the posterior at
            the current parameter values (recomputed if any changed).
        """
        self._require_data()
        input_dim = self.data.input_dim
        X = check.as_inputs("X", X, input_dim)
        if self.nonlinear and isinstance(output, str) and output == "f":
            if full_cov or samples is not None:
                raise ValueError(
                    "output: 'f' of a nonlinear equation is predicted with its variance "
                    "only (full_cov=False, samples=None)"
                )
            return self._predict_equation(X)
        terms = self._output_terms(output, input_dim)
        if samples is not None:
            return self._predict_mixture(X, output, full_cov, samples, max_draws)
        posterior = self.posterior()
        Xs, _ = self.data.tensors(self.dtype)
        compiled, values = self._cross(terms)

        def cross(Xc):
            Ks, prior = compiled(tf.constant(Xc, self.dtype), Xs, values)
            return Ks.numpy().astype(np.float64), prior.numpy().astype(np.float64)

        mean, var, V, collapsed = posterior.predict(cross, X, keep_V=full_cov, chunk=CHUNK)
        if collapsed:
            warnings.warn(
                f"predict: the posterior variance of {output!r} collapsed (below "
                f"1e-12 of the data's scale) at {collapsed} of {len(X)} points that are "
                "uncorrelated with every data point, where it should be the prior's: "
                "the kernel variance has collapsed (model.parameter_values())",
                RuntimeWarning,
                stacklevel=2,
            )
        mean = mean * self.y_scale
        if full_cov:
            Xt = tf.constant(X, self.dtype)
            prior = block(self.kernel, Xt, Xt, terms, terms).numpy().astype(np.float64)
            cov = self._squared_units(prior - V.T @ V)
            return mean, representable(0.5 * (cov + cov.T), "covariance")
        return mean, representable(self._squared_units(np.maximum(var, 0.0)), "variance")

    def _mean(self, X, output="u") -> np.ndarray:
        """The posterior mean of ``output`` at ``X`` (data units), without the variance's
        triangular solves."""
        X = np.asarray(X, dtype=np.float64)
        terms = self._output_terms(output, self.data.input_dim)
        posterior = self.posterior()
        Xs, _ = self.data.tensors(self.dtype)
        compiled, values = self._cross(terms)
        means = []
        for start in range(0, len(X), CHUNK):
            part = X[start : start + CHUNK]
            padded = np.concatenate([part, np.repeat(part[-1:], CHUNK - len(part), axis=0)])
            Ks, _ = compiled(tf.constant(padded, self.dtype), Xs, values)
            means.append(Ks.numpy().astype(np.float64)[: len(part)] @ posterior.alpha)
        return np.concatenate(means) * self.y_scale

    def _predict_equation(self, X):
        """``N[u] = F(L_1 u, ..., L_m u)`` at ``X``: ``F`` at the features' posterior
        means, and the variance of the equation linearised there,
        ``sum_ab c_a c_b cov(L_a u, L_b u)`` (``c_a = dF/dv_a``)."""
        from .nonlinear import Linearisation

        equation = self.operator
        names = list(equation.features)
        moments = [self.predict(X, output=equation.feature(a)) for a in names]
        means = np.stack([m for m, _ in moments])
        linearisation = Linearisation(equation, means)
        partials = np.stack([c.numpy() for c in linearisation.jacobian()])
        value = equation.evaluate(dict(zip(names, means))).numpy()
        var = np.zeros(len(X))
        for a in range(len(names)):
            var += partials[a] ** 2 * moments[a][1]
            for b in range(a + 1, len(names)):
                both = equation.feature(names[a]) + equation.feature(names[b])
                joint = self.predict(X, output=both)[1]
                covariance = 0.5 * (joint - moments[a][1] - moments[b][1])
                var += 2.0 * partials[a] * partials[b] * covariance
        return value, np.maximum(var, 0.0)

    def _predict_mixture(self, X, output, full_cov, samples, max_draws):
        from .sampling import Samples

        if not isinstance(samples, Samples):
            raise ValueError(
                f"samples: expected a pigp.Samples from model.sample(), got {samples!r}"
            )
        if not (isinstance(max_draws, (int, np.integer)) and max_draws >= 1):
            raise ValueError(f"max_draws: expected a positive integer, got {max_draws!r}")
        unknown_floors = [n for n in samples.noise_floors if self.data.get(n) is None]
        if unknown_floors:
            raise ValueError(
                f"samples: drawn with noise floors for the data sets {unknown_floors}, which "
                f"this model does not have ({self.data.names})"
            )
        with self._floored(samples.noise_floors):
            parameters = dict(self.trainable_parameters())
            unknown = [name for name in samples.names if name not in parameters]
            if unknown:
                raise ValueError(
                    f"samples: {unknown} are not trainable parameters of this model "
                    f"({sorted(parameters)})"
                )
            saved = {name: parameters[name].unconstrained.numpy() for name in samples.names}
            means, spreads = [], []
            try:
                for draw in samples.draws(max_draws):
                    for name, value in draw.items():
                        parameters[name].assign(value)
                    mean, spread = self.predict(X, output, full_cov)
                    means.append(mean)
                    spreads.append(spread)
            finally:
                for name, value in saved.items():
                    parameters[name].unconstrained.assign(value)
        means = np.stack(means)
        mean = means.mean(axis=0)
        centred = means - mean
        if full_cov:
            between = centred.T @ centred / len(means)
            return mean, np.mean(spreads, axis=0) + between
        return mean, np.mean(spreads, axis=0) + np.mean(centred**2, axis=0)

    def sample(
        self,
        num_results: int = 1000,
        num_burnin: int = 500,
        num_chains: int = 4,
        seed: int = 0,
        max_tree_depth: int = 8,
        target_accept: float = 0.8,
        noise_floor: float | None = NOISE_FLOOR,
    ):
        """Draw the trainable parameters from their posterior with NUTS (TensorFlow
        Probability's No-U-Turn sampler, step size by dual averaging), moving
        ``log(value - lower)`` of positive parameters and the value of the others,
        chains in one compiled program.

        Fit first: the chains start near the fitted values, and the sampler is
        whitened with the Laplace covariance there, then with the covariance of
        the first fifth of the burn-in. The chains run in pairs, the pairs at
        the same time in threads (one per CPU core, each on a copy of the
        model); the draws depend on ``seed`` only. A parameter without a prior
        gets ``pigp.sampling.default_prior`` (for a coefficient of the PDE a
        normal centred on its fitted value with standard deviation ``max(|value|,
        1)``, cut at a positive one's bound; for a kernel's or a noise's a weak
        log-normal centred on its fitted value; a warning names them): give priors
        to the parameters the data say little about. The parameters are left at their fitted values.

        Args:
            num_results: draws per chain.
            num_burnin: steps per chain before the draws (the step size adapts
                during the first 80% of them).
            num_chains: independent chains (R-hat needs at least 2).
            seed: the seed of the starting points and of the sampler.
            max_tree_depth: NUTS's largest tree: at most ``2**max_tree_depth - 1``
                leapfrog steps per draw.
            target_accept: the acceptance probability dual averaging aims at;
                higher takes smaller steps. ``sample`` warns when transitions
                diverge (the draws may then be biased) and suggests 0.95.
            noise_floor: a floor under the noise variances (standardised units) of
                the data sets whose noise ``fit`` decided (not given): a set found
                exact, or whose learned variance is below the floor, has its noise
                variance drawn too, as a parameter above the floor (from 10 times
                it), with a warning naming the sets. Exact data make the posterior
                of the other parameters so sharp that NUTS crawls (steps of ~1e-3),
                and no model of a field is exact between its data; the floor says
                the model is good to about its square root times the data's scale.
                None samples the model as fitted. Noises given as 0 or as
                ``Parameter`` objects are kept as they are.

        Returns:
            Samples: ``samples[name]`` of shape ``(num_chains, num_results,
            *shape)`` for every trainable parameter, with ``rhat``, ``ess`` and
            ``summary()``; pass it to ``predict(X, samples=samples)``.

        Raises:
            ValueError: before fit, with no trainable parameter, or for bad
                arguments (before anything runs).
        """
        self._require_data()
        for name, value, least in (
            ("num_results", num_results, 1),
            ("num_burnin", num_burnin, 0),
            ("num_chains", num_chains, 1),
            ("max_tree_depth", max_tree_depth, 1),
        ):
            if not (isinstance(value, (int, np.integer)) and value >= least):
                raise ValueError(f"{name}: expected an integer >= {least}, got {value!r}")
        if not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed: expected an integer, got {seed!r}")
        if not (isinstance(target_accept, float) and 0.0 < target_accept < 1.0):
            raise ValueError(f"target_accept: expected a number in (0, 1), got {target_accept!r}")
        if noise_floor is not None and not (
            isinstance(noise_floor, (int, float))
            and not isinstance(noise_floor, bool)
            and 0 < noise_floor < math.inf
        ):
            raise ValueError(
                f"noise_floor: expected a positive number or None, got {noise_floor!r}"
            )
        floors = self._noise_floors_needed(noise_floor)
        if not self.trainable_parameters() and not floors:
            raise ValueError("sample: the model has no trainable parameter")
        if floors:
            warnings.warn(
                f"sample: the noise variances of {sorted(floors)} are drawn above a floor of "
                f"{noise_floor:g} (standardised units; fit found them exact or below it): "
                "pass noise_floor=None to sample the model as fitted, or another floor",
                RuntimeWarning,
                stacklevel=2,
            )
        exact = [
            s.name
            for s in self.data.sets
            if s.name not in floors and np.all(s.noise.numpy() == 0.0)
        ]
        if exact:
            warnings.warn(
                f"sample: the data of {exact} are exact (noise variance 0): the posterior "
                "of the other parameters is then very sharp and NUTS slow to explore it "
                "(tiny steps). For a band over the hyper-parameters give those sets a noise "
                "floor, e.g. noise_u=pigp.Parameter(1e-3, lower=1e-4), and fit again",
                RuntimeWarning,
                stacklevel=2,
            )
        with self._floored(floors):
            samples = self._nuts(
                num_results, num_burnin, num_chains, seed, max_tree_depth, target_accept
            )
        samples.noise_floors = dict(floors)
        return samples

    def _noise_floors_needed(self, floor) -> dict:
        """``{name: floor}`` of the data sets whose noise ``sample`` draws above ``floor``:
        those whose noise ``fit`` decided and that sit below it."""
        if floor is None:
            return {}
        return {
            s.name: float(floor)
            for s in self.data.sets
            if s.noise_decided_by_fit and float(np.max(s.noise.numpy())) < floor
        }

    @contextlib.contextmanager
    def _floored(self, floors: dict):
        """Within the block, the data sets of ``floors`` have a noise variance of their
        own, trainable above the floor (from 10 times it); the model's own sets, its
        objective and its posterior come back after."""
        if not floors:
            yield
            return
        saved = self.data, self._objective, self._posterior
        sets = tuple(
            dataclasses.replace(
                s,
                noise=Parameter(10 * floors[s.name], lower=floors[s.name], name=s.noise.name),
                noise_decided_by_fit=False,
            )
            if s.name in floors
            else s
            for s in self.data.sets
        )
        self.data, self._objective, self._posterior = Data(sets, self.data.y_scale), None, None
        try:
            yield
        finally:
            self.data, self._objective, self._posterior = saved

    def _nuts(self, num_results, num_burnin, num_chains, seed, max_tree_depth, target_accept):
        from . import sampling
        from .uncertainty import hessian

        parameters = self.trainable_parameters()
        coefficients = {name for name, _ in self._trainable_coefficients()}
        priors = {
            name: p.prior
            if p.prior is not None
            else sampling.default_prior(p, coefficient=name in coefficients)
            for name, p in parameters
        }
        defaulted = [name for name, p in parameters if p.prior is None]
        if defaulted:
            warnings.warn(
                f"sample: no prior for {defaulted}; using a normal centred on each fitted "
                "coefficient with standard deviation max(|value|, 1) (cut at a positive "
                "one's bound) and a log-normal of scale 2 (log space) centred on each "
                "other fitted value (a normal for signed ones): "
                "pass Parameter(..., prior=...) to choose",
                RuntimeWarning,
                stacklevel=3,
            )
        Xs, y = self.data.tensors(self.dtype)
        try:
            H = hessian(self._likelihood(), Xs, y)
            H = H if np.all(np.isfinite(H)) else None
        except tf.errors.InvalidArgumentError:
            H = None
        # The chains run in groups, the groups in threads, each thread on its own
        # copy of the model (its own variables).
        groups = -(-int(num_chains) // sampling.CHAINS_PER_GROUP)
        models = [self] + self._copies(min(groups, os.cpu_count() or 1) - 1)
        return sampling.nuts(
            [(m._likelihood(), m.trainable_parameters()) for m in models],
            Xs,
            y,
            priors,
            int(num_results),
            int(num_burnin),
            int(num_chains),
            int(seed),
            hessian=H,
            max_tree_depth=int(max_tree_depth),
            target_accept=float(target_accept),
        )

    def _likelihood(self) -> Objective:
        """The objective without the priors' penalty."""
        objective = self.objective()
        if not objective.priors:
            return objective
        return Objective(self.kernel, self.data.sets, objective.variables, self.jitter, self.dtype)

    def _copies(self, count: int) -> list:
        """``count`` independent copies (own parameters, same values and data), or
        none where the model cannot be written and read back (a kernel function
        that cannot be imported by its path)."""
        if count <= 0:
            return []
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.npz")
            try:
                self.save(path)
                return [io.load(path) for _ in range(count)]
            except ValueError:
                return []

    # ----- saving ------------------------------------------------------------------------
    def state_arrays(self) -> dict:
        """What ``save`` writes besides the parameters, data and history."""
        return {
            "lbfgs_evaluations": np.asarray(self.lbfgs_evaluations, dtype=np.float64),
            "rejected_steps": np.asarray(self.rejected_steps, dtype=np.int64),
            "held": np.asarray(self.held, dtype=str),
        }

    def restore_state(self, arrays) -> None:
        """The inverse of ``state_arrays``."""
        self.lbfgs_evaluations = arrays["lbfgs_evaluations"].tolist()
        self.rejected_steps = arrays["rejected_steps"].tolist()
        self.held = tuple(str(n) for n in arrays["held"]) if "held" in arrays else ()
