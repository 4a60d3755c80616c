"""Saving and loading models: ``model.save(path)`` and ``pigp.load(path)``.

A model file is a NumPy ``.npz`` archive holding a JSON description (kernel,
operator, settings, data sets) and arrays: the training inputs and targets, the
loss history and every parameter's *unconstrained* variable, so the loaded
parameters, and hence its predictions, are bit-for-bit those saved. Nothing is
unpickled on load.

A :class:`pigp.kernels.Custom` kernel is saved by the import path of its
function (``module:qualified_name``); pass ``functions={"name": f}`` to
:func:`load` when that path cannot be imported (e.g. a function defined in a
script or notebook).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import zipfile

import numpy as np

from . import kernels as _kernels
from .operators import Operator
from .parameters import Coefficient, Parameter

__all__ = ["save", "load", "FORMAT", "VERSION"]

FORMAT = "pigp-model"
VERSION = 1
_STATIONARY = {cls.__name__: cls for cls in (_kernels.SquaredExponential, _kernels.Matern52,
                                              _kernels.Matern72, _kernels.RationalQuadratic)}


class _Table:
    """Parameters by identity, so shared ones (``alpha`` in two terms) stay shared."""

    def __init__(self):
        self.parameters: list = []

    def index(self, parameter: Parameter) -> int:
        for i, p in enumerate(self.parameters):
            if p is parameter:
                return i
        self.parameters.append(parameter)
        return len(self.parameters) - 1

    def specs(self) -> list:
        return [{"name": p.label, "positive": p.positive, "lower": p.lower,
                 "trainable": p.trainable, "shape": list(p.shape)} for p in self.parameters]


def _kernel_spec(kernel, table: _Table) -> dict:
    if isinstance(kernel, (_kernels.Sum, _kernels.Product)):
        return {"type": type(kernel).__name__, "first": _kernel_spec(kernel.first, table),
                "second": _kernel_spec(kernel.second, table)}
    if isinstance(kernel, _kernels.Custom):
        function = kernel.function
        return {"type": "Custom",
                "function": f"{getattr(function, '__module__', '?')}:"
                            f"{getattr(function, '__qualname__', '?')}",
                "parameters": {k: table.index(p) for k, p in kernel.parameters.items()},
                "stationary": kernel.stationary,
                "max_order": None if math.isinf(kernel.max_order) else kernel.max_order}
    if type(kernel) in _STATIONARY.values():
        return {"type": type(kernel).__name__,
                "parameters": {k: table.index(p) for k, p in kernel.parameters.items()}}
    if type(kernel) is _kernels.SpectralMixture:
        return {"type": "SpectralMixture", "components": kernel.components,
                "parameters": {k: table.index(p) for k, p in kernel.parameters.items()}}
    raise ValueError(f"save: kernel {type(kernel).__name__} cannot be saved; supported: "
                     f"{sorted(_STATIONARY)}, SpectralMixture, Sum, Product and Custom")


def _terms_spec(terms, table: _Table) -> list:
    """Operator terms ``(Coefficient, ((column, order), ...))`` or resolved terms
    ``(Coefficient, multi_index)``, as JSON."""
    return [{"constant": c.constant, "factors": [[table.index(p), k] for p, k in c.factors],
             "orders": [list(o) if isinstance(o, tuple) else int(o) for o in orders]}
            for c, orders in terms]


def save(model, path) -> None:
    """Write ``model`` (fitted or not) to ``path`` (conventionally ``*.npz``)."""
    table = _Table()
    spec = {
        "format": FORMAT, "version": VERSION,
        "kernel": _kernel_spec(model.kernel, table),
        "operator": {"terms": _terms_spec(model.operator.terms, table),
                     "dims": None if model.operator.dims is None else list(model.operator.dims)},
        "model": {"noise_u": table.index(model.noise_u), "noise_f": table.index(model.noise_f),
                  "dims": None if model.dims is None else list(model.dims),
                  "dtype": model.dtype.name, "jitter": model.jitter,
                  "standardize": model.standardize, "y_scale": model.y_scale},
        "sets": [{"name": name, "noise": table.index(noise),
                  "terms": _terms_spec(terms, table)}
                 for name, _, _, terms, noise in model._sets],
    }
    spec["parameters"] = table.specs()
    arrays = {f"parameter_{i}": p.unconstrained.numpy() for i, p in enumerate(table.parameters)}
    for i, (_, X, y, _, _) in enumerate(model._sets):
        arrays[f"set_{i}_X"], arrays[f"set_{i}_y"] = X, y
    arrays["history"] = np.asarray(model.history, dtype=np.float64)
    arrays["rejected_steps"] = np.asarray(model.rejected_steps, dtype=np.int64)
    path = os.fspath(path)
    with open(path, "wb") as handle:        # exactly this name: np.savez adds no suffix
        np.savez(handle, spec=np.array(json.dumps(spec)), **arrays)


def load(path, functions: dict | None = None):
    """Read a model written by :meth:`pigp.PIGP.save`.

    Args:
        path: the file.
        functions: ``{qualified_name: function}`` for Custom kernels whose
            function cannot be imported by its saved path.

    Returns:
        A :class:`pigp.PIGP` with the saved kernel, operator, parameters and
        data; it predicts exactly as the saved model did.

    Raises:
        ValueError: the file is missing, corrupt, not a pigp model, or of a newer
            format version.
    """
    from .models import PIGP

    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            contents = {k: archive[k] for k in archive.files}
    except FileNotFoundError:
        raise ValueError(f"path: no such file {path!r}") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise ValueError(f"path: {path!r} is not a pigp model file (could not read it as an "
                         f"archive: {error})") from None
    try:
        spec = json.loads(str(contents["spec"]))
        if spec.get("format") != FORMAT:
            raise KeyError("format")
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ValueError(f"path: {path!r} is not a pigp model file (no pigp description "
                         "inside)") from None
    if spec.get("version", 0) > VERSION:
        raise ValueError(f"path: {path!r} was written by a newer pigp (format version "
                         f"{spec['version']}, this one reads up to {VERSION})")
    try:
        parameters = [_parameter(s, contents[f"parameter_{i}"])
                      for i, s in enumerate(spec["parameters"])]
        kernel = _kernel(spec["kernel"], parameters, functions or {})
        operator = Operator((), spec["operator"]["dims"])
        operator.terms = tuple(_terms(spec["operator"]["terms"], parameters))
        settings = spec["model"]
        model = PIGP(kernel, operator, noise_u=parameters[settings["noise_u"]],
                     noise_f=parameters[settings["noise_f"]], dims=settings["dims"],
                     dtype=settings["dtype"], jitter=settings["jitter"],
                     standardize=settings["standardize"])
        model.y_scale = float(settings["y_scale"])
        model._sets = [(s["name"], contents[f"set_{i}_X"], contents[f"set_{i}_y"],
                        _terms(s["terms"], parameters), parameters[s["noise"]])
                       for i, s in enumerate(spec["sets"])]
        model.history = contents["history"].tolist()
        model.rejected_steps = contents["rejected_steps"].tolist()
    except (KeyError, IndexError, TypeError) as error:
        raise ValueError(f"path: {path!r} is a damaged pigp model file (missing or invalid "
                         f"entry {error})") from None
    return model


def _parameter(spec: dict, unconstrained: np.ndarray) -> Parameter:
    shape = tuple(spec["shape"])
    if unconstrained.shape != shape or not np.all(np.isfinite(unconstrained)):
        raise ValueError(f"parameter {spec['name']!r}: saved value of shape "
                         f"{unconstrained.shape} does not match {shape} or is not finite")
    placeholder = np.full(shape, spec["lower"] + 1.0)
    parameter = Parameter(placeholder, positive=spec["positive"], lower=spec["lower"],
                          trainable=spec["trainable"], name=spec["name"])
    parameter.unconstrained.assign(unconstrained)
    return parameter


def _terms(specs: list, parameters: list) -> list:
    terms = []
    for term in specs:
        coefficient = Coefficient(term["constant"],
                                  tuple((parameters[i], k) for i, k in term["factors"]))
        orders = tuple(tuple(o) if isinstance(o, list) else int(o) for o in term["orders"])
        terms.append((coefficient, orders))
    return terms


def _kernel(spec: dict, parameters: list, functions: dict):
    kind = spec["type"]
    if kind in ("Sum", "Product"):
        combine = getattr(_kernels, kind)
        return combine(_kernel(spec["first"], parameters, functions),
                       _kernel(spec["second"], parameters, functions))
    values = {k: parameters[i] for k, i in spec["parameters"].items()}
    if kind == "Custom":
        function = _function(spec["function"], functions)
        max_order = math.inf if spec["max_order"] is None else spec["max_order"]
        return _kernels.Custom(function, values, stationary=spec["stationary"],
                               max_order=max_order)
    if kind == "SpectralMixture":
        return _kernels.SpectralMixture(spec["components"], values["weights"],
                                        values.get("lengthscales"), values.get("frequencies"))
    if kind not in _STATIONARY:
        raise ValueError(f"kernel type {kind!r} is unknown to this pigp")
    kernel = _STATIONARY[kind](values["variance"], values.get("lengthscales"))
    if "alpha" in values:
        kernel.alpha = values["alpha"]
    return kernel


def _function(path: str, functions: dict):
    module, _, qualname = path.partition(":")
    if qualname in functions:
        return functions[qualname]
    try:
        target = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        return target
    except (ImportError, AttributeError):
        raise ValueError(f"Custom kernel function {path!r} cannot be imported; pass "
                         f"functions={{{qualname!r}: your_function}} to pigp.load") from None
