"""Everyday fits: a small inverse heat problem none of the other benchmarks tunes for.

``u_t = alpha u_xx + f`` on [0, 1]^2 with ``u = sin(pi x) cos(pi t) + x (1 - x) / 2``,
``alpha = 0.5`` and ``f`` from the equation; 20 u and 20 f values at uniform random
points with 1% Gaussian noise (of each set's root mean square), alpha learned from a
start of 2. Per kernel (squared exponential, Matern 5/2, a one-component spectral
mixture) and training schedule: a first fit compiles the programs of its structure
(timed apart), then one default fit per seed, each a new model: wall time, Adam steps
and L-BFGS-B evaluations, the loss reached, alpha and u's relative L2 error on a
50 x 50 grid. With GPflow importable (the ``peers`` environment), GPflow's ``GPR``
with SciPy's L-BFGS-B on the same 40 points (a plain GP of the u and f values
stacked, two input columns) for scale.

``--interleave``: the default fit of every ``--kernels`` and GPflow's GPR in turn for
each seed, after a warm-up of each; per-seed ratios to the first kernel, and the first
kernel's to GPflow's. ``--versus-gpflow``: the same for the first ``--kernels`` alone,
GPflow required (its committed JSON is from before the two shared one loop: the same
figures under other keys).

``--fusion 20 40 64 96``: the cost of an Adam step with the training program fused
into one XLA program and without (``pigp.engines.dense.objective.FUSED_UP_TO``), at those numbers
of values, alternating, and the first fit of each (its compilation).

``--per-step``: the cost of an Adam step per kernel instead: fits of 1000 Adam steps
(no L-BFGS-B), the kernels alternating in one process, Adam's steps 250 to 1000 timed
by the fit's callback, the median of ``--seeds`` fits after a first (compiling) one of
each.

Schedules (``--schedules``): ``default`` (``pigp.fitting.FitPlan()``'s training and
``ADAM_STALL``, ``ADAM_STALL_NATS``, ``ADAM_PROBE_NATS`` as they are), ``adam2000``
(2000 Adam steps, then L-BFGS-B), ``stall-<fraction>`` (Adam hands over to L-BFGS-B
once 250 steps gained less than that fraction of all Adam gained),
``stall-<fraction>-<n>nat`` (and less than n nats; no L-BFGS-B probes) and ``lbfgs``
(L-BFGS-B alone, up to 1000 iterations). Prints a table, writes JSON.

    python benchmarks/everyday.py --seeds 3 --out benchmarks/results/everyday.json
"""

import argparse
import statistics
import time
import warnings

import numpy as np
from common import write_json

import pigp
import pigp.engines.dense.model
import pigp.engines.dense.objective
from pigp.fitting import FitPlan

ALPHA = 0.5
KERNELS = {
    "squared_exponential": pigp.kernels.SquaredExponential,
    "matern52": pigp.kernels.Matern52,
    "spectral_mixture_1": lambda: pigp.kernels.SpectralMixture(1),
}


def solution(X):
    """``(u, f)`` at X (n, 2), columns (x, t)."""
    x, t = X[:, 0], X[:, 1]
    u = np.sin(np.pi * x) * np.cos(np.pi * t) + 0.5 * x * (1 - x)
    u_t = -np.pi * np.sin(np.pi * x) * np.sin(np.pi * t)
    u_xx = -(np.pi**2) * np.sin(np.pi * x) * np.cos(np.pi * t) - 1.0
    return u, u_t - ALPHA * u_xx


def data(seed: int, noise: float = 0.01, n_u: int = 20, n_f: int = 20) -> tuple:
    rng = np.random.default_rng(seed)
    X_u, X_f = rng.uniform(0, 1, (n_u, 2)), rng.uniform(0, 1, (n_f, 2))
    y_u, y_f = solution(X_u)[0], solution(X_f)[1]
    y_u = y_u + noise * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(len(y_u))
    y_f = y_f + noise * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(len(y_f))
    return X_u, y_u, X_f, y_f


def schedule(name: str) -> dict:
    """``fit``'s arguments for a schedule, and the plan's ``adam_stall``,
    ``adam_stall_nats``, ``adam_probe_nats`` for it."""
    if name == "default":
        plan = FitPlan()
        return {
            "arguments": {},
            "stall": plan.adam_stall,
            "nats": plan.adam_stall_nats,
            "probe": plan.adam_probe_nats,
        }
    if name == "adam2000":
        arguments = {"steps": 2000, "optimizer": "adam+lbfgs"}
        return {"arguments": arguments, "stall": None, "nats": None, "probe": None}
    if name.startswith("stall-"):
        fraction, *nats = name.split("-")[1:]
        return {
            "arguments": {"steps": 2000, "optimizer": "adam+lbfgs"},
            "stall": float(fraction),
            "nats": float(nats[0].removesuffix("nat")) if nats else None,
            "probe": None,
        }
    if name == "lbfgs":
        return {
            "arguments": {"steps": 1000, "optimizer": "lbfgs"},
            "stall": None,
            "nats": None,
            "probe": None,
        }
    raise ValueError(f"schedule: unknown {name!r}")


def fit(kernel: str, plan: dict, seed: int) -> dict:
    X_u, y_u, X_f, y_f = data(seed)
    alpha = pigp.Parameter(2.0, positive=True, name="diffusivity")
    model = pigp.PIGP(KERNELS[kernel](), pigp.operators.heat(diffusivity=alpha))
    settings = FitPlan(
        adam_stall=plan["stall"], adam_stall_nats=plan["nats"], adam_probe_nats=plan["probe"]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X_u, y_u, X_f, y_f, plan=settings, **plan["arguments"])
        seconds = time.perf_counter() - start
    X, _ = pigp.plotting.grid(50)
    u = solution(X)[0]
    mean, _ = model.predict(X)
    return {
        "seconds": seconds,
        "iterations": len(model.history),  # Adam steps and L-BFGS-B iterations
        "lbfgs_evaluations": len(model.lbfgs_evaluations),
        "loss": -model.log_marginal_likelihood(),
        "alpha": float(alpha.numpy()),
        "alpha_error": abs(float(alpha.numpy()) - ALPHA) / ALPHA,
        "relative_l2": float(np.linalg.norm(mean - u) / np.linalg.norm(u)),
    }


def gpflow_fit(seed: int) -> float | None:
    """GPflow's GPR on the 40 values (u and f stacked): seconds, or None without GPflow."""
    try:
        import gpflow
    except ImportError:
        return None
    X_u, y_u, X_f, y_f = data(seed)
    X, y = np.r_[X_u, X_f], np.r_[y_u, y_f][:, None]
    start = time.perf_counter()
    model = gpflow.models.GPR((X, y), gpflow.kernels.SquaredExponential(lengthscales=[0.5, 0.5]))
    gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables)
    return time.perf_counter() - start


def per_step(kernels, repeats: int) -> dict:
    """Milliseconds per Adam step by kernel: the median over ``repeats`` fits of the
    time between the callbacks after steps 250 and 1000 (Adam's compiled loop alone,
    not the fit's set-up, exact-data decision or posterior), over 750."""
    X_u, y_u, X_f, y_f = data(0)
    milliseconds = {name: [] for name in kernels}
    for repeat in range(repeats + 1):
        for name in kernels:
            model = pigp.PIGP(
                KERNELS[name](), pigp.operators.heat(pigp.Parameter(2.0, positive=True))
            )
            marks = {}

            def callback(step, loss, model, marks=marks):
                marks[step] = time.perf_counter()

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X_u, y_u, X_f, y_f, steps=1000, optimizer="adam", callback=callback)
            if repeat:  # the first compiles
                milliseconds[name].append((marks[1000] - marks[250]) / 750 * 1e3)
    return {name: statistics.median(times) for name, times in milliseconds.items()}


def fusion(sizes: list, repeats: int) -> dict:
    """Milliseconds per Adam step (steps 250 to 1000, as ``per_step``) with the training
    program fused into one XLA program and not (``pigp.engines.dense.objective.FUSED_UP_TO``), by
    number of values (half u, half f), the two alternating; and the first fit's
    seconds of each (its compilation)."""
    saved, rows = pigp.engines.dense.objective.FUSED_UP_TO, []
    try:
        for size in sizes:
            X_u, y_u, X_f, y_f = data(0, n_u=size // 2, n_f=size - size // 2)
            row = {"values": size, "first_fit_seconds": {}, "ms_per_step": {}}
            for repeat in range(repeats + 1):
                for fused in (False, True):
                    pigp.engines.dense.objective.FUSED_UP_TO = size if fused else 0
                    model = pigp.PIGP(
                        KERNELS["squared_exponential"](),
                        pigp.operators.heat(pigp.Parameter(2.0, positive=True)),
                    )
                    marks = {}

                    def callback(step, loss, model, marks=marks):
                        marks[step] = time.perf_counter()

                    key = "fused" if fused else "programs"
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(
                            X_u, y_u, X_f, y_f, steps=1000, optimizer="adam", callback=callback
                        )
                    if repeat == 0:
                        row["first_fit_seconds"][key] = time.perf_counter() - start
                    else:
                        ms = (marks[1000] - marks[250]) / 750 * 1e3
                        row["ms_per_step"].setdefault(key, []).append(ms)
            row["ms_per_step"] = {k: statistics.median(v) for k, v in row["ms_per_step"].items()}
            rows.append(row)
            ms, first = row["ms_per_step"], row["first_fit_seconds"]
            print(
                f"{size:>6} values: {ms['programs']:.3f} ms per step as programs, "
                f"{ms['fused']:.3f} fused ({ms['programs'] / ms['fused']:.2f}x); first fit "
                f"{first['programs']:.2f} s and {first['fused']:.2f} s",
                flush=True,
            )
    finally:
        pigp.engines.dense.objective.FUSED_UP_TO = saved
    return {"rows": rows, "repeats": repeats}


def interleaved(kernels: list, seeds: int, need_gpflow: bool = False) -> dict:
    """The default fit of each kernel (a new model of a compiled structure) and GPflow's
    GPR, in turn for each seed after a warm-up of each (so the machine's drifts fall on
    all of them alike): the seconds, each one's ratio per seed to the first kernel's,
    and the first kernel's to GPflow's."""
    plan = schedule("default")
    for kernel in kernels:
        fit(kernel, plan, seed=1000)
    has_gpflow = gpflow_fit(1000) is not None
    if need_gpflow and not has_gpflow:
        raise SystemExit("--versus-gpflow needs GPflow (the peers environment)")
    rows = []
    for seed in range(seeds):
        fits = {k: fit(k, plan, seed) for k in kernels}
        row = {"seed": seed, "fits": fits, "seconds": {k: f["seconds"] for k, f in fits.items()}}
        if has_gpflow:
            row["seconds"]["gpflow_gpr"] = gpflow_fit(seed)
        rows.append(row)
        print(f"seed {seed}: " + ", ".join(f"{k} {t:.3f} s" for k, t in row["seconds"].items()))
    summary = {}
    for name in rows[0]["seconds"]:
        ratios = [r["seconds"][name] / r["seconds"][kernels[0]] for r in rows]
        summary[name] = {
            "median_seconds": statistics.median(r["seconds"][name] for r in rows),
            "median_ratio": statistics.median(ratios),
            "ratio_range": [min(ratios), max(ratios)],
        }
        print(
            f"{name:<20} median {summary[name]['median_seconds']:.3f} s, per-seed ratio to "
            f"{kernels[0]}: median {summary[name]['median_ratio']:.2f} "
            f"[{min(ratios):.2f}, {max(ratios):.2f}]"
        )
    if has_gpflow:
        ratios = [r["seconds"][kernels[0]] / r["seconds"]["gpflow_gpr"] for r in rows]
        summary["versus_gpflow"] = {
            "median_ratio": statistics.median(ratios),
            "ratio_range": [min(ratios), max(ratios)],
        }
        print(
            f"{kernels[0]} / GPflow GPR per seed: median {statistics.median(ratios):.2f} "
            f"[{min(ratios):.2f}, {max(ratios):.2f}]"
        )
    return {"summary": summary, "rows": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="*", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--schedules", nargs="*", default=["default"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--per-step", action="store_true", help="Adam's step cost per kernel")
    parser.add_argument(
        "--versus-gpflow",
        action="store_true",
        help="the default fit of the first --kernels and GPflow's GPR, alternating seed by seed",
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="the default fit of every --kernels (and GPflow's GPR) in turn, seed by seed",
    )
    parser.add_argument(
        "--fusion",
        nargs="*",
        type=int,
        help="ms per Adam step fused into one XLA program and not, at these numbers of values",
    )
    parser.add_argument("--out", default="benchmarks/results/everyday.json")
    args = parser.parse_args()
    if args.fusion:
        write_json(args.out, fusion(args.fusion, args.seeds))
        return
    if args.interleave or args.versus_gpflow:
        kernels = args.kernels[:1] if args.versus_gpflow else args.kernels
        write_json(args.out, interleaved(kernels, args.seeds, need_gpflow=args.versus_gpflow))
        return
    if args.per_step:
        result = per_step(args.kernels, args.seeds)
        base = result[args.kernels[0]]
        for name, ms in result.items():
            print(f"{name:<20} {ms:6.3f} ms per Adam step  ({ms / base:.2f}x {args.kernels[0]})")
        write_json(args.out, {"ms_per_adam_step": result, "fits": args.seeds})
        return
    rows = []
    print(
        f"{'kernel':<20} {'schedule':<16} {'first s':>8} {'median s':>9} {'iters':>6} "
        f"{'lbfgs':>6} {'loss':>9} {'alpha err':>10} {'u rel L2':>9}",
        flush=True,
    )
    for kernel in args.kernels:
        for name in args.schedules:
            plan = schedule(name)
            first = fit(kernel, plan, seed=1000)  # compiles the structure's programs
            fits = [fit(kernel, plan, seed) for seed in range(args.seeds)]
            row = {
                "kernel": kernel,
                "schedule": name,
                "first_fit_seconds": first["seconds"],
                "fits": fits,
                "median_seconds": statistics.median(f["seconds"] for f in fits),
            }
            rows.append(row)
            print(
                f"{kernel:<20} {name:<16} {first['seconds']:8.2f} {row['median_seconds']:9.2f} "
                f"{statistics.median(f['iterations'] for f in fits):6.0f} "
                f"{statistics.median(f['lbfgs_evaluations'] for f in fits):6.0f} "
                f"{statistics.median(f['loss'] for f in fits):9.2f} "
                f"{max(f['alpha_error'] for f in fits):10.2e} "
                f"{max(f['relative_l2'] for f in fits):9.2e}",
                flush=True,
            )
    gpflow_fit(1000)  # GPflow traces its loss at its first fit: a warm-up, as for pigp
    gpflow = [gpflow_fit(seed) for seed in range(args.seeds)]
    result = {"rows": rows}
    if gpflow[0] is not None:
        median = statistics.median(gpflow)
        result["gpflow_gpr_seconds"] = gpflow
        result["gpflow_gpr_median_seconds"] = median
        print(f"GPflow GPR (SciPy L-BFGS-B), median of {args.seeds}: {median:.2f} s")
    write_json(args.out, result)


if __name__ == "__main__":
    main()
