"""Reproducible experiments, run by ``pigp NAME`` or ``python examples/NAME.py``.

- ``pigp.experiments.cli``: the command line;
- ``pigp.experiments.report``: accuracy figures, metrics JSON, PNG figures, summary tables;
- ``pigp.experiments.heat``: the heat equation (``heat``) and the seed's layout (``seed``);
- ``pigp.experiments.problems``: Poisson, advection-diffusion, wave, Helmholtz, 2-D heat.

The names below are imported on first use (the command line's help needs none of them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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


def __getattr__(name: str):
    if name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    elif name in {"cli", "report", "heat", "problems"}:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module 'pigp.experiments' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))


if TYPE_CHECKING:
    from .cli import EXPERIMENTS, main, parser, run, script
    from .heat import add_noise, heat_design, heat_solution, noisy_heat_data
    from .report import accuracy, relative_l2
