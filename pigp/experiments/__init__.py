"""Reproducible experiments, run by ``pigp NAME`` or ``python examples/NAME.py``.

- ``pigp.experiments.cli``: the command line;
- ``pigp.experiments.report``: accuracy figures, metrics JSON, PNG figures, summary tables;
- ``pigp.experiments.heat``: the heat equation (``heat``) and the seed's layout (``seed``);
- ``pigp.experiments.problems``: Poisson, advection-diffusion, wave, Helmholtz, 2-D heat;
- ``pigp.experiments.nonlinear``: ``-laplacian u + u^3 = f`` and Burgers by Gauss-Newton;
- ``pigp.experiments.systems``: several fields: Stokes flow, a divergence-free field, a
  coupled reaction-diffusion pair;
- ``pigp.experiments.navier_stokes``: steady Navier-Stokes (Kovasznay flow), a
  nonlinear system over three fields;
- ``pigp.experiments.brusselator``: the Brusselator, a nonlinear reaction-diffusion
  system of two species in time, against the method of lines.

The names below are imported on first use (the command line's help needs none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import attach

_NAMES = {
    "EXPERIMENTS": "cli",
    "main": "cli",
    "parser": "cli",
    "run": "cli",
    "script": "cli",
    "heat_solution": "heat",
    "heat_design": "heat",
    "add_noise": "heat",
    "noisy_heat_data": "heat",
    "accuracy": "report",
    "relative_l2": "report",
}

__all__ = list(_NAMES)
__getattr__, __dir__ = attach(
    __name__,
    _NAMES,
    (
        "cli",
        "report",
        "heat",
        "problems",
        "nonlinear",
        "systems",
        "navier_stokes",
        "brusselator",
    ),
)

if TYPE_CHECKING:
    from .cli import EXPERIMENTS, main, parser, run, script
    from .heat import add_noise, heat_design, heat_solution, noisy_heat_data
    from .report import accuracy, relative_l2
