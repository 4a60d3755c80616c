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
import warnings

import numpy as np

from . import _validation as check
from . import io
from ._tensorflow import tf
from .covariance import block, check_smoothness
from .data import RESERVED_NAMES, Data, Observations, noise_parameter, prepare
from .kernels import Fields, Kernel, field_names
from .operators import Identity, Nonlinear, Operator, field

__all__ = ["Model", "check_training", "representable", "progress_bar"]


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
        if isinstance(kernel, Fields) and isinstance(operator, Nonlinear):
            raise ValueError(
                "kernel: a nonlinear equation acts on one field; pass one kernel, e.g. "
                "pigp.kernels.SquaredExponential()"
            )
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
        # A nonlinear equation does not scale with u: its data are never standardised.
        self.standardize = bool(standardize) and not isinstance(operator, Nonlinear)
        self.noise_u, u_decided = noise_parameter(noise_u, "noise_u")
        self.noise_f, f_decided = noise_parameter(noise_f, "noise_f")
        #: Which of the u and f data have a noise ``fit`` decides (learned or exact).
        self.noise_decided_by_fit = frozenset(
            name for name, decided in (("u", u_decided), ("f", f_decided)) if decided
        )
        self.data: Data | None = None
        self.history: list = []
        self._start()

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

    # ----- data ----------------------------------------------------------------------
    def _prepare(self, X_u, y_u, X_f, y_f, observations) -> Data:
        """Validate ``fit``'s data (``ValueError`` naming the argument) with this
        model's kernel, operator, noise parameters and settings; nothing changes."""
        columns = self.operator.dims or self.dims
        return prepare(
            self.kernel,
            self._observations(X_u, y_u, X_f, y_f, observations),
            self.dims,
            len(columns) if columns else None,
            self.standardize,
        )

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
            terms = self.operator.feature(output).resolve(input_dim, self.dims)
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
                known = (
                    list(fields or ())
                    + list(RESERVED_NAMES)
                    + [n for n in (self.data.names if self.data else ()) if n not in RESERVED_NAMES]
                )
                raise ValueError(f"output: expected one of {known} or an Operator, got {output!r}")
            terms = found.terms
        check_smoothness(self.kernel, terms, "output")
        return tuple(terms)

    # ----- units and the prior ---------------------------------------------------------
    def _squared_units(self, values: np.ndarray) -> np.ndarray:
        """Variances from standardised to data units (inf where beyond float64)."""
        with np.errstate(over="ignore"):
            return values * np.square(np.float64(self.y_scale))

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
        warnings.warn(
            f"predict: the posterior {what} in data units is beyond float64's range "
            "at some points (inf there): the targets' scale squared overflows; "
            "divide the targets by a constant to see it",
            RuntimeWarning,
            stacklevel=3,
        )
    return values


def progress_bar(total: int, verbose: bool, description: str = "fit"):
    """A tqdm progress bar of ``total`` steps, or None when not ``verbose``."""
    if not verbose:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit="step")
