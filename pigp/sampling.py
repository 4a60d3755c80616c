"""Full Bayesian inference of the parameters: the No-U-Turn sampler of TensorFlow
Probability on the unconstrained variables, and what it returns.

The target is the log posterior density of the unconstrained variables ``v``:
``log p(y | theta(v)) + log p(theta(v)) + log |d theta / d v|``, where
``theta`` are the constrained values (the bijector's Jacobian term makes the
density one of ``v``). Its gradient comes from the objective's compiled loss and
gradient (the same VJP ``fit`` uses), one chain after another inside one
compiled program, with ``tf.custom_gradient``. The sampler runs in whitened
coordinates ``v = v0 + L z`` with ``L L^T`` the Laplace covariance at the fitted
values (where the Hessian is positive definite; else a diagonal scale), so that
one step size suits every direction.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

__all__ = ["Samples", "default_prior", "nuts"]


class Samples:
    """Draws of the parameters from their posterior, with diagnostics.

    ``samples[name]`` is an array of shape ``(num_chains, num_results,
    *parameter_shape)`` of constrained values, for every trainable parameter name
    of ``model.parameter_values()``.

    Attributes:
        rhat: ``{name: array}``, the potential scale reduction of each element across
            chains (``tfp.mcmc.potential_scale_reduction``); near 1 when the chains
            agree; NaN with one chain.
        ess: ``{name: array}``, the effective sample size of each element
            (``tfp.mcmc.effective_sample_size``), summed over chains.
        seconds: the wall time of the sampler (compilation included).
        step_size: the step size dual averaging settled on (in whitened units).
        acceptance: the mean acceptance probability after burn-in.
        divergences: the number of divergent transitions after burn-in.
        priors: ``{name: distribution}`` the sampler used (defaults included).
    """

    def __init__(
        self,
        values: dict,
        seconds: float,
        step_size: float,
        acceptance: float,
        divergences: int,
        priors: dict,
    ):
        self.values = {k: np.asarray(v) for k, v in values.items()}
        for v in self.values.values():
            v.setflags(write=False)
        self.seconds = float(seconds)
        self.step_size = float(step_size)
        self.acceptance = float(acceptance)
        self.divergences = int(divergences)
        self.priors = dict(priors)
        self.rhat, self.ess = {}, {}
        quiet = tf.get_logger().level
        tf.get_logger().setLevel("ERROR")  # tfp's ESS casts its FFT's complex result
        try:
            for name, v in self.values.items():
                chains_first = tf.constant(np.moveaxis(v, 0, 1))  # (results, chains, ...)
                ess = tfp.mcmc.effective_sample_size(chains_first)
                self.ess[name] = np.asarray(tf.reduce_sum(ess, axis=0))
                self.rhat[name] = (
                    np.asarray(
                        tfp.mcmc.potential_scale_reduction(chains_first, independent_chain_ndims=1)
                    )
                    if v.shape[0] > 1
                    else np.full(v.shape[2:], np.nan)  # R-hat needs two chains
                )
        finally:
            tf.get_logger().setLevel(quiet)

    @property
    def names(self) -> list:
        return list(self.values)

    @property
    def num_chains(self) -> int:
        return next(iter(self.values.values())).shape[0]

    @property
    def num_results(self) -> int:
        return next(iter(self.values.values())).shape[1]

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.values:
            raise KeyError(f"{name!r}: the samples hold {self.names}")
        return self.values[name]

    def __iter__(self):
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def draws(self, max_draws: int | None = None) -> list:
        """``[{name: value}]``: the draws of all chains, evenly thinned to at most
        ``max_draws`` (all without it)."""
        total = self.num_chains * self.num_results
        count = total if max_draws is None else max(1, min(int(max_draws), total))
        picks = np.unique(np.linspace(0, total - 1, count).round().astype(int))
        flat = {k: v.reshape(total, *v.shape[2:]) for k, v in self.values.items()}
        return [{k: flat[k][i] for k in flat} for i in picks]

    def summary(self) -> str:
        """A table: mean, std, 2.5% and 97.5% quantiles, R-hat and ESS of every element."""
        rows = [("parameter", "mean", "std", "2.5%", "97.5%", "R-hat", "ESS")]
        for name, v in self.values.items():
            flat = v.reshape(v.shape[0] * v.shape[1], -1)
            rhat, ess = np.ravel(self.rhat[name]), np.ravel(self.ess[name])
            for j in range(flat.shape[1]):
                label = name if flat.shape[1] == 1 else f"{name}[{j}]"
                column = flat[:, j]
                low, high = np.quantile(column, [0.025, 0.975])
                rows.append(
                    (
                        label,
                        f"{column.mean():.3g}",
                        f"{column.std():.3g}",
                        f"{low:.3g}",
                        f"{high:.3g}",
                        f"{rhat[j]:.3f}",
                        f"{ess[j]:.0f}",
                    )
                )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in rows
        ]
        lines.insert(1, "-" * len(lines[0]))
        return "\n".join(lines) + (
            f"\n{self.num_chains} chains x {self.num_results} draws, {self.seconds:.1f} s; "
            f"step {self.step_size:.3g}, acceptance {self.acceptance:.2f}, "
            f"{self.divergences} divergences"
        )

    def __repr__(self) -> str:
        return (
            f"Samples({self.num_chains} chains x {self.num_results} draws of "
            f"{', '.join(self.names)})"
        )


def default_prior(parameter):
    """The prior ``sample`` uses for a parameter without one: for a positive parameter
    a log-normal centred on its current (fitted) value with scale 2 in log space
    (a factor of e^2 ~ 7 per standard deviation), else a normal centred on it with
    standard deviation ``max(|value|, 1)``."""
    value = parameter.numpy()
    if parameter.positive:
        loc = np.log(np.maximum(value - parameter.lower, 1e-300))
        return tfp.distributions.LogNormal(
            tf.constant(loc, tf.float64), tf.constant(np.full_like(loc, 2.0), tf.float64)
        )
    return tfp.distributions.Normal(
        tf.constant(value, tf.float64), tf.constant(np.maximum(np.abs(value), 1.0), tf.float64)
    )


def _whitening(hessian: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = H^-1`` where ``H`` is positive definite; else a diagonal
    scale from the positive diagonal entries (1 elsewhere)."""
    try:
        return np.linalg.cholesky(np.linalg.inv(hessian))
    except np.linalg.LinAlgError:
        diag = np.diag(hessian)
        return np.diag(np.where(diag > 0, 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0)), 1.0))


def nuts(
    objective,
    Xs,
    y,
    parameters,
    priors: dict,
    num_results: int,
    num_burnin: int,
    num_chains: int,
    seed: int,
    hessian=None,
    max_tree_depth: int = 8,
    target_accept: float = 0.8,
) -> Samples:
    """Sample the parameters' posterior with NUTS; the variables are restored after.

    Args:
        objective: the likelihood's ``pigp.objective.Objective`` (without priors),
            whose variables are the unconstrained variables of ``parameters``.
        Xs: the inputs of each data set.
        y: the standardised targets, all data sets stacked.
        parameters: ``[(name, Parameter)]`` in the objective's order.
        priors: ``{name: distribution}`` over the constrained values, one per parameter.
        num_results: draws per chain after burn-in.
        num_burnin: steps per chain before them (step size adapted during 80%).
        num_chains: independent chains, started near the current values.
        seed: the seed of the starting points and the sampler.
        hessian: the loss Hessian in the unconstrained variables at the current
            values (for whitening), or None for a unit scale.
        max_tree_depth: NUTS's largest tree (at most 2^depth - 1 leapfrog steps).
        target_accept: dual averaging's target acceptance probability.

    Returns:
        Samples: the draws of every parameter, constrained, with diagnostics.
    """
    variables = objective.variables
    shapes = [tuple(v.shape) for v in variables]
    sizes = [int(np.prod(s)) for s in shapes]
    start = np.concatenate([v.numpy().reshape(-1) for v in variables]).astype(np.float64)
    dim = start.size
    L = _whitening(hessian) if hessian is not None else np.eye(dim)
    L_t = tf.constant(L, tf.float64)
    v0 = tf.constant(start, tf.float64)
    distributions = [priors[name] for name, _ in parameters]

    def split(v):  # (..., dim) -> one (..., *shape) part per variable
        parts = tf.split(v, sizes, axis=-1)
        return [tf.reshape(p, tf.concat([tf.shape(p)[:-1], s], 0)) for p, s in zip(parts, shapes)]

    def log_prior(v):  # (chains, dim) -> (chains,): prior of theta(v) and its Jacobian
        return tf.add_n(
            [
                parameter.log_prior(part, distribution) + parameter.log_jacobian(part)
                for (_, parameter), distribution, part in zip(parameters, distributions, split(v))
            ]
        )

    @tf.custom_gradient
    def log_likelihood(v):  # (chains, dim) -> (chains,), one chain after another
        values, grads = [], []
        for c in range(num_chains):
            for variable, part in zip(variables, split(v[c])):
                variable.assign(part)
            loss, g = objective.tf_loss_and_gradient(Xs, y)
            values.append(-loss)
            grads.append(-tf.concat([tf.reshape(x, [-1]) for x in g], 0))
        value, gradient = tf.stack(values), tf.stack(grads)
        # A point where K is not positive definite has no density there.
        ok = tf.math.is_finite(value) & tf.reduce_all(tf.math.is_finite(gradient), axis=1)
        value = tf.where(ok, value, tf.constant(-np.inf, tf.float64))
        gradient = tf.where(ok[:, None], gradient, tf.zeros_like(gradient))

        def backward(upstream, variables=None):
            # The variables are assigned here, not inputs: no gradient flows to them.
            return upstream[:, None] * gradient, [tf.zeros_like(x) for x in variables or ()]

        return value, backward

    def target(z):  # whitened coordinates
        v = v0 + tf.linalg.matvec(L_t, z)
        return log_likelihood(v) + log_prior(v)

    kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(
        tfp.mcmc.NoUTurnSampler(
            target, step_size=tf.constant(0.5, tf.float64), max_tree_depth=max_tree_depth
        ),
        num_adaptation_steps=int(0.8 * num_burnin),
        target_accept_prob=tf.constant(target_accept, tf.float64),
    )

    def trace(_, results):
        inner = results.inner_results
        return (inner.log_accept_ratio, inner.has_divergence, results.new_step_size)

    @tf.function(autograph=False)
    def run(initial, seed):
        return tfp.mcmc.sample_chain(
            num_results,
            initial,
            kernel=kernel,
            num_burnin_steps=num_burnin,
            trace_fn=trace,
            seed=seed,
        )

    rng = np.random.default_rng(seed)
    initial = tf.constant(0.1 * rng.standard_normal((num_chains, dim)), tf.float64)
    clock = time.perf_counter()
    try:
        z, (log_accept, divergent, step_size) = run(initial, tf.constant([seed, 0], tf.int32))
    finally:
        for variable, part in zip(variables, np.split(start, np.cumsum(sizes)[:-1])):
            variable.assign(part.reshape(variable.shape))
    seconds = time.perf_counter() - clock
    v = (v0 + tf.linalg.matvec(L_t, z)).numpy()  # (results, chains, dim)
    values = {}
    for (name, parameter), part in zip(parameters, split(tf.constant(v))):
        constrained = parameter.bijector.forward(part).numpy()
        values[name] = np.moveaxis(constrained, 0, 1)  # (chains, results, ...)
    acceptance = float(np.mean(np.minimum(1.0, np.exp(log_accept.numpy()))))
    samples = Samples(
        values,
        seconds,
        float(step_size.numpy()[-1]),
        acceptance,
        int(np.sum(divergent.numpy())),
        dict(zip((n for n, _ in parameters), distributions)),
    )
    worst = max(float(np.max(r)) for r in samples.rhat.values()) if num_chains > 1 else 1.0
    if worst > 1.01:
        warnings.warn(
            f"sample: the largest R-hat is {worst:.3f} (> 1.01): the chains disagree; "
            "run longer (num_results, num_burnin)",
            RuntimeWarning,
            stacklevel=3,
        )
    return samples
