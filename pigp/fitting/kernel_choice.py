"""``kernel="auto"``: fit each candidate kernel from the same start, keep the best.

``choose_kernel`` runs ``fit_linear`` once per candidate, every candidate starting
from the same values of the data sets' parameters (noises, coefficients), and keeps
the fit of highest log marginal likelihood: its kernel, its parameter values, its
report and its warnings (the others' are dropped). ``report.kernel_choice`` has every
candidate's evidence.

A candidate whose fit called a data set noise (a learned noise above
``plan.noise_warning`` of its data's mean square, the fit that ``fit`` warns of) is
kept only where every candidate did: all-zero equation data counted as evidence
give such a fit an evidence that grows without bound as the kernel variance shrinks
(u_t - u_xx + r u = 0 with 30 zero values and 30 sensors at 0.5% noise: the squared
exponential's fit reached 10,343 nats against 319 for ``Decaying``, with r at 173
for a truth of -1.5), so its evidence says nothing about the kernel.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._warnings import warn
from ..kernels.covariance import check_smoothness
from ..structure import data_parameters
from .noise import called_noise
from .plan import FitPlan, Training
from .report import FitReport
from .run import fit_linear
from .state import Held

__all__ = ["choose_kernel"]


def choose_kernel(
    model,
    data,
    candidates: dict,
    plan: FitPlan,
    run: Training | None = None,
    verbose: bool = False,
    callback=None,
) -> FitReport:
    """Fit ``model`` to ``data`` with each kernel of ``candidates`` (``{name: kernel}``)
    from the same start and leave it with the one of highest log marginal likelihood.

    Returns:
        The chosen fit's ``FitReport`` (the model adopts it), with ``kernel_choice``
        ``{name: evidence}``.
    """
    for s in data.sets:  # the kernels must accept the data before anything trains
        for candidate in candidates.values():
            check_smoothness(candidate, s.terms, "observations")
    start = Held(data_parameters(data.sets))  # every candidate starts from their values
    X = np.concatenate([s.X for s in data.sets])
    fitted, noisy = [], []
    for candidate in candidates.values():
        start.restore()
        model.kernel = candidate
        candidate.build(X)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = fit_linear(model, data, plan, run, verbose, callback)
        fitted.append(
            (model.log_marginal_likelihood(), candidate, Held(start.parameters), report, caught)
        )
        noisy.append(list(called_noise(model, plan)))
    sound = [i for i in range(len(fitted)) if not noisy[i]] or list(range(len(fitted)))
    best = max(sound, key=lambda i: fitted[i][0])
    highest = max(range(len(fitted)), key=lambda i: fitted[i][0])
    _, kernel, values, report, caught = fitted[best]
    report.kernel_choice = {name: f[0] for name, f in zip(candidates, fitted)}
    names = list(candidates)
    if highest != best:
        warn(
            f"kernel='auto': kept {names[best]}; {names[highest]} had the higher evidence "
            f"but its fit called the {noisy[highest]} data noise, where {names[best]}'s "
            "did not (model.kernel_choice has every evidence)"
        )
    values.restore()
    model.kernel = kernel
    model.adopt(report)
    for w in caught:  # the chosen fit's warnings only
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    model.posterior()
    return report
