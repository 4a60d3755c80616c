"""Fit schedules before and after: every example problem, 2000 Adam steps against the default.

For the heat example (its noise-free fit and five 1%-noise draws), the seed's diagonal
layout, each problem of ``pigp.experiments.problems`` (seed 0) and the 40 fits of
``benchmarks/calibration.py``'s Raissi family (20 seeds with 1% noise, 20 noise-free
with a floor): a first run with the
default schedule compiles the structure's programs (discarded), then the problem runs
once with ``ADAM_STALL = None`` (2000 Adam steps, then L-BFGS-B: the schedule before
the stall rule; ``--before no-probes``: ``ADAM_PROBE_NATS = None``, the stall rule
without L-BFGS-B probes) and once with the defaults as they are, one after the other
in this process. Each ``fit`` inside is recorded: Adam steps and L-BFGS-B iterations together
(``len(model.history)``), wall seconds and the log marginal likelihood; beside them
the experiment's relative L2 of u and learned coefficients. Prints a table, writes JSON.

    python benchmarks/schedules.py --out benchmarks/results/schedules.json
    python benchmarks/schedules.py --before no-probes --out benchmarks/results/schedules_probes.json
"""

import argparse
import contextlib
import functools
import io
import tempfile
import time
import warnings

from common import write_json

import pigp
import pigp.engines.dense.model
from pigp.experiments import heat
from pigp.experiments.problems import PROBLEMS
from pigp.fitting import FitPlan, defaults


def raissi_calibration(out: str, seed: int = 0) -> dict:
    """The fits of ``benchmarks/calibration.py``'s Raissi family (its seeds 0-19, 1%
    noise, then noise-free with a floor of 1e-4 on both noise variances): alpha's
    largest error in each."""
    from calibration import heat_model, problem

    result = {}
    for noise, floor in [(0.01, 0.0), (0.0, 1e-4)]:
        errors = []
        for s in range(20):
            model, alpha = heat_model("raissi", floor=floor)
            model.fit(*problem("raissi", s, noise))
            errors.append(abs(float(alpha.numpy()) - 1.0))
        result[f"max_alpha_error_noise_{noise}"] = max(errors)
    return result


CASES = {"heat": heat.heat, "seed": heat.seed, **PROBLEMS, "raissi_calibration": raissi_calibration}


def recorded(run) -> tuple:
    """``(metrics, fits)``: ``run()``'s metrics and one record per ``PIGP.fit`` inside."""
    fits, fit = [], pigp.PIGP.fit

    def timed(model, *args, **kwargs):
        start = time.perf_counter()
        result = fit(model, *args, **kwargs)
        fits.append(
            {
                "iterations": len(model.history),
                "seconds": time.perf_counter() - start,
                "log_marginal_likelihood": model.log_marginal_likelihood(),
            }
        )
        return result

    pigp.PIGP.fit = timed
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            metrics = run()
    finally:
        pigp.PIGP.fit = fit
    return metrics, fits


def errors(metrics: dict) -> dict:
    """The accuracy figures the README and docs quote from a problem's metrics."""
    out = {}
    for key, value in metrics.items():
        if key == "relative_l2" or key.startswith("max_"):
            out[key] = value
    for key in ("dense_grid",):
        if key in metrics:
            out["relative_l2"] = metrics[key]["relative_l2"]
    for name, value in metrics.get("learned", {}).items():
        out[f"{name} error"] = value["abs_error"]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--out", default="results/schedules.json")
    parser.add_argument(
        "--before",
        choices=["adam2000", "no-probes"],
        default="adam2000",
        help="the schedule to compare the default with: adam_stall=None (2000 Adam "
        "steps, then L-BFGS-B) or adam_probe_nats=None (the stall rule without "
        "L-BFGS-B probes)",
    )
    args = parser.parse_args()
    default = FitPlan()
    setting = "adam_stall" if args.before == "adam2000" else "adam_probe_nats"
    rows = []
    print(
        f"{'case':<20} {'fits':>4} {'iterations before':>18} {'after':>12} {'s before':>9} "
        f"{'after':>7} {'max |d LML|':>11}  figures before -> after"
    )
    for name in args.cases:
        with tempfile.TemporaryDirectory() as out:
            run = functools.partial(CASES[name], out, seed=0)
            recorded(run)  # compiles
            with defaults(default.replace(**{setting: None})):
                before, before_fits = recorded(run)
            after, after_fits = recorded(run)
        row = {
            "case": name,
            "before": {"fits": before_fits, "figures": errors(before)},
            "after": {"fits": after_fits, "figures": errors(after)},
        }
        rows.append(row)
        difference = max(
            abs(a["log_marginal_likelihood"] - b["log_marginal_likelihood"])
            for a, b in zip(after_fits, before_fits)
        )
        figures = ", ".join(
            f"{k} {row['before']['figures'][k]:.3g} -> {v:.3g}"
            for k, v in row["after"]["figures"].items()
        )
        print(
            f"{name:<20} {len(after_fits):>4} "
            f"{'/'.join(str(f['iterations']) for f in before_fits):>18} "
            f"{'/'.join(str(f['iterations']) for f in after_fits):>12} "
            f"{sum(f['seconds'] for f in before_fits):9.2f} "
            f"{sum(f['seconds'] for f in after_fits):7.2f} {difference:11.2e}  {figures}",
            flush=True,
        )
    total = [sum(f["seconds"] for r in rows for f in r[k]["fits"]) for k in ("before", "after")]
    ratio = total[1] / total[0]
    print(f"\nall fits: {total[0]:.1f} s before, {total[1]:.1f} s after ({ratio:.2f}x)")
    write_json(
        args.out,
        {
            "stall": default.adam_stall,
            "stall_nats": default.adam_stall_nats,
            "probe_nats": default.adam_probe_nats,
            "before": args.before,
            "rows": rows,
            "total": total,
        },
    )


if __name__ == "__main__":
    main()
