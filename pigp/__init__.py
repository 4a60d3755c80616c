"""pigp: physics-informed Gaussian process regression on TensorFlow.

A GP prior on a field u is pushed through a linear differential operator L by
nested ``tf.GradientTape``s, so values of u, of ``f = L u`` and of boundary data
share one joint covariance.

The parts, one module each: ``parameters``, ``kernels``, ``operators``,
``derivatives`` and ``covariance`` (the blocks and the joint K), ``data`` (data
sets), ``objective`` (the negative log marginal likelihood), ``training``
(optimisers), ``posterior``, ``uncertainty`` (Laplace), ``linalg``, ``io`` (the
file format), ``memory``, ``models`` (``PIGP``, which wires them together),
the ``fitting`` subpackage (a ``FitPlan`` in, a ``FitReport`` out: the stages of
``fit``), ``sampler`` (the NUTS driver of a fitted model),
``plotting``, ``compilation`` (compiled programs kept on disk between
processes), and the ``experiments`` subpackage (command line and example
problems).

The names below are imported on first use, so ``import pigp`` is instant and
the command line (``pigp --help``) does not wait for TensorFlow; the first
access to any of them imports TensorFlow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import attach
from ._quiet import quiet_tensorflow_import

__version__ = "0.1.0"

# Public name -> the module that defines it; the modules themselves on request.
_NAMES = {
    "PIGP": "models",
    "SparsePIGP": "sparse",
    "load": "io",
    "Observations": "data",
    "Parameter": "parameters",
    "Coefficient": "parameters",
    "CholeskyError": "linalg",
    "D": "operators",
    "Identity": "operators",
    "Samples": "sampling",
    "compilation_cache": "compilation",
}
_SUBMODULES = (
    "parameters",
    "kernel_base",
    "kernels",
    "operators",
    "derivatives",
    "covariance",
    "data",
    "objective",
    "training",
    "posterior",
    "uncertainty",
    "linalg",
    "io",
    "memory",
    "base",
    "models",
    "variational",
    "collapsed",
    "sparse",
    "plotting",
    "sampling",
    "sampler",
    "fitting",
    "experiments",
    "compilation",
)

__all__ = [*_NAMES, "kernels", "operators", "covariance", "plotting"]
__getattr__, __dir__ = attach(__name__, _NAMES, _SUBMODULES)
quiet_tensorflow_import()  # ``import pigp; import tensorflow`` starts quietly too

if TYPE_CHECKING:  # what static tools (type checkers, the API docs) see
    from . import covariance, kernels, operators, plotting
    from .compilation import compilation_cache
    from .data import Observations
    from .io import load
    from .linalg import CholeskyError
    from .models import PIGP
    from .operators import D, Identity
    from .parameters import Coefficient, Parameter
    from .sampling import Samples
    from .sparse import SparsePIGP
