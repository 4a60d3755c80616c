"""Modules that moved into the concept folders, still importable by their old names.

``import pigp.models`` (or ``pigp.covariance``, ``pigp.uncertainty``...) gives the
module now at its new path, the same object. A saved model records its classes and
functions by these old paths (``OLD_NAME``), so files read the same both ways.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: old import path -> the module's path now.
MOVED = {
    "pigp.kernel_base": "pigp.kernels.base",
    "pigp.derivatives": "pigp.kernels.derivatives",
    "pigp.covariance": "pigp.kernels.covariance",
    "pigp.nonlinear": "pigp.operators.linearisation",
    "pigp.base": "pigp.engines.model",
    "pigp.models": "pigp.engines.dense.model",
    "pigp.objective": "pigp.engines.dense.objective",
    "pigp.posterior": "pigp.engines.dense.posterior",
    "pigp.sparse": "pigp.engines.variational.model",
    "pigp.variational": "pigp.engines.variational.inducing",
    "pigp.collapsed": "pigp.engines.variational.collapsed",
    "pigp.training": "pigp.fitting.training",
    "pigp.uncertainty": "pigp.inference.laplace",
    "pigp.sampling": "pigp.inference.nuts",
    "pigp.sampler": "pigp.inference.sampler",
}
#: a module's path now -> the path saved files record.
OLD_NAME = {new: old for old, new in MOVED.items()}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at the new one."""

    def find_spec(self, name, path=None, target=None):
        if name in MOVED:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module):
        pass  # already executed under its new name


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
