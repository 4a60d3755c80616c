"""Fitting a model: a ``FitPlan`` in, a ``FitReport`` out.

The stages of a fit are functions of the model, the validated data and the plan,
each in its own module; the model's ``fit`` validates its arguments and calls them,
and the model adopts the report (``model.report``; ``history``, ``noise_choice`` and
the rest read it):

- ``plan``: ``FitPlan`` (every setting, with the measured defaults), ``Training``
  and ``Solver``; ``defaults(plan)`` sets the plan of fits given none, in a block.
- ``report``: ``FitReport`` and the records it holds (``NoiseChoice``,
  ``NoiseRestart``, ``Step``).
- ``state``: snapshots of variables and their restoration on interrupt.
- ``run``: ``fit_linear``: training, then the noise stages.
- ``noise``: the restart from quieter noises and the exact decision.
- ``kernel_choice``: ``kernel="auto"``'s candidates (``AUTO_KERNELS``).
- ``gauss_newton``: ``fit_nonlinear`` for nonlinear equations;
- ``nonlinear_noise``: ``fit_deciding_noise``, which data a nonlinear fit takes as exact.

A new stage is one module here and one field of ``FitPlan``. This package never
imports ``pigp.engines.dense.model``: the model is passed in and used through its public methods.
"""

from ..kernels.library import Decaying, SpectralMixture, SquaredExponential
from .gauss_newton import fit_nonlinear
from .kernel_choice import choose_kernel
from .nonlinear_noise import fit_deciding_noise
from .plan import FitPlan, Solver, Training, default_plan, defaults
from .report import FitReport, NoiseChoice, NoiseRestart, Step
from .run import fit_linear

#: The kernels ``PIGP(kernel="auto")`` chooses from, by name (with ``auto_kernels``'
#: addition for an evolution equation).
AUTO_KERNELS = {
    "SquaredExponential": lambda: SquaredExponential(),
    "SpectralMixture": lambda: SpectralMixture(1),
}

#: The column name that makes an operator an evolution equation for ``auto_kernels``.
TIME = "t"


def auto_kernels(dims) -> dict:
    """``kernel="auto"``'s candidates for a model whose columns are ``dims``:
    ``AUTO_KERNELS``, and where a column is named ``"t"``, the kernel the docs
    recommend for an evolution equation, ``Decaying(SquaredExponential())`` along it
    (an amplitude ``e^(-r t)``, the rate learned)."""
    found = dict(AUTO_KERNELS)
    if dims is not None and TIME in tuple(dims):
        column = tuple(dims).index(TIME)
        found["Decaying(SquaredExponential)"] = lambda: Decaying(SquaredExponential(), column)
    return found


__all__ = [
    "AUTO_KERNELS",
    "auto_kernels",
    "FitPlan",
    "FitReport",
    "NoiseChoice",
    "NoiseRestart",
    "Solver",
    "Step",
    "Training",
    "choose_kernel",
    "default_plan",
    "defaults",
    "fit_deciding_noise",
    "fit_linear",
    "fit_nonlinear",
]
