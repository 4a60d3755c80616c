"""Data sets: noisy observations ``y = (L u)(X) + noise`` of one operator each.

Every data set a model sees is an ``Observations``, each owning its noise: the
u values (``X_u, y_u``; operator ``Identity``) and the f values (``X_f, y_f``;
the model's operator) become the sets ``"u"`` and ``"f"`` at the model's edge
(``pigp.engines.model.Model``), beside any boundary, initial or Neumann data. ``prepare``
validates them all once, resolves each operator against the input columns and
picks the scale the targets are divided by, and returns an immutable ``Data``
that is passed on as an argument to the covariance, the objective and the
posterior; nothing from there on knows which set came from which argument.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validation as check
from ._tensorflow import tf
from ._warnings import warn
from .kernels.covariance import check_smoothness
from .kernels.library import field_names
from .operators.linear import Identity, Operator
from .parameters import Parameter

__all__ = [
    "Observations",
    "DataSet",
    "Data",
    "prepare",
    "noise_parameter",
    "RESERVED_NAMES",
    "NOISE_START",
]

#: Names of the data sets ``fit``'s ``X_u, y_u`` and ``X_f, y_f`` make, and of the
#: outputs ``predict(output="u")`` and ``predict(output="f")``: no ``Observations``
#: may take them.
RESERVED_NAMES = ("u", "f")

#: The initial noise variance (standardised units) of a data set whose noise is not given.
NOISE_START = 1e-3

#: What an exact data set's noise variance is pinned to by ``pin_exact``: its variable
#: far enough below 0 that the softplus rounds to exactly 0.
PINNED = -1000.0


def noise_parameter(noise, name: str) -> tuple:
    """``(Parameter, decided_by_fit)``: the noise variance parameter of a data set.

    Args:
        noise: None (the default: learned from ``NOISE_START``, and ``fit`` decides
            whether the data are exact, see ``pigp.fitting.FitPlan.exact_evidence``); ``0``: the
            data are exact (the variance is 0, not learned; the covariance's diagonal
            keeps only its jitter); a positive number: the initial value, learned; a
            ``pigp.Parameter`` (``trainable=False`` fixes it).
        name: the parameter's name.

    Raises:
        ValueError: a negative or non-finite number, or a Parameter that is not positive.
    """
    if noise is None:
        return Parameter(NOISE_START, positive=True, name=name), True
    if isinstance(noise, Parameter):
        return noise.settle(True, name), False
    if isinstance(noise, (int, float, np.integer, np.floating)) and not isinstance(noise, bool):
        if noise == 0:
            return Parameter(0.0, positive=False, trainable=False, name=name), False
        if np.isfinite(noise) and noise > 0:
            return Parameter(noise, positive=True, name=name), False
    raise ValueError(
        f"{name}: expected None (learned; fit decides whether the data are exact), 0 "
        f"(exact data), a positive initial variance or a pigp.Parameter, got {noise!r}"
    )


def pin_exact(noise: Parameter, fix: bool = True) -> None:
    """Set a positive noise variance to exactly 0 (the data are treated as exact) and,
    with ``fix``, make it not trainable."""
    noise.unconstrained.assign(np.full(noise.shape, PINNED))
    if fix:
        noise.trainable = False


def unpin(noise: Parameter) -> None:
    """Undo ``pin_exact``: the noise learned again from ``NOISE_START`` (nothing
    changes for a noise ``pin_exact`` did not fix)."""
    if not noise.trainable and bool(np.all(noise.unconstrained.numpy() == PINNED)):
        noise.assign(NOISE_START)
        noise.trainable = True


class Observations:
    """Noisy observations of ``L u`` at points ``X``.

    Args:
        X: array of shape (n, d), the points.
        y: array of shape (n,) or (n, 1), the observed values of ``L u``.
        operator: ``Identity`` for values of u (Dirichlet, initial data), the PDE
            operator for forcing data, ``D("x")`` or a normal derivative for
            Neumann data.
        noise: None (default: learned, and ``fit`` keeps the data exact when they
            show no noise), ``0`` for exact data, a positive initial variance
            (learned) or a ``pigp.Parameter`` (``trainable=False`` fixes it); in
            standardised units (see ``pigp.PIGP``).
        name: a label for ``parameter_values()``, ``predict(output=name)`` and
            errors; distinct from the other sets' names and from ``"u"`` and
            ``"f"``, which name the ``X_u``/``X_f`` data.
        labels: what error messages call ``X`` and ``y`` (default ``NAME.X``
            and ``NAME.y``; ``fit``'s u data are ``X_u`` and ``y_u``).
        condition: whether the set conditions the prior without being evidence for
            the parameters: the objective is ``-log p(other sets | this one)``, the
            set's own marginal density ``p(y_set)`` left out (the posterior and
            predictions are the same). For a homogeneous equation (``L u = 0`` at
            collocation points, all targets 0) whose noise is 0 or learned, that
            density grows without bound as the kernel variance shrinks, and a fit on
            it ends at ``u = 0``; conditioned on, the equation shapes the prior of the
            other data instead. At least one set must be left as evidence.

    Attributes:
        noise: the noise variance, a ``pigp.Parameter``.
        noise_decided_by_fit: whether ``fit`` decides between a learned noise and
            exact data (``noise`` was None).
    """

    def __init__(
        self,
        X,
        y,
        operator: Operator = Identity,
        noise=None,
        name: str = "data",
        labels: tuple | None = None,
        condition: bool = False,
    ):
        if not isinstance(operator, Operator):
            raise ValueError(f"operator: expected a pigp.operators.Operator, got {operator!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"name: expected a non-empty string, got {name!r}")
        if not isinstance(condition, (bool, np.bool_)):
            raise ValueError(f"condition: expected True or False, got {condition!r}")
        self.condition = bool(condition)
        self.labels = (f"{name}.X", f"{name}.y") if labels is None else tuple(labels)
        x_name, y_name = self.labels
        X = check.as_inputs(x_name, X)
        self.X, self.y = X, check.as_targets(y_name, y, len(X), x_name)
        self.operator = operator
        self.name = name
        self.noise, self.noise_decided_by_fit = noise_parameter(noise, f"noise_{name}")

    def __repr__(self) -> str:
        return f"Observations(name={self.name!r}, operator={self.operator!r})"


@dataclass(frozen=True)
class DataSet:
    """One validated data set.

    Attributes:
        name: ``"u"``, ``"f"`` or the observation set's name.
        X: float64 array of shape (n, d).
        y: float64 array of shape (n,), in data units.
        operator: the operator observed.
        terms: the operator resolved against the columns of X,
            ``((Coefficient, multi_index), ...)``.
        noise: the noise variance parameter (in standardised units).
        noise_decided_by_fit: whether ``fit`` decides between a learned noise and
            exact data (the noise was not given).
        condition: whether the objective conditions on the set instead of counting
            its marginal density (see ``Observations``).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    operator: Operator
    terms: tuple
    noise: Parameter
    noise_decided_by_fit: bool = False
    condition: bool = False


@dataclass(frozen=True)
class Data:
    """The data sets of one fit and the scale their targets are divided by.

    Attributes:
        sets: the ``DataSet`` objects, in the order of the joint covariance.
        y_scale: ``c``: every target is divided by it before training.
    """

    sets: tuple
    y_scale: float

    @property
    def input_dim(self) -> int:
        return self.sets[0].X.shape[1]

    @property
    def sizes(self) -> list:
        return [len(s.X) for s in self.sets]

    @property
    def names(self) -> list:
        return [s.name for s in self.sets]

    def get(self, name: str):
        """The data set called ``name``, or None."""
        return next((s for s in self.sets if s.name == name), None)

    def tensors(self, dtype) -> tuple:
        """``(Xs, y)``: a tuple of input tensors, one per set, and all standardised
        targets ``y / c`` concatenated, shape (N,)."""
        Xs = tuple(tf.constant(s.X, dtype) for s in self.sets)
        y = tf.constant(np.concatenate([s.y / self.y_scale for s in self.sets]), dtype)
        return Xs, y


def data_set(
    name: str,
    X,
    y,
    operator: Operator,
    noise: Parameter,
    kernel,
    input_dim=None,
    dims=None,
    x_name: str = "X",
    y_name: str = "y",
    noise_decided_by_fit: bool = False,
    condition: bool = False,
) -> DataSet:
    """One validated ``DataSet``; ``ValueError`` naming ``x_name``/``y_name`` if not."""
    if X is None or y is None:
        missing = x_name if X is None else y_name
        raise ValueError(
            f"{missing}: expected an array (both {x_name} and {y_name} are needed), got None"
        )
    X = check.as_inputs(x_name, X, input_dim)
    y = check.as_targets(y_name, y, len(X), x_name)
    terms = tuple(operator.resolve(X.shape[1], dims, field_names(kernel)))
    check_smoothness(kernel, terms, x_name)
    return DataSet(name, X, y, operator, terms, noise, noise_decided_by_fit, bool(condition))


#: ``target_scale``: a nonlinear model's scaled sets whose targets are all below this
#: fraction of the largest target hold zeros up to rounding.
ZERO_UP_TO = 1e-12


def target_scale(sets, standardize: bool = True, without=()) -> float:
    """``c``: the root mean square of the first set's targets (the u data when there
    are any), of all targets when those are all 0; 1 when ``standardize`` is off.

    ``without``: names of sets whose targets do not scale with u (a nonlinear
    equation's right-hand side): those sets are passed over, so ``c`` is the root mean
    square of the first other set's targets (the u data when there are any), of all the
    other sets' when those are 0, and 1 where there are no others or all theirs are 0 up
    to rounding (at most 1e-12 of the largest target of all sets: ``sin(pi)`` on a
    Dirichlet boundary is zero data, not a scale).

    Computed as ``max|y| * rms(y / max|y|)`` where squaring ``y`` itself would
    overflow or underflow (``|y|`` beyond ~1e150 or below ~1e-150), so any finite
    targets have a finite, positive scale.
    """
    if not standardize:
        return 1.0
    scaled = [s.y for s in sets if s.name not in without]
    if not scaled:
        return 1.0
    candidates = [scaled[0], np.concatenate(scaled)]
    if without:
        largest = max(float(np.max(np.abs(s.y))) for s in sets)
        candidates = [y for y in candidates if np.max(np.abs(y)) > ZERO_UP_TO * largest]
    for y in candidates:
        with np.errstate(over="ignore", under="ignore"):
            rms = float(np.sqrt(np.mean(np.square(y))))
        if not 1e-150 < rms < 1e150:
            peak = float(np.max(np.abs(y)))
            rms = peak * float(np.sqrt(np.mean(np.square(y / peak)))) if peak > 0 else 0.0
        if rms > 0:
            return rms
    return 1.0


def check_targets(sets, y_names) -> None:
    """Refuse targets that are all 0 and warn about targets that are all equal: the
    marginal likelihood cannot learn a scale or a variation from them."""
    y = np.concatenate([s.y for s in sets])
    names = ", ".join(y_names)
    if not np.any(y):
        raise ValueError(
            f"{names}: every target is 0, so the model cannot learn a scale from "
            "them (the kernel variance would collapse towards 0); give data with "
            "some non-zero values"
        )
    if len(y) > 1 and np.all(y == y[0]):
        warn(
            f"{names}: the targets are all equal ({y[0]:g}): the model cannot learn "
            "how the field varies from them, only a constant"
        )


def prepare(
    kernel,
    observations,
    dims=None,
    input_dim: int | None = None,
    standardize: bool = True,
    scale_without=(),
) -> Data:
    """Validate every data set of a fit and return them as one ``Data``.

    Args:
        kernel: checked to be smooth enough for each set's operator.
        observations: the ``Observations``, in the order of the joint covariance;
            each keeps its own noise parameter and its ``noise_decided_by_fit``.
        dims: column names for operators that declare none.
        input_dim: the number of input columns expected (None: the first set's).
        standardize: divide targets by the RMS of the first set's targets.
        scale_without: names of sets left out of that RMS (``target_scale``).

    Raises:
        ValueError: naming the argument, before anything is changed.
    """
    observations = list(observations)
    if not observations:
        raise ValueError("observations: expected at least one data set, got none")
    names = [obs.name for obs in observations]
    if len(set(names)) != len(names):
        raise ValueError(f"observations: names must be distinct, got {names}")
    sets = []
    for obs in observations:
        x_name, y_name = obs.labels
        sets.append(
            data_set(
                obs.name,
                obs.X,
                obs.y,
                obs.operator,
                obs.noise,
                kernel,
                input_dim,
                dims,
                x_name,
                y_name,
                obs.noise_decided_by_fit,
                obs.condition,
            )
        )
        input_dim = sets[-1].X.shape[1]
    check_targets(sets, [obs.labels[1] for obs in observations])
    if all(s.condition for s in sets):
        raise ValueError(
            f"observations: every set ({names}) has condition=True: leave at least one as "
            "evidence for the parameters"
        )
    return Data(tuple(sets), target_scale(sets, standardize, tuple(scale_without)))
