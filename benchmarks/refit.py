"""What compilation costs, and what refitting one model saves.

The core heat problem with 1% noise, five draws (designs and noise from seeds
0..4, as in the heat example). Each draw is fitted twice with default
settings: by a fresh model (tracing and XLA compilation included, as for the
first fit of any model) and by one model refitted draw after draw (data of the
same shapes reuse the compiled programs; each fit starts from the previous
draw's parameters).

    python benchmarks/refit.py --out results/refit.json
"""

import argparse
import json
import time

import numpy as np
from common import write_json

import pigp
from pigp.experiments import heat_design, heat_solution, noisy_heat_data, relative_l2


def draw_data(draw: int):
    """Draw ``draw`` of the heat example's 1% noise case."""
    X_u, X_f = heat_design(draw)
    y_u, y_f = noisy_heat_data(X_u, X_f, 0.01, np.random.default_rng(draw))
    return X_u, y_u, X_f, y_f


def new_model():
    return pigp.PIGP(
        pigp.kernels.SquaredExponential(),
        pigp.operators.heat(diffusivity=1.0),
        noise_u=1e-3,
        noise_f=1e-3,
    )


def timed_fit(model, data, X, u):
    start = time.perf_counter()
    model.fit(*data)
    seconds = time.perf_counter() - start
    return seconds, relative_l2(model.predict(X)[0], u)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--out", default="results/refit.json")
    args = parser.parse_args()
    X, _ = pigp.plotting.grid(50)
    u = heat_solution(X)[0]
    reused = new_model()
    rows = []
    print(f"{'draw':>4} {'fresh s':>8} {'fresh L2':>9} {'refit s':>8} {'refit L2':>9}", flush=True)
    for draw in range(args.draws):
        data = draw_data(draw)
        fresh_seconds, fresh_error = timed_fit(new_model(), data, X, u)
        refit_seconds, refit_error = timed_fit(reused, data, X, u)
        rows.append(
            {
                "draw": draw,
                "fresh_seconds": fresh_seconds,
                "fresh_relative_l2": fresh_error,
                "refit_seconds": refit_seconds,
                "refit_relative_l2": refit_error,
            }
        )
        print(
            f"{draw:>4} {fresh_seconds:>8.2f} {fresh_error:>9.2e} {refit_seconds:>8.2f} "
            f"{refit_error:>9.2e}",
            flush=True,
        )
    # Draw 0's refit is the reused model's first fit: it compiles too.
    later = [r for r in rows if r["draw"] > 0]
    summary = {
        "median_fresh_seconds": float(np.median([r["fresh_seconds"] for r in rows])),
        "median_refit_seconds_after_first": float(np.median([r["refit_seconds"] for r in later]))
        if later
        else None,
    }
    print(json.dumps(summary))
    write_json(args.out, {"rows": rows, **summary})


if __name__ == "__main__":
    main()
