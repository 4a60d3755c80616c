"""TensorFlow's start-up lines kept off stderr, whichever of pigp and TensorFlow a
program imports first (``pigp._tensorflow`` does the import when pigp comes first
through its own modules; ``quiet_tensorflow_import`` when the program imports
``tensorflow`` itself after ``import pigp``). Imports nothing heavy."""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import sys


@contextlib.contextmanager
def quiet_stderr():
    """File descriptor 2 on the null device within the block (C++ writes there
    directly, past ``sys.stderr``)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (some embedded interpreters)
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


class _QuietLoader:
    """TensorFlow's own loader, run with ``TF_CPP_MIN_LOG_LEVEL=3`` and stderr on the
    null device (see ``pigp._tensorflow``)."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        with quiet_stderr():
            self.loader.exec_module(module)


class _TensorFlowFinder:
    """Finds ``tensorflow`` as Python would, once, and quiets its loader."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def quiet_tensorflow_import() -> None:
    """Have a later ``import tensorflow`` start quietly, as pigp's own import of it
    does; nothing where TensorFlow is imported already or the user set
    ``TF_CPP_MIN_LOG_LEVEL``."""
    if "tensorflow" in sys.modules or "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        return
    if not any(isinstance(f, _TensorFlowFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TensorFlowFinder())
