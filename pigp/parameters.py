"""Constrained, trainable parameters.

A ``Parameter`` is read and assigned as its *constrained* value (a positive
lengthscale, a diffusivity) while the optimiser trains an unconstrained
``tf.Variable`` behind it, through TensorFlow Probability's softplus bijector.
Parameters are stored in float64 and cast to a model's dtype where they are used.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

__all__ = ["Parameter", "Coefficient", "softplus", "inverse_softplus"]


def softplus(x):
    """``log(1 + exp(x))``, computed stably, for numbers and arrays (NumPy)."""
    x = np.asarray(x, dtype=np.float64)
    return np.logaddexp(0.0, x)


def inverse_softplus(y):
    """The inverse of ``softplus``: ``log(exp(y) - 1)`` for ``y > 0`` (NumPy)."""
    y = np.asarray(y, dtype=np.float64)
    return y + np.log(-np.expm1(-y))


class Parameter(tf.Module):
    """A scalar or vector parameter with an optional positivity constraint.

    Args:
        value: initial constrained value, a number or array.
        positive: if True (default) the value is ``lower + softplus(v)`` for an
            unconstrained variable ``v``; otherwise the value is ``v`` itself.
        lower: lower bound of a positive parameter (default 0).
        trainable: whether optimisers update it.
        name: a label used in error messages and ``parameter_values()``.
    """

    def __init__(
        self,
        value,
        positive: bool = True,
        lower: float = 0.0,
        trainable: bool = True,
        name: str | None = None,
    ):
        super().__init__(name=name or "parameter")
        self.label = name
        value = _as_float_array(value, self.name)
        self.positive = bool(positive)
        self.lower = float(lower)
        if self.positive:
            _check_above(value, self.lower, self.name)
            bijector = tfp.bijectors.Softplus()
            if self.lower != 0.0:
                bijector = tfp.bijectors.Chain(
                    [tfp.bijectors.Shift(tf.constant(self.lower, tf.float64)), bijector]
                )
        else:
            bijector = tfp.bijectors.Identity()
        self.variable = tfp.util.TransformedVariable(
            value, bijector, dtype=tf.float64, trainable=trainable, name=self.name
        )

    @property
    def shape(self) -> tuple:
        return tuple(self.variable.shape)

    @property
    def trainable(self) -> bool:
        return self.unconstrained.trainable

    @property
    def unconstrained(self) -> tf.Variable:
        """The ``tf.Variable`` an optimiser trains."""
        return (
            self.variable.trainable_variables[0]
            if self.variable.trainable_variables
            else self.variable.pretransformed_input
        )

    def value(self, dtype=tf.float64) -> tf.Tensor:
        """The constrained value as a tensor of ``dtype`` (differentiable)."""
        return tf.cast(tf.convert_to_tensor(self.variable), dtype)

    def numpy(self) -> np.ndarray:
        return tf.convert_to_tensor(self.variable).numpy()

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
        self.variable.assign(value)

    @classmethod
    def of(cls, value, name: str) -> Parameter:
        """``value`` itself if it is a Parameter, else a new positive one called ``name``."""
        return value if isinstance(value, Parameter) else cls(value, name=name)

    def get_config(self) -> dict:
        """The constructor's settings (the value is saved apart, unconstrained)."""
        return {
            "name": self.label,
            "positive": self.positive,
            "lower": self.lower,
            "trainable": self.trainable,
            "shape": list(self.shape),
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
        placeholder = np.full(shape, float(config["lower"]) + 1.0)
        parameter = cls(
            placeholder,
            positive=config["positive"],
            lower=config["lower"],
            trainable=config["trainable"],
            name=config["name"],
        )
        parameter.unconstrained.assign(unconstrained)
        return parameter

    def __repr__(self) -> str:
        return f"Parameter({self.name}={np.array2string(self.numpy(), precision=6)})"

    # Arithmetic builds coefficients of operators: alpha * D("x", 2), c**2, -nu.
    def _coefficient(self) -> Coefficient:
        return Coefficient(1.0, ((self, 1),))

    def __mul__(self, other):
        return self._coefficient().__mul__(other)

    __rmul__ = __mul__

    def __neg__(self):
        return -self._coefficient()

    def __pow__(self, power):
        return self._coefficient() ** power


class Coefficient:
    """A product ``constant * p1**k1 * p2**k2 ...`` of a number and parameters.

    The coefficients of differential operators: ``2.0``, ``alpha``, ``-c**2``.
    """

    def __init__(self, constant: float = 1.0, factors: tuple = ()):
        self.constant = float(constant)
        self.factors = tuple(factors)

    @classmethod
    def of(cls, value) -> Coefficient:
        if isinstance(value, Coefficient):
            return value
        if isinstance(value, Parameter):
            return value._coefficient()
        if isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value):
            return cls(float(value))
        raise ValueError(
            f"coefficient: expected a finite number, a pigp.Parameter or a "
            f"Coefficient, got {value!r}"
        )

    @property
    def parameters(self) -> tuple:
        return tuple(p for p, _ in self.factors)

    def get_config(self) -> dict:
        return {"constant": self.constant, "factors": [[p, k] for p, k in self.factors]}

    @classmethod
    def from_config(cls, config: dict) -> Coefficient:
        return cls(config["constant"], tuple((p, int(k)) for p, k in config["factors"]))

    def value(self, dtype=tf.float64) -> tf.Tensor:
        result = tf.constant(self.constant, dtype)
        for parameter, power in self.factors:
            result = result * parameter.value(dtype) ** power
        return result

    def numpy(self) -> float:
        return float(self.value().numpy())

    def __mul__(self, other):
        if isinstance(other, (Coefficient, Parameter, int, float, np.integer, np.floating)):
            other = Coefficient.of(other)
            return Coefficient(self.constant * other.constant, self.factors + other.factors)
        return NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return Coefficient(-self.constant, self.factors)

    def __pow__(self, power):
        if not isinstance(power, (int, np.integer)) or power < 0:
            raise ValueError(f"coefficient power: expected a non-negative integer, got {power!r}")
        return Coefficient(self.constant**power, tuple((p, k * power) for p, k in self.factors))

    def __repr__(self) -> str:
        text = [repr(self.constant)] + [
            f"{p.name}**{k}" if k != 1 else p.name for p, k in self.factors
        ]
        return "*".join(text)


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
        raise ValueError(f"{name}: expected values > {lower} (a positive parameter), got {value}")
