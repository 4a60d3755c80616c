"""Constrained, trainable parameters.

A ``Parameter`` is read and assigned as its *constrained* value (a positive
lengthscale, a diffusivity) while the optimiser trains an unconstrained
``tf.Variable`` behind it: ``value = lower + softplus(v)`` (the softplus of
TensorFlow Probability's bijector, bit for bit; TFP itself is only needed for
priors and sampling).
Parameters are stored in float64 and cast to a model's dtype where they are used.
"""

from __future__ import annotations

import contextlib
import re
import threading

import numpy as np

from ._reads import function_parameters
from ._tensorflow import probability, tf

__all__ = ["Parameter", "Coefficient", "softplus", "inverse_softplus", "substituted"]

_substitutes = threading.local()


@contextlib.contextmanager
def substituted(parameters, values=None, unconstrained=None):
    """Within the block, ``parameter.value()`` of each of ``parameters`` is the
    matching tensor of ``values`` (its constrained value), or the constrained image
    of the matching tensor or variable of ``unconstrained``, instead of the value
    its own variable holds (in this thread).

    Compiled programs trace the covariance this way, with the values (or the
    variables) as their arguments, so that a program does not depend on which
    parameters it was traced with: given ``values``, the constraints' transforms
    run outside the program; given ``unconstrained``, inside it, once per use, as
    when a parameter reads its own variable.
    """
    given = (
        {id(p): (v, False) for p, v in zip(parameters, values)}
        if values is not None
        else {id(p): (u, True) for p, u in zip(parameters, unconstrained)}
    )
    previous = getattr(_substitutes, "values", None)
    _substitutes.values = {**(previous or {}), **given}
    try:
        yield
    finally:
        _substitutes.values = previous


def softplus(x):
    """``log(1 + exp(x))``, computed stably, for numbers and arrays (NumPy)."""
    x = np.asarray(x, dtype=np.float64)
    return np.logaddexp(0.0, x)


def inverse_softplus(y):
    """The inverse of ``softplus``: ``log(exp(y) - 1)`` for ``y > 0`` (NumPy), as
    TensorFlow Probability's ``softplus_inverse`` computes it (``log y`` below
    ``4 eps``, ``y`` itself above ``-log(eps) - 2``)."""
    y = np.asarray(y, dtype=np.float64)
    threshold = np.log(np.finfo(np.float64).eps) + 2.0
    small, large = y < np.exp(threshold), y > -threshold
    safe = np.where(small | large, 1.0, y)
    with np.errstate(divide="ignore"):
        return np.where(small, np.log(y), np.where(large, y, safe + np.log(-np.expm1(-safe))))


class Parameter(tf.Module):
    """A scalar or vector parameter with an optional positivity constraint.

    Args:
        value: initial constrained value, a number or array.
        positive: True: the value is ``lower + softplus(v)`` for an unconstrained
            variable ``v``; False: the value is ``v`` itself (any sign). None
            (default): decided by where the parameter is first used: positive as
            a kernel's variance, lengthscale or weight and as a noise variance,
            signed as a coefficient of an operator (a velocity, a reaction rate, a
            source strength can be negative). Pass ``positive=True`` for a
            coefficient known to be positive (a diffusivity) to keep it so; a
            ``prior`` whose support is the positive reals (``LogNormal``,
            ``Gamma``, ``HalfNormal``, ...) makes it positive too.
        lower: lower bound of a positive parameter (default 0); giving one makes
            the parameter positive.
        trainable: whether optimisers update it.
        name: a label used in error messages and ``parameter_values()``.
        prior: a TensorFlow Probability distribution over the *constrained* value
            (e.g. ``tfp.distributions.LogNormal(0.0, 1.0)``), or None. With priors,
            ``PIGP.fit`` maximises the log posterior (the mode of the constrained
            values) instead of the marginal likelihood, and ``PIGP.sample`` uses them.
            A kernel variance or noise variance is that of the standardised data
            (targets divided by ``model.y_scale``).
    """

    def __init__(
        self,
        value,
        positive: bool | None = None,
        lower: float | None = None,
        trainable: bool = True,
        name: str | None = None,
        prior=None,
    ):
        super().__init__(name=_module_name(name or "parameter"))
        self.label = name
        value = _as_float_array(value, self.name)
        self.prior = _check_prior(prior, self.name)
        if positive is None and (lower is not None or _positive_support(self.prior)):
            positive = True
        if positive is False and lower is not None:
            raise ValueError(
                f"{self.name}: lower: a lower bound makes a parameter positive; "
                f"got positive=False with lower={lower!r}"
            )
        #: True, False, or None until the first use decides (``settle``).
        self.positive = None if positive is None else bool(positive)
        self.lower = 0.0 if lower is None else float(lower)
        if self.positive:
            _check_above(value, self.lower, self.name)
            initial = inverse_softplus(value - self.lower)
        else:
            initial = value
        self._variable = tf.Variable(initial, dtype=tf.float64, trainable=trainable, name=self.name)
        self._trainable = bool(trainable)

    def settle(self, positive: bool, use: str) -> Parameter:
        """Decide the constraint of a parameter created with ``positive=None``
        (nothing changes for one already decided) and return it.

        Args:
            positive: whether ``use`` needs a positive value.
            use: what the parameter is used as, for the error message.

        Raises:
            ValueError: ``positive`` is asked for and the value is not above ``lower``.
        """
        if self.positive is not None:
            return self
        if positive:
            value = self._variable.numpy()
            if np.any(value <= self.lower):
                raise ValueError(
                    f"{use}: expected values > {self.lower} (a positive quantity), got the "
                    f"pigp.Parameter {self.name!r} holding {value}"
                )
            self._variable.assign(inverse_softplus(value - self.lower))
        self.positive = bool(positive)
        return self

    @property
    def shape(self) -> tuple:
        return tuple(self._variable.shape)

    @property
    def trainable(self) -> bool:
        """Whether optimisers and samplers update it (settable: a fit may fix a noise
        variance at its floor for data it finds exact)."""
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)

    @property
    def unconstrained(self) -> tf.Variable:
        """The ``tf.Variable`` an optimiser trains."""
        return self._variable

    def value(self, dtype=tf.float64) -> tf.Tensor:
        """The constrained value as a tensor of ``dtype`` (differentiable), or the
        tensor given for it by ``substituted``."""
        given = getattr(_substitutes, "values", None)
        if given and id(self) in given:
            tensor, unconstrained = given[id(self)]
            return tf.cast(self.forward(tensor) if unconstrained else tensor, dtype)
        return tf.cast(self.forward(self._variable), dtype)

    def forward(self, unconstrained) -> tf.Tensor:
        """The constrained value of an unconstrained tensor (float64)."""
        x = tf.convert_to_tensor(unconstrained, tf.float64)
        if not self.positive:
            return x
        # TensorFlow Probability's softplus: log1p(exp(x)) below -20, where it is
        # more accurate than tf.nn.softplus.
        # The inner where keeps exp from overflowing where its branch is not taken (its
        # gradient there would be inf * 0 = NaN).
        small = x < -20.0
        y = tf.where(small, tf.math.log1p(tf.exp(tf.where(small, x, -20.0))), tf.nn.softplus(x))
        return y + self.lower if self.lower != 0.0 else y

    def numpy(self) -> np.ndarray:
        return self.forward(self._variable).numpy()

    def at_bound(self) -> bool:
        """Whether a positive parameter's value sits at its lower bound (within 1e-4,
        where the softplus's slope is below 1e-4, so its variable hardly moves it)."""
        return bool(np.any(self.entries_at_bound()))

    def entries_at_bound(self) -> np.ndarray:
        """``at_bound`` entry by entry: a flat boolean array (all False unless positive)."""
        variable = self._variable.numpy().reshape(-1)
        return (variable < -9.2) & bool(self.positive)

    @property
    def bijector(self):
        """The map from the unconstrained variable to the value, as a TensorFlow
        Probability bijector."""
        tfp = probability()

        if not self.positive:
            return tfp.bijectors.Identity()
        return self._above_lower(tfp.bijectors.Softplus())

    def log_prior(self, unconstrained=None, distribution=None, value=None) -> tf.Tensor:
        """``log p(value)`` under ``distribution`` (default: this parameter's prior;
        float64; 0 without one), summed over the elements, at the current value, at
        the constrained image of the tensor ``unconstrained``, or at ``value`` (a
        tensor of constrained values); leading batch dimensions allowed."""
        distribution = self.prior if distribution is None else distribution
        if distribution is None:
            return tf.constant(0.0, tf.float64)
        if value is not None:
            value = tf.convert_to_tensor(value, tf.float64)
        elif unconstrained is not None:
            value = self.forward(unconstrained)
        else:
            value = self.value()
        log_prob = tf.cast(distribution.log_prob(value), tf.float64)
        return tf.reduce_sum(
            log_prob, axis=list(range(len(log_prob.shape) - len(self.shape), len(log_prob.shape)))
        )

    @property
    def sampling_bijector(self):
        """The map from the variable the sampler moves to the value: ``lower +
        exp(w)`` for a positive parameter (the posteriors of scales and variances
        are near Gaussian in log space, and their curvature varies little there),
        the identity otherwise."""
        tfp = probability()

        if not self.positive:
            return tfp.bijectors.Identity()
        return self._above_lower(tfp.bijectors.Exp())

    def sampling_start(self) -> np.ndarray:
        """The sampler's variable at the current value: ``log(value - lower)`` of a
        positive parameter, computed from the unconstrained variable ``x`` as
        ``log(softplus(x))`` (``~x`` far below 0), so that it stays finite where the
        value has rounded to ``lower``; the value itself otherwise."""
        x = self.unconstrained.numpy()
        if not self.positive:
            return x
        with np.errstate(divide="ignore"):
            return np.where(x < -30.0, x, np.log(np.logaddexp(0.0, x)))

    def unconstrained_from_sampling(self, w) -> tf.Tensor:
        """The unconstrained variable at the sampler's variable ``w`` (a tensor):
        ``softplus^-1(exp(w))`` of a positive parameter, without the detour through
        ``lower + exp(w)`` (which rounds to ``lower`` far below 0) and with a finite
        derivative everywhere (it tends to ``w`` as ``w -> -inf``); ``w`` otherwise."""
        tfp = probability()

        if not self.positive:
            return w
        small = w < -30.0
        safe = tf.where(small, tf.zeros_like(w), w)  # keeps the unused branch's gradient finite
        return tf.where(small, w, tfp.math.softplus_inverse(tf.exp(safe)))

    def _above_lower(self, bijector):
        """``lower + bijector(x)``: a map onto the positive reals shifted to ``lower``."""
        tfp = probability()

        if self.lower == 0.0:
            return bijector
        return tfp.bijectors.Chain(
            [tfp.bijectors.Shift(tf.constant(self.lower, tf.float64)), bijector]
        )

    def log_jacobian(self, unconstrained) -> tf.Tensor:
        """``log |d value / d unconstrained|`` summed over the elements (leading batch
        dimensions allowed): what turns a density of the value into one of the
        unconstrained variable."""
        x = tf.convert_to_tensor(unconstrained, tf.float64)
        if not self.positive:
            return tf.zeros(tf.shape(x)[: len(x.shape) - len(self.shape)], tf.float64)
        # d softplus(x) / dx = sigmoid(x): its log is -softplus(-x).
        axes = list(range(len(x.shape) - len(self.shape), len(x.shape)))
        return tf.reduce_sum(-tf.nn.softplus(-x), axis=axes)

    def assign(self, value) -> None:
        """Set the constrained value; raises ``ValueError`` if it breaks the constraint."""
        value = _as_float_array(value, self.name)
        if value.shape != self.shape:
            value = np.broadcast_to(value, self.shape) if value.ndim == 0 else value
        if value.shape != self.shape:
            raise ValueError(
                f"{self.name}: expected a value of shape {self.shape}, got shape {value.shape}"
            )
        if self.positive:
            _check_above(value, self.lower, self.name)
            value = inverse_softplus(value - self.lower)
        self._variable.assign(value)

    @classmethod
    def of(cls, value, name: str) -> Parameter:
        """A positive parameter for a quantity that must be positive (a variance, a
        lengthscale): ``value`` itself if it is a Parameter (settled positive if it was
        undecided), else a new positive one called ``name``."""
        if isinstance(value, Parameter):
            return value.settle(True, name)
        return cls(value, positive=True, name=name)

    def get_config(self) -> dict:
        """The constructor's settings (the value is saved apart, unconstrained)."""
        return {
            "name": self.label,
            "positive": self.positive,
            "lower": self.lower,
            "trainable": self.trainable,
            "shape": list(self.shape),
            "prior": describe_distribution(self.prior),
        }

    @classmethod
    def from_config(cls, config: dict, unconstrained) -> Parameter:
        """A parameter with ``config``'s settings and this unconstrained value, bit for bit."""
        unconstrained = np.asarray(unconstrained, dtype=np.float64)
        shape = tuple(config["shape"])
        if unconstrained.shape != shape:
            raise ValueError(
                f"parameter {config['name']!r}: expected a value of shape {shape}, "
                f"got shape {unconstrained.shape}"
            )
        if not np.all(np.isfinite(unconstrained)):
            raise ValueError(
                f"parameter {config['name']!r}: expected finite values, got {unconstrained}"
            )
        placeholder = np.full(shape, float(config["lower"]) + 1.0)  # replaced below
        parameter = cls(
            placeholder,
            positive=config["positive"],
            lower=float(config["lower"]) if config["positive"] else None,
            trainable=config["trainable"],
            name=config["name"],
            prior=rebuild_distribution(config.get("prior")),
        )
        parameter.unconstrained.assign(unconstrained)
        return parameter

    def __repr__(self) -> str:
        return f"Parameter({self.name}={np.array2string(self.numpy(), precision=6)})"

    # Arithmetic builds coefficients of operators: alpha * D("x", 2), c**2, -nu.
    def _coefficient(self) -> Coefficient:
        return Coefficient(1.0, ((self.settle(False, "a coefficient"), 1),))

    def __mul__(self, other):
        return self._coefficient().__mul__(other)

    __rmul__ = __mul__

    def __neg__(self):
        return -self._coefficient()

    def __pow__(self, power):
        return self._coefficient() ** power

    def __add__(self, other):
        return self._coefficient().__add__(other)

    __radd__ = __add__

    def __sub__(self, other):
        return self._coefficient().__sub__(other)

    def __rsub__(self, other):
        return self._coefficient().__rsub__(other)


def _check_prior(prior, name: str):
    """The prior rebuilt with float64 parameters (so ``tfd.LogNormal(0., 1.)`` works on
    float64 values, and a prior that could not be saved is refused now)."""
    if prior is None:
        return None
    tfp = probability()

    if isinstance(prior, tfp.distributions.Distribution):
        try:
            return rebuild_distribution(describe_distribution(prior))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{name}: prior: {error}") from None
    raise ValueError(
        f"{name}: prior: expected a tensorflow_probability distribution (e.g. "
        f"tfp.distributions.LogNormal(0.0, 1.0)) or None, got {prior!r}"
    )


def _positive_support(distribution) -> bool:
    """Whether ``distribution`` (or None) lives on the positive reals: its default
    event-space bijector maps -30 to a value >= 0 (``Exp``, ``Softplus``), where a
    distribution on the real line's maps it to -30."""
    if distribution is None:
        return False
    try:
        bijector = distribution.experimental_default_event_space_bijector()
        return bool(np.all(bijector.forward(tf.constant(-30.0, tf.float64)).numpy() >= 0.0))
    except (NotImplementedError, TypeError, ValueError):
        return False


def describe_distribution(distribution) -> dict | None:
    """A TFP distribution as JSON-compatible data: its class's import path and its
    numeric, boolean and string parameters (what ``rebuild_distribution`` reverses)."""
    if distribution is None:
        return None
    parameters = {}
    for key, value in distribution.parameters.items():
        if value is None or isinstance(value, (bool, str)):
            parameters[key] = value
            continue
        try:
            array = np.asarray(tf.convert_to_tensor(value), dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"save: cannot describe the prior {distribution!r}: its parameter "
                f"{key!r} is not a number or array"
            ) from None
        parameters[key] = array.tolist()
    cls = type(distribution)
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "parameters": parameters}


def rebuild_distribution(description: dict | None):
    """The distribution ``describe_distribution`` described (float64 parameters)."""
    if description is None:
        return None
    import importlib

    tfp = probability()

    module, _, qualname = description["class"].partition(":")
    cls = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and issubclass(cls, tfp.distributions.Distribution)):
        raise ValueError(f"{description['class']!r} is not a TensorFlow Probability distribution")
    parameters = {
        k: (
            tf.constant(v, tf.float64)
            if isinstance(v, (int, float, list)) and not isinstance(v, bool)
            else v
        )
        for k, v in description["parameters"].items()
    }
    return cls(**parameters)


class Coefficient:
    """A product ``constant * p1**k1 * p2**k2 ... * a1(x) * a2(x) ...`` of a number,
    parameters and known functions of the inputs.

    The coefficients of differential operators: ``2.0``, ``alpha``, ``-c**2``, and
    coefficients that vary from point to point, ``a(x)`` (a conductivity, a
    velocity field): a function is evaluated at each point of a data set (and of
    a prediction) and never differentiated: an operator ``d/dx (a(x) d/dx)`` is
    written expanded, ``a * D("x", 2) + a_x * D("x")``.

    Args:
        constant: the number.
        factors: ``((Parameter, power), ...)``.
        functions: known functions of the inputs, each mapping a tensor of points of
            shape (n, d) to their values, shape (n,), written with TensorFlow ops
            (e.g. ``lambda X: 1.0 + tf.square(X[:, 0])``); saved by import path, as a
            ``Custom`` kernel's function is.
    """

    def __init__(self, constant: float = 1.0, factors: tuple = (), functions: tuple = ()):
        self.constant = float(constant)
        self.factors = tuple(factors)
        self.functions = tuple(functions)
        for f in self.functions:
            if not callable(f):
                raise ValueError(f"coefficient: expected functions of X, got {f!r}")

    @classmethod
    def of(cls, value) -> Coefficient:
        if isinstance(value, Coefficient):
            return value
        if isinstance(value, Parameter):
            return value._coefficient()
        if isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value):
            return cls(float(value))
        if callable(value) and not isinstance(value, type):
            return cls(1.0, (), (value,))
        raise ValueError(
            f"coefficient: expected a finite number, a pigp.Parameter, a function of the "
            f"inputs or a Coefficient, got {value!r}"
        )

    @property
    def parameters(self) -> tuple:
        """The parameters of the factors, then those the functions read (``a = lambda X:
        tf.exp(theta.value() * X[:, 0])`` is learned with ``theta``), each once."""
        found = []
        for p in (
            *(p for p, _ in self.factors),
            *(q for f in self.functions for q in function_parameters(f, Parameter)),
        ):
            if not any(p is q for q in found):
                found.append(p)
        return tuple(found)

    @property
    def varies(self) -> bool:
        """Whether the coefficient varies from point to point (has functions)."""
        return bool(self.functions)

    def get_config(self) -> dict:
        config = {"constant": self.constant, "factors": [[p, k] for p, k in self.factors]}
        if self.functions:
            config["functions"] = list(self.functions)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Coefficient:
        return cls(
            config["constant"],
            tuple((p, int(k)) for p, k in config["factors"]),
            tuple(config.get("functions", ())),
        )

    def value(self, dtype=tf.float64, X=None) -> tf.Tensor:
        """The value as a tensor of ``dtype``: a scalar, or with functions, their
        product at the points ``X`` (a tensor of shape (n, d)), shape (n,)."""
        result = tf.constant(self.constant, dtype)
        for parameter, power in self.factors:
            result = result * parameter.value(dtype) ** power
        if self.functions:
            if X is None:
                raise ValueError(
                    f"coefficient {self!r}: it varies with the inputs; evaluate it at points X"
                )
            for function in self.functions:
                result = result * tf.cast(function(X), dtype)
        return result

    def numpy(self) -> float:
        return float(self.value().numpy())

    def __mul__(self, other):
        if isinstance(other, (Coefficient, Parameter, int, float, np.integer, np.floating)) or (
            callable(other) and not isinstance(other, type)
        ):
            other = Coefficient.of(other)
            return Coefficient(
                self.constant * other.constant,
                self.factors + other.factors,
                self.functions + other.functions,
            )
        return NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return Coefficient(-self.constant, self.factors, self.functions)

    def __add__(self, other):
        return CoefficientSum.of(self) + other

    __radd__ = __add__

    def __sub__(self, other):
        return CoefficientSum.of(self) - other

    def __rsub__(self, other):
        return (-CoefficientSum.of(self)) + other

    def __pow__(self, power):
        if not isinstance(power, (int, np.integer)) or power < 0:
            raise ValueError(f"coefficient power: expected a non-negative integer, got {power!r}")
        return Coefficient(
            self.constant**power,
            tuple((p, k * power) for p, k in self.factors),
            self.functions * power,
        )

    def __repr__(self) -> str:
        text = [repr(self.constant)] + [
            f"{p.name}**{k}" if k != 1 else p.name for p, k in self.factors
        ]
        text += [f"{getattr(f, '__name__', 'function')}(x)" for f in self.functions]
        return "*".join(text)


def _module_name(name: str) -> str:
    """``name`` as a Python identifier, as TensorFlow takes a module's name (the name a
    user gave, e.g. a data set's "initial and walls", stays the ``label``)."""
    if not isinstance(name, str):
        raise ValueError(f"name: expected a string, got {name!r}")
    cleaned = re.sub(r"\W", "_", name)
    return cleaned if cleaned.isidentifier() else f"_{cleaned}"


def _as_float_array(value, name: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number or array of numbers, got {value!r}") from None
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: expected finite values, got {array}")
    return array


def _check_above(value: np.ndarray, lower: float, name: str) -> None:
    if np.any(value <= lower):
        raise ValueError(
            f"{name}: expected values > {lower} (a positive parameter; pass "
            f"positive=False for one of any sign), got {value}"
        )


class CoefficientSum:
    """A sum of coefficients, ``lam + 2 * mu``, ``c - 1``: what arithmetic on
    parameters and numbers gives beyond a product. An operator multiplied by it is the
    sum of the operator multiplied by each term (``(lam + mu) * D("x", 2)`` is
    ``lam * D("x", 2) + mu * D("x", 2)``); products distribute.

    Args:
        terms: the ``Coefficient`` objects summed.
    """

    def __init__(self, terms):
        self.terms = tuple(terms)

    @classmethod
    def of(cls, value) -> CoefficientSum:
        """``value`` (a sum, a coefficient, a parameter, a number or a function of the
        inputs) as a sum."""
        if isinstance(value, CoefficientSum):
            return value
        return cls((Coefficient.of(value),))

    @staticmethod
    def _other(other):
        try:
            return CoefficientSum.of(other)
        except ValueError:
            return None

    def __add__(self, other):
        other = self._other(other)
        if other is None:
            return NotImplemented
        return CoefficientSum(self.terms + other.terms)

    __radd__ = __add__

    def __neg__(self):
        return CoefficientSum(-c for c in self.terms)

    def __sub__(self, other):
        other = self._other(other)
        if other is None:
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if not isinstance(other, (CoefficientSum, Coefficient, Parameter)) and not (
            isinstance(other, (int, float, np.integer, np.floating))
            or (callable(other) and not isinstance(other, type))
        ):
            return NotImplemented
        other = CoefficientSum.of(other)
        return CoefficientSum(a * b for a in self.terms for b in other.terms)

    __rmul__ = __mul__

    @property
    def parameters(self) -> tuple:
        """The parameters of the terms, each once."""
        found = []
        for p in (p for c in self.terms for p in c.parameters):
            if not any(p is q for q in found):
                found.append(p)
        return tuple(found)

    def value(self, dtype=tf.float64, X=None) -> tf.Tensor:
        """The sum of the terms' values (see ``Coefficient.value``)."""
        return tf.add_n([c.value(dtype, X) for c in self.terms])

    def numpy(self) -> float:
        return float(self.value().numpy())

    def __repr__(self) -> str:
        return " + ".join(repr(c) for c in self.terms)
