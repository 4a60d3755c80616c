"""Training: minimise an ``pigp.engines.dense.objective.Objective`` over its variables.

- ``Adam`` is a small optimiser object: ``state = adam.init(variables)``,
  then ``taken, state = adam.update(loss, grads, variables, state)`` per step. The
  state is a tuple of tensors, so many steps run in one compiled loop.
- ``minimize_adam`` runs Adam for a number of steps, up to 250 per compiled
  call on TensorFlow's back end (one call per step on LAPACK's), and returns a
  ``History``; the variables are left at the lowest loss seen.
- ``minimize_lbfgs`` polishes with SciPy's L-BFGS-B.

Neither knows about models or posteriors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .._tensorflow import tf

__all__ = [
    "Adam",
    "AdamState",
    "History",
    "adam_steps",
    "minimize_adam",
    "minimize_lbfgs",
    "progress_bar",
]

STEPS_PER_CALL = 250  # Adam steps per compiled call at most; callbacks come this often
SECONDS_PER_CALL = 0.2  # the time a compiled call of Adam steps aims at


class AdamState(NamedTuple):
    """Adam's state: tensors only, so it passes through compiled loops."""

    step: tf.Tensor  # steps taken (float64)
    m: tuple  # first moments, one per variable
    v: tuple  # second moments
    best: tuple  # the values of the lowest loss seen
    best_loss: tf.Tensor
    learning_rate: tf.Tensor  # the base step size
    rate_scale: tf.Tensor  # halved at each rejected step


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma and Ba, 2015) on unconstrained variables, with rejection.

    A step whose loss or gradient is not finite is not taken: the variables go
    back to the best values seen and the step size is halved from then on.

    Args:
        learning_rate: the step size. It travels in the state, so optimisers that
            differ only in it share compiled programs (it is left out of ``==``).
        beta1: Adam's decay rate of the first moment.
        beta2: Adam's decay rate of the second moment.
        epsilon: Adam's constant in the denominator.
    """

    learning_rate: float = field(default=0.02, compare=False)
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8

    def init(self, variables) -> AdamState:
        """Zero moments; the current values are the best seen, at an infinite loss."""
        zeros = tuple(tf.zeros_like(v) for v in variables)
        return AdamState(
            tf.constant(0.0, tf.float64),
            zeros,
            zeros,
            tuple(tf.identity(v) for v in variables),
            tf.constant(np.inf, tf.float64),
            tf.constant(self.learning_rate, tf.float64),
            tf.constant(1.0, tf.float64),
        )

    def update(self, loss, grads, variables, state: AdamState) -> tuple:
        """One step at ``loss`` and ``grads`` (those of the variables' current values).

        Returns:
            ``(taken, state)``: whether the step was taken, and the new state.
            The variables are updated in place.
        """
        beta1, beta2, eps = self.beta1, self.beta2, self.epsilon
        finite = tf.reduce_all(
            [tf.math.is_finite(loss)] + [tf.reduce_all(tf.math.is_finite(g)) for g in grads]
        )

        def take():
            improved = loss < state.best_loss
            best = tuple(
                tf.where(improved, tf.identity(var), b) for var, b in zip(variables, state.best)
            )
            best_loss = tf.where(improved, loss, state.best_loss)
            t = state.step + 1.0
            rate = (
                state.learning_rate * state.rate_scale * tf.sqrt(1.0 - beta2**t) / (1.0 - beta1**t)
            )
            ms, vs = [], []
            with tf.control_dependencies(best):
                for var, g, m, v in zip(variables, grads, state.m, state.v):
                    m = beta1 * m + (1.0 - beta1) * g
                    v = beta2 * v + (1.0 - beta2) * tf.square(g)
                    var.assign_sub(rate * m / (tf.sqrt(v) + eps))
                    ms.append(m)
                    vs.append(v)
            return tf.constant(True), state._replace(
                step=t, m=tuple(ms), v=tuple(vs), best=best, best_loss=best_loss
            )

        def reject():
            for b, var in zip(state.best, variables):
                var.assign(b)
            return tf.constant(False), state._replace(rate_scale=0.5 * state.rate_scale)

        return tf.cond(finite, take, reject)


def _lbfgs_program(objective):
    """``(Xs, y, x, unconstrained) -> (loss, gradient)``: the trained variables set
    from the flat vector ``x`` (float64) and the loss and gradient there, flat, in one
    compiled call (L-BFGS-B's evaluations; setting the variables one by one from Python
    and a call with Adam's state cost about three times the evaluation itself)."""

    def evaluate(Xs, y, x, unconstrained):
        variables = objective.trained_of(unconstrained)
        sizes = [int(np.prod(v.shape)) for v in variables]
        for v, part in zip(variables, tf.split(x, sizes)):
            v.assign(tf.reshape(tf.cast(part, v.dtype), v.shape))
        loss, grads = objective.tf_loss_and_gradient(Xs, y, unconstrained)
        flat = tf.concat([tf.reshape(tf.cast(g, tf.float64), [-1]) for g in grads], 0)
        return tf.cast(loss, tf.float64), flat

    return tf.function(evaluate, autograph=False)


@dataclass
class History:
    """What a minimiser did.

    Attributes:
        losses: the loss at each iteration (an Adam step, an L-BFGS iteration);
            NaN where it was not finite.
        rejected: indices into ``losses`` of steps not taken (non-finite loss or
            gradient).
        evaluations: every loss the minimiser evaluated (L-BFGS's line searches
            evaluate more often than it iterates; Adam once per step).
        probes: ``(step, loss)`` of Adam's L-BFGS-B probes (``minimize_adam``'s
            ``probe``).
    """

    losses: list = field(default_factory=list)
    rejected: list = field(default_factory=list)
    evaluations: list = field(default_factory=list)
    probes: list = field(default_factory=list)


def _adam_program(objective, optimizer: Adam, fused: bool = False):
    """``n`` Adam steps on TensorFlow's back end in one compiled call, then the loss
    and gradient where they left the variables (``n = 0``: only those). A pure
    function of its arguments: the variables are ``unconstrained`` (the objective's),
    updated in place; where ``assign`` is true they are first set from the flat
    vector ``x`` (float64).

    ``fused``: one XLA program (``Objective.fuses``, ``_fused_adam_program``);
    L-BFGS-B's evaluations are then calls of it with ``n = 0`` (one program to
    compile, not two)."""
    if fused:
        return _fused_adam_program(objective, optimizer)

    def steps(Xs, y, n, state, unconstrained, x, assign):
        variables = _assigned(objective, unconstrained, x, assign)

        def body(i, losses, taken, state):
            loss, grads = objective.tf_loss_and_gradient(Xs, y, unconstrained)
            step, state = optimizer.update(loss, grads, variables, state)
            return i + 1, losses.write(i, loss), taken.write(i, step), state

        _, losses, taken, state = tf.while_loop(
            lambda i, *_: i < n,
            body,
            (
                tf.constant(0),
                tf.TensorArray(tf.float64, size=n),
                tf.TensorArray(tf.bool, size=n),
                state,
            ),
        )
        losses, taken = losses.stack(), taken.stack()
        with tf.control_dependencies([losses]):
            loss, grads = objective.tf_loss_and_gradient(Xs, y, unconstrained)
        return losses, taken, state, loss, tuple(grads)

    return tf.function(steps, autograph=False)


def _assigned(objective, unconstrained, x, assign) -> list:
    """The trained variables of ``unconstrained``, set from the flat vector ``x`` where
    ``assign`` is true."""
    variables = objective.trained_of(unconstrained)
    for v, part in zip(variables, tf.split(x, _sizes(variables))):
        v.assign(tf.where(assign, tf.reshape(tf.cast(part, v.dtype), v.shape), v))
    return variables


def _fused_adam_program(objective, optimizer: Adam):
    """``_adam_program`` as one XLA program: the loss and gradient traced once, in a
    loop of ``n + 1`` passes whose last takes no step (XLA's compilation time grows
    with the program, and a second copy for the final loss doubled it). Its losses
    are always ``STEPS_PER_CALL + 1`` long (XLA needs the size), the first ``n`` of
    them the steps'. Adam's state comes and goes flat (``_flat_state``) and the
    gradient flat: each tensor in or out of a call costs about 10 us here, and a call
    of a few dozen values computes in about 0.2 ms."""

    def steps(Xs, y, n, state, unconstrained, x, assign):
        variables = _assigned(objective, unconstrained, x, assign)
        state = _unflat_state(state, variables)

        def body(i, losses, taken, state, last):
            loss, grads = objective.tf_loss_and_gradient(Xs, y, unconstrained, fused=True)
            step, state = tf.cond(
                i < n,
                lambda: optimizer.update(loss, grads, variables, state),
                lambda: (tf.constant(False), state),
            )
            flat = tf.concat([tf.reshape(g, [-1]) for g in grads], 0)
            return i + 1, losses.write(i, loss), taken.write(i, step), state, (loss, flat)

        last = (tf.constant(0.0, tf.float64), tf.zeros([sum(_sizes(variables))], tf.float64))
        _, losses, taken, state, (loss, gradient) = tf.while_loop(
            lambda i, *_: i <= n,
            body,
            (
                tf.constant(0),
                tf.TensorArray(tf.float64, size=STEPS_PER_CALL + 1),
                tf.TensorArray(tf.bool, size=STEPS_PER_CALL + 1),
                state,
                last,
            ),
            maximum_iterations=STEPS_PER_CALL + 1,
        )
        return losses.stack(), taken.stack(), _flat_state(state), loss, gradient

    return tf.function(steps, autograph=False, jit_compile=True)


def _sizes(variables) -> list:
    return [int(np.prod(v.shape)) for v in variables]


def _flat_state(state: AdamState) -> AdamState:
    """``state`` with its moments and best values each one flat float64 vector."""
    flat = lambda parts: tf.concat([tf.reshape(p, [-1]) for p in parts], 0)  # noqa: E731
    return state._replace(m=flat(state.m), v=flat(state.v), best=flat(state.best))


def _unflat_state(state: AdamState, variables) -> AdamState:
    """``_flat_state``'s inverse, shaped as ``variables``."""

    def parts(flat):
        pieces = tf.split(flat, _sizes(variables))
        return tuple(tf.reshape(p, v.shape) for p, v in zip(pieces, variables))

    return state._replace(m=parts(state.m), v=parts(state.v), best=parts(state.best))


def _fuses(objective, y) -> bool:
    """Whether ``objective``'s training programs on the targets ``y`` are fused."""
    fuses = getattr(objective, "fuses", None)
    return bool(fuses and fuses(int(y.shape[0])))


def _tf_program(objective, optimizer: Adam, fused: bool = False):
    """The compiled program of ``_adam_program``, shared by the objectives of one key."""
    return objective.program(
        ("adam loop", optimizer, fused), lambda: _adam_program(objective, optimizer, fused)
    )


def adam_steps(objective, Xs, y, steps: int, optimizer: Adam, state: AdamState):
    """Run ``steps`` Adam steps from ``state``, yielding ``(losses, taken, state,
    final)`` after each compiled call, ``final`` the loss at the variables the call
    left (None on LAPACK's back end, which does not compute it); ``state`` flat
    (``_flat_state``) where the program is fused.

    On TensorFlow's back end one call runs as many steps as take about
    ``SECONDS_PER_CALL`` (measured as it goes, at most 250, never across a multiple
    of 250), so that Ctrl-C, which Python sees only between calls, lands quickly;
    on LAPACK's each step is a call of its own and 250 are yielded together. The
    bare loop of ``minimize_adam``, without its return to the best values.
    """
    lapack = objective.backend(int(y.shape[0])) == "lapack"
    if lapack:
        update = objective.program(
            ("adam update", optimizer), lambda: tf.function(optimizer.update, autograph=False)
        )
    else:
        fused = _fuses(objective, y)
        program = _tf_program(objective, optimizer, fused)
        if fused:
            # Flat once here, not at every call: eager operations advance TensorFlow's
            # naming counter, and the names of programs traced later key the
            # compilation cache, so their number must not depend on the call sizes.
            state = _flat_state(state)
            # The Gram matrix's own program (the posterior's, the reported loss's) is
            # traced now too, as the separate programs' loop traced it before its calls.
            objective._gram.get_concrete_function(Xs, objective.values())
        x = tf.zeros([sum(_sizes(objective.variables))], tf.float64)
    done, size = 0, 1
    while done < steps:
        n = min(size, STEPS_PER_CALL - done % STEPS_PER_CALL, steps - done)
        if lapack:
            losses, taken = np.empty(n), np.empty(n, bool)
            for i in range(n):
                loss, grads = objective.loss_and_gradient(Xs, y, "lapack")
                losses[i] = loss.numpy()
                step, state = update(loss, grads, objective.variables, state)
                taken[i] = step.numpy()
            size, final = STEPS_PER_CALL, None
        else:
            start = time.perf_counter()
            losses, taken, state, final, _ = program(
                Xs,
                y,
                tf.constant(n),
                state,
                objective.unconstrained,
                x,
                tf.constant(False),
            )
            losses, taken, final = losses.numpy()[:n], taken.numpy()[:n], float(final.numpy())
            seconds = time.perf_counter() - start
            size = max(1, min(STEPS_PER_CALL, int(SECONDS_PER_CALL * n / max(seconds, 1e-9))))
        done += n
        yield losses, taken, state, final


def minimize_adam(
    objective,
    Xs,
    y,
    steps: int,
    optimizer: Adam | None = None,
    callback=None,
    progress=None,
    history: History | None = None,
    stall: float | None = None,
    stall_nats: float | None = None,
    probe: float | None = None,
) -> History:
    """Run ``steps`` Adam steps on ``objective`` from the variables' current values.

    Args:
        objective: a ``pigp.engines.dense.objective.Objective``.
        Xs: the inputs of each data set.
        y: the standardised targets, all data sets stacked.
        steps: the number of steps.
        optimizer: an ``Adam`` (default ``Adam()``).
        callback: ``callback(steps_done, last_loss)`` after every 250 steps and
            after the last; returning ``True`` stops early.
        progress: an object with ``update(n)`` and ``set_postfix(...)`` (tqdm).
        history: a ``History`` to fill (so that an interrupted run's is kept);
            default a new one.
        stall: stop early, at a multiple of 250 steps, when those 250 steps
            lowered the best loss by less than ``stall`` times all that the run has
            lowered it (Adam has slowed to a crawl that L-BFGS-B covers in a few
            iterations); None runs all ``steps``.
        stall_nats: with ``stall``, those 250 steps must also have lowered the
            loss by less than this many nats (a loss that still falls by a nat or
            more is crossing a plateau, which L-BFGS-B may not); None: no such
            condition.
        probe: with ``stall`` and ``stall_nats``, where only the nats keep Adam
            going, L-BFGS-B is run from Adam's point on the side (a probe, at most
            ``MAX_PROBES`` per run), and Adam stops at the probe's optimum once two
            probes in a row end within ``probe`` nats of each other: Adam is then
            crawling into the optimum L-BFGS-B finds from anywhere on its path (a
            plateau being crossed gives probes that differ). None: no probes.
            ``history.probes`` has ``(step, loss)`` of each.

    Returns:
        The ``History``. The variables are left at the lowest loss seen,
        also when the run is interrupted (``KeyboardInterrupt`` is re-raised).
    """
    optimizer = optimizer or Adam()
    history = History() if history is None else history
    if steps == 0 or not objective.variables:
        return history
    state, done, final, completed = optimizer.init(objective.variables), 0, None, False
    probes, handed = 0, False
    start, bests = len(history.losses), []  # the best loss at each multiple of 250 steps
    try:
        # The loop rebinds state and final on purpose: the finally clause needs the latest.
        for losses, taken, state, final in adam_steps(objective, Xs, y, steps, optimizer, state):  # noqa: B007, B020
            history.rejected.extend((len(history.losses) + np.flatnonzero(~taken)).tolist())
            history.losses.extend(losses.tolist())
            done += len(losses)
            if progress is not None:
                progress.update(len(losses))
                progress.set_postfix(loss=f"{losses[-1]:.6g}")
            if (
                callback is not None
                and (done % STEPS_PER_CALL == 0 or done == steps)
                and callback(done, float(losses[-1])) is True
            ):
                break
            if stall is not None and done % STEPS_PER_CALL == 0 and done < steps:
                bests.append(np.nanmin(np.asarray(history.losses[start:], dtype=np.float64)))
                first = history.losses[start]
                if len(bests) >= 2 and np.isfinite(first):
                    gained, recent = first - bests[-1], bests[-2] - bests[-1]
                    slow = stall_nats is None or recent < stall_nats
                    stalled = gained > 0 and recent < stall * gained
                    if stalled and not slow and probe is not None and probes < MAX_PROBES:
                        probes += 1
                        loss, values = _probe(objective, Xs, y)
                        agree = bool(history.probes) and abs(loss - history.probes[-1][1]) <= probe
                        history.probes.append((done, loss))
                        if agree:  # stop at the probe's values, of loss ``loss``
                            for v, value in zip(objective.variables, values):
                                v.assign(value)
                            final, handed = loss, True
                    if (stalled and slow) or handed:
                        if progress is not None:
                            progress.update(steps - done)
                        break
        completed = True
    finally:
        _keep_best(objective, Xs, y, state, final if completed else None)
        history.evaluations = list(history.losses)
    return history


#: At most this many L-BFGS-B probes per ``minimize_adam`` run.
MAX_PROBES = 2


def _probe(objective, Xs, y) -> tuple:
    """``(loss, values)``: L-BFGS-B from the variables' current values, which are
    left as they were."""
    saved = [v.numpy() for v in objective.variables]
    try:
        probe = minimize_lbfgs(objective, Xs, y, 1000)
        values = [v.numpy() for v in objective.variables]
    finally:
        for v, value in zip(objective.variables, saved):
            v.assign(value)
    finite = [e for e in probe.evaluations if np.isfinite(e)]
    return (min(finite) if finite else np.inf), values


def _keep_best(objective, Xs, y, state: AdamState, final: float | None = None) -> None:
    """Go back to the best values seen unless the current ones, of loss ``final``
    (computed if None), are at least as good."""
    if final is None:
        final = objective.loss(Xs, y.numpy())
    if not (np.isfinite(final) and final <= state.best_loss.numpy()):
        if not isinstance(state.best, tuple):  # flat (``_flat_state``)
            state = _unflat_state(state, objective.variables)
        for b, var in zip(state.best, objective.variables):
            var.assign(b)


class _Stop(Exception):
    """Raised by ``minimize_lbfgs``'s iteration callback to end SciPy's run."""


def minimize_lbfgs(
    objective, Xs, y, max_iterations: int, history: History | None = None, fixed=(), stop=None
) -> History:
    """Polish with SciPy's L-BFGS-B on the unconstrained variables.

    ``fixed``: variables among the objective's that keep their values (bounds equal
    to them), so a subset is refitted with the objective's compiled programs.
    ``stop``: ``stop(losses)``, called after each iteration with the iterations'
    losses so far; returning ``True`` ends the run there.

    The loss and gradient of a point where they are not finite are replaced by
    a large loss and a zero gradient, so the line search backs off. The variables
    are left at the lowest loss evaluated, also when interrupted.

    Returns:
        History: ``losses`` one per iteration, ``evaluations`` every
        loss evaluated (NaN where not finite), ``rejected`` indices into
        ``evaluations`` of the non-finite ones. Filled into ``history`` if given.
    """
    import scipy.optimize

    history = History() if history is None else history
    variables = objective.variables
    if max_iterations == 0 or not variables:
        return history
    shapes = [v.shape for v in variables]
    sizes = [int(np.prod(s)) for s in shapes]
    best = {"loss": np.inf, "x": None}
    seen = []  # (x, loss) of the last evaluations, to report each iteration's loss

    def assign(x):
        for v, part, shape in zip(variables, np.split(x, np.cumsum(sizes)[:-1]), shapes):
            v.assign(part.reshape(shape))

    x0 = np.concatenate([v.numpy().reshape(-1) for v in variables]).astype(np.float64)
    if objective.backend(int(y.shape[0])) == "tensorflow" and _fuses(objective, y):
        # The fused Adam program with no step: Adam's defaults, whose program a
        # default fit has compiled (the learning rate is not part of its key).
        adam = Adam()
        state = _flat_state(adam.init(variables))
        no_step, true = tf.constant(0), tf.constant(True)
        program = _tf_program(objective, adam, fused=True).get_concrete_function(
            Xs, y, no_step, state, objective.unconstrained, tf.constant(x0), true
        )

        def evaluate(x):
            _, _, _, loss, gradient = program(
                Xs, y, no_step, state, objective.unconstrained, tf.constant(x), true
            )
            return float(loss.numpy()), gradient.numpy()
    elif objective.backend(int(y.shape[0])) == "tensorflow":
        program = objective.program("lbfgs evaluation", lambda: _lbfgs_program(objective))
        # The traced function itself: calling it skips the argument matching of each
        # tf.function call (about a quarter of an evaluation of a few dozen values).
        program = program.get_concrete_function(Xs, y, tf.constant(x0), objective.unconstrained)

        def evaluate(x):
            loss, grad = program(Xs, y, tf.constant(x), objective.unconstrained)
            return float(loss.numpy()), grad.numpy()
    else:

        def evaluate(x):
            assign(x)
            loss, grads = objective.loss_and_gradient(Xs, y)
            return float(loss.numpy()), np.concatenate([g.numpy().reshape(-1) for g in grads])

    def function(x):
        loss, grad = evaluate(x)
        if not (np.isfinite(loss) and np.all(np.isfinite(grad))):
            history.rejected.append(len(history.evaluations))
            history.evaluations.append(np.nan)
            return best["loss"] + 1e10 if np.isfinite(best["loss"]) else 1e300, np.zeros_like(x)
        history.evaluations.append(loss)
        seen[:] = seen[-19:] + [(x.copy(), loss)]
        if loss < best["loss"]:
            best.update(loss=loss, x=x.copy())
        return loss, grad

    first = len(history.losses)

    def iteration(xk):
        for x, loss in reversed(seen):
            if np.array_equal(x, xk):
                history.losses.append(loss)
                break
        if stop is not None and stop(history.losses[first:]):
            raise _Stop

    held = np.concatenate(
        [np.full(n, any(v is f for f in fixed)) for v, n in zip(variables, sizes)]
    )
    bounds = [(x, x) if h else (None, None) for x, h in zip(x0, held)] if held.any() else None
    try:
        scipy.optimize.minimize(
            function,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            callback=iteration,
            options={"maxiter": max_iterations},
        )
    except _Stop:
        pass
    finally:
        assign(best["x"] if best["x"] is not None else x0)
    return history


def progress_bar(total: int, verbose, description: str = "fit"):
    """A tqdm progress bar of ``total`` steps: always where ``verbose`` is True, never
    where it is False, and where it is None (``fit``'s default) once the run has lasted
    10 s, on a terminal only (quiet in scripts' logs, CI and notebooks' captured
    output)."""
    if verbose is False:
        return None
    from tqdm.auto import tqdm

    if verbose is None:
        return tqdm(total=total, desc=description, unit="step", delay=10, disable=None)
    return tqdm(total=total, desc=description, unit="step")
