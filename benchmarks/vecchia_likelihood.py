"""The Vecchia log-likelihood against the exact log marginal likelihood at N = 2,500: its
value and where its maximum in a PDE coefficient and in a lengthscale lies, by rho.

The heat operator f = u_t - alpha u_xx on (x, t) in [0, 1]^2: 1,250 u values and 1,250 f
values at their own random points, drawn together from the GP prior (Matérn 5/2,
lengthscales (0.25, 0.5), alpha = 1) with noise variance 1e-4 on each, so that the
exact likelihood's maximum lies near the truth. The
exact log density is computed with dense matrices (``dense_block``, NumPy's
Cholesky); the Vecchia one by ``pigp.engines.cholesky.likelihood`` over the measurements'
maximin order (u and f values ordered together, as point values).

    python benchmarks/vecchia_likelihood.py --out build/benchmarks/vecchia_likelihood.json
"""

import argparse
import time

import numpy as np
from common import peak_gb, write_json

PI = np.pi


def vertex(x, values) -> float:
    """The maximum of the parabola through the largest of ``values`` and its neighbours."""
    i = int(np.argmax(values))
    if i == 0 or i == len(values) - 1:
        return float(x[i])
    a, b, c = values[i - 1], values[i], values[i + 1]
    return float(x[i] + 0.5 * (x[1] - x[0]) * (a - c) / (a - 2 * b + c))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1250, help="u values, and as many f")
    parser.add_argument("--rhos", nargs="*", type=float, default=[2.0, 3.0, 4.0, 5.0, 6.0, 8.0])
    parser.add_argument("--out", default="build/benchmarks/vecchia_likelihood.json")
    args = parser.parse_args()

    import pigp
    from pigp.engines.cholesky.factor import Terms, dense_block
    from pigp.engines.cholesky.likelihood import vecchia_log_likelihood
    from pigp.engines.cholesky.ordering import pattern
    from pigp.operators import D, Identity

    rng = np.random.default_rng(0)
    n = args.n
    Xu, Xf = rng.uniform(size=(n, 2)), rng.uniform(size=(n, 2))
    alpha = pigp.Parameter(1.0)
    terms = Terms.of([Identity.resolve(2), (D(1) - alpha * D(0, 2)).resolve(2)])
    noise = 1e-4
    points = np.concatenate([Xu, Xf])
    kinds = np.concatenate([np.zeros(n, int), np.ones(n, int)])
    variances = np.full(2 * n, noise)
    kernel = pigp.kernels.Matern52(lengthscales=[0.25, 0.5])
    W = terms.weights(points, kinds).numpy()
    K = dense_block(kernel, terms, points, W, np.arange(2 * n), np.arange(2 * n))
    y = np.linalg.cholesky(K + np.diag(variances)) @ rng.standard_normal(2 * n)

    def dense():
        W = terms.weights(points, kinds).numpy()
        K = dense_block(kernel, terms, points, W, np.arange(2 * n), np.arange(2 * n))
        L = np.linalg.cholesky(K + np.diag(variances + 1e-12 * np.diag(K)))
        z = np.linalg.solve(L, y)
        return float(-0.5 * z @ z - np.log(np.diag(L)).sum() - n * np.log(2 * PI))

    patterns = {rho: pattern(points, kinds, rho=rho) for rho in args.rhos}

    def vecchia(rho):
        W = terms.weights(points, kinds)
        return float(
            vecchia_log_likelihood(kernel, terms, points, W, patterns[rho], y, variances, 1e-12)
        )

    def sweep(setter, values):
        rows = {"dense": []} | {rho: [] for rho in args.rhos}
        for value in values:
            setter(value)
            rows["dense"].append(dense())
            for rho in args.rhos:
                rows[rho].append(vecchia(rho))
        setter(None)
        return rows

    def set_alpha(value):
        alpha.assign(1.0 if value is None else value)

    def set_lengthscale(value):
        kernel.lengthscales.assign([0.25 if value is None else value, 0.5])

    alphas = np.linspace(0.8, 1.2, 21)
    lengthscales = np.linspace(0.15, 0.35, 21)
    start = time.perf_counter()
    by_alpha = sweep(set_alpha, alphas)
    by_lengthscale = sweep(set_lengthscale, lengthscales)
    rows = []
    timing = {}
    for rho in args.rhos:
        t = time.perf_counter()
        vecchia(rho)
        timing[rho] = time.perf_counter() - t
    t = time.perf_counter()
    dense()
    timing["dense"] = time.perf_counter() - t
    print(
        f"{'':>6} {'log p at truth':>15} {'gap':>8} {'argmax alpha':>13} {'argmax l_x':>11} "
        f"{'entries/col':>11} {'time s':>7}"
    )
    for key in ["dense", *args.rhos]:
        at = int(np.argmin(np.abs(alphas - 1.0)))
        value = by_alpha[key][at]
        row = {
            "rho": None if key == "dense" else key,
            "log_likelihood": value,
            "gap": value - by_alpha["dense"][at],
            "argmax_alpha": vertex(alphas, by_alpha[key]),
            "argmax_lengthscale_x": vertex(lengthscales, by_lengthscale[key]),
            "seconds": timing[key],
            "by_alpha": by_alpha[key],
            "by_lengthscale": by_lengthscale[key],
        }
        if key != "dense":
            pat = patterns[key]
            row["entries_per_column"] = float(
                sum(np.searchsorted(r, c).sum() + len(c) for c, r in pat.supernodes) / pat.size
            )
        rows.append(row)
        name = "dense" if key == "dense" else f"rho {key:g}"
        print(
            f"{name:>6} {value:15.1f} {row['gap']:8.1f} {row['argmax_alpha']:13.4f} "
            f"{row['argmax_lengthscale_x']:11.4f} {row.get('entries_per_column', 2 * n):11.0f} "
            f"{row['seconds']:7.2f}",
            flush=True,
        )
    write_json(
        args.out,
        {
            "values": 2 * n,
            "alphas": alphas.tolist(),
            "lengthscales": lengthscales.tolist(),
            "rows": rows,
            "sweep_seconds": time.perf_counter() - start,
            "peak_gb": peak_gb(),
        },
    )


if __name__ == "__main__":
    main()
