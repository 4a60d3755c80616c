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
included: ``pigp.fitting.gauss_newton`` learns them on the linearised model between
Gauss-Newton steps (the right-hand side held at each linearisation).
"""

from __future__ import annotations

import numpy as np

from .._tensorflow import tf
from ..parameters import Coefficient
from .linear import Nonlinear, Operator, UndeclaredName

__all__ = ["Linearisation", "Linearised", "check_equation"]


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
        n = self.linearisation.size * self.linearisation.equation.size
        if X.shape[0] is not None and int(X.shape[0]) != n:
            raise ValueError(
                f"the linearised equation's coefficients are known at its {n} collocation "
                f"values only, asked at {int(X.shape[0])}"
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
        #: ``-F(v_k) + sum_a c_a v_a,k`` at the parameters of the last
        #: ``right_hand_side``, and the scale the targets are divided by (``target_shift``).
        self.offset = tf.Variable(np.zeros(self.size * equation.size), dtype=dtype, trainable=False)
        self.scale = 1.0
        self.partials = [_Partial(self, a) for a in range(len(self.names))]
        self.operator = Linearised(self)

    def assign(self, values) -> None:
        self.values.assign(np.asarray(values, dtype=self.values.dtype.as_numpy_dtype))

    def jacobian(self, dtype=tf.float64) -> list:
        """``[dF/dv_a]``: per feature, the partial derivatives at the n points, (n,) each
        (for a system of k equations, (k n,): equation after equation), with the
        parameters' current (or substituted) values."""
        return self._residual_and_partials(tf.cast(self.values, dtype), dtype)[1]

    def _residual_and_partials(self, values, dtype) -> tuple:
        """``F`` at the feature values ``values`` (m, n) and its partials by a tape: the
        residual (k n,), the partials ``[(k n,)]`` and the feature columns tiled k times
        (a pointwise equation's gradient of the sum is each point's derivative)."""
        columns = tf.unstack(values, num=len(self.names))
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(columns)
            outputs = self.equation.outputs(dict(zip(self.names, columns)), dtype)
        zero = tf.UnconnectedGradients.ZERO
        each = [tape.gradient(o, columns, unconnected_gradients=zero) for o in outputs]
        del tape
        if len(outputs) == 1:
            return outputs[0], each[0], columns
        partials = [tf.concat([e[a] for e in each], axis=0) for a in range(len(columns))]
        tiled = [tf.tile(c, [len(outputs)]) for c in columns]
        return tf.concat(outputs, axis=0), partials, tiled

    def right_hand_side(self, y: np.ndarray) -> np.ndarray:
        """``f - F(v_k) + sum_a c_a v_a,k`` at the n points, for data ``y = f``, with the
        parameters' current values (kept for ``target_shift``)."""
        values = tf.constant(self.values.numpy(), tf.float64)
        offset = self._offset(values, tf.float64).numpy()
        self.offset.assign(offset.astype(self.offset.dtype.as_numpy_dtype))
        return np.asarray(y, np.float64) + offset

    def _offset(self, values, dtype):
        """``-F(v_k) + sum_a c_a v_a,k`` with the parameters' current (or substituted)
        values."""
        residual, partials, columns = self._residual_and_partials(values, dtype)
        return tf.add_n([c * v for c, v in zip(partials, columns)]) - residual

    #: Targets held at the last ``right_hand_side`` whatever the parameters (a model
    #: saved without the offset they move from).
    frozen = False

    @property
    def moves_target(self) -> bool:
        """Whether the right-hand side depends on a trainable parameter."""
        return not self.frozen and any(p.trainable for p in self.equation.parameters)

    def target_shift(self, dtype) -> tf.Tensor:
        """How far the standardised right-hand side moves from the one the data hold
        when the parameters take their current (or substituted) values: ``(n,)``.

        The right-hand side ``f - F(v_k) + sum_a c_a v_a,k`` depends on the equation's
        coefficients wherever one multiplies a nonlinear term (``r u (1 - u)`` gives
        ``r u_k^2``). The linearised model's likelihood is that of the data shifted by
        this, so that its gradient and Hessian in a coefficient see the whole
        linearised equation and not its left-hand side alone; at the values the
        right-hand side was computed with, the shift is zero."""
        moved = self._offset(tf.cast(self.values, dtype), dtype) - tf.cast(self.offset, dtype)
        return moved / tf.cast(self.scale, dtype)


class Linearised(Operator):
    """The operator ``sum_a dF/dv_a(v_k(x)) L_a`` of a ``Linearisation``: a linear
    operator whose coefficients vary from point to point, known at the collocation
    points. Saved as its equation and the feature values it was linearised at."""

    def __init__(self, linearisation: Linearisation):
        equation = linearisation.equation
        terms = []
        for partial, name in zip(linearisation.partials, linearisation.names):
            for c, orders, field in equation.features[name].terms:
                terms.append((Coefficient(c.constant, (), (partial,)), dict(orders), field))
        super().__init__(terms, equation.dims)
        self.linearisation = linearisation

    def with_dims(self, *dims):
        raise ValueError("a linearised equation keeps its equation's dims")

    def get_config(self) -> dict:
        linearisation = self.linearisation
        return {
            "equation": linearisation.equation,
            "values": linearisation.values.numpy().astype(np.float64),
            "dtype": linearisation.values.dtype.name,
            "offset": linearisation.offset.numpy().astype(np.float64),
            "scale": float(linearisation.scale),
        }

    @classmethod
    def from_config(cls, config: dict) -> Linearised:
        linearisation = Linearisation(config["equation"], config["values"], config["dtype"])
        if "offset" in config:
            linearisation.offset.assign(np.asarray(config["offset"], np.float64))
            linearisation.scale = float(config["scale"])
        else:  # saved before the targets moved with the coefficients: they stay held
            linearisation.frozen = True
        return linearisation.operator

    def __repr__(self) -> str:
        return f"Linearised({self.linearisation.equation!r})"


def check_equation(equation: Nonlinear, dtype=tf.float64) -> None:
    """Refuse an equation whose residual is not a pointwise function of the features
    (each equation of shape (n,) from features of shape (n,), each point's value its own
    features') or is not differentiable by a tape. (Features the kernel is not smooth
    enough for are refused earlier, where ``fit`` validates the collocation set against
    them.)"""
    rng = np.random.default_rng(0)
    names = list(equation.features)
    values = rng.uniform(0.5, 1.5, size=(len(names), 5))

    def residual(columns):
        v = {k: tf.constant(c, dtype) for k, c in zip(names, columns)}
        try:
            out = equation.outputs(v, dtype)
        except UndeclaredName as error:
            raise ValueError(str(error)) from None
        except ValueError:
            raise
        except Exception as error:  # the user's function: say which call failed
            raise ValueError(
                f"residual: calling it on features of shape (n,) failed: {error}"
            ) from error
        return [o.numpy() for o in out]

    together = residual(values)
    shapes = [o.shape for o in together]
    if any(shape != (5,) for shape in shapes):
        raise ValueError(
            f"residual: expected values of shape (n,) for features of shape (n,), got "
            f"{shapes[0] if len(shapes) == 1 else shapes}"
        )
    together = np.stack(together)
    alone = np.concatenate([np.stack(residual(values[:, i : i + 1])) for i in range(5)], axis=1)
    reversed_ = np.stack(residual(values[:, ::-1]))[:, ::-1]
    if not (np.allclose(together, alone, rtol=1e-10) and np.allclose(together, reversed_)):
        raise ValueError(
            "residual: not pointwise in the features (a point's value depends on other "
            "points' features); Gauss-Newton collocation needs F(v)(x_i) = F(v(x_i))"
        )
    lin = Linearisation(equation, values, dtype)
    if not all(np.all(np.isfinite(c.numpy())) for c in lin.jacobian(dtype)):
        raise ValueError("residual: its derivatives in the features are not finite")
