"""pigp: physics-informed Gaussian process regression on TensorFlow.

A GP prior on a field u is pushed through a linear differential operator L by
nested ``tf.GradientTape``s, so values of u, of ``f = L u`` and of boundary data
share one joint covariance.

The parts, one module each: ``parameters``, ``kernels``, ``operators``,
``derivatives`` and ``covariance`` (the blocks and the joint K), ``data`` (data
sets), ``objective`` (the negative log marginal likelihood), ``training``
(optimisers), ``posterior``, ``uncertainty`` (Laplace), ``linalg``, ``io`` (the
file format), ``models`` (``PIGP``, which wires them together), ``plotting``,
and the ``experiments`` subpackage (command line and example problems).
"""

from . import covariance, kernels, operators, plotting
from .data import Observations
from .linalg import CholeskyError
from .models import PIGP, load
from .operators import D, Identity
from .parameters import Coefficient, Parameter

__all__ = ["PIGP", "load", "Observations", "Parameter", "Coefficient", "CholeskyError", "D",
           "Identity", "kernels", "operators", "covariance", "plotting"]
__version__ = "0.1.0"
