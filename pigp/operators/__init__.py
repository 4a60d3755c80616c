"""Operators and equations: what a data set observes of the latent field(s).

- ``linear``: linear differential operators (``D``, ``Identity``, ``field``,
  ``heat``, ``laplacian``, ``apply``) and the description of a nonlinear equation
  (``nonlinear``, ``Nonlinear``);
- ``linearisation``: a nonlinear equation linearised at the current solution, the
  Gauss-Newton step's operator and targets.

Every public name is imported from here (``pigp.operators.D``); the classes and
functions say so in their ``__module__``, which is also the path a saved model
records (``pigp.io``).
"""

from types import FunctionType

from .linear import (
    D,
    Identity,
    Nonlinear,
    Operator,
    apply,
    field,
    heat,
    laplacian,
    nonlinear,
)

__all__ = [
    "Operator",
    "D",
    "Identity",
    "field",
    "heat",
    "laplacian",
    "apply",
    "Nonlinear",
    "nonlinear",
]

for _name in __all__:
    if isinstance(globals()[_name], (type, FunctionType)):  # not the instance Identity
        globals()[_name].__module__ = __name__
del _name
