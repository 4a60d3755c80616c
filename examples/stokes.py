"""Stokes flow: velocity and pressure from 50 velocity sensors and the equations.

-nu laplacian(u, v) + grad p = g, u_x + v_y = 0 on [0, 1]^2, nu = 0.1 learned from 1;
no pressure data. Fields: a stream function (u = psi_y, v = -psi_x) and the pressure.
The code is ``pigp.experiments.systems.stokes`` (also run by ``pigp stokes``).

    python examples/stokes.py --out results/stokes --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("stokes"))
