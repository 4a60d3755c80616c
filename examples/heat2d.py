"""Heat equation in (x, y, t): u_t - (u_xx + u_yy) = f.

The code is ``pigp.experiments.problems.heat2d`` (also run by ``pigp heat2d``).

    python examples/heat2d.py --out results/heat2d --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("heat2d"))
