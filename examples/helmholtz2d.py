"""2-D Helmholtz u_xx + u_yy + 4 u = f with Dirichlet and Neumann boundary data.

The code is ``pigp.experiments.problems.helmholtz2d`` (also run by ``pigp helmholtz2d``).

    python examples/helmholtz2d.py --out results/helmholtz2d --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("helmholtz2d"))
