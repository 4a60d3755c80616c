"""The physics-informed GP: a GP prior on u, conditioned on data of u and of L u.

Notation (see docs/notation.md): ``K`` is the joint covariance of all observed
values, block ``(i, j)`` being ``L_i L_j' k`` plus noise on the diagonal blocks;
``chol`` its lower Cholesky factor; ``alpha = K^-1 y``.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import scipy.linalg
import tensorflow as tf

from . import _validation as check
from ._linalg import jittered_cholesky
from .covariance import block, block_diag, check_smoothness
from .kernels import Kernel
from .observations import Observations
from .operators import Identity, Operator
from .parameters import Parameter

__all__ = ["PIGP"]

_CHUNK = 1024          # test points per compiled prediction call
_STEPS_PER_CALL = 250  # Adam steps per compiled training call
_LAPACK_FROM = 500     # joint sizes from which LAPACK factorises on CPU


class PIGP(tf.Module):
    """Physics-informed GP regression for a linear operator ``f = L u``.

    Args:
        kernel: the prior covariance of u, a :class:`pigp.kernels.Kernel`.
        operator: the operator L, e.g. ``pigp.operators.heat(diffusivity=1.0)``.
        noise_u, noise_f: initial noise variances of the u and f data (learned; in
            standardised units, so the default 1e-3 suits noise-free and noisy data),
            positive numbers or :class:`pigp.Parameter` objects.
        dims: column names of X (e.g. ``("x", "t")``) when the operator does not
            declare them.
        dtype: ``"float64"`` (default) or ``"float32"`` (for accelerators).
        jitter: relative diagonal jitter per block (default 1e-12 in float64,
            1e-6 in float32).
        standardize: divide all targets by ``y_scale``, the root mean square of
            the u data (of the first data set when there is none); L is linear,
            so u and f scale alike. The kernel variance and the noise variances
            are then those of the standardised data; predictions are in data units.

    After :meth:`fit`: ``history`` (the loss at every step), ``rejected_steps``
    (steps whose loss or gradient was not finite and were skipped).
    """

    def __init__(self, kernel: Kernel, operator: Operator, noise_u=1e-3, noise_f=1e-3,
                 dims=None, dtype="float64", jitter: float | None = None,
                 standardize: bool = True, name: str | None = None):
        super().__init__(name=name)
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel: expected a pigp.kernels.Kernel, got {kernel!r}")
        if not isinstance(operator, Operator):
            raise ValueError(f"operator: expected a pigp.operators.Operator, got {operator!r}")
        self.dtype = check.as_dtype(dtype)
        if jitter is None:
            jitter = 1e-12 if self.dtype == tf.float64 else 1e-6
        if not (isinstance(jitter, (int, float)) and math.isfinite(jitter) and jitter >= 0):
            raise ValueError(f"jitter: expected a finite number >= 0, got {jitter!r}")
        self.kernel = kernel
        self.operator = operator
        self.dims = None if dims is None else tuple(dims)
        self.jitter = float(jitter)
        self.standardize = bool(standardize)
        self.noise_u = _as_parameter(noise_u, "noise_u")
        self.noise_f = _as_parameter(noise_f, "noise_f")
        self.history: list = []
        self.rejected_steps: list = []
        self.y_scale = 1.0
        self._sets: list = []         # [(name, X, y, terms, noise Parameter)]
        self._posterior = None        # (chol, alpha) in float64 NumPy
        self._adam = None
        self._functions = None        # compiled Gram, its VJP and the training loop
        self._cross_functions = {}

    # ----- parameters ---------------------------------------------------------------
    def parameters_by_name(self) -> dict:
        """Every parameter of the model: ``{"kernel.variance": Parameter, ...}``."""
        out = {f"kernel.{k}": v for k, v in self.kernel.parameters.items()}
        for i, p in enumerate(self.operator.parameters):
            out[f"operator.{p.label or f'coefficient{i}'}"] = p
        names = {s[0] for s in self._sets}
        if not names or "u" in names:
            out["noise_u"] = self.noise_u
        if not names or "f" in names:
            out["noise_f"] = self.noise_f
        for name, _, _, terms, noise in self._sets:
            if name not in ("u", "f"):
                out[f"{name}.noise"] = noise
                for coefficient, _ in terms:
                    for p in coefficient.parameters:
                        if not any(p is q for q in out.values()):
                            out[f"{name}.{p.label or p.name}"] = p
        return out

    def parameter_values(self) -> dict:
        """Current constrained values: floats for scalars, arrays for vectors."""
        return {k: (float(v) if np.ndim(v) == 0 else np.array(v))
                for k, v in ((k, p.numpy()) for k, p in self.parameters_by_name().items())}

    def _trainable_parameters(self) -> list:
        """``[(name, Parameter)]`` of the trainable parameters, each once."""
        unique = []
        for name, p in self.parameters_by_name().items():
            if p.trainable and not any(p is q for _, q in unique):
                unique.append((name, p))
        return unique

    def _trainable(self) -> list:
        return [p.unconstrained for _, p in self._trainable_parameters()]

    # ----- data -----------------------------------------------------------------------
    def _prepare(self, X_u, y_u, X_f, y_f, observations) -> tuple:
        """Validate everything and return the new data sets, changing no state."""
        raw = []
        if X_u is not None or y_u is not None:
            raw.append(("u", X_u, y_u, Identity, self.noise_u, "X_u", "y_u"))
        if X_f is not None or y_f is not None:
            raw.append(("f", X_f, y_f, self.operator, self.noise_f, "X_f", "y_f"))
        for i, obs in enumerate(observations):
            if not isinstance(obs, Observations):
                raise ValueError(f"observations[{i}]: expected pigp.Observations, got {obs!r}")
            raw.append((obs.name, obs.X, obs.y, obs.operator, obs.noise,
                         f"observations[{i}].X", f"observations[{i}].y"))
        if not raw:
            raise ValueError("fit: expected data: X_u and y_u, X_f and y_f, or observations=[...]")
        names = [r[0] for r in raw]
        if len(set(names)) != len(names):
            raise ValueError(f"observations: names must be distinct, got {names}")
        declared = self.operator.dims or self.dims
        input_dim = len(declared) if declared else self._input_dim_or_none()
        sets = []
        for name, X, y, operator, noise, x_name, y_name in raw:
            if X is None or y is None:
                missing = x_name if X is None else y_name
                raise ValueError(f"{missing}: expected an array (both {x_name} and {y_name} "
                                 "are needed), got None")
            X = check.as_inputs(x_name, X, input_dim)
            input_dim = X.shape[1]
            y = check.as_targets(y_name, y, len(X), x_name)
            terms = operator.resolve(input_dim, self.dims)
            check_smoothness(self.kernel, terms, x_name)
            sets.append((name, X, y, terms, noise))
        return sets

    # ----- the joint covariance ------------------------------------------------------
    def _block(self, X1, X2, left, right):
        return block(self.kernel, X1, X2, left, right)

    def _joint(self, Xs) -> tf.Tensor:
        """``K``: all blocks, noise and relative jitter on the diagonal blocks."""
        rows = [[None] * len(Xs) for _ in Xs]
        for i, (Xi, (_, _, _, ti, noise)) in enumerate(zip(Xs, self._sets)):
            for j in range(i, len(Xs)):
                Kij = self._block(Xi, Xs[j], ti, self._sets[j][3])
                rows[i][j], rows[j][i] = Kij, tf.transpose(Kij)
            Kii = rows[i][i]
            diag = tf.linalg.diag_part(Kii)
            extra = noise.value(self.dtype) + self.jitter * tf.stop_gradient(tf.reduce_mean(diag))
            rows[i][i] = tf.linalg.set_diag(Kii, diag + extra)
        return tf.concat([tf.concat(row, axis=1) for row in rows], axis=0)

    def _nll(self, Xs, ys) -> tf.Tensor:
        K = self._joint(Xs)
        y = tf.concat(ys, axis=0)[:, None]
        chol = tf.linalg.cholesky(K)
        a = tf.linalg.cholesky_solve(chol, y)
        return _gaussian_nll(tf.reduce_sum(y * a),
                             tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol))),
                             tf.cast(tf.shape(y)[0], self.dtype))

    def _data_tensors(self):
        Xs = tuple(tf.constant(X, self.dtype) for _, X, _, _, _ in self._sets)
        ys = tuple(tf.constant(y / self.y_scale, self.dtype) for _, _, y, _, _ in self._sets)
        return Xs, ys

    def log_marginal_likelihood(self) -> float:
        """``log p(y)`` of the standardised training data at the current parameters."""
        self._require_data()
        return -self._loss(*self._data_tensors())

    # ----- training -------------------------------------------------------------------
    def fit(self, X_u=None, y_u=None, X_f=None, y_f=None, *, observations=(), steps: int = 2000,
            learning_rate: float = 0.02, optimizer: str = "adam+lbfgs", verbose: bool = False,
            callback=None) -> "PIGP":
        """Learn the parameters from data by maximising the log marginal likelihood.

        Args:
            X_u, y_u: points of shape (n_u, d) and values of u, shape (n_u,).
            X_f, y_f: points of shape (n_f, d) and values of ``f = L u``, shape (n_f,).
            observations: further :class:`pigp.Observations` (boundary, Neumann, ...).
            steps: the number of Adam steps from the current parameter values.
            learning_rate: Adam's step size on the unconstrained variables.
            optimizer: ``"adam"`` (``steps`` Adam steps), ``"lbfgs"`` (SciPy's L-BFGS-B,
                at most ``steps`` iterations) or ``"adam+lbfgs"`` (``steps`` Adam
                steps, then L-BFGS-B to polish, at most 1000 iterations). With
                ``steps=0`` nothing is trained: the data are set and the posterior
                computed at the current parameters.
            verbose: show a progress bar with the current loss.
            callback: ``callback(step, loss, model)`` after each compiled call of
                up to 250 Adam steps; returning ``True`` stops Adam early.

        Returns:
            self. The parameters left are those of the lowest loss seen.
        """
        if optimizer not in ("adam", "lbfgs", "adam+lbfgs"):
            raise ValueError(f"optimizer: expected 'adam', 'lbfgs' or 'adam+lbfgs', "
                             f"got {optimizer!r}")
        if not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"steps: expected a non-negative integer, got {steps!r}")
        if not (isinstance(learning_rate, (int, float)) and 0 < learning_rate < math.inf):
            raise ValueError(f"learning_rate: expected a positive number, got {learning_rate!r}")
        sets = self._prepare(X_u, y_u, X_f, y_f, observations)
        # The kernel checks its shapes against the inputs before creating anything.
        self.kernel.build(np.concatenate([X for _, X, _, _, _ in sets]))

        # Validated: from here on, state changes.
        self._sets = sets
        scale_source = sets[0][2]
        rms = float(np.sqrt(np.mean(np.square(scale_source)))) if self.standardize else 1.0
        self.y_scale = rms if rms > 0 else 1.0
        self._posterior = None
        self.history, self.rejected_steps = [], []
        if optimizer in ("adam", "adam+lbfgs"):
            self._run_adam(int(steps), float(learning_rate), verbose, callback)
        if optimizer in ("lbfgs", "adam+lbfgs"):
            self._run_lbfgs(int(steps) if optimizer == "lbfgs" or steps == 0 else 1000)
        self._refresh_posterior()
        if steps > 0:
            self._warn_if_noise_explains_data()
        return self

    def _warn_if_noise_explains_data(self, fraction: float = 0.1):
        """Warn when a learned noise variance exceeds ``fraction`` of its data's mean square.

        Maximising the marginal likelihood can settle on "the data are noise" (a
        large noise variance, the field left at the prior mean) when the kernel
        cannot fit the data, e.g. a fast initial transient next to slow dynamics.
        """
        for name, _, y, _, noise in self._sets:
            scale = float(np.mean(np.square(y / self.y_scale)))
            if noise.trainable and scale > 0 and float(noise.numpy()) > fraction * scale:
                warnings.warn(
                    f"fit: the learned noise variance of the {name!r} data is "
                    f"{float(noise.numpy()) / scale:.0%} of their mean square: the model may be "
                    "explaining those data as noise. If they are not that noisy, try other "
                    "initial lengthscales, a smaller initial noise, or a kernel that fits the "
                    "field (e.g. a sum of two kernels for two scales)", RuntimeWarning,
                    stacklevel=3)

    # The gradient of the loss ``0.5 y' K^-1 y + 0.5 log det K`` in any parameter
    # theta is ``0.5 tr((K^-1 - alpha alpha') dK/dtheta)``, alpha = K^-1 y: one
    # vector-Jacobian product of the (compiled) Gram assembly with the cotangent
    # ``W = 0.5 (K^-1 - alpha alpha')``. K^-1 comes from TensorFlow's Cholesky
    # (small problems, accelerators) or from LAPACK's potrf/potri (CPU, N >= 500),
    # whichever is cheaper; nothing differentiates through a factorisation.

    def _compiled(self):
        """The compiled functions of the current parameters and data structure."""
        variables = self._trainable()
        signature = (tuple(id(v) for v in variables), self._structure())
        if self._functions is None or self._functions["signature"] != signature:
            gram = tf.function(self._joint, jit_compile=True, autograph=False)

            def gram_vjp(Xs, inverse, alpha):
                # ``inverse``: K^-1 in its upper triangle (the lower is ignored).
                upper = tf.linalg.band_part(inverse, 0, -1)
                full = upper + tf.transpose(upper) - tf.linalg.diag(tf.linalg.diag_part(upper))
                W = 0.5 * (full - alpha[:, None] * alpha[None, :])
                with tf.GradientTape() as tape:
                    K = self._joint(Xs)
                return tape.gradient(K, variables, output_gradients=W,
                                     unconnected_gradients="zero")

            self._functions = {
                "signature": signature,
                "variables": variables,
                "gram": gram,
                "gram_vjp": tf.function(gram_vjp, jit_compile=True, autograph=False),
                # Called from Python, a compiled program is compiled apart from the
                # same program called inside a graph (the training loop); on the
                # TensorFlow path K is therefore taken through a graph too.
                "gram_in_graph": tf.function(lambda Xs: gram(Xs), autograph=False),
                "tf_step": tf.function(self._tf_loss_and_gradient, autograph=False),
            }
            self._functions["train"] = tf.function(self._train_steps, autograph=False)
            self._functions["adam_update"] = tf.function(self._adam_update, autograph=False)
        return self._functions

    def _tf_loss_and_gradient(self, Xs, y):
        """Loss and gradient with TensorFlow's Cholesky (NaN when K is not PD)."""
        functions = self._functions
        K = functions["gram"](Xs)
        chol = tf.linalg.cholesky(K)
        alpha = tf.linalg.cholesky_solve(chol, y[:, None])[:, 0]
        loss = _gaussian_nll(tf.reduce_sum(y * alpha),
                             tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol))),
                             tf.cast(tf.shape(y)[0], self.dtype))
        inverse = tf.linalg.cholesky_solve(chol, tf.eye(tf.shape(K)[0], dtype=self.dtype))
        grads = functions["gram_vjp"](Xs, inverse, alpha)
        return tf.cast(loss, tf.float64), [tf.cast(g, tf.float64) for g in grads]

    def _lapack_loss_and_gradient(self, Xs, y: np.ndarray):
        """Loss and gradient with LAPACK's potrf/potrs/potri (NaN when K is not PD)."""
        functions = self._functions
        K = functions["gram"](Xs).numpy()
        # K is symmetric, so its C-ordered memory is also K in Fortran order.
        potrf, potrs, potri = scipy.linalg.lapack.get_lapack_funcs(
            ("potrf", "potrs", "potri"), (K,))
        chol, info = potrf(K.T, lower=1, overwrite_a=1, clean=0)
        if info != 0:
            nan = tf.constant(np.nan, tf.float64)
            return nan, [tf.fill(tf.shape(v), nan) for v in functions["variables"]]
        alpha, _ = potrs(chol, y, lower=1)
        loss = _gaussian_nll(float(y @ alpha), float(np.sum(np.log(np.diag(chol)))), len(y))
        inverse, _ = potri(chol, lower=1, overwrite_c=1)
        # Fortran lower triangle = upper triangle of the C-ordered transpose.
        grads = functions["gram_vjp"](Xs, inverse.T, alpha)
        return tf.constant(loss, tf.float64), [tf.cast(g, tf.float64) for g in grads]

    def _use_lapack(self, n: int) -> bool:
        return n >= _LAPACK_FROM and not _has_gpu()

    def _loss_and_gradient_function(self, Xs, ys):
        """``(on_lapack, f)``: ``f()`` gives ``(loss, [gradient per trainable variable])``
        on these data at the current parameters, by LAPACK or by TensorFlow's Cholesky."""
        functions = self._compiled()
        y = tf.concat(ys, axis=0)
        if self._use_lapack(int(y.shape[0])):
            y_values = y.numpy()
            return True, lambda: self._lapack_loss_and_gradient(Xs, y_values)
        return False, lambda: functions["tf_step"](Xs, y)

    def _gram(self, Xs, ys) -> np.ndarray:
        """K at the current parameters, called the way the fit calls the Gram program."""
        functions = self._compiled()
        if self._use_lapack(sum(int(y.shape[0]) for y in ys)):
            return functions["gram"](Xs).numpy()
        return functions["gram_in_graph"](Xs).numpy()

    def _adam_state(self, variables):
        state = self._adam
        if state is None or state["variables"] is not variables:
            state = self._adam = {
                "variables": variables,
                "m": [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables],
                "v": [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables],
                "best": [tf.Variable(v, trainable=False) for v in variables],
                "t": tf.Variable(0.0, dtype=tf.float64, trainable=False),
                "best_loss": tf.Variable(np.inf, dtype=tf.float64, trainable=False),
                "lr_scale": tf.Variable(1.0, dtype=tf.float64, trainable=False),
            }
        for m, v, b, var in zip(state["m"], state["v"], state["best"], variables):
            m.assign(tf.zeros_like(m))
            v.assign(tf.zeros_like(v))
            b.assign(var)
        state["t"].assign(0.0)
        state["best_loss"].assign(np.inf)
        state["lr_scale"].assign(1.0)
        return state

    def _adam_update(self, loss, grads, learning_rate):
        """One Adam step; a non-finite loss or gradient is rejected instead.

        A rejected step restores the best parameters seen and halves the step
        size from then on. Returns whether the step was taken.
        """
        state = self._adam
        variables = state["variables"]
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        finite = tf.reduce_all([tf.math.is_finite(loss)]
                               + [tf.reduce_all(tf.math.is_finite(g)) for g in grads])

        def remember():
            state["best_loss"].assign(loss)
            for b, var in zip(state["best"], variables):
                b.assign(var)
            return tf.constant(True)

        def take():
            tf.cond(loss < state["best_loss"], remember, lambda: tf.constant(False))
            t = state["t"].assign_add(1.0)
            rate = learning_rate * state["lr_scale"] * tf.sqrt(1.0 - beta2 ** t) / (1.0 - beta1 ** t)
            for var, g, m, v in zip(variables, grads, state["m"], state["v"]):
                m.assign(beta1 * m + (1.0 - beta1) * g)
                v.assign(beta2 * v + (1.0 - beta2) * tf.square(g))
                var.assign_sub(rate * m / (tf.sqrt(v) + eps))
            return tf.constant(True)

        def reject():
            state["lr_scale"].assign(0.5 * state["lr_scale"])
            for b, var in zip(state["best"], variables):
                var.assign(b)
            return tf.constant(False)

        return tf.cond(finite, take, reject)

    def _train_steps(self, Xs, y, n_steps, learning_rate):
        """``n_steps`` Adam steps in one compiled call (TensorFlow's Cholesky)."""
        def body(i, losses, taken):
            loss, grads = self._tf_loss_and_gradient(Xs, y)
            step = self._adam_update(loss, grads, learning_rate)
            return i + 1, losses.write(i, loss), taken.write(i, step)

        _, losses, taken = tf.while_loop(
            lambda i, *_: i < n_steps, body,
            (tf.constant(0), tf.TensorArray(tf.float64, size=n_steps),
             tf.TensorArray(tf.bool, size=n_steps)))
        return losses.stack(), taken.stack()

    def _adam_calls(self, Xs, ys, steps, learning_rate):
        """Yield ``(losses, taken)`` arrays, one call of up to 250 steps at a time."""
        functions = self._compiled()
        lapack, loss_and_gradient = self._loss_and_gradient_function(Xs, ys)
        y = tf.concat(ys, axis=0)
        rate = tf.constant(learning_rate, tf.float64)
        done = 0
        while done < steps:
            n = min(_STEPS_PER_CALL, steps - done)
            if lapack:
                losses, taken = np.empty(n), np.empty(n, bool)
                for i in range(n):
                    loss, grads = loss_and_gradient()
                    losses[i] = loss.numpy()
                    taken[i] = functions["adam_update"](loss, grads, rate).numpy()
            else:
                losses, taken = (t.numpy() for t in functions["train"](Xs, y, tf.constant(n), rate))
            done += n
            yield losses, taken

    def _run_adam(self, steps, learning_rate, verbose, callback):
        variables = self._compiled()["variables"]
        if steps == 0 or not variables:
            return
        state = self._adam_state(variables)
        Xs, ys = self._data_tensors()
        progress = _progress(steps, verbose)
        done = 0
        try:
            for losses, taken in self._adam_calls(Xs, ys, steps, learning_rate):
                self.history.extend(losses.tolist())
                self.rejected_steps.extend((done + np.flatnonzero(~taken)).tolist())
                done += len(losses)
                if progress is not None:
                    progress.update(len(losses))
                    progress.set_postfix(loss=f"{losses[-1]:.6g}")
                if callback is not None and callback(done, float(losses[-1]), self) is True:
                    break
        except KeyboardInterrupt:
            self._keep_best(Xs, ys, state, variables)
            self._refresh_posterior()
            warnings.warn(f"fit interrupted after {done} steps; kept the best parameters so far",
                          RuntimeWarning, stacklevel=3)
            raise
        finally:
            if progress is not None:
                progress.close()
        self._keep_best(Xs, ys, state, variables)
        if self.rejected_steps:
            warnings.warn(f"fit: {len(self.rejected_steps)} of {steps} steps had a non-finite "
                          "loss or gradient and were skipped (see model.rejected_steps)",
                          RuntimeWarning, stacklevel=3)

    def _run_lbfgs(self, max_iterations: int):
        """Polish with SciPy's L-BFGS-B on the unconstrained variables."""
        import scipy.optimize

        variables = self._compiled()["variables"]
        if max_iterations == 0 or not variables:
            return
        Xs, ys = self._data_tensors()
        _, loss_and_gradient = self._loss_and_gradient_function(Xs, ys)
        shapes = [v.shape for v in variables]
        sizes = [int(np.prod(s)) for s in shapes]
        best = {"loss": np.inf, "x": None}

        def assign(x):
            for v, part, shape in zip(variables, np.split(x, np.cumsum(sizes)[:-1]), shapes):
                v.assign(part.reshape(shape))

        def objective(x):
            assign(x)
            loss, grads = loss_and_gradient()
            loss = float(loss.numpy())
            grad = np.concatenate([g.numpy().reshape(-1) for g in grads])
            if not (np.isfinite(loss) and np.all(np.isfinite(grad))):
                self.rejected_steps.append(len(self.history))
                return best["loss"] + 1e10 if np.isfinite(best["loss"]) else 1e300, \
                    np.zeros_like(x)
            self.history.append(loss)
            if loss < best["loss"]:
                best.update(loss=loss, x=x.copy())
            return loss, grad

        x0 = np.concatenate([v.numpy().reshape(-1) for v in variables]).astype(np.float64)
        scipy.optimize.minimize(objective, x0, jac=True, method="L-BFGS-B",
                                options={"maxiter": max_iterations})
        assign(best["x"] if best["x"] is not None else x0)

    def _keep_best(self, Xs, ys, state, variables):
        final = self._loss(Xs, ys)
        if not (np.isfinite(final) and final <= state["best_loss"].numpy()):
            for b, var in zip(state["best"], variables):
                var.assign(b)

    def _loss(self, Xs, ys) -> float:
        """The loss at the current parameters (compiled Gram, LAPACK); NaN if K is not PD."""
        K = self._gram(Xs, ys).astype(np.float64)
        y = np.concatenate([t.numpy() for t in ys]).astype(np.float64)
        try:
            chol = scipy.linalg.cholesky(K, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return math.nan
        alpha = scipy.linalg.cho_solve((chol, True), y, check_finite=False)
        return _gaussian_nll(float(y @ alpha), float(np.sum(np.log(np.diag(chol)))), len(y))

    def parameter_uncertainty(self) -> dict:
        """Laplace approximation: posterior standard deviations of the parameters.

        The Hessian ``H`` of the loss in the unconstrained variables at the current
        (fitted) values gives their covariance ``H^-1``; the delta method maps it to
        the constrained values (``std = |d value / d v| sqrt(diag H^-1)``).

        Returns:
            ``{name: std}`` for every trainable parameter, floats or arrays; ``inf``
            for a parameter the loss has no curvature in (e.g. a noise variance that
            collapsed towards 0 on noise-free data), which is then held fixed.

        Where the Hessian is not positive definite (the optimiser stopped on a ridge
        or a saddle, e.g. a learned frequency drifting towards 0), the parameter
        entry that loads most on the direction of lowest curvature is held fixed
        too, one at a time until the rest is positive definite; its std is ``inf``,
        the others' are conditional on its value, and a ``RuntimeWarning`` names it.

        Raises:
            ValueError: before fit, or when no parameter is left with a positive
                definite Hessian (far from a minimum: train longer).
        """
        self._require_data()
        Xs, ys = self._data_tensors()
        unique = self._trainable_parameters()
        variables = [p.unconstrained for _, p in unique]

        # As one graph (not op by op): 2.6x faster for a spectral mixture's blocks.
        @functools.partial(tf.function, autograph=False)
        def hessian(Xs, ys):
            with tf.GradientTape(persistent=True) as outer:
                with tf.GradientTape() as inner:
                    loss = tf.cast(self._nll(Xs, ys), tf.float64)
                grads = inner.gradient(loss, variables, unconnected_gradients="zero")
                flat = tf.concat([tf.reshape(tf.cast(g, tf.float64), [-1]) for g in grads], 0)
            rows = outer.jacobian(flat, variables, unconnected_gradients="zero")
            return tf.concat([tf.reshape(tf.cast(h, tf.float64), [flat.shape[0], -1])
                              for h in rows], axis=1)

        H = hessian(Xs, ys).numpy()
        H = 0.5 * (H + H.T)
        if not np.all(np.isfinite(H)):
            raise ValueError("parameter_uncertainty: the loss Hessian is not finite")
        # Directions without curvature (a noise variance collapsed to ~0, where the
        # softplus is flat) are held fixed; their std is reported as inf.
        curved = np.abs(np.diag(H)) > 1e-12 * np.abs(np.diag(H)).max()
        entries = [f"{name}[{i}]" if p.shape != () else name
                   for name, p in unique for i in range(int(np.prod(p.shape)))]
        held = []
        while curved.any():
            Hc = H[np.ix_(curved, curved)]
            values, vectors = np.linalg.eigh(Hc)
            if values[0] > 1e-12 * abs(values[-1]):
                break
            worst = np.flatnonzero(curved)[np.argmax(np.abs(vectors[:, 0]))]
            curved[worst] = False
            held.append(entries[worst])
        if not curved.any():
            raise ValueError("parameter_uncertainty: the loss Hessian is not positive definite "
                             "in any parameter; the parameters are not at a minimum: fit longer")
        if held:
            warnings.warn(f"parameter_uncertainty: the loss curves down or is flat along "
                          f"{', '.join(held)} (not at a strict minimum there); held fixed, "
                          f"std reported as inf, the other stds are conditional on it",
                          RuntimeWarning, stacklevel=2)
        Hc = H[np.ix_(curved, curved)]
        variance = np.full(len(H), np.inf)
        variance[curved] = np.diag(np.linalg.inv(Hc))
        out, offset = {}, 0
        for name, p in unique:
            size = int(np.prod(p.shape))
            with tf.GradientTape() as tape:
                value = tf.reduce_sum(p.value())
            slope = tape.gradient(value, p.unconstrained).numpy().reshape(-1)
            std = np.abs(slope) * np.sqrt(variance[offset:offset + size])
            out[name] = float(std[0]) if p.shape == () else std.reshape(p.shape)
            offset += size
        return out

    # ----- prediction -----------------------------------------------------------------
    def _structure(self) -> tuple:
        """What compiled functions capture of the data sets besides their shapes."""
        return tuple((name, tuple((id(c), i) for c, i in terms), id(noise))
                     for name, _, _, terms, noise in self._sets)

    def _require_data(self):
        if not self._sets:
            raise ValueError("model: not fitted yet; call fit(...) with data before "
                             "predict, covariance of data or log_marginal_likelihood")

    def _refresh_posterior(self):
        Xs, ys = self._data_tensors()
        K = self._gram(Xs, ys).astype(np.float64)
        chol, _ = jittered_cholesky(K, [len(X) for X in Xs], [s[0] for s in self._sets])
        y = np.concatenate([y.numpy().astype(np.float64) for y in ys])
        alpha = scipy.linalg.cho_solve((chol, True), y, check_finite=False)
        self._posterior = (chol, alpha)

    def _output_terms(self, output, input_dim):
        if isinstance(output, Operator):
            terms = output.resolve(input_dim, self.dims)
        elif output == "u":
            terms = Identity.resolve(input_dim)
        elif output == "f":
            terms = self.operator.resolve(input_dim, self.dims)
        else:
            matches = [s[3] for s in self._sets if s[0] == output]
            if not matches:
                known = ["u", "f"] + [s[0] for s in self._sets if s[0] not in ("u", "f")]
                raise ValueError(f"output: expected one of {known} or an Operator, got {output!r}")
            terms = matches[0]
        check_smoothness(self.kernel, terms, "output")
        return terms

    def _cross_function(self, output, terms):
        key = (output if isinstance(output, str) else id(output), self._structure())
        entry = self._cross_functions.get(key)
        if entry is None or entry[0] is not output:
            def cross(Xc, Xs):
                Ks = [block(self.kernel, Xc, X, terms, s[3]) for X, s in zip(Xs, self._sets)]
                return tf.concat(Ks, axis=1), block_diag(self.kernel, Xc, terms, terms)
            entry = (output, tf.function(cross, jit_compile=True, autograph=False))
            self._cross_functions[key] = entry
        return entry[1]

    def predict(self, X, output="u", full_cov: bool = False):
        """Posterior mean and variance of u (or ``L u``) at points X.

        Args:
            X: array of shape (n, d).
            output: ``"u"``, ``"f"`` (the model's operator applied to u), the name of
                an observation set, or any :class:`pigp.operators.Operator`.
            full_cov: return the full (n, n) posterior covariance instead of the variance.

        Returns:
            ``(mean, var)``: arrays of shape (n,) and (n,) (or (n, n) with
            ``full_cov``), in data units. ``var = k_** - diag(K_*y K^-1 K_y*)``,
            with round-off negatives clipped to 0.
        """
        self._require_data()
        input_dim = self._sets[0][1].shape[1]
        X = check.as_inputs("X", X, input_dim)
        terms = self._output_terms(output, input_dim)
        if self._posterior is None:
            self._refresh_posterior()
        chol, alpha = self._posterior
        Xs, _ = self._data_tensors()
        cross = self._cross_function(output, terms)
        n = len(X)
        means, variances, blocks = [], [], []
        for start in range(0, n, _CHUNK):
            chunk = X[start:start + _CHUNK]
            padded = np.concatenate([chunk, np.repeat(chunk[-1:], _CHUNK - len(chunk), axis=0)])
            Ks, prior = cross(tf.constant(padded, self.dtype), Xs)
            Ks = Ks.numpy().astype(np.float64)[:len(chunk)]
            prior = prior.numpy().astype(np.float64)[:len(chunk)]
            V = scipy.linalg.solve_triangular(chol, Ks.T, lower=True, check_finite=False)
            means.append(Ks @ alpha)
            variances.append(prior - np.einsum("ij,ij->j", V, V))
            if full_cov:
                blocks.append((chunk, V))
        mean = np.concatenate(means) * self.y_scale
        if full_cov:
            V = np.concatenate([v for _, v in blocks], axis=1)
            Xt = tf.constant(X, self.dtype)
            prior = block(self.kernel, Xt, Xt, terms, terms).numpy().astype(np.float64)
            cov = (prior - V.T @ V) * self.y_scale ** 2
            return mean, 0.5 * (cov + cov.T)
        var = np.maximum(np.concatenate(variances), 0.0) * self.y_scale ** 2
        return mean, var

    def covariance(self, X1, X2=None, left="u", right="u") -> np.ndarray:
        """The prior block ``cov(L_left u(X1), L_right u(X2))`` without noise.

        Args:
            X1: array of shape (n, d); X2: array of shape (m, d) (default X1).
            left, right: ``"u"``, ``"f"``, an observation set's name or an Operator.

        Returns:
            An array of shape (n, m), in the kernel's (standardised) units.
        """
        X1 = check.as_inputs("X1", X1, self._input_dim_or_none())
        X2 = X1 if X2 is None else check.as_inputs("X2", X2, X1.shape[1])
        self.kernel.build(X1)
        t_left = self._output_terms(left, X1.shape[1])
        t_right = self._output_terms(right, X1.shape[1])
        K = block(self.kernel, tf.constant(X1, self.dtype), tf.constant(X2, self.dtype),
                  t_left, t_right)
        return K.numpy()

    def save(self, path) -> None:
        """Write the model (kernel, operator, parameters, data) to ``path``.

        ``pigp.load(path)`` gives it back; the loaded model predicts bit for bit
        as this one. See :mod:`pigp.io`.
        """
        from .io import save

        save(self, path)

    def _input_dim_or_none(self):
        return self._sets[0][1].shape[1] if self._sets else None


def _gaussian_nll(y_dot_alpha, log_diag_chol, n):
    """``-log N(y | 0, K)`` from ``y' K^-1 y``, ``sum(log diag(chol K))`` and ``len(y)``
    (NumPy numbers or tensors alike)."""
    return 0.5 * y_dot_alpha + log_diag_chol + 0.5 * n * math.log(2.0 * math.pi)


@functools.lru_cache(maxsize=None)
def _has_gpu() -> bool:
    """Whether TensorFlow sees a GPU (fixed once TensorFlow has started)."""
    return bool(tf.config.list_logical_devices("GPU"))


def _as_parameter(value, name: str) -> Parameter:
    return value if isinstance(value, Parameter) else Parameter(value, name=name)


def _progress(total: int, verbose: bool):
    if not verbose:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="fit", unit="step")
