"""The nonlinear elliptic equation -laplacian u + u^3 = f on the unit square.

Chen et al.'s problem, u = sin(pi x) sin(pi y) + 2 sin(4 pi x) sin(4 pi y), 900
interior and 124 boundary points, by Gauss-Newton kernel collocation. The code is
``pigp.experiments.nonlinear.elliptic`` (also run by ``pigp elliptic``).

    python examples/elliptic.py --out results/elliptic --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("elliptic"))
