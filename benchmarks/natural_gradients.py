"""Natural-gradient steps for q against Adam on q, in SparsePIGP's stochastic fit.

The sensor-rich heat problem of ``scale.py`` (10^5 u values and 10^4 f values, 1%
noise), M = 256, batches of 1024, Adam (0.01) on the other parameters in both; no
warm start and no final pass, so that only the steps differ. Every 250 steps: the
ELBO over all data (one pass) and u's relative L2 error on the 100 x 100 grid.

    python benchmarks/natural_gradients.py --out results/natural_gradients.json
"""

import argparse
import time

from _output import write_json
from scale import grid, problem, scores

import pigp
from pigp import kernels, operators


def run(natural_step, steps, n, m):
    X_u, y_u, X_f, y_f = problem("sensor", n)
    model = pigp.SparsePIGP(kernels.SquaredExponential(), operators.heat(1.0), num_inducing=m)
    curve, clock = [], {"start": time.perf_counter(), "paused": 0.0}

    def callback(done, loss, model):
        t = time.perf_counter()
        mean, var = model.predict(grid()[0])
        seconds = t - clock["start"] - clock["paused"]
        curve.append({"steps": done, "seconds": seconds, "elbo": model.elbo(), **scores(mean, var)})
        clock["paused"] += time.perf_counter() - t
        print(natural_step, curve[-1], flush=True)

    model.fit(
        X_u, y_u, X_f, y_f, method="stochastic", steps=steps, batch_size=1024,
        natural_step=natural_step, warm_start=None, optimal_q=False, callback=callback,
    )  # fmt: skip
    return curve


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--out", default="results/natural_gradients.json")
    args = parser.parse_args()
    runs = {str(g): run(g, args.steps, args.n, args.m) for g in (0.1, None)}
    print(f"{'steps':>6} {'natural: ELBO':>14} {'rel L2':>9} {'Adam: ELBO':>14} {'rel L2':>9}")
    for a, b in zip(runs["0.1"], runs["None"]):
        print(
            f"{a['steps']:>6} {a['elbo']:>14.6g} {a['relative_l2']:>9.2e} "
            f"{b['elbo']:>14.6g} {b['relative_l2']:>9.2e}"
        )
    write_json(args.out, {"n": args.n, "m": args.m, "runs": runs})


if __name__ == "__main__":
    main()
