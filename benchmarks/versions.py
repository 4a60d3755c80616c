"""Two versions of pigp, measured alternately in one run: training speed before and after a change.

Each round measures every version once, in turn, each in a fresh process with that
version's source tree first on the path, so that both see the same machine load
within a round. Per process:

  seed_steps_per_s   Adam steps per second on the seed's 50-point problem (the compiled
                     loop, after a first fit compiled it; 2000 steps)
  step_s             one training step at N = 1000 (loss, gradient, Adam update; LAPACK's
                     back end on a CPU), best of 5
  lapack_floor_s     SciPy cho_factor + LAPACK potri of the same K, best of 5
  step_over_lapack   their ratio

    python benchmarks/versions.py --against 90d24ee --out results/versions.json

``--against`` checks the commit out into a temporary git worktree. The table gives
each version's median over the rounds and, per round, the ratio of the versions'
figures (this version over the other), with the median and range of those ratios:
the machine's load varies between rounds, less within one.

``--paired`` measures both in one process instead (the other version's package
copied as ``pigp_other``), calls interleaved, each call timed next to its pair:
the LAPACK step at N = 1000 and a compiled call of 250 Adam steps on the seed's
problem, 30 pairs each, with the median and quartiles of the paired ratios. On a
shared machine this is the finer comparison: both versions see the same load.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import best_of, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def measure() -> dict:
    """The figures of the pigp first on the path: Adam steps/s through ``fit`` (public
    API), and, where the version has ``pigp.fitting.training``, the LAPACK step and floor."""
    import importlib.util

    import numpy as np
    import scipy.linalg

    import pigp

    g20, g30 = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
    X_u, X_f = np.stack([g20, g20], 1), np.stack([g30, g30], 1)
    model = pigp.PIGP(
        pigp.kernels.SquaredExponential(), pigp.operators.heat(1.0), noise_u=1e-3, noise_f=1e-3
    )
    data = (X_u, np.sin(X_u[:, 0]), X_f, np.cos(X_f[:, 0]))
    model.fit(*data, steps=250, optimizer="adam")
    start = time.perf_counter()
    model.fit(*data, steps=2000, optimizer="adam")
    row = {"seed_steps_per_s": 2000 / (time.perf_counter() - start)}
    row["pigp"] = os.path.dirname(pigp.__file__)
    if importlib.util.find_spec("pigp.fitting.training") is None or not hasattr(
        pigp.PIGP, "objective"
    ):
        return row  # an older layout: the step alone is not reachable
    import pigp.fitting.training

    step, K = _lapack_step(pigp)
    potri = scipy.linalg.lapack.get_lapack_funcs("potri", (K,))

    def lapack_floor():
        c, _ = scipy.linalg.cho_factor(K, lower=True, check_finite=False)
        potri(c, lower=1)

    row["step_s"], row["lapack_floor_s"] = best_of(step, 5), best_of(lapack_floor, 5)
    row["step_over_lapack"] = row["step_s"] / row["lapack_floor_s"]
    return row


def _run(tree: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--measure"],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=1200,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _paired(other: str, folder: str) -> dict:
    """Run ``paired`` in a fresh process, the other tree's package copied as ``pigp_other``."""
    import shutil

    packages = os.path.join(folder, "packages")
    shutil.copytree(os.path.join(other, "pigp"), os.path.join(packages, "pigp_other"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, packages]), TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--measure-paired", "pigp_other"],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=3600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _worktree(commit: str, folder: str) -> str:
    path = os.path.join(folder, commit)
    subprocess.run(
        ["git", "-C", ROOT, "worktree", "add", "--detach", path, commit],
        check=True,
        capture_output=True,
    )
    return path


KEYS = ("seed_steps_per_s", "step_s", "lapack_floor_s", "step_over_lapack")


def _lapack_step(pkg):
    """``(step, K)``: a function running one training step at N = 1000 (LAPACK's back
    end) with ``pkg``, and the joint covariance it factorises."""
    import numpy as np

    rng = np.random.default_rng(0)
    X_u, X_f = rng.uniform(size=(500, 2)), rng.uniform(size=(500, 2))
    model = pkg.PIGP(
        pkg.kernels.SquaredExponential(1.0, [0.3, 0.5]),
        pkg.operators.heat(1.0),
        noise_u=1e-2,
        noise_f=1e-2,
    )
    model.fit(X_u, np.sin(3 * X_u[:, 0]), X_f, np.cos(2 * X_f[:, 1]), steps=0, optimizer="adam")
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    adam = pkg.training.Adam(1e-9)
    state = adam.init(objective.variables)

    def step():
        list(pkg.training.adam_steps(objective, Xs, y, 1, adam, state))

    step()
    return step, objective.gram(Xs)


def _adam_call(pkg):
    """A function running one compiled call of 250 Adam steps on the seed's problem."""
    import numpy as np

    g20, g30 = np.linspace(0, 1, 20), np.linspace(0, 1, 30)
    X_u, X_f = np.stack([g20, g20], 1), np.stack([g30, g30], 1)
    model = pkg.PIGP(
        pkg.kernels.SquaredExponential(), pkg.operators.heat(1.0), noise_u=1e-3, noise_f=1e-3
    )
    model.fit(X_u, np.sin(X_u[:, 0]), X_f, np.cos(X_f[:, 0]), steps=250, optimizer="adam")
    objective = model.objective()
    Xs, y = model.data.tensors(model.dtype)
    adam = pkg.training.Adam(1e-5)

    def call():
        for _ in pkg.training.adam_steps(
            objective, Xs, y, 250, adam, adam.init(objective.variables)
        ):
            pass

    call()
    return call


def paired(other_package: str, pairs: int = 30) -> dict:
    """Both versions in this process, calls interleaved (see the module)."""
    import importlib

    import numpy as np

    import pigp
    import pigp.fitting.training

    other = importlib.import_module(other_package)
    importlib.import_module(other_package + ".training")
    out = {}
    setups = (("lapack_step_1000", lambda p: _lapack_step(p)[0]), ("adam_250_seed", _adam_call))
    for name, setup in setups:
        this_call, other_call = setup(pigp), setup(other)
        times = []
        for i in range(pairs):
            order = [this_call, other_call] if i % 2 else [other_call, this_call]
            measured = {}
            for call in order:
                start = time.perf_counter()
                call()
                measured[call] = time.perf_counter() - start
            times.append((measured[this_call], measured[other_call]))
        a, b = np.array(times).T
        ratios = a / b
        out[name] = {
            "this_median_s": float(np.median(a)),
            "other_median_s": float(np.median(b)),
            "ratio_median": float(np.median(ratios)),
            "ratio_q25": float(np.percentile(ratios, 25)),
            "ratio_q75": float(np.percentile(ratios, 75)),
        }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="the other version: a git commit", default=None)
    parser.add_argument("--tree", help="the other version: a source tree", default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "versions.json"))
    parser.add_argument("--paired", action="store_true", help="both in one process")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure-paired", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure()))
        return
    if args.measure_paired:
        print(json.dumps(paired(args.measure_paired)))
        return
    if (args.against is None) == (args.tree is None):
        parser.error("give --against COMMIT or --tree PATH")
    head = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        other = args.tree or _worktree(args.against, folder)
        if args.paired:
            try:
                result = _paired(other, folder)
            finally:
                if args.against:
                    subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", other])
            print(f"this ({head}) against {args.against or args.tree}, in one process:")
            for name, row in result.items():
                print(
                    f"  {name:18} this {row['this_median_s']:.4f} s, other "
                    f"{row['other_median_s']:.4f} s (medians); paired ratio "
                    f"{row['ratio_median']:.3f} [quartiles {row['ratio_q25']:.3f}, "
                    f"{row['ratio_q75']:.3f}]"
                )
            write_json(args.out, {"this": head, "other": args.against or args.tree, **result})
            return
        versions = {f"this ({head})": ROOT, f"other ({args.against or args.tree})": other}
        rounds = []
        try:
            for r in range(args.rounds):
                order = list(versions.items())
                if r % 2:  # alternate which version goes first
                    order.reverse()
                row = {name: _run(tree) for name, tree in order}
                rounds.append(row)
                print(
                    f"round {r + 1}: "
                    + "; ".join(
                        f"{name}: {row[name]['seed_steps_per_s']:.0f} steps/s" for name in versions
                    ),
                    flush=True,
                )
        finally:
            if args.against:
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", other])
    this, that = list(versions)
    summary = {}
    print(f"\n{'':22}{this:>22}{that:>22}   per-round ratio: median [min, max]")
    for key in KEYS:
        if not all(key in row[this] and key in row[that] for row in rounds):
            continue
        a = [row[this][key] for row in rounds]
        b = [row[that][key] for row in rounds]
        ratios = [x / y for x, y in zip(a, b)]
        summary[key] = {
            this: statistics.median(a),
            that: statistics.median(b),
            "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
        }
        print(
            f"{key:22}{statistics.median(a):22.4g}{statistics.median(b):22.4g}   "
            f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"
        )
    write_json(args.out, {"versions": versions, "rounds": rounds, "summary": summary})


if __name__ == "__main__":
    main()
