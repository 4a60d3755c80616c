"""The model file format: a NumPy ``.npz`` archive of a JSON description and arrays.

Objects describe themselves (``get_config()`` / ``from_config()``, as Keras
layers do): a kernel, an operator or a coefficient gives its constructor's
arguments, and ``encode`` turns such a description into JSON, recursively:

- a ``pigp.Parameter`` becomes a reference into a table of parameters, so a
  parameter shared by two places (``alpha`` in two operator terms) stays shared;
  each one's *unconstrained* value is stored as an array, so loaded values are
  bit for bit those saved;
- an object with ``get_config`` becomes its class's import path and its
  description; a function (a nonlinear equation's residual, a ``Custom`` kernel's
  function, a coefficient that varies in space) its import path and its
  ``fingerprint``: a hash of its code and of the constants it reads, so that
  ``load`` refuses a function of that name that computes something else (a script
  that redefines ``residual``). A lambda or a function defined inside another
  cannot be imported by name, and ``save`` refuses it, saying how to define it.

``decode`` reverses this, importing each class by its path (or taking it
from ``custom_objects`` where it cannot be imported, e.g. one defined in a
script), so a user-defined kernel class round-trips. Nothing is unpickled.

``save`` and ``load`` write and read a whole model this way: the model's class
(by its import path, as any other class), its constructor's arguments, each
data set (name, operator, noise, arrays) and the state of its approximation.
Version 3 files name the model class by path; version 2 files (by name,
``"PIGP"`` or ``"SparsePIGP"``) are read too. A file also holds the last fit's
``FitReport`` (``"report"``, JSON), read where present.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import math
import os
import sys
import textwrap
import tokenize
import types
import zipfile
from io import StringIO

import numpy as np

from ._moved import OLD_NAME
from ._reads import code_names
from .data import Data, data_set
from .fitting.report import FitReport
from .kernels.library import Kernel
from .operators.linear import Nonlinear, Operator
from .parameters import Coefficient, Parameter

__all__ = [
    "FORMAT",
    "VERSION",
    "ParameterTable",
    "encode",
    "decode",
    "write",
    "read",
    "save",
    "load",
]

FORMAT = "pigp-model"
#: 3: the model's class by import path; 2: by name (read); 1: before get_config (not read).
VERSION = 3
READS = (2, 3)
#: The model classes of version 2 files, by the name they were saved under.
_VERSION_2_CLASSES = {"PIGP": "pigp.models:PIGP", "SparsePIGP": "pigp.sparse:SparsePIGP"}
_SAVABLE = (Kernel, Operator, Nonlinear, Coefficient)


class ParameterTable:
    """Parameters by identity, numbered in the order first met."""

    def __init__(self, parameters=()):
        self.parameters: list = list(parameters)

    def index(self, parameter: Parameter) -> int:
        for i, p in enumerate(self.parameters):
            if p is parameter:
                return i
        self.parameters.append(parameter)
        return len(self.parameters) - 1

    def configs(self) -> list:
        return [p.get_config() for p in self.parameters]

    def arrays(self) -> dict:
        return {f"parameter_{i}": p.unconstrained.numpy() for i, p in enumerate(self.parameters)}


def _path(obj) -> str:
    """``module:qualified.name``; a module that moved into a folder by its old path
    (``pigp._moved``), so files read the same before and after."""
    module = getattr(obj, "__module__", "?")
    return f"{OLD_NAME.get(module, module)}:{getattr(obj, '__qualname__', '?')}"


def encode(value, table: ParameterTable):
    """``value`` as JSON-compatible data; parameters go into ``table``."""
    if isinstance(value, Parameter):
        return {"parameter": table.index(value)}
    if isinstance(value, _SAVABLE):
        return {"class": _path(type(value)), "config": encode(value.get_config(), table)}
    if isinstance(value, dict):
        return {"dict": {str(k): encode(v, table) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return [encode(v, table) for v in value]
    if isinstance(value, np.ndarray):
        return {"array": value.tolist()}
    if isinstance(value, (bool, str, type(None))):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    if callable(value):
        return {"function": _importable(value), "fingerprint": fingerprint(value)}
    raise ValueError(
        f"save: cannot describe {value!r} ({type(value).__name__}); a kernel's "
        "get_config() may hold numbers, strings, arrays, lists, dicts, Parameters, "
        "kernels, operators and importable functions"
    )


def decode(data, parameters: list, custom_objects: dict | None = None):
    """The object ``encode`` described, with ``parameters`` the loaded table."""
    custom_objects = custom_objects or {}
    if isinstance(data, list):
        return [decode(v, parameters, custom_objects) for v in data]
    if not isinstance(data, dict):
        return data
    if "parameter" in data:
        return parameters[data["parameter"]]
    if "dict" in data:
        return {k: decode(v, parameters, custom_objects) for k, v in data["dict"].items()}
    if "array" in data:
        return np.asarray(data["array"], dtype=np.float64)
    if "function" in data:
        function = _resolve(data["function"], custom_objects, "function")
        saved = data.get("fingerprint")  # files before fingerprints have none
        if saved is not None and fingerprint(function) != saved:
            qualname = data["function"].partition(":")[2]
            raise ValueError(
                f"the function {data['function']!r} found at load computes something else "
                "than the one saved (its code or the constants it reads changed): "
                "restore the saved definition, or pass it to pigp.load as "
                f"custom_objects={{{qualname!r}: ...}}"
            )
        return function
    if "class" in data:
        cls = _resolve(data["class"], custom_objects, "class")
        if not (isinstance(cls, type) and issubclass(cls, _SAVABLE)):
            raise ValueError(f"{data['class']!r} is not a pigp kernel, operator or coefficient")
        return cls.from_config(decode(data["config"], parameters, custom_objects))
    raise ValueError(f"unknown entry {sorted(data)}")


def _importable(function) -> str:
    """``function``'s import path; ``ValueError`` for a lambda or a function defined
    inside another, which a new process cannot import by name."""
    path = _path(function)
    qualname = path.partition(":")[2]
    if "<" in qualname:
        kind = "a lambda" if "<lambda>" in qualname else "defined inside a function"
        raise ValueError(
            f"save: the function {path!r} is {kind}, which pigp.load cannot find by "
            "name: define it with def at the top level of a module (in a script, load "
            "with pigp.load(path, custom_objects={'name': function}))"
        )
    return path


_CONSTANTS = (bool, int, float, complex, str, bytes, type(None), np.generic, np.ndarray)


def _constant(value, seen: set):
    """A description of ``value`` for a fingerprint: numbers, strings and arrays by
    value, functions by their own fingerprint's parts, anything else (modules,
    classes, tensors) by type only."""
    if isinstance(value, (tuple, list)):
        return [_constant(v, seen) for v in value]
    if isinstance(value, np.ndarray):
        return [
            "array",
            str(value.dtype),
            list(value.shape),
            hashlib.sha256(value.tobytes()).hexdigest(),
        ]
    if isinstance(value, _CONSTANTS):
        return repr(value)
    if isinstance(value, types.FunctionType):
        return _parts(value, seen)
    return type(value).__name__


def _tokens(source: str) -> list:
    """The source's tokens without comments, blank lines and indentation: what the
    code says, not how it is laid out."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    lines = StringIO(textwrap.dedent(source)).readline
    return [t.string for t in tokenize.generate_tokens(lines) if t.type not in skip]


def _parts(function, seen: set):
    """What ``fingerprint`` hashes: the function's tokens (its source without
    comments or layout; the bytecode where there is no source), and the values of the
    globals, closure variables and defaults it reads."""
    if not isinstance(function, types.FunctionType):
        return ["object", _path(function)]
    if id(function) in seen:
        return ["recursive", function.__qualname__]
    seen = seen | {id(function)}
    try:
        tree = _tokens(inspect.getsource(function))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        code = function.__code__
        tree = [sys.version_info[:2], code.co_code.hex(), repr(code.co_consts)]
    scope = function.__globals__
    reads = sorted(n for n in code_names(function.__code__) if n in scope)
    closure = [cell.cell_contents for cell in function.__closure__ or ()]
    return [
        tree,
        {name: _constant(scope[name], seen) for name in reads},
        [_constant(v, seen) for v in closure],
        _constant(function.__defaults__ or (), seen),
    ]


def fingerprint(function) -> str:
    """A hash of what ``function`` computes: its code (the tokens of its source, so
    comments and layout do not count) and the values of the module constants,
    closure variables and defaults it reads, with the functions it calls hashed alike.
    Two definitions with the same fingerprint compute the same thing."""
    parts = _parts(function, set())
    return hashlib.sha256(json.dumps(parts, default=repr).encode()).hexdigest()[:16]


def _resolve(path: str, custom_objects: dict, what: str):
    """The object at ``module:qualified.name``: from ``custom_objects`` (by qualified
    name), an already imported module, or an import."""
    module, _, qualname = path.partition(":")
    if qualname in custom_objects:
        return custom_objects[qualname]
    try:
        target = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        return target
    except (ImportError, AttributeError):
        raise ValueError(
            f"the {what} {path!r} cannot be imported; pass "
            f"custom_objects={{{qualname!r}: ...}} to pigp.load"
        ) from None


def write(path, spec: dict, arrays: dict) -> None:
    """Write the description ``spec`` (with the format and version added) and arrays."""
    spec = {"format": FORMAT, "version": VERSION, **spec}
    with open(os.fspath(path), "wb") as handle:  # exactly this name: np.savez adds no suffix
        np.savez(handle, spec=np.array(json.dumps(spec)), **arrays)


def read(path) -> tuple:
    """``(spec, arrays)`` of a model file.

    Raises:
        ValueError: the file is missing, not a pigp model file, or of a format
            version this pigp does not read; the message names the file.
    """
    path = os.fspath(path)
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise ValueError(
            f"path: {path!r} is not a pigp model file (a model file is a zip "
            "archive written by model.save; this file is not a zip archive)"
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except FileNotFoundError:
        raise ValueError(f"path: no such file {path!r}") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise ValueError(
            f"path: {path!r} is not a pigp model file (could not read it as an archive: {error})"
        ) from None
    try:
        spec = json.loads(str(arrays.pop("spec")))
        if spec.get("format") != FORMAT:
            raise KeyError("format")
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ValueError(
            f"path: {path!r} is not a pigp model file (no pigp description inside)"
        ) from None
    version = spec.get("version", 0)
    if version not in READS:
        newer = isinstance(version, int) and version > VERSION
        raise ValueError(
            f"path: {path!r} is in format version {version}, and this pigp reads versions "
            f"{', '.join(map(str, READS))} only: "
            + (
                "it was written by a newer pigp"
                if newer
                else "refit the model with this pigp and save it again"
            )
        )
    return spec, arrays


def save(model, path) -> None:
    """Write ``model`` (a ``pigp.PIGP`` or ``pigp.SparsePIGP``; its class by import
    path, its ``get_config()``, its data sets and the state of its approximation)
    to ``path``. ``load(path)`` gives it back; see ``Model.save``."""
    table = ParameterTable()
    sets = () if model.data is None else model.data.sets
    spec = {
        "class": _path(type(model)),
        "model": encode(model.get_config(), table),
        "sets": [
            {
                "name": s.name,
                "operator": encode(s.operator, table),
                "noise": encode(s.noise, table),
                "noise_decided_by_fit": s.noise_decided_by_fit,
                **({"condition": True} if s.condition else {}),
            }
            for s in sets
        ],
        "y_scale": model.y_scale,
        # What the last fit found, whole (the arrays below keep its histories as
        # earlier files had them).
        "report": model.report.to_config(),
    }
    # Parameters that coefficient functions read (not in any config): by name, so
    # that load gives the functions' own parameters the saved values.
    known = len(table.parameters)
    read = {}
    for name, p in model.parameters_by_name().items():
        if not any(p is q for q in table.parameters[:known]):
            read[name] = table.index(p)
    if read:
        spec["read_by_functions"] = read
    spec["parameters"] = table.configs()
    arrays = table.arrays()
    for i, s in enumerate(sets):
        arrays[f"set_{i}_X"], arrays[f"set_{i}_y"] = s.X, s.y
    arrays["history"] = np.asarray(model.history, dtype=np.float64)
    arrays.update(model.state_arrays())
    write(path, spec, arrays)


def load(path, custom_objects: dict | None = None):
    """Read a model written by ``PIGP.save`` or ``SparsePIGP.save``.

    Args:
        path: the file.
        custom_objects: ``{qualified_name: object}`` for kernel classes and
            ``Custom`` kernel functions that cannot be imported by their saved
            path (defined in a script or notebook).

    Returns:
        A ``PIGP`` (or ``SparsePIGP``) with the saved kernel, operator, parameters and data; it
        predicts exactly as the saved model did.

    Raises:
        ValueError: the file is missing, corrupt, not a pigp model, of another
            format version, or damaged (the message names the file and the entry).
    """
    spec, arrays = read(path)
    path = os.fspath(path)

    def damaged(detail):
        return ValueError(f"path: {path!r} is a damaged pigp model file: {detail}")

    try:
        try:
            parameters = [
                Parameter.from_config(c, arrays[f"parameter_{i}"])
                for i, c in enumerate(spec["parameters"])
            ]
        except ValueError as error:
            raise damaged(error) from None
        kind = spec.get("class", "PIGP")
        if spec["version"] == 2:
            kind = _VERSION_2_CLASSES.get(kind, kind)
        try:
            cls = _resolve(kind, custom_objects or {}, "class")
        except ValueError as error:
            raise damaged(error) from None
        if not (isinstance(cls, type) and hasattr(cls, "restore_state")):
            raise damaged(f"class: {kind!r} is not a pigp model class")
        model = cls.from_config(decode(spec["model"], parameters, custom_objects))
        sets = []
        for i, s in enumerate(spec["sets"]):
            operator = decode(s["operator"], parameters, custom_objects)
            noise = decode(s["noise"], parameters, custom_objects)
            try:
                sets.append(
                    data_set(
                        s["name"],
                        arrays[f"set_{i}_X"],
                        arrays[f"set_{i}_y"],
                        operator,
                        noise,
                        model.kernel,
                        sets[0].X.shape[1] if sets else None,
                        model.dims,
                        f"set_{i}_X",
                        f"set_{i}_y",
                        bool(s.get("noise_decided_by_fit", False)),
                        bool(s.get("condition", False)),
                    )
                )
            except ValueError as error:
                raise damaged(error) from None
        y_scale = float(spec["y_scale"])
        if not (math.isfinite(y_scale) and y_scale > 0):
            raise damaged(f"y_scale: expected a positive number, got {y_scale}")
        if sets:
            model.data = Data(tuple(sets), y_scale)
        by_name = model.parameters_by_name()
        for name, i in spec.get("read_by_functions", {}).items():
            if name not in by_name:
                raise damaged(f"read_by_functions: the loaded model has no parameter {name!r}")
            saved = parameters[i]
            by_name[name].unconstrained.assign(saved.unconstrained)
            by_name[name].trainable = saved.trainable
        model.history = arrays["history"].tolist()
        model.restore_state(arrays)
        if "report" in spec:  # files written before it keep the arrays' histories
            model.adopt(FitReport.from_config(spec["report"]))
    except (KeyError, IndexError, TypeError) as error:
        raise damaged(f"missing or invalid entry {error}") from None
    return model
