"""A nonlinear equation of one field through the sparse inverse-Cholesky engine: what
``pigp.PIGP(nonlinear(...), engine="cholesky")`` runs.

- **Data.** The equation's set (``X_f, y_f``) and sets of point values of u (``X_u,
  y_u`` and ``Observations`` of the identity), all exact: the collocation problem of
  ``collocation.gauss_newton``, whose point values come first in the order.
- **Fit.** The parameters (the kernel's, the equation's coefficients) are learned by the
  dense engine's whole nonlinear fit on a maximin subset of ``learn_points`` values
  (``regression.subset``), then held while Gauss-Newton solves the equation at every
  point through the sparse factor (``collocation.gauss_newton``, with the fit plan's
  tolerance and iterations).
- **Mean** at new points. The posterior mean of any linear functional ``g`` of u given the
  data is ``Theta_gF Theta_FF^-1 m_F``, with ``m_F`` the posterior means of the features
  ``F`` (point values at every point, the equation's operators at the interior points):
  the features span the data, so conditioning on their means reproduces the mean given
  the data. Each new point conditions on its ``NEIGHBOURS`` nearest features in the
  kernel's metric. On -Lap u + u^3 = f at 400 interior points (Matérn 7/2, lengthscale
  0.3, the factor at rho 40, which reproduced the dense solution at the points to
  5.5e-9), 500 random points' means were 4.9e-4, 2.5e-4, 8.2e-5 and 3.2e-5 from the
  dense engine's with 50, 100, 200 and 400 neighbours. Solving the last step again
  through a factor that holds the new points as well was 1.4e-2 from it at rho 5: a
  new point beside a grid point takes a tiny neighbourhood in the maximin order.
- **Variance.** Each new point's variance under the last linearisation given
  ``regression.VARIANCE_NEIGHBOURS`` data measurements (point values, and the linearised
  equation at interior points): the first quarter of the data's maximin order (they
  cover the domain) and the nearest others. Conditioning on fewer data never lowers a
  Gaussian variance, so it is an upper bound on that linearisation's posterior
  variance, and a loose one where the lengthscales are long against the spacing.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.spatial import cKDTree

from ..._warnings import warn
from ...operators.linear import _is_identity
from .collocation import gauss_newton, screening_points
from .factor import BATCH_ENTRIES, Terms, _blocks, _Layout, entries_program, padded
from .regression import (
    CHECK_WARNS,
    VARIANCE_NEIGHBOURS,
    _is_identity_terms,
    _last_conditional,
    regression_of,
    subset,
)

__all__ = ["Nonlinear", "fit_nonlinear", "engine_of", "NEIGHBOURS"]

#: The features each new point's mean conditions on.
NEIGHBOURS = 200

#: One in this many of a conditioning set are the coarsest measurements (the first of a
#: maximin order, spread over the domain), the others the nearest.
COARSE = 4


class Nonlinear:
    """A converged sparse Gauss-Newton solve and what predicts from it.

    Args:
        model: the ``PIGP`` (its kernel, equation and jitter at their fitted values).
        data: the fit's ``pigp.data.Data``.
        tolerance, iterations: Gauss-Newton's.
    """

    def __init__(self, model, data, tolerance: float, iterations: int):
        settings = model.engine_options
        equation = model.operator
        boundary, values, interior, forcing = _problem(data)
        self.kernel, self.equation, self.nugget = model.kernel, equation, float(model.jitter)
        self.settings = settings
        self.solution = gauss_newton(
            equation,
            model.kernel,
            boundary,
            values,
            interior,
            forcing,
            rho=settings.rho,
            nugget=self.nugget,
            tolerance=tolerance,
            iterations=iterations,
            check=settings.check,
        )
        engine = self.solution.engine
        self.points, self.kinds = engine.points, engine.kinds
        self.operators = engine.features.operators
        self.boundary = engine.features.boundary
        self.kernel = model.kernel
        self.y_scale = float(data.y_scale)
        # The data, coarse to fine (point values, then equations).
        self.data_order = engine.reduced_pattern.order

    def log_likelihood(self) -> float:
        raise ValueError(
            "log_marginal_likelihood: a nonlinear equation fitted by engine='cholesky' has "
            "no likelihood of all its values (its parameters were learned on a subset: "
            "report.engine['learned_on'])"
        )

    # ----- prediction ----------------------------------------------------------------------
    def _terms(self, output_terms) -> Terms:
        return Terms.of(list(self.operators) + [list(output_terms)])

    def _conditional(self, X, output_terms, points, W, near):
        """Blocks of ``near`` (n, k) measurements (rows of ``points``, weights ``W``) and
        the output at ``X`` last: the conditional mean's weights on the neighbours and the
        conditional variance, per point."""
        terms = self._terms(output_terms)
        program = entries_program(self.kernel, terms)
        n, k = len(points), near.shape[1]
        K = len(self.operators)
        allpoints = np.concatenate([points, X, points[:1]])
        out_W = terms.weights(X, np.full(len(X), K)).numpy()
        allW = np.concatenate([W, out_W, np.zeros((1, W.shape[1]))])
        m = padded(k + 1)
        layout = _Layout(m)
        batch = max(1, BATCH_ENTRIES // (m * m))
        weights, variances = np.empty((len(X), k)), np.empty(len(X))
        for start in range(0, len(X), batch):
            rows = np.arange(start, min(len(X), start + batch))
            index = np.full((len(rows), m), n + len(X))
            index[:, :k] = near[rows]
            index[:, m - 1] = n + rows
            theta = _blocks(program, allpoints, allW, index, layout)
            valid = index < n + len(X)
            diagonal = np.einsum("bii->bi", theta)
            diagonal += self.nugget * diagonal + ~valid
            weights[rows] = np.linalg.solve(theta[:, :k, :k], theta[:, :k, m - 1 :])[..., 0]
            variances[rows] = _last_conditional(theta)
        return weights, variances

    def _feature_weights(self, output_terms) -> np.ndarray:
        """Each feature measurement's weights on the terms of ``_terms(output_terms)``."""
        return self._terms(output_terms).weights(self.points, self.kinds).numpy()

    def _near(self, points, coarse_order, X, k: int) -> np.ndarray:
        """Each row of ``X``'s conditioning set, (n, k) rows of ``points``: the first
        ``k // COARSE`` of ``coarse_order`` (a maximin order: they cover the domain) and
        the nearest others in the kernel's metric."""
        k = min(k, len(points))
        coarse = np.asarray(coarse_order[: k // COARSE], dtype=np.int64)
        fine = k - len(coarse)
        tree = cKDTree(screening_points(self.kernel, points))
        _, near = tree.query(
            screening_points(self.kernel, X), k=min(len(points), fine + len(coarse))
        )
        near = np.reshape(near, (len(X), -1))
        taken = np.zeros(len(points) + 1, bool)
        taken[coarse] = True
        # Per row, the first ``fine`` neighbours not among the coarse ones.
        keep = np.argsort(taken[near], axis=1, kind="stable")[:, :fine]
        near = np.take_along_axis(near, keep, axis=1)
        return np.concatenate([np.broadcast_to(coarse, (len(X), len(coarse))), near], axis=1)

    def mean(self, X: np.ndarray, output_terms) -> np.ndarray:
        """The posterior mean of the output at ``X`` (n, d), standardised units (the
        data's divided by ``y_scale``): kriging of the features' means from each point's
        ``NEIGHBOURS`` nearest features."""
        k = min(NEIGHBOURS, len(self.points))
        _, near = cKDTree(screening_points(self.kernel, self.points)).query(
            screening_points(self.kernel, X), k=k
        )
        near = np.reshape(near, (len(X), k))
        W = self._feature_weights(output_terms)
        weights, _ = self._conditional(X, output_terms, self.points, W, near)
        return np.einsum("nk,nk->n", weights, self.solution.mean[near]) / self.y_scale

    def variance(self, X: np.ndarray, output_terms) -> np.ndarray:
        """The variance of the output at ``X`` under the last linearisation, given each
        point's nearest data measurements (units of the kernel's variance)."""
        n_b = self.boundary
        W = self._feature_weights(output_terms)
        # The data: the point values of the first n_b points, and the linearised
        # equation at each interior point (its features' weights combined).
        coefficients = self.solution.coefficients
        n_i = len(coefficients)
        data_points = self.points[: n_b + n_i]
        combined = np.zeros((n_i, W.shape[1]))
        engine = self.solution.engine
        for kind in range(len(self.operators)):
            index = engine.features.feature_index(kind)[-n_i:]
            combined += coefficients[:, kind : kind + 1] * W[index]
        data_W = np.concatenate([W[:n_b], combined])
        near = self._near(data_points, self.data_order, X, VARIANCE_NEIGHBOURS)
        _, variances = self._conditional(X, output_terms, data_points, data_W, near)
        return variances


def _problem(data) -> tuple:
    """``(boundary, values, interior, forcing)`` of ``gauss_newton`` from the fit's data:
    the point-value sets' points and values, and the equation's set; a ``ValueError``
    naming the set that is neither, or noisy."""
    equation_sets = [s for s in data.sets if s.name == "f"]
    values = [s for s in data.sets if s.name != "f"]
    for s in values:
        if not _is_identity_terms(s.terms):
            raise ValueError(
                f"observations: the set {s.name!r} observes an operator of u; "
                "engine='cholesky' takes a nonlinear equation with point values of u "
                "(use engine='dense')"
            )
    for s in values:
        given = not s.noise.trainable and float(np.max(s.noise.numpy())) == 0.0
        if not (s.noise_decided_by_fit or given):
            raise ValueError(
                f"observations: the set {s.name!r} has a noise; engine='cholesky' takes a "
                "nonlinear equation with exact point values (no noise, or noise=0; use "
                "engine='dense')"
            )
    if not equation_sets or not values:
        raise ValueError(
            "fit: engine='cholesky' with a nonlinear equation needs the equation's points "
            "(X_f, y_f) and point values of u (X_u, y_u or Observations)"
        )
    boundary = np.concatenate([s.X for s in values])
    return (
        boundary,
        np.concatenate([s.y for s in values]),
        equation_sets[0].X,
        equation_sets[0].y,
    )


class NoisyData(ValueError):
    """The fit on a subset found data noisy that the sparse engine would take as exact:
    ``engine="auto"`` then runs the dense engine instead."""


def fit_nonlinear(model, data, plan, run, gauss_newton_settings, verbose, callback) -> None:
    """``PIGP.fit`` of a nonlinear equation by the sparse engine: the parameters from the
    dense fit on a subset, then Gauss-Newton at every point; the report adopted with
    ``engine``."""
    from ... import memory
    from ...fitting.nonlinear_noise import fit_deciding_noise

    settings = model.engine_options
    if settings.learn != "subset":
        raise ValueError(
            "engine_options: learn='vecchia' is for linear operators; a nonlinear "
            "equation's parameters are learned on a subset (learn='subset')"
        )
    kinds = 1 + sum(1 for f in model.operator.features.values() if not _is_identity(f))
    memory.check_collocation(
        sum(data.sizes) * kinds, data.input_dim, kinds, settings.rho, settings.supernode
    )
    _problem(data)  # refuses what the engine does not take, before any work
    start = time.perf_counter()
    part = subset(data, settings.learn_points)
    fit_deciding_noise(model, part, plan, run, gauss_newton_settings, verbose, callback)
    report = model.report
    noisy = [name for name, choice in report.noise_choice.items() if choice.kept != "exact"]
    if noisy:
        raise (NoisyData if model.engine == "auto" else ValueError)(
            f"observations: the fit on {sum(part.sizes)} of the values found the sets "
            f"{noisy} noisy (report.noise_choice); engine='cholesky' solves a nonlinear "
            "equation with exact data: give their noise and use engine='dense'"
        )
    model.data = data
    solve = Nonlinear(
        model, data, gauss_newton_settings.tolerance, gauss_newton_settings.iterations
    )
    solution = solve.solution
    report.engine = {
        "name": "cholesky",
        "rho": settings.rho,
        "supernode": settings.supernode,
        "nugget": model.jitter,
        "learn": settings.learn,
        "learned_on": int(sum(part.sizes)),
        "measurements": len(solve.points),
        "gauss_newton_steps": float(len(solution.steps)),
        "gauss_newton_converged": float(solution.converged),
        "last_change": float(solution.steps[-1]),
        "tolerance": float(gauss_newton_settings.tolerance),
        "iterations": float(gauss_newton_settings.iterations),
        "seconds": time.perf_counter() - start,
    }
    if solution.check is not None:
        report.engine["check"] = float(solution.check)
    model.adopt(report)
    model._regression = solve
    if solution.check is not None and solution.check > CHECK_WARNS:
        warn(
            f"fit: the sparse solution at rho {settings.rho:g} differs from the one at rho "
            f"{settings.rho - 1:g} by {solution.check:.1e} (relative): it may be as far from "
            "the exact GP's; raise rho (engine_options={'rho': ...})"
        )
    if not solution.converged:
        warn(
            f"fit: Gauss-Newton at all {sum(data.sizes)} values did not converge in "
            f"{len(solution.steps)} steps (last change {solution.steps[-1]:.1e}); the "
            "solution and its variance are those of the last step"
        )


def engine_of(model):
    """The sparse engine of ``model``'s last fit: its ``Nonlinear`` for a nonlinear
    equation (made again after ``pigp.load``: Gauss-Newton solves again at the saved
    parameters), else its ``regression.Regression``."""
    if not model.nonlinear:
        return regression_of(model)
    if getattr(model, "_regression", None) is None:
        engine = model.report.engine
        model._regression = Nonlinear(
            model, model.data, engine["tolerance"], int(engine["iterations"])
        )
    return model._regression
