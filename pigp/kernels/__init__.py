"""Kernels: covariance functions, their derivatives, and their blocks through operators.

- ``library``: the kernels pigp ships, written for one pair of points
  (``SquaredExponential``, ``Matern52``, ``Matern72``, ``RationalQuadratic``,
  ``SpectralMixture``, ``Custom``, ``Warped``, ``Decaying``, ``Fields``);
- ``base``: the base classes (``Kernel``, ``Stationary``, ``Sum``, ``Product``);
- ``derivatives``: entry-wise partial derivatives by nested ``tf.GradientTape``;
- ``covariance``: kernel blocks pushed through linear operators, ``L_i L_j' k``,
  and the joint covariance of the data sets.

Every public name is imported from here (``pigp.kernels.SquaredExponential``); the
classes and functions say so in their ``__module__``, which is also the path a saved
model records (``pigp.io``).
"""

from .base import Kernel, Product, Stationary, Sum, cosine, gaussian, hermite, ranges
from .library import (
    Custom,
    Decaying,
    Fields,
    Matern52,
    Matern72,
    RationalQuadratic,
    SpectralMixture,
    SquaredExponential,
    Warped,
    field_names,
    forming_front,
    steepening_front,
    tanh_front,
)

__all__ = [
    "Kernel",
    "Stationary",
    "SquaredExponential",
    "Matern52",
    "Matern72",
    "RationalQuadratic",
    "SpectralMixture",
    "Sum",
    "Product",
    "Custom",
    "Warped",
    "Decaying",
    "steepening_front",
    "forming_front",
    "tanh_front",
    "Fields",
    "field_names",
]

for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
