"""pigp: physics-informed Gaussian process regression on TensorFlow.

A GP prior on a field u is pushed through a linear differential operator L by
nested ``tf.GradientTape``s, so values of u, of ``f = L u`` and of boundary data
share one joint covariance.
"""

from . import covariance, kernels, operators, plotting
from .io import load
from .models import PIGP
from .observations import Observations
from .operators import D, Identity
from .parameters import Coefficient, Parameter

__all__ = ["PIGP", "load", "Observations", "Parameter", "Coefficient", "D", "Identity", "kernels",
           "operators", "covariance", "plotting"]
__version__ = "0.1.0"
