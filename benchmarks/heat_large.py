"""A linear problem at 10^4-10^5 values: heat with the diffusivity learned, by the sparse
inverse-Cholesky engine (the Vecchia log-likelihood) against the sparse variational model
given the same time.

u_t = alpha Lap u + f with alpha = 0.1 on [0, 1]^2 in (x, t) (``--space 1``, the default)
or [0, 1]^3 in (x, y, t) (``--space 2``), u a sum of modes prod_j sin(k_j pi x_j) cos(w pi
t + phi) with each k_j in 1, 2, 3 (amplitudes, frequencies and phases drawn once, seed
123); N/2 values of u and N/2 of f at random points, each with Gaussian noise of 1% of its
RMS. Both models start from alpha = 0.2 (positive) and Matérn 5/2 at its defaults and
learn the kernel, alpha and the two noises.

  cholesky  PIGP(engine="cholesky", engine_options={"learn": "vecchia"}): L-BFGS-B (at
            most --steps iterations) on the Vecchia log-likelihood of all N values
            (pattern at learn_rho = 3), the mean through the factor at rho = 5.
  sparse    SparsePIGP with M = 512 inducing points, its defaults (warm start on
            Titsias's bound of a subset, then Adam and natural-gradient steps on
            minibatches), stopped at its first check (every 250 steps) after the
            cholesky row's time (fit and predict) at the same N.

Errors are u's relative L2 at cell centres (100^2 in (x, t), 20^3 in (x, y, t)) against
the exact u; "cover" is the share of those points inside the 95% band. Each row a fresh
process (its peak memory its own).

    python benchmarks/heat_large.py --sizes 10000 --out build/benchmarks/h.json
"""

import argparse
import json
import time

from common import in_fresh_process, peak_gb, write_json

ALPHA = 0.1


def modes(space: int):
    """``[(k, amplitude, w, phi)]``: the modes of u, ``k`` a wavenumber per space column."""
    import itertools

    import numpy as np

    rng = np.random.default_rng(123)
    out = []
    for k in itertools.product((1, 2, 3), repeat=space):
        amplitude = rng.standard_normal() / np.prod(k)
        out.append((k, amplitude, 1 + rng.integers(3), 2 * np.pi * rng.random()))
    return out


def solution(X):
    """``(u, f)`` at the points X (n, space + 1), the last column t."""
    import numpy as np

    space = X.shape[1] - 1
    t = X[:, -1]
    u, f = np.zeros(len(X)), np.zeros(len(X))
    for k, c, w, phi in modes(space):
        shape = c * np.prod([np.sin(kc * np.pi * X[:, j]) for j, kc in enumerate(k)], axis=0)
        u += shape * np.cos(np.pi * w * t + phi)
        decay = ALPHA * np.pi**2 * sum(kc * kc for kc in k) * np.cos(np.pi * w * t + phi)
        f += shape * (-np.pi * w * np.sin(np.pi * w * t + phi) + decay)
    return u, f


def data(n: int, space: int, seed: int = 0) -> tuple:
    import numpy as np

    rng = np.random.default_rng(seed)
    X_u, X_f = rng.random((n // 2, space + 1)), rng.random((n - n // 2, space + 1))
    y_u, y_f = solution(X_u)[0], solution(X_f)[1]
    y_u = y_u + 0.01 * np.sqrt(np.mean(y_u**2)) * rng.standard_normal(len(y_u))
    y_f = y_f + 0.01 * np.sqrt(np.mean(y_f**2)) * rng.standard_normal(len(y_f))
    return X_u, y_u, X_f, y_f


def operator(alpha, space: int):
    from pigp.operators import D, laplacian

    names = ("x", "y")[:space]
    return (D("t") - alpha * laplacian(*names)).with_dims(*names, "t")


def grid(space: int):
    """Cell centres: 100^2 in (x, t), 20^3 in (x, y, t)."""
    import numpy as np

    n = 100 if space == 1 else 20
    g = (np.arange(n) + 0.5) / n
    return np.stack(np.meshgrid(*[g] * (space + 1), indexing="ij"), -1).reshape(-1, space + 1)


def run(case: dict) -> dict:
    import numpy as np

    import pigp

    space = case["space"]
    X_u, y_u, X_f, y_f = data(case["n"], space)
    alpha = pigp.Parameter(0.2, positive=True)
    start = time.perf_counter()
    if case["method"] == "cholesky":
        options = {
            "rho": case["rho"],
            "learn": case.get("learn", "vecchia"),
            "learn_rho": case["learn_rho"],
        }
        noises = {}
        if case.get("noise_learned"):
            noises = {k: pigp.Parameter(1e-3, positive=True) for k in ("noise_u", "noise_f")}
        model = pigp.PIGP(
            pigp.kernels.Matern52(),
            operator(alpha, space),
            engine="cholesky",
            engine_options=options,
            jitter=case.get("jitter"),
            **noises,
        )
        model.fit(X_u, y_u, X_f, y_f, steps=case["steps"])
        extra = {"evaluations": len(model.report.lbfgs_evaluations)}
    else:
        budget = case["budget"]

        def stop(step, loss, model):
            return time.perf_counter() - start >= budget

        model = pigp.SparsePIGP(
            pigp.kernels.Matern52(), operator(alpha, space), num_inducing=case["m"]
        )
        model.fit(X_u, y_u, X_f, y_f, method="stochastic", steps=100_000, callback=stop)
        extra = {"steps": len(model.history)}
    fitted = time.perf_counter() - start
    X = grid(space)
    mean, var = model.predict(X)
    seconds = time.perf_counter() - start
    truth = solution(X)[0]
    return {
        **case,
        **extra,
        "alpha": float(alpha.numpy()),
        "alpha_error": float(abs(alpha.numpy() - ALPHA) / ALPHA),
        "relative_l2": float(np.linalg.norm(mean - truth) / np.linalg.norm(truth)),
        "coverage": float(np.mean(np.abs(mean - truth) <= 1.96 * np.sqrt(var))),
        "fit_seconds": fitted,
        "seconds": seconds,
        "peak_gb": peak_gb(),
        "parameters": {k: np.asarray(v).tolist() for k, v in model.parameter_values().items()},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", type=int, default=[10_000])
    parser.add_argument("--space", type=int, default=1, choices=(1, 2), help="space columns")
    parser.add_argument("--rho", type=float, default=5.0)
    parser.add_argument("--learn-rho", type=float, default=3.0)
    parser.add_argument("--steps", type=int, default=100, help="L-BFGS-B iterations")
    parser.add_argument("--inducing", type=int, default=512)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child's case, JSON
    parser.add_argument("--out", default="build/benchmarks/heat_large.json")
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run(json.loads(args.one))))
        return
    rows = []
    print(
        f"{'method':>9} {'N':>7} {'alpha':>8} {'alpha err':>9} {'u error':>9} {'cover':>6} "
        f"{'fit s':>7} {'total s':>8} {'peak GB':>8}"
    )
    for n in args.sizes:
        cholesky = {"method": "cholesky", "n": n, "space": args.space, "rho": args.rho}
        cholesky |= {"learn_rho": args.learn_rho, "steps": args.steps}
        first = in_fresh_process([__file__, "--one", json.dumps(cholesky)], timeout=7200)
        sparse = {"method": "sparse", "n": n, "space": args.space, "m": args.inducing}
        sparse["budget"] = first["seconds"]
        second = in_fresh_process([__file__, "--one", json.dumps(sparse)], timeout=7200)
        for row in (first, second):
            rows.append(row)
            print(
                f"{row['method']:>9} {row['n']:>7} {row['alpha']:8.5f} {row['alpha_error']:9.2e} "
                f"{row['relative_l2']:9.2e} {row['coverage']:6.3f} {row['fit_seconds']:7.1f} "
                f"{row['seconds']:8.1f} {row['peak_gb']:8.2f}",
                flush=True,
            )
        ratio = second["relative_l2"] / first["relative_l2"]
        print(f"{'':>9} error ratio sparse/cholesky {ratio:.2e}")
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
