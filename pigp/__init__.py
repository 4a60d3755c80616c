"""pigp: physics-informed Gaussian process regression on TensorFlow.

A GP prior on a field u is pushed through a linear differential operator L by
nested ``tf.GradientTape``s, so values of u, of ``f = L u`` and of boundary data
share one joint covariance.

The parts, by concept: ``parameters`` (Parameter, Coefficient), ``kernels/``
(kernels, their tape-derived derivatives, the operator blocks and the joint
covariance), ``operators/`` (linear operators, nonlinear equations and their
linearisation), ``data`` (data sets), ``structure`` (what a compiled program
depends on), ``engines/`` (``dense``: ``PIGP``; ``variational``: ``SparsePIGP``;
what they share), ``fitting/`` (a ``FitPlan`` in, a ``FitReport`` out: the
optimisers and the stages of ``fit``), ``inference/`` (Laplace, NUTS), ``io``
(the file format), ``linalg``, ``memory``, ``compilation`` (compiled programs
kept on disk between processes), ``plotting``, and ``experiments/`` (command line
and example problems). Modules that moved into the folders are importable by
their old names too (``pigp.models``, ``pigp.covariance``: ``pigp._moved``).

The names below are imported on first use, so ``import pigp`` is instant and
the command line (``pigp --help``) does not wait for TensorFlow; the first
access to any of them imports TensorFlow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import attach
from ._moved import MOVED, install
from ._quiet import quiet_tensorflow_import

__version__ = "0.1.0"

# Public name -> the module that defines it; the modules themselves on request.
_NAMES = {
    "PIGP": "engines.dense.model",
    "SparsePIGP": "engines.variational.model",
    "load": "io",
    "Observations": "data",
    "Parameter": "parameters",
    "Coefficient": "parameters",
    "CholeskyError": "linalg",
    "D": "operators",
    "Identity": "operators",
    "Samples": "inference.nuts",
    "compilation_cache": "compilation",
}
_SUBMODULES = (
    "parameters",
    "kernels",
    "operators",
    "data",
    "structure",
    "engines",
    "fitting",
    "inference",
    "linalg",
    "io",
    "memory",
    "plotting",
    "experiments",
    "compilation",
    *(old.rpartition(".")[2] for old in MOVED),  # pigp.engines.dense.model and the like
)

__all__ = [*_NAMES, "kernels", "operators", "covariance", "plotting"]
install()  # ``import pigp.engines.dense.model`` and the other old paths
__getattr__, __dir__ = attach(__name__, _NAMES, _SUBMODULES)
quiet_tensorflow_import()  # ``import pigp; import tensorflow`` starts quietly too

if TYPE_CHECKING:  # what static tools (type checkers, the API docs) see
    from . import kernels, operators, plotting
    from .compilation import compilation_cache
    from .data import Observations
    from .engines.dense.model import PIGP
    from .engines.variational.model import SparsePIGP
    from .inference.nuts import Samples
    from .io import load
    from .kernels import covariance
    from .linalg import CholeskyError
    from .operators import D, Identity
    from .parameters import Coefficient, Parameter
