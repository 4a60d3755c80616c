"""The physics-informed GP: a GP prior on u, conditioned on data of u and of L u.

``PIGP`` holds the prior and the posterior: the data sets (``pigp.data``), the joint
covariance (``pigp.kernels.covariance``), the objective (``objective``), the posterior
snapshot (``posterior``) and prediction. Fitting is done outside it, by
``pigp.fitting`` (a ``FitPlan`` in, a ``FitReport`` out, which the model adopts);
Laplace and NUTS are ``pigp.engines.model.Model``'s, shared with ``pigp.SparsePIGP``.
Notation: docs/notation.md.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ... import _validation as check
from ... import memory
from ..._tensorflow import tf
from ..._threads import limit_blas
from ..._warnings import warn
from ...fitting import (
    AUTO_KERNELS,
    FitPlan,
    NoiseChoice,
    NoiseRestart,
    Solver,
    auto_kernels,
    choose_kernel,
    fit_deciding_noise,
    fit_linear,
)
from ...fitting import default_plan as current_default
from ...inference import coefficients as coefficients_module
from ...inference import sampler
from ...kernels.covariance import block, block_diag
from ...operators.linear import Nonlinear
from ...operators.linearisation import Linearisation
from ...parameters import substituted
from ...structure import program
from ..cholesky import choice
from ..cholesky import regression as sparse
from ..cholesky.nonlinear import NoisyData, engine_of, fit_nonlinear
from ..model import Model, representable
from .objective import Objective
from .posterior import CHUNK, Posterior

__all__ = ["PIGP", "NoiseChoice", "NoiseRestart", "AUTO_KERNELS"]

# The settings before ``FitPlan``, by their old names: read at each fit, for one release
# (a value assigned here that differs from the plan's default is used, with a
# DeprecationWarning). Set them through ``fit(..., plan=FitPlan(...))`` instead.
_DEFAULT = FitPlan()
EXACT_EVIDENCE = _DEFAULT.exact_evidence
EXACT_REFIT = _DEFAULT.exact_refit
EXACT_REFIT_RATE = _DEFAULT.exact_refit_rate
EXACT_REFIT_WINDOW = _DEFAULT.exact_refit_window
NOISE_RESTART = _DEFAULT.noise_restart
NOISE_RESTART_START = _DEFAULT.noise_restart_start
COEFFICIENT_RESTART_START = _DEFAULT.coefficient_restart_start
NOISE_FLOOR = _DEFAULT.noise_floor
ADAM_STALL = _DEFAULT.adam_stall
ADAM_STALL_NATS = _DEFAULT.adam_stall_nats
ADAM_PROBE_NATS = _DEFAULT.adam_probe_nats
TRAINING = {"steps": 2000, "learning_rate": 0.02, "optimizer": "adam+lbfgs"}
NONLINEAR_TRAINING = {"steps": 50, "learning_rate": 0.02, "optimizer": "lbfgs"}
NONLINEAR_SOLVER = {
    "iterations": 30,
    "tolerance": 1e-5,
    "learn": "auto",
    "learn_points": 1200,
    "likelihood": "auto",
}
_LEGACY = {
    "EXACT_EVIDENCE": "exact_evidence",
    "EXACT_REFIT": "exact_refit",
    "EXACT_REFIT_RATE": "exact_refit_rate",
    "EXACT_REFIT_WINDOW": "exact_refit_window",
    "NOISE_RESTART": "noise_restart",
    "NOISE_RESTART_START": "noise_restart_start",
    "COEFFICIENT_RESTART_START": "coefficient_restart_start",
    "NOISE_FLOOR": "noise_floor",
    "ADAM_STALL": "adam_stall",
    "ADAM_STALL_NATS": "adam_stall_nats",
    "ADAM_PROBE_NATS": "adam_probe_nats",
}


def default_plan() -> FitPlan:
    """The plan of a fit given none (``pigp.fitting.default_plan``), with any of this
    module's old setting names that was assigned a value other than its default (a
    ``DeprecationWarning`` names them)."""
    module = globals()
    changes = {
        field: module[name]
        for name, field in _LEGACY.items()
        if module[name] != getattr(_DEFAULT, field)
    }
    for name, field, default in (
        ("TRAINING", "training", _DEFAULT.training),
        ("NONLINEAR_TRAINING", "nonlinear_training", _DEFAULT.nonlinear_training),
    ):
        value = type(default)(**module[name])
        if value != default:
            changes[field] = value
    solver = Solver(**module["NONLINEAR_SOLVER"])
    if solver != _DEFAULT.solver:
        changes["solver"] = solver
    plan = current_default()
    if not changes:
        return plan
    warn(
        f"pigp.engines.dense.model: {sorted(changes)} set through the module's constants; pass "
        "fit(..., plan=pigp.fitting.FitPlan(...)) instead, or pigp.fitting.defaults(plan) "
        "around code that fits (the constants go in the next release)",
        DeprecationWarning,
    )
    return plan.replace(**changes)


class PIGP(Model):
    """Physics-informed GP regression for a linear operator ``f = L u``.

    Args:
        kernel: the prior covariance of u, a ``pigp.kernels.Kernel``, or ``"auto"``:
            the first ``fit`` fits a ``SquaredExponential`` and a one-component
            ``SpectralMixture`` from the same start, and for an evolution equation (a
            column named ``"t"``) the kernel the docs recommend for it,
            ``Decaying(SquaredExponential())`` along t, and keeps the one of highest log
            marginal likelihood (``model.kernel_choice`` has every evidence) among
            those whose fit did not call a data set noise (with a warning where the
            highest evidence was passed over for that); it costs every fit
            (``pigp.fitting.auto_kernels``). A higher marginal likelihood is
            evidence for a model of the data, not a promise of a smaller error:
            the more flexible kernel can fit the data points better and still be
            worse between them. Check the choice against held-out data where
            accuracy matters.
        operator: the operator L, e.g. ``pigp.operators.heat(diffusivity=1.0)``.
        noise_u: the noise variance of the u data, in standardised units. None
            (default): learned from 1e-3 (once more from 1e-4 where it ends above
            ``FitPlan.noise_restart`` of the data's mean square, the better fit kept:
            ``model.noise_restart``), and after training the data are
            treated as exact (variance 0) where the log marginal likelihood loses
            at most ``FitPlan.exact_evidence`` nats by it (``model.noise_choice`` has the
            figures); ``0``: exact data, not learned; a positive number: the
            initial value, learned (restarted from a tenth of it where it ends above
            ``FitPlan.noise_restart``, as the default is); a ``pigp.Parameter``
            (``trainable=False`` fixes it; a trainable one is restarted likewise).
        noise_f: the same for the f data.
        dims: column names of X (e.g. ``("x", "t")``) when the operator does not
            declare them.
        dtype: ``"float64"`` (default) or ``"float32"`` (for accelerators).
        jitter: relative diagonal jitter per block (default 1e-12 in float64,
            1e-6 in float32).
        standardize: divide all targets by ``y_scale``, the root mean square of
            the u data (of the first data set when there is none); L is linear,
            so u and f scale alike. A nonlinear equation's right-hand side is passed
            over (the scale is the first other set's, 1 where all the others are 0):
            each Gauss-Newton step's linearised equation is linear in u. The kernel
            variance and the noise variances (given or learned) are then those of
            the standardised data; predictions and ``covariance`` are in data
            units.
        engine: how the posterior is computed: ``"dense"`` (one Cholesky factor of the
            joint covariance of all data), ``"cholesky"`` (a sparse inverse-Cholesky
            factor, ``pigp.engines.cholesky``, for a linear operator or one nonlinear
            equation of one field in float64 beyond what dense fits: the parameters
            are learned by the dense fit on a maximin subset of the values, or for a
            linear operator by the Vecchia log-likelihood of all of them; a nonlinear
            equation is then solved by Gauss-Newton at every point; variances are
            upper bounds, conditioned on part of the data) or ``"auto"`` (the
            default: dense, except for a nonlinear equation whose dense fit would not
            fit in the memory available, ``pigp.memory.fit_bytes``, which runs the
            sparse engine, with a warning, where it takes the model; a linear model
            that does not fit is refused with a pointer to ``pigp.SparsePIGP``).
            The linear sparse engine's conjugate gradients converge slowly where the
            data's covariance is near singular (exact data at close points, long
            lengthscales) and for smooth kernels (Matérn 7/2 with noise 1e-4 at
            2,000 values: not converged in 1,000 iterations, 10% from the dense mean),
            and warn where they stop short. ``report.engine`` says which ran.
        engine_options: the sparse engine's settings, ``{"rho": 5.0, "supernode":
            1.3, "rtol": 1e-10, "maxiter": 1000}`` by default
            (``pigp.engines.cholesky.regression.Settings``).

    After ``fit``: ``history`` (the loss at every optimiser iteration: Adam steps,
    then L-BFGS iterations), ``noise_choice`` (for each data set whose noise
    ``fit`` decided: the log marginal likelihood with the noise learned and with
    the data exact, and which was kept), ``noise_restart`` (a ``NoiseRestart`` where a
    learned noise set off a second start, ``FitPlan.noise_restart``; else None),
    ``lbfgs_evaluations`` (every loss L-BFGS evaluated, its line searches included),
    ``rejected_steps`` (indices into ``history`` of Adam steps whose loss or gradient
    was not finite and were skipped) and ``data`` (the validated data sets, a ``pigp.data.Data``):
    the fields of ``report``, the ``pigp.fitting.FitReport`` the fit returned, which
    ``save`` writes whole.
    """

    def __init__(
        self,
        kernel,
        operator,
        noise_u=None,
        noise_f=None,
        dims=None,
        dtype="float64",
        jitter: float | None = None,
        standardize: bool = True,
        name: str | None = None,
        engine: str = "auto",
        engine_options: dict | None = None,
    ):
        engine, options = sparse.engine_argument(engine, engine_options)
        super().__init__(kernel, operator, noise_u, noise_f, dims, dtype, jitter, standardize, name)
        self.engine, self.engine_options = engine, options
        self._regression = None

    def get_config(self) -> dict:
        options = self.engine_options
        defaults = sparse.Settings()
        changed = {
            key: value
            for key, value in dataclasses.asdict(options).items()
            if value != getattr(defaults, key)
        }
        extra = {"engine": self.engine} if self.engine != "auto" else {}
        return {**super().get_config(), **extra, **({"engine_options": changed} if changed else {})}

    @property
    def sparse(self) -> bool:
        """Whether the last fit ran the sparse engine (``engine``)."""
        return self.report.engine.get("name") == "cholesky"

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
        if self.nonlinear and self._candidates:
            raise ValueError(
                "kernel: 'auto' is not available for nonlinear equations; pass a kernel, "
                "e.g. pigp.kernels.SquaredExponential()"
            )
        if self._candidates:
            # The candidates depend on the columns: an evolution equation adds Decaying.
            made = auto_kernels(self.operator.dims or self.dims)
            self._candidate_names = tuple(made)
            self._candidates = tuple(make() for make in made.values())
            self.kernel = self._candidates[0]

    def _forget(self) -> None:
        self._objective = None  # rebuilt when the variables or the data sets change
        self._posterior = None  # the last snapshot; used only while current
        self._regression = None  # the sparse engine's, made again from the data

    def objective(self, priors: bool = True) -> Objective:
        """The negative log marginal likelihood of the fitted data's structure, over
        the trainable parameters' unconstrained variables (``objective.variables``),
        with the priors' terms where ``priors`` (and any parameter has one).
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
        if priors or not self._objective.priors:
            return self._objective
        return Objective(self.kernel, self.data.sets, variables, self.jitter, self.dtype)

    # ----- training -------------------------------------------------------------------
    @limit_blas
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
        verbose: bool | None = None,
        callback=None,
        solver: dict | None = None,
        plan: FitPlan | None = None,
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
                (default 2000, ``plan.training``).
            learning_rate: Adam's step size on the unconstrained variables (0.02).
            optimizer: ``"adam"`` (``steps`` Adam steps), ``"lbfgs"`` (SciPy's
                L-BFGS-B, at most ``steps`` iterations) or ``"adam+lbfgs"`` (up to ``steps``
                Adam steps, fewer where Adam stalls: ``plan.adam_stall``,
                ``plan.adam_stall_nats``, ``plan.adam_probe_nats``; then L-BFGS-B to
                polish, at most 1000 iterations; the default). With
                ``steps=0`` nothing is trained: the data are set and the posterior
                computed at the current parameters. After training, each data set
                whose noise was not given is tried exact (its noise fixed at 0, the
                rest refitted by L-BFGS-B) and kept so unless the log marginal
                likelihood drops by more than ``plan.exact_evidence`` (``noise_choice``).
            verbose: show a progress bar with the current loss: True always, False
                never, None (default) on a terminal once a run has lasted 10 s;
                ``True`` also prints each Gauss-Newton iteration.
            callback: ``callback(step, loss, model)`` after every 250 Adam steps
                and after the last; returning ``True`` stops Adam early.
            solver: for a nonlinear equation (``pigp.operators.nonlinear``), the
                Gauss-Newton settings (``plan.solver`` has the defaults, ``pigp.fitting.Solver``):
                ``iterations`` (most iterations), ``tolerance`` (on the relative
                change of u at the collocation points), ``learn`` (when the
                parameters are learned: ``"auto"``, ``"until"``, ``"first"``,
                ``"always"``, ``"never"``; ``pigp.fitting.gauss_newton.solve``) and
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
                (defaults there: ``plan.nonlinear_training``). ``model.gauss_newton``
                has the iterations (``pigp.fitting.Step``).
            plan: a ``pigp.fitting.FitPlan``: the settings of every stage of the fit
                (default ``FitPlan()``, the measured defaults); ``steps``,
                ``learning_rate``, ``optimizer`` and ``solver`` override its entries.

        Returns:
            self. The parameters left are those of the lowest loss seen; ``report``
            (and ``history``, ``noise_choice``, ...) say what the fit found.
        """
        if plan is None:
            plan = default_plan()
        if not isinstance(plan, FitPlan):
            raise ValueError(f"plan: expected a pigp.fitting.FitPlan, got {plan!r}")
        run = plan.training_for(
            self.nonlinear, steps, learning_rate, optimizer, len(self.fields or ()) or 1
        )
        if solver is not None and not self.nonlinear:
            raise ValueError(
                f"solver: Gauss-Newton settings are for nonlinear equations; this model's "
                f"operator is linear, got {solver!r}"
            )
        gauss_newton = Solver.updated(plan.solver, solver)
        data = self.prepare_data(X_u, y_u, X_f, y_f, observations)
        if choice.chooses_sparse(self, data):
            self._release_held()
            if not self.nonlinear:
                given = (steps, learning_rate, optimizer)
                sparse.fit_sparse(self, data, plan, run, verbose, callback, given)
                return self
            try:
                fit_nonlinear(self, data, plan, run, gauss_newton, verbose, callback)
                return self
            except NoisyData as noisy:
                warn(f"{noisy}; engine='auto': the dense engine runs")
        memory.check_fit(sum(data.sizes), len(self.fields or ()) or 1, self.nonlinear, self.dtype)
        self._release_held()
        if self.nonlinear:
            fit_deciding_noise(self, data, plan, run, gauss_newton, verbose, callback)
        elif self._candidates:
            candidates = dict(zip(self._candidate_names, self._candidates))
            choose_kernel(self, data, candidates, plan, run, verbose, callback)
            self._candidates = ()
        else:
            # The kernel checks its shapes against the inputs before creating anything.
            self.kernel.build(np.concatenate([s.X for s in data.sets]))
            fit_linear(self, data, plan, run, verbose, callback)
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

    @limit_blas
    def log_marginal_likelihood(self) -> float:
        """``log p(y)`` of the standardised training data at the current parameters
        (without the priors' terms, if any); after a sparse fit, its Vecchia
        approximation."""
        if self.sparse:
            return engine_of(self).log_likelihood()
        objective = self.objective()
        Xs, y = self.data.tensors(self.dtype)
        return -(objective.loss(Xs, y.numpy()) - float(objective.penalty().numpy()))

    # ----- the posterior and prediction ------------------------------------------------
    def posterior(self) -> Posterior:
        """The posterior snapshot (``chol``, ``alpha = K^-1 y``) at the current
        parameter values: the last one if no parameter changed since, else a new one
        (the dense engine's; a sparse fit has none)."""
        self._require_data()
        if self.sparse:
            raise ValueError(
                "posterior: a sparse fit (engine='cholesky') keeps no dense factor; "
                "predict() gives its means and variances"
            )
        values = self._values()
        if self._posterior is None or not self._posterior.is_current(values):
            Xs, y = self.data.tensors(self.dtype)
            y = y.numpy()
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

    @limit_blas
    def predict(
        self,
        X,
        output="u",
        full_cov: bool = False,
        samples=None,
        max_draws: int = 200,
        coefficients: bool | None = None,
    ):
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
            coefficients: add what the uncertainty of the equation's learned
                coefficients adds to the variance, ``J Sigma J'`` (``J`` the change of the
                mean per unit of each coefficient by one Gauss-Newton step from the fitted
                solution, ``Sigma`` their Laplace covariance:
                ``pigp.inference.coefficients``); one posterior factorisation per
                coefficient, and the Laplace Hessian once per fit. None (the default):
                wherever the equation or a data set's operator has learned
                coefficients (the dense engine, without ``samples``). The variance given
                the coefficients alone covered 3% and 17% of Kovasznay's u and v with nu
                learned, and 0.83 of 1-D Darcy's u on average over 20 seeds with
                a = exp(theta x), theta learned (``benchmarks/calibration_kinds.py``).

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
            return self._predict_equation(X, coefficients)
        terms = self._output_terms(output, input_dim)
        if self.sparse:
            if full_cov or samples is not None or coefficients:
                raise ValueError(
                    "full_cov: a sparse fit (engine='cholesky') predicts means and "
                    "variances only (full_cov=False, samples=None, coefficients=None)"
                )
            regression = engine_of(self)
            mean = regression.mean(X, terms) * self.y_scale
            var = self._squared_units(np.maximum(regression.variance(X, terms), 0.0))
            return representable(mean, "mean"), representable(var, "variance")
        if samples is not None:
            if coefficients:
                raise ValueError(
                    "coefficients: predict(samples=...) averages over the sampled "
                    "coefficients already; pass coefficients=None"
                )
            return sampler.predict_mixture(self, X, output, full_cov, samples, max_draws)
        posterior = self.posterior()
        Xs, _ = self.data.tensors(self.dtype)
        compiled, values = self._cross(terms)

        def cross(Xc):
            Ks, prior = compiled(tf.constant(Xc, self.dtype), Xs, values)
            return Ks.numpy().astype(np.float64), prior.numpy().astype(np.float64)

        mean, var, V, collapsed = posterior.predict(cross, X, keep_V=full_cov, chunk=CHUNK)
        spread = self._coefficient_spread(coefficients, mean, lambda: self._moved_mean(cross, X))
        if collapsed:
            warn(
                f"predict: the posterior variance of {output!r} collapsed (below "
                f"1e-12 of the data's scale) at {collapsed} of {len(X)} points that are "
                "uncorrelated with every data point, where it should be the prior's: "
                "the kernel variance has collapsed (model.parameter_values())"
            )
        mean = mean * self.y_scale
        if full_cov:
            Xt = tf.constant(X, self.dtype)
            prior = block(self.kernel, Xt, Xt, terms, terms).numpy().astype(np.float64)
            cov = prior - V.T @ V
            if spread is not None:
                J, Sigma = spread
                cov = cov + J @ Sigma @ J.T
            cov = self._squared_units(cov)
            return mean, representable(0.5 * (cov + cov.T), "covariance")
        if spread is not None:
            J, Sigma = spread
            var = np.maximum(var, 0.0) + np.einsum("nk,kl,nl->n", J, Sigma, J)
        return mean, representable(self._squared_units(np.maximum(var, 0.0)), "variance")

    def _coefficient_spread(self, coefficients, mean: np.ndarray, moved_mean):
        """``(J, Sigma)`` for ``predict(coefficients=...)`` (standardised units), or None
        where nothing is added; ``mean`` the standardised mean at the fitted values,
        ``moved_mean()`` the one at the parameters' current values (``_moved_mean``)."""
        learned = bool(coefficients_module.learned_coefficients(self))
        if coefficients is None:
            coefficients = learned
        if not coefficients or not learned:
            return None
        J, Sigma = coefficients_module.coefficient_sensitivity(self, mean, moved_mean)
        return None if J.size == 0 else (J, Sigma)

    def _moved_mean(self, cross, X) -> np.ndarray:
        """The standardised posterior mean at ``X`` of the data as they are, at the
        parameters' current values, the targets moved where a learned coefficient moves
        a linearised equation's right-hand side."""
        objective = self.objective()
        Xs, y = self.data.tensors(self.dtype)
        y = y.numpy().astype(np.float64)
        if objective.moves:
            y = y + objective._shift(Xs).numpy().astype(np.float64)
        K = np.asarray(objective.gram(Xs), np.float64)
        posterior = Posterior.compute(K, y, self._values(), self.data.sizes, self.data.names)
        return posterior.predict(cross, X, chunk=CHUNK)[0]

    @limit_blas
    def posterior_mean(self, X, output="u") -> np.ndarray:
        """The posterior mean of ``output`` (as ``predict``'s) at ``X``, array of shape
        (n, d), in data units, without the variance's triangular solves."""
        self._require_data()
        X = check.as_inputs("X", X, self.data.input_dim)
        terms = self._output_terms(output, self.data.input_dim)
        if self.sparse:
            return engine_of(self).mean(X, terms) * self.y_scale
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

    def _predict_equation(self, X, coefficients=None):
        """``N[u] = F(L_1 u, ..., L_m u)`` at ``X``: ``F`` at the features' posterior
        means, and the variance of the equation linearised there,
        ``sum_ab c_a c_b cov(L_a u, L_b u)`` (``c_a = dF/dv_a``); arrays (n,), or (n, k)
        for a system of k equations."""
        equation = self.operator
        names, k, n = list(equation.features), equation.size, len(X)
        moments = [
            self.predict(X, output=equation.feature(a), coefficients=coefficients) for a in names
        ]
        means = np.stack([m for m, _ in moments])
        linearisation = Linearisation(equation, means)
        partials = np.stack([c.numpy() for c in linearisation.jacobian()]).reshape(-1, k, n)
        value = equation.evaluate(dict(zip(names, means))).numpy().reshape(k, n)
        var = np.zeros((k, n))
        for a in range(len(names)):
            var += partials[a] ** 2 * moments[a][1]
            for b in range(a + 1, len(names)):
                if not np.any(partials[a] * partials[b]):
                    continue
                both = equation.feature(names[a]) + equation.feature(names[b])
                joint = self.predict(X, output=both, coefficients=coefficients)[1]
                covariance = 0.5 * (joint - moments[a][1] - moments[b][1])
                var += 2.0 * partials[a] * partials[b] * covariance
        var = np.maximum(var, 0.0)
        return (value[0], var[0]) if k == 1 else (value.T, var.T)

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
