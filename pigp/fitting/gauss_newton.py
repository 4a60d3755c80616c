"""Nonlinear equations by Gauss-Newton kernel collocation: ``fit_nonlinear``.

An equation ``F(L_1 u, ..., L_m u) = f`` (``pigp.operators.nonlinear``) is solved as
Chen, Hosseini, Owhadi and Stuart (J. Comput. Phys. 447, 110668, 2021) solve it:
linearise ``F`` at the current feature values (``pigp.operators.linearisation.Linearisation``),
condition the GP on that linear equation and the other data sets, read the next
feature values from the posterior mean, and repeat (``solve``). The parameters are
learned on the linearised model between steps (``Solver.learn``), by ``fit_linear``.

``fit_nonlinear`` adds the stages around it: the data of undeclared noise made exact,
the coarse first stage (``Solver.learn_points``), and the conditional stage
(``Solver.likelihood``): the equation's coefficients learned once more by the
likelihood of the noisy data given the equation and the exact data, the rest held.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from .._tensorflow import tf
from .._warnings import warn
from ..data import Data, pin_exact
from ..linalg import gaussian_nll
from ..operators.linearisation import Linearisation, check_equation
from .noise import lower_start, noise_fraction
from .plan import FitPlan, Solver, Training
from .report import FitReport, NoiseRestart, Step
from .run import fit_linear
from .state import Held

__all__ = ["fit_nonlinear", "solve"]


def _features(model, X, equation) -> np.ndarray:
    """The posterior mean of every feature at ``X``: array (m, n)."""
    return np.stack([model.posterior_mean(X, equation.feature(name)) for name in equation.features])


def _points(equation, f) -> np.ndarray:
    """The collocation points of the equation's set ``f`` (a system of k equations
    holds them k times, equation after equation)."""
    return f.X[: len(f.X) // equation.size]


def _state(model, X, features: np.ndarray) -> np.ndarray:
    """What Gauss-Newton's change is measured on: the posterior mean of u at ``X`` for
    one field; for several, the ``features`` (m, n) at ``X`` (a field's part that no
    feature sees, such as a pressure's constant, is fixed only by the prior and drifts
    with round-off)."""
    return model.posterior_mean(X) if model.fields is None else features


def _change(new: np.ndarray, old: np.ndarray, groups) -> float:
    """The relative change from ``old`` to ``new``: of the whole (one field), or the
    largest over ``groups`` of the features (the rows acting on the same fields)."""
    if groups is None:
        return float(np.linalg.norm(new - old) / max(np.linalg.norm(new), 1e-300))
    return max(_change(new[rows], old[rows], None) for rows in groups)


def _groups(model, equation):
    """The features' rows grouped by the fields they act on (None for one field)."""
    if model.fields is None:
        return None
    found = {}
    for row, operator in enumerate(equation.features.values()):
        found.setdefault(operator.fields, []).append(row)
    return list(found.values())


def _rms(equation, values, y) -> float:
    names = list(equation.features)
    residual = equation.evaluate(dict(zip(names, values))).numpy()
    return float(np.sqrt(np.mean(np.square(residual - y))))


def backtrack(old, new, merit: float, merit_of, halvings: int = 6) -> tuple:
    """The step from ``old`` to ``new`` halved until ``merit_of`` of its end is below
    ``merit``, at most ``halvings`` times: ``(damping, end, its merit)``, or ``(1.0,
    None, None)`` where no halving is lower (the full step is then taken)."""
    damping = 1.0
    for _ in range(halvings):
        damping /= 2
        trial = old + damping * (new - old)
        trial_merit = merit_of(trial)
        if trial_merit < merit:
            return damping, trial, trial_merit
    return 1.0, None, None


def _coarse(data: Data, f, points: int, equations: int = 1):
    """The data with the collocation set cut to evenly spaced points so that all sets
    hold at most ``points`` values (the other sets whole), or None where they do (a
    system of ``equations`` keeps each equation at the same points)."""
    others = sum(len(s.X) for s in data.sets if s is not f)
    keep = max((points - others) // equations, 1)
    n = len(f.X) // equations
    if keep >= n:
        return None
    index = np.unique(np.linspace(0, n - 1, keep).round().astype(int))
    index = np.concatenate([index + e * n for e in range(equations)])
    return Data(
        tuple(
            dataclasses.replace(s, X=f.X[index], y=f.y[index]) if s is f else s for s in data.sets
        ),
        data.y_scale,
    )


def _loss(model) -> float:
    """The criterion the parameters are learned by, after an iteration: the negative
    log marginal likelihood from the model's posterior snapshot, or, where sets are
    conditioned on, ``-log p(y_N | y_C)`` (``pigp.engines.dense.objective``; one more
    factorisation)."""
    if any(model.objective().conditions):
        return -model.log_marginal_likelihood()
    posterior = model.posterior()
    y = model.data.tensors(tf.float64)[1].numpy()
    log_diag = float(np.sum(np.log(np.diag(posterior.chol))))
    return float(gaussian_nll(float(y @ posterior.alpha), log_diag, len(y)))


def _learns_equation(equation) -> bool:
    return any(p.trainable for p in equation.parameters)


def solve(
    model,
    data: Data,
    train,
    solver: Solver,
    learn: str,
    verbose: bool,
    learn_points: int | None = None,
    start=None,
) -> list:
    """Gauss-Newton on ``model``'s nonlinear equation with ``data`` (its ``"f"`` set the
    collocation points and ``f``).

    Args:
        model: a ``pigp.PIGP`` whose operator is a ``Nonlinear``.
        data: the validated data (the ``"f"`` set's operator a placeholder).
        train: ``train(data, learn_now) -> None``: set the model's data and, when
            ``learn_now``, learn its parameters (else compute the posterior).
        solver: the ``Solver`` (iterations per stage, tolerance, the learning
            schedule's numbers).
        learn: ``"auto"`` (learn at an iteration that follows a change below
            ``solver.learn_near``, at most ``solver.learn_phases`` times, and no more
            once a phase changed u by less than ``solver.learn_until``), ``"until"``
            (learn at each iteration until the change falls below
            ``solver.learn_until``, then hold), ``"first"`` (at the first iteration
            only), ``"always"`` or ``"never"``.
        verbose: print each iteration.
        learn_points: where the data sets hold more values than this and parameters
            are learned, Gauss-Newton first runs, learning, on the collocation points
            cut to evenly spaced ones so that all sets hold this many (the other sets
            whole); then on all the points, from that solution, with the parameters
            held (learned once more at the first step there where the equation has a
            trainable parameter). None: all the points from the start.
        start: the feature values (m, n) to linearise at first; None: u = 0.

    Returns:
        ``[Step]``; the model's posterior is that of the last linearisation.
    """
    equation = model.operator
    iterations, tolerance = int(solver.iterations), float(solver.tolerance)
    f = data.get("f")
    names = list(equation.features)
    k = equation.size
    X = _points(equation, f)
    coarse = None if learn == "never" or learn_points is None else _coarse(data, f, learn_points, k)
    if coarse is not None:
        steps = solve(model, coarse, train, solver, learn, verbose)
        start = _features(model, X, equation)
        # A coefficient of the equation is learned once more on all the points, so that
        # its Laplace interval is taken at the optimum of the model that predicts.
        polish = "first" if _learns_equation(equation) else "never"
        return steps + solve(model, data, train, solver, polish, verbose, None, start)
    change = math.inf
    values = np.zeros((len(names), len(X))) if start is None else np.asarray(start)
    linearisation = Linearisation(equation, values, model.dtype)
    linearisation.scale = data.y_scale
    operator = linearisation.operator
    terms = tuple(operator.resolve(f.X.shape[1], model.dims, model.fields))
    groups = _groups(model, equation)
    if start is None:
        u_old = np.zeros(len(X)) if groups is None else np.zeros_like(values)
    else:
        u_old = _state(model, X, values)
    merit = _rms(equation, values, f.y)
    steps, learning, phases = [], learn != "never", 0

    def linearised():
        rhs = linearisation.right_hand_side(f.y)
        sets = tuple(
            dataclasses.replace(s, y=rhs, operator=operator, terms=terms) if s is f else s
            for s in data.sets
        )
        return Data(sets, data.y_scale)

    for k in range(1, iterations + 1):
        linearisation.assign(values)
        if learn == "auto":
            learn_now = phases < solver.learn_phases and change < solver.learn_near
        else:
            learn_now = learning and (learn != "first" or k == 1)
        phases += learn_now
        train(linearised(), learn_now)
        if learn_now and linearisation.moves_target:
            # The right-hand side at the learned coefficients (it depends on them where
            # one multiplies a nonlinear term): the posterior of that equation.
            train(linearised(), False)
        new = _features(model, X, equation)
        u_new = _state(model, X, new)
        new_merit = _rms(equation, new, f.y)
        damping = 1.0
        if not learn_now and k > 1 and not new_merit <= merit:
            # The full step made the equation worse: backtrack along it.
            damping, trial, trial_merit = backtrack(
                values, new, merit, lambda v: _rms(equation, v, f.y)
            )
            if damping < 1.0:
                new, new_merit = trial, trial_merit
                u_new = u_old + damping * (u_new - u_old)
        change = _change(u_new, u_old, groups)
        loss = _loss(model)
        steps.append(Step(k, change, new_merit, damping, learn_now, loss, len(X)))
        if verbose:
            print(
                f"Gauss-Newton {k} ({len(X)} points): change {change:.2e}, "
                f"residual {new_merit:.2e}, "
                f"step {damping:g}{', learned' if learn_now else ''}, loss {loss:.6g}"
            )
        values, u_old, merit = new, u_new, new_merit
        if learn == "until" and change < solver.learn_until:
            learning = False
        if learn == "auto" and learn_now and change < solver.learn_until:
            phases = solver.learn_phases
        if change < tolerance and damping == 1.0 and not learn_now and phases >= (learn == "auto"):
            break
    else:
        if not math.isfinite(steps[-1].change) or steps[-1].change >= tolerance:
            warn(
                f"fit: Gauss-Newton did not converge in {iterations} iterations (last "
                f"relative change of u {steps[-1].change:.2e}, tolerance {tolerance:g}); "
                "raise iterations=, or check the equation, the data and the kernel. Until "
                "it converges, predict's bands are those of a linearisation at a point "
                "that does not solve the equation, and do not hold its solution"
            )
    return steps


def _check(model, data, solver: Solver) -> tuple:
    """``(likelihood, noisy)``: the likelihood the fit learns by (``"auto"`` resolved)
    and the names of the data sets with noise; ``ValueError`` for what a nonlinear fit
    cannot do, before anything changes."""
    if data.get("f") is None:
        raise ValueError(
            "X_f: a nonlinear equation needs collocation points X_f and the right-hand "
            "side y_f there (zeros for N[u] = 0)"
        )
    check_equation(model.operator, model.dtype)
    given = [s.name for s in data.sets if s.condition]
    if given:
        raise ValueError(
            f"observations: condition=True ({given}) is for linear operators; a "
            "nonlinear equation's fit chooses what it conditions on (solver['likelihood'])"
        )
    # Data of undeclared noise will be exact; the others keep theirs.
    noisy = [
        s.name
        for s in data.sets
        if not s.noise_decided_by_fit and (s.noise.trainable or bool(np.any(s.noise.numpy() > 0)))
    ]
    coefficients = [p for p in model.operator.parameters if p.trainable]
    likelihood = solver.likelihood
    if likelihood == "auto":
        likelihood = (
            "conditional" if coefficients and noisy and solver.learn != "never" else "joint"
        )
    if likelihood == "conditional" and not noisy:
        raise ValueError(
            "solver['likelihood']: 'conditional' learns from data with noise given the "
            "equation and the exact data; every data set here is exact"
        )
    if likelihood == "conditional" and not coefficients:
        raise ValueError(
            "solver['likelihood']: 'conditional' learns the equation's coefficients "
            "given the rest; the equation has no trainable coefficient"
        )
    return likelihood, noisy


def fit_nonlinear(
    model,
    data: Data,
    plan: FitPlan,
    run: Training | None = None,
    solver: Solver | None = None,
    verbose: bool | None = None,
    callback=None,
    report: FitReport | None = None,
) -> FitReport:
    """Fit ``model`` (a nonlinear equation) to ``data`` by Gauss-Newton.

    Args:
        model: a ``pigp.PIGP`` whose operator is a ``Nonlinear``.
        data: the validated data (the ``"f"`` set the collocation points).
        plan: the ``FitPlan``; run: each learning phase's training (default
            ``plan.nonlinear_training``); solver: Gauss-Newton's settings (default
            ``plan.solver``).
        verbose: print each iteration; callback: as ``fit_linear``'s.
        report: the ``FitReport`` to fill (a new one by default).

    Returns:
        The report (adopted by the model once the data pass the checks):
        ``gauss_newton`` the iterations, ``history`` every learning phase's losses,
        ``held`` the parameters a conditional stage held.
    """
    run = plan.nonlinear_training if run is None else run
    solver = plan.solver if solver is None else solver
    report = FitReport() if report is None else report
    likelihood, noisy = _check(model, data, solver)
    model.adopt(report)
    coefficients = [p for p in model.operator.parameters if p.trainable]
    for s in data.sets:
        # The marginal likelihood of a linearised model can explain boundary data
        # as noise and settle on a trivial solution: data of undeclared noise are
        # exact (learned noise: pass a positive initial variance).
        if s.noise_decided_by_fit:
            pin_exact(s.noise)

    def flagged(sets, condition: bool) -> Data:
        """``sets`` with ``condition`` set, where asked, on the equation's set and on
        the exact ones (every set but the noisy)."""
        return Data(
            tuple(
                dataclasses.replace(
                    s,
                    noise_decided_by_fit=False,
                    condition=condition and (s.name == "f" or s.name not in noisy),
                )
                for s in sets
            ),
            data.y_scale,
        )

    model.kernel.build(np.concatenate([s.X for s in data.sets]))
    losses = []

    def train(data_k, learn_now):
        phase = run if learn_now else dataclasses.replace(run, steps=0)
        # A phase's bar only in the default mode (after 10 s, on a terminal); with
        # verbose=True the iterations are printed instead.
        fit_linear(model, data_k, plan, phase, None if verbose is None else False, callback, report)
        losses.extend(report.history)

    learn_points = None if solver.learn_points is None else int(solver.learn_points)
    # The first round's warnings wait: a second round that is kept supersedes them.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report.gauss_newton = solve(
            model, flagged(data.sets, False), train, solver, solver.learn, verbose, learn_points
        )
        confirmed = True
        if likelihood == "conditional":
            confirmed = _conditional_stage(
                model, data, flagged, train, solver, coefficients, verbose, report
            )
    second = (
        confirmed is True
        and likelihood == "conditional"
        and plan.noise_restart is not None
        and _second_round(model, data, flagged, train, solver, plan, coefficients, verbose, report)
    )
    if not second:
        _replay(caught)
    report.history = losses
    if coefficients and solver.learn != "never":
        _identification(model, coefficients, report, confirmed)
    return report


def _replay(caught) -> None:
    """Emit warnings recorded by ``warnings.catch_warnings(record=True)`` as they came."""
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _second_round(model, data, flagged, train, solver, plan, coefficients, verbose, report):
    """Where the conditional stage held a learned noise above ``plan.noise_restart`` of
    its data's mean square, one more round: the kernel and the noises learned by the
    joint likelihood with the coefficients held at the conditional stage's values and
    those noises started ``plan.noise_restart_start`` times lower, from its solution;
    then the coefficients by the conditional stage again. Kept where the data's
    likelihood given the equation ends higher; ``report.noise_restart`` says what was
    found. Returns whether the round was kept.

    A start far from the truth (Allen-Cahn's coefficient at twice its value) converges
    first to that coefficient's solution, which the data disagree with; the joint
    likelihood, which also counts the equation's values as evidence, can then explain
    the disagreement as noise, with the coefficient pulled towards 0, and the
    conditional stage learns the coefficient given that noise. Held at the conditional
    stage's coefficient instead, the joint likelihood no longer pulls it."""
    noisy = [s for s in model.data.sets if not s.condition and s.name != "f"]
    before = {s.name: noise_fraction(model, s) for s in noisy}
    loud = [n for n, f in before.items() if f is not None and f > plan.noise_restart]
    if not loud:
        return False
    held = [p for name, p in model.parameters_by_name().items() if name in report.held]
    saved = Held([*held, *coefficients])
    saved_data, saved_steps, saved_held = model.data, list(report.gauss_newton), report.held
    first = model.log_marginal_likelihood()
    start = _features(model, _points(model.operator, data.get("f")), model.operator)
    for p in held:
        p.trainable = True
    for p in coefficients:
        p.trainable = False
    lower_start(
        [s.noise for s in noisy if s.name in loud and s.noise.trainable], plan.noise_restart_start
    )
    report.held = ()
    try:
        steps = solve(
            model, flagged(data.sets, False), train, solver, solver.learn, verbose, None, start
        )
    finally:
        for p in coefficients:
            p.trainable = True
    report.gauss_newton += steps
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        confirmed = _conditional_stage(
            model, data, flagged, train, solver, coefficients, verbose, report
        )
    second = model.log_marginal_likelihood() if confirmed is True else -math.inf
    kept = bool(math.isfinite(second) and second > first)
    report.noise_restart = NoiseRestart(
        tuple(loud), float(first), float(second), "restart" if kept else "first"
    )
    if kept:
        _replay(caught)
        return True
    saved.restore()
    model.data = saved_data
    report.gauss_newton, report.held = saved_steps, saved_held
    return False


#: A coefficient whose 95% Laplace half-width exceeds this fraction of its value is
#: reported as not identified.
IDENTIFIED_WITHIN = 0.5


def _identification(model, coefficients, report, confirmed) -> None:
    """Fill ``report.unidentified`` and warn for each learned coefficient the data do not
    pin down: where the conditional stage could not confirm the joint fit (``confirmed``
    is its reason otherwise), or where its Laplace interval (given the held parameters)
    is no interval: no curvature, or a 95% half-width above ``IDENTIFIED_WITHIN`` of its
    value."""
    names = {id(p): name for name, p in model.trainable_parameters()}
    found = {}
    if confirmed is not True:
        found = {names[id(p)]: confirmed for p in coefficients if id(p) in names}
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stds = model.parameter_uncertainty()
        for p in coefficients:
            name = names.get(id(p))
            if name is None:
                continue
            value = np.ravel(p.numpy())
            std = np.ravel(stds[name])
            if not np.all(np.isfinite(std)):
                found[name] = "the loss has no curvature in it (no Laplace interval)"
            elif np.any(1.96 * std > IDENTIFIED_WITHIN * np.abs(value)):
                found[name] = (
                    f"its 95% Laplace interval, {_show(value)} +- {_show(1.96 * std)}, is wider "
                    f"than {IDENTIFIED_WITHIN:.0%} of its value"
                )
    report.unidentified = found
    if found:
        listed = "; ".join(f"{name!r}: {why}" for name, why in found.items())
        warn(
            f"fit: the equation's coefficients are not identified by these data ({listed}). "
            "Do not read the value or its interval as measured: add data where the terms "
            "they multiply matter, or give them as known numbers"
        )


def _show(values) -> str:
    values = np.ravel(values)
    shown = ", ".join(f"{v:.3g}" for v in values)
    return shown if len(values) == 1 else f"[{shown}]"


def _conditional_stage(model, data, flagged, train, solver, coefficients, verbose, report):
    """The joint likelihood counts the equation's zeros as evidence, whose prior
    density pulls the coefficients; the data's likelihood given the equation does not,
    but learning the kernel by it can collapse (the solution given up as noise): the
    coefficients alone, from the joint fit, the rest held there. Kept where it
    converges and does not end more than a nat below the joint fit by its own
    criterion; else the joint fit stands. Returns True where the stage was kept, else
    why not (the coefficients are then reported as not identified)."""
    held = [
        (name, p)
        for name, p in model.trainable_parameters()
        if not any(p is q for q in coefficients)
    ]
    joint = model.data
    values = [p.unconstrained.numpy() for p in coefficients]
    start = _features(model, _points(model.operator, data.get("f")), model.operator)
    for _, p in held:
        p.trainable = False
    report.held = tuple(name for name, _ in held)
    # The second stage's criterion at the joint fit's solution, to compare.
    model.data = flagged(model.data.sets, True)
    before = model.log_marginal_likelihood()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = solve(
            model, flagged(data.sets, True), train, solver, solver.learn, verbose, None, start
        )
    change, after = second[-1].change, model.log_marginal_likelihood()
    converged = math.isfinite(change) and change < solver.tolerance
    if converged and not after < before - 1.0:
        report.gauss_newton += second
        _replay(caught)
        return True
    # A coefficient can run off where the data say little (towards 0, the
    # iterations diverging): the joint fit stands.
    model.data = joint
    for p, value in zip(coefficients, values):
        p.unconstrained.assign(value)
    for _, p in held:
        p.trainable = True
    report.held = ()
    found = (
        f"ended {before - after:.3g} nats below its value at the joint fit"
        if converged
        else f"did not converge in {solver.iterations} Gauss-Newton iterations (last "
        f"relative change of u {change:.2e})"
    )
    # The joint fit's coefficients are pulled by the prior density of the equation's
    # zeros: unconfirmed, they are reported as not identified (``_identification``).
    return (
        f"learning it by the data's likelihood given the equation {found}; kept the joint "
        "fit's values (solver={'likelihood': 'joint'} stops there), which the prior of the "
        "equation's values pulls"
    )
