"""The sparse variational physics-informed GP: inducing points, minibatches, tf.distribute.

``SparsePIGP`` shares the prior, the data sets and the parameters with the
exact ``PIGP`` (``pigp.engines.model.Model``) and replaces the N x N covariance by M
inducing values of u (``pigp.engines.variational.inducing``): memory O(N M) for the collapsed
bound, O(B M) per minibatch step for the stochastic one, whatever N is.

Minibatches come from a ``tf.data`` pipeline that draws from every data set in
proportion to its size (``b_i ~ B N_i / N``, each value weighted ``N_i / b_i``,
so the ELBO estimate is unbiased), and are split across the replicas of the
``tf.distribute`` strategy the model was created under: each replica computes
its share of the global batch, the losses and gradients are summed across
replicas, and every replica applies the same update (Adam for the parameters,
a natural-gradient step for q). The global batches
do not depend on the number of replicas, so neither do the losses.
"""

from __future__ import annotations

import numpy as np

from ... import _validation as check
from ..._tensorflow import tf
from ..._threads import limit_blas
from ..._warnings import warn
from ...fitting import FitPlan, FitReport, Training, training
from ...fitting.run import train
from ...kernels.covariance import block
from ...kernels.library import Kernel
from ...operators.linear import Identity, Operator
from ...structure import Structure, program
from ..dense.posterior import CHUNK
from ..model import Model, check_training, representable
from .collapsed import (
    CollapsedObjective,
    chunk_statistics_program,
    inducing_blocks_program,
    warn_if_loose,
)
from .inducing import (
    expected_log_likelihood,
    inducing_points,
    kl_divergence,
    marginals,
    posterior_from_precision,
    projection,
)

__all__ = ["SparsePIGP", "CollapsedObjective", "inducing_points", "COLLAPSED_UP_TO"]

#: ``method="auto"`` uses the collapsed bound up to this many data values.
COLLAPSED_UP_TO = 20_000
STEPS_PER_CALL = 50  # stochastic steps per compiled call (callbacks every 250, as Adam's)


class SparsePIGP(Model):
    """A physics-informed GP with M inducing values of u, for data of any size.

    The inducing variables are u at points ``Z``, whitened, with the variational
    posterior ``q(v) = N(m, S)`` (``pigp.engines.variational.inducing``). Every data set (u, f,
    boundary, Neumann: any ``Observations``) enters the bound through its own
    operator's cross block with ``u(Z)`` and its own noise. ``fit`` maximises
    either Titsias's collapsed bound (all data at once, O(N M^2) per step, the
    optimal ``q`` in closed form) or the stochastic ELBO on minibatches
    (O(B M^2) per step, memory independent of N), data-parallel under the
    ``tf.distribute`` strategy whose scope the model was created in.

    Args:
        kernel: the prior covariance of u, a ``pigp.kernels.Kernel``.
        operator: the operator L of the f data.
        num_inducing: M, the number of inducing points (ignored when
            ``inducing_points`` is given).
        inducing_points: array of shape (M, d), or None to place M points by
            k-means on the training inputs at the first fit.
        train_inducing: also learn the inducing points.
        **settings: the arguments every model takes, as for ``pigp.PIGP`` (one
            constructor, ``pigp.engines.model.Model``): ``noise_u`` and ``noise_f`` (initial
            noise variances, standardised units; None: 1e-3, learned; exact data,
            0, are refused at ``fit``: the variational likelihood needs a positive
            noise), ``dims``, ``dtype``, ``jitter`` (relative diagonal jitter of
            ``Kzz``; default 1e-10 in float64, 1e-4 in float32), ``standardize``
            and ``name``.

    After ``fit``: ``history`` (the loss per step: the negative bound, for the
    stochastic method its minibatch estimate), ``method`` (the one used) and
    ``data``.
    """

    #: The default relative jitter of ``Kzz`` by dtype.
    JITTER = {"float64": 1e-10, "float32": 1e-4}

    def __init__(
        self,
        kernel: Kernel,
        operator: Operator,
        num_inducing: int = 128,
        inducing_points=None,
        *,
        train_inducing: bool = False,
        **settings,
    ):
        if inducing_points is not None:
            inducing_points = check.as_inputs("inducing_points", inducing_points)
            num_inducing = len(inducing_points)
        if not (isinstance(num_inducing, (int, np.integer)) and num_inducing >= 1):
            raise ValueError(f"num_inducing: expected a positive integer, got {num_inducing!r}")
        super().__init__(kernel, operator, **settings)
        self.num_inducing = int(num_inducing)
        self.train_inducing = bool(train_inducing)
        self._initial_inducing = inducing_points

    def _start(self) -> None:
        if not isinstance(self.operator, Operator):
            raise ValueError(
                "operator: SparsePIGP takes linear operators; solve a nonlinear equation "
                "with pigp.PIGP (Gauss-Newton)"
            )
        if self.fields is not None:
            raise ValueError(
                "kernel: SparsePIGP models one field; a model of several fields is "
                "pigp.PIGP({name: kernel, ...}, ...)"
            )
        self.strategy = tf.distribute.get_strategy()
        self.method = None
        self.inducing = None  # tf.Variable (M, d), made at the first fit
        self.q_mu = None  # tf.Variable (M,)
        self.q_sqrt = None  # tf.Variable (M, M), its lower triangle used

    # ----- the variational parameters ------------------------------------------------
    @property
    def inducing_points(self) -> np.ndarray | None:
        """``Z``, array of shape (M, d), or None before fit."""
        return None if self.inducing is None else self.inducing.numpy()

    def _variational(self) -> tuple:
        """``(Z, m, Ls)`` as tensors of the model's dtype."""
        return (
            tf.cast(self.inducing, self.dtype),
            tf.cast(self.q_mu, self.dtype),
            tf.cast(tf.linalg.band_part(self.q_sqrt, -1, 0), self.dtype),
        )

    def _create_variational(self, data, seed: int) -> None:
        d = data.input_dim
        if self._initial_inducing is not None:
            if self._initial_inducing.shape[1] != d:
                raise ValueError(
                    f"inducing_points: expected {d} columns like the data, got "
                    f"{self._initial_inducing.shape[1]}"
                )
            Z = self._initial_inducing
        else:
            Z = inducing_points(np.concatenate([s.X for s in data.sets]), self.num_inducing, seed)
        M = len(Z)
        with self.strategy.scope():
            self.inducing = tf.Variable(
                Z, dtype=tf.float64, trainable=self.train_inducing, name="inducing_points"
            )
            self.q_mu = tf.Variable(tf.zeros(M, tf.float64), name="q_mu")
            self.q_sqrt = tf.Variable(tf.eye(M, dtype=tf.float64), name="q_sqrt")

    def variables_to_train(self) -> list:
        """The unconstrained parameters, ``m``, ``Ls`` and (if trained) ``Z``."""
        out = [p.unconstrained for _, p in self.trainable_parameters()]
        out += [self.q_mu, self.q_sqrt]
        if self.train_inducing:
            out.append(self.inducing)
        return out

    # ----- training -----------------------------------------------------------------------
    @limit_blas
    def fit(
        self,
        X_u=None,
        y_u=None,
        X_f=None,
        y_f=None,
        *,
        observations=(),
        method: str = "auto",
        steps: int = 2000,
        batch_size: int = 1024,
        learning_rate: float = 0.01,
        seed: int = 0,
        natural_step: float | None = 0.1,
        optimal_q: bool = True,
        warm_start: int | None = 2048,
        verbose: bool | None = None,
        callback=None,
    ) -> SparsePIGP:
        """Learn the parameters and ``q`` by maximising a lower bound on ``log p(y)``.

        Args:
            X_u, y_u, X_f, y_f, observations: the data, as for ``PIGP.fit``.
            method: ``"collapsed"`` (Titsias's bound over all data, which is
                deterministic, maximised with SciPy's L-BFGS-B, then ``q`` in closed
                form; O(N M^2) time and O(N M) memory per iteration), ``"stochastic"``
                (the ELBO on minibatches: Adam on the parameters, natural-gradient
                steps on ``q``; O(B M^2) per step, memory independent of N,
                data-parallel under ``tf.distribute``), or ``"auto"`` (collapsed up to
                ``COLLAPSED_UP_TO`` = 20,000 values).
            steps: Adam steps (stochastic), or at most this many L-BFGS-B
                iterations (collapsed; it usually stops well before 2000).
            batch_size: B, the global minibatch size of the stochastic method,
                shared among the data sets in proportion to their sizes (each set
                at least 1).
            learning_rate: Adam's step size (stochastic).
            seed: places the inducing points and orders the minibatches.
            natural_step: the stochastic method's natural-gradient step size for
                ``q`` (in (0, 1]; Adam trains the other parameters), or None to
                train ``q`` with Adam too.
            optimal_q: after the stochastic method's steps, set ``q`` to its optimum
                for the final parameters by one pass over the data in chunks
                (O(N M^2) time, O(M^2) memory; about one epoch of steps), instead
                of keeping the last iterate, which still carries the minibatches'
                noise.
            warm_start: before the stochastic method's steps, fit the parameters to
                Titsias's bound on a random subset of this many values (each data
                set in proportion, at least one value each) with L-BFGS (at most
                200 iterations): minibatch gradients are noisy, and a good start
                saves thousands of their steps. None: start from the current
                values.
            verbose: show a progress bar (None, the default: on a terminal, once the
                fit has lasted 10 s).
            callback: ``callback(step, loss, model)`` after every 250 stochastic steps
                and after the last; returning ``True`` stops early.

        Returns:
            self.
        """
        if method not in ("auto", "collapsed", "stochastic"):
            raise ValueError(
                f"method: expected 'auto', 'collapsed' or 'stochastic', got {method!r}"
            )
        check_training(steps, learning_rate)
        if not (isinstance(batch_size, (int, np.integer)) and batch_size >= 1):
            raise ValueError(f"batch_size: expected a positive integer, got {batch_size!r}")
        if natural_step is not None and not (
            isinstance(natural_step, (int, float)) and 0 < natural_step <= 1
        ):
            raise ValueError(
                f"natural_step: expected a number in (0, 1] or None, got {natural_step!r}"
            )
        if warm_start is not None and not (
            isinstance(warm_start, (int, np.integer)) and warm_start >= 1
        ):
            raise ValueError(
                f"warm_start: expected a positive number of values or None, got {warm_start!r}"
            )
        if not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed: expected an integer, got {seed!r}")
        data = self.prepare_data(X_u, y_u, X_f, y_f, observations)
        exact = [s.name for s in data.sets if np.any(s.noise.numpy() <= 0)]
        if exact:
            raise ValueError(
                f"noise: the sparse model's likelihood needs a positive noise variance for "
                f"every data set; {exact} have 0 (exact data): give a small positive one "
                "instead (e.g. 1e-6, standardised units)"
            )
        conditioned = [s.name for s in data.sets if s.condition]
        if conditioned:
            raise ValueError(
                f"observations: condition=True ({conditioned}) is for pigp.PIGP; the sparse "
                "model's bound counts every set as evidence"
            )
        with self.strategy.scope():
            self.kernel.build(np.concatenate([s.X for s in data.sets]))
        n = sum(data.sizes)
        if method == "auto":
            method = "collapsed" if n <= COLLAPSED_UP_TO else "stochastic"
        if self.inducing is None or self.inducing.shape[1] != data.input_dim:
            self._create_variational(data, int(seed))

        # Validated: from here on, state changes.
        self.data, self.method = data, method
        self.adopt(FitReport())
        optimizer = training.Adam(float(learning_rate))
        progress = None if method == "collapsed" else training.progress_bar(int(steps), verbose)
        wrapped = None if callback is None else (lambda done, loss: callback(done, loss, self))
        try:
            if method == "collapsed":
                self._fit_collapsed(int(steps), verbose)
            else:
                if warm_start is not None and steps > 0:
                    self._warm_start(int(warm_start), int(seed))
                self._fit_stochastic(
                    int(steps),
                    int(batch_size),
                    optimizer,
                    int(seed),
                    natural_step,
                    wrapped,
                    progress,
                )
                if optimal_q and steps > 0:
                    self._set_optimal_q()
        finally:
            if progress is not None:
                progress.close()
        return self

    def _identity(self) -> list:
        return Identity.resolve(self.data.input_dim)

    def collapsed_objective(self, inducing: bool = True, priors: bool = True):
        """The collapsed loss (``collapsed.CollapsedObjective``) over the trainable
        parameters, and Z where it is trained and ``inducing``; pass it
        ``model.data.tensors(model.dtype)``."""
        self._require_data()
        trainable = [p for _, p in self.trainable_parameters()]
        variables = [p.unconstrained for p in trainable]
        if self.train_inducing and inducing:
            variables.append(self.inducing)
        priors = trainable if priors else ()
        return CollapsedObjective(self.structure(), self.inducing, variables, priors)

    def _warm_start(self, count: int, seed: int, iterations: int = 200) -> None:
        """L-BFGS on the collapsed bound of ``count`` random values (see ``fit``)."""
        rng = np.random.default_rng(seed)
        sizes = self.batch_sizes(count)
        Xs, ys = [], []
        for s, b in zip(self.data.sets, sizes):
            index = rng.choice(len(s.X), b, replace=False)
            Xs.append(tf.constant(s.X[index], self.dtype))
            ys.append(s.y[index] / self.data.y_scale)
        y = tf.constant(np.concatenate(ys), self.dtype)
        training.minimize_lbfgs(self.collapsed_objective(), tuple(Xs), y, iterations)

    def _fit_collapsed(self, steps, verbose) -> None:
        """L-BFGS-B on the collapsed bound, by the run of ``pigp.fitting`` (its report
        the model's), then the optimal ``q``."""
        objective = self.collapsed_objective()
        Xs, y = self.data.tensors(self.dtype)
        adam, lbfgs = training.History(), training.History()
        run = Training(steps=steps, optimizer="lbfgs")
        try:
            train(self, objective, Xs, y, run, FitPlan(), None, verbose, adam, lbfgs)
        finally:
            self.report.record(adam, lbfgs)
        self._set_optimal_q()

    def objective(self, priors: bool = True) -> CollapsedObjective:
        """``-(Titsias's collapsed bound) - log prior`` over all the data and the trainable
        parameters (the inducing points held): the loss ``parameter_uncertainty``,
        ``parameter_intervals`` and ``sample`` read, whichever ``method`` trained the
        model. Up to ``COLLAPSED_UP_TO`` values (its cost is O(N M^2) time and O(N M)
        memory per evaluation); pass it ``model.data.tensors(model.dtype)``.

        Raises:
            ValueError: before fit, or with more values than ``COLLAPSED_UP_TO``.
        """
        self._require_data()
        n = sum(self.data.sizes)
        if n > COLLAPSED_UP_TO:
            raise ValueError(
                f"model: the parameters' uncertainty of a sparse model is that of Titsias's "
                f"collapsed bound over all the data, up to {COLLAPSED_UP_TO} values; this "
                f"model has {n}: fit a subset with method='collapsed' for it"
            )
        return self.collapsed_objective(inducing=False, priors=priors)

    def _warn_unidentified(self, caller: str) -> None:
        super()._warn_unidentified(caller)
        warn_if_loose(self, caller)

    def structure(self) -> Structure:
        """The structure of the fitted data (what the compiled programs are keyed by)."""
        self._require_data()
        return Structure(self.kernel, self.data.sets, self.jitter, self.dtype)

    def _values(self) -> tuple:
        """The constrained values of ``structure().parameters`` (float64)."""
        return tuple(p.value() for p in self.structure().parameters)

    def batch_sizes(self, batch_size: int) -> list:
        """Each data set's share ``b_i = max(1, round(B N_i / N))`` of a global batch."""
        sizes = self.data.sizes
        total = sum(sizes)
        return [max(1, min(n, round(batch_size * n / total))) for n in sizes]

    def _dataset_fn(self, batch_sizes, seed):
        """The input function of ``distribute_datasets_from_function``: each pipeline
        builds the same global batches (per data set: a fresh permutation each
        epoch, consecutive slices of it) and yields, in turn, the slices of the
        replicas it feeds; slices are padded to equal sizes with weight 0."""
        replicas = self.strategy.num_replicas_in_sync
        sets, y_scale, dtype = self.data.sets, self.data.y_scale, self.dtype

        def dataset(context):
            per_pipeline = replicas // context.num_input_pipelines
            first = context.input_pipeline_id * per_pipeline
            streams = []
            for i, (s, b) in enumerate(zip(sets, batch_sizes)):
                X = tf.constant(s.X, dtype)
                y = tf.constant(s.y / y_scale, dtype)
                n = len(s.X)
                width = -(-b // replicas)  # slots per replica

                def permutation(epoch, n=n, i=i):
                    return tf.random.experimental.stateless_shuffle(
                        tf.range(n, dtype=tf.int64), seed=tf.stack([seed * 1000 + i, epoch])
                    )

                def slices(index, X=X, y=y, b=b, width=width):
                    pad = replicas * width - b
                    index = tf.concat([index, tf.zeros([pad], tf.int64)], axis=0)
                    mask = tf.concat([tf.ones([b], dtype), tf.zeros([pad], dtype)], axis=0)
                    shape = [replicas, width]
                    parts = (
                        tf.reshape(tf.gather(X, index), shape + [X.shape[1]]),
                        tf.reshape(tf.gather(y, index), shape),
                        tf.reshape(mask, shape),
                    )
                    return tuple(p[first : first + per_pipeline] for p in parts)

                stream = (
                    tf.data.Dataset.range(2**62)
                    .map(permutation)
                    .unbatch()
                    .batch(b, drop_remainder=True)
                    .map(slices)
                )
                streams.append(stream)
            return (
                tf.data.Dataset.zip(tuple(streams))
                .flat_map(lambda *parts: tf.data.Dataset.from_tensor_slices(parts))
                .prefetch(tf.data.AUTOTUNE)
            )

        return dataset

    def _replica_terms(self, blocks, batch, weights, replicas, priors, natural: bool):
        """This replica's share of ``-ELBO - log prior`` (its slice of the weighted
        expected log likelihoods, plus ``(KL - log prior) / replicas``) and, for the
        natural-gradient step, its share of ``P = sum w a a' / s`` and
        ``r = sum w a y / s`` over its values (``a`` a column of ``A``)."""
        Z, m, Ls = self._variational()
        values = tuple(p.value() for p in self.structure().parameters)
        Kzz, Kzx, kxx = blocks(Z, tuple(X for X, _, _ in batch), values)
        chol_z = tf.linalg.cholesky(Kzz)
        total = tf.constant(0.0, self.dtype)
        P = r = 0.0
        parts = zip(batch, Kzx, kxx, self.data.sets, weights)
        for (_, y, mask), Kzx_i, kxx, s, w in parts:
            A = projection(chol_z, Kzx_i)
            mean, var = marginals(A, kxx, m, Ls)
            noise = s.noise.value(self.dtype)
            ell = expected_log_likelihood(y, mean, var, noise)
            total += w * tf.reduce_sum(mask * ell)
            if natural:
                scale = tf.stop_gradient(w * mask / noise)
                A = tf.stop_gradient(A)
                P += tf.matmul(A * scale, A, transpose_b=True)
                r += tf.linalg.matvec(A, scale * y)
        rest = tf.cast(kl_divergence(m, Ls), tf.float64)
        if priors:
            rest -= tf.add_n([p.log_prior() for p in priors])
        loss = -tf.cast(total, tf.float64) + rest / replicas
        return loss, P, r

    def _natural_step(self, P, r, gamma):
        """One natural-gradient step of ``q`` (Hensman et al. 2013): with the
        precision ``Lambda = S^-1`` and ``theta = S^-1 m``, move both a fraction
        ``gamma`` towards the minibatch's optimum ``(I + P, r)``; ``gamma = 1`` on the
        full batch is the optimal ``q`` of the collapsed bound."""
        Ls = tf.linalg.band_part(self.q_sqrt, -1, 0)
        eye = tf.eye(tf.shape(Ls)[0], dtype=tf.float64)
        precision = tf.linalg.cholesky_solve(Ls, eye)
        theta = tf.linalg.matvec(precision, self.q_mu)
        P, r = tf.cast(P, tf.float64), tf.cast(r, tf.float64)
        precision = (1.0 - gamma) * precision + gamma * (eye + P)
        theta = (1.0 - gamma) * theta + gamma * r
        m, Ls = posterior_from_precision(precision, theta)
        finite = tf.reduce_all(tf.math.is_finite(Ls)) & tf.reduce_all(tf.math.is_finite(m))

        def assign():
            self.q_mu.assign(m)
            self.q_sqrt.assign(Ls)
            return tf.constant(True)

        return tf.cond(finite, assign, lambda: tf.constant(False))

    def _stochastic_program(self, optimizer, weights, variables, priors, gamma):
        strategy = self.strategy
        replicas = strategy.num_replicas_in_sync
        natural = gamma is not None
        total = tf.distribute.ReduceOp.SUM

        def replica_step(batch):
            with tf.GradientTape() as tape:
                loss, P, r = self._replica_terms(blocks, batch, weights, replicas, priors, natural)
            grads = tape.gradient(loss, variables, unconnected_gradients="zero")
            return (loss, grads, P, r) if natural else (loss, grads)

        # XLA compiles the blocks (the tape-derived kernel derivatives); the linear
        # algebra runs faster outside it on a CPU. Where one process holds several
        # replicas (MirroredStrategy), their variables live on devices a compiled
        # program cannot reach, and the blocks run as a plain graph.
        try:
            local = len(strategy.extended.worker_devices)
        except RuntimeError:  # the default strategy: one device
            local = 1
        blocks = inducing_blocks_program(self.structure(), jit=local == 1)
        compiled = tf.function(replica_step, autograph=False)

        def run(iterator, n, state):
            losses = tf.TensorArray(tf.float64, size=n)
            for i in tf.range(n):
                out = strategy.run(compiled, args=(next(iterator),))
                loss = strategy.reduce(total, out[0], axis=None)
                grads = [strategy.reduce(total, g, axis=None) for g in out[1]]
                _, state = optimizer.update(loss, grads, variables, state)
                if natural:
                    P = strategy.reduce(total, out[2], axis=None)
                    r = strategy.reduce(total, out[3], axis=None)
                    self._natural_step(P, r, gamma)
                losses = losses.write(i, loss)
            return losses.stack(), state

        return tf.function(run)

    def _fit_stochastic(
        self, steps, batch_size, optimizer, seed, natural_step, callback, progress
    ) -> None:
        if steps == 0:
            return
        sizes = self.batch_sizes(batch_size)
        weights = [n / b for n, b in zip(self.data.sizes, sizes)]
        priors = tuple(p for _, p in self.trainable_parameters() if p.prior is not None)
        variables = self.variables_to_train()
        if natural_step is not None:
            variables = [v for v in variables if v is not self.q_mu and v is not self.q_sqrt]
        strategy = self.strategy
        dataset = strategy.distribute_datasets_from_function(self._dataset_fn(sizes, seed))
        iterator = iter(dataset)
        loop = self._stochastic_program(optimizer, weights, variables, priors, natural_step)
        with strategy.scope():
            state = optimizer.init(variables)
        done = 0
        while done < steps:
            n = min(STEPS_PER_CALL, steps - done)
            losses, state = loop(iterator, tf.constant(n), state)
            losses = losses.numpy()
            self.history.extend(losses.tolist())
            done += n
            if progress is not None:
                progress.update(n)
                progress.set_postfix(loss=f"{losses[-1]:.6g}")
            if (
                callback is not None
                and (done % training.STEPS_PER_CALL == 0 or done == steps)
                and callback(done, float(losses[-1])) is True
            ):
                break
        if not np.all(np.isfinite(self.history)):
            warn("fit: some minibatch losses were not finite; those steps were skipped")

    def _full_pass(self, chunk: int = 4096) -> tuple:
        """One pass over every value in chunks (memory O(chunk M + M^2)): ``(P, r, ell)``
        summed over all data sets (float64)."""
        M = self.inducing.shape[0]
        P, r, ell = np.zeros((M, M)), np.zeros(M), 0.0
        values, variational = self._values(), self._variational()
        for index, s in enumerate(self.data.sets):
            statistics = chunk_statistics_program(self.structure(), index)
            y_all = s.y / self.data.y_scale
            size = min(chunk, len(s.X))
            for start in range(0, len(s.X), size):
                X, y = s.X[start : start + size], y_all[start : start + size]
                pad = size - len(X)
                mask = np.concatenate([np.ones(len(X)), np.zeros(pad)])
                X = np.concatenate([X, np.repeat(X[-1:], pad, axis=0)])
                y = np.concatenate([y, np.zeros(pad)])
                Pc, rc, ellc = statistics(
                    tf.constant(X, self.dtype),
                    tf.constant(y, self.dtype),
                    tf.constant(mask, self.dtype),
                    values,
                    *variational,
                )
                P += Pc.numpy()
                r += rc.numpy()
                ell += float(ellc)
        return P, r, ell

    def _set_optimal_q(self) -> None:
        """``q`` at its optimum for the current parameters (the collapsed bound's), from
        one pass over the data: ``S = (I + P)^-1``, ``m = S r``."""
        P, r, _ = self._full_pass()
        m, Ls = posterior_from_precision(tf.constant(np.eye(len(r)) + P), tf.constant(r))
        self.q_mu.assign(m)
        self.q_sqrt.assign(Ls)

    @limit_blas
    def elbo(self) -> float:
        """The ELBO of the current ``q`` over all data (one pass, in chunks), in
        standardised units: ``sum E_q[log p(y | u)] - KL(q || p)``; at the optimal ``q``
        it equals the collapsed bound."""
        self._require_data()
        _, m, Ls = self._variational()
        return self._full_pass()[2] - float(kl_divergence(m, Ls))

    # ----- prediction ---------------------------------------------------------------------
    def _predictive_program(self, terms):
        """``(program, values)``: the compiled ``(Xc, values, Z, m, Ls) -> (mean, var, A)``
        of an output of operator ``terms`` under ``q``, shared by structure, and the
        values it takes (the structure's parameters', then ``terms``'s own)."""
        structure = self.structure()
        extra = structure.extra(terms)
        blocks = inducing_blocks_program(structure, (terms,))

        def build():
            def predictive(Xc, values, Z, m, Ls):
                Kzz, (Kzx,), (kxx,) = blocks(Z, (Xc,), values)
                A = projection(tf.linalg.cholesky(Kzz), Kzx)
                mean, var = marginals(A, kxx, m, Ls)
                return mean, var, A

            return tf.function(predictive, autograph=False)

        key = (structure.key, "sparse predictive", structure.terms(terms, extra))
        values = self._values() + tuple(p.value() for p in extra)
        return program(key, build), values

    @limit_blas
    def predict(self, X, output="u", full_cov: bool = False):
        """The mean and variance of u (or ``L u``) at points X under ``q``.

        Args:
            X: array of shape (n, d).
            output: ``"u"``, ``"f"``, an observation set's name or an Operator.
            full_cov: return the (n, n) covariance instead of the variance.

        Returns:
            ``(mean, var)`` in data units, arrays (n,) and (n,) or (n, n):
            ``mean = A' m``, ``var = k_** - colsum(A^2) + colsum((Ls' A)^2)`` with
            ``A = Lz^-1 cov(u(Z), L u(X))``; computed in chunks of 1024 points.
        """
        self._require_data()
        X = check.as_inputs("X", X, self.data.input_dim)
        terms = self._output_terms(output, self.data.input_dim)
        predictive, values = self._predictive_program(terms)
        variational = self._variational()
        if full_cov:
            Xt = tf.constant(X, self.dtype)
            mean, _, A = predictive(Xt, values, *variational)
            _, _, Ls = self._variational()
            prior = block(self.kernel, Xt, Xt, list(terms), list(terms)).numpy()
            A = A.numpy().astype(np.float64)
            SA = Ls.numpy().astype(np.float64).T @ A
            cov = self._squared_units(prior - A.T @ A + SA.T @ SA)
            mean = mean.numpy().astype(np.float64) * self.y_scale
            return mean, representable(0.5 * (cov + cov.T), "covariance")
        means, variances = [], []
        for start in range(0, len(X), CHUNK):
            part = X[start : start + CHUNK]
            padded = np.concatenate([part, np.repeat(part[-1:], CHUNK - len(part), axis=0)])
            mean, var, _ = predictive(tf.constant(padded, self.dtype), values, *variational)
            means.append(mean.numpy()[: len(part)])
            variances.append(var.numpy()[: len(part)])
        mean = np.concatenate(means).astype(np.float64) * self.y_scale
        var = np.maximum(np.concatenate(variances).astype(np.float64), 0.0)
        return mean, representable(self._squared_units(var), "variance")

    # ----- saving ------------------------------------------------------------------------
    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_inducing=self.num_inducing, train_inducing=self.train_inducing)
        return config

    def state_arrays(self) -> dict:
        if self.inducing is None:
            return {}
        return {
            "inducing_points": self.inducing.numpy(),
            "q_mu": self.q_mu.numpy(),
            "q_sqrt": self.q_sqrt.numpy(),
            "method": np.asarray(self.method or ""),
        }

    def restore_state(self, arrays) -> None:
        if "inducing_points" not in arrays:
            return
        Z = np.asarray(arrays["inducing_points"], dtype=np.float64)
        M = len(Z)
        q_mu, q_sqrt = np.asarray(arrays["q_mu"]), np.asarray(arrays["q_sqrt"])
        if q_mu.shape != (M,) or q_sqrt.shape != (M, M):
            raise ValueError(
                f"q_mu, q_sqrt: expected shapes ({M},) and ({M}, {M}), got {q_mu.shape} "
                f"and {q_sqrt.shape}"
            )
        self._initial_inducing = Z
        with self.strategy.scope():
            self.inducing = tf.Variable(Z, trainable=self.train_inducing, name="inducing_points")
            self.q_mu = tf.Variable(q_mu, name="q_mu")
            self.q_sqrt = tf.Variable(q_sqrt, name="q_sqrt")
        self.num_inducing = M
        self.method = str(arrays["method"]) or None
