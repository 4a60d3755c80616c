"""Names of a package imported on first use (PEP 562), so that importing the
package does not import TensorFlow."""

from __future__ import annotations

import importlib


def attach(package: str, names: dict, submodules=()):
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps a public name to the
    submodule that defines it; ``submodules`` are imported when asked for by name.
    A name is imported once, then kept in the package's namespace."""
    submodules = frozenset(submodules)

    def __getattr__(name: str):
        if name in names:
            value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        vars(importlib.import_module(package))[name] = value
        return value

    def __dir__():
        return sorted(set(vars(importlib.import_module(package))) | set(names) | submodules)

    return __getattr__, __dir__
