"""Nonlinear equations by Gauss-Newton kernel collocation.

An equation ``F(L_1 u, ..., L_m u) = f`` (``pigp.operators.nonlinear``) is solved
as Chen, Hosseini, Owhadi and Stuart (J. Comput. Phys. 447, 110668, 2021) solve
it: linearise ``F`` at the current feature values ``v_k = (L_a u_k)(x)`` at the
collocation points,

    sum_a c_a(x) L_a u(x) = f(x) - F(v_k(x)) + sum_a c_a(x) v_a,k(x),
    c_a(x) = dF/dv_a (v_k(x)),

condition the GP on that linear equation (a linear operator whose coefficients
vary from point to point, ``Linearised``) and on the other data sets, read
``v_{k+1}`` from the posterior mean, and repeat. The partial derivatives are
taken by a tape inside the compiled programs, from the stored ``v_k`` and the
equation's parameters, so the marginal likelihood of the linearised model is
differentiable in every parameter, a learnable coefficient of the equation
included: ``solve`` learns them on the linearised model between Gauss-Newton
steps (the right-hand side held at each linearisation).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from ._tensorflow import tf
from .data import Data
from .objective import gaussian_nll
from .operators import Nonlinear, Operator
from .parameters import Coefficient

__all__ = ["Linearisation", "Linearised", "check_equation", "solve", "Step"]

#: ``learn="auto"``: the parameters are learned at an iteration whose linearisation
#: point moved by less than this (relative change of u) in the step before: near a
#: fixed point of the current parameters, not on the way to it.
LEARN_NEAR = 1e-2

#: ``learn="auto"``: at most this many learning phases; learning stops sooner, after a
#: phase whose step changed u by less than ``LEARN_UNTIL``.
LEARN_PHASES = 3

#: ``learn="until"``: the parameters are learned at each iteration until the relative
#: change of the solution falls below this.
LEARN_UNTIL = 1e-3


class _Partial:
    """``dF/dv_a`` at the collocation points: a coefficient function of the linearised
    operator (never evaluated at other points)."""

    def __init__(self, linearisation: Linearisation, index: int):
        self.linearisation = linearisation
        self.index = index
        self.__name__ = f"dF/d{linearisation.names[index]}"

    @property
    def parameters(self) -> tuple:
        return tuple(self.linearisation.equation.parameters)

    def __call__(self, X):
        n = self.linearisation.size
        if X.shape[0] is not None and int(X.shape[0]) != n:
            raise ValueError(
                f"the linearised equation's coefficients are known at its {n} collocation "
                f"points only, asked at {int(X.shape[0])}"
            )
        return self.linearisation.jacobian(X.dtype)[self.index]


class Linearisation:
    """An equation linearised at feature values ``v_k`` at n collocation points.

    Args:
        equation: the ``Nonlinear`` equation.
        values: the feature values, array of shape (m, n) in the order of
            ``equation.features``.
        dtype: the dtype of the stored values.

    Attributes:
        values: a ``tf.Variable`` (m, n) that ``assign`` updates; programs read it.
        operator: the linearised operator ``sum_a c_a(x) L_a`` (a ``Linearised``).
    """

    def __init__(self, equation: Nonlinear, values, dtype=tf.float64):
        values = np.asarray(values, dtype=np.float64)
        self.equation = equation
        self.names = list(equation.features)
        if values.ndim != 2 or values.shape[0] != len(self.names):
            raise ValueError(f"values: expected shape ({len(self.names)}, n), got {values.shape}")
        self.size = values.shape[1]
        self.values = tf.Variable(values, dtype=dtype, trainable=False)
        self.partials = [_Partial(self, a) for a in range(len(self.names))]
        self.operator = Linearised(self)

    def assign(self, values) -> None:
        self.values.assign(np.asarray(values, dtype=self.values.dtype.as_numpy_dtype))

    def jacobian(self, dtype=tf.float64) -> list:
        """``[dF/dv_a]``: per feature, the partial derivatives at the n points, (n,) each,
        with the parameters' current (or substituted) values."""
        return self._residual_and_partials(tf.cast(self.values, dtype), dtype)[1]

    def _residual_and_partials(self, values, dtype) -> tuple:
        """``F`` at the feature values ``values`` (m, n) and its partials by a tape."""
        columns = tf.unstack(values, num=len(self.names))
        p = {k: q.value(dtype) for k, q in self.equation.parameters_by_name.items()}
        with tf.GradientTape() as tape:
            tape.watch(columns)
            residual = tf.convert_to_tensor(
                self.equation.residual(dict(zip(self.names, columns)), p), dtype
            )
        partials = tape.gradient(
            residual, columns, unconnected_gradients=tf.UnconnectedGradients.ZERO
        )
        return residual, partials, columns

    def right_hand_side(self, y: np.ndarray) -> np.ndarray:
        """``f - F(v_k) + sum_a c_a v_a,k`` at the n points, for data ``y = f``."""
        values = tf.constant(self.values.numpy(), tf.float64)
        residual, partials, columns = self._residual_and_partials(values, tf.float64)
        linear = tf.add_n([c * v for c, v in zip(partials, columns)])
        return np.asarray(y, np.float64) - residual.numpy() + linear.numpy()


class Linearised(Operator):
    """The operator ``sum_a dF/dv_a(v_k(x)) L_a`` of a ``Linearisation``: a linear
    operator whose coefficients vary from point to point, known at the collocation
    points. Saved as its equation and the feature values it was linearised at."""

    def __init__(self, linearisation: Linearisation):
        equation = linearisation.equation
        terms = []
        for partial, name in zip(linearisation.partials, linearisation.names):
            for c, orders, _ in equation.features[name].terms:
                terms.append((Coefficient(c.constant, (), (partial,)), dict(orders)))
        super().__init__(terms, equation.dims)
        self.linearisation = linearisation

    def with_dims(self, *dims):
        raise ValueError("a linearised equation keeps its equation's dims")

    def get_config(self) -> dict:
        return {
            "equation": self.linearisation.equation,
            "values": self.linearisation.values.numpy().astype(np.float64),
            "dtype": self.linearisation.values.dtype.name,
        }

    @classmethod
    def from_config(cls, config: dict) -> Linearised:
        return Linearisation(config["equation"], config["values"], config["dtype"]).operator

    def __repr__(self) -> str:
        return f"Linearised({self.linearisation.equation!r})"


def check_equation(equation: Nonlinear, dtype=tf.float64) -> None:
    """Refuse an equation whose residual is not a pointwise function of the features
    (shape (n,) from features of shape (n,), each point's value its own features') or
    is not differentiable by a tape. (Features the kernel is not smooth enough for
    are refused earlier, where ``fit`` validates the collocation set against them.)"""
    rng = np.random.default_rng(0)
    names = list(equation.features)
    values = rng.uniform(0.5, 1.5, size=(len(names), 5))
    p = {k: q.value(dtype) for k, q in equation.parameters_by_name.items()}

    def residual(columns):
        v = {k: tf.constant(c, dtype) for k, c in zip(names, columns)}
        try:
            out = tf.convert_to_tensor(equation.residual(v, p), dtype)
        except Exception as error:  # the user's function: say which call failed
            raise ValueError(
                f"residual: calling it on features of shape (n,) failed: {error}"
            ) from error
        return out.numpy()

    together = residual(values)
    if together.shape != (5,):
        raise ValueError(
            f"residual: expected values of shape (n,) for features of shape (n,), got "
            f"{together.shape}"
        )
    alone = np.concatenate([residual(values[:, i : i + 1]) for i in range(5)])
    reversed_ = residual(values[:, ::-1])[::-1]
    if not (np.allclose(together, alone, rtol=1e-10) and np.allclose(together, reversed_)):
        raise ValueError(
            "residual: not pointwise in the features (a point's value depends on other "
            "points' features); Gauss-Newton collocation needs F(v)(x_i) = F(v(x_i))"
        )
    lin = Linearisation(equation, values, dtype)
    if not all(np.all(np.isfinite(c.numpy())) for c in lin.jacobian(dtype)):
        raise ValueError("residual: its derivatives in the features are not finite")


@dataclasses.dataclass(frozen=True)
class Step:
    """One Gauss-Newton iteration of ``solve``.

    Attributes:
        iteration: 1, 2, ...
        change: the relative change of u at the collocation points,
            ``||u_new - u_old|| / ||u_new||``.
        residual: the root mean square of ``F(v) - f`` at the collocation points after
            the step (its linearisation's error).
        damping: the fraction of the step taken (1 for a full step).
        learned: whether the parameters were learned at this iteration.
        loss: the linearised model's negative log marginal likelihood after it
            (``-log p(y_N | y_C)`` in a conditional fit's second stage, see
            ``PIGP.fit``'s ``solver``).
        points: the collocation points it conditioned on (fewer than given in the
            first stage, see ``solve``'s ``learn_points``).
    """

    iteration: int
    change: float
    residual: float
    damping: float
    learned: bool
    loss: float
    points: int


def _features(model, X, equation) -> np.ndarray:
    """The posterior mean of every feature at ``X``: array (m, n)."""
    return np.stack([model._mean(X, equation.feature(name)) for name in equation.features])


def _rms(equation, values, y) -> float:
    names = list(equation.features)
    residual = equation.evaluate(dict(zip(names, values))).numpy()
    return float(np.sqrt(np.mean(np.square(residual - y))))


def _coarse(data: Data, f, points: int):
    """The data with the collocation set cut to evenly spaced points so that all sets
    hold at most ``points`` values (the other sets whole), or None where they do."""
    others = sum(len(s.X) for s in data.sets if s is not f)
    keep = max(points - others, 1)
    if keep >= len(f.X):
        return None
    index = np.unique(np.linspace(0, len(f.X) - 1, keep).round().astype(int))
    return Data(
        tuple(
            dataclasses.replace(s, X=f.X[index], y=f.y[index]) if s is f else s for s in data.sets
        ),
        data.y_scale,
    )


def _loss(model) -> float:
    """The criterion the parameters are learned by, after an iteration: the negative
    log marginal likelihood from the model's posterior snapshot, or, where sets are
    conditioned on, ``-log p(y_N | y_C)`` (``pigp.objective``; one more factorisation)."""
    if any(model.objective().conditions):
        return -model.log_marginal_likelihood()
    posterior = model.posterior()
    y = model.data.tensors(tf.float64)[1].numpy()
    log_diag = float(np.sum(np.log(np.diag(posterior.chol))))
    return float(gaussian_nll(float(y @ posterior.alpha), log_diag, len(y)))


def _learns_equation(equation) -> bool:
    return any(p.trainable for p in equation.parameters)


def solve(
    model,
    data: Data,
    train,
    iterations: int,
    tolerance: float,
    learn: str,
    verbose: bool,
    learn_points: int | None = None,
    start=None,
):
    """Gauss-Newton on ``model``'s nonlinear equation with ``data`` (its ``"f"`` set the
    collocation points and ``f``).

    Args:
        model: a ``pigp.PIGP`` whose operator is a ``Nonlinear``.
        data: the validated data (the ``"f"`` set's operator a placeholder).
        train: ``train(data, learn_now) -> None``: set the model's data and, when
            ``learn_now``, learn its parameters (else compute the posterior).
        iterations: the most Gauss-Newton iterations (per stage, see ``learn_points``).
        tolerance: stop when the relative change of u falls below it.
        learn: ``"auto"`` (learn at an iteration that follows a change below
            ``LEARN_NEAR``, at most ``LEARN_PHASES`` times, and no more once a
            phase changed u by less than ``LEARN_UNTIL``), ``"until"`` (learn at each
            iteration until the change falls below ``LEARN_UNTIL``, then hold),
            ``"first"`` (at the first iteration only), ``"always"`` or ``"never"``.
        learn_points: where the data sets hold more values than this and parameters
            are learned, Gauss-Newton first runs, learning, on the collocation points
            cut to evenly spaced ones so that all sets hold this many (the other sets
            whole); then on all the points, from that solution, with the parameters
            held (learned once more at the first step there where the equation has a
            trainable parameter). None: all the points from the start.
        start: the feature values (m, n) to linearise at first; None: u = 0.

    Returns:
        ``[Step]``; the model's posterior is that of the last linearisation.
    """
    equation = model.operator
    f = data.get("f")
    names = list(equation.features)
    coarse = None if learn == "never" or learn_points is None else _coarse(data, f, learn_points)
    if coarse is not None:
        steps = solve(model, coarse, train, iterations, tolerance, learn, verbose)
        start = _features(model, f.X, equation)
        # A coefficient of the equation is learned once more on all the points, so that
        # its Laplace interval is taken at the optimum of the model that predicts.
        polish = "first" if _learns_equation(equation) else "never"
        return steps + solve(
            model, data, train, iterations, tolerance, polish, verbose, None, start
        )
    change = math.inf
    values = np.zeros((len(names), len(f.X))) if start is None else np.asarray(start)
    linearisation = Linearisation(equation, values, model.dtype)
    operator = linearisation.operator
    terms = tuple(operator.resolve(f.X.shape[1], model.dims))
    u_old = np.zeros(len(f.X)) if start is None else model._mean(f.X)
    merit = _rms(equation, values, f.y)
    steps, learning, phases = [], learn != "never", 0
    for k in range(1, iterations + 1):
        linearisation.assign(values)
        rhs = linearisation.right_hand_side(f.y)
        sets = tuple(
            dataclasses.replace(s, y=rhs, operator=operator, terms=terms) if s is f else s
            for s in data.sets
        )
        if learn == "auto":
            learn_now = phases < LEARN_PHASES and change < LEARN_NEAR
        else:
            learn_now = learning and (learn != "first" or k == 1)
        phases += learn_now
        train(Data(sets, data.y_scale), learn_now)
        new = _features(model, f.X, equation)
        u_new = model._mean(f.X)
        new_merit = _rms(equation, new, f.y)
        damping = 1.0
        if not learn_now and k > 1 and not new_merit <= merit:
            # The full step made the equation worse: backtrack along it.
            for _ in range(6):
                damping /= 2
                trial = values + damping * (new - values)
                trial_merit = _rms(equation, trial, f.y)
                if trial_merit < merit:
                    break
            else:
                damping = 1.0
            if damping < 1.0:
                new, new_merit = values + damping * (new - values), trial_merit
                u_new = u_old + damping * (u_new - u_old)
        change = float(np.linalg.norm(u_new - u_old) / max(np.linalg.norm(u_new), 1e-300))
        loss = _loss(model)
        steps.append(Step(k, change, new_merit, damping, learn_now, loss, len(f.X)))
        if verbose:
            print(
                f"Gauss-Newton {k} ({len(f.X)} points): change {change:.2e}, "
                f"residual {new_merit:.2e}, "
                f"step {damping:g}{', learned' if learn_now else ''}, loss {loss:.6g}"
            )
        values, u_old, merit = new, u_new, new_merit
        if learn == "until" and change < LEARN_UNTIL:
            learning = False
        if learn == "auto" and learn_now and change < LEARN_UNTIL:
            phases = LEARN_PHASES
        if change < tolerance and damping == 1.0 and not learn_now and phases >= (learn == "auto"):
            break
    else:
        if not math.isfinite(steps[-1].change) or steps[-1].change >= tolerance:
            warnings.warn(
                f"fit: Gauss-Newton did not converge in {iterations} iterations (last "
                f"relative change of u {steps[-1].change:.2e}, tolerance {tolerance:g}); "
                "raise iterations=, or check the equation, the data and the kernel",
                RuntimeWarning,
                stacklevel=3,
            )
    return steps
