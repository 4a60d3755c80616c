"""Burgers' equation u_t + u u_x - 0.02 u_xx = 0 by Gauss-Newton kernel collocation.

x in [-1, 1], t in [0, 1], u(x, 0) = -sin(pi x), u(+-1, t) = 0; 1000 interior and
200 boundary points; the error against the Cole-Hopf solution. The code is
``pigp.experiments.nonlinear.burgers`` (also run by ``pigp burgers``).

    python examples/burgers.py --out results/burgers --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("burgers"))
