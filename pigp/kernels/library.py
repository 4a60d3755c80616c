"""Covariance functions written for one pair of points.

A kernel evaluates ``k(x1, x2)`` on *pair tensors*: ``x1`` and ``x2`` of shape
``(..., d)`` give ``(...)``. Broadcasting over all pairs (the Gram matrix) and
the operator blocks (``pigp.kernels.covariance``) are built on top, so a new kernel
only writes the formula for one pair.

Every kernel here is smooth to all orders at coincident points in the sense the
operators need: squared distances are formed with ``tf.square`` (never ``**2``,
whose third derivative is NaN at 0), and the Matérn kernels switch to their
Taylor series near ``r = 0`` through a double ``tf.where``, so their derivatives
at ``r = 0`` are the exact ones rather than those of a clipped distance.
"""

from __future__ import annotations

import math

import numpy as np

from .._tensorflow import tf
from ..parameters import Parameter
from .base import Kernel, Stationary, cosine, gaussian, ranges

# The public names are listed in the package's ``__init__``.


class SquaredExponential(Stationary):
    """``k = variance * exp(-s / 2)``: smooth to every order.

    ``SquaredExponential.from_weights(amplitude, weights)`` takes the
    parameterisation ``amplitude^2 * exp(-1/2 sum_c w_c (x_c - x'_c)^2)``, the
    weights being inverse squared lengthscales.
    """

    def profile(self, s):
        return tf.exp(-0.5 * s)

    def separable(self, dtype):
        if self.lengthscales is None:
            return None  # stationary_pair says what is missing
        inverse = tf.unstack(1.0 / self.lengthscales.value(dtype))
        return [(self.variance.value(dtype), [[(a, gaussian)] for a in inverse])]

    @classmethod
    def from_weights(cls, amplitude: float, weights) -> SquaredExponential:
        weights = np.asarray(weights, dtype=np.float64)
        return cls(variance=float(amplitude) ** 2, lengthscales=1.0 / np.sqrt(weights))


def _near_zero_threshold(dtype) -> float:
    """Where a Matérn kernel switches to its series: the series' error (~y) and
    the closed form's cancellation error (~eps / y^2) balance at y ~ eps^(1/3)."""
    return float(np.finfo(dtype.as_numpy_dtype).eps) ** (1.0 / 3.0)


class _Matern(Stationary):
    """Half-integer Matérn kernel: ``poly(y) * exp(-y)`` with ``y = sqrt(2 nu s)``.

    Near ``y = 0`` the profile is replaced by its Taylor series in ``y^2``, which
    holds every even term up to the kernel's differentiability: so all
    derivatives the operators may take are exact at ``r = 0`` and finite nearby.
    """

    nu: float
    poly: tuple  # coefficients of poly(y), low order first
    series: tuple  # Taylor coefficients of the profile in w = y^2

    def profile(self, s):
        y2 = 2.0 * self.nu * s
        small = y2 < _near_zero_threshold(s.dtype) ** 2
        # Double where: the closed form never sees y = 0, so its gradient is finite.
        y = tf.sqrt(tf.where(small, tf.ones_like(y2), y2))
        closed = tf.math.polyval([tf.constant(c, s.dtype) for c in self.poly[::-1]], y) * tf.exp(-y)
        near = tf.math.polyval([tf.constant(c, s.dtype) for c in self.series[::-1]], y2)
        return tf.where(small, near, closed)


class Matern52(_Matern):
    """Matérn nu = 5/2: ``(1 + y + y^2/3) e^-y``; twice mean-square differentiable."""

    nu = 2.5
    max_order = 2
    poly = (1.0, 1.0, 1.0 / 3.0)
    series = (1.0, -1.0 / 6.0, 1.0 / 24.0)


class Matern72(_Matern):
    """Matérn nu = 7/2: ``(1 + y + 2y^2/5 + y^3/15) e^-y``; three times differentiable."""

    nu = 3.5
    max_order = 3
    poly = (1.0, 1.0, 2.0 / 5.0, 1.0 / 15.0)
    series = (1.0, -1.0 / 10.0, 1.0 / 120.0, -1.0 / 720.0)


class RationalQuadratic(Stationary):
    """``k = variance * (1 + s / (2 alpha))^-alpha``: smooth to every order.

    Args:
        alpha: the shape (scale mixture) parameter, positive and learned (a
            number or a ``pigp.Parameter``).
    """

    def __init__(
        self, variance: float = 1.0, lengthscales=None, alpha: float = 1.0, name: str | None = None
    ):
        super().__init__(variance, lengthscales, name=name)
        self.alpha = Parameter.of(alpha, "alpha")

    @property
    def parameters(self) -> dict:
        return {**super().parameters, "alpha": self.alpha}

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}

    def profile(self, s):
        alpha = self.alpha.value(s.dtype)
        return tf.exp(-alpha * tf.math.log1p(s / (2.0 * alpha)))


class SpectralMixture(Kernel):
    """The spectral mixture kernel (Wilson and Adams, ICML 2013): smooth to every order.

    ``k(r) = sum_q w_q exp(-1/2 sum_c (r_c / l_qc)^2) prod_c cos(2 pi m_qc r_c)``
    for ``r = x1 - x2``: each of the ``components`` terms is a Gaussian bump in
    the spectral density at frequency ``m_q`` (cycles per unit of each input),
    of width ``1 / (2 pi l_q)``. With every frequency at 0 it is a sum of
    squared exponentials. Learning the frequencies lets the prior match a
    field with dominant oscillations (a Fourier mode in space, a periodic
    forcing), whose spectrum a squared exponential, peaked at frequency 0,
    describes poorly.

    Args:
        components: the number of terms ``Q``.
        weights: initial weights ``w_q`` (positive), a number (shared) or ``Q``
            values; default ``1 / Q`` each.
        lengthscales: initial ``l_qc``, a number, ``d`` values (every component)
            or a ``(Q, d)`` array; None picks ``0.5 * range`` per input dimension.
        frequencies: initial ``m_qc`` (positive), a number, ``d`` values or a
            ``(Q, d)`` array; None picks ``(q + 1) / (2 * range)`` for component
            ``q = 0 .. Q-1``: half a cycle, a cycle, ... over the data's extent.

    The likelihood has local optima in the frequencies; starting them at the
    half cycle leaves the search to the optimiser, which on the problems in
    the docs found the field's frequency from starts between 0.1 and 2 cycles
    per unit. A frequency at exactly 0 stays there (the gradient of the cosine
    vanishes), so the defaults are positive.
    """

    stationary = True

    def __init__(
        self,
        components: int = 1,
        weights=None,
        lengthscales=None,
        frequencies=None,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if not isinstance(components, (int, np.integer)) or components < 1:
            raise ValueError(f"components: expected a positive integer, got {components!r}")
        self.components = int(components)
        if isinstance(weights, Parameter):
            if weights.shape != (self.components,):
                raise ValueError(
                    f"weights: expected a Parameter of shape ({self.components},), "
                    f"got {weights.shape}"
                )
            self.weights = Parameter.of(weights, "weights")
        else:
            if weights is None:
                weights = 1.0 / self.components
            weights = np.asarray(weights, dtype=np.float64)
            if weights.ndim > 1 or weights.size not in (1, self.components):
                raise ValueError(
                    f"weights: expected a number or {self.components} values, "
                    f"got shape {weights.shape}"
                )
            self.weights = Parameter.of(
                np.array(np.broadcast_to(weights, (self.components,))), "weights"
            )
        self._initial = {}
        for name, given in (("lengthscales", lengthscales), ("frequencies", frequencies)):
            if given is None or isinstance(given, Parameter):
                continue
            given = np.asarray(given, dtype=np.float64)
            if given.ndim > 2 or (given.ndim == 2 and given.shape[0] != self.components):
                raise ValueError(
                    f"{name}: expected a number, one value per input or a "
                    f"({self.components}, d) array, got shape {given.shape}"
                )
            if not (np.all(np.isfinite(given)) and np.all(given > 0)):
                raise ValueError(f"{name}: expected finite positive values, got {given}")
            self._initial[name] = given
        self.lengthscales, self.frequencies = (
            Parameter.of(given, name) if isinstance(given, Parameter) else None
            for name, given in (("lengthscales", lengthscales), ("frequencies", frequencies))
        )

    def build(self, X: np.ndarray) -> None:
        d = X.shape[1]
        spread = ranges(X)
        defaults = {
            "lengthscales": np.tile(0.5 * spread, (self.components, 1)),
            "frequencies": np.arange(1, self.components + 1)[:, None] / (2.0 * spread),
        }
        values = {}
        for name, default in defaults.items():
            current = getattr(self, name)
            if current is not None:
                if current.shape != (self.components, d):
                    raise ValueError(
                        f"{name}: expected shape ({self.components}, {d}), "
                        f"one row per component and a column per input, "
                        f"got {current.shape}"
                    )
                continue
            given = self._initial.get(name)
            if given is not None and given.ndim >= 1 and given.shape[-1] != d:
                raise ValueError(
                    f"{name}: expected a number, {d} values or a "
                    f"({self.components}, {d}) array, got shape {given.shape}"
                )
            values[name] = (
                default if given is None else np.array(np.broadcast_to(given, (self.components, d)))
            )
        # Checked both: only now create the parameters.
        for name, value in values.items():
            setattr(self, name, Parameter.of(value, name))

    @property
    def parameters(self) -> dict:
        out = {"weights": self.weights}
        for name in ("lengthscales", "frequencies"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def get_config(self) -> dict:
        config = {"components": self.components, "weights": self.weights}
        for name in ("lengthscales", "frequencies"):
            current = getattr(self, name)
            config[name] = current if current is not None else self._initial.get(name)
        return config

    def stationary_pair(self, r: tf.Tensor) -> tf.Tensor:
        if self.lengthscales is None:
            raise ValueError(
                "SpectralMixture: lengthscales and frequencies are not set; "
                "fit the model first or call build(X)"
            )
        dtype = r.dtype
        weights = tf.unstack(self.weights.value(dtype))
        lengthscales = tf.unstack(self.lengthscales.value(dtype))
        frequencies = tf.unstack(self.frequencies.value(dtype))
        columns = tf.unstack(r, axis=-1)
        total = 0.0
        # Written per component and column with plain products: the derivative
        # graphs the operators take of this stay small (reduce_prod's are not).
        for weight, scale, frequency in zip(weights, lengthscales, frequencies):
            scale, frequency = tf.unstack(scale), tf.unstack(frequency)
            exponent, wave = 0.0, 1.0
            for c, column in enumerate(columns):
                exponent += tf.square(column / scale[c])
                wave *= tf.cos((2.0 * np.pi) * frequency[c] * column)
            total += weight * tf.exp(-0.5 * exponent) * wave
        return total

    def separable(self, dtype):
        if self.lengthscales is None:
            return None
        out = []
        for weight, inverse, angular in zip(
            tf.unstack(self.weights.value(dtype)),
            tf.unstack(1.0 / self.lengthscales.value(dtype)),
            tf.unstack((2.0 * np.pi) * self.frequencies.value(dtype)),
        ):
            columns = [
                [(a, gaussian), (w, cosine)]
                for a, w in zip(tf.unstack(inverse), tf.unstack(angular))
            ]
            out.append((weight, columns))
        return out

    def pair(self, x1, x2):
        return self.stationary_pair(x1 - x2)


class Custom(Kernel):
    """A kernel from a TensorFlow function of one pair of points.

    Args:
        function: ``function(x1, x2, **values)`` on pair tensors of shape
            ``(..., d)`` returning shape ``(...)``; ``values`` are the parameters'
            current values as tensors of the inputs' dtype.
        parameters: ``{name: Parameter or initial positive value}``.
        stationary: set True only if ``function`` depends on ``x1 - x2`` alone.
        max_order: derivatives each argument can take (``inf`` for a smooth one).

    Everything in ``function`` must be differentiable at ``x1 == x2`` to the
    order the operators need: write squares as ``tf.square(a)``, not ``a**2``.
    """

    def __init__(
        self,
        function,
        parameters: dict | None = None,
        stationary: bool = False,
        max_order: float = math.inf,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if not callable(function):
            raise ValueError(f"function: expected a callable (x1, x2, **values), got {function!r}")
        self.function = function
        self._parameters = {k: Parameter.of(v, k) for k, v in (parameters or {}).items()}
        self.stationary = bool(stationary)
        self.max_order = max_order

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    def get_config(self) -> dict:
        return {
            "function": self.function,
            "parameters": dict(self._parameters),
            "stationary": self.stationary,
            "max_order": None if math.isinf(self.max_order) else self.max_order,
        }

    @classmethod
    def from_config(cls, config: dict) -> Custom:
        config = dict(config)
        if config.get("max_order") is None:
            config["max_order"] = math.inf
        return cls(**config)

    def pair(self, x1, x2):
        values = {k: p.value(x1.dtype) for k, p in self._parameters.items()}
        return self.function(x1, x2, **values)

    def stationary_pair(self, r):
        return self.pair(r, tf.zeros_like(r))


class Warped(Kernel):
    """A kernel on warped inputs: ``k(x1, x2) = base(w(x1), w(x2))``, each column
    ``c`` through its own increasing map ``w_c`` (or none).

    A steep front (a shock, a boundary layer) needs short lengthscales where it is
    and long ones elsewhere, which no stationary kernel has; a warp that stretches
    the inputs around the front gives both. The warps' parameters are learned with
    the base kernel's. Operator blocks take the base kernel's derivatives in the
    warped inputs (its closed forms where it has them) and the warps' own
    derivatives at the points, combined by Faa di Bruno's formula: ``d^m/dx^m
    k(w(x)) = sum_j B_mj(w', w'', ...) d^j k/dw^j`` with ``B_mj`` the partial Bell
    polynomials, so nothing is differentiated through the pair of points.

    Args:
        kernel: the base kernel, of the warped inputs.
        warps: one entry per input column: ``None`` (not warped) or a function
            ``warp(x, **values)`` of a tensor of that column's values (and the
            parameters' current values) returning a tensor of the same shape,
            smooth and increasing.
        parameters: ``{name: Parameter or initial positive value}`` for the warps.
        inputs: for each column, the input columns its warp takes, in order
            (``warp(x_a, x_b, ..., **values)``), its own among them; default its
            own alone. A front that steepens in time warps x by a map of x and t:
            ``inputs=[(0, 1), None]``. The operator blocks then follow the chain
            rule through every column the warps read.

    ``pigp.kernels.tanh_front`` is a warp for a front at a known position;
    ``pigp.kernels.steepening_front`` one for a front that narrows in time;
    ``pigp.kernels.forming_front`` one for a front that forms and then keeps its width.
    """

    stationary = False

    def __init__(
        self, kernel: Kernel, warps, parameters: dict | None = None, inputs=None, name=None
    ):
        super().__init__(name=name)
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel: expected a pigp.kernels.Kernel, got {kernel!r}")
        if isinstance(kernel, Fields):
            raise ValueError("kernel: warp each field's kernel, not Fields")
        warps = list(warps) if isinstance(warps, (list, tuple)) else None
        if not warps or not all(w is None or callable(w) for w in warps):
            raise ValueError(
                "warps: expected a list with one entry per input column, each None "
                "or a function warp(x, **values)"
            )
        d = len(warps)
        if inputs is None:
            inputs = [None] * d
        if not isinstance(inputs, (list, tuple)) or len(inputs) != d:
            raise ValueError(
                f"inputs: expected a list with one entry per column ({d}), got {inputs!r}"
            )
        reads = []
        for c, entry in enumerate(inputs):
            entry = (c,) if entry is None or warps[c] is None else entry
            if isinstance(entry, np.ndarray) and entry.ndim == 1:
                entry = entry.tolist()
            if (
                not isinstance(entry, (list, tuple))
                or not all(
                    isinstance(j, (int, np.integer)) and not isinstance(j, bool) and 0 <= j < d
                    for j in entry
                )
                or len(set(entry)) != len(entry)
                or c not in entry
            ):
                raise ValueError(
                    f"inputs: column {c}'s entry must be distinct column indices in "
                    f"[0, {d}) including {c} (its own), got {inputs[c]!r}"
                )
            reads.append(tuple(int(j) for j in entry))
        self.kernel = kernel
        self.warps = warps
        #: Per column, the columns its warp reads (its own alone where not given).
        self.inputs = reads
        self._parameters = {k: Parameter.of(v, k) for k, v in (parameters or {}).items()}
        self.max_order = kernel.max_order

    def build(self, X):
        if X.shape[1] != len(self.warps):
            raise ValueError(
                f"warps: expected one entry per input column ({X.shape[1]}), got {len(self.warps)}"
            )
        self.kernel.build(self.warp(tf.constant(X, tf.float64)).numpy())

    @property
    def parameters(self) -> dict:
        out = {f"kernel.{k}": v for k, v in self.kernel.parameters.items()}
        out.update(self._parameters)
        return out

    def get_config(self) -> dict:
        config = {"kernel": self.kernel, "warps": self.warps, "parameters": dict(self._parameters)}
        if not self.own_columns:
            config["inputs"] = [list(entry) for entry in self.inputs]
        return config

    @property
    def own_columns(self) -> bool:
        """Whether every warp reads its own column alone."""
        return all(entry == (c,) for c, entry in enumerate(self.inputs))

    def warp_column(self, c: int, *columns: tf.Tensor) -> tf.Tensor:
        """Column ``c``'s warp at the values ``columns`` of the columns it reads
        (``inputs[c]``, in order)."""
        if self.warps[c] is None:
            return columns[0]
        values = {k: p.value(columns[0].dtype) for k, p in self._parameters.items()}
        return self.warps[c](*columns, **values)

    def warp(self, X: tf.Tensor) -> tf.Tensor:
        """The warped points of ``X`` (..., d)."""
        d = X.shape[-1]
        return tf.stack(
            [self.warp_column(c, *[X[..., j] for j in self.inputs[c]]) for c in range(d)],
            axis=-1,
        )

    def pair(self, x1, x2):
        return self.kernel.pair(self.warp(x1), self.warp(x2))


class Decaying(Kernel):
    """A field whose amplitude changes exponentially along one column:
    ``u(x) = exp(-rate * x_c) g(x)`` with ``g ~ GP(0, kernel)``, so
    ``k(x1, x2) = exp(-rate * (x1_c + x2_c)) kernel(x1, x2)``.

    The solutions of a diffusion equation decay in time at the rates of their
    modes; a stationary kernel gives every time the same variance and the same
    typical ``u_t`` for a given ``u``, and its posterior shrinks ``u_t`` of a
    decaying field towards 0. Learning ``rate`` (either sign: growth is
    ``rate < 0``) lets the prior say that ``u_t`` follows ``-rate * u``. With
    ``rate = 0`` the kernel is ``kernel`` itself.

    Operator blocks take the base kernel's derivatives (its closed forms where it
    has them) and the amplitude's, ``d^j/ds^j exp(-rate s) = (-rate)^j exp(-rate s)``,
    combined by Leibniz's rule.

    Args:
        kernel: the base kernel of ``g``, e.g. ``SquaredExponential()``.
        column: the index of the column the amplitude changes along (default 1:
            ``t`` in ``(x, t)``).
        rate: the initial rate (default 0) or a ``Parameter``; learned, signed.
    """

    stationary = False

    def __init__(self, kernel: Kernel, column: int = 1, rate=0.0, name: str | None = None):
        super().__init__(name=name)
        if not isinstance(kernel, Kernel) or isinstance(kernel, Fields):
            raise ValueError(f"kernel: expected a pigp.kernels.Kernel of one field, got {kernel!r}")
        if isinstance(column, bool) or not isinstance(column, (int, np.integer)) or column < 0:
            raise ValueError(f"column: expected a column index >= 0, got {column!r}")
        if not isinstance(rate, Parameter):
            rate = float(rate)
            if not np.isfinite(rate):
                raise ValueError(f"rate: expected a finite number or a Parameter, got {rate!r}")
            rate = Parameter(rate, positive=False, name="rate")
        self.kernel = kernel
        self.column = int(column)
        self.rate = rate
        self.max_order = kernel.max_order

    def build(self, X):
        if self.column >= X.shape[1]:
            raise ValueError(
                f"column: expected an index below the inputs' {X.shape[1]} columns, "
                f"got {self.column}"
            )
        self.kernel.build(X)

    @property
    def parameters(self) -> dict:
        out = {f"kernel.{k}": v for k, v in self.kernel.parameters.items()}
        out["rate"] = self.rate
        return out

    def get_config(self) -> dict:
        return {"kernel": self.kernel, "column": self.column, "rate": self.rate}

    def amplitude(self, x: tf.Tensor) -> tf.Tensor:
        """``exp(-rate * x_c)`` at points ``x`` (..., d)."""
        return tf.exp(-self.rate.value(x.dtype) * x[..., self.column])

    def pair(self, x1, x2):
        return self.amplitude(x1) * self.amplitude(x2) * self.kernel.pair(x1, x2)


def tanh_front(x, strength, width, center=0.0):
    """``x + strength * tanh((x - center) / width)``: stretches the inputs by up to
    ``1 + strength / width`` within about ``width`` of ``center`` (a warp for
    ``Warped``; ``strength`` and ``width`` are its parameters, ``center`` fixed
    unless it is a parameter too)."""
    return x + strength * tf.tanh((x - center) / width)


def steepening_front(x, t, strength, width, rate, center=0.0):
    """``x + strength * tanh((x - center) / (width * exp(-rate * t)))``: ``tanh_front``
    with a width that shrinks by ``exp(-rate t)``, for a front that steepens as time
    goes on (Burgers' shock forming); a warp of column x that reads x and t
    (``Warped(..., inputs=[(0, 1), None])`` for inputs ``(x, t)``)."""
    return x + strength * tf.tanh((x - center) / (width * tf.exp(-rate * t)))


def forming_front(x, t, strength, width, rate, ratio=4.0, center=0.0):
    """``x + strength * tanh((x - center) / (width * (1 + ratio * exp(-rate * t))))``:
    ``tanh_front`` with a width that starts at ``(1 + ratio) width`` and settles to
    ``width`` at rate ``rate``, for a front that forms and then keeps its width
    (Burgers' shock, where steepening and viscosity balance); a warp of column x that
    reads x and t (``Warped(..., inputs=[(0, 1), None])`` for inputs ``(x, t)``)."""
    return x + strength * tf.tanh((x - center) / (width * (1.0 + ratio * tf.exp(-rate * t))))


class Fields(Kernel):
    """Independent Gaussian-process priors on several latent fields, one kernel each.

    With fields ``g_f ~ GP(0, k_f)`` and every observed quantity a sum of linear
    operators on them, ``y = sum_f L_f g_f``, the covariance of two quantities is the
    sum over fields of the single-field blocks: ``cov(y_i, y_j) = sum_f L_i,f L'_j,f
    k_f`` (``pigp.kernels.covariance.block``). Operators name the field they act on
    (``pigp.operators.field``). ``PIGP({"psi": k1, "p": k2}, ...)`` builds this.

    Args:
        kernels: ``{field name: Kernel}``, at least one; the names are identifiers
            (``"u"``, ``"psi"``), and the parameters appear as ``"NAME.variance"``...
    """

    def __init__(self, kernels: dict, name: str | None = None):
        super().__init__(name=name)
        if not isinstance(kernels, dict) or not kernels:
            raise ValueError(
                "kernels: expected a dict from field names to kernels, e.g. "
                f"{{'psi': SquaredExponential(), 'p': SquaredExponential()}}, got {kernels!r}"
            )
        for field, kernel in kernels.items():
            if not (isinstance(field, str) and field.isidentifier()):
                raise ValueError(
                    f"kernels: expected field names that are identifiers, got {field!r}"
                )
            if not isinstance(kernel, Kernel) or isinstance(kernel, Fields):
                raise ValueError(
                    f"kernels[{field!r}]: expected a pigp.kernels.Kernel of one field, "
                    f"got {kernel!r}"
                )
        self.kernels = dict(kernels)
        self.max_order = min(k.max_order for k in self.kernels.values())

    @property
    def names(self) -> tuple:
        """The field names, in the order given."""
        return tuple(self.kernels)

    def build(self, X):
        for kernel in self.kernels.values():
            kernel.build(X)

    @property
    def parameters(self) -> dict:
        return {
            f"{field}.{k}": v
            for field, kernel in self.kernels.items()
            for k, v in kernel.parameters.items()
        }

    def get_config(self) -> dict:
        return {"kernels": dict(self.kernels)}

    def pair(self, x1, x2):
        raise ValueError(
            "Fields: a prior on several fields has no single k(x1, x2); covariances are "
            "sums over fields of operator blocks (pigp.kernels.covariance.block with terms that "
            "name their fields), e.g. model.covariance(X, output=...)"
        )


def field_names(kernel) -> tuple | None:
    """The field names of a prior on several fields (``Fields``), None for one field:
    what ``pigp.operators.Operator.resolve`` takes as ``fields``."""
    return kernel.names if isinstance(kernel, Fields) else None
