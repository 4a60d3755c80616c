"""The heat equation u_t = u_xx + f on [0, 1]^2 with a well-posed design.

u = exp(-t) sin(pi x) is observed at 20 points on the initial and boundary lines
(t = 0, x = 0, x = 1) and f = (pi^2 - 1) exp(-t) sin(pi x) at 30 interior points;
u is predicted on a 50 x 50 grid, once from noise-free data and once with 1%
Gaussian noise on u and f. The code is ``pigp.experiments.heat.heat`` (also run by
``pigp heat``).

    python examples/heat_equation.py --out results/heat --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("heat"))
