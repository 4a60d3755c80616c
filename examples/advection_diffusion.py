"""Advection-diffusion u_t + c u_x - nu u_xx = f with c and nu learned.

The code is ``pigp.experiments.problems.advection_diffusion`` (also run by
``pigp advection_diffusion``).

    python examples/advection_diffusion.py --out results/advection_diffusion --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("advection_diffusion"))
