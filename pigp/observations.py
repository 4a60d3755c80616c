"""Data sets of one observation type each: ``y = (L u)(X) + noise``."""

from __future__ import annotations

from . import _validation as check
from .operators import Identity, Operator
from .parameters import Parameter

__all__ = ["Observations"]


class Observations:
    """Noisy observations of ``L u`` at points ``X``.

    Args:
        X: array of shape (n, d), the points.
        y: array of shape (n,) or (n, 1), the observed values of ``L u``.
        operator: ``Identity`` for values of u (Dirichlet, initial data), the PDE
            operator for forcing data, ``D("x")`` or a normal derivative for
            Neumann data.
        noise: initial noise variance (learned), a positive number or a
            :class:`pigp.Parameter` (use ``trainable=False`` to fix it).
        name: a label for ``parameter_values()``, ``predict(output=name)`` and errors.
    """

    def __init__(self, X, y, operator: Operator = Identity, noise=1e-6, name: str = "data"):
        if not isinstance(operator, Operator):
            raise ValueError(f"operator: expected a pigp.operators.Operator, got {operator!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"name: expected a non-empty string, got {name!r}")
        X = check.as_inputs(f"{name}.X", X)
        self.X, self.y = X, check.as_targets(f"{name}.y", y, len(X), f"{name}.X")
        self.operator = operator
        self.name = name
        self.noise = noise if isinstance(noise, Parameter) else \
            Parameter(noise, name=f"noise_{name}")

    def __repr__(self) -> str:
        return f"Observations(name={self.name!r}, operator={self.operator!r})"
