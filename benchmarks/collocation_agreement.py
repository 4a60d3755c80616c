"""The sparse inverse-Cholesky engine against dense linear algebra at N ~ 2,500: the same
Gauss-Newton steps, the same kernel and nugget, the posterior mean of u by PCG through
the sparse factors against ``K(x, data) K(data, data)^-1 y`` with dense matrices, by the
radius factor rho.

Problems (Dirichlet data on the unit square's boundary, an n x n interior grid, Matérn
7/2 with lengthscale 0.3): Poisson -Lap u = f with u = sin(pi x) sin(pi y) + 0.5 sin(4 pi
x) sin(3 pi y) (linear: one step), -Lap u + u^3 = f with Chen et al.'s u
(``pigp.experiments.nonlinear.elliptic_solution``), and the heat equation u_t - u_xx = f in
(x, t) with u = exp(-t) sin(pi x), data at t = 0 and on the walls x = 0, 1 (by space-time
collocation: linear, one step). Each (problem, rho, nugget) runs in a
fresh process (its peak memory is its own).

    python benchmarks/collocation_agreement.py --grid 50 --rhos 3 4 5 6 --out X.json
"""

import argparse
import json
import time

from common import in_fresh_process, peak_gb, unit_square_grid, write_json

PI = 3.141592653589793
#: Burgers' kernel lengthscales (x, t).
BURGERS_LENGTHSCALES = (0.1, 0.2)


def _burgers_grid(n):
    """Burgers' points for ``--grid n``: n^2 interior points as a 2n x n/2 grid of
    [-1, 1] x (0, 1] (the front at x = 0 needs the finer spacing in x: on a 50 x 50 grid
    Gauss-Newton did not converge in 40 steps), the initial line and the walls."""
    import numpy as np

    nx, nt = 2 * n, n // 2
    x = np.linspace(-1, 1, nx + 2)[1:-1]
    t = np.linspace(0, 1, nt + 1)[1:]
    interior = np.stack(np.meshgrid(x, t), -1).reshape(-1, 2)
    edge = np.linspace(-1, 1, nx + 2)
    boundary = np.concatenate(
        [np.c_[edge, 0 * edge], np.c_[-np.ones(nt), t], np.c_[np.ones(nt), t]]
    )
    return boundary, interior


def _problem(name):
    """``(equation, u, forcing)`` of a problem."""
    import numpy as np

    from pigp.experiments.nonlinear import _elliptic_forcing, elliptic_equation, elliptic_solution
    from pigp.operators import D, laplacian, nonlinear

    if name == "elliptic":
        return elliptic_equation(), elliptic_solution, _elliptic_forcing
    if name == "burgers":  # (x, t) on [-1, 1] x [0, 1], nu = 0.02, Cole-Hopf's u
        from pigp.experiments.nonlinear import burgers_equation, burgers_reference

        def initial_or_reference(X):
            return burgers_reference(X, 0.02)

        return burgers_equation(0.02), initial_or_reference, lambda X: np.zeros(len(X))
    if name == "heat":  # (x, t): u_t - u_xx = f, u = exp(-t) sin(pi x)

        def heat_u(X):
            return np.exp(-X[:, 1]) * np.sin(PI * X[:, 0])

        def heat_f(X):
            return (PI**2 - 1) * heat_u(X)

        def heat(v, p):
            return v["t"] - v["xx"]

        features = {"t": D("t"), "xx": D("x", 2)}
        return nonlinear(heat, features).with_dims("x", "t"), heat_u, heat_f

    def u(X):
        x, y = X[:, 0], X[:, 1]
        return np.sin(PI * x) * np.sin(PI * y) + 0.5 * np.sin(4 * PI * x) * np.sin(3 * PI * y)

    def forcing(X):
        x, y = X[:, 0], X[:, 1]
        return 2 * PI**2 * np.sin(PI * x) * np.sin(PI * y) + 12.5 * PI**2 * np.sin(
            4 * PI * x
        ) * np.sin(3 * PI * y)

    def minus_laplacian(v, p):
        return -v["lap"]

    equation = nonlinear(minus_laplacian, {"lap": laplacian("x", "y")}).with_dims("x", "y")
    return equation, u, forcing


def run(problem: str, n: int, rho: float, nugget: float) -> dict:
    import numpy as np

    import pigp
    from pigp.engines.cholesky.collocation import gauss_newton
    from pigp.engines.cholesky.factor import dense_block

    equation, u, forcing = _problem(problem)
    boundary, interior = _burgers_grid(n) if problem == "burgers" else unit_square_grid(n)
    lengthscales = [0.3, 0.3]
    if problem == "heat":  # data at t = 0 and on the walls; none at t = 1
        boundary = boundary[(boundary[:, 1] < 1) | (boundary[:, 0] == 0) | (boundary[:, 0] == 1)]
    if problem == "burgers":
        lengthscales = list(BURGERS_LENGTHSCALES)
    kernel = pigp.kernels.Matern72(lengthscales=lengthscales)
    g, f = u(boundary), forcing(interior)
    start = time.perf_counter()
    solution = gauss_newton(equation, kernel, boundary, g, interior, f, rho=rho, nugget=nugget)
    seconds = time.perf_counter() - start
    sparse_peak = peak_gb()
    sparse = solution.u[len(boundary) :]
    # Dense: the same linearisations, from the dense solution's own last step.
    engine = solution.engine
    b, n_i = len(boundary), len(interior)
    points, _, _ = engine.features.measurements()
    data_points = points[engine.data_at]
    from pigp.operators.linearisation import Linearisation

    names = list(equation.features)
    values = np.zeros((len(names), n_i))
    derivatives = [name for name in names if name != "u"]
    kinds = [0 if name == "u" else 1 + derivatives.index(name) for name in names]
    linearisation = Linearisation(equation, values)
    dense = np.zeros(n_i)
    start = time.perf_counter()
    # The sparse steps' dampings replayed: each step moves that fraction of the way.
    for damping in solution.dampings:
        linearisation.assign(values)
        coefficients = np.zeros((n_i, len(engine.features.operators)))
        for a, c in enumerate(linearisation.jacobian()):
            coefficients[:, kinds[a]] += np.asarray(c) * np.ones(n_i)
        W = engine.combination(coefficients) @ engine.weights
        m = b + n_i
        K = dense_block(kernel, engine.terms, data_points, W, np.arange(m), np.arange(m))
        K += nugget * np.diag(np.diag(K))
        alpha = np.linalg.solve(K, np.concatenate([g, linearisation.right_hand_side(f)]))
        kinds_count = len(engine.features.operators)
        X = np.concatenate([interior] * kinds_count + [data_points])
        weights = np.concatenate(
            [engine.weights[b : b + n_i], engine.weights[len(engine.features.points) :], W]
        )
        columns = kinds_count * n_i + np.arange(m)
        cross = dense_block(kernel, engine.terms, X, weights, np.arange(kinds_count * n_i), columns)
        mean = cross @ alpha
        full = np.stack([mean[k * n_i : (k + 1) * n_i] for k in kinds])
        dense = dense + damping * (mean[:n_i] - dense)
        values = values + damping * (full - values)
    dense_seconds = time.perf_counter() - start
    truth = u(interior)
    return {
        "problem": problem,
        "interior": n_i,
        "rho": rho,
        "nugget": nugget,
        "difference_from_dense": float(np.linalg.norm(sparse - dense) / np.linalg.norm(dense)),
        "sparse_error": float(np.linalg.norm(sparse - truth) / np.linalg.norm(truth)),
        "dense_error": float(np.linalg.norm(dense - truth) / np.linalg.norm(truth)),
        "gauss_newton_steps": len(solution.steps),
        "pcg_iterations": solution.engine.timings.iterations,
        "sparse_seconds": seconds,
        "dense_seconds": dense_seconds,
        "sparse_peak_gb": sparse_peak,
        "factor_entries_per_column": solution.engine.factor.nnz() / len(points),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=50, help="n: n^2 interior points")
    parser.add_argument("--problems", nargs="*", default=["poisson", "elliptic", "heat", "burgers"])
    parser.add_argument("--rhos", nargs="*", type=float, default=[3.0, 4.0, 5.0, 6.0])
    parser.add_argument("--nuggets", nargs="*", type=float, default=[1e-10])
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # a child's run
    parser.add_argument("--out", default="build/benchmarks/collocation_agreement.json")
    args = parser.parse_args()
    if args.one is not None:
        problem, rho, nugget = args.one
        print(json.dumps(run(problem, args.grid, float(rho), float(nugget))))
        return
    print(
        f"{'problem':<9} {'rho':>4} {'nugget':>7} {'vs dense':>9} {'error':>9} "
        f"{'dense err':>9} {'sparse s':>8} {'dense s':>7} {'its':>7} {'peak GB':>7}",
        flush=True,
    )
    rows = []
    for problem in args.problems:
        for nugget in args.nuggets:
            for rho in args.rhos:
                row = in_fresh_process(
                    [__file__, "--grid", str(args.grid), "--one", problem, str(rho), str(nugget)]
                )
                rows.append(row)
                its = row["pcg_iterations"]
                print(
                    f"{problem:<9} {rho:4.0f} {nugget:7.0e} {row['difference_from_dense']:9.1e} "
                    f"{row['sparse_error']:9.2e} {row['dense_error']:9.2e} "
                    f"{row['sparse_seconds']:8.1f} {row['dense_seconds']:7.1f} "
                    f"{min(its):>3}-{max(its):<3} {row['sparse_peak_gb']:7.2f}",
                    flush=True,
                )
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
