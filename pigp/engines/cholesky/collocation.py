"""Kernel collocation through a sparse inverse-Cholesky factor: linear and nonlinear
(Gauss-Newton) PDE solves at 10^4-10^5 points.

The *features* are measurements of one kind each: point values (kind 0) at every point,
boundary and interior, and the operators the equation reads at the interior points
(kind 1, 2, ...). Their covariance ``Theta`` has a sparse inverse factor
(``factor.factor`` over ``ordering.pattern``), computed once per kernel. The *data* are
linear combinations of features, ``D = M F``: a boundary value picks a point value; the
equation (or, for a nonlinear one, its linearisation at the current solution) combines
the features at its point. The reduced matrix ``A = M Theta M'`` is never formed: conjugate
gradients take its products through the factor (``M U'^-1 U^-1 M' w``), preconditioned by
the factor of ``A`` itself, over the data's own maximin order (boundary values first, then
the equation at each interior point at its point's length). The features' order puts
every derivative measurement at the finest length, which suits ``Theta``; the same order
restricted to the data gave a preconditioner whose iterations grew with N (114-127 per
step at 10^4 interior points, 527-578 at 4 10^4), against 21 at 10^4 with the data's own.
The posterior mean of every feature is ``Theta M' alpha`` with ``A alpha = y``: through the
same approximate ``Theta`` as the solve (weights alone are not accurate: Chen, Owhadi &
Schafer, Math. Comp. 94, 2025).

Gauss-Newton for ``F(v(x)) = f(x)`` with features ``v = (L_1 u, ..., L_m u)``: at ``v_k``
the equation is linearised to ``sum_a dF/dv_a(v_k) L_a u = f - F(v_k) + sum_a dF/dv_a(v_k)
v_a,k`` (Chen, Hosseini, Owhadi & Stuart, J. Comput. Phys. 447, 2021), one linear solve per
step; the features' factor is reused and only the reduced factor is computed again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ... import _validation as validate
from ... import memory
from ..._tensorflow import tf
from ..._warnings import warn
from ...fitting.gauss_newton import backtrack
from ...operators import Identity
from ...operators.linear import _is_identity
from ...operators.linearisation import Linearisation
from .factor import Terms, entries_program, factor
from .ordering import Pattern, pattern
from .solve import Factor, pcg

__all__ = [
    "Features",
    "Collocation",
    "Timings",
    "Solution",
    "gauss_newton",
    "metric",
    "screening_points",
]

#: A reduced factor is kept while the solves it preconditions take at most this many
#: times the iterations of the first.
REUSE = 1.5


def metric(kernel, d: int) -> np.ndarray:
    """The scale of each input column in which a kernel's screening is isotropic: its
    lengthscales where it has them (one per column, or one for all), else 1. Ordering
    points in raw coordinates under lengthscales that differ by column (space-time
    problems) would let the long axis's neighbours crowd out the short one's."""
    lengthscales = getattr(kernel, "lengthscales", None)
    if lengthscales is None:
        return np.ones(d)
    values = np.asarray(lengthscales.numpy(), np.float64).reshape(-1)
    return np.broadcast_to(values, (d,)).copy() if values.size in (1, d) else np.ones(d)


def screening_points(kernel, points: np.ndarray) -> np.ndarray:
    """``points`` in the coordinates where ``kernel``'s screening is isotropic: divided
    by ``metric``, and for a ``Warped`` kernel whose warps read their own columns,
    first through the warps (its base kernel's lengthscales then apply), so that points
    clustered where the warp stretches (a front) are spread evenly in the ordering."""
    from ...kernels.library import Warped

    d = points.shape[1]
    if isinstance(kernel, Warped) and kernel.own_columns:
        warped = kernel.warp(tf.constant(points, tf.float64)).numpy()
        return warped / metric(kernel.kernel, d)
    return points / metric(kernel, d)


@dataclass
class Timings:
    """Seconds per stage of a solve."""

    pattern: float = 0.0
    factor: float = 0.0
    reduced_factor: float = 0.0
    pcg: float = 0.0
    iterations: list = field(default_factory=list)


@dataclass(frozen=True)
class Features:
    """The feature measurements: point values at ``points`` (kind 0), and each interior
    point's operator measurements (kinds 1..m, one per entry of ``operators[1:]``).

    Attributes:
        points: array (n_b + n_i, d): the boundary points first, then the interior ones.
        boundary: the number of boundary points.
        operators: resolved operators ``[terms of kind 0 (Identity), terms of kind 1, ...]``.
    """

    points: np.ndarray
    boundary: int
    operators: list

    @property
    def interior(self) -> int:
        return len(self.points) - self.boundary

    def measurements(self) -> tuple:
        """``(points, kinds, first)`` of every feature measurement: point values of all
        points, then each derivative kind at the interior points."""
        inner = self.points[self.boundary :]
        kinds_count = len(self.operators) - 1
        points = np.concatenate([self.points] + [inner] * kinds_count)
        kinds = np.concatenate(
            [np.zeros(len(self.points), int)]
            + [np.full(self.interior, k + 1) for k in range(kinds_count)]
        )
        first = np.zeros(len(points), bool)
        first[: self.boundary] = True
        return points, kinds, first

    def feature_index(self, kind: int) -> np.ndarray:
        """The measurement indices of kind ``kind``: all points for 0, interior for others."""
        n = len(self.points)
        if kind == 0:
            return np.arange(n)
        start = n + (kind - 1) * self.interior
        return np.arange(start, start + self.interior)


class Collocation:
    """A PDE on ``Features`` solved by kernel collocation through sparse factors.

    Args:
        kernel: a ``pigp.kernels.Kernel`` that screens (Matérn).
        features: the ``Features``.
        rho: neighbourhood radius factor of the patterns.
        nugget: relative nugget on the diagonal of every block. 1e-12 by default: on
            -Lap u + u^3 = f at 10^5 interior points (Matérn 7/2, lengthscale 0.3,
            rho 5) 1e-10 gave an error of 3.75e-6 against 9.5e-8 at 1e-12 and 5.2e-8
            at 1e-14 (which took 42-45 PCG iterations a step against 31-34); at 10^4,
            3.4e-6, 5.1e-6 and 5.8e-6 (``benchmarks/collocation_scale.py``).
        supernode: supernode reach (``ordering.pattern``).
        reuse: keep the reduced matrix's factor across solves while it preconditions
            well (``_refresh``).
    """

    def __init__(
        self, kernel, features: Features, rho=5.0, nugget=1e-12, supernode=1.3, reuse=True
    ):
        self.kernel = kernel
        self.features = features
        self.rho, self.nugget, self.supernode = rho, nugget, supernode
        self.timings = Timings()
        self.reuse = reuse
        self._preconditioner = self._fresh = self._latest = None
        self.points, self.kinds, first = features.measurements()
        memory.check_collocation(
            len(self.points), self.points.shape[1], len(features.operators), rho, supernode
        )
        self.terms = Terms.of(features.operators)
        start = time.perf_counter()
        # Screening is in the kernel's own metric: points scaled by its lengthscales.
        kernel.build(self.points)
        screened = screening_points(kernel, self.points)
        # The pattern is not kept: the factor holds its order, and its neighbour sets
        # (0.04 GB at 2*10^5 measurements) serve this factor only.
        features_pattern: Pattern = pattern(screened, self.kinds, rho, first, supernode)
        self.timings.pattern = time.perf_counter() - start
        start = time.perf_counter()
        self.weights = self.terms.weights(self.points, self.kinds, tf.float64).numpy()
        self.program = entries_program(kernel, self.terms)
        self.factor = Factor(
            factor(
                kernel,
                self.terms,
                self.points,
                self.weights,
                features_pattern,
                nugget,
                self.program,
            ),
            features_pattern.order,
        ).solves_only()
        del features_pattern
        self.timings.factor = time.perf_counter() - start
        # The data's positions: the boundary's point values and, for the equation at an
        # interior point, its first derivative measurement.
        b = features.boundary
        self.data_at = np.concatenate([np.arange(b), features.feature_index(1)])
        first = np.arange(len(self.data_at)) < b
        self.reduced_pattern = pattern(
            screened[self.data_at],
            np.zeros(len(self.data_at), int),
            rho,
            first,
            supernode,
        )

    def combination(self, coefficients: np.ndarray) -> sp.csr_matrix:
        """``M``: boundary rows pick point values; interior row ``i`` combines the kind-k
        features at point ``i`` with ``coefficients[i, k]`` (shape (n_i, kinds))."""
        f = self.features
        b, n_i = f.boundary, f.interior
        rows = [np.arange(b)]
        cols = [np.arange(b)]
        values = [np.ones(b)]
        for k in range(len(f.operators)):
            rows.append(b + np.arange(n_i))
            cols.append(f.feature_index(k)[-n_i:] if k == 0 else f.feature_index(k))
            values.append(coefficients[:, k])
        return sp.csr_matrix(
            (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
            shape=(b + n_i, len(self.points)),
        )

    def solve(
        self, coefficients: np.ndarray, y: np.ndarray, rtol: float = 1e-10, maxiter: int = 1000
    ) -> np.ndarray:
        """The posterior mean of every feature measurement given the data ``y`` =
        (boundary values, the equation's right-hand side at the interior points), for the
        equation ``sum_k coefficients[i, k] (kind k)(x_i)``; conjugate gradients to a
        relative residual of ``rtol`` in at most ``maxiter`` iterations (a warning
        where they stop short).

        Returns:
            array (n_measurements,): the mean of each feature measurement.
        """
        M = self.combination(coefficients)
        start = time.perf_counter()
        if self._refresh():
            # The reduced factor: each data row's weights on the terms.
            W = np.asarray(M @ self.weights)
            self._preconditioner = Factor(
                factor(
                    self.kernel,
                    self.terms,
                    self.points[self.data_at],
                    W,
                    self.reduced_pattern,
                    self.nugget,
                    self.program,
                ),
                self.reduced_pattern.order,
            )
            self._fresh = None
        self.timings.reduced_factor += time.perf_counter() - start
        start = time.perf_counter()
        result = pcg(
            lambda w: M @ self.factor.theta_times(M.T @ w),
            np.asarray(y, np.float64),
            self._preconditioner.precision_times,
            rtol=rtol,
            maxiter=maxiter,
        )
        self.timings.iterations.append(result.iterations)
        if not result.converged:
            warn(
                f"collocation: conjugate gradients stopped after {result.iterations} "
                f"iterations at a relative residual of {result.residuals[-1]:.1e} (asked "
                f"{rtol:.0e}): the factor at rho {self.rho:g} is too coarse for these "
                "points; raise rho"
            )
        if self._fresh is None:
            self._fresh = result.iterations
        self._latest = result.iterations
        self.last = result
        mean = self.factor.theta_times(M.T @ result.x)
        self.timings.pcg += time.perf_counter() - start
        return mean

    def _refresh(self) -> bool:
        """Whether to factor the reduced matrix again: at the first solve, and when the
        last solve took over ``REUSE`` times the iterations of the one that factored it
        (a Gauss-Newton step changes the reduced matrix little near convergence, and an
        older factor still preconditions it)."""
        if self._preconditioner is None or not self.reuse:
            return True
        return self._latest > REUSE * self._fresh

    def values(self, mean: np.ndarray, kind: int = 0) -> np.ndarray:
        """The mean of the kind-``kind`` features (point values: every point)."""
        return mean[self.features.feature_index(kind)]


@dataclass
class Solution:
    """A Gauss-Newton solve by sparse collocation.

    Attributes:
        engine: the ``Collocation`` (its factor and timings).
        values: array (m, n_i): each feature of the equation at the interior points.
        u: array (n_b + n_i,): the solution at every point (boundary first).
        steps: the relative change of the interior solution at each step.
        converged: whether the last change was below the tolerance.
        rho: the radius factor of the factor this solution came from.
        dampings: the fraction of each step taken (1: the full step; less where the full
            step made the equation's residual larger, halved up to six times).
        check: with ``gauss_newton(..., check=True)``, the relative difference of ``u``
            from the solution at ``rho - 1``: how far the sparse answer may be from the
            exact GP's (the difference at ``rho - 1`` is larger than the error at
            ``rho``, where the error falls with ``rho``); None otherwise.
    """

    engine: Collocation
    values: np.ndarray
    u: np.ndarray
    steps: list
    converged: bool
    rho: float
    check: float | None = None
    dampings: list = field(default_factory=list)
    #: The last linear solve's equation: ``coefficients[i, k]`` weighs the kind-k
    #: feature at interior point ``i`` (``Collocation.combination``); None before one.
    coefficients: np.ndarray | None = None
    #: The posterior mean of every feature measurement (``Features.measurements``).
    mean: np.ndarray | None = None


def gauss_newton(
    equation,
    kernel,
    boundary,
    boundary_values,
    interior,
    forcing,
    rho: float = 5.0,
    nugget: float = 1e-12,
    tolerance: float = 1e-8,
    iterations: int = 20,
    check: bool = False,
) -> Solution:
    """Solve ``F(L_1 u, ..., L_m u) = forcing`` at the interior points with ``u`` given at
    the boundary points, by Gauss-Newton from ``u = 0``: each step solves the equation
    linearised at the last solution (``pigp.operators.linearisation.Linearisation``)
    by ``Collocation.solve``, and is halved (up to six times) where the full step makes
    the residual ``F(v) - forcing`` at the interior points larger; the features'
    factor is made once.

    Args:
        equation: a ``pigp.operators.Nonlinear`` (its features constant-coefficient
            operators on one field; an ``Identity`` feature is the point value).
        kernel: the prior covariance of u (a Matérn screens).
        boundary: array (n_b, d); boundary_values: (n_b,).
        interior: array (n_i, d); forcing: (n_i,).
        rho, nugget: as ``Collocation``'s.
        tolerance: stop when the interior solution changes by less than this, relative.
        iterations: at most this many steps.
        check: solve again at ``rho - 1`` and report the difference
            (``Solution.check``); about 1.5 times the time.

    Returns:
        A ``Solution``.
    """
    boundary = validate.as_inputs("boundary", boundary)
    boundary_values = validate.as_targets(
        "boundary_values", boundary_values, len(boundary), "boundary"
    )
    interior = validate.as_inputs("interior", interior, boundary.shape[1])
    forcing = validate.as_targets("forcing", forcing, len(interior), "interior")
    if equation.fields or equation.size != 1:
        raise ValueError(
            "equation: the sparse Gauss-Newton takes one equation in one field; a system "
            "or several fields go through pigp.PIGP (the dense engine)"
        )
    problem = (equation, kernel, boundary, boundary_values, interior, forcing)
    settings = (nugget, tolerance, iterations)
    solution = _gauss_newton(problem, rho, settings)
    if check:
        coarser = _gauss_newton(problem, rho - 1, settings)
        difference = np.linalg.norm(solution.u - coarser.u) / np.linalg.norm(solution.u)
        solution.check = float(difference)
    return solution


def _gauss_newton(problem: tuple, rho: float, settings: tuple) -> Solution:
    """``gauss_newton`` at one ``rho``: ``problem`` its first six arguments (validated),
    ``settings`` (nugget, tolerance, iterations)."""
    equation, kernel, boundary, boundary_values, interior, forcing = problem
    nugget, tolerance, iterations = settings
    d = interior.shape[1]
    dims = equation.dims
    names = list(equation.features)
    # Kind 0 is the point value; the other features are kinds 1, 2, ... in order.
    kinds, operators = [], [Identity.resolve(d)]
    for name in names:
        if _is_identity(equation.features[name]):
            kinds.append(0)
        else:
            kinds.append(len(operators))
            operators.append(equation.features[name].resolve(d, dims))
    if len(operators) == 1:
        raise ValueError("equation: expected a feature that is not the point value")
    features = Features(np.concatenate([boundary, interior]), len(boundary), operators)
    engine = Collocation(kernel, features, rho=rho, nugget=nugget)
    n_i = len(interior)
    values = np.zeros((len(names), n_i))
    linearisation = Linearisation(equation, values)
    steps, dampings, u = [], [], np.zeros(n_i)
    forcing = np.asarray(forcing, np.float64)
    mean, merit = None, np.inf
    for _ in range(iterations):
        linearisation.assign(values)
        jacobian = [np.asarray(c, np.float64) * np.ones(n_i) for c in linearisation.jacobian()]
        coefficients = np.zeros((n_i, len(operators)))
        for a, kind in enumerate(kinds):
            coefficients[:, kind] += jacobian[a]
        rhs = linearisation.right_hand_side(forcing)
        full = engine.solve(coefficients, np.concatenate([boundary_values, rhs]))
        damping, trial = 1.0, full
        new_merit = _residual(equation, names, _features(engine, full, kinds, n_i), forcing)
        if mean is not None and not new_merit <= merit:
            # The full step made the equation worse: backtrack along it, as the dense
            # Gauss-Newton does.
            damping, blend, blend_merit = backtrack(
                mean,
                full,
                merit,
                lambda m: _residual(equation, names, _features(engine, m, kinds, n_i), forcing),
            )
            if damping < 1.0:
                trial, new_merit = blend, blend_merit
        mean, merit = trial, new_merit
        values = _features(engine, mean, kinds, n_i)
        new = engine.values(mean)[len(boundary) :]
        steps.append(float(np.linalg.norm(new - u) / max(np.linalg.norm(new), 1e-300)))
        dampings.append(damping)
        u = new
        if steps[-1] < tolerance and damping == 1.0:
            break
    converged = steps[-1] < tolerance and dampings[-1] == 1.0
    return Solution(
        engine,
        values,
        engine.values(mean),
        steps,
        converged,
        rho,
        dampings=dampings,
        coefficients=coefficients,
        mean=mean,
    )


def _features(engine: Collocation, mean: np.ndarray, kinds: list, n_i: int) -> np.ndarray:
    """Each feature of the equation at the interior points: array (m, n_i)."""
    return np.stack([engine.values(mean, kind)[-n_i:] for kind in kinds])


def _residual(equation, names: list, values: np.ndarray, forcing: np.ndarray) -> float:
    """The root mean square of ``F(values) - forcing``."""
    residual = equation.evaluate(dict(zip(names, values))).numpy()
    return float(np.sqrt(np.mean(np.square(residual - forcing))))
