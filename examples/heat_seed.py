"""The original question's layout: 20 u points and 30 f points on the diagonal x = t.

Both point sets come from linspace(0, 1), so they lie on the line x = t; the fit
starts from the question's hyper-parameters. The script predicts u on the 20-point
grid, f on the 30-point grid and u on a dense grid, and measures how the posterior
std and the error grow away from the diagonal: what this layout can and cannot
determine. The code is ``pigp.experiments.heat.seed`` (also run by ``pigp seed``).

    python examples/heat_seed.py --out results/seed --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("seed"))
