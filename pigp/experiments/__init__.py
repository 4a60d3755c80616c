"""Reproducible experiments, run by ``pigp NAME`` or ``python examples/NAME.py``.

- ``pigp.experiments.cli``: the command line;
- ``pigp.experiments.report``: accuracy figures, metrics JSON, PNG figures;
- ``pigp.experiments.heat``: the heat equation (``heat``) and the seed's layout (``seed``);
- ``pigp.experiments.problems``: Poisson, advection-diffusion, wave, Helmholtz, 2-D heat.
"""

from .cli import EXPERIMENTS, main, parser, run, script
from .heat import add_noise, heat_design, heat_solution, noisy_heat_data
from .report import accuracy, relative_l2

__all__ = ["EXPERIMENTS", "main", "parser", "run", "script", "heat_solution", "heat_design",
           "add_noise", "noisy_heat_data", "accuracy", "relative_l2"]
