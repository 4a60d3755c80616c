"""Full Bayesian inference of the parameters: the No-U-Turn sampler of TensorFlow
Probability, and what it returns.

The sampler moves ``w``: ``log(theta - lower)`` for a positive parameter
``theta`` (``Parameter.sampling_bijector``), ``theta`` itself otherwise. The
posteriors of variances, lengthscales and noise levels are close to Gaussian in
log space, and the curvature of the log marginal likelihood varies little there;
in the softplus coordinates ``fit`` uses, a variance near 10 is on a linear
scale, and the curvature grew 50-fold across its posterior, which broke the
leapfrog integrator (divergent transitions) at any step size that suited the
mode. The target is ``log p(y | theta(w)) + log p(theta(w)) + log |d theta /
d w|``. Its gradient comes from the objective's compiled loss and gradient (the
same VJP ``fit`` uses) by the chain rule through ``v = bijector^-1(theta(w))``,
one chain after another inside one compiled program, with
``tf.custom_gradient``. The sampler runs in whitened coordinates ``w = w0 + L
z`` with ``L L^T`` the Laplace covariance in ``w`` at the fitted values (where
the Hessian is positive definite; else a diagonal scale), so that one step size
suits every direction.
"""

from __future__ import annotations

import concurrent.futures
import time

import numpy as np
import scipy.linalg

from .. import structure
from .._tensorflow import probability, tf
from .._warnings import warn

tfp = probability()

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
        step_size: the step size dual averaging settled on (in whitened units; the
            mean over the groups of chains, each adapts its own).
        acceptance: the mean acceptance probability after burn-in.
        divergences: the number of divergent transitions after burn-in.
        priors: ``{name: distribution}`` the sampler used (defaults included).
        diverging: ``(num_chains, num_results)`` booleans, the draws whose
            trajectory diverged (None when not recorded).
        leapfrogs: ``(num_chains, num_results)`` leapfrog steps (gradient
            evaluations) behind each draw (None when not recorded).
        noise_floors: ``{name: floor}`` of the noise variances ``sample`` drew above
            a floor (``pigp.PIGP.sample``'s ``noise_floor``); ``predict(...,
            samples=...)`` uses the same.
    """

    noise_floors: dict = {}

    def __init__(
        self,
        values: dict,
        seconds: float,
        step_size: float,
        acceptance: float,
        divergences: int,
        priors: dict,
        diverging=None,
        leapfrogs=None,
    ):
        self.diverging = None if diverging is None else np.asarray(diverging, bool)
        self.leapfrogs = None if leapfrogs is None else np.asarray(leapfrogs)
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


def default_prior(parameter, coefficient: bool = False):
    """The prior ``sample`` uses for a parameter without one.

    A coefficient of a PDE (``coefficient=True``) gets a normal centred on its fitted
    value with standard deviation ``max(|value|, 1)``, cut at its bound where it is
    positive: flat in the value near the fit, so that where the data bound a small
    coefficient well from above and weakly from below its draws do not run down
    towards the bound (a prior flat in ``log(value)`` puts as much mass between 0.003
    and 0.01 as between 0.01 and 0.03). Any other positive parameter (a variance, a
    lengthscale, a noise) gets ``lower + exp(w)`` with ``w`` normal, centred on the
    fitted ``log(value - lower)`` with scale 2 (a factor of e^2 ~ 7 per standard
    deviation; a log-normal where ``lower`` is 0); any other signed one the normal of
    a coefficient. Named ``"default_prior"`` and ``"default_value_prior"``: the
    sampler evaluates them in its own variable ``w``, where they stay exact when the
    value rounds to ``lower``."""
    value = parameter.numpy()
    scale = tf.constant(np.maximum(np.abs(value), 1.0), tf.float64)
    if parameter.positive and coefficient:
        return tfp.distributions.TruncatedNormal(
            tf.constant(value, tf.float64),
            scale,
            tf.constant(np.full(parameter.shape, parameter.lower), tf.float64),
            tf.constant(np.full(parameter.shape, np.inf), tf.float64),
            name=DEFAULT_VALUE_PRIOR,
        )
    if parameter.positive:
        loc = tf.constant(parameter.sampling_start(), tf.float64)
        scale = tf.constant(np.full(parameter.shape, 2.0), tf.float64)
        if parameter.lower == 0.0:
            return tfp.distributions.LogNormal(loc, scale, name=DEFAULT_PRIOR)
        return tfp.distributions.TransformedDistribution(
            tfp.distributions.Normal(loc, scale), parameter.sampling_bijector, name=DEFAULT_PRIOR
        )
    return tfp.distributions.Normal(tf.constant(value, tf.float64), scale, name=DEFAULT_PRIOR)


DEFAULT_PRIOR = "default_prior"  # a normal in the sampler's variable w
DEFAULT_VALUE_PRIOR = "default_value_prior"  # a normal in the value (cut at the bound)


def _whitening(hessian: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = H^-1`` where ``H`` is positive definite; else a diagonal
    scale from the positive diagonal entries (1 elsewhere)."""
    try:
        return np.linalg.cholesky(np.linalg.inv(hessian))
    except np.linalg.LinAlgError:
        diag = np.diag(hessian)
        return np.diag(np.where(diag > 0, 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0)), 1.0))


CHAINS_PER_GROUP = 2


def nuts(
    likelihoods,
    Xs,
    y,
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

    The chains run in groups of ``CHAINS_PER_GROUP``, each group one compiled
    program whose chains move in lockstep (a batched NUTS evaluates every chain
    until the longest tree of the batch is done); the groups run at the same time
    in threads, one per likelihood given. The draws depend on ``seed`` only, not
    on the number of threads.

    Args:
        likelihoods: ``[(objective, parameters)]``, one or more copies of the
            model's likelihood (``pigp.engines.dense.objective.Objective`` without priors) with
            its ``[(name, Parameter)]`` in the objective's order; each copy has
            its own variables, so that one thread uses each.
        Xs: the inputs of each data set.
        y: the standardised targets, all data sets stacked.
        priors: ``{name: distribution}`` over the constrained values, one per parameter.
        num_results: draws per chain after burn-in.
        num_burnin: steps per chain before them (see the warm-up below).
        num_chains: independent chains, started near the current values.
        seed: the seed of the starting points and the sampler.
        hessian: the likelihood's loss Hessian (no prior) in the unconstrained
            variables at the current values, or None; with the priors' curvature
            it whitens the first phase of the warm-up.
        max_tree_depth: NUTS's largest tree (at most 2^depth - 1 leapfrog steps).
        target_accept: dual averaging's target acceptance probability.

    Returns:
        Samples: the draws of every parameter, constrained, with diagnostics.
    """
    workers = [_Worker(o, p, Xs, y, priors, max_tree_depth, target_accept) for o, p in likelihoods]
    lead = workers[0]
    dim = lead.dim
    w0 = lead.w0
    # Whitening: the Laplace covariance of the posterior in w: the likelihood's
    # Hessian in v carried to w by dv/dw (the maps are elementwise, so the Jacobian
    # is diagonal), plus the curvature of the log prior (with its Jacobian) in w.
    # The prior's part keeps the scale finite in directions the data do not pin
    # down (a noise variance of noise-free data, flat below the jitter).
    prior_hessian = lead.prior_hessian(w0)
    if hessian is not None:
        slopes = lead.slopes(w0)
        L = _whitening(slopes[:, None] * hessian * slopes[None, :] + prior_hessian)
    else:
        L = _whitening(prior_hessian)
    # Warm-up in two phases when it is long enough: the first (20% of it, trees of
    # at most 31 steps) moves with the Laplace metric and adapts the step size; the
    # covariance of the second half of its draws, pooled over all chains (shrunk
    # towards a small multiple of the identity, as Stan does), becomes the metric
    # of the second phase, which adapts the step size again (80% of it) and then
    # draws. Where the posterior is wider or more skewed than the Laplace
    # approximation (a noise level bounded only by its prior), this keeps the step
    # size and the trees at the scale of the posterior instead of the mode's.
    first = int(0.2 * num_burnin) if num_burnin >= 50 else 0
    second = num_burnin - first
    groups = [
        list(range(c, min(c + CHAINS_PER_GROUP, num_chains)))
        for c in range(0, num_chains, CHAINS_PER_GROUP)
    ]
    rng = np.random.default_rng(seed)
    state = 0.1 * rng.standard_normal((num_chains, dim))  # whitened

    def in_parallel(task):  # task(worker, g, chains) for every group, threads over workers
        results = [None] * len(groups)

        def serve(k):
            for g in range(k, len(groups), len(workers)):
                results[g] = task(workers[k], g, groups[g])

        if len(workers) == 1 or len(groups) == 1:
            serve(0)
        else:
            with concurrent.futures.ThreadPoolExecutor(len(workers)) as pool:
                for future in [
                    pool.submit(serve, k) for k in range(min(len(workers), len(groups)))
                ]:
                    future.result()
        return results

    clock = time.perf_counter()
    try:
        metric = (tf.constant(L, tf.float64), w0)
        if first:
            explored = in_parallel(
                lambda worker, g, chains: worker.explore(
                    state[chains], [seed, 2 * g + 1], first, metric
                )
            )
            z = np.concatenate(explored, axis=1)  # (first, chains, dim)
            w = (metric[1] + tf.linalg.matvec(metric[0], z)).numpy()
            pooled = w[first // 2 :].reshape(-1, dim)
            n = len(pooled)
            covariance = np.atleast_2d(np.cov(pooled, rowvar=False))
            covariance = n / (n + 5.0) * covariance + 5.0 / (n + 5.0) * 1e-3 * np.eye(dim)
            new_L = np.linalg.cholesky(covariance)
            centre = pooled.mean(axis=0)
            state = scipy.linalg.solve_triangular(new_L, (w[-1] - centre).T, lower=True).T
            metric = (tf.constant(new_L, tf.float64), tf.constant(centre, tf.float64))
        runs = in_parallel(
            lambda worker, g, chains: worker.run(
                state[chains], [seed, 2 * g], num_results, second, metric
            )
        )
    finally:
        for worker in workers:
            worker.restore()
    seconds = time.perf_counter() - clock
    z = np.concatenate([r[0] for r in runs], axis=1)  # (results, chains, dim)
    log_accept, divergent, leapfrogs = (
        np.concatenate([r[i] for r in runs], axis=1) for i in (1, 2, 3)
    )
    step_size = float(np.mean([r[4] for r in runs]))
    thetas = lead.to_values(metric[1] + tf.linalg.matvec(metric[0], tf.constant(z)))
    values = {
        name: np.moveaxis(_representable(theta.numpy(), parameter), 0, 1)  # (chains, results)
        for (name, parameter), theta in zip(lead.parameters, thetas)
    }
    _check_draws(values, int(np.sum(divergent)), divergent.size, target_accept)
    samples = Samples(
        values,
        seconds,
        step_size,
        float(np.mean(np.minimum(1.0, np.exp(log_accept)))),
        int(np.sum(divergent)),
        dict(zip(lead.names, lead.distributions)),
        diverging=divergent.T,
        leapfrogs=leapfrogs.T,
    )
    worst = max(float(np.max(r)) for r in samples.rhat.values()) if num_chains > 1 else 1.0
    if worst > 1.01:
        warn(
            f"sample: the largest R-hat is {worst:.3f} (> 1.01): the chains disagree; "
            "run longer (num_results, num_burnin)"
        )
    return samples


def _check_draws(
    values: dict, divergences: int, transitions: int, target_accept: float = 0.8
) -> None:
    """Refuse draws that are not finite; warn of divergent transitions (as Stan and
    PyMC do after warm-up), with the way out."""
    bad = [name for name, v in values.items() if not np.all(np.isfinite(v))]
    if bad:
        raise RuntimeError(
            f"sample: draws of {bad} are not finite ({divergences} of {transitions} "
            "transitions diverged): the posterior is degenerate there, e.g. a noise variance "
            "fitted to ~0 on noise-free data; give such parameters a prior or a lower bound "
            "(Parameter(..., lower=...)) or fix them (trainable=False)"
        )
    if divergences > 0.1 * transitions:
        warn(
            f"sample: {divergences} of {transitions} transitions diverged: the draws do not "
            "represent the posterior; look for a parameter the data do not determine "
            "(e.g. a noise variance near 0) and give it a prior or a lower bound"
        )
    elif divergences:
        way_out = (
            f"sample again with a higher target_accept (now {target_accept:g}; e.g. 0.95), "
            "which takes smaller steps"
            if target_accept < 0.95
            else "give the parameters the data barely determine a prior or fix them"
        )
        warn(
            f"sample: {divergences} of {transitions} transitions diverged: the sampler "
            "skipped where the posterior curves sharply, and the draws may be biased "
            f"there; {way_out}"
        )


def _representable(values: np.ndarray, parameter) -> np.ndarray:
    """Draws of a positive parameter strictly above its lower bound: ``lower +
    exp(w)`` rounds to ``lower`` where ``exp(w)`` is below float64's resolution
    there (a noise variance of noise-free data drifting towards 0); such draws
    become the next normal float above ``lower`` (a denormal's softplus inverse is
    -inf in TensorFlow), a value the parameter accepts."""
    if not parameter.positive:
        return values
    lower = parameter.lower
    step = max(float(np.spacing(lower)), float(np.finfo(np.float64).tiny))
    return np.maximum(values, lower + step)


class _Worker:
    """One copy of the likelihood and the compiled NUTS programs over it.

    The sampler moves w (log space for positive parameters): theta = map(w); the
    objective's variables are v = bijector^-1(theta). The programs are pure
    functions of their arguments (the starting points and seed, the metric ``w =
    centre + L z``, the data, the objective's variables, and the centres and
    scales of the default priors) and of the likelihood's structure, the phase's
    settings and the parameters' own priors: ``pigp.structure.program`` shares
    them among workers, calls and models of one structure.
    """

    def __init__(self, objective, parameters, Xs, y, priors, max_tree_depth, target_accept):
        self.objective, self.parameters = objective, list(parameters)
        self.names = [name for name, _ in self.parameters]
        self.distributions = [priors[name] for name in self.names]
        self.Xs, self.y = Xs, y
        self.max_tree_depth, self.target_accept = max_tree_depth, target_accept
        self.shapes = [tuple(v.shape) for v in objective.variables]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.start = [v.numpy() for v in objective.variables]
        self.dim = sum(self.sizes)
        self.maps = [parameter.sampling_bijector for _, parameter in self.parameters]
        self.w0 = self.join(
            [tf.constant(p.sampling_start(), tf.float64) for _, p in self.parameters]
        )
        # A default prior is a normal in w or in the value: its centre and scale are
        # arguments of the programs; a parameter's own prior enters their key (by
        # identity).
        self.defaults = [
            d.name if d.name in (DEFAULT_PRIOR, DEFAULT_VALUE_PRIOR) else None
            for d in self.distributions
        ]
        normals = [getattr(d, "distribution", d) for d in self.distributions]
        self.locs = tuple(
            tf.cast(n.loc, tf.float64) if default else tf.zeros(p.shape, tf.float64)
            for n, default, (_, p) in zip(normals, self.defaults, self.parameters)
        )
        self.scales = tuple(
            tf.cast(n.scale, tf.float64) if default else tf.ones(p.shape, tf.float64)
            for n, default, (_, p) in zip(normals, self.defaults, self.parameters)
        )
        self.key = (
            objective.key,
            tuple(
                (p.shape, bool(p.positive), p.lower, default or d)
                for (_, p), d, default in zip(self.parameters, self.distributions, self.defaults)
            ),
            max_tree_depth,
            target_accept,
        )

    # ----- coordinates ---------------------------------------------------------------------
    def split(self, v):  # (..., dim) -> one (..., *shape) part per variable
        parts = tf.split(v, self.sizes, axis=-1)
        return [
            tf.reshape(p, tf.concat([tf.shape(p)[:-1], s], 0)) for p, s in zip(parts, self.shapes)
        ]

    def join(self, parts):  # the inverse of split
        return tf.concat(
            [
                tf.reshape(p, tf.concat([tf.shape(p)[: p.shape.rank - len(s)], [-1]], 0))
                for p, s in zip(parts, self.shapes)
            ],
            -1,
        )

    def to_values(self, w):  # (..., dim) -> the constrained values, one part per parameter
        return [m.forward(part) for m, part in zip(self.maps, self.split(w))]

    def to_variables(self, w):
        return self.join(
            [
                parameter.unconstrained_from_sampling(part)
                for (_, parameter), part in zip(self.parameters, self.split(w))
            ]
        )

    def slopes(self, w) -> np.ndarray:
        """``dv/dw`` (elementwise maps: the Jacobian's diagonal)."""
        with tf.GradientTape() as tape:
            tape.watch(w)
            v = self.to_variables(w)
        return tape.gradient(v, w).numpy()

    def prior_hessian(self, w) -> np.ndarray:
        """``-d^2 log prior / dw^2`` (with the Jacobian) at one point ``w`` (dim,)."""
        w = tf.constant(w, tf.float64)
        with tf.GradientTape(persistent=True) as outer:
            outer.watch(w)
            with tf.GradientTape() as inner:
                inner.watch(w)
                value = self.log_prior(w[None], self.locs, self.scales)[0]
            gradient = inner.gradient(value, w)
        # A loop, not pfor: eagerly, pfor builds a new function at every call.
        H = -outer.jacobian(gradient, w, experimental_use_pfor=False).numpy()
        return 0.5 * (H + H.T)

    def log_prior(self, w, locs, scales):  # (chains, dim) -> (chains,): prior, Jacobian
        terms = []
        parts = zip(
            self.parameters,
            self.distributions,
            self.defaults,
            self.maps,
            self.split(w),
            locs,
            scales,
        )
        for (_, parameter), distribution, default, m, part, loc, scale in parts:
            axes = list(range(-len(parameter.shape), 0))
            if default == DEFAULT_PRIOR:  # a normal in w (the Jacobian included)
                base = tfp.distributions.Normal(loc, scale)
                terms.append(tf.reduce_sum(base.log_prob(part), axis=axes))
            else:  # a density in the value, and the Jacobian
                if default == DEFAULT_VALUE_PRIOR:  # a normal, from the programs' arguments
                    distribution = tfp.distributions.Normal(loc, scale)
                terms.append(
                    parameter.log_prior(distribution=distribution, value=m.forward(part))
                    + m.forward_log_det_jacobian(part, event_ndims=len(parameter.shape))
                )
        return tf.add_n(terms)

    # ----- the target and the programs -----------------------------------------------------
    def _target(self, L, centre, Xs, y, unconstrained, locs, scales):
        """The log posterior in whitened ``z`` (chains, dim), with its gradient: built
        inside a program, from the program's arguments."""
        variables = self.objective.trained_of(unconstrained)

        @tf.function(jit_compile=True, autograph=False)
        def prepare(z, L, centre, locs, scales):
            """Whitened ``z`` (chains, dim) -> each variable's values (chains, *shape),
            the log prior with its Jacobian (chains,), its gradient in z and dv/dw."""
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(z)
                w = centre + tf.linalg.matvec(L, z)
                v = self.to_variables(w)
                prior = self.log_prior(w, locs, scales)
            return self.split(v), prior, tape.gradient(prior, z), tape.gradient(v, w)

        @tf.function(jit_compile=True, autograph=False)
        def combine(losses, gradients, prior, prior_gradient, slopes, L):
            value = prior - losses
            gradient = prior_gradient - tf.linalg.matvec(L, slopes * gradients, transpose_a=True)
            # A point where K is not positive definite has no density there.
            ok = tf.math.is_finite(value) & tf.reduce_all(tf.math.is_finite(gradient), axis=1)
            value = tf.where(ok, value, tf.constant(-np.inf, tf.float64))
            return value, tf.where(ok[:, None], gradient, tf.zeros_like(gradient))

        @tf.custom_gradient
        def target(z):  # (chains, dim) whitened -> (chains,), one chain after another
            parts, prior, prior_gradient, slopes = prepare(z, L, centre, locs, scales)
            losses, gradients = [], []
            for c in range(z.shape[0]):
                for variable, part in zip(variables, parts):
                    variable.assign(part[c])
                loss, g = self.objective.tf_loss_and_gradient(Xs, y, unconstrained)
                losses.append(loss)
                gradients.append(tf.concat([tf.reshape(x, [-1]) for x in g], 0))
            value, gradient = combine(
                tf.stack(losses), tf.stack(gradients), prior, prior_gradient, slopes, L
            )

            def backward(upstream, variables=None):
                # The variables are assigned here, not inputs: no gradient flows to them.
                return upstream[:, None] * gradient, [tf.zeros_like(x) for x in variables or ()]

            return value, backward

        return target

    def _sampler(self, target, adaptation_steps, depth):
        return tfp.mcmc.DualAveragingStepSizeAdaptation(
            tfp.mcmc.NoUTurnSampler(
                target, step_size=tf.constant(0.5, tf.float64), max_tree_depth=depth
            ),
            num_adaptation_steps=adaptation_steps,
            target_accept_prob=tf.constant(self.target_accept, tf.float64),
        )

    def _arguments(self, initial, seed, metric) -> tuple:
        return (
            tf.constant(initial, tf.float64),
            tf.constant(seed, tf.int32),
            tf.cast(metric[0], tf.float64),
            tf.cast(metric[1], tf.float64),
            self.Xs,
            self.y,
            self.objective.unconstrained,
            self.locs,
            self.scales,
        )

    def explore(self, initial, seed, steps: int, metric) -> np.ndarray:
        """``steps`` draws (steps, chains, dim) with the step size adapting all along."""

        def build():
            @tf.function(autograph=False)
            def explore(initial, seed, L, centre, Xs, y, unconstrained, locs, scales):
                target = self._target(L, centre, Xs, y, unconstrained, locs, scales)
                kernel = self._sampler(target, steps, min(self.max_tree_depth, 5))
                return tfp.mcmc.sample_chain(
                    steps, initial, kernel=kernel, trace_fn=None, seed=seed
                )

            return explore

        program = structure.program((self.key, "explore", steps, len(initial)), build)
        return program(*self._arguments(initial, seed, metric)).numpy()

    def run(self, initial, seed, num_results: int, num_burnin: int, metric) -> tuple:
        """Burn-in (step size adapting during 80% of it), then the draws; returns z,
        the log acceptance ratios, divergences, leapfrog steps (each (results,
        chains, ...)) and the final step size."""

        def build():
            def trace(_, results):
                inner = results.inner_results
                return (
                    inner.log_accept_ratio,
                    inner.has_divergence,
                    inner.leapfrogs_taken,
                    results.new_step_size,
                )

            @tf.function(autograph=False)
            def run(initial, seed, L, centre, Xs, y, unconstrained, locs, scales):
                target = self._target(L, centre, Xs, y, unconstrained, locs, scales)
                kernel = self._sampler(target, int(0.8 * num_burnin), self.max_tree_depth)
                return tfp.mcmc.sample_chain(
                    num_results,
                    initial,
                    kernel=kernel,
                    num_burnin_steps=num_burnin,
                    trace_fn=trace,
                    seed=seed,
                )

            return run

        key = (self.key, "run", num_results, num_burnin, len(initial))
        program = structure.program(key, build)
        z, (log_accept, divergent, leapfrogs, step_size) = program(
            *self._arguments(initial, seed, metric)
        )
        return (
            z.numpy(),
            log_accept.numpy(),
            divergent.numpy(),
            leapfrogs.numpy(),
            float(step_size.numpy()[-1]),
        )

    def restore(self):
        for variable, value in zip(self.objective.variables, self.start):
            variable.assign(value)
