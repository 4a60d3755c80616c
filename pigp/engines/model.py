"""What every pigp model shares, whatever it approximates.

``Model`` holds the prior (kernel, operator), the noise parameters of the u
and f data, and the settings, and answers the questions that do not depend
on how the posterior is computed: the parameters by name, the operator terms
of an output, the prior covariance, data-unit conversions, the validation of
``fit``'s arguments. It is the API's edge: ``fit``'s ``X_u, y_u, X_f, y_f`` and
``noise_u``/``noise_f`` become two ``Observations`` named ``"u"`` and ``"f"``
here (``_observations``), and below that every data set is alike. Its
constructor is the one ``pigp.PIGP`` (exact) and ``pigp.SparsePIGP`` (inducing
points) share.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as check
from .. import io
from .._tensorflow import tf
from .._threads import limit_blas
from .._warnings import warn
from ..data import RESERVED_NAMES, Data, Observations, noise_parameter, prepare
from ..fitting import training
from ..fitting.plan import FitPlan
from ..fitting.report import FitReport
from ..inference import sampler
from ..inference.laplace import laplace, laplace_intervals
from ..kernels.covariance import block, check_smoothness
from ..kernels.library import Fields, Kernel, field_names
from ..operators.linear import Identity, Nonlinear, Operator, _is_identity, field
from ..structure import data_parameters

__all__ = ["Model", "check_training", "representable", "progress_bar"]

progress_bar = training.progress_bar  # where it was


def _reported(name: str, doc: str):
    """A property that reads and writes field ``name`` of the model's ``FitReport``."""

    def get(self):
        return getattr(self.report, name)

    def set(self, value):
        setattr(self.report, name, value)

    return property(get, set, doc=doc)


class Model(tf.Module):
    """The parts of a physics-informed GP model that do not depend on the approximation.

    Args: see ``pigp.PIGP``; its constructor is this one.
    """

    #: The default relative jitter by dtype.
    JITTER = {"float64": 1e-12, "float32": 1e-6}

    def __init__(
        self,
        kernel,
        operator: Operator,
        noise_u=None,
        noise_f=None,
        dims=None,
        dtype="float64",
        jitter: float | None = None,
        standardize: bool = True,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if isinstance(kernel, dict):
            kernel = Fields(kernel)
        kernel = self._kernel_argument(kernel)
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel: expected a pigp.kernels.Kernel, got {kernel!r}")
        if isinstance(operator, Nonlinear):
            check_features(operator, field_names(kernel))
        if not isinstance(operator, (Operator, Nonlinear)):
            raise ValueError(
                f"operator: expected a pigp.operators.Operator or a nonlinear equation "
                f"(pigp.operators.nonlinear), got {operator!r}"
            )
        self.dtype = check.as_dtype(dtype)
        if jitter is None:
            jitter = self.JITTER[self.dtype.name]
        if not (isinstance(jitter, (int, float)) and math.isfinite(jitter) and jitter >= 0):
            raise ValueError(f"jitter: expected a finite number >= 0, got {jitter!r}")
        self.kernel = kernel
        self.operator = operator
        self.dims = None if dims is None else tuple(dims)
        self.jitter = float(jitter)
        self.standardize = bool(standardize)
        self.noise_u, u_decided = noise_parameter(noise_u, "noise_u")
        self.noise_f, f_decided = noise_parameter(noise_f, "noise_f")
        #: Which of the u and f data have a noise ``fit`` decides (learned or exact).
        self.noise_decided_by_fit = frozenset(
            name for name, decided in (("u", u_decided), ("f", f_decided)) if decided
        )
        self._data: Data | None = None
        #: What the last ``fit`` found (``pigp.fitting.FitReport``); ``history`` and the
        #: other attributes below read it.
        self.report = FitReport()
        self._start()

    history = _reported("history", "The loss at every optimiser iteration of the last fit.")
    lbfgs_evaluations = _reported("lbfgs_evaluations", "Every loss L-BFGS-B evaluated.")
    rejected_steps = _reported("rejected_steps", "Adam steps skipped (non-finite loss).")
    noise_choice = _reported("noise_choice", "``{set: NoiseChoice}`` of noises fit decided.")
    noise_restart = _reported("noise_restart", "The ``NoiseRestart`` of the last fit, or None.")
    kernel_choice = _reported("kernel_choice", "``{kernel: evidence}`` of ``'auto'``.")
    gauss_newton = _reported("gauss_newton", "A nonlinear fit's iterations, ``[Step]``.")
    held = _reported("held", "Parameters a conditional Gauss-Newton fit held.")
    unidentified = _reported(
        "unidentified",
        "Coefficients of a nonlinear equation the fit could not identify: {name: why}.",
    )

    @property
    def data(self) -> Data | None:
        """The validated data sets of the last fit (``pigp.data.Data``), or None."""
        return self._data

    @data.setter
    def data(self, data: Data | None) -> None:
        self._data = data
        self._forget()

    @property
    def kernel(self) -> Kernel:
        """The prior covariance of u."""
        return self._kernel

    @kernel.setter
    def kernel(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._forget()

    def _forget(self) -> None:
        """Drop what was computed from the data and the kernel (the data or the kernel
        changed)."""

    def adopt(self, report: FitReport) -> None:
        """Take ``report`` as the last fit's."""
        self.report = report

    def _kernel_argument(self, kernel):
        """The kernel to start from, given the constructor's ``kernel`` argument."""
        return kernel

    def _start(self) -> None:
        """Set the state a new model of this class starts with (before any fit)."""

    @property
    def y_scale(self) -> float:
        """``c``: the number all targets are divided by (1 before fit)."""
        return 1.0 if self.data is None else self.data.y_scale

    # ----- parameters ---------------------------------------------------------------
    def parameters_by_name(self) -> dict:
        """Every parameter of the model by name: ``{"kernel.variance": Parameter, ...}``.

        The names say where a parameter sits: ``"kernel.NAME"`` for the kernel's
        (``variance``, ``lengthscales``, ...), ``"operator.LABEL"`` for a coefficient
        of the model's operator (``LABEL`` is the ``name`` given to its
        ``pigp.Parameter``, else ``coefficientI`` by position), ``"noise_u"`` and
        ``"noise_f"`` for the noise variances of the u and f data, and
        ``"SET.noise"`` and ``"SET.LABEL"`` for an observation set's noise and the
        coefficients of its operator that the model's operator does not have.
        """
        out = {f"kernel.{k}": v for k, v in self.kernel.parameters.items()}
        for i, p in enumerate(self.operator.parameters):
            out[f"operator.{p.label or f'coefficient{i}'}"] = p
        if self.data is None:
            return {**out, "noise_u": self.noise_u, "noise_f": self.noise_f}
        for s in self.data.sets:
            out[self._noise_name(s.name)] = s.noise
            for coefficient, *_ in s.terms:
                for p in coefficient.parameters:
                    if not any(p is q for q in out.values()):
                        out[f"{s.name}.{p.label or p.name}"] = p
        return out

    @staticmethod
    def _noise_name(name: str) -> str:
        """The name of a data set's noise in ``parameters_by_name``: ``noise_u`` and
        ``noise_f`` for the sets of ``fit``'s arrays, ``NAME.noise`` for the others."""
        return f"noise_{name}" if name in RESERVED_NAMES else f"{name}.noise"

    def parameter_values(self) -> dict:
        """Current constrained values by name (see ``parameters_by_name`` for the
        names: ``"operator.diffusivity"`` is the coefficient created as
        ``pigp.Parameter(..., name="diffusivity")``): floats for scalars, arrays for
        vectors. Noise variances are in standardised units (``y_scale``)."""
        return {
            k: (float(v) if np.ndim(v) == 0 else np.array(v))
            for k, v in ((k, p.numpy()) for k, p in self.parameters_by_name().items())
        }

    def trainable_parameters(self) -> list:
        """``[(name, Parameter)]`` of the trainable parameters, each once."""
        unique = []
        for name, p in self.parameters_by_name().items():
            if p.trainable and not any(p is q for _, q in unique):
                unique.append((name, p))
        return unique

    def trainable_coefficients(self) -> list:
        """``[(name, Parameter)]`` of the trainable PDE coefficients: the trainable
        parameters that are neither the kernel's nor a data set's noise."""
        self._require_data()
        noises = [s.noise for s in self.data.sets]
        return [
            (name, p)
            for name, p in self.trainable_parameters()
            if not name.startswith("kernel.") and not any(p is q for q in noises)
        ]

    # ----- the parameters' uncertainty ----------------------------------------------------
    def objective(self, priors: bool = True):
        """The loss the parameters are learned by over the trainable parameters'
        unconstrained variables, with the priors' terms (or without); pass it
        ``model.data.tensors(model.dtype)``."""
        raise NotImplementedError

    @limit_blas
    def parameter_uncertainty(self) -> dict:
        """Laplace approximation: posterior standard deviations of the parameters.

        The Hessian ``H`` of the loss in the unconstrained variables at the current
        (fitted) values gives their covariance ``H^-1``; the delta method maps it to
        the constrained values (``std = |d value / d v| sqrt(diag H^-1)``). See
        ``pigp.inference.laplace.laplace``.

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
        self._warn_unidentified("parameter_uncertainty")
        objective = self.objective()
        return laplace(
            objective,
            *self.data.tensors(self.dtype),
            self.trainable_parameters(),
            bounded=data_parameters(self.data.sets),
        )

    def _warn_unidentified(self, caller: str) -> None:
        if self.unidentified:
            warn(
                f"{caller}: the last fit reported {sorted(self.unidentified)} as not "
                "identified by its data (model.unidentified says why): their intervals are "
                "not measurements"
            )

    @limit_blas
    def parameter_intervals(self, level: float = 0.95) -> dict:
        """Laplace intervals of the parameters: central ``level`` intervals of the
        Gaussian in the unconstrained variables (covariance ``H^-1``, as
        ``parameter_uncertainty``), each end mapped through the parameter's
        transform. A positive parameter's interval (a diffusivity, a lengthscale)
        stays above its lower bound, where ``value +- 1.96 std`` can reach below 0
        once the std is a sizeable part of the value. See ``pigp.inference.laplace.
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
        self._warn_unidentified("parameter_intervals")
        objective = self.objective()
        return laplace_intervals(
            objective,
            *self.data.tensors(self.dtype),
            self.trainable_parameters(),
            float(level),
            bounded=data_parameters(self.data.sets),
        )

    @limit_blas
    def sample(
        self,
        num_results: int = 1000,
        num_burnin: int = 500,
        num_chains: int = 4,
        seed: int = 0,
        max_tree_depth: int = 8,
        target_accept: float = 0.8,
        noise_floor: float | None = FitPlan().noise_floor,
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
        gets ``pigp.inference.nuts.default_prior`` (for a coefficient of the PDE a
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
        return sampler.sample(
            self,
            num_results,
            num_burnin,
            num_chains,
            seed,
            max_tree_depth,
            target_accept,
            noise_floor,
        )

    # ----- data ----------------------------------------------------------------------
    def prepare_data(self, X_u=None, y_u=None, X_f=None, y_f=None, observations=()) -> Data:
        """Validate ``fit``'s data (``ValueError`` naming the argument) with this
        model's kernel, operator, noise parameters and settings; nothing changes."""
        columns = self.operator.dims or self.dims
        data = prepare(
            self.kernel,
            self._observations(X_u, y_u, X_f, y_f, observations),
            self.dims,
            len(columns) if columns else None,
            self.standardize,
            # A nonlinear equation's right-hand side does not scale with u: the scale
            # is the other sets' (Gauss-Newton's linearised equation is linear in u).
            ("f",) if isinstance(self.operator, Nonlinear) else (),
        )
        fields = self.fields or ()
        used = {f for s in data.sets for _, _, f in s.terms} if fields else set()
        unused = [f for f in fields if f not in used]
        if unused:
            raise ValueError(
                f"kernel: the fields {unused} have a kernel but no data set's operator acts "
                f"on them (the data act on {sorted(used)}); remove them from the kernel "
                "dict, or add data or an equation that involves them"
            )
        return data

    def _observations(self, X_u, y_u, X_f, y_f, observations) -> list:
        """``fit``'s data as ``Observations``: ``X_u, y_u`` as the set ``"u"`` (operator
        ``Identity``, noise ``noise_u``), ``X_f, y_f`` as ``"f"`` (the model's operator,
        ``noise_f``), then ``observations``."""
        if isinstance(observations, Observations) or not isinstance(observations, (list, tuple)):
            raise ValueError(
                f"observations: expected a list of pigp.Observations, got {observations!r}"
            )
        for i, obs in enumerate(observations):
            if not isinstance(obs, Observations):
                raise ValueError(f"observations[{i}]: expected pigp.Observations, got {obs!r}")
            if obs.name in RESERVED_NAMES:
                raise ValueError(
                    f"observations[{i}].name: {obs.name!r} is reserved for the "
                    f"X_{obs.name}/y_{obs.name} data; pass those arrays as X_{obs.name} "
                    f"and y_{obs.name}, or give this set another name"
                )
        sets = []
        equation = self.operator
        if isinstance(equation, Nonlinear):
            # Validated against the sum of its features (the kernel must be smooth
            # enough for each); fit replaces it by the linearised equation.
            equation = sum(
                (equation.feature(k) for k in list(equation.features)[1:]),
                equation.feature(next(iter(equation.features))),
            )
        if isinstance(self.operator, Nonlinear) and X_f is not None and y_f is not None:
            X_f, y_f = stacked_system(self.operator, X_f, y_f)
        for name, X, y, operator, noise in (
            ("u", X_u, y_u, Identity, self.noise_u),
            ("f", X_f, y_f, equation, self.noise_f),
        ):
            if X is None and y is None:
                continue
            labels = (f"X_{name}", f"y_{name}")
            if X is None or y is None:
                missing = labels[0] if X is None else labels[1]
                raise ValueError(
                    f"{missing}: expected an array (both {labels[0]} and {labels[1]} are "
                    "needed), got None"
                )
            obs = Observations(X, y, operator, noise, name, labels)
            obs.noise_decided_by_fit = name in self.noise_decided_by_fit
            sets.append(obs)
        if not sets and not observations:
            raise ValueError("fit: expected data: X_u and y_u, X_f and y_f, or observations=[...]")
        return sets + list(observations)

    def _require_data(self):
        if self.data is None:
            raise ValueError(
                "model: not fitted yet; call fit(...) with data before "
                "predict, covariance of data or log_marginal_likelihood"
            )

    @property
    def fields(self) -> tuple | None:
        """The names of the latent fields of a model of several (``kernel`` a dict, a
        ``pigp.kernels.Fields``), None for a model of one field u."""
        return field_names(self.kernel)

    def _output_terms(self, output, input_dim: int) -> tuple:
        fields = self.fields
        if isinstance(output, str) and fields is not None and output in fields:
            output = field(output)
        if isinstance(output, Operator):  # column names: the model's, else its operator's
            terms = output.resolve(input_dim, self.dims or self.operator.dims, fields)
        elif output == "u" and fields is not None:
            raise ValueError(
                f"output: the model's fields are {fields}; predict one by name, e.g. "
                f"output={fields[0]!r}, or any operator of them"
            )
        elif output == "u":
            terms = Identity.resolve(input_dim)
        elif isinstance(self.operator, Nonlinear) and output in self.operator.features:
            terms = self.operator.feature(output).resolve(input_dim, self.dims, fields)
        elif output == "f" and isinstance(self.operator, Nonlinear):
            raise ValueError(
                "output: 'f' of a nonlinear equation is not a linear operator of u; "
                "predict(X, output='f') gives N[u] with its linearised variance, and "
                "covariance() takes feature names or operators"
            )
        elif output == "f":
            terms = self.operator.resolve(input_dim, self.dims, fields)
        else:
            found = None if self.data is None else self.data.get(output)
            if found is None:
                features = (
                    list(self.operator.features) if isinstance(self.operator, Nonlinear) else []
                )
                known = (
                    list(fields or ())
                    + list(RESERVED_NAMES)
                    + features
                    + [n for n in (self.data.names if self.data else ()) if n not in RESERVED_NAMES]
                )
                known = list(dict.fromkeys(known))
                raise ValueError(f"output: expected one of {known} or an Operator, got {output!r}")
            terms = found.terms
        check_smoothness(self.kernel, terms, "output")
        return tuple(terms)

    # ----- units and the prior ---------------------------------------------------------
    def _squared_units(self, values: np.ndarray) -> np.ndarray:
        """Variances from standardised to data units (inf where beyond float64)."""
        with np.errstate(over="ignore"):
            return values * np.square(np.float64(self.y_scale))

    @limit_blas
    def covariance(self, X1, X2=None, left="u", right="u") -> np.ndarray:
        """The prior covariance ``cov(L_left u(X1), L_right u(X2))`` in data units.

        Data units, as ``predict`` returns: the kernel's block times ``y_scale**2``
        (``y_scale`` is 1 before fit), without noise. Far from the data,
        ``predict(X, output, full_cov=True)`` tends to ``covariance(X, X, output,
        output)``.

        Args:
            X1: array of shape (n, d).
            X2: array of shape (m, d) (default X1).
            left: ``"u"``, ``"f"``, an observation set's name or an Operator.
            right: the same, for the second argument.

        Returns:
            An array of shape (n, m).
        """
        input_dim = None if self.data is None else self.data.input_dim
        X1 = check.as_inputs("X1", X1, input_dim)
        X2 = X1 if X2 is None else check.as_inputs("X2", X2, X1.shape[1])
        self.kernel.build(X1)
        t_left = self._output_terms(left, X1.shape[1])
        t_right = self._output_terms(right, X1.shape[1])
        K = block(
            self.kernel, tf.constant(X1, self.dtype), tf.constant(X2, self.dtype), t_left, t_right
        )
        return self._squared_units(K.numpy().astype(np.float64))

    # ----- saving ------------------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor's arguments (kernel, operator, noise parameters, settings)."""
        return {
            "kernel": self.kernel,
            "operator": self.operator,
            "noise_u": self.noise_u,
            "noise_f": self.noise_f,
            "dims": None if self.dims is None else list(self.dims),
            "dtype": self.dtype.name,
            "jitter": self.jitter,
            "standardize": self.standardize,
            "noise_decided_by_fit": sorted(self.noise_decided_by_fit),
        }

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        decided = config.pop("noise_decided_by_fit", ())
        model = cls(**config)
        model.noise_decided_by_fit = frozenset(decided)
        return model

    def save(self, path) -> None:
        """Write the model (kernel, operator, parameters, data, and the state of
        its approximation) to ``path``.

        ``pigp.load(path)`` gives it back; the loaded model predicts bit for bit
        as this one. The format: ``pigp.io``.
        """
        io.save(self, path)

    def state_arrays(self) -> dict:
        """What ``save`` writes besides the parameters, data and history."""
        return {}

    def restore_state(self, arrays) -> None:
        """The inverse of ``state_arrays``, at ``pigp.load``."""


def check_features(equation: Nonlinear, fields) -> None:
    """Refuse a nonlinear equation whose features do not fit the model's fields (one
    field: none named; several: each feature names its own), or a feature named like a
    field but not that field (``predict(output=name)`` gives the field)."""
    if fields is None and equation.fields:
        raise ValueError(
            f"kernel: the equation's features act on the fields {equation.fields}; give "
            "a kernel per field, e.g. PIGP({'psi': kernel, 'p': kernel}, equation)"
        )
    if fields is not None and not equation.fields:
        raise ValueError(
            f"operator: the model's fields are {tuple(fields)}, but the equation's features "
            "name none; apply each to its field, e.g. D('x') @ field('p')"
        )
    for name, operator in equation.features.items():
        if (
            fields
            and name in fields
            and not (_is_identity(operator) and operator.fields == (name,))
        ):
            raise ValueError(
                f"features[{name!r}]: {name!r} names a field (predict(X, output={name!r}) "
                f"gives it), but this feature is {operator!r}; give it another name"
            )


def stacked_system(equation: Nonlinear, X_f, y_f) -> tuple:
    """A system of k equations' collocation data as one set: ``X_f`` (n, d) repeated k
    times and ``y_f`` (n, k) equation after equation (k n,); one equation's unchanged."""
    k = equation.size
    if k == 1:
        return X_f, y_f
    X, y = np.asarray(X_f), np.asarray(y_f)
    if y.ndim != 2 or y.shape[1] != k or X.ndim != 2 or len(X) != len(y):
        raise ValueError(
            f"y_f: the equation is a system of {k} equations; expected the right-hand "
            f"sides as an array of shape (n, {k}) for X_f of shape (n, d) (zeros for "
            f"N[u] = 0), got y_f of shape {y.shape} and X_f of shape {X.shape}"
        )
    return np.tile(X, (k, 1)), y.T.reshape(-1)


def check_training(steps, learning_rate) -> None:
    """``ValueError`` unless ``steps`` is an integer >= 0 and ``learning_rate`` a
    positive finite number."""
    if not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps: expected a non-negative integer, got {steps!r}")
    if not (isinstance(learning_rate, (int, float)) and 0 < learning_rate < math.inf):
        raise ValueError(f"learning_rate: expected a positive number, got {learning_rate!r}")


def representable(values: np.ndarray, what: str) -> np.ndarray:
    """``values`` in data units; warn where they overflowed float64 (data near 1e154
    and beyond have variances beyond 1e308)."""
    if not np.all(np.isfinite(values)):
        warn(
            f"predict: the posterior {what} in data units is beyond float64's range "
            "at some points (inf there): the targets' scale squared overflows; "
            "divide the targets by a constant to see it"
        )
    return values
