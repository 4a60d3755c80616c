"""Memory an exact fit needs: peak resident memory of a fresh process per N.

For N = N_u + N_f values of the heat problem (half u, half f; float64, or float32 with
``--dtype float32``), one
process per N imports pigp, notes its peak resident memory, fits (one Adam step
and one L-BFGS iteration, the fit's largest arrays: K, its factor and inverse, W
and the assembly's temporaries), and reports how much the peak grew, per entry of
K, beside ``pigp.memory.fit_bytes``'s estimate.

    python benchmarks/memory.py --out benchmarks/results/memory.json
    python benchmarks/memory.py --fields 2 --sizes 240 480 960 \
        --out benchmarks/results/memory_fields.json
    python benchmarks/memory.py --dtype float32 --sizes 2000 4000 6000 8000 \
        --out benchmarks/results/memory_float32.json
"""

import argparse
import json
import subprocess
import sys

from common import write_json

CHILD = """
import json, sys, numpy as np, pigp
n, dtype = int(sys.argv[1]), sys.argv[3]
rng = np.random.default_rng(0)
X_u, X_f = rng.uniform(size=(n // 2, 2)), rng.uniform(size=(n - n // 2, 2))
model = pigp.PIGP(
    pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), noise_u=1e-3, noise_f=1e-3,
    dtype=dtype,
)
base = pigp.memory.peak_bytes()
model.fit(X_u, np.sin(X_u[:, 0]), X_f, np.cos(X_f[:, 1]), steps=1)
peak = pigp.memory.peak_bytes()
print(json.dumps({"N": n, "dtype": dtype, "grew_bytes": peak - base,
                  "estimate_bytes": pigp.memory.fit_bytes(n, dtype=dtype)}))
"""

# Two fields: plane elasticity (benchmarks/elasticity.py) with N / 6 sensors and N / 3
# collocation points per displacement; the peak's growth after a default fit (L-BFGS-B
# alone for several fields), then after its Laplace (central differences of the gradient).
CHILD_FIELDS = """
import json, sys, warnings, numpy as np, pigp
sys.path.insert(0, sys.argv[2])
from elasticity import model_and_data
n = int(sys.argv[1])
model, observations = model_and_data(0, n // 6, n // 3)
base = pigp.memory.peak_bytes()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model.fit(observations=observations)
    fit = pigp.memory.peak_bytes()
    model.parameter_uncertainty()
peak = pigp.memory.peak_bytes()
n = sum(model.data.sizes)
print(json.dumps({"N": n, "fields": 2, "grew_fit_bytes": fit - base, "grew_bytes": peak - base,
                  "estimate_bytes": pigp.memory.fit_bytes(n, 2)}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000, 6000])
    parser.add_argument("--fields", type=int, choices=[1, 2], default=1)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--out", default="benchmarks/results/memory.json")
    args = parser.parse_args()
    here = __file__.rsplit("/", 1)[0] or "."
    rows = []
    print(f"{'N':>6} {'grew GB':>8} {'bytes/entry':>12} {'estimate GB':>12}")
    for n in args.sizes:
        child = CHILD if args.fields == 1 else CHILD_FIELDS
        output = subprocess.run(
            [sys.executable, "-c", child, str(n), here, args.dtype],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        row = json.loads(output.strip().splitlines()[-1])
        row["bytes_per_entry"] = row["grew_bytes"] / n**2
        rows.append(row)
        print(
            f"{n:>6} {row['grew_bytes'] / 1e9:>8.2f} {row['bytes_per_entry']:>12.0f} "
            f"{row['estimate_bytes'] / 1e9:>12.2f}"
        )
    write_json(args.out, {"rows": rows})


if __name__ == "__main__":
    main()
