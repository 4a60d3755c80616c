"""1-D Poisson u'' = f on [0, 1] with Dirichlet values at both ends.

u = sin(2 pi x) + x / 2; f at 12 Latin-hypercube points. The code is
``pigp.experiments.problems.poisson1d`` (also run by ``pigp poisson1d``).

    python examples/poisson1d.py --out results/poisson1d --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("poisson1d"))
