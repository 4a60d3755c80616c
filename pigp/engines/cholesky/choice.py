"""Which engine a ``PIGP`` fit runs: ``engine="dense"``, ``"cholesky"`` or ``"auto"``."""

from __future__ import annotations

from ..._tensorflow import tf
from ..._warnings import warn

__all__ = ["chooses_sparse", "SPARSE_FROM"]


#: From this many values on, ``engine="auto"`` solves a nonlinear equation that the sparse
#: engine takes (one field, exact point values, a Matérn kernel, which screens) by it.
#: ``python benchmarks/engine_crossover.py`` (-Lap u + u^3 = f, Matérn 7/2 held, fit and
#: predict at 1,000 points, one run): dense 15.7 s against sparse 18.1 s at 3,844 values,
#: 30.3 s against 20.2 s at 6,724, 69.5 s against 23.7 s at 10,404 (12.7 against 1.7 GB).
SPARSE_FROM = 5000


def chooses_sparse(model, data) -> bool:
    """Whether ``model``'s fit of ``data`` runs the sparse engine: ``"cholesky"`` always
    (a ``ValueError`` where it cannot), ``"auto"`` for a nonlinear equation the sparse
    engine takes, of ``SPARSE_FROM`` values or more with a Matérn kernel, or whose dense
    fit would not fit in the memory available (a warning says so), ``"dense"`` never."""
    from ... import memory
    from ...kernels.library import _Matern
    from .nonlinear import _problem

    size = sum(data.sizes)
    if model.engine == "dense":
        return False
    reason = _unsupported(model)
    if model.engine == "cholesky":
        if reason:
            raise ValueError(reason)
        return True
    if reason or not model.nonlinear:
        # Dense, whose memory check refuses what does not fit: a linear model is sent
        # to pigp.SparsePIGP there (the linear sparse engine's conjugate gradients are
        # slow for smooth kernels, the default squared exponential among them).
        return False
    fields = len(model.fields or ()) or 1
    need, have = memory.fit_bytes(size, fields, model.dtype), memory.available_bytes()
    if need <= have:
        if size < SPARSE_FROM or not isinstance(model.kernel, _Matern):
            return False
        try:
            _problem(data)
        except ValueError:
            return False  # noisy or missing point values: the dense engine's
        return True
    warn(
        f"fit: {size} values need about {need / 1e9:.1f} GB for the dense engine and "
        f"{have / 1e9:.1f} GB are available: the sparse engine runs (engine='cholesky'; "
        "model.report.engine)"
    )
    return True


def _unsupported(model) -> str | None:
    """Why the sparse engine does not take ``model``, or None."""
    if model.fields is not None or model.dtype != tf.float64:
        return (
            "engine: 'cholesky' takes an operator (linear, or one nonlinear equation) of "
            "one field in float64; use engine='dense'"
        )
    if model.nonlinear and model.operator.size != 1:
        return (
            "engine: 'cholesky' takes one nonlinear equation; a system of "
            f"{model.operator.size} goes through engine='dense'"
        )
    if getattr(model, "_candidates", ()):
        return (
            "kernel: 'auto' is for the dense engine; pass a kernel, e.g. "
            "pigp.kernels.Matern52(), with engine='cholesky'"
        )
    return None
