"""The kernel base classes: ``Kernel``, ``Stationary``, and the sum and product of two.

Every kernel evaluates ``k(x1, x2)`` on pair tensors (``pair``); a stationary one
also ``k(r)`` of ``r = x1 - x2`` (``stationary_pair``) and may describe itself as a
sum of products of one-column profiles (``separable``; ``gaussian`` and ``cosine``
here, with their derivatives in closed form) or a profile of the scaled squared
distance (``radial``). The kernels themselves, and the names users import, are in
``pigp.kernels``.
"""

from __future__ import annotations

import math

import numpy as np

from .._tensorflow import tf
from ..parameters import Parameter

__all__ = [
    "Kernel",
    "Stationary",
    "Sum",
    "Product",
    "gaussian",
    "cosine",
    "hermite",
    "ranges",
]


class Kernel(tf.Module):
    """Base class: subclasses implement ``pair``.

    Attributes:
        stationary: True when ``k(x1, x2)`` depends on ``x1 - x2`` only; then
            ``stationary_pair`` is defined and operator blocks need one
            level of tapes less.
        max_order: how many derivatives each argument of ``k`` can take in the
            mean-square sense (``inf`` for the squared exponential, ``ceil(nu) - 1``
            for a Matérn kernel). Operators of a higher order are refused.
    """

    stationary = False
    max_order = math.inf

    def pair(self, x1: tf.Tensor, x2: tf.Tensor) -> tf.Tensor:
        """``k(x1, x2)`` for pair tensors of shape ``(..., d)``; returns shape ``(...)``."""
        raise NotImplementedError

    def separable(self, dtype) -> list | None:
        """The kernel as a sum of products of scaled one-column profiles, or None.

        A stationary kernel ``k(r) = sum_q w_q prod_c prod_f phi_qcf(a_qcf r_c)``
        returns ``[(w_q, [[(a_qcf, phi_qcf), ...] for each column c])]``: weights
        and scales ``a`` as scalar tensors of ``dtype``, each ``phi`` a function of
        one tensor without parameters (e.g. ``gaussian``, ``cosine``). Its operator
        blocks then take derivatives of the profiles only, ``d^k phi(a r) =
        a^k phi^(k)(a r)``, combined by Leibniz's rule, which makes their graphs
        several times smaller (``pigp.kernels.derivatives.separable_partials``). The
        default, None, differentiates ``stationary_pair`` or ``pair`` itself.
        """
        return None

    def radial(self, dtype) -> tuple | None:
        """The kernel as ``w * phi(sum_c (a_c r_c)^2)`` of scaled squared distance, or None.

        A stationary kernel of one profile ``phi`` (no parameter of the kernel but
        ``w`` and the inverse lengthscales ``a_c`` outside it) returns ``(w, [a_c,
        ...], phi)``, scalar tensors of ``dtype`` and a function of one tensor. Its
        operator blocks then differentiate ``phi`` in its one argument only and
        combine those derivatives by the chain rule for ``s = sum_c z_c^2``
        (``pigp.kernels.derivatives.radial_partials``), where nested tapes through the whole
        kernel would build a graph that grows with every column and order. The
        default, None, leaves that to ``separable`` or the tapes.
        """
        return None

    def build(self, X: np.ndarray) -> None:
        """Create data-dependent parameters (sizes, initial values) from inputs ``X``."""

    @property
    def parameters(self) -> dict:
        """The kernel's parameters by name: ``{"variance": Parameter, ...}``."""
        return {}

    def get_config(self) -> dict:
        """The constructor's arguments, parameters as ``pigp.Parameter`` objects.

        ``type(kernel).from_config(kernel.get_config())`` builds an equal kernel
        sharing the same parameters; saving stores this description. A subclass
        whose constructor takes other arguments overrides both methods.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not describe itself: define "
            "get_config() (and from_config if needed) to save it"
        )

    @classmethod
    def from_config(cls, config: dict) -> Kernel:
        """The kernel of ``get_config``'s description."""
        return cls(**config)

    def __call__(self, X, X2=None, dtype=tf.float64) -> tf.Tensor:
        """The Gram matrix ``k(X, X2)`` of shape ``(n, m)`` for ``X`` (n, d), ``X2`` (m, d)."""
        X = tf.convert_to_tensor(X, dtype)
        X2 = X if X2 is None else tf.convert_to_tensor(X2, dtype)
        return self.pair(X[:, None, :], X2[None, :, :])

    def __add__(self, other: Kernel) -> Kernel:
        return Sum(self, other)

    def __mul__(self, other: Kernel) -> Kernel:
        return Product(self, other)


def gaussian(z: tf.Tensor) -> tf.Tensor:
    """``exp(-z^2 / 2)``: the squared exponential's profile in one column."""
    return tf.exp(-0.5 * tf.square(z))


def cosine(z: tf.Tensor) -> tf.Tensor:
    """``cos(z)``: the spectral mixture's wave in one column."""
    return tf.cos(z)


def hermite(z: tf.Tensor, order: int) -> list:
    """Hermite's probabilists' polynomials ``[He_0(z), ..., He_order(z)]`` by the
    recurrence ``He_(k+1) = z He_k - k He_(k-1)`` (``z`` real or complex)."""
    out = [tf.ones_like(z), z][: order + 1]
    for k in range(2, order + 1):
        out.append(z * out[-1] - (k - 1) * out[-2])
    return out


def _gaussian_derivatives(z: tf.Tensor, order: int) -> list:
    """``[phi, phi', ..., phi^(order)]`` of ``phi = gaussian``: ``phi^(k) = (-1)^k
    He_k(z) phi``."""
    value = gaussian(z)
    return [(-p if k % 2 else p) * value for k, p in enumerate(hermite(z, order))]


def _cosine_derivatives(z: tf.Tensor, order: int) -> list:
    """``[cos, -sin, -cos, sin, ...]`` at ``z``, up to ``order``."""
    c, s = tf.cos(z), tf.sin(z)
    cycle = (c, -s, -c, s)
    return [cycle[k % 4] for k in range(order + 1)]


#: Closed-form derivatives of the one-column profiles: ``separable_partials`` uses
#: them in place of nested tapes (smaller programs, the same values to rounding).
gaussian.derivatives = _gaussian_derivatives
cosine.derivatives = _cosine_derivatives


def ranges(X: np.ndarray) -> np.ndarray:
    """Each input column's range in the data, 1 where it is 0 (one point, a constant
    column): the scale data-dependent initial values are set from."""
    spread = np.ptp(X, axis=0) if len(X) > 1 else np.ones(X.shape[1])
    return np.where(spread > 0, spread, 1.0)


class Stationary(Kernel):
    """A kernel ``variance * profile(s)`` of the scaled squared distance
    ``s = sum_c ((x1_c - x2_c) / lengthscale_c)^2``.

    Args:
        variance: initial prior variance of u (a positive number), or a
            ``pigp.Parameter`` (e.g. with ``trainable=False`` to fix it).
        lengthscales: initial lengthscales, a number (copied to every input
            dimension), one per dimension, or a Parameter; None picks
            ``0.5 * range`` of the training inputs per dimension at the first fit.
    """

    stationary = True

    def __init__(self, variance: float = 1.0, lengthscales=None, name: str | None = None):
        super().__init__(name=name)
        self.variance = Parameter.of(variance, "variance")
        self._initial_lengthscales = lengthscales
        self.lengthscales = None
        if isinstance(lengthscales, Parameter) or (
            lengthscales is not None and np.ndim(lengthscales) == 1
        ):
            self.lengthscales = Parameter.of(lengthscales, "lengthscales")

    def build(self, X: np.ndarray) -> None:
        d = X.shape[1]
        if self.lengthscales is not None:
            if self.lengthscales.shape != (d,):
                raise ValueError(
                    f"lengthscales: expected {d} values, one per input column, "
                    f"got shape {self.lengthscales.shape}"
                )
            return
        if self._initial_lengthscales is None:
            initial = 0.5 * ranges(X)
        else:
            initial = np.full(d, float(self._initial_lengthscales))
        self.lengthscales = Parameter.of(initial, "lengthscales")

    @property
    def parameters(self) -> dict:
        out = {"variance": self.variance}
        if self.lengthscales is not None:
            out["lengthscales"] = self.lengthscales
        return out

    def get_config(self) -> dict:
        lengthscales = (
            self.lengthscales if self.lengthscales is not None else self._initial_lengthscales
        )
        return {"variance": self.variance, "lengthscales": lengthscales}

    def profile(self, s: tf.Tensor) -> tf.Tensor:
        """The kernel at unit variance as a function of the scaled squared distance."""
        raise NotImplementedError

    def stationary_pair(self, r: tf.Tensor) -> tf.Tensor:
        """``k`` as a function of the difference ``r = x1 - x2`` of shape ``(..., d)``."""
        if self.lengthscales is None:
            raise ValueError(
                f"{type(self).__name__}: lengthscales are not set; pass "
                "lengthscales=... or fit the model first"
            )
        dtype = r.dtype
        scaled = r / self.lengthscales.value(dtype)
        s = tf.reduce_sum(tf.square(scaled), axis=-1)
        return self.variance.value(dtype) * self.profile(s)

    def radial(self, dtype):
        if self.lengthscales is None:
            return None  # stationary_pair says what is missing
        inverse = tf.unstack(1.0 / self.lengthscales.value(dtype))
        return self.variance.value(dtype), inverse, self.profile

    def pair(self, x1, x2):
        return self.stationary_pair(x1 - x2)


class _Combination(Kernel):
    def __init__(self, first: Kernel, second: Kernel):
        super().__init__()
        for kernel in (first, second):
            if not isinstance(kernel, Kernel):
                raise ValueError(f"kernel: expected a pigp.kernels.Kernel, got {kernel!r}")
        self.first, self.second = first, second
        self.stationary = first.stationary and second.stationary
        self.max_order = min(first.max_order, second.max_order)

    def build(self, X):
        self.first.build(X)
        self.second.build(X)

    @property
    def parameters(self) -> dict:
        out = {f"first.{k}": v for k, v in self.first.parameters.items()}
        out.update({f"second.{k}": v for k, v in self.second.parameters.items()})
        return out

    def get_config(self) -> dict:
        return {"first": self.first, "second": self.second}


class Sum(_Combination):
    """``k1 + k2`` (written ``kernel1 + kernel2``)."""

    def pair(self, x1, x2):
        return self.first.pair(x1, x2) + self.second.pair(x1, x2)

    def stationary_pair(self, r):
        return self.first.stationary_pair(r) + self.second.stationary_pair(r)

    def separable(self, dtype):
        first, second = self.first.separable(dtype), self.second.separable(dtype)
        if not self.stationary or first is None or second is None:
            return None
        return first + second


class Product(_Combination):
    """``k1 * k2`` (written ``kernel1 * kernel2``)."""

    def pair(self, x1, x2):
        return self.first.pair(x1, x2) * self.second.pair(x1, x2)

    def stationary_pair(self, r):
        return self.first.stationary_pair(r) * self.second.stationary_pair(r)

    def separable(self, dtype):
        first, second = self.first.separable(dtype), self.second.separable(dtype)
        if not self.stationary or first is None or second is None:
            return None
        return [
            (w1 * w2, [f1 + f2 for f1, f2 in zip(c1, c2)]) for w1, c1 in first for w2, c2 in second
        ]
