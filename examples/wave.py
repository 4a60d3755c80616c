"""Wave equation u_tt - c^2 u_xx = 0 with the speed c learned.

The code is ``pigp.experiments.problems.wave`` (also run by ``pigp wave``).

    python examples/wave.py --out results/wave --seed 0
"""

import sys

from pigp.experiments import script

if __name__ == "__main__":
    sys.exit(script("wave"))
