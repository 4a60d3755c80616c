"""The NUTS driver of a fitted model: ``sample`` and the mixture's ``predict``.

``pigp.inference.nuts`` is the sampler itself (NUTS over an objective, ``Samples``); this
module drives it for a model: it checks the arguments, gives the data sets whose
noise ``fit`` decided a floor (``floored``), chooses the default priors, computes the
whitening Hessian, makes the copies of the model the threads run on, and predicts
with the mixture over the draws. It works on any model that answers
``objective(priors=False)`` (``pigp.PIGP``, and ``pigp.SparsePIGP`` through its
collapsed bound); it never imports the model classes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile

import numpy as np

from .. import io
from .._tensorflow import tf
from .._warnings import warn
from ..data import Data
from ..parameters import Parameter
from . import nuts as sampling
from .laplace import hessian
from .nuts import Samples

__all__ = ["sample", "predict_mixture", "floored", "noise_floors_needed", "copies"]


def _check(num_results, num_burnin, num_chains, seed, max_tree_depth, target_accept, floor):
    for name, value, least in (
        ("num_results", num_results, 1),
        ("num_burnin", num_burnin, 0),
        ("num_chains", num_chains, 1),
        ("max_tree_depth", max_tree_depth, 1),
    ):
        if not (isinstance(value, (int, np.integer)) and value >= least):
            raise ValueError(f"{name}: expected an integer >= {least}, got {value!r}")
    if not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed: expected an integer, got {seed!r}")
    if not (isinstance(target_accept, float) and 0.0 < target_accept < 1.0):
        raise ValueError(f"target_accept: expected a number in (0, 1), got {target_accept!r}")
    if floor is not None and not (
        isinstance(floor, (int, float)) and not isinstance(floor, bool) and 0 < floor < math.inf
    ):
        raise ValueError(f"noise_floor: expected a positive number or None, got {floor!r}")


def sample(
    model,
    num_results: int,
    num_burnin: int,
    num_chains: int,
    seed: int,
    max_tree_depth: int,
    target_accept: float,
    noise_floor: float | None,
) -> Samples:
    """``model.sample(...)`` of a fitted model: see ``pigp.PIGP.sample`` for the
    arguments."""
    _check(num_results, num_burnin, num_chains, seed, max_tree_depth, target_accept, noise_floor)
    floors = noise_floors_needed(model, noise_floor)
    if not model.trainable_parameters() and not floors:
        raise ValueError("sample: the model has no trainable parameter")
    if floors:
        warn(
            f"sample: the noise variances of {sorted(floors)} are drawn above a floor of "
            f"{noise_floor:g} (standardised units; fit found them exact or below it): "
            "pass noise_floor=None to sample the model as fitted, or another floor"
        )
    exact = [
        s.name for s in model.data.sets if s.name not in floors and np.all(s.noise.numpy() == 0.0)
    ]
    if exact:
        warn(
            f"sample: the data of {exact} are exact (noise variance 0): the posterior "
            "of the other parameters is then very sharp and NUTS slow to explore it "
            "(tiny steps). For a band over the hyper-parameters give those sets a noise "
            "floor, e.g. noise_u=pigp.Parameter(1e-3, lower=1e-4), and fit again"
        )
    with floored(model, floors):
        samples = _nuts(
            model, num_results, num_burnin, num_chains, seed, max_tree_depth, target_accept
        )
    samples.noise_floors = dict(floors)
    return samples


def noise_floors_needed(model, floor) -> dict:
    """``{name: floor}`` of the data sets whose noise ``sample`` draws above ``floor``:
    those whose noise ``fit`` decided and that sit below it."""
    if floor is None:
        return {}
    return {
        s.name: float(floor)
        for s in model.data.sets
        if s.noise_decided_by_fit and float(np.max(s.noise.numpy())) < floor
    }


@contextlib.contextmanager
def floored(model, floors: dict):
    """Within the block, the data sets of ``floors`` have a noise variance of their
    own, trainable above the floor (from 10 times it); the model's own sets come back
    after."""
    if not floors:
        yield
        return
    saved = model.data
    sets = tuple(
        dataclasses.replace(
            s,
            noise=Parameter(10 * floors[s.name], lower=floors[s.name], name=s.noise.name),
            noise_decided_by_fit=False,
        )
        if s.name in floors
        else s
        for s in saved.sets
    )
    model.data = Data(sets, saved.y_scale)
    try:
        yield
    finally:
        model.data = saved


def _nuts(model, num_results, num_burnin, num_chains, seed, max_tree_depth, target_accept):
    parameters = model.trainable_parameters()
    coefficients = {name for name, _ in model.trainable_coefficients()}
    priors = {
        name: p.prior
        if p.prior is not None
        else sampling.default_prior(p, coefficient=name in coefficients)
        for name, p in parameters
    }
    defaulted = [name for name, p in parameters if p.prior is None]
    if defaulted:
        warn(
            f"sample: no prior for {defaulted}; using a normal centred on each fitted "
            "coefficient with standard deviation max(|value|, 1) (cut at a positive "
            "one's bound) and a log-normal of scale 2 (log space) centred on each "
            "other fitted value (a normal for signed ones): "
            "pass Parameter(..., prior=...) to choose"
        )
    Xs, y = model.data.tensors(model.dtype)
    try:
        H = hessian(model.objective(priors=False), Xs, y)
        H = H if np.all(np.isfinite(H)) else None
    except tf.errors.InvalidArgumentError:
        H = None
    # The chains run in groups, the groups in threads, each thread on its own
    # copy of the model (its own variables).
    groups = -(-int(num_chains) // sampling.CHAINS_PER_GROUP)
    models = [model] + copies(model, min(groups, os.cpu_count() or 1) - 1)
    return sampling.nuts(
        [(m.objective(priors=False), m.trainable_parameters()) for m in models],
        Xs,
        y,
        priors,
        int(num_results),
        int(num_burnin),
        int(num_chains),
        int(seed),
        hessian=H,
        max_tree_depth=int(max_tree_depth),
        target_accept=float(target_accept),
    )


def copies(model, count: int) -> list:
    """``count`` independent copies of ``model`` (own parameters, same values and
    data), or none where the model cannot be written and read back (a kernel function
    that cannot be imported by its path)."""
    if count <= 0:
        return []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.npz")
        try:
            model.save(path)
            return [io.load(path) for _ in range(count)]
        except ValueError:
            return []


def predict_mixture(model, X, output, full_cov, samples, max_draws):
    """``model.predict(X, output, full_cov, samples=samples)``: the mixture over the
    draws (law of total variance)."""
    if not isinstance(samples, Samples):
        raise ValueError(f"samples: expected a pigp.Samples from model.sample(), got {samples!r}")
    if not (isinstance(max_draws, (int, np.integer)) and max_draws >= 1):
        raise ValueError(f"max_draws: expected a positive integer, got {max_draws!r}")
    unknown_floors = [n for n in samples.noise_floors if model.data.get(n) is None]
    if unknown_floors:
        raise ValueError(
            f"samples: drawn with noise floors for the data sets {unknown_floors}, which "
            f"this model does not have ({model.data.names})"
        )
    with floored(model, samples.noise_floors):
        parameters = dict(model.trainable_parameters())
        unknown = [name for name in samples.names if name not in parameters]
        if unknown:
            raise ValueError(
                f"samples: {unknown} are not trainable parameters of this model "
                f"({sorted(parameters)})"
            )
        saved = {name: parameters[name].unconstrained.numpy() for name in samples.names}
        means, spreads = [], []
        try:
            for draw in samples.draws(max_draws):
                for name, value in draw.items():
                    parameters[name].assign(value)
                mean, spread = model.predict(X, output, full_cov)
                means.append(mean)
                spreads.append(spread)
        finally:
            for name, value in saved.items():
                parameters[name].unconstrained.assign(value)
    means = np.stack(means)
    mean = means.mean(axis=0)
    centred = means - mean
    if full_cov:
        between = centred.T @ centred / len(means)
        return mean, np.mean(spreads, axis=0) + between
    return mean, np.mean(spreads, axis=0) + np.mean(centred**2, axis=0)
