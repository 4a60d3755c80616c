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

from ..._tensorflow import tf
from .factor import Terms, entries_program, factor
from .ordering import Pattern, pattern
from .solve import Factor, pcg

__all__ = ["Features", "Collocation", "Timings"]

#: A reduced factor is kept while the solves it preconditions take at most this many
#: times the iterations of the first.
REUSE = 1.5


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
        nugget: relative nugget on the diagonal of every block.
        supernode: supernode reach (``ordering.pattern``).
        reuse: keep the reduced matrix's factor across solves while it preconditions
            well (``_refresh``).
    """

    def __init__(
        self, kernel, features: Features, rho=5.0, nugget=1e-10, supernode=1.3, reuse=True
    ):
        self.kernel = kernel
        self.features = features
        self.rho, self.nugget, self.supernode = rho, nugget, supernode
        self.timings = Timings()
        self.reuse = reuse
        self._preconditioner = self._fresh = self._latest = None
        self.points, self.kinds, first = features.measurements()
        self.terms = Terms.of(features.operators)
        start = time.perf_counter()
        self.pattern: Pattern = pattern(self.points, self.kinds, rho, first, supernode)
        self.timings.pattern = time.perf_counter() - start
        start = time.perf_counter()
        self.weights = self.terms.weights(self.points, self.kinds, tf.float64).numpy()
        self.program = entries_program(kernel, self.terms)
        self.factor = Factor(
            factor(
                kernel, self.terms, self.points, self.weights, self.pattern, nugget, self.program
            ),
            self.pattern.order,
        ).solves_only()
        self.timings.factor = time.perf_counter() - start
        # The data's positions: the boundary's point values and, for the equation at an
        # interior point, its first derivative measurement.
        b = features.boundary
        self.data_at = np.concatenate([np.arange(b), features.feature_index(1)])
        first = np.arange(len(self.data_at)) < b
        self.reduced_pattern = pattern(
            self.points[self.data_at], np.zeros(len(self.data_at), int), rho, first, supernode
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

    def solve(self, coefficients: np.ndarray, y: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
        """The posterior mean of every feature measurement given the data ``y`` =
        (boundary values, the equation's right-hand side at the interior points), for the
        equation ``sum_k coefficients[i, k] (kind k)(x_i)``.

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
        )
        self.timings.iterations.append(result.iterations)
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
