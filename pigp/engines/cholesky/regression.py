"""Linear physics-informed GP regression through the sparse inverse-Cholesky factor: what
``pigp.PIGP(..., engine="cholesky")`` runs, for 10^4-10^6 values.

The data sets are *measurements*: set ``k`` observes its operator's terms at its points
(kind ``k``), with its noise variance. Notation as ``ordering`` and ``factor``.

- **Fit.** The parameters (the kernel's, the operators' coefficients, the noises) maximise
  the Vecchia log-likelihood (``likelihood``) of the standardised data, a sum over the
  factor's columns, by SciPy's L-BFGS-B (or Adam) on its gradient, one batch of blocks
  at a time. The pattern is made once, in the kernel's metric at the lengthscales the
  fit starts from (``collocation.metric``).
- **Mean.** The prediction measurements (the output's operator at the new points, kind
  ``K``) join the data in one factor of ``Theta``; ``(Theta_DD + diag(noise)) alpha = y``
  is solved by preconditioned conjugate gradients with ``Theta``'s products through that
  factor, preconditioned by the factor of ``Theta_DD + diag(noise)`` over the data's own
  pattern, and the mean is ``(Theta M' alpha)`` at the prediction measurements: through
  the same approximate ``Theta`` as the solve (``collocation``'s rule). A prediction
  measurement equal to a data measurement (same point, same weights) is that measurement.
- **Variance.** Each point's exact posterior variance given the ``VARIANCE_NEIGHBOURS``
  data measurements nearest to it in the kernel's metric, with their noise: conditioning
  on fewer data never lowers a Gaussian variance, so it is an upper bound on the full
  posterior's, and equal to it where the neighbours screen the rest.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from scipy.spatial import cKDTree

from ..._tensorflow import tf
from ..._warnings import warn
from ...operators import Identity
from .collocation import metric, screening_points
from .factor import BATCH_ENTRIES, Terms, _blocks, _Layout, entries_program, factor, padded
from .likelihood import Batches, vecchia_log_likelihood, vecchia_value_and_gradient
from .ordering import pattern
from .solve import Factor, pcg

__all__ = ["Settings", "Measurements", "Regression", "VARIANCE_NEIGHBOURS", "CHECK_WARNS"]

#: The data measurements each prediction's variance is conditioned on.
VARIANCE_NEIGHBOURS = 100
#: ``engine_options={"check": True}`` warns where the answers at rho and rho - 1 differ
#: by more than this, relative.
CHECK_WARNS = 1e-3


@dataclass(frozen=True)
class Settings:
    """The sparse engine's settings.

    Attributes:
        rho: neighbourhood radius factor of the patterns (``ordering.pattern``).
        supernode: supernode reach.
        rtol: the relative residual conjugate gradients stop at.
        maxiter: at most this many conjugate-gradient iterations.
        learn: how the parameters are learned: ``"subset"`` (the default), by the
            dense engine's fit (its log marginal likelihood, noise decisions and all) on
            ``learn_points`` of the values, each set's first in its maximin order, in
            proportion to the sets' sizes; ``"vecchia"``, by the Vecchia
            log-likelihood of all values.
        learn_points: the values of a ``"subset"`` fit.
        learn_rho: the radius factor of a ``"vecchia"`` fit's pattern (at most
            ``rho``): its maxima barely move with it (at 2,500 heat values, alpha
            within 0.3% and the lengthscale within 0.1% of the exact likelihood's at
            3, as at 4 to 8; ``benchmarks/vecchia_likelihood.py``), while an
            evaluation of its gradient costs about the cube of it per value in three
            dimensions.
        check: the fit solves again at ``rho - 1`` and ``report.engine["check"]`` is
            the relative difference of u: a nonlinear equation's Gauss-Newton solution
            at its points, a linear model's posterior mean at the data's points (two
            more solves at ``fit``): an estimate of how far the answer at ``rho`` is
            from the exact GP's (a warning above ``CHECK_WARNS``), a bound where the
            error falls fast with rho (the nonlinear test's, at rho 3), 0.5-1.4 times
            the distance of a linear model's mean at new points in its test (rho 3 to
            6); about 1.5 times the time.
    """

    rho: float = 5.0
    supernode: float = 1.3
    rtol: float = 1e-10
    maxiter: int = 1000
    learn: str = "subset"
    learn_points: int = 1000
    learn_rho: float = 3.0
    check: bool = False

    @property
    def vecchia_rho(self) -> float:
        """The Vecchia log-likelihood's radius factor: ``learn_rho``, at most ``rho``."""
        return min(self.rho, self.learn_rho)

    def __post_init__(self):
        if self.learn not in ("subset", "vecchia"):
            raise ValueError(f"learn: expected 'subset' or 'vecchia', got {self.learn!r}")
        if not (isinstance(self.learn_points, (int, np.integer)) and self.learn_points >= 10):
            raise ValueError(f"learn_points: expected an integer >= 10, got {self.learn_points!r}")
        if not (isinstance(self.rho, (int, float)) and np.isfinite(self.rho) and self.rho > 1):
            raise ValueError(f"rho: expected a number above 1, got {self.rho!r}")
        if not (
            isinstance(self.learn_rho, (int, float))
            and np.isfinite(self.learn_rho)
            and self.learn_rho > 1
        ):
            raise ValueError(f"learn_rho: expected a number above 1, got {self.learn_rho!r}")
        if not (isinstance(self.supernode, (int, float)) and self.supernode >= 1):
            raise ValueError(f"supernode: expected a number >= 1, got {self.supernode!r}")
        if not isinstance(self.check, (bool, np.bool_)):
            raise ValueError(f"check: expected True or False, got {self.check!r}")
        if self.check and self.rho <= 2:
            raise ValueError(
                f"check: solves again at rho - 1, which needs rho above 2, got {self.rho!r}"
            )


class Measurements:
    """The data sets of a fit as measurements: ``points`` (N, d), ``kinds`` (N,) (the set
    of each), ``operators`` (each set's resolved terms), ``y`` (N,) standardised."""

    def __init__(self, data):
        for s in data.sets:
            if s.condition:
                raise ValueError(
                    f"observations: the set {s.name!r} has condition=True, which the "
                    "sparse engine does not take (engine='dense' does)"
                )
        self.sets = data.sets
        self.points = np.concatenate([s.X for s in data.sets])
        self.kinds = np.concatenate([np.full(len(s.X), k) for k, s in enumerate(data.sets)])
        self.operators = [list(s.terms) for s in data.sets]
        self.y = np.concatenate([s.y for s in data.sets]) / data.y_scale
        #: The point values (sets of the identity): ordered first, maximin among
        #: themselves, the other measurements after them.
        self.first = np.asarray([_is_identity_terms(t) for t in self.operators])[self.kinds]

    def __len__(self) -> int:
        return len(self.points)

    def noise(self) -> tf.Tensor:
        """Each measurement's noise variance (N,), from the sets' parameters."""
        return tf.concat(
            [tf.fill([len(s.X)], tf.reshape(s.noise.value(tf.float64), [])) for s in self.sets],
            0,
        )


class Regression:
    """The sparse engine of one fit's data (``Measurements``) and kernel.

    Args:
        kernel: the prior covariance of u (one field).
        data: the ``pigp.data.Data`` of the fit.
        settings: ``Settings``.
        nugget: relative nugget on every block's diagonal (the model's jitter).
    """

    def __init__(self, kernel, data, settings: Settings, nugget: float):
        self.kernel, self.settings, self.nugget = kernel, settings, float(nugget)
        self.data = Measurements(data)
        kernel.build(self.data.points)
        self.terms = Terms.of(self.data.operators)
        self.program = entries_program(kernel, self.terms)
        #: The pattern of the Vecchia log-likelihood (``learn_rho``; the mean's are
        #: made at ``rho``).
        self.pattern = pattern(
            screening_points(kernel, self.data.points),
            self.data.kinds,
            settings.vecchia_rho,
            self.data.first,
            settings.supernode,
        )
        self.batches = Batches(self.pattern)
        self.iterations: list = []

    def pattern_entries(self) -> float:
        """The mean number of rows of a column of the data's factor."""
        total = sum(
            int(np.searchsorted(rows, c)) + 1
            for columns, rows in self.pattern.supernodes
            for c in columns
        )
        return total / self.pattern.size

    def _make(self):
        return self.terms.weights(self.data.points, self.data.kinds), self.data.noise()

    def log_likelihood(self) -> float:
        """The Vecchia log-likelihood of the standardised data at the current parameters."""
        W, noise = self._make()
        return float(
            vecchia_log_likelihood(
                self.kernel,
                self.terms,
                self.data.points,
                W,
                self.pattern,
                self.data.y,
                noise,
                self.nugget,
                self.program,
                self.batches,
            )
        )

    def value_and_gradient(self, variables) -> tuple:
        """The log-likelihood and its gradient with respect to ``variables``."""
        return vecchia_value_and_gradient(
            self.kernel,
            self.terms,
            self.data.points,
            self.pattern,
            self.data.y,
            self._make,
            variables,
            self.nugget,
            self.program,
            self.batches,
        )

    # ----- prediction ----------------------------------------------------------------------
    def _features(self, X: np.ndarray, output_terms) -> tuple:
        """The features of a prediction: a point value (kind 0) at every distinct point
        of the data and of ``X``, and the data's and the output's other measurements
        (kinds ``1 + k`` and ``1 + K``), each of which follows its point's value in the
        order. Returns ``(points, kinds, terms, data_at, at)``: ``data_at[i]``
        the feature data measurement ``i`` observes, ``at[j]`` the one ``X[j]`` is."""
        data = self.data
        n, K = len(data), len(data.operators)
        operators = [list(Identity.resolve(X.shape[1]))] + data.operators + [list(output_terms)]
        terms = Terms.of(operators)
        unique, inverse = np.unique(np.concatenate([data.points, X]), axis=0, return_inverse=True)
        inverse = np.reshape(inverse, -1)
        points = [unique]
        kinds = [np.zeros(len(unique), int)]
        data_at = inverse[:n].copy()
        extra = len(unique)
        plain = [_is_identity_terms(t) for t in data.operators]
        others = np.flatnonzero(~np.asarray(plain)[data.kinds])
        points.append(data.points[others])
        kinds.append(data.kinds[others] + 1)
        data_at[others] = extra + np.arange(len(others))
        extra += len(others)
        if _is_identity_terms(output_terms):
            at = inverse[n:]
        else:
            at = extra + np.arange(len(X))
            points.append(X)
            kinds.append(np.full(len(X), K + 1))
        return np.concatenate(points), np.concatenate(kinds), terms, data_at, at

    def mean(self, X: np.ndarray, output_terms, rho: float | None = None) -> np.ndarray:
        """The posterior mean of the output at ``X`` (n, d), standardised units, through
        factors at ``rho`` (the settings' where None)."""
        settings, data = self.settings, self.data
        rho = settings.rho if rho is None else rho
        points, kinds, terms, data_at, at = self._features(X, output_terms)
        W = terms.weights(points, kinds).numpy()
        program = entries_program(self.kernel, terms)
        joint = pattern(screening_points(self.kernel, points), kinds, rho, None, settings.supernode)
        theta = Factor(
            factor(self.kernel, terms, points, W, joint, self.nugget, program), joint.order
        ).solves_only()
        n = len(data)
        noise = self.data.noise().numpy()
        reduced = pattern(
            screening_points(self.kernel, data.points),
            data.kinds,
            rho,
            data.first,
            settings.supernode,
        )
        preconditioner = Factor(
            factor(
                self.kernel, terms, data.points, W[data_at], reduced, self.nugget, program, noise
            ),
            reduced.order,
        )
        M = sp.csr_matrix((np.ones(n), (np.arange(n), data_at)), shape=(n, len(points)))

        def A(w):
            return M @ theta.theta_times(M.T @ w) + noise * w

        result = pcg(A, data.y, preconditioner.precision_times, settings.rtol, settings.maxiter)
        self.iterations.append(result.iterations)
        if not result.converged:
            warn(
                f"predict: conjugate gradients stopped after {result.iterations} iterations "
                f"at a relative residual of {result.residuals[-1]:.1e} (asked "
                f"{settings.rtol:.0e}): the factor at rho {rho:g} is too coarse "
                "for these data; raise rho (PIGP(engine_options={'rho': ...}))"
                + _past_the_data(self.kernel, data.points)
            )
        return theta.theta_times(M.T @ result.x)[at]

    def variance(self, X: np.ndarray, output_terms, neighbours: int = VARIANCE_NEIGHBOURS):
        """The posterior variance of the output at ``X`` given each point's ``neighbours``
        nearest data measurements (standardised units)."""
        data = self.data
        n = len(data)
        terms = Terms.of(data.operators + [list(output_terms)])
        program = entries_program(self.kernel, terms)
        k = min(neighbours, n)
        _, near = cKDTree(screening_points(self.kernel, data.points)).query(
            screening_points(self.kernel, X), k=k
        )
        near = np.reshape(near, (len(X), k))
        points = np.concatenate([data.points, X])
        kinds = np.concatenate([data.kinds, np.full(len(X), len(data.operators))])
        W = terms.weights(points, kinds).numpy()
        noise = np.concatenate([self.data.noise().numpy(), np.zeros(len(X))])
        m = padded(k + 1)
        layout = _Layout(m)
        out = np.empty(len(X))
        batch = max(1, BATCH_ENTRIES // (m * m))
        padded_points = np.concatenate([points, points[:1]])
        padded_W = np.concatenate([W, np.zeros((1, W.shape[1]))])
        for start in range(0, len(X), batch):
            rows = np.arange(start, min(len(X), start + batch))
            index = np.full((len(rows), m), len(points))
            index[:, :k] = near[rows]
            index[:, m - 1] = n + rows
            theta = _blocks(program, padded_points, padded_W, index, layout)
            valid = index < len(points)
            diagonal = np.einsum("bii->bi", theta)
            extra = np.where(valid, np.append(noise, 0.0)[index], 1.0)
            diagonal += self.nugget * diagonal + extra
            out[rows] = _last_conditional(theta)
        return out


def _past_the_data(kernel, points: np.ndarray) -> str:
    """A sentence where the kernel's lengthscales reach past the data's extent in a
    column, else "": there the rho a factor needs grows with the data (at lengthscales
    1.9 and 1.2 on the unit square, 2,000 heat values needed rho 12 and 10^4 more;
    ``benchmarks/heat_large.py``)."""
    if getattr(kernel, "lengthscales", None) is None:
        return ""
    scale = metric(kernel, points.shape[1])
    extent = np.ptp(points, axis=0)
    if not np.any(scale > extent):
        return ""
    return (
        f". The kernel's lengthscales {np.round(scale, 3).tolist()} reach past the data's "
        f"extent {np.round(extent, 3).tolist()}, where the rho a factor needs grows with "
        "the data: the dense engine, where it fits in memory, or SparsePIGP fit such a "
        "kernel"
    )


def _last_conditional(theta: np.ndarray) -> np.ndarray:
    """The variance of each block's last row given the others, ``L_mm^2`` of its
    Cholesky factor (its diagonal raised by 1e-10, 1e-8, 1e-6 of itself in turn where
    round-off leaves a block of duplicated exact data indefinite)."""
    for bump in (1e-10, 1e-8, 1e-6):
        try:
            L = np.linalg.cholesky(theta)
            return L[:, -1, -1] ** 2
        except np.linalg.LinAlgError:
            diagonal = np.einsum("bii->bi", theta)
            diagonal += bump * diagonal
    L = np.linalg.cholesky(theta)
    return L[:, -1, -1] ** 2


def _is_identity_terms(terms) -> bool:
    """Whether resolved terms are the point value alone."""
    terms = list(terms)
    if len(terms) != 1:
        return False
    coefficient, index = terms[0]
    plain = not (coefficient.varies or coefficient.parameters)
    return plain and coefficient.constant == 1.0 and not any(index)


def train(regression: Regression, trainable: list, steps: int, optimizer: str, rate: float):
    """Maximise the Vecchia log-likelihood (with the parameters' log priors) over the
    ``trainable`` ``pigp.Parameter``s by ``optimizer`` (``"lbfgs"``, ``"adam"``, or
    ``"adam+lbfgs"``), at most ``steps`` iterations each; the parameters are left at the
    lowest loss seen.

    Returns:
        ``(history, evaluations, seconds)``: the loss after each iteration, every loss
        evaluated, and the time.
    """
    from ...fitting.training import Adam

    variables = [p.unconstrained for p in trainable]
    history, evaluations = [], []
    best = [np.inf, [v.numpy() for v in variables]]
    start = time.perf_counter()

    def loss_and_gradient():
        value, gradients = regression.value_and_gradient(variables)
        with tf.GradientTape() as tape:
            prior = tf.add_n([tf.constant(0.0, tf.float64)] + [p.log_prior() for p in trainable])
        prior_gradients = tape.gradient(prior, variables)
        loss = -(value + float(prior))
        grads = [
            -(g + (0.0 if pg is None else tf.convert_to_tensor(pg).numpy()))
            for g, pg in zip(gradients, prior_gradients)
        ]
        if not np.isfinite(loss) or not all(np.all(np.isfinite(g)) for g in grads):
            return np.inf, grads
        evaluations.append(loss)
        if loss < best[0]:
            best[0], best[1] = loss, [v.numpy() for v in variables]
        return loss, grads

    if steps and variables and optimizer in ("adam", "adam+lbfgs"):
        adam = Adam(rate)
        state = adam.init(variables)
        for _ in range(steps):
            loss, grads = loss_and_gradient()
            _, state = adam.update(
                tf.constant(loss, tf.float64),
                [tf.constant(g, tf.float64) for g in grads],
                variables,
                state,
            )
            history.append(loss)
    if steps and variables and optimizer in ("lbfgs", "adam+lbfgs"):
        shapes = [v.shape for v in variables]
        sizes = [int(np.prod(s)) for s in shapes]

        def assign(x):
            for v, part, shape in zip(variables, np.split(x, np.cumsum(sizes)[:-1]), shapes):
                v.assign(np.reshape(part, shape))

        def function(x):
            assign(x)
            loss, grads = loss_and_gradient()
            if not np.isfinite(loss):
                return 1e300, np.zeros_like(x)
            return loss, np.concatenate([np.reshape(g, -1) for g in grads])

        x0 = np.concatenate([np.reshape(v.numpy(), -1) for v in variables])
        scipy.optimize.minimize(
            function,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": steps if optimizer == "lbfgs" else 1000},
            callback=lambda xk: history.append(best[0]),
        )
    for v, value in zip(variables, best[1]):
        v.assign(value)
    return history, evaluations, time.perf_counter() - start


# ----- the model's side: PIGP(engine=...) -----------------------------------------------------
#: A Vecchia fit's training where ``fit`` is given no ``steps`` or ``optimizer``.
STEPS, OPTIMIZER = 100, "lbfgs"
ENGINES = ("auto", "dense", "cholesky")


def engine_argument(engine, options) -> tuple:
    """``(engine, Settings)`` from ``PIGP``'s ``engine`` and ``engine_options``."""
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise ValueError(f"engine_options: expected a dict, got {options!r}")
    known = [f.name for f in dataclasses.fields(Settings)]
    unknown = set(options) - set(known)
    if unknown:
        raise ValueError(f"engine_options: unknown {sorted(unknown)}; expected some of {known}")
    return engine, Settings(**options)


def subset(data, points: int):
    """``data`` cut to about ``points`` values: each set's first values in its maximin
    order (spread over its points), in proportion to the sets' sizes, at least 10 of each
    (all of a smaller set); the scale ``y_scale`` kept."""
    from ...data import Data
    from .ordering import maximin

    total = sum(data.sizes)
    if total <= points:
        return data
    sets = []
    for s in data.sets:
        keep = min(len(s.X), max(10, int(round(points * len(s.X) / total))))
        order, _ = maximin(s.X)
        take = np.sort(order[:keep])
        sets.append(dataclasses.replace(s, X=s.X[take], y=s.y[take]))
    return Data(tuple(sets), data.y_scale)


def fit_sparse(model, data, plan, run, verbose, callback, given: tuple) -> None:
    """``PIGP.fit`` by the sparse engine: the parameters learned (``Settings.learn``), the
    data set, the report adopted with ``engine``. ``given``: ``fit``'s ``(steps,
    learning_rate, optimizer)``, for a Vecchia fit (100 L-BFGS-B iterations where None)."""
    from ... import memory
    from ...fitting.report import FitReport
    from ...fitting.run import fit_linear

    settings = model.engine_options
    memory.check_collocation(
        sum(data.sizes), data.input_dim, len(data.sets) + 1, settings.rho, settings.supernode
    )
    start = time.perf_counter()
    # The kernel checks its shapes against the inputs before creating anything.
    model.kernel.build(np.concatenate([s.X for s in data.sets]))
    if settings.learn == "subset":
        part = subset(data, settings.learn_points)
        report = fit_linear(model, part, plan, run, verbose, callback)
        learned_on = sum(part.sizes)
    model.data = data
    regression = Regression(model.kernel, data, settings, model.jitter)
    if settings.learn == "vecchia":
        steps, learning_rate, optimizer = given
        history, evaluations, _ = train(
            regression,
            [p for _, p in model.trainable_parameters()],
            STEPS if steps is None else steps,
            OPTIMIZER if optimizer is None else optimizer,
            0.02 if learning_rate is None else learning_rate,
        )
        report = FitReport(history=history, lbfgs_evaluations=evaluations)
        learned_on = len(regression.data)
    check = _check(regression) if settings.check else None
    report.engine = {
        "name": "cholesky",
        "rho": settings.rho,
        "learn_rho": settings.vecchia_rho,
        "supernode": settings.supernode,
        "nugget": model.jitter,
        "learn": settings.learn,
        "learned_on": learned_on,
        "measurements": len(regression.data),
        "entries_per_column": regression.pattern_entries(),
        "log_likelihood": regression.log_likelihood(),
        "seconds": time.perf_counter() - start,
    }
    if check is not None:
        report.engine["check"] = check
    model.adopt(report)
    model._regression = regression
    if check is not None and check > CHECK_WARNS:
        warn(
            f"fit: the sparse mean at rho {settings.rho:g} differs from the one at rho "
            f"{settings.rho - 1:g} by {check:.1e} (relative): it may be as far from the "
            "exact GP's; raise rho (engine_options={'rho': ...})"
        )


def _check(regression: Regression) -> float:
    """The relative difference of u's posterior mean at the data's distinct points
    solved at ``rho`` and at ``rho - 1``."""
    points = np.unique(regression.data.points, axis=0)
    terms = list(Identity.resolve(points.shape[1]))
    fine = regression.mean(points, terms)
    coarse = regression.mean(points, terms, rho=regression.settings.rho - 1)
    return float(np.linalg.norm(fine - coarse) / np.linalg.norm(fine))


def regression_of(model) -> Regression:
    """The model's ``Regression`` (made again after ``pigp.load``)."""
    if getattr(model, "_regression", None) is None:
        model._regression = Regression(model.kernel, model.data, model.engine_options, model.jitter)
    return model._regression
