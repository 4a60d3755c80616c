"""Nonlinear evolution equations by space-time collocation through the sparse
inverse-Cholesky engine: Burgers and Allen-Cahn at 10^4-10^5 points against their
references.

- Burgers ``u_t + u u_x = nu u_xx`` on ``x in [-1, 1], t in [0, 1]``, ``u(x, 0) = -sin(pi
  x)``, ``u(+-1, t) = 0``, for ``nu = 0.02`` and ``0.01/pi``; the reference by the
  Cole-Hopf transform (``pigp.experiments.nonlinear.burgers_reference``).
- Allen-Cahn ``u_t = 1e-4 u_xx - 5 u^3 + 5 u`` on the same domain, ``u(x, 0) = x^2 cos(pi
  x)``, periodic in x; the reference by a Fourier spectral method (``allen_cahn_reference``:
  ETDRK4, Kassam & Trefethen, SIAM J. Sci. Comput. 26, 2005), whose trace at ``x = +-1``
  is the Dirichlet data of the collocation (the periodic solution's own boundary values).

The points: an ``n_x x n_t`` grid of the open domain (the equation), the initial line and
the two walls on the same spacings (the data); Matérn 7/2 with lengthscales ``(l_x, l_t)``,
the ordering in the kernel's metric; Gauss-Newton from ``u = 0`` until the solution
changes by less than 1e-8 (``pigp.engines.cholesky.collocation.gauss_newton``). The
error is the relative L2 over the grid of the equation's points. Each run is a fresh
process.

    python benchmarks/collocation_evolution.py --runs burgers:0.02:100:100 --out X.json
"""

import argparse
import json
import math
import time

from common import in_fresh_process, peak_gb, write_json

PI = math.pi
#: Lengthscales (l_x, l_t) by problem.
LENGTHSCALES = {
    "burgers-0.02": (0.1, 0.2),
    "burgers-0.0032": (0.02, 0.05),
    "allen-cahn": (0.02, 0.05),
}


def allen_cahn_reference(x, t, modes: int = 1024, dt: float = 5e-5):
    """``u(x_j, t_k)`` (len(t), len(x)) of Allen-Cahn, periodic on ``[-1, 1)``, by ETDRK4
    in Fourier space (``modes`` grid points) with step ``dt``, read at the grid's
    points by the Fourier interpolant."""
    import numpy as np

    grid = -1 + 2 * np.arange(modes) / modes
    k = np.fft.rfftfreq(modes, d=2.0 / modes) * 2 * PI
    L = -1e-4 * k**2 + 5.0
    E, E2 = np.exp(dt * L), np.exp(dt * L / 2)
    # The phi functions by contour integrals (Kassam & Trefethen).
    r = np.exp(1j * PI * (np.arange(1, 33) - 0.5) / 32)
    LR = dt * L[:, None] + r[None, :]
    Q = dt * np.real(np.mean((np.exp(LR / 2) - 1) / LR, axis=1))
    f1 = dt * np.real(np.mean((-4 - LR + np.exp(LR) * (4 - 3 * LR + LR**2)) / LR**3, axis=1))
    f2 = dt * np.real(np.mean((2 + LR + np.exp(LR) * (-2 + LR)) / LR**3, axis=1))
    f3 = dt * np.real(np.mean((-4 - 3 * LR - LR**2 + np.exp(LR) * (4 - LR)) / LR**3, axis=1))

    def N(v_hat):
        v = np.fft.irfft(v_hat, n=modes)
        return np.fft.rfft(-5.0 * v**3)

    v_hat = np.fft.rfft(grid**2 * np.cos(PI * grid))
    out = np.empty((len(t), len(x)))
    times = np.asarray(t, np.float64)
    steps = np.rint(times / dt).astype(int)
    phase = np.exp(1j * np.outer(np.asarray(x) + 1, k))  # the interpolant at x

    def read(v_hat):
        c = v_hat.copy() / modes
        c[1:] *= 2
        if modes % 2 == 0:
            c[-1] /= 2
        return np.real(phase @ c)

    step = 0
    for j in np.argsort(steps):
        while step < steps[j]:
            Nv = N(v_hat)
            a = E2 * v_hat + Q * Nv
            Na = N(a)
            b = E2 * v_hat + Q * Na
            Nb = N(b)
            c = E2 * a + Q * (2 * Nb - Nv)
            Nc = N(c)
            v_hat = E * v_hat + Nv * f1 + 2 * (Na + Nb) * f2 + Nc * f3
            step += 1
        out[j] = read(v_hat)
    return out


def _problem(name: str, nu: float | None):
    """``(equation, initial(x), reference(x, t) -> (n_t, n_x), walls)``: ``walls`` whether
    the data on ``x = +-1`` are the reference's there (else 0)."""
    import numpy as np

    from pigp.experiments.nonlinear import burgers_equation, burgers_reference
    from pigp.operators import D, Identity, nonlinear

    if name == "burgers":

        def reference(x, t):
            X = np.stack(np.meshgrid(x, t), -1).reshape(-1, 2)
            return burgers_reference(X, nu).reshape(len(t), len(x))

        return burgers_equation(nu), lambda x: -np.sin(PI * x), reference, False

    def allen_cahn(v, p):
        return v["t"] - 1e-4 * v["xx"] + 5 * v["u"] ** 3 - 5 * v["u"]

    features = {"u": Identity, "t": D("t"), "xx": D("x", 2)}
    equation = nonlinear(allen_cahn, features).with_dims("x", "t")
    return equation, lambda x: x**2 * np.cos(PI * x), allen_cahn_reference, True


def run(
    name: str,
    nu: float | None,
    n_x: int,
    n_t: int,
    rho: float,
    lengthscales,
    iterations=40,
    windows: int = 1,
) -> dict:
    import numpy as np

    import pigp
    from pigp.engines.cholesky.collocation import gauss_newton

    equation, initial, reference, walls = _problem(name, nu)
    x = -1 + 2 * np.arange(1, n_x + 1) / (n_x + 1)
    t = np.arange(1, n_t + 1) / n_t
    interior = np.stack(np.meshgrid(x, t), -1).reshape(-1, 2)
    edge = np.concatenate([[-1.0], x, [1.0]])
    boundary = np.concatenate(
        [np.c_[edge, np.zeros_like(edge)], np.c_[-np.ones(n_t), t], np.c_[np.ones(n_t), t]]
    )
    both = reference(np.concatenate([x, [-1.0, 1.0]]), t)
    truth = both[:, :n_x].reshape(-1)
    sides = both[:, n_x:] if walls else np.zeros((n_t, 2))
    values = np.concatenate([initial(edge), sides[:, 0], sides[:, 1]])
    kernel = pigp.kernels.Matern72(lengthscales=list(lengthscales))
    if windows > 1:
        return _marched(
            equation, kernel, x, t, both, truth, walls, initial, rho, iterations, windows
        ) | {
            "problem": name,
            "nu": nu,
            "n_x": n_x,
            "n_t": n_t,
            "interior": n_x * n_t,
            "lengthscales": list(lengthscales),
            "rho": rho,
        }
    start = time.perf_counter()
    solution = gauss_newton(
        equation,
        kernel,
        boundary,
        values,
        interior,
        np.zeros(len(interior)),
        rho=rho,
        iterations=iterations,
    )
    seconds = time.perf_counter() - start
    u = solution.u[len(boundary) :]
    its = solution.engine.timings.iterations
    return {
        "problem": name,
        "nu": nu,
        "n_x": n_x,
        "n_t": n_t,
        "interior": len(interior),
        "boundary": len(boundary),
        "lengthscales": list(lengthscales),
        "rho": rho,
        "error": float(np.linalg.norm(u - truth) / np.linalg.norm(truth)),
        "max_error": float(np.max(np.abs(u - truth))),
        "gauss_newton_steps": len(solution.steps),
        "converged": bool(solution.converged),
        "last_change": solution.steps[-1],
        "pcg_iterations": its,
        "seconds": seconds,
        "peak_gb": peak_gb(),
    }


def _marched(equation, kernel, x, t, both, truth, walls, initial, rho, iterations, windows):
    """The run's figures by ``march`` over ``windows`` equal time windows."""
    import numpy as np

    from pigp.engines.cholesky.marching import march

    n_x, n_t = len(x), len(t)
    if n_t % windows:
        raise SystemExit(f"n_t {n_t} is not a multiple of the windows {windows}")
    sides = both[:, n_x:] if walls else np.zeros((n_t, 2))
    edges = np.concatenate([[0.0], t[n_t // windows - 1 :: n_t // windows]])
    start = time.perf_counter()
    result = march(
        equation,
        kernel,
        x[:, None],
        np.array([[-1.0], [1.0]]),
        np.concatenate([initial(np.array([-1.0, 1.0])), initial(x)]),
        lambda s: sides[int(np.argmin(np.abs(t - s)))],
        edges,
        n_t // windows,
        rho=rho,
        iterations=iterations,
    )
    seconds = time.perf_counter() - start
    u = result.u.reshape(-1)
    return {
        "windows": windows,
        "boundary": int(n_x + 2 + 2 * n_t),
        "error": float(np.linalg.norm(u - truth) / np.linalg.norm(truth)),
        "max_error": float(np.max(np.abs(u - truth))),
        "gauss_newton_steps": int(sum(result.steps)),
        "window_steps": result.steps,
        "converged": bool(all(result.converged)),
        "last_change": None,
        "pcg_iterations": [i for window in result.pcg for i in window],
        "seconds": seconds,
        "peak_gb": peak_gb(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        nargs="*",
        default=[
            "burgers:0.02:100:100",
            "allen-cahn:0:128:100",
        ],
        help="problem:nu:n_x:n_t[:l_x:l_t] (nu ignored for allen-cahn)",
    )
    parser.add_argument("--rho", type=float, default=5.0)
    parser.add_argument("--lengthscales", nargs=2, type=float, default=None)
    parser.add_argument("--iterations", type=int, default=40, help="most Gauss-Newton steps")
    parser.add_argument(
        "--windows", type=int, default=1, help="time windows (march): n_t a multiple of it"
    )
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)  # a child's run
    parser.add_argument("--out", default="build/benchmarks/collocation_evolution.json")
    args = parser.parse_args()
    if args.one is not None:
        name, nu, n_x, n_t = args.one
        nu = None if name == "allen-cahn" else float(nu)
        key = name if nu is None else f"{name}-{nu:.2g}"
        lengthscales = args.lengthscales or LENGTHSCALES[key]
        row = run(
            name, nu, int(n_x), int(n_t), args.rho, lengthscales, args.iterations, args.windows
        )
        print(json.dumps(row))
        return
    print(
        f"{'problem':<11} {'nu':>7} {'points':>7} {'l_x, l_t':>11} {'error':>9} {'max err':>8} "
        f"{'GN':>3} {'its':>7} {'seconds':>7} {'peak GB':>7}",
        flush=True,
    )
    rows = []
    for spec in args.runs:
        name, nu, n_x, n_t, *own = spec.split(":")
        lengthscales = own or args.lengthscales
        extra = ["--lengthscales", *map(str, lengthscales)] if lengthscales else []
        extra += ["--iterations", str(args.iterations), "--windows", str(args.windows)]
        row = in_fresh_process(
            [__file__, "--rho", str(args.rho), *extra, "--one", name, nu, n_x, n_t]
        )
        rows.append(row)
        its = row["pcg_iterations"]
        print(
            f"{name:<11} {row['nu'] or 0:7.4f} {row['interior']:7d} "
            f"{row['lengthscales'][0]:5.3f},{row['lengthscales'][1]:5.3f} {row['error']:9.2e} "
            f"{row['max_error']:8.1e} {row['gauss_newton_steps']:3d}"
            f"{'' if row['converged'] else '*'}"
            f"{min(its):>3}-{max(its):<3} {row['seconds']:7.1f} {row['peak_gb']:7.2f}",
            flush=True,
        )
        write_json(args.out, rows)  # after each row: a long run keeps what it measured


if __name__ == "__main__":
    main()
