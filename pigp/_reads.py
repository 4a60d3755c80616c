"""``read_objects``: the objects of a kind that a Python function can read.

A coefficient function of an operator (``a = lambda X: tf.exp(theta.value() * X[:, 0])``)
reads its parameters through Python's scoping, where no argument names them; the
operator finds them here to learn them.
"""

from __future__ import annotations

import functools
import types

__all__ = ["read_objects", "function_parameters", "code_names"]


def function_parameters(function, kind) -> tuple:
    """A coefficient function's parameters (of class ``kind``): its ``parameters``
    attribute where it has one (a linearised equation's partial derivative), else
    ``read_objects``."""
    declared = getattr(function, "parameters", None)
    if declared is not None and not callable(declared):
        return tuple(declared)
    return read_objects(function, kind)


def read_objects(function, kind) -> tuple:
    """The instances of ``kind`` that ``function`` can read: in its closure, its default
    arguments, the module globals its code names, a ``functools.partial``'s arguments
    and a callable object's attributes, looking one level into tuples, lists and dicts
    and into the functions found there (nested lambdas), each once."""
    found, seen = [], set()

    def add(value, depth):
        if isinstance(value, kind):
            if not any(value is q for q in found):
                found.append(value)
        elif isinstance(value, (tuple, list)) and depth < 2:
            for item in value:
                add(item, depth + 1)
        elif isinstance(value, dict) and depth < 2:
            for item in value.values():
                add(item, depth + 1)
        elif callable(value) and not isinstance(value, type) and depth < 3:
            visit(value, depth + 1)

    def visit(f, depth):
        if id(f) in seen:
            return
        seen.add(id(f))
        if isinstance(f, functools.partial):
            add(f.func, depth)
            for item in (*f.args, *f.keywords.values()):
                add(item, depth)
            return
        code = getattr(f, "__code__", None)
        if code is None:  # a callable object: its attributes
            for item in getattr(f, "__dict__", {}).values():
                add(item, depth)
            return
        for cell in getattr(f, "__closure__", None) or ():
            try:
                add(cell.cell_contents, depth)
            except ValueError:  # an empty cell
                pass
        for item in (*(f.__defaults__ or ()), *(f.__kwdefaults__ or {}).values()):
            add(item, depth)
        scope = getattr(f, "__globals__", {})
        for name in code_names(code):
            if name in scope:
                value = scope[name]
                if isinstance(value, (kind, tuple, list, dict)) or (
                    callable(value) and getattr(value, "__module__", None) == f.__module__
                ):
                    add(value, depth)

    visit(function, 0)
    return tuple(found)


def code_names(code) -> set:
    """The global names a code object and the code objects nested in it read."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= code_names(constant)
    return names
