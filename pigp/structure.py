"""What a compiled program depends on besides its arguments: the model's structure.

Every compiled program in pigp is a pure function of its arguments (points,
targets, parameter values or variables, the variational state) and of a
``Structure``: the kernel's class and settings, each data set's operator terms
(their multi-indices and how each coefficient is built from numbers and
parameters), the parameters' places, shapes and constraints, the jitter and the
dtype. ``program(key, build)`` keeps the programs of the process in one table
keyed by ``(structure.key, what)``, so two models share a program exactly when
their structures are equal, whatever their data, values and variables.

A program is built from the first object that asks for it (its kernel, sets
and parameters are the template the program is traced with); later callers of
the same key pass their own values. A kernel that cannot describe itself
(``get_config`` not implemented) enters the key as itself (by identity), so
its programs are its own.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ._tensorflow import tf
from .kernels.library import Kernel
from .parameters import Parameter

__all__ = [
    "Structure",
    "program",
    "data_parameters",
    "covariance_parameters",
    "PROGRAMS_KEPT",
]

#: Compiled programs kept in the process, most recently used last.
PROGRAMS_KEPT = 64
_programs = OrderedDict()


def _without_tracing_warnings(found) -> None:
    """TensorFlow counts a ``tf.function``'s traces by its Python code, across every
    function built from it, and warns of "retracing" at five; the programs of one
    builder for distinct structures (a nonlinear fit's stages, the features it
    predicts) are distinct functions, each traced once per input shape, which that
    count would report. Whether a program retraces is its own tracing count
    (``experimental_get_tracing_count``), which the tests check."""
    if hasattr(found, "_omit_frequent_tracing_warning"):
        found._omit_frequent_tracing_warning = True


def program(key, build):
    """The compiled program of ``key`` (a hashable, e.g. ``(structure.key, "gram")``):
    ``build()`` the first time it is asked for, the same object after."""
    found = _programs.get(key)
    if found is None:
        found = _programs[key] = build()
        _without_tracing_warnings(found)
        while len(_programs) > PROGRAMS_KEPT:
            _programs.popitem(last=False)
    else:
        _programs.move_to_end(key)
    return found


def _unique(parameters) -> list:
    """``parameters`` in order, each object once."""
    unique = []
    for p in parameters:
        if not any(p is q for q in unique):
            unique.append(p)
    return unique


def data_parameters(sets) -> list:
    """The parameters of data sets, each once: each set's noise and those in its
    operator's coefficients."""
    return _unique(
        p for s in sets for p in (s.noise, *(q for c, *_ in s.terms for q in c.parameters))
    )


def covariance_parameters(kernel, sets) -> list:
    """Every parameter the joint covariance of ``sets`` depends on, each once: the
    kernel's, then ``data_parameters``."""
    return _unique([*kernel.parameters.values(), *data_parameters(sets)])


class Structure:
    """The structure of the joint covariance of data sets: all that its compiled
    programs depend on besides their arguments.

    Args:
        kernel: the prior covariance of u.
        sets: objects with ``terms`` (resolved operator terms) and ``noise`` (a
            ``pigp.Parameter``), e.g. the ``pigp.data.DataSet`` objects of a fit.
        jitter: the relative diagonal jitter.
        dtype: the dtype the covariance is computed in.

    Attributes:
        parameters: every parameter the covariance depends on, in the order the
            programs take their values (``covariance_parameters``).
        key: the hashable description; structures are equal when their keys are.
    """

    def __init__(self, kernel, sets, jitter: float, dtype):
        self.kernel = kernel
        self.sets = tuple(sets)
        self.jitter = float(jitter)
        self.dtype = tf.as_dtype(dtype)
        self.parameters = covariance_parameters(kernel, self.sets)
        self._place = {id(p): i for i, p in enumerate(self.parameters)}
        self.key = (
            self._kernel_key(kernel),
            tuple((self.terms(s.terms), self.place(s.noise)) for s in self.sets),
            tuple((p.shape, bool(p.positive), p.lower) for p in self.parameters),
            self.jitter,
            self.dtype.name,
        )

    def __eq__(self, other) -> bool:
        return isinstance(other, Structure) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def place(self, parameter: Parameter):
        """The position of ``parameter`` among ``parameters``, or None."""
        return self._place.get(id(parameter))

    def terms(self, terms, extra=()) -> tuple:
        """The description of resolved operator terms: each coefficient's number, its
        factors' places (``extra``: parameters beyond ``parameters``, placed after
        them, e.g. those of an operator given to ``predict``) and its functions of
        the inputs (by identity; their values at the points are computed inside the
        programs, from the points they take), and its multi-index."""
        places = {**self._place, **{id(p): len(self.parameters) + i for i, p in enumerate(extra)}}
        return tuple(
            (
                (c.constant, tuple((places[id(p)], k) for p, k in c.factors), c.functions),
                tuple(index),
                *field,
            )
            for c, index, *field in terms
        )

    def extra(self, terms) -> list:
        """The parameters of ``terms`` that are not among ``parameters``, each once."""
        return _unique(p for c, *_ in terms for p in c.parameters if id(p) not in self._place)

    def _kernel_key(self, kernel):
        try:
            return self._describe(kernel)
        except (NotImplementedError, TypeError):
            return ("object", kernel)  # by identity; the key holds it, so the id stays its own

    def _describe(self, item):
        if isinstance(item, Parameter):
            return ("parameter", self.place(item), item.shape)
        if isinstance(item, Kernel):
            return (type(item), self._describe(item.get_config()))
        if isinstance(item, dict):
            return tuple((k, self._describe(v)) for k, v in sorted(item.items()))
        if isinstance(item, (list, tuple)):
            return tuple(self._describe(v) for v in item)
        if isinstance(item, np.ndarray):
            return ("array", item.shape, item.tobytes())
        if item is None or isinstance(item, (bool, int, float, str, np.number)):
            return item
        if callable(item):
            return ("callable", item)
        raise TypeError(f"cannot describe {item!r}")


class Variables:
    """The variables the training programs of a structure read, and which are trained.

    A program takes them all as one argument (``unconstrained``): the structure's
    parameters' variables in its order, then trained variables the covariance does
    not depend on (a coefficient of an operator without data: zero gradient, perhaps
    a prior), then ``last`` (e.g. inducing points).

    Args:
        structure: the ``Structure``.
        variables: the trained variables (``tf.Variable``), in the gradients' order.
        priors: the trained parameters with a prior (their ``-log prior`` enters the loss).
        last: variables placed at the end whether trained or not.

    Attributes:
        unconstrained: every variable read, in the programs' order.
        key: what the programs depend on besides the structure: which are trained, the
            extra ones' shapes and the priors (by identity).
    """

    def __init__(self, structure, variables, priors=(), last=()):
        own = [p.unconstrained for p in structure.parameters]
        extra = [v for v in variables if not any(v is u for u in (*own, *last))]
        self.unconstrained = (*own, *extra, *last)
        position = {id(v): i for i, v in enumerate(self.unconstrained)}
        self.trained = tuple(position[id(v)] for v in variables)
        self.priors = tuple(p for p in priors if p.prior is not None)
        self.prior_places = tuple(position[id(p.unconstrained)] for p in self.priors)
        self.key = (
            self.trained,
            tuple(tuple(v.shape) for v in extra),
            tuple(
                (i, p.prior, p.shape, bool(p.positive), p.lower)
                for i, p in zip(self.prior_places, self.priors)
            ),
        )

    def trained_of(self, unconstrained) -> list:
        """The entries of ``unconstrained`` that are trained."""
        return [unconstrained[i] for i in self.trained]

    def log_prior(self, unconstrained):
        """``sum log prior`` of the parameters with priors at ``unconstrained`` (float64)."""
        return tf.add_n(
            [
                p.log_prior(unconstrained=unconstrained[i])
                for i, p in zip(self.prior_places, self.priors)
            ]
        )
